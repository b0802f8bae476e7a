package fetch

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A static member that restarts (joins with its group.instance.id and no
// member id) into a Stable group gets a new member id and the current
// generation at once, keeps its assignment, and the other member sees no
// rebalance; the leader's rejoin at v9 gets the members with
// SkipAssignment. A rejoin that changes the group's selected protocol, or
// one while the leader computes the assignment, rebalances (Kafka's
// updateStaticMemberThenRebalanceOrCompleteJoin).
func TestGroupStaticRejoin(t *testing.T) {
	ts := startServer(t, Config{GroupInitialRebalanceDelay: -1})
	a, b := dial(t, ts.addr), dial(t, ts.addr)
	const g = "g"
	ia, ib := kmsg.StringPtr("a"), kmsg.StringPtr("b")
	both := []string{"range", "roundrobin"}

	// A leads generation 1 alone; B joins, generation 2 has both.
	ja := a.join(joinSpec{version: 5, group: g, instance: ia, protocols: both})
	wantCode(t, "A sync", a.sync(g, 1, ja.MemberID, map[string]string{ja.MemberID: "all"}).ErrorCode, nil)
	jb := b.start(joinSpec{version: 5, group: g, instance: ib, protocols: both}.request())
	a.heartbeatUntilRebalance(g, 1, ja.MemberID)
	ja = a.join(joinSpec{version: 5, group: g, member: ja.MemberID, instance: ia, protocols: both})
	rb := jb.wait().(*kmsg.JoinGroupResponse)
	if ja.Generation != 2 || rb.Generation != 2 || ja.LeaderID != ja.MemberID || *ja.Protocol != "range" {
		t.Fatalf("generation 2: A %+v B %+v", ja, rb)
	}
	sb := b.start(syncReq(g, 2, rb.MemberID, nil))
	wantCode(t, "A sync", a.sync(g, 2, ja.MemberID, map[string]string{ja.MemberID: "p0", rb.MemberID: "p1"}).ErrorCode, nil)
	if r := sb.wait().(*kmsg.SyncGroupResponse); r.ErrorCode != 0 || string(r.MemberAssignment) != "p1" {
		t.Fatalf("B sync: %+v", r)
	}

	// B restarts: same generation, a new id, its old assignment; A is
	// not disturbed, B's old id is fenced.
	rb2 := b.join(joinSpec{version: 5, group: g, instance: ib, protocols: both})
	if rb2.ErrorCode != 0 || rb2.Generation != 2 || rb2.MemberID == rb.MemberID || rb2.LeaderID != ja.MemberID || len(rb2.Members) != 0 {
		t.Fatalf("B's static rejoin: %+v", rb2)
	}
	wantCode(t, "A's heartbeat after B's restart", a.heartbeat(g, 2, ja.MemberID, ia), nil)
	wantCode(t, "B's old id", b.heartbeat(g, 2, rb.MemberID, ib), kerr.FencedInstanceID)
	if r := b.sync(g, 2, rb2.MemberID, nil); r.ErrorCode != 0 || string(r.MemberAssignment) != "p1" {
		t.Fatalf("B's sync after its restart: %+v", r)
	}
	wantCode(t, "B's heartbeat", b.heartbeat(g, 2, rb2.MemberID, ib), nil)
	if d := ts.srv.groups.describe(g); d.State != "Stable" || len(d.Members) != 2 {
		t.Fatalf("after B's restart: %+v", d)
	}

	// The leader restarts at v5: the answer names its old id as leader
	// (so it does not assign); at v9 it is the leader and gets the
	// members, with SkipAssignment.
	ja2 := a.join(joinSpec{version: 5, group: g, instance: ia, protocols: both})
	if ja2.ErrorCode != 0 || ja2.Generation != 2 || ja2.LeaderID != ja.MemberID || len(ja2.Members) != 0 {
		t.Fatalf("leader's static rejoin v5: %+v", ja2)
	}
	ja3 := a.join(joinSpec{version: 9, group: g, instance: ia, protocols: both})
	if ja3.ErrorCode != 0 || ja3.Generation != 2 || ja3.LeaderID != ja3.MemberID || !ja3.SkipAssignment || len(ja3.Members) != 2 {
		t.Fatalf("leader's static rejoin v9: %+v", ja3)
	}
	if r := a.sync(g, 2, ja3.MemberID, nil); r.ErrorCode != 0 || string(r.MemberAssignment) != "p0" {
		t.Fatalf("leader's sync after its restart: %+v", r)
	}
	wantCode(t, "B's heartbeat after the leader's restart", b.heartbeat(g, 2, rb2.MemberID, ib), nil)

	// B restarts preferring roundrobin: one vote each, the tie goes to
	// the earlier member (A, range)... so the protocol stays: no
	// rebalance. A restarting with roundrobin first changes it.
	rb3 := b.join(joinSpec{version: 5, group: g, instance: ib, protocols: []string{"roundrobin", "range"}})
	if rb3.ErrorCode != 0 || rb3.Generation != 2 {
		t.Fatalf("B's rejoin with new preferences: %+v", rb3)
	}
	held := a.start(joinSpec{version: 5, group: g, instance: ia, protocols: []string{"roundrobin", "range"}}.request())
	b.heartbeatUntilRebalance(g, 2, rb3.MemberID)
	rb3 = b.join(joinSpec{version: 5, group: g, member: rb3.MemberID, instance: ib, protocols: []string{"roundrobin", "range"}})
	ja4 := held.wait().(*kmsg.JoinGroupResponse)
	if ja4.ErrorCode != 0 || ja4.Generation != 3 || *ja4.Protocol != "roundrobin" || rb3.Generation != 3 {
		t.Fatalf("rejoin that changes the protocol: A %+v B %+v", ja4, rb3)
	}

	// During CompletingRebalance (nobody synced generation 3 yet) a
	// static rejoin rebalances: the leader may be assigning to the old id.
	held = b.start(joinSpec{version: 5, group: g, instance: ib, protocols: []string{"roundrobin", "range"}}.request())
	a.heartbeatUntilRebalance(g, 3, ja4.MemberID)
	ja5 := a.join(joinSpec{version: 5, group: g, member: ja4.MemberID, instance: ia, protocols: []string{"roundrobin", "range"}})
	if rb5 := held.wait().(*kmsg.JoinGroupResponse); ja5.Generation != 4 || rb5.Generation != 4 || rb5.MemberID == rb3.MemberID {
		t.Fatalf("static rejoin during CompletingRebalance: A %+v B %+v", ja5, rb5)
	}
}

// A member that joined but never sends SyncGroup is removed once the
// rebalance timeout has passed, even after the leader's SyncGroup made the
// group Stable and however often it heartbeats (Kafka's pending-sync
// expiry); the others rebalance.
func TestGroupPendingSyncInStable(t *testing.T) {
	ts := startServer(t, Config{GroupInitialRebalanceDelay: -1})
	a, b := dial(t, ts.addr), dial(t, ts.addr)
	const g = "g"
	// B's removal waits out the rebalance timeout, which must only
	// outlast A's heartbeat and rejoin (a few in-process requests).
	const rebalance = 1000 // ms

	ja := a.joinNew(joinSpec{group: g, rebalance: rebalance})
	wantCode(t, "A sync", a.sync(g, 1, ja.MemberID, nil).ErrorCode, nil)
	jb := b.start(joinSpec{version: 3, group: g, rebalance: rebalance}.request())
	a.heartbeatUntilRebalance(g, 1, ja.MemberID)
	ja = a.join(joinSpec{version: 5, group: g, member: ja.MemberID, rebalance: rebalance})
	rb := jb.wait().(*kmsg.JoinGroupResponse)
	if ja.Generation != 2 || rb.Generation != 2 {
		t.Fatalf("generation 2: A %+v B %+v", ja, rb)
	}
	wantCode(t, "leader sync", a.sync(g, 2, ja.MemberID, map[string]string{ja.MemberID: "p0", rb.MemberID: "p1"}).ErrorCode, nil)

	// B heartbeats but never syncs: it is removed, A is told to rejoin.
	deadline := time.Now().Add(30 * time.Second)
	for {
		code := b.heartbeat(g, 2, rb.MemberID, nil)
		if code == kerr.UnknownMemberID.Code {
			break
		}
		if code != 0 || time.Now().After(deadline) {
			t.Fatalf("B's heartbeat: error %d, B was not removed for not syncing", code)
		}
		time.Sleep(20 * time.Millisecond)
	}
	wantCode(t, "A's heartbeat", a.heartbeat(g, 2, ja.MemberID, nil), kerr.RebalanceInProgress)
	if r := a.join(joinSpec{version: 5, group: g, member: ja.MemberID, rebalance: rebalance}); r.Generation != 3 || len(r.Members) != 1 {
		t.Fatalf("A alone in generation 3: %+v", r)
	}
}

// waitStack waits until some goroutine's stack contains every one of
// frames: a request is parked where the test wants it.
func waitStack(t *testing.T, frames ...string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	waitFor(t, func() bool {
		n := runtime.Stack(buf, true)
		for _, g := range strings.Split(string(buf[:n]), "\n\n") {
			all := true
			for _, f := range frames {
				all = all && strings.Contains(g, f)
			}
			if all {
				return true
			}
		}
		return false
	})
}

// An OffsetCommit is validated against the group's membership in the same
// step as its offsets are recorded: a member removed while its commit is
// on the way (here: the commit is held up looking up its partition, the
// slow part between the two checks before) has its commit refused, and
// the offsets of the group stay as they were. And the durable write does
// not hold the coordinator: while one group's commit waits for its write,
// other groups' heartbeats are answered.
func TestOffsetCommitOrderedWithMembership(t *testing.T) {
	ts := startServer(t, Config{GroupInitialRebalanceDelay: -1})
	createTopic(t, ts, "t", 1)
	a, b := dial(t, ts.addr), dial(t, ts.addr)
	const g = "g"
	ja := a.joinNew(joinSpec{group: g})
	wantCode(t, "sync", a.sync(g, 1, ja.MemberID, nil).ErrorCode, nil)

	// Hold the store's topic lock: a CreateTopic writing its topics file
	// into a FIFO blocks until the test reads the FIFO.
	fifo := filepath.Join(ts.dir, "segfs-topics.json.tmp")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	created := make(chan struct{})
	go func() { ts.store.CreateTopic("blocker", 1, nil); close(created) }()
	waitStack(t, "saveTopicsLocked")

	commit := a.start(func() kmsg.Request {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = 7
		req.Group, req.Generation, req.MemberID = g, 1, ja.MemberID
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5}}}}
		return req
	}())
	waitStack(t, "handleOffsetCommit", "checkCommit")
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version, leave.Group, leave.MemberID = 0, g, ja.MemberID
	wantCode(t, "leave while the commit is on its way", b.roundTrip(leave).(*kmsg.LeaveGroupResponse).ErrorCode, nil)

	// Release the topic lock.
	f, err := os.Open(fifo)
	if err != nil {
		t.Fatal(err)
	}
	go drain(f)
	<-created
	r := commit.wait().(*kmsg.OffsetCommitResponse)
	wantCode(t, "commit of a member that left before it was validated", r.Topics[0].Partitions[0].ErrorCode, kerr.UnknownMemberID)
	if co, ok := fetchOffset(b, g, "t", 0); co != -1 {
		t.Errorf("offset after the refused commit: %d (%v), want none", co, ok)
	}

	// A commit whose write is held (the offsets file's temporary is a
	// FIFO) does not hold the coordinator: another group works on.
	ja = a.joinNew(joinSpec{group: g})
	wantCode(t, "sync", a.sync(g, ja.Generation, ja.MemberID, nil).ErrorCode, nil)
	jo := b.joinNew(joinSpec{group: "other"})
	wantCode(t, "sync other", b.sync("other", jo.Generation, jo.MemberID, nil).ErrorCode, nil)
	ofifo := filepath.Join(ts.dir, OffsetsFile+".tmp")
	if err := syscall.Mkfifo(ofifo, 0o644); err != nil {
		t.Fatal(err)
	}
	held := a.start(func() kmsg.Request {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = 7
		req.Group, req.Generation, req.MemberID = g, ja.Generation, ja.MemberID
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 7}}}}
		return req
	}())
	waitStack(t, "handleOffsetCommit", "WriteFileAtomic")
	wantCode(t, "heartbeat of another group during a write", b.heartbeat("other", jo.Generation, jo.MemberID, nil), nil)
	wantCode(t, "heartbeat of the committing group during its write", b.heartbeat(g, ja.Generation, ja.MemberID, nil), nil)
	// The write into the FIFO fails (a FIFO cannot be fsynced): the
	// commit is answered with a retriable error and nothing is stored.
	f, err = os.Open(ofifo)
	if err != nil {
		t.Fatal(err)
	}
	go drain(f)
	r = held.wait().(*kmsg.OffsetCommitResponse)
	wantCode(t, "commit whose write failed", r.Topics[0].Partitions[0].ErrorCode, kerr.NotCoordinator)
	if co, _ := fetchOffset(b, g, "t", 0); co != -1 {
		t.Errorf("offset after the failed commit: %d, want none", co)
	}
}

// drain reads f to its end and closes it.
func drain(f *os.File) {
	defer f.Close()
	buf := make([]byte, 1<<16)
	for {
		if _, err := f.Read(buf); err != nil {
			return
		}
	}
}

// fetchOffset is the committed offset of group in topic/partition, -1 if
// none.
func fetchOffset(c *client, group, topic string, partition int32) (int64, bool) {
	c.t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 7
	req.Group = group
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{partition}}}
	r := c.roundTrip(req).(*kmsg.OffsetFetchResponse)
	p := r.Topics[0].Partitions[0]
	return p.Offset, p.Offset >= 0
}

// consumerMeta is consumer-protocol subscription metadata for topics.
func consumerMeta(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Version, m.Topics = 0, topics
	return m.AppendTo(nil)
}

// DeleteGroups and OffsetDelete through franz-go's client.Request, as an
// admin tool sends them: Kafka's errors, and deletions that OffsetFetch,
// ListGroups and DescribeGroups show at once and that survive a restart.
func TestDeleteGroupsOffsetDelete(t *testing.T) {
	dir := t.TempDir()
	ts := startServerDir(t, dir, Config{GroupInitialRebalanceDelay: -1})
	createTopic(t, ts, "t", 2)
	createTopic(t, ts, "u", 1)
	c := dial(t, ts.addr)
	cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	commit := func(group string, gen int32, member string, tps map[string][]int32, offset int64) {
		t.Helper()
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation, req.MemberID = group, gen, member
		for topic, parts := range tps {
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = topic
			for _, p := range parts {
				rp := kmsg.NewOffsetCommitRequestTopicPartition()
				rp.Partition, rp.Offset = p, offset
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				wantCode(t, "commit "+group, rp.ErrorCode, nil)
			}
		}
	}
	// "idle" only has offsets; "busy" has a consumer subscribed to t;
	// "connect" a member of another protocol type.
	commit("idle", -1, "", map[string][]int32{"t": {0, 1}}, 3)
	j := joinSpec{version: 5, group: "busy"}
	first := c.join(j)
	req := j.request()
	req.MemberID = first.MemberID
	req.Protocols[0].Metadata = consumerMeta("t")
	jb := c.roundTrip(req).(*kmsg.JoinGroupResponse)
	wantCode(t, "busy sync", c.sync("busy", jb.Generation, jb.MemberID, nil).ErrorCode, nil)
	commit("busy", jb.Generation, jb.MemberID, map[string][]int32{"t": {0}, "u": {0}}, 4)
	jc := c.joinNew(joinSpec{group: "connect", protocolType: "connect"})
	wantCode(t, "connect sync", c.sync("connect", jc.Generation, jc.MemberID, nil).ErrorCode, nil)

	// OffsetDelete.
	od := func(group string, tps map[string][]int32) *kmsg.OffsetDeleteResponse {
		t.Helper()
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = group
		for topic, parts := range tps {
			rt := kmsg.NewOffsetDeleteRequestTopic()
			rt.Topic = topic
			for _, p := range parts {
				rp := kmsg.NewOffsetDeleteRequestTopicPartition()
				rp.Partition = p
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("OffsetDelete %q: %v", group, err)
		}
		return resp
	}
	wantCode(t, "OffsetDelete of an unknown group", od("nope", map[string][]int32{"t": {0}}).ErrorCode, kerr.GroupIDNotFound)
	wantCode(t, "OffsetDelete in a non-consumer group with members", od("connect", map[string][]int32{"t": {0}}).ErrorCode, kerr.NonEmptyGroup)
	r := od("busy", map[string][]int32{"t": {0}})
	if r.ErrorCode != 0 || len(r.Topics) != 1 || r.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code {
		t.Fatalf("OffsetDelete of a subscribed topic: %+v", r)
	}
	r = od("busy", map[string][]int32{"u": {0}})
	if r.ErrorCode != 0 || len(r.Topics) != 1 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("OffsetDelete of a topic the group does not subscribe to: %+v", r)
	}
	if o, _ := fetchOffset(c, "busy", "u", 0); o != -1 {
		t.Errorf("busy u/0 after OffsetDelete: %d", o)
	}
	if o, _ := fetchOffset(c, "busy", "t", 0); o != 4 {
		t.Errorf("busy t/0 kept: %d", o)
	}
	r = od("idle", map[string][]int32{"t": {1}, "u": {0}})
	if r.ErrorCode != 0 || len(r.Topics) != 2 {
		t.Fatalf("OffsetDelete in an Empty group: %+v", r)
	}
	if o, _ := fetchOffset(c, "idle", "t", 1); o != -1 {
		t.Errorf("idle t/1 after OffsetDelete: %d", o)
	}
	if o, _ := fetchOffset(c, "idle", "t", 0); o != 3 {
		t.Errorf("idle t/0 kept: %d", o)
	}
	raw := kmsg.NewPtrOffsetDeleteRequest()
	wantCode(t, "OffsetDelete without a group id", c.roundTrip(raw).(*kmsg.OffsetDeleteResponse).ErrorCode, kerr.InvalidGroupID)

	// DeleteGroups, at every version on the raw connection.
	for v := int16(0); v <= 2; v++ {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Version = v
		req.Groups = []string{"", "nope", "busy"}
		r := c.roundTrip(req).(*kmsg.DeleteGroupsResponse)
		if len(r.Groups) != 3 {
			t.Fatalf("DeleteGroups v%d: %+v", v, r)
		}
		// The empty group id is a group name (Kafka 4), one with nothing.
		wantCode(t, "DeleteGroups of the empty group id", r.Groups[0].ErrorCode, kerr.GroupIDNotFound)
		wantCode(t, "DeleteGroups of an unknown group", r.Groups[1].ErrorCode, kerr.GroupIDNotFound)
		wantCode(t, "DeleteGroups of a group with members", r.Groups[2].ErrorCode, kerr.NonEmptyGroup)
	}
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{"idle"}
	dr, err := dg.RequestWith(ctx, cl)
	if err != nil || len(dr.Groups) != 1 || dr.Groups[0].ErrorCode != 0 {
		t.Fatalf("DeleteGroups idle: %+v %v", dr, err)
	}
	// busy empties (its member leaves), then goes too.
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version, leave.Group, leave.MemberID = 0, "busy", jb.MemberID
	wantCode(t, "leave busy", c.roundTrip(leave).(*kmsg.LeaveGroupResponse).ErrorCode, nil)
	dg.Groups = []string{"busy", "idle"}
	if dr, err = dg.RequestWith(ctx, cl); err != nil || dr.Groups[0].ErrorCode != 0 || dr.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("DeleteGroups busy, idle again: %+v %v", dr, err)
	}

	check := func(when string, c *client) {
		t.Helper()
		for _, g := range []string{"idle", "busy"} {
			if o, _ := fetchOffset(c, g, "t", 0); o != -1 {
				t.Errorf("%s: %s t/0: %d, want none", when, g, o)
			}
		}
		lg := kmsg.NewPtrListGroupsRequest()
		lg.Version = 4
		groups := map[string]bool{}
		for _, g := range c.roundTrip(lg).(*kmsg.ListGroupsResponse).Groups {
			groups[g.Group] = true
		}
		if groups["idle"] || groups["busy"] {
			t.Errorf("%s: ListGroups: %v", when, groups)
		}
		dg := kmsg.NewPtrDescribeGroupsRequest()
		dg.Version = 5
		dg.Groups = []string{"idle", "busy"}
		for _, d := range c.roundTrip(dg).(*kmsg.DescribeGroupsResponse).Groups {
			if d.State != "Dead" || len(d.Members) != 0 {
				t.Errorf("%s: DescribeGroups %s: %+v", when, d.Group, d)
			}
		}
	}
	check("after the deletions", c)
	cl.Close()
	ts.stop()
	ts = startServerDir(t, dir, Config{GroupInitialRebalanceDelay: -1})
	check("after a restart", dial(t, ts.addr))
}

// DeleteGroups naming a group twice deletes it and answers it once, as
// Kafka's handleDeleteGroupsRequest takes the names distinct; segfs
// answered it twice, the second time GROUP_ID_NOT_FOUND.
func TestDeleteGroupsDuplicateName(t *testing.T) {
	ts := startServer(t, Config{})
	createTopic(t, ts, "t", 1)
	c := dial(t, ts.addr)
	for _, g := range []string{"dup", "other"} {
		if code := fetchCommit(c, g); code != 0 {
			t.Fatalf("commit %s: %s", g, kerr.ErrorForCode(code))
		}
	}
	for v := int16(0); v <= 2; v++ {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Version = v
		req.Groups = []string{"dup", "nope", "dup", "nope"}
		if v == 0 {
			req.Groups = []string{"other", "other"}
		}
		r := c.roundTrip(req).(*kmsg.DeleteGroupsResponse)
		want := map[string]int16{"dup": 0, "nope": kerr.GroupIDNotFound.Code}
		if v == 0 {
			want = map[string]int16{"other": 0}
		}
		if v == 2 {
			want["dup"] = kerr.GroupIDNotFound.Code // deleted at v1
		}
		if len(r.Groups) != len(want) {
			t.Fatalf("v%d: %d answers for %v, want %d: %+v", v, len(r.Groups), req.Groups, len(want), r.Groups)
		}
		for _, g := range r.Groups {
			if code, ok := want[g.Group]; !ok || g.ErrorCode != code {
				t.Errorf("v%d %s: %v, want %v", v, g.Group, kerr.ErrorForCode(g.ErrorCode), kerr.ErrorForCode(want[g.Group]))
			}
		}
	}
}

// fetchCommit commits offset 0 of t/0 for group without membership.
func fetchCommit(c *client, group string) int16 {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation = 8, group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return c.roundTrip(req).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
}
