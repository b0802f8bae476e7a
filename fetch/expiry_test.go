package fetch

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Expiry of committed offsets and groups (expiry.go), on a server whose
// clock the test moves: days pass without waiting, and each check runs
// when the test calls it.

// fakeClock is a settable clock for Server.now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// t0 is where the tests' clocks start.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// expiryServer is a server on dir with retention and a fake clock at
// clk; its own checks (every 10 minutes of real time) never run during
// a test: the test runs them.
type expiryServer struct {
	*testServer
	t   *testing.T
	clk *fakeClock
	c   *client
}

func startExpiry(t *testing.T, dir string, retention time.Duration, clk *fakeClock, topics map[string]int) *expiryServer {
	t.Helper()
	ts := startServerPrepared(t, dir, Config{GroupInitialRebalanceDelay: -1, OffsetsRetention: retention},
		func(s *Server) { s.now = clk.now })
	for name, n := range topics {
		if _, err := ts.store.Topic(name); err != nil {
			createTopic(t, ts, name, n)
		}
	}
	e := &expiryServer{testServer: ts, t: t, clk: clk, c: dial(t, ts.addr)}
	// Serve accepts connections once it has loaded (and, if it had to,
	// rewritten) the offsets file: an answer means it has.
	e.listed()
	return e
}

// at sets the clock to t0+d.
func (e *expiryServer) at(d time.Duration) { e.clk.set(t0.Add(d)) }

// quiesce returns once every change staged so far is written, including
// one a background write has taken from the queue (settle only waits for
// what is queued).
func (e *expiryServer) quiesce() {
	o := e.srv.offsets
	o.settle()
	o.writeMu.Lock()
	o.writeMu.Unlock()
}

// check runs one expiry check and returns how many times it wrote the
// offsets file.
func (e *expiryServer) check() int64 {
	e.t.Helper()
	e.quiesce() // writes of group records staged before, in the background
	before := e.srv.offsets.writes.Load()
	e.srv.groups.expire()
	e.quiesce()
	return e.srv.offsets.writes.Load() - before
}

// checkWrites runs a check that must write the file want times (0 or 1).
func (e *expiryServer) checkWrites(what string, want int64) {
	e.t.Helper()
	if n := e.check(); n != want {
		e.t.Errorf("%s: the check wrote the offsets file %d times, want %d", what, n, want)
	}
}

// commit commits offset 7 of each topic/partition at version v.
func (e *expiryServer) commit(v int16, group string, gen int32, member string, tps map[string][]int32, tweak func(*kmsg.OffsetCommitRequest)) {
	e.t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = v
	req.Group, req.Generation, req.MemberID = group, gen, member
	for _, topic := range slices.Sorted(maps.Keys(tps)) {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		for _, p := range tps[topic] {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, 7
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	if tweak != nil {
		tweak(req)
	}
	for _, rt := range e.c.roundTrip(req).(*kmsg.OffsetCommitResponse).Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				e.t.Fatalf("OffsetCommit v%d %s %s/%d: %v", v, group, rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
		}
	}
}

// joinClassic makes a static member join group with protocol type ptype
// and metadata meta, and syncs: the group is Stable. It returns the
// generation and member id.
func (e *expiryServer) joinClassic(group, instance, ptype string, meta []byte) (int32, string) {
	e.t.Helper()
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 5
	req.Group, req.InstanceID = group, kmsg.StringPtr(instance)
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 300000, 60000
	req.ProtocolType = ptype
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", meta
	req.Protocols = append(req.Protocols, p)
	j := e.c.roundTrip(req).(*kmsg.JoinGroupResponse)
	if j.ErrorCode != 0 {
		e.t.Fatalf("join %s: %v", group, kerr.ErrorForCode(j.ErrorCode))
	}
	if s := e.c.sync(group, j.Generation, j.MemberID, map[string]string{j.MemberID: "x"}); s.ErrorCode != 0 {
		e.t.Fatalf("sync %s: %v", group, kerr.ErrorForCode(s.ErrorCode))
	}
	return j.Generation, j.MemberID
}

// leaveClassic makes the static member leave group.
func (e *expiryServer) leaveClassic(group, instance, member string) {
	e.t.Helper()
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = 3
	req.Group = group
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID, m.InstanceID = member, kmsg.StringPtr(instance)
	req.Members = append(req.Members, m)
	r := e.c.roundTrip(req).(*kmsg.LeaveGroupResponse)
	if r.ErrorCode != 0 || r.Members[0].ErrorCode != 0 {
		e.t.Fatalf("leave %s: %v / %v", group, kerr.ErrorForCode(r.ErrorCode), kerr.ErrorForCode(r.Members[0].ErrorCode))
	}
}

// listed is ListGroups: "name state" of each group.
func (e *expiryServer) listed() []string {
	e.t.Helper()
	req := kmsg.NewPtrListGroupsRequest()
	req.Version = 5
	var out []string
	for _, g := range e.c.roundTrip(req).(*kmsg.ListGroupsResponse).Groups {
		out = append(out, g.Group+" "+g.GroupState)
	}
	return out
}

// wantListed fails unless ListGroups shows exactly want ("name state").
func (e *expiryServer) wantListed(what string, want ...string) {
	e.t.Helper()
	if got := e.listed(); !slices.Equal(got, want) {
		e.t.Errorf("%s: ListGroups %q, want %q", what, got, want)
	}
}

// offsets is what OffsetFetch answers for group: "topic/partition" of
// each committed offset among tps.
func (e *expiryServer) offsets(group string, tps map[string][]int32) []string {
	e.t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 7
	req.Group = group
	for _, topic := range slices.Sorted(maps.Keys(tps)) {
		req.Topics = append(req.Topics, kmsg.OffsetFetchRequestTopic{Topic: topic, Partitions: tps[topic]})
	}
	var out []string
	for _, rt := range e.c.roundTrip(req).(*kmsg.OffsetFetchResponse).Topics {
		for _, rp := range rt.Partitions {
			if rp.Offset >= 0 {
				out = append(out, rt.Topic+"/"+string(rune('0'+rp.Partition)))
			}
		}
	}
	return out
}

func (e *expiryServer) wantOffsets(what, group string, tps map[string][]int32, want ...string) {
	e.t.Helper()
	if got := e.offsets(group, tps); !slices.Equal(got, want) {
		e.t.Errorf("%s: %s has offsets %q, want %q", what, group, got, want)
	}
}

// file reads the offsets file.
func (e *expiryServer) file() offsetsFileData {
	e.t.Helper()
	e.quiesce() // a group record written in the background
	return readOffsetsFile(e.t, e.dir)
}

func readOffsetsFile(t *testing.T, dir string) offsetsFileData {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, OffsetsFile))
	if err != nil {
		t.Fatal(err)
	}
	var d offsetsFileData
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%v:\n%s", err, b)
	}
	return d
}

// An Empty classic group's offsets expire a retention after the later of
// their commit and the moment the group became Empty; then the group is
// deleted, from ListGroups, DescribeGroups and the offsets file. A check
// that expires nothing writes nothing, one that expires several things
// writes once. Before, offsets and groups were kept forever.
func TestOffsetsExpireEmptyClassicGroup(t *testing.T) {
	const R = time.Hour
	e := startExpiry(t, t.TempDir(), R, &fakeClock{t: t0}, map[string]int{"a": 2, "b": 1})
	all := map[string][]int32{"a": {0, 1}, "b": {0}}

	gen, member := e.joinClassic("g", "i", "consumer", consumerMeta("a", "b"))
	e.commit(7, "g", gen, member, map[string][]int32{"a": {0}, "b": {0}}, nil) // at t0
	e.at(30 * time.Minute)
	e.leaveClassic("g", "i", member) // Empty at t0+30m
	if rec, ok := e.file().ClassicGroups["g"]; !ok || rec.EmptySinceMs != t0.Add(30*time.Minute).UnixMilli() {
		t.Errorf("the offsets file records g as %+v (%v), want Empty since t0+30m", rec, ok)
	}
	// A commit into the Empty group (an offset reset) counts from itself.
	e.at(40 * time.Minute)
	e.commit(7, "g", -1, "", map[string][]int32{"a": {1}}, nil)

	// The commits are a retention old, but the group became Empty later.
	e.at(90*time.Minute - time.Millisecond)
	e.checkWrites("a retention after the commits, before one after the group emptied", 0)
	e.wantOffsets("before the retention since the group emptied", "g", all, "a/0", "a/1", "b/0")

	e.at(90 * time.Minute)
	e.checkWrites("a retention after the group emptied", 1)
	e.wantOffsets("a retention after the group emptied", "g", all, "a/1")
	e.wantListed("with an offset left", "g Empty")

	e.at(100 * time.Minute)
	e.checkWrites("a retention after the last commit", 1)
	e.wantOffsets("a retention after the last commit", "g", all)
	e.wantListed("with no offset left")
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"g"}
	if d := e.c.roundTrip(dg).(*kmsg.DescribeGroupsResponse).Groups[0]; d.State != "Dead" {
		t.Errorf("DescribeGroups g after it expired: state %q, want Dead", d.State)
	}
	d := e.file()
	if len(d.Groups) != 0 || len(d.ClassicGroups) != 0 {
		t.Errorf("the offsets file still has offsets %v, classic groups %v", d.Groups, d.ClassicGroups)
	}
	e.checkWrites("with nothing left", 0)

	// A member joining again starts a new group at generation 1.
	if gen, _ := e.joinClassic("g", "i", "consumer", consumerMeta("a")); gen != 1 {
		t.Errorf("a new member of the deleted group g: generation %d, want 1", gen)
	}
}

// A classic group with members keeps the offsets of the topics they
// subscribe to; if it is a Stable "consumer" group whose subscriptions
// parse, the others expire a retention after their commit. Any other
// group with members (another protocol type, metadata that does not
// parse, a rebalance under way) keeps everything.
func TestOffsetsExpireClassicGroupWithMembers(t *testing.T) {
	const R = time.Hour
	e := startExpiry(t, t.TempDir(), R, &fakeClock{t: t0}, map[string]int{"a": 1, "b": 1})
	ab := map[string][]int32{"a": {0}, "b": {0}}
	for _, g := range []struct{ name, ptype string }{{"sub", "consumer"}, {"connect", "connect"}, {"opaque", "consumer"}} {
		meta := consumerMeta("a")
		if g.name == "opaque" {
			meta = []byte("not consumer metadata")
		}
		gen, member := e.joinClassic(g.name, "i", g.ptype, meta)
		e.commit(7, g.name, gen, member, ab, nil)
	}
	e.at(R)
	e.checkWrites("a retention after the commits", 1)
	e.wantOffsets("Stable consumer group subscribed to a", "sub", ab, "a/0")
	e.wantOffsets("connect group", "connect", ab, "a/0", "b/0")
	e.wantOffsets("group whose subscriptions do not parse", "opaque", ab, "a/0", "b/0")
	e.wantListed("groups with members", "connect Stable", "opaque Stable", "sub Stable")

	e.at(100 * R)
	e.checkWrites("long after, with the members still in", 0)
	e.wantOffsets("long after: subscribed", "sub", ab, "a/0")
}

// Commits without membership expire a retention after the commit; an
// OffsetCommit v2-v4 retention time sets the expiry instead, shorter or
// longer than the broker's, and a v1 commit timestamp is the time they
// count from. One check expiring offsets of several groups writes once.
func TestOffsetsExpireSimpleAndExplicit(t *testing.T) {
	const R = time.Hour
	e := startExpiry(t, t.TempDir(), R, &fakeClock{t: t0}, map[string]int{"a": 2})
	a := map[string][]int32{"a": {0, 1}}
	e.commit(7, "simple", -1, "", a, nil)
	e.commit(2, "short", -1, "", a, func(r *kmsg.OffsetCommitRequest) { r.RetentionTimeMillis = time.Minute.Milliseconds() })
	e.commit(4, "long", -1, "", a, func(r *kmsg.OffsetCommitRequest) { r.RetentionTimeMillis = (3 * R).Milliseconds() })
	e.commit(3, "default", -1, "", a, func(r *kmsg.OffsetCommitRequest) { r.RetentionTimeMillis = -1 })
	e.commit(1, "v1", -1, "", a, func(r *kmsg.OffsetCommitRequest) {
		r.Topics[0].Partitions[0].Timestamp = t0.Add(2*time.Minute - R).UnixMilli()
	})
	e.commit(7, "simple2", -1, "", a, nil)
	e.wantListed("after the commits", "default Empty", "long Empty", "short Empty", "simple Empty", "simple2 Empty", "v1 Empty")

	e.at(time.Minute - time.Millisecond)
	e.checkWrites("before the explicit expiry", 0)
	e.at(time.Minute)
	e.checkWrites("at the explicit expiry", 1)
	e.wantListed("at the explicit expiry", "default Empty", "long Empty", "simple Empty", "simple2 Empty", "v1 Empty")
	e.at(2 * time.Minute)
	e.checkWrites("a retention after the v1 timestamp", 1)
	// v1's timestamp went with partition 0 only.
	e.wantOffsets("a retention after the v1 timestamp", "v1", a, "a/1")
	e.at(R)
	e.checkWrites("a retention after the commits", 1)
	e.wantListed("a retention after the commits", "long Empty")
	e.at(3*R - time.Millisecond)
	e.checkWrites("before the long explicit expiry", 0)
	e.at(3 * R)
	e.checkWrites("at the long explicit expiry", 1)
	e.wantListed("at the long explicit expiry")
	if d := e.file(); len(d.Groups) != 0 {
		t.Errorf("the offsets file still has %v", d.Groups)
	}
}

// A KIP-848 consumer group: with members, the offsets of topics none of
// them subscribes to expire a retention after their commit; Empty, all
// do, the Empty time playing no part (Kafka's ConsumerGroup rule), and
// the group is deleted with its record. Groups that never committed
// (consumer or classic) are deleted at the first check once Empty.
func TestOffsetsExpireConsumerGroup(t *testing.T) {
	const R = time.Hour
	e := startExpiry(t, t.TempDir(), R, &fakeClock{t: t0}, map[string]int{"a": 1, "b": 1})
	ab := map[string][]int32{"a": {0}, "b": {0}}
	m := e.c.cgh(cgh{group: "cg", member: "A", topics: []string{"a"}, owned: map[[16]byte][]int32{}})
	if m.ErrorCode != 0 {
		t.Fatalf("join cg: %v", kerr.ErrorForCode(m.ErrorCode))
	}
	e.commit(9, "cg", m.MemberEpoch, "A", ab, nil)
	idle := e.c.cgh(cgh{group: "idle", member: "B", topics: []string{"a"}, owned: map[[16]byte][]int32{}})
	if idle.ErrorCode != 0 {
		t.Fatalf("join idle: %v", kerr.ErrorForCode(idle.ErrorCode))
	}
	_, never := e.joinClassic("never", "i", "consumer", consumerMeta("a"))
	e.wantListed("with members", "cg Stable", "idle Stable", "never Stable")
	e.checkWrites("with members and fresh offsets", 0)

	e.at(R)
	e.checkWrites("a retention after the commit", 1)
	e.wantOffsets("with a member subscribed to a", "cg", ab, "a/0")

	for _, l := range []struct{ group, member string }{{"cg", "A"}, {"idle", "B"}} {
		if r := e.c.cgh(cgh{group: l.group, member: l.member, epoch: leaveGroupEpoch}); r.ErrorCode != 0 {
			t.Fatalf("leave %s: %v", l.group, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	e.leaveClassic("never", "i", never)
	e.wantListed("Empty", "cg Empty", "idle Empty", "never Empty")
	// Nothing more waits for a retention: the Empty groups go at once.
	e.checkWrites("Empty", 1)
	e.wantListed("after the check")
	e.wantOffsets("after the check", "cg", ab)
	cd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cd.Groups = []string{"cg", "idle"}
	for _, g := range e.c.roundTrip(cd).(*kmsg.ConsumerGroupDescribeResponse).Groups {
		if g.ErrorCode != kerr.GroupIDNotFound.Code {
			t.Errorf("ConsumerGroupDescribe %s after it expired: error %v, want GROUP_ID_NOT_FOUND", g.Group, kerr.ErrorForCode(g.ErrorCode))
		}
	}
	if d := e.file(); len(d.Groups) != 0 || len(d.ConsumerGroups) != 0 || len(d.ClassicGroups) != 0 {
		t.Errorf("the offsets file still has offsets %v, consumer groups %v, classic groups %v", d.Groups, d.ConsumerGroups, d.ClassicGroups)
	}
	// A member joins cg anew: a new group, at epoch 1.
	if r := e.c.cgh(cgh{group: "cg", member: "C", topics: []string{"a"}, owned: map[[16]byte][]int32{}}); r.ErrorCode != 0 || r.MemberEpoch != 1 {
		t.Errorf("a member joining the deleted group cg: error %v, epoch %d, want epoch 1", kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch)
	}
}

// The clocks survive restarts: the commit times and the time a classic
// group became Empty are in the offsets file, so a restart does not put
// an expiry off. A classic group recorded as having members but without
// them (as an older segfs wrote every group with members, and segfs one
// that had not completed a generation) is Empty from the load, which is
// written once,
// so a second restart (or a join that only gets a member id) does not
// move it again; an offset from a file without a commit time gets the
// load time, written likewise.
func TestOffsetsExpiryAcrossRestarts(t *testing.T) {
	const R = time.Hour
	dir := t.TempDir()
	clk := &fakeClock{t: t0}
	topics := map[string]int{"a": 1}
	a := map[string][]int32{"a": {0}}
	e := startExpiry(t, dir, R, clk, topics)
	gen, left := e.joinClassic("left", "i", "consumer", consumerMeta("a"))
	e.commit(7, "left", gen, left, a, nil)
	gen, held := e.joinClassic("held", "i", "consumer", consumerMeta("a"))
	e.commit(7, "held", gen, held, a, nil)
	e.at(10 * time.Minute)
	e.leaveClassic("left", "i", left) // Empty at t0+10m
	e.at(20 * time.Minute)
	e.stop() // held still has its member

	// A group from a file without commit times, and held's record as
	// an older segfs wrote it: members, but not which.
	d := readOffsetsFile(t, dir)
	if len(d.ClassicGroups["held"].Members) != 1 {
		t.Fatalf("held's record %+v, want its member", d.ClassicGroups["held"])
	}
	d.ClassicGroups["held"] = classicGroupMeta{}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	legacy := `"legacy":{"a":{"0":{"offset":3,"leader_epoch":-1,"metadata":""}}},`
	s := strings.Replace(string(b), `"groups":{`, `"groups":{`+legacy, 1)
	if err := os.WriteFile(filepath.Join(dir, OffsetsFile), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}

	load := 30 * time.Minute
	e.at(load)
	e = startExpiry(t, dir, R, clk, topics)
	e.quiesce()
	if n := e.srv.offsets.writes.Load(); n != 1 {
		t.Errorf("the load wrote the offsets file %d times, want once (the times it gave)", n)
	}
	d = e.file()
	ms := func(d time.Duration) int64 { return t0.Add(d).UnixMilli() }
	if got := d.ClassicGroups["left"].EmptySinceMs; got != ms(10*time.Minute) {
		t.Errorf("after the restart left is Empty since %d, want t0+10m (%d)", got, ms(10*time.Minute))
	}
	if got := d.ClassicGroups["held"].EmptySinceMs; got != ms(load) {
		t.Errorf("after the restart held is Empty since %d, want the load at t0+30m (%d)", got, ms(load))
	}
	if got := d.Groups["legacy"]["a"][0].CommitTimeMs; got != ms(load) {
		t.Errorf("after the restart the legacy offset's commit time is %d, want the load at t0+30m (%d)", got, ms(load))
	}
	if got := d.Groups["left"]["a"][0].CommitTimeMs; got != ms(0) {
		t.Errorf("after the restart left's commit time is %d, want t0 (%d)", got, ms(0))
	}

	// A join that only gets a member id brings held into memory, still
	// Empty since the load.
	e.at(load + time.Minute)
	if j := e.c.join(joinSpec{version: 5, group: "held"}); j.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("join held: %v, want MEMBER_ID_REQUIRED", kerr.ErrorForCode(j.ErrorCode))
	}

	e.at(10*time.Minute + R - time.Millisecond)
	e.checkWrites("before a retention after left emptied", 0)
	e.at(10*time.Minute + R)
	e.checkWrites("a retention after left emptied, before the restarts", 1)
	e.wantListed("a retention after left emptied", "held Empty", "legacy Empty")

	// Another restart: the load times stay what the first load wrote.
	e.stop()
	e.at(load + R/2)
	e = startExpiry(t, dir, R, clk, topics)
	e.quiesce()
	if n := e.srv.offsets.writes.Load(); n != 0 {
		t.Errorf("the second load wrote the offsets file %d times, want none", n)
	}
	e.at(load + R - time.Millisecond)
	e.checkWrites("before a retention after the first load", 0)
	e.at(load + R)
	e.checkWrites("a retention after the first load", 1)
	e.wantListed("a retention after the first load")
	if d := e.file(); len(d.Groups) != 0 || len(d.ClassicGroups) != 0 {
		t.Errorf("the offsets file still has offsets %v, classic groups %v", d.Groups, d.ClassicGroups)
	}
}
