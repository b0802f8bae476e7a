package tests

// Static group membership (group.instance.id, KIP-345) with kcat and
// franz-go, and the admin APIs that delete a group's committed offsets
// (DeleteGroups, OffsetDelete), checked with a kcat consumer afterwards.

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Two static kcat members (-X group.instance.id) split a topic; one is
// restarted (kcat does not leave the group on exit when it is static) and
// comes back with its old partitions while the other member goes on
// untouched: no rebalance, which is what static membership is for.
// Before, every restart of a static member rebalanced the whole group.
func TestKafkaKcatStaticMemberRestart(t *testing.T) {
	// It mostly waits (group timers, clients) on a server, data dir and
	// port of its own: it runs beside the other tests that do (t.Parallel).
	t.Parallel()
	kafkaNeedKcat(t)
	// A joins alone, then B: no initial rebalance delay to wait out.
	srv := kafkaServe(t, "", "--partitions", "4", "--group-initial-rebalance-delay", "0")
	const topic, group = "static", "kcat-static"
	cl := kafkaClient(t, srv.addr, kgo.AllowAutoTopicCreation())
	produceRound(t, cl, topic, 4, "early", 2)

	a := kcatJoin(t, srv.addr, group, topic, "A", "-X", "group.instance.id=kcat-a")
	a.waitUntil("all 4 partitions", func() bool { return a.assignedPartitions() == "0,1,2,3" })
	b := kcatJoin(t, srv.addr, group, topic, "B", "-X", "group.instance.id=kcat-b")
	pa, _ := kcatSplit(t, a, b)
	b.mu.Lock()
	bAssigns := b.assigns
	b.mu.Unlock()

	// A restarts with the same instance id.
	a.stop()
	a2 := kcatJoin(t, srv.addr, group, topic, "A'", "-X", "group.instance.id=kcat-a")
	a2.waitUntil("A's old partitions", func() bool { return a2.assignedPartitions() != "" })
	a2.mu.Lock()
	pa2 := a2.assignedPartitions()
	a2.mu.Unlock()
	if pa2 != pa {
		t.Errorf("restarted A got %q, A had %q", pa2, pa)
	}
	// Both consume what is produced now, each from its own partitions.
	late := produceRound(t, cl, topic, 4, "late", 3)
	for _, m := range []*kcatMember{a2, b} {
		m.waitUntil("its 6 late records", func() bool { return m.recordsWith("late-") >= 6 })
	}
	// kcat prints an "assigned:" line for every rebalance it takes part
	// in; B's output is complete once it has exited.
	b.stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.assigns != bAssigns {
		t.Errorf("B was assigned %d times, %d before A restarted: A's restart rebalanced the group\nB log:\n%s", b.assigns, bAssigns, b.stderr.String())
	}
	var got []string
	for _, r := range append(a2.got(), b.records...) {
		if strings.Contains(r, "late-") {
			got = append(got, r)
		}
	}
	slices.Sort(got)
	slices.Sort(late)
	if !slices.Equal(got, late) {
		t.Errorf("late records consumed %q, want each once: %q", got, late)
	}
}

// kgoStaticMember is a franz-go group consumer with a group instance id
// (kgo.InstanceID) and the eager range balancer, counting the
// assignments it receives. It heartbeats every 300 ms instead of 3 s: a
// member learns of a rebalance only from a heartbeat.
type kgoStaticMember struct {
	cl *kgo.Client

	mu      sync.Mutex
	assigns int
	owned   []int32
}

func kgoStatic(t *testing.T, addr, group, topic, instance string) *kgoStaticMember {
	t.Helper()
	m := &kgoStaticMember{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.InstanceID(instance), kgo.Balancers(kgo.RangeBalancer()), kgo.HeartbeatInterval(300*time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.assigns++
			m.owned = slices.Sorted(slices.Values(ps[topic]))
		}))
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	t.Cleanup(cl.Close)
	return m
}

// poll consumes until it has n records whose value starts with prefix
// (records read again after a restart, for lack of a commit, are
// skipped) or fails after a minute.
func (m *kgoStaticMember) poll(t *testing.T, prefix string, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var got []string
	for len(got) < n {
		fs := m.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records: %q", len(got), n, got)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if strings.HasPrefix(string(r.Value), prefix) {
				got = append(got, fmt.Sprintf("%d %s", r.Partition, r.Value))
			}
		})
	}
	return got
}

func (m *kgoStaticMember) state() (int, []int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.assigns, m.owned
}

// franz-go group consumers with kgo.InstanceID: the leader restarts (its
// Close does not leave the group, as a static member's) and rejoins with
// JoinGroup v9, which gives it the members with SkipAssignment: it gets
// its old partitions back, and the follower is not rebalanced.
func TestKafkaKgoStaticMemberRestart(t *testing.T) {
	// It mostly waits (group timers, clients) on a server, data dir and
	// port of its own: it runs beside the other tests that do (t.Parallel).
	t.Parallel()
	// A joins alone, then B: no initial rebalance delay to wait out.
	srv := kafkaServe(t, "", "--partitions", "4", "--group-initial-rebalance-delay", "0")
	const topic, group = "kgo-static", "kgo-static-group"
	prod := kafkaClient(t, srv.addr, kgo.AllowAutoTopicCreation())
	first := produceRound(t, prod, topic, 4, "first", 2)

	a := kgoStatic(t, srv.addr, group, topic, "kgo-a")
	a.poll(t, "first-", len(first)) // alone: every partition
	b := kgoStatic(t, srv.addr, group, topic, "kgo-b")
	// A rebalance gives each two partitions; wait for both to have theirs.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		na, oa := a.state()
		nb, ob := b.state()
		if na >= 2 && nb >= 1 && len(oa) == 2 && len(ob) == 2 {
			break
		}
		// Polling is what drives kgo's rebalance callbacks.
		pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		a.cl.PollFetches(pctx)
		b.cl.PollFetches(pctx)
		pcancel()
		if ctx.Err() != nil {
			t.Fatalf("no two-way split: A %d %v, B %d %v", na, oa, nb, ob)
		}
	}
	_, ownedA := a.state()
	bAssigns, ownedB := b.state()

	a.cl.Close()
	a2 := kgoStatic(t, srv.addr, group, topic, "kgo-a")
	second := produceRound(t, prod, topic, 4, "second", 3)
	got := a2.poll(t, "second-", 6)
	got = append(got, b.poll(t, "second-", 6)...)
	slices.Sort(got)
	slices.Sort(second)
	if !slices.Equal(got, second) {
		t.Errorf("second round consumed %q, want %q", got, second)
	}
	if n, owned := a2.state(); n != 1 || !slices.Equal(owned, ownedA) {
		t.Errorf("restarted A: %d assignments, partitions %v; want 1, %v", n, owned, ownedA)
	}
	if n, owned := b.state(); n != bAssigns || !slices.Equal(owned, ownedB) {
		t.Errorf("B: %d assignments (%d before A's restart), partitions %v (had %v): A's restart rebalanced the group", n, bAssigns, owned, ownedB)
	}
}

// adminRequest sends req through cl and fails the test on a transport error.
func adminRequest[R kmsg.Response](t *testing.T, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cl.Request(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp.(R)
}

// freshRequest sends req through a client of its own to addr, closed
// after, and fails the test on a transport error.
func freshRequest[R kmsg.Response](t *testing.T, addr string, req kmsg.Request) R {
	t.Helper()
	cl := kafkaClient(t, addr)
	defer cl.Close()
	return adminRequest[R](t, cl, req)
}

// committed returns group's committed offsets of topic's partitions 0..n-1.
func committed(t *testing.T, cl *kgo.Client, group, topic string, n int32) []int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic = topic
	for p := range n {
		rt.Partitions = append(rt.Partitions, p)
	}
	req.Topics = append(req.Topics, rt)
	resp := adminRequest[*kmsg.OffsetFetchResponse](t, cl, req)
	out := make([]int64, n)
	for _, p := range resp.Topics[0].Partitions {
		out[p.Partition] = p.Offset
	}
	return out
}

// kcatGroupRead reads n records as a kcat -G member starting, where the
// group has no commit, from reset; it exits, committing.
func kcatGroupRead(t *testing.T, addr, group, topic, reset string, n int) []string {
	t.Helper()
	out := kcat(t, addr, "", "-G", group, "-c", fmt.Sprint(n), "-f", "%p %s\n", "-X", "auto.offset.reset="+reset, "-q", topic)
	got := mntLines(out)
	sort.Strings(got)
	return got
}

// DeleteGroups and OffsetDelete, sent as franz-go raw requests the way
// kadm and kafka-consumer-groups.sh send them: refused while a kcat
// member is in the group (for OffsetDelete: for the topic it subscribes
// to), then durable: after kill -9 and a restart of segfs serve, a kcat
// consumer of the group starts the deleted partitions from
// auto.offset.reset and the others from the commits left.
func TestKafkaDeleteGroupOffsets(t *testing.T) {
	// It mostly waits (group timers, clients) on a server, data dir and
	// port of its own: it runs beside the other tests that do (t.Parallel).
	t.Parallel()
	kafkaNeedKcat(t)
	// Every kcat member joins alone: no initial rebalance delay to wait
	// out (four times).
	srv := kafkaServe(t, "", "--partitions", "2", "--group-initial-rebalance-delay", "0")
	const topic, group = "deletable", "kcat-del"
	cl := kafkaClient(t, srv.addr, kgo.AllowAutoTopicCreation())
	all := produceRound(t, cl, topic, 2, "r", 5)
	slices.Sort(all)
	if got := kcatGroupRead(t, srv.addr, group, topic, "earliest", 10); !slices.Equal(got, all) {
		t.Fatalf("first read %q, want %q", got, all)
	}
	if c := committed(t, cl, group, topic, 2); !slices.Equal(c, []int64{5, 5}) {
		t.Fatalf("committed %v, want [5 5]", c)
	}

	deleteGroup := func() int16 {
		t.Helper()
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Groups = []string{group}
		return adminRequest[*kmsg.DeleteGroupsResponse](t, cl, req).Groups[0].ErrorCode
	}
	deleteOffset := func(p int32) (int16, int16) {
		t.Helper()
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = group
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetDeleteRequestTopicPartition()
		rp.Partition = p
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := adminRequest[*kmsg.OffsetDeleteResponse](t, cl, req)
		if resp.ErrorCode != 0 {
			return resp.ErrorCode, 0
		}
		return 0, resp.Topics[0].Partitions[0].ErrorCode
	}

	// A live member: the group is not empty and subscribes to the topic.
	m := kcatJoin(t, srv.addr, group, topic, "live")
	m.waitUntil("its assignment", func() bool { return m.assignedPartitions() == "0,1" })
	if code := deleteGroup(); code != kerr.NonEmptyGroup.Code {
		t.Errorf("DeleteGroups with a member: %v, want NON_EMPTY_GROUP", kerr.ErrorForCode(code))
	}
	if g, p := deleteOffset(1); g != 0 || p != kerr.GroupSubscribedToTopic.Code {
		t.Errorf("OffsetDelete of a subscribed topic: %v / %v, want GROUP_SUBSCRIBED_TO_TOPIC", kerr.ErrorForCode(g), kerr.ErrorForCode(p))
	}
	m.stop()

	// Empty: partition 1's offset goes, and stays gone after kill -9.
	if g, p := deleteOffset(1); g != 0 || p != 0 {
		t.Fatalf("OffsetDelete: %v / %v", kerr.ErrorForCode(g), kerr.ErrorForCode(p))
	}
	kill9 := func() {
		t.Helper()
		cl.Close()
		srv.cmd.Process.Kill()
		<-srv.done
		srv = kafkaServe(t, srv.data, "--group-initial-rebalance-delay", "0")
		cl = kafkaClient(t, srv.addr)
	}
	kill9()
	if c := committed(t, cl, group, topic, 2); !slices.Equal(c, []int64{5, -1}) {
		t.Fatalf("committed after OffsetDelete and kill -9: %v, want [5 -1]", c)
	}
	// The consumer restarts partition 1 from auto.offset.reset (earliest)
	// and partition 0 from its commit: only partition 1's records.
	var p1 []string
	for _, r := range all {
		if strings.HasPrefix(r, "1 ") {
			p1 = append(p1, r)
		}
	}
	if got := kcatGroupRead(t, srv.addr, group, topic, "earliest", 5); !slices.Equal(got, p1) {
		t.Fatalf("read after OffsetDelete %q, want partition 1 again: %q", got, p1)
	}

	// DeleteGroups: every offset goes, and the group with them.
	if code := deleteGroup(); code != 0 {
		t.Fatalf("DeleteGroups: %v", kerr.ErrorForCode(code))
	}
	kill9()
	if c := committed(t, cl, group, topic, 2); !slices.Equal(c, []int64{-1, -1}) {
		t.Fatalf("committed after DeleteGroups and kill -9: %v, want none", c)
	}
	for _, g := range adminRequest[*kmsg.ListGroupsResponse](t, cl, kmsg.NewPtrListGroupsRequest()).Groups {
		if g.Group == group {
			t.Errorf("ListGroups still lists %s: %+v", group, g)
		}
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{group}
	if d := adminRequest[*kmsg.DescribeGroupsResponse](t, cl, dg).Groups[0]; d.State != "Dead" {
		t.Errorf("DescribeGroups after DeleteGroups: %+v", d)
	}
	if code := deleteGroup(); code != kerr.GroupIDNotFound.Code {
		t.Errorf("DeleteGroups again: %v, want GROUP_ID_NOT_FOUND", kerr.ErrorForCode(code))
	}
	// A consumer of the group starts over from auto.offset.reset.
	if got := kcatGroupRead(t, srv.addr, group, topic, "earliest", 10); !slices.Equal(got, all) {
		t.Fatalf("read after DeleteGroups %q, want everything again: %q", got, all)
	}
}
