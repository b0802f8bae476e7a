package fetch

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/segfs/segfs/logstore"
)

// Failed writes of the offsets file's group records: Kafka's coordinator
// answers the write's error (KAFKA_STORAGE_ERROR as NOT_COORDINATOR) and
// does not keep the change, where segfs logged the failure, answered
// success and carried on in memory with a state a restart did not bring
// back.

// diskFull makes the offsets file's writes of a server fail with ENOSPC
// while it is set.
type diskFull struct{ full atomic.Bool }

func (d *diskFull) prepare(s *Server) {
	s.offsets.writeFile = func(path string, b []byte) error {
		if d.full.Load() {
			return &os.PathError{Op: "write", Path: path + ".tmp", Err: syscall.ENOSPC}
		}
		return logstore.WriteFileAtomic(path, b)
	}
}

// startFullableServer is startServerDir whose offsets writes fail while
// the returned diskFull is full.
func startFullableServer(t *testing.T, dir string) (*testServer, *diskFull) {
	t.Helper()
	d := &diskFull{}
	return startServerPrepared(t, dir, Config{GroupInitialRebalanceDelay: -1}, d.prepare), d
}

// offsetsFileOn reads the offsets file as the disk holds it.
func offsetsFileOn(t *testing.T, dir string) offsetsFileData {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, OffsetsFile))
	if err != nil {
		t.Fatal(err)
	}
	var d offsetsFileData
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// A classic generation whose record cannot be written: the leader's and
// the follower's SyncGroup are answered NOT_COORDINATOR without
// assignments, the group rebalances (heartbeats say so), a commit in the
// generation that was not written is refused, and once the disk takes
// writes again the members rejoin into a generation the file holds and a
// restart brings back. segfs answered both SyncGroups with their
// assignments, and a restart brought back generation 1 with one member.
func TestSyncGroupRecordWriteFails(t *testing.T) {
	dir := t.TempDir()
	ts, disk := startFullableServer(t, dir)
	createTopic(t, ts, "t", 1)
	const g = "g"
	a, b := dial(t, ts.addr), dial(t, ts.addr)
	ja := a.joinNew(joinSpec{group: g})
	wantCode(t, "A's sync of generation 1", a.sync(g, 1, ja.MemberID, map[string]string{ja.MemberID: "a"}).ErrorCode, nil)
	wantCode(t, "A's commit in generation 1", a.groupCommit(g, 1, ja.MemberID, nil), nil)

	// B joins: generation 2 forms while the disk is full.
	heldJoin := b.start(joinSpec{version: 5, group: g, member: ""}.request())
	jb := heldJoin.wait().(*kmsg.JoinGroupResponse)
	wantCode(t, "B's first join", jb.ErrorCode, kerr.MemberIDRequired)
	heldJoin = b.start(joinSpec{version: 5, group: g, member: jb.MemberID}.request())
	a.heartbeatUntilRebalance(g, 1, ja.MemberID)
	ja = a.join(joinSpec{version: 5, group: g, member: ja.MemberID})
	jb = heldJoin.wait().(*kmsg.JoinGroupResponse)
	if ja.Generation != 2 || jb.Generation != 2 || ja.LeaderID != ja.MemberID {
		t.Fatalf("generation 2: A %+v, B %+v", ja, jb)
	}
	disk.full.Store(true)
	heldSync := b.start(syncReq(g, 2, jb.MemberID, nil))
	waitStack(t, "handleSyncGroup", "await") // B waits for the leader's
	ra := a.sync(g, 2, ja.MemberID, map[string]string{ja.MemberID: "a2", jb.MemberID: "b2"})
	rb := heldSync.wait().(*kmsg.SyncGroupResponse)
	wantCode(t, "leader's SyncGroup of a generation not written", ra.ErrorCode, kerr.NotCoordinator)
	wantCode(t, "follower's SyncGroup of a generation not written", rb.ErrorCode, kerr.NotCoordinator)
	if len(ra.MemberAssignment) != 0 || len(rb.MemberAssignment) != 0 {
		t.Fatalf("assignments handed out of a generation not written: A %q, B %q", ra.MemberAssignment, rb.MemberAssignment)
	}
	// The client retries its SyncGroup: the generation is void.
	wantCode(t, "A's SyncGroup retried", a.sync(g, 2, ja.MemberID, map[string]string{ja.MemberID: "a2", jb.MemberID: "b2"}).ErrorCode, kerr.RebalanceInProgress)
	wantCode(t, "B's heartbeat", b.heartbeat(g, 2, jb.MemberID, nil), kerr.RebalanceInProgress)
	if d := describeGroup(t, a, g); d.State != "PreparingRebalance" {
		t.Errorf("DescribeGroups after the failed write: %s, want PreparingRebalance", d.State)
	}
	rec := offsetsFileOn(t, dir).ClassicGroups[g]
	if rec.Generation != 1 || len(rec.Members) != 1 || rec.Members[0].MemberID != ja.MemberID {
		t.Errorf("offsets file after the failed write: generation %d, %d members, want generation 1 with A", rec.Generation, len(rec.Members))
	}

	// Space is back: both rejoin into generation 3, which is written.
	disk.full.Store(false)
	heldJoin = b.start(joinSpec{version: 5, group: g, member: jb.MemberID}.request())
	ja = a.join(joinSpec{version: 5, group: g, member: ja.MemberID})
	jb = heldJoin.wait().(*kmsg.JoinGroupResponse)
	if ja.ErrorCode != 0 || jb.ErrorCode != 0 || ja.Generation != 3 || jb.Generation != 3 {
		t.Fatalf("rejoin once the disk takes writes: A %+v, B %+v", ja, jb)
	}
	leader, follower, lid, fid := a, b, ja.MemberID, jb.MemberID
	if jb.LeaderID == jb.MemberID {
		leader, follower, lid, fid = b, a, jb.MemberID, ja.MemberID
	}
	heldSync = follower.start(syncReq(g, 3, fid, nil))
	if r := leader.sync(g, 3, lid, map[string]string{lid: "l3", fid: "f3"}); r.ErrorCode != 0 || string(r.MemberAssignment) != "l3" {
		t.Fatalf("leader's sync of generation 3: %+v", r)
	}
	if r := heldSync.wait().(*kmsg.SyncGroupResponse); r.ErrorCode != 0 || string(r.MemberAssignment) != "f3" {
		t.Fatalf("follower's sync of generation 3: %+v", r)
	}
	ts.stop()
	ts, _ = startFullableServer(t, dir)
	c := dial(t, ts.addr)
	if d := describeGroup(t, c, g); d.State != "Stable" || len(d.Members) != 2 {
		t.Errorf("after a restart: %s with %d members, want Stable with both", d.State, len(d.Members))
	}
	wantCode(t, "leader's heartbeat in generation 3 after a restart", c.heartbeat(g, 3, lid, nil), nil)
	wantCode(t, "follower's heartbeat in generation 3 after a restart", c.heartbeat(g, 3, fid, nil), nil)
}

// A commit whose write fails is answered NOT_COORDINATOR, Kafka 4's
// answer for a failed append to __consumer_offsets (segfs answered
// COORDINATOR_NOT_AVAILABLE), and the offset stays as it was; so are an
// OffsetDelete and a DeleteGroups.
func TestOffsetWritesFail(t *testing.T) {
	ts, disk := startFullableServer(t, t.TempDir())
	createTopic(t, ts, "t", 1)
	c := dial(t, ts.addr)
	commit := func(offset int64) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.Generation = 8, "simple", -1
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset}}}}
		return c.roundTrip(req).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	wantCode(t, "commit", commit(5), nil)
	disk.full.Store(true)
	wantCode(t, "commit on a full disk", commit(9), kerr.NotCoordinator)
	if o, _ := fetchOffset(c, "simple", "t", 0); o != 5 {
		t.Errorf("offset after the failed commit: %d, want 5", o)
	}
	// OffsetDelete and DeleteGroups too, with Kafka's shape: a
	// group-level error for OffsetDelete, listing only partitions that
	// do not exist.
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "simple"
	od.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}, {Partition: 7}}}}
	odr := c.roundTrip(od).(*kmsg.OffsetDeleteResponse)
	wantCode(t, "OffsetDelete on a full disk", odr.ErrorCode, kerr.NotCoordinator)
	if len(odr.Topics) != 1 || len(odr.Topics[0].Partitions) != 1 || odr.Topics[0].Partitions[0].Partition != 7 ||
		odr.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("OffsetDelete on a full disk: topics %+v, want partition 7 alone, UNKNOWN_TOPIC_OR_PARTITION", odr.Topics)
	}
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{"simple"}
	wantCode(t, "DeleteGroups on a full disk", c.roundTrip(dg).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, kerr.NotCoordinator)
	if o, _ := fetchOffset(c, "simple", "t", 0); o != 5 {
		t.Errorf("offset after the failed deletes: %d, want 5", o)
	}

	disk.full.Store(false)
	wantCode(t, "commit retried", commit(9), nil)
	if o, _ := fetchOffset(c, "simple", "t", 0); o != 9 {
		t.Errorf("offset after the retried commit: %d, want 9", o)
	}
}

// A static member rejoining a Stable group gets a new member id, which
// the group's record must hold. If it cannot be written, the member keeps
// its old id (its heartbeats go on being accepted) and the join is
// answered NOT_COORDINATOR with no member id, as in Kafka. segfs answered
// the new id, which a restart forgot: the member was then unknown.
func TestStaticMemberReplaceWriteFails(t *testing.T) {
	dir := t.TempDir()
	ts, disk := startFullableServer(t, dir)
	createTopic(t, ts, "t", 1)
	const g = "g"
	ia := kmsg.StringPtr("ia")
	a := dial(t, ts.addr)
	j := a.join(joinSpec{version: 5, group: g, instance: ia})
	wantCode(t, "static join", j.ErrorCode, nil)
	oldID := j.MemberID
	wantCode(t, "sync", a.sync(g, j.Generation, oldID, map[string]string{oldID: "a"}).ErrorCode, nil)

	disk.full.Store(true)
	r := a.join(joinSpec{version: 5, group: g, instance: ia})
	wantCode(t, "static rejoin while the disk is full", r.ErrorCode, kerr.NotCoordinator)
	if r.MemberID != "" {
		t.Errorf("static rejoin while the disk is full: member id %q, want none", r.MemberID)
	}
	wantCode(t, "heartbeat with the old id", a.heartbeat(g, j.Generation, oldID, ia), nil)
	if rec := offsetsFileOn(t, dir).ClassicGroups[g]; len(rec.Members) != 1 || rec.Members[0].MemberID != oldID {
		t.Errorf("offsets file: %+v, want the old member id", rec.Members)
	}

	disk.full.Store(false)
	r = a.join(joinSpec{version: 5, group: g, instance: ia})
	if r.ErrorCode != 0 || r.MemberID == "" || r.MemberID == oldID || r.Generation != j.Generation {
		t.Fatalf("static rejoin once the disk takes writes: %+v", r)
	}
	wantCode(t, "heartbeat with the new id", a.heartbeat(g, j.Generation, r.MemberID, ia), nil)
	wantCode(t, "heartbeat with the replaced id", a.heartbeat(g, j.Generation, oldID, ia), kerr.FencedInstanceID)
	if rec := offsetsFileOn(t, dir).ClassicGroups[g]; len(rec.Members) != 1 || rec.Members[0].MemberID != r.MemberID {
		t.Errorf("offsets file: %+v, want the new member id", rec.Members)
	}
}

// A KIP-848 heartbeat whose records cannot be written is answered
// NOT_COORDINATOR and the group stays as the file holds it: a member
// joining is not a member, the group epoch does not move, so the member
// already there is not asked to revoke anything; once writes succeed the
// join goes through. segfs answered the join with an epoch, bumped the
// group's, and a restart forgot the member.
func TestConsumerGroupHeartbeatWriteFails(t *testing.T) {
	dir := t.TempDir()
	d := &diskFull{}
	ts := startServerPrepared(t, dir, Config{}, d.prepare)
	tp, err := ts.store.CreateTopic("t", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[[16]byte]string{tp.ID(): "t"}
	all := map[[16]byte][]int32{tp.ID(): {0, 1}}
	c := dial(t, ts.addr)
	a := c.cgh(cgh{group: "g", member: "A", topics: []string{"t"}, owned: map[[16]byte][]int32{}})
	wantAssigned(t, "A joins", a, names, "t/0", "t/1")

	d.full.Store(true)
	b := c.cgh(cgh{group: "g", member: "B", topics: []string{"t"}, owned: map[[16]byte][]int32{}})
	wantCode(t, "B joins while the disk is full", b.ErrorCode, kerr.NotCoordinator)
	// A keepalive writes nothing: it is answered, and A keeps both.
	a = c.cgh(cgh{group: "g", member: "A", epoch: 1, owned: all})
	if a.ErrorCode != 0 || a.MemberEpoch != 1 || a.Assignment != nil {
		t.Errorf("A after B's failed join: error %v epoch %d assignment %v, want epoch 1 and no change", kerr.ErrorForCode(a.ErrorCode), a.MemberEpoch, assigned(a, names))
	}
	wantCode(t, "B's heartbeat at the epoch it was not given", c.cgh(cgh{group: "g", member: "B", epoch: 2, owned: map[[16]byte][]int32{}}).ErrorCode, kerr.UnknownMemberID)
	desc := c.roundTrip(&kmsg.ConsumerGroupDescribeRequest{Version: 1, Groups: []string{"g"}}).(*kmsg.ConsumerGroupDescribeResponse).Groups[0]
	if desc.Epoch != 1 || len(desc.Members) != 1 {
		t.Errorf("ConsumerGroupDescribe after the failed write: epoch %d, %d members, want 1 and A", desc.Epoch, len(desc.Members))
	}
	if cg := offsetsFileOn(t, dir).ConsumerGroups["g"]; cg.Epoch != 1 || len(cg.Members) != 1 {
		t.Errorf("offsets file: epoch %d, %d members, want 1 and A", cg.Epoch, len(cg.Members))
	}

	d.full.Store(false)
	b = c.cgh(cgh{group: "g", member: "B", topics: []string{"t"}, owned: map[[16]byte][]int32{}})
	if b.ErrorCode != 0 || b.MemberEpoch != 2 {
		t.Fatalf("B joins once the disk takes writes: error %v epoch %d, want epoch 2", kerr.ErrorForCode(b.ErrorCode), b.MemberEpoch)
	}
	a = c.cgh(cgh{group: "g", member: "A", epoch: 1, owned: all})
	if a.ErrorCode != 0 || len(assigned(a, names)) != 1 {
		t.Errorf("A after B joined: error %v assignment %v, want one partition to keep", kerr.ErrorForCode(a.ErrorCode), assigned(a, names))
	}
	ts.stop()
	ts = startServerPrepared(t, dir, Config{}, d.prepare)
	c = dial(t, ts.addr)
	desc = c.roundTrip(&kmsg.ConsumerGroupDescribeRequest{Version: 1, Groups: []string{"g"}}).(*kmsg.ConsumerGroupDescribeResponse).Groups[0]
	if desc.Epoch != 2 || len(desc.Members) != 2 {
		t.Errorf("ConsumerGroupDescribe after a restart: epoch %d, %d members, want 2 and both", desc.Epoch, len(desc.Members))
	}
}

// A DeleteGroups whose write fails leaves the group as the file holds
// it, in memory too: an Empty consumer group is still one, at its epoch.
// segfs forgot it in memory though the file kept it: ConsumerGroupDescribe
// and ListGroups no longer knew it, a retried DeleteGroups was answered
// GROUP_ID_NOT_FOUND and deleted nothing, and a restart brought the group
// back from the file.
func TestDeleteGroupsWriteFails(t *testing.T) {
	dir := t.TempDir()
	d, c, describe := emptyConsumerGroup(t, dir, Config{})
	before := describe()
	if before.ErrorCode != 0 || before.State != "Empty" {
		t.Fatalf("before the delete: %+v", before)
	}

	d.full.Store(true)
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{"g"}
	wantCode(t, "DeleteGroups on a full disk", c.roundTrip(dg).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, kerr.NotCoordinator)
	if after := describe(); after.ErrorCode != 0 || after.State != "Empty" || after.Epoch != before.Epoch {
		msg := ""
		if after.ErrorMessage != nil {
			msg = *after.ErrorMessage
		}
		t.Errorf("ConsumerGroupDescribe after the failed delete: %v %q, state %q epoch %d; want Empty at %d", kerr.ErrorForCode(after.ErrorCode), msg, after.State, after.Epoch, before.Epoch)
	}
	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version = 5
	if gs := c.roundTrip(lg).(*kmsg.ListGroupsResponse).Groups; len(gs) != 1 || gs[0].GroupType != "consumer" {
		t.Errorf("ListGroups after the failed delete: %+v, want g, a consumer group", gs)
	}

	d.full.Store(false)
	wantCode(t, "DeleteGroups retried", c.roundTrip(dg).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, nil)
	wantCode(t, "ConsumerGroupDescribe after the delete", describe().ErrorCode, kerr.GroupIDNotFound)
}

// listGroups is ListGroups v5: "group type state" per group.
func listGroups(c *client) []string {
	c.t.Helper()
	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version = 5
	var out []string
	for _, g := range c.roundTrip(lg).(*kmsg.ListGroupsResponse).Groups {
		out = append(out, g.Group+" "+g.GroupType+" "+g.GroupState)
	}
	return out
}

// heldDisk holds the offsets file's next write while hold is set, until
// the test releases it with the write's outcome (nil: written).
type heldDisk struct {
	hold    atomic.Bool
	entered chan struct{}
	release chan error
}

func (d *heldDisk) prepare(s *Server) {
	d.entered, d.release = make(chan struct{}), make(chan error)
	s.offsets.writeFile = func(path string, b []byte) error {
		if d.hold.Swap(false) {
			d.entered <- struct{}{}
			if err := <-d.release; err != nil {
				return err
			}
		}
		return logstore.WriteFileAtomic(path, b)
	}
}

// A classic group whose record cannot be written when it gets its first
// member again: the join is answered NOT_COORDINATOR with no member id,
// and so is every join held since (here C's, which joined while B's
// write was under way); the group is Empty at the generation the file
// holds, as Kafka's coordinator reverts a new group whose record it
// could not write. Once the disk takes writes, B joins the next
// generation. segfs answered both joins, carried on in a generation the
// file did not hold, and its record kept saying Empty.
func TestFirstJoinRecordWriteFails(t *testing.T) {
	dir := t.TempDir()
	d := &heldDisk{}
	ts := startServerPrepared(t, dir, Config{GroupInitialRebalanceDelay: -1}, d.prepare)
	createTopic(t, ts, "t", 1)
	const g = "g"
	a := dial(t, ts.addr)
	ja := a.joinNew(joinSpec{group: g})
	wantCode(t, "A's sync", a.sync(g, 1, ja.MemberID, map[string]string{ja.MemberID: "a"}).ErrorCode, nil)
	wantCode(t, "A's commit", a.groupCommit(g, 1, ja.MemberID, nil), nil)
	lr := a.roundTrip(&kmsg.LeaveGroupRequest{Version: 5, Group: g, Members: []kmsg.LeaveGroupRequestMember{{MemberID: ja.MemberID}}}).(*kmsg.LeaveGroupResponse)
	wantCode(t, "A leaves", lr.ErrorCode, nil)
	empty := offsetsFileOn(t, dir).ClassicGroups[g]
	if empty.EmptySinceMs == 0 || empty.Generation != 2 || len(empty.Members) != 0 {
		t.Fatalf("offsets file once A left: %+v, want Empty at generation 2", empty)
	}

	// B's join (v3: no member id to ask for first) gives the group its
	// first member; its write is held, then fails.
	b, c := dial(t, ts.addr), dial(t, ts.addr)
	d.hold.Store(true)
	heldB := b.start(joinSpec{version: 3, group: g}.request())
	<-d.entered
	heldC := c.start(joinSpec{version: 3, group: g}.request())
	waitStack(t, "handleJoinGroup", "await") // C waits for the rebalance
	d.release <- &os.PathError{Op: "write", Path: "offsets", Err: syscall.ENOSPC}
	for who, p := range map[string]pending{"B": heldB, "C": heldC} {
		r := p.wait().(*kmsg.JoinGroupResponse)
		wantCode(t, who+"'s join while the group's record cannot be written", r.ErrorCode, kerr.NotCoordinator)
		if who == "B" && r.MemberID != "" {
			t.Errorf("B's refused join: member id %q, want none", r.MemberID)
		}
	}
	if desc := describeGroup(t, a, g); desc.State != "Empty" || len(desc.Members) != 0 {
		t.Errorf("DescribeGroups after the failed write: %s with %d members, want Empty", desc.State, len(desc.Members))
	}
	if rec := offsetsFileOn(t, dir).ClassicGroups[g]; rec.EmptySinceMs != empty.EmptySinceMs || rec.Generation != 2 {
		t.Errorf("offsets file after the failed write: %+v, want %+v", rec, empty)
	}

	// The disk takes writes again: B joins generation 3 alone.
	jb := b.joinNew(joinSpec{group: g})
	if jb.ErrorCode != 0 || jb.Generation != 3 || jb.LeaderID != jb.MemberID {
		t.Fatalf("B's join once the disk takes writes: error %v generation %d, want generation 3 led by B", kerr.ErrorForCode(jb.ErrorCode), jb.Generation)
	}
	if rec := offsetsFileOn(t, dir).ClassicGroups[g]; rec.EmptySinceMs != 0 {
		t.Errorf("offsets file once B joined: %+v, want a group with members", rec)
	}
}

// A JoinGroup that creates a group (one known only by its committed
// offsets, whose record is written at the first join) is answered
// NOT_COORDINATOR when the record cannot be written, instead of
// MEMBER_ID_REQUIRED with an id of a group the file does not hold; the
// retry once the disk takes writes goes through.
func TestNewGroupRecordWriteFails(t *testing.T) {
	dir := t.TempDir()
	ts, disk := startFullableServer(t, dir)
	createTopic(t, ts, "t", 1)
	c := dial(t, ts.addr)
	wantCode(t, "simple commit", c.groupCommit("g", -1, "", nil), nil)
	disk.full.Store(true)
	r := c.join(joinSpec{version: 5, group: "g"})
	wantCode(t, "first join while the disk is full", r.ErrorCode, kerr.NotCoordinator)
	if r.MemberID != "" {
		t.Errorf("first join while the disk is full: member id %q, want none", r.MemberID)
	}
	if _, ok := offsetsFileOn(t, dir).ClassicGroups["g"]; ok {
		t.Errorf("offsets file holds a record of g")
	}
	disk.full.Store(false)
	if j := c.joinNew(joinSpec{group: "g"}); j.ErrorCode != 0 || j.Generation != 1 {
		t.Fatalf("join once the disk takes writes: error %v generation %d", kerr.ErrorForCode(j.ErrorCode), j.Generation)
	}
}

// An empty consumer group that a classic JoinGroup converts stays a
// consumer group if the conversion cannot be written: the join is
// answered NOT_COORDINATOR, and ListGroups and ConsumerGroupDescribe go
// on answering for the consumer group the file holds, as Kafka reverts
// the conversion with the failed write. segfs answered the join and
// showed a classic group that a restart turned back into a consumer
// group.
func TestClassicJoinConversionWriteFails(t *testing.T) {
	dir := t.TempDir()
	d, c, describe := emptyConsumerGroup(t, dir, Config{GroupInitialRebalanceDelay: -1})
	before := describe()

	d.full.Store(true)
	r := c.join(joinSpec{version: 5, group: "g"})
	wantCode(t, "classic join converting the group while the disk is full", r.ErrorCode, kerr.NotCoordinator)
	if after := describe(); after.ErrorCode != 0 || after.State != "Empty" || after.Epoch != before.Epoch {
		t.Errorf("ConsumerGroupDescribe after the failed conversion: %v, state %q epoch %d; want Empty at %d", kerr.ErrorForCode(after.ErrorCode), after.State, after.Epoch, before.Epoch)
	}
	if got := listGroups(c); !slices.Equal(got, []string{"g consumer Empty"}) {
		t.Errorf("ListGroups after the failed conversion: %q, want g, an Empty consumer group", got)
	}
	if _, ok := offsetsFileOn(t, dir).ConsumerGroups["g"]; !ok {
		t.Errorf("offsets file lost the consumer group")
	}

	d.full.Store(false)
	if j := c.joinNew(joinSpec{group: "g"}); j.ErrorCode != 0 || j.Generation != 1 {
		t.Fatalf("classic join once the disk takes writes: error %v generation %d", kerr.ErrorForCode(j.ErrorCode), j.Generation)
	}
	if got := listGroups(c); len(got) != 1 || !strings.HasPrefix(got[0], "g classic ") {
		t.Errorf("ListGroups after the conversion: %q, want g, a classic group", got)
	}
	if _, ok := offsetsFileOn(t, dir).ConsumerGroups["g"]; ok {
		t.Errorf("offsets file still holds the consumer group after the conversion")
	}
}

// An empty classic group that a KIP-848 heartbeat converts stays the
// classic group it was, at its generation, if the consumer group's
// record cannot be written (the heartbeat is answered NOT_COORDINATOR),
// as Kafka reverts the conversion with the failed write. segfs forgot
// the classic group: ListGroups no longer listed it and its next member
// started it over at generation 1.
func TestConsumerHeartbeatConversionWriteFails(t *testing.T) {
	d := &diskFull{}
	ts := startServerPrepared(t, t.TempDir(), Config{GroupInitialRebalanceDelay: -1}, d.prepare)
	createTopic(t, ts, "t", 1)
	const g = "g"
	c := dial(t, ts.addr)
	j := c.joinNew(joinSpec{group: g})
	wantCode(t, "sync", c.sync(g, 1, j.MemberID, map[string]string{j.MemberID: "a"}).ErrorCode, nil)
	lr := c.roundTrip(&kmsg.LeaveGroupRequest{Version: 5, Group: g, Members: []kmsg.LeaveGroupRequestMember{{MemberID: j.MemberID}}}).(*kmsg.LeaveGroupResponse)
	wantCode(t, "leave", lr.ErrorCode, nil)

	d.full.Store(true)
	wantCode(t, "KIP-848 join converting the group while the disk is full", c.cgh(cgh{group: g, member: "M", topics: []string{"t"}, owned: map[[16]byte][]int32{}}).ErrorCode, kerr.NotCoordinator)
	if got := listGroups(c); !slices.Equal(got, []string{"g classic Empty"}) {
		t.Errorf("ListGroups after the failed conversion: %q, want g, an Empty classic group", got)
	}
	d.full.Store(false)
	if j := c.joinNew(joinSpec{group: g}); j.ErrorCode != 0 || j.Generation != 3 {
		t.Errorf("classic join after the failed conversion: error %v generation %d, want generation 3 (the group went on from 2)", kerr.ErrorForCode(j.ErrorCode), j.Generation)
	}
}

// A LeaveGroup that leaves a classic group Empty, whose record then
// cannot be written, is answered NOT_COORDINATOR, as Kafka 4 answers it
// with the failed write's error; the member is gone and the group Empty
// all the same, as in Kafka (which only logs the failed write of an
// Empty group), and the file keeps the last generation until the next
// change of the group is written. segfs answered the leave as done.
func TestLeaveGroupEmptyRecordWriteFails(t *testing.T) {
	dir := t.TempDir()
	ts, disk := startFullableServer(t, dir)
	createTopic(t, ts, "t", 1)
	const g = "g"
	c := dial(t, ts.addr)
	j := c.joinNew(joinSpec{group: g})
	wantCode(t, "sync", c.sync(g, 1, j.MemberID, map[string]string{j.MemberID: "a"}).ErrorCode, nil)
	wantCode(t, "commit", c.groupCommit(g, 1, j.MemberID, nil), nil)

	disk.full.Store(true)
	for _, v := range []int16{2, 5} {
		req := &kmsg.LeaveGroupRequest{Version: v, Group: g, MemberID: j.MemberID}
		if v >= 3 {
			req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: j.MemberID}}
		}
		lr := c.roundTrip(req).(*kmsg.LeaveGroupResponse)
		if v == 2 {
			wantCode(t, "LeaveGroup v2 emptying the group while the disk is full", lr.ErrorCode, kerr.NotCoordinator)
			continue
		}
		// Retried: the member is gone, nothing changes, nothing is written.
		wantCode(t, "LeaveGroup v5 retried", lr.ErrorCode, nil)
		if len(lr.Members) != 1 || lr.Members[0].ErrorCode != kerr.UnknownMemberID.Code {
			t.Errorf("LeaveGroup v5 retried: members %+v, want the member unknown", lr.Members)
		}
	}
	if d := describeGroup(t, c, g); d.State != "Empty" || len(d.Members) != 0 {
		t.Errorf("DescribeGroups after the failed write: %s with %d members, want Empty", d.State, len(d.Members))
	}
	if rec := offsetsFileOn(t, dir).ClassicGroups[g]; rec.Generation != 1 || len(rec.Members) != 1 {
		t.Errorf("offsets file after the failed write: %+v, want generation 1 with the member", rec)
	}
	disk.full.Store(false)
	// The next change of the group writes its record.
	wantCode(t, "simple commit", c.groupCommit(g, -1, "", nil), nil)
	if rec := offsetsFileOn(t, dir).ClassicGroups[g]; rec.EmptySinceMs == 0 || len(rec.Members) != 0 || rec.Generation != 2 {
		t.Errorf("offsets file after the next commit: %+v, want Empty at generation 2", rec)
	}
}

// emptyConsumerGroup starts a server on dir whose offsets file can be made
// to fail its writes (d.full), with topic t and a KIP-848 group g whose
// only member joined (t/0 assigned) and left: g is an Empty consumer
// group. describe is g's ConsumerGroupDescribe.
func emptyConsumerGroup(t *testing.T, dir string, cfg Config) (*diskFull, *client, func() kmsg.ConsumerGroupDescribeResponseGroup) {
	t.Helper()
	d := &diskFull{}
	ts := startServerPrepared(t, dir, cfg, d.prepare)
	tp, err := ts.store.CreateTopic("t", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[[16]byte]string{tp.ID(): "t"}
	c := dial(t, ts.addr)
	wantAssigned(t, "A joins", c.cgh(cgh{group: "g", member: "A", topics: []string{"t"}, owned: map[[16]byte][]int32{}}), names, "t/0")
	if r := c.cgh(cgh{group: "g", member: "A", epoch: -1}); r.ErrorCode != 0 {
		t.Fatalf("A leaves: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	return d, c, func() kmsg.ConsumerGroupDescribeResponseGroup {
		return c.roundTrip(&kmsg.ConsumerGroupDescribeRequest{Version: 1, Groups: []string{"g"}}).(*kmsg.ConsumerGroupDescribeResponse).Groups[0]
	}
}
