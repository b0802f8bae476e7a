package tests

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// franz-go KIP-848 members (kgo.ServerSideBalancer) that commit
// synchronously carry on across restarts of `segfs serve`, SIGTERM and
// kill -9, as on Kafka 4, whose coordinator replays its members' records
// from __consumer_offsets: the group comes back with both members at
// their epochs and with their assignments, so their heartbeats and
// commits are accepted, nobody is reassigned and nothing is read twice;
// ConsumerGroupDescribe shows the members right after the restart. Then
// one member (static, so its Close does not leave for good) is gone while
// the server restarts: it is removed once its session times out, and the
// other takes over its partition from what it committed. segfs forgot
// the members at a restart: their heartbeats got UNKNOWN_MEMBER_ID, they
// rejoined with new member ids, and ConsumerGroupDescribe showed the
// group Empty.
func TestKafkaNextGenMembersAcrossServeRestarts(t *testing.T) {
	// It mostly waits (group timers, clients) on a server, data dir and
	// port of its own: it runs beside the other tests that do (t.Parallel).
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	addr := kafkaFreeAddr(t)
	// b's session, which the end of the test waits out, is ten of a's
	// heartbeats: long enough for a to outlive the restarts, whose
	// clients come back within a retry backoff (kgoQuickRetry).
	flags := []string{"--listen", addr, "--partitions", "2",
		"--group-consumer-heartbeat-interval", "300ms", "--group-consumer-session-timeout", "3s"}
	srv := kafkaServe(t, data, flags...)
	g := newKgoGroupRounds(t, addr, "ng-kgo-restarts", "ng-restarts", kafkaClient(t, addr, kgo.AllowAutoTopicCreation()))
	g.produce("r0")
	a := g.join("a", kgo.ServerSideBalancer())
	b := g.join("b", kgo.ServerSideBalancer(), kgo.InstanceID("ng-b"))
	g.wait("round r0 read and committed", g.allCommitted)
	// The group is reconciled: both members at the assignment epoch, a
	// partition each.
	var before kmsg.ConsumerGroupDescribeResponseGroup
	g.wait("the group Stable with a partition each", func() bool {
		before = nextGenDescribe(t, addr, g.group)
		if before.State != "Stable" || len(before.Members) != 2 {
			return false
		}
		for _, m := range before.Members {
			if len(m.Assignment.TopicPartitions) != 1 || len(m.Assignment.TopicPartitions[0].Partitions) != 1 {
				return false
			}
		}
		return true
	})
	// The server reconciles a member before its client has taken the
	// partitions in: wait until each member's OnPartitionsAssigned has
	// named the partition the group gives it, so that a member does not
	// take it in only after the mark below, as if it were assigned again
	// across the restarts.
	g.wait("each member's client given its partition", func() bool {
		for _, m := range []*kgoGroupMember{a, b} {
			id, _ := m.cl.GroupMetadata()
			i := slices.IndexFunc(before.Members, func(d kmsg.ConsumerGroupDescribeResponseGroupMember) bool { return d.MemberID == id })
			if i < 0 {
				return false
			}
			_, _, _, as, _ := m.snapshot()
			p := before.Members[i].Assignment.TopicPartitions[0].Partitions[0]
			if !slices.ContainsFunc(as, func(a map[string][]int32) bool { return slices.Contains(a[g.topic], p) }) {
				return false
			}
		}
		return true
	})
	assigned := g.assigned()
	// What each member's log had before the restarts (its rebalances
	// then may well have been told of a stale epoch).
	logBefore := g.logMarks()

	srv = g.serveRestarts(srv, data, flags, func(how string) {
		d := nextGenDescribe(t, addr, g.group)
		if d.ErrorCode != 0 || d.State != "Stable" || d.Epoch != before.Epoch || len(d.Members) != 2 {
			t.Errorf("ConsumerGroupDescribe after the %s restart: error %d, state %q, epoch %d, %d members; want Stable at epoch %d with both members", how, d.ErrorCode, d.State, d.Epoch, len(d.Members), before.Epoch)
			return
		}
		for i, m := range d.Members {
			w := before.Members[i]
			if m.MemberID != w.MemberID || m.MemberEpoch != w.MemberEpoch || !slices.Equal(m.SubscribedTopics, w.SubscribedTopics) ||
				fmt.Sprint(m.Assignment.TopicPartitions) != fmt.Sprint(w.Assignment.TopicPartitions) {
				t.Errorf("ConsumerGroupDescribe after the %s restart: member %s epoch %d topics %v assignment %v; before it %s epoch %d topics %v assignment %v",
					how, m.MemberID, m.MemberEpoch, m.SubscribedTopics, m.Assignment.TopicPartitions, w.MemberID, w.MemberEpoch, w.SubscribedTopics, w.Assignment.TopicPartitions)
			}
		}
	})
	g.checkCarriedOn("after the restarts", logBefore, assigned, "UNKNOWN_MEMBER_ID", "FENCED_MEMBER_EPOCH", "STALE_MEMBER_EPOCH", "stale member epoch", "fenced")
	if t.Failed() {
		return
	}

	// b is gone while the server restarts (its leave cannot reach it):
	// it stays a member until its session times out, then a takes both
	// partitions, b's from where b committed.
	srv.stop()
	b.close()
	srv = kafkaServe(t, data, flags...)
	if d := nextGenDescribe(t, addr, g.group); len(d.Members) != 2 {
		t.Errorf("ConsumerGroupDescribe after the restart without b: state %q, %d members; want both, until b's session ends", d.State, len(d.Members))
	}
	g.produce("r3")
	// franz-go's OnPartitionsAssigned names the partitions added only
	// (and none at every new session of its heartbeat loop: partsGiven).
	g.wait("a given b's partition", func() bool {
		_, _, _, as, _ := a.snapshot()
		return partsGiven(as) > assigned[0]
	})
	if d := nextGenDescribe(t, addr, g.group); len(d.Members) != 1 || len(d.Members[0].Assignment.TopicPartitions) != 1 || len(d.Members[0].Assignment.TopicPartitions[0].Partitions) != 2 {
		t.Errorf("ConsumerGroupDescribe once a was given b's partition: %+v; want a alone with both partitions", d.Members)
	}
	g.wait("round r3 read by a", g.allRead)
	g.checkReadOnce("after b's departure")
	if d := nextGenDescribe(t, addr, g.group); len(d.Members) != 1 || d.Members[0].MemberID != before.Members[slices.IndexFunc(before.Members, func(m kmsg.ConsumerGroupDescribeResponseGroupMember) bool { return m.InstanceID == nil })].MemberID {
		t.Errorf("ConsumerGroupDescribe after b's session ended: state %q, %d members; want a alone", d.State, len(d.Members))
	}
}

// A franz-go KIP-848 member of a mount's --kafka-listen server carries on
// across umount and mount: the group comes back with it, so its
// heartbeats and commits after the restart are accepted, it is not
// assigned again and reads the records appended since once. segfs forgot
// it at the restart: its heartbeat got UNKNOWN_MEMBER_ID and it rejoined.
func TestKafkaNextGenMemberAcrossMountRestart(t *testing.T) {
	// It mostly waits (timers, clients) on a server, data dir and
	// port of its own: it runs beside the other tests that do (t.Parallel).
	t.Parallel()
	addr := kafkaFreeAddr(t)
	flags := []string{"--kafka-listen", addr, "--group-consumer-heartbeat-interval", "300ms"}
	m := mntNew(t, flags...)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/ngm" && seq 1 3 >> "$M/ngm/0/data"`)
	kick := make(chan struct{}, 1)
	a := startKgoGroupMember(t, addr, "ng-mount", "ngm", "a", kick, kgo.ServerSideBalancer())
	committed := func(n int) func() bool {
		return func() bool {
			_, c, _, _, _ := a.snapshot()
			return len(c) >= n
		}
	}
	waitKgoMembers(t, "1-3 read and committed", kick, committed(3), a)
	_, _, _, assigns, logBefore := a.snapshot()

	m.unmount()
	m.mount(flags...)
	kafkaWaitListening(t, addr)
	if d := nextGenDescribe(t, addr, "ng-mount"); d.State != "Stable" || len(d.Members) != 1 {
		t.Errorf("ConsumerGroupDescribe after the mount restart: state %q, %d members; want Stable with the member", d.State, len(d.Members))
	}
	m.ok(`seq 4 6 >> "$M/ngm/0/data"`)
	waitKgoMembers(t, "4-6 read and committed after the restart", kick, committed(6), a)
	read, _, errs, as, log := a.snapshot()
	if want := []string{"0 1", "0 2", "0 3", "0 4", "0 5", "0 6"}; !slices.Equal(read, want) {
		t.Errorf("records read %q, want each once: %q", read, want)
	}
	if len(errs) > 0 {
		t.Errorf("commits failed: %v", errs)
	}
	if n, before := partsGiven(as), partsGiven(assigns); n != before {
		t.Errorf("assigned partitions %d times, %d before the restart: %v", n, before, as)
	}
	if after := log[len(logBefore):]; strings.Contains(after, "UNKNOWN_MEMBER_ID") || strings.Contains(after, "FENCED_MEMBER_EPOCH") {
		t.Errorf("the member was told to rejoin after the restart:\n%s", after)
	}
}
