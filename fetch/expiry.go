package fetch

import (
	"maps"
	"slices"
	"time"
)

// Expiry of committed offsets and of groups, as Kafka's group coordinator
// does it (offsets.retention.minutes and
// offsets.retention.check.interval.ms; KIP-211). Without it every group
// and every offset stayed forever: the throwaway group ids of `kcat -G`,
// tests and console consumers piled up in the offsets file and in
// ListGroups.
//
// Every Config.OffsetsRetentionCheckInterval the coordinator looks at
// every group, under its lock, with the offsets staged so far:
//
//   - An Empty classic group (members joined it once, none is left): every
//     offset expires a retention after the later of its commit and the
//     moment the group became Empty. Kafka counts from the Empty time
//     alone (its currentStateTimestamp), so that an offset committed into
//     a group Empty for six days (kafka-consumer-groups.sh
//     --reset-offsets) lasts one day; segfs keeps every commit at least
//     a retention.
//   - A classic group with members: only if its protocol type is
//     "consumer", it is Stable and its members' subscriptions are known
//     (they parse), the offsets of topics no member subscribes to expire
//     a retention after their commit; the others stay. Any other group
//     with members keeps everything (Kafka's GroupMetadata rules).
//   - A KIP-848 consumer group: the offsets of topics no member
//     subscribes to (all, when it is Empty) expire a retention after
//     their commit (Kafka's ConsumerGroup rule: the Empty time plays no
//     part).
//   - A group with offsets only (commits without membership, generation
//     -1): each offset a retention after its commit.
//   - An offset committed with an explicit retention (OffsetCommit v2-v4
//     RetentionTimeMillis) expires at commit time + that retention
//     instead, when its group's rule lets it expire at all; one with an
//     explicit commit timestamp (v1) counts from that timestamp.
//
// A group left Empty without offsets is then deleted, as Kafka's
// maybeDeleteGroup does: a classic or consumer group that never committed
// is gone at the first check after its last member left. A check that
// removes something writes the offsets file once, whatever it removes;
// one that removes nothing writes nothing.
//
// The times are kept in the offsets file (offsets.go): each offset's
// commit time, and for a classic group with offsets the time it became
// Empty (0 while it has members, written when it becomes Empty and when
// its first member joins). A classic group recorded with members comes
// back with them (groups.restoreClassics); one recorded as having had
// members but not which (it had not completed a generation, or an older
// segfs wrote the file) is Empty from the load that finds it; an offset
// from a file without a commit time gets the load time. Either is
// written back at once, so a later restart does not push it on again.
// The load time never expires anything sooner than a full retention
// after this server first saw it (an old or restored file loses nothing
// at the first check) and costs at most one retention more.

const (
	// DefaultOffsetsRetention is Kafka's offsets.retention.minutes (7 days).
	DefaultOffsetsRetention = 7 * 24 * time.Hour
	// DefaultOffsetsRetentionCheckInterval is Kafka's
	// offsets.retention.check.interval.ms.
	DefaultOffsetsRetentionCheckInterval = 10 * time.Minute
)

// expireLoop runs the checks until Shutdown. The first comes one interval
// after the start, as in Kafka.
func (s *Server) expireLoop() {
	t := time.NewTicker(s.cfg.OffsetsRetentionCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			s.groups.expire()
		}
	}
}

// expiredOffset is one offset a check removes, as it was: the change
// removes it only if it is still that one (a guard from when changes
// were re-applied after a failed write; now they fail with it).
type expiredOffset struct {
	group, topic string
	partition    int32
	was          committedOffset
}

// expiryPlan is what one check removes.
type expiryPlan struct {
	offsets []expiredOffset
	// groups are deleted: from memory, and their records from the file.
	groups []string
	// write: the file changes (an offset or a record goes).
	write bool
}

// op is the plan's change of the offsets file.
func (p *expiryPlan) op() func(offsetsState) offsetsState {
	return func(st offsetsState) offsetsState {
		next := st
		if len(p.offsets) > 0 {
			groups := maps.Clone(st.groups)
			type groupTopic struct{ group, topic string }
			clonedGroup, clonedTopic := map[string]bool{}, map[groupTopic]bool{}
			for _, e := range p.offsets {
				if c, ok := groups[e.group][e.topic][e.partition]; !ok || c != e.was {
					continue
				}
				if !clonedGroup[e.group] {
					groups[e.group] = maps.Clone(groups[e.group])
					clonedGroup[e.group] = true
				}
				topics := groups[e.group]
				if gt := (groupTopic{e.group, e.topic}); !clonedTopic[gt] {
					topics[e.topic] = maps.Clone(topics[e.topic])
					clonedTopic[gt] = true
				}
				delete(topics[e.topic], e.partition)
				if len(topics[e.topic]) == 0 {
					delete(topics, e.topic)
				}
				if len(topics) == 0 {
					delete(groups, e.group)
				}
			}
			next.groups = groups
		}
		for _, g := range p.groups {
			next = consumerMetaOp(g, nil)(next)
			next = classicMetaOp(g, nil)(next)
		}
		return next
	}
}

// offsetExpired is Kafka's OffsetExpirationCondition: an explicit expiry
// wins; otherwise the offset expires retention after the later of its
// commit and emptySince (0 for the rules that count from the commit).
func offsetExpired(c committedOffset, emptySince, now, retention int64) bool {
	if c.ExpireTimeMs != 0 {
		return now >= c.ExpireTimeMs
	}
	return now-retention >= max(c.CommitTimeMs, emptySince)
}

// expiryRule is how a check treats one group's offsets.
type expiryRule struct {
	expires    bool            // false: none of its offsets expires now
	emptySince int64           // 0: retention counts from the commit
	subscribed map[string]bool // topics whose offsets stay
	deletable  bool            // the group goes once no offset is left
}

// ruleFor is group name's rule (gs.mu held), with st the staged offsets.
func (gs *groups) ruleFor(name string, st offsetsState) expiryRule {
	if cg := gs.consumers[name]; cg != nil {
		if len(cg.members) == 0 {
			return expiryRule{expires: true, deletable: true}
		}
		return expiryRule{expires: true, subscribed: gs.consumerSubscribed(cg)}
	}
	if g := gs.byName[name]; g != nil {
		switch {
		case g.state == groupEmpty:
			// A member id handed out with MEMBER_ID_REQUIRED is about
			// to join: the group stays for it.
			return expiryRule{expires: true, emptySince: g.emptySince, deletable: len(g.pending) == 0}
		case g.state == groupStable && g.protocolType == "consumer" && g.subscribed != nil:
			return expiryRule{expires: true, subscribed: g.subscribed}
		}
		return expiryRule{}
	}
	// Known from the file only: a classic group that lost its members
	// at a restart (Empty since then, or since it became Empty before),
	// or a group of commits without membership.
	return expiryRule{expires: true, emptySince: st.classics[name].EmptySinceMs, deletable: true}
}

// plan works out what a check at now removes (gs.mu held).
func (gs *groups) plan(now int64) expiryPlan {
	st := gs.s.offsets.staged()
	retention := gs.s.cfg.OffsetsRetention.Milliseconds()
	names := map[string]bool{}
	for _, m := range []map[string]bool{keysOf(st.groups), keysOf(st.classics), keysOf(gs.byName), keysOf(gs.consumers)} {
		maps.Copy(names, m)
	}
	var p expiryPlan
	for _, name := range slices.Sorted(maps.Keys(names)) {
		rule := gs.ruleFor(name, st)
		left := 0
		for topic, parts := range st.groups[name] {
			for part, c := range parts {
				if rule.expires && !rule.subscribed[topic] && offsetExpired(c, rule.emptySince, now, retention) {
					p.offsets = append(p.offsets, expiredOffset{group: name, topic: topic, partition: part, was: c})
					continue
				}
				left++
			}
		}
		if left > 0 || !rule.deletable {
			continue
		}
		_, consumer := st.consumers[name]
		_, classic := st.classics[name]
		if consumer || classic || gs.byName[name] != nil || gs.consumers[name] != nil {
			p.groups = append(p.groups, name)
			p.write = p.write || consumer || classic
		}
	}
	p.write = p.write || len(p.offsets) > 0
	return p
}

func keysOf[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// expire runs one check: expired offsets go, and the Empty groups left
// without offsets, in memory and in one write of the file.
func (gs *groups) expire() {
	gs.mu.Lock()
	p := gs.plan(gs.s.now().UnixMilli())
	for _, name := range p.groups {
		if cg := gs.consumers[name]; cg != nil {
			gs.forgetConsumer(cg)
		}
		if g := gs.byName[name]; g != nil {
			gs.forget(g)
		}
	}
	var op *offsetsOp
	if p.write {
		op = gs.s.offsets.stage(p.op())
	}
	gs.mu.Unlock()

	if op != nil {
		if err := gs.s.offsets.wait(op); err != nil {
			// The offsets and records stay, in memory too, and are
			// looked at again at the next check; a group deleted from
			// memory is then one of offsets only, Empty as it was.
			gs.s.log.Warn("fetch: expired offsets not removed", "offsets", len(p.offsets), "groups", len(p.groups), "err", err)
			return
		}
	}
	if len(p.offsets) > 0 || len(p.groups) > 0 {
		gs.s.log.Info("fetch: committed offsets expired", "offsets", len(p.offsets), "groups_deleted", len(p.groups), "retention", gs.s.cfg.OffsetsRetention)
	}
	for _, name := range p.groups {
		gs.s.log.Debug("fetch: group deleted: Empty, and no committed offsets left", "group", name)
	}
}
