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
	flags := []string{"--listen", addr, "--partitions", "2",
		"--group-consumer-heartbeat-interval", "300ms", "--group-consumer-session-timeout", "6s"}
	srv := kafkaServe(t, data, flags...)
	const topic, group = "ng-restarts", "ng-kgo-restarts"
	prod := kafkaClient(t, addr, kgo.AllowAutoTopicCreation())
	var want []string
	produce := func(round string) {
		t.Helper()
		for p := range int32(2) {
			v := fmt.Sprintf("%s-p%d", round, p)
			kafkaProduce(t, prod, topic, p, v)
			want = append(want, fmt.Sprintf("%d %s", p, v))
		}
	}
	produce("r0")
	kick := make(chan struct{}, 1)
	a := startKgoGroupMember(t, addr, group, topic, "a", kick, kgo.ServerSideBalancer())
	b := startKgoGroupMember(t, addr, group, topic, "b", kick, kgo.ServerSideBalancer(), kgo.InstanceID("ng-b"))
	members := []*kgoGroupMember{a, b}
	allCommitted := func(ms ...*kgoGroupMember) func() bool {
		return func() bool {
			n := 0
			for _, m := range ms {
				_, c, _, _, _ := m.snapshot()
				n += len(c)
			}
			return n >= len(want)
		}
	}
	waitKgoMembers(t, "round r0 read and committed", kick, allCommitted(members...), members...)
	// The group is reconciled: both members at the assignment epoch, a
	// partition each.
	var before kmsg.ConsumerGroupDescribeResponseGroup
	waitKgoMembers(t, "the group Stable with a partition each", kick, func() bool {
		before = nextGenDescribe(t, addr, group)
		if before.State != "Stable" || len(before.Members) != 2 {
			return false
		}
		for _, m := range before.Members {
			if len(m.Assignment.TopicPartitions) != 1 || len(m.Assignment.TopicPartitions[0].Partitions) != 1 {
				return false
			}
		}
		return true
	}, members...)
	_, _, _, aAssigns, _ := a.snapshot()
	_, _, _, bAssigns, _ := b.snapshot()
	// What each member's log had before the restarts (its rebalances
	// then may well have been told of a stale epoch).
	logBefore := map[string]int{}
	for _, m := range members {
		_, _, _, _, log := m.snapshot()
		logBefore[m.name] = len(log)
	}

	sameMembers := func(how string, d kmsg.ConsumerGroupDescribeResponseGroup) {
		t.Helper()
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
	}
	for i, how := range []string{"SIGTERM", "SIGKILL"} {
		if how == "SIGKILL" {
			srv.cmd.Process.Kill()
			<-srv.done
		} else {
			srv.stop()
		}
		srv = kafkaServe(t, data, flags...)
		sameMembers(how, nextGenDescribe(t, addr, group))
		produce(fmt.Sprintf("r%d", i+1))
		waitKgoMembers(t, fmt.Sprintf("round r%d read and committed after the %s restart", i+1, how), kick, allCommitted(members...), members...)
	}
	var got []string
	for _, m := range members {
		read, _, errs, _, log := m.snapshot()
		log = log[logBefore[m.name]:]
		got = append(got, read...)
		if len(errs) > 0 {
			t.Errorf("after the restarts: member %s's commits failed: %v", m.name, errs)
		}
		for _, bad := range []string{"UNKNOWN_MEMBER_ID", "FENCED_MEMBER_EPOCH", "STALE_MEMBER_EPOCH", "stale member epoch", "fenced"} {
			if strings.Contains(log, bad) {
				t.Errorf("after the restarts: member %s was told %s:\n%s", m.name, bad, log)
			}
		}
	}
	slices.Sort(got)
	if w := slices.Sorted(slices.Values(want)); !slices.Equal(got, w) {
		t.Errorf("after the restarts: records read %q, want each once: %q", got, w)
	}
	if _, _, _, as, _ := a.snapshot(); len(as) != len(aAssigns) {
		t.Errorf("a was assigned %d times, %d before the restarts: %v", len(as), len(aAssigns), as)
	}
	if _, _, _, bs, _ := b.snapshot(); len(bs) != len(bAssigns) {
		t.Errorf("b was assigned %d times, %d before the restarts: %v", len(bs), len(bAssigns), bs)
	}
	if t.Failed() {
		return
	}

	// b is gone while the server restarts (its leave cannot reach it):
	// it stays a member until its session times out, then a takes both
	// partitions, b's from where b committed.
	srv.stop()
	b.close()
	srv = kafkaServe(t, data, flags...)
	if d := nextGenDescribe(t, addr, group); len(d.Members) != 2 {
		t.Errorf("ConsumerGroupDescribe after the restart without b: state %q, %d members; want both, until b's session ends", d.State, len(d.Members))
	}
	produce("r3")
	// franz-go's OnPartitionsAssigned names the partitions added only.
	waitKgoMembers(t, "a given b's partition", kick, func() bool {
		_, _, _, as, _ := a.snapshot()
		return len(as) > len(aAssigns)
	}, a)
	if d := nextGenDescribe(t, addr, group); len(d.Members) != 1 || len(d.Members[0].Assignment.TopicPartitions) != 1 || len(d.Members[0].Assignment.TopicPartitions[0].Partitions) != 2 {
		t.Errorf("ConsumerGroupDescribe once a was given b's partition: %+v; want a alone with both partitions", d.Members)
	}
	bRead, _, _, _, _ := b.snapshot()
	waitKgoMembers(t, "round r3 read by a", kick, func() bool {
		aRead, _, _, _, _ := a.snapshot()
		return len(aRead)+len(bRead) >= len(want)
	}, a)
	aRead, _, _, _, _ := a.snapshot()
	got = append(slices.Clone(aRead), bRead...)
	slices.Sort(got)
	if w := slices.Sorted(slices.Values(want)); !slices.Equal(got, w) {
		t.Errorf("after b's departure: records read %q, want each once: %q", got, w)
	}
	if d := nextGenDescribe(t, addr, group); len(d.Members) != 1 || d.Members[0].MemberID != before.Members[slices.IndexFunc(before.Members, func(m kmsg.ConsumerGroupDescribeResponseGroupMember) bool { return m.InstanceID == nil })].MemberID {
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
	if len(as) != len(assigns) {
		t.Errorf("assigned %d times, %d before the restart: %v", len(as), len(assigns), as)
	}
	if after := log[len(logBefore):]; strings.Contains(after, "UNKNOWN_MEMBER_ID") || strings.Contains(after, "FENCED_MEMBER_EPOCH") {
		t.Errorf("the member was told to rejoin after the restart:\n%s", after)
	}
}
