package fetch

import (
	"slices"
	"strings"
)

// The server-side assignors of consumer groups (Kafka's
// group.consumer.assignors): "uniform" (the default) and "range". Both are
// pure functions of the members' subscriptions, the subscribed topics and,
// for uniform, the previous target assignment; members come sorted by id,
// so the result is deterministic.

// assignMember is one member as an assignor sees it.
type assignMember struct {
	id     string
	topics map[string]bool // subscribed, existing topics
	prev   tpSet           // previous target assignment
}

// assignUniform is Kafka's UniformAssignor in effect: every partition of a
// subscribed topic goes to one member subscribed to it, the members'
// partition counts differ by at most one among members that could take each
// other's partitions, and partitions stay with their previous member
// whenever balance allows (sticky), so that a membership change moves only
// the partitions it must. Kafka builds this in two ways (homogeneous and
// heterogeneous subscriptions); segfs uses one greedy pass for both:
// keep, fill the least loaded, then move from the most to the least loaded
// member until no move narrows the gap.
func assignUniform(members []assignMember, topics []topicMeta) map[string]tpSet {
	out := make(map[string]tpSet, len(members))
	for _, m := range members {
		out[m.id] = tpSet{}
	}
	if len(members) == 0 {
		return out
	}
	byID := map[[16]byte]string{}
	valid := tpSet{}
	for _, t := range topics {
		byID[t.id] = t.name
		for p := range t.parts {
			valid[topicPart{t.id, p}] = struct{}{}
		}
	}
	eligible := func(m assignMember, tp topicPart) bool { return m.topics[byID[tp.id]] }

	// Fair share, to cap what a member keeps: partitions it could take
	// over the members sharing them, rounded up.
	taken := tpSet{}
	for _, m := range members {
		var mine []topicPart
		for tp := range m.prev {
			if valid.has(tp) && eligible(m, tp) && !taken.has(tp) {
				mine = append(mine, tp)
			}
		}
		sortTPs(mine, byID)
		if c := capFor(m, members, topics); len(mine) > c {
			mine = mine[:c]
		}
		for _, tp := range mine {
			out[m.id][tp] = struct{}{}
			taken[tp] = struct{}{}
		}
	}

	// Fill: each free partition to the least loaded eligible member.
	var free []topicPart
	for tp := range valid {
		if !taken.has(tp) {
			free = append(free, tp)
		}
	}
	sortTPs(free, byID)
	for _, tp := range free {
		best := -1
		for i, m := range members {
			if eligible(m, tp) && (best < 0 || len(out[m.id]) < len(out[members[best].id])) {
				best = i
			}
		}
		if best >= 0 {
			out[members[best].id][tp] = struct{}{}
		}
	}

	// Balance: move a partition from a member to one that can take it
	// and has at least two fewer, until none can.
	for moved := true; moved; {
		moved = false
		order := slices.Clone(members)
		slices.SortStableFunc(order, func(a, b assignMember) int { return len(out[b.id]) - len(out[a.id]) })
		for _, from := range order {
			for i := len(order) - 1; i >= 0 && !moved; i-- {
				to := order[i]
				if len(out[from.id]) <= len(out[to.id])+1 {
					break
				}
				var cands []topicPart
				for tp := range out[from.id] {
					if eligible(to, tp) {
						cands = append(cands, tp)
					}
				}
				if len(cands) == 0 {
					continue
				}
				sortTPs(cands, byID)
				tp := cands[len(cands)-1]
				delete(out[from.id], tp)
				out[to.id][tp] = struct{}{}
				moved = true
			}
			if moved {
				break
			}
		}
	}
	return out
}

// capFor is the most partitions m keeps from its previous assignment: its
// share of the partitions of its topics among the members subscribed to
// them, rounded up (exact for homogeneous subscriptions).
func capFor(m assignMember, members []assignMember, topics []topicMeta) int {
	total, sharers := 0, map[string]bool{}
	for _, t := range topics {
		if !m.topics[t.name] {
			continue
		}
		total += int(t.parts)
		for _, o := range members {
			if o.topics[t.name] {
				sharers[o.id] = true
			}
		}
	}
	if len(sharers) == 0 {
		return 0
	}
	return (total + len(sharers) - 1) / len(sharers)
}

// assignRange is Kafka's RangeAssignor: for each topic, the members
// subscribed to it (sorted by member id) each get a contiguous range of its
// partitions, the first ones one more when they do not divide evenly, so
// that partition N of topics with the same partition count go to the same
// member (co-partitioning).
func assignRange(members []assignMember, topics []topicMeta) map[string]tpSet {
	out := make(map[string]tpSet, len(members))
	for _, m := range members {
		out[m.id] = tpSet{}
	}
	for _, t := range topics {
		var subs []string
		for _, m := range members {
			if m.topics[t.name] {
				subs = append(subs, m.id)
			}
		}
		if len(subs) == 0 {
			continue
		}
		n, k := int(t.parts), len(subs)
		per, extra := n/k, n%k
		p := 0
		for i, id := range subs {
			c := per
			if i < extra {
				c++
			}
			for range c {
				out[id][topicPart{t.id, int32(p)}] = struct{}{}
				p++
			}
		}
	}
	return out
}

// sortTPs sorts partitions by topic name, then partition.
func sortTPs(tps []topicPart, names map[[16]byte]string) {
	slices.SortFunc(tps, func(a, b topicPart) int {
		if c := strings.Compare(names[a.id], names[b.id]); c != 0 {
			return c
		}
		return int(a.p - b.p)
	})
}
