package fetch

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// twoMemberGroup forms generation 2 of group g with a dynamic member B
// (the leader) and a static member A (instance "ia", session sessionA
// ms), and hands out the assignments "b" and "a". It returns B's and
// A's member ids.
func twoMemberGroup(t *testing.T, ts *testServer, g string, sessionA int32) (string, string) {
	t.Helper()
	a, b := dial(t, ts.addr), dial(t, ts.addr)
	jb := b.joinNew(joinSpec{group: g})
	wantCode(t, "B's sync of generation 1", b.sync(g, 1, jb.MemberID, map[string]string{jb.MemberID: "b"}).ErrorCode, nil)
	held := a.start(joinSpec{version: 5, group: g, instance: kmsg.StringPtr("ia"), session: sessionA}.request())
	b.heartbeatUntilRebalance(g, 1, jb.MemberID)
	jb = b.join(joinSpec{version: 5, group: g, member: jb.MemberID})
	ja := held.wait().(*kmsg.JoinGroupResponse)
	if jb.Generation != 2 || ja.Generation != 2 || jb.LeaderID != jb.MemberID || len(jb.Members) != 2 {
		t.Fatalf("generation 2: A %+v, B %+v", ja, jb)
	}
	heldSync := a.start(syncReq(g, 2, ja.MemberID, nil))
	if r := b.sync(g, 2, jb.MemberID, map[string]string{jb.MemberID: "b", ja.MemberID: "a"}); r.ErrorCode != 0 || string(r.MemberAssignment) != "b" {
		t.Fatalf("B's sync of generation 2: %+v", r)
	}
	if r := heldSync.wait().(*kmsg.SyncGroupResponse); r.ErrorCode != 0 || string(r.MemberAssignment) != "a" {
		t.Fatalf("A's sync of generation 2: %+v", r)
	}
	return jb.MemberID, ja.MemberID
}

// describeGroup is DescribeGroups of one group.
func describeGroup(t *testing.T, c *client, g string) kmsg.DescribeGroupsResponseGroup {
	t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version, req.Groups = 5, []string{g}
	return c.roundTrip(req).(*kmsg.DescribeGroupsResponse).Groups[0]
}

// A classic group comes back from a restart as Kafka's coordinator loads
// it from its GroupMetadata record: Stable at the generation whose
// assignments were handed out, with its members (a static and a dynamic
// one), their protocols and assignments, so their heartbeats and
// commits in that generation are accepted and a follower rejoining
// unchanged gets the current generation, with no rebalance. segfs kept
// membership in memory only: every member got UNKNOWN_MEMBER_ID and
// rejoined.
func TestGroupMembersSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{GroupInitialRebalanceDelay: -1}
	ts := startServerDir(t, dir, cfg)
	createTopic(t, ts, "t", 1)
	const g = "g"
	ia := kmsg.StringPtr("ia")
	bID, aID := twoMemberGroup(t, ts, g, 0)
	ts.stop()

	ts = startServerDir(t, dir, cfg)
	c := dial(t, ts.addr)
	d := describeGroup(t, c, g)
	if d.ErrorCode != 0 || d.State != "Stable" || d.Protocol != "range" || len(d.Members) != 2 {
		t.Fatalf("DescribeGroups after the restart: %+v", d)
	}
	// Join order: B, then A.
	if m := d.Members[0]; m.MemberID != bID || string(m.MemberAssignment) != "b" || string(m.ProtocolMetadata) != "meta-range" || m.ClientID != "test" {
		t.Errorf("B after the restart: %+v", m)
	}
	if m := d.Members[1]; m.MemberID != aID || m.InstanceID == nil || *m.InstanceID != "ia" || string(m.MemberAssignment) != "a" {
		t.Errorf("A after the restart: %+v", m)
	}
	wantCode(t, "B's heartbeat after the restart", c.heartbeat(g, 2, bID, nil), nil)
	wantCode(t, "A's heartbeat after the restart", c.heartbeat(g, 2, aID, ia), nil)
	wantCode(t, "B's commit after the restart", c.groupCommit(g, 2, bID, nil), nil)
	wantCode(t, "A's commit after the restart", c.groupCommit(g, 2, aID, ia), nil)
	wantCode(t, "a stale generation after the restart", c.heartbeat(g, 1, bID, nil), kerr.IllegalGeneration)
	if j := c.join(joinSpec{version: 5, group: g, member: aID, instance: ia}); j.ErrorCode != 0 || j.Generation != 2 || j.MemberID != aID {
		t.Errorf("A's unchanged rejoin after the restart: %+v, want generation 2 at once", j)
	}
	if r := c.sync(g, 2, aID, nil); r.ErrorCode != 0 || string(r.MemberAssignment) != "a" {
		t.Errorf("A's SyncGroup after the restart: %+v", r)
	}
	// The static member restarts too: it replaces its member id without
	// a rebalance, and the new id is what the next restart finds.
	j := c.join(joinSpec{version: 5, group: g, instance: ia})
	if j.ErrorCode != 0 || j.Generation != 2 || j.MemberID == aID {
		t.Fatalf("A's static rejoin after the restart: %+v", j)
	}
	newA := j.MemberID
	ts.stop()

	ts = startServerDir(t, dir, cfg)
	c = dial(t, ts.addr)
	wantCode(t, "A's new member id after a second restart", c.heartbeat(g, 2, newA, ia), nil)
	wantCode(t, "A's old member id after a second restart", c.heartbeat(g, 2, aID, ia), kerr.FencedInstanceID)
	wantCode(t, "B after a second restart", c.heartbeat(g, 2, bID, nil), nil)
}

// A member that does not come back after a restart is removed when its
// session, started at the load, times out, and the others rebalance
// without it. A group that was rebalancing when the server stopped comes
// back at the last generation whose assignments were handed out, as in
// Kafka (which stores a group only at the end of a rebalance).
func TestGroupRestartMidRebalanceAndLostMember(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{GroupInitialRebalanceDelay: -1}
	prepare := func(s *Server) { s.groups.minSession = time.Millisecond }
	ts := startServerPrepared(t, dir, cfg, prepare)
	createTopic(t, ts, "t", 1)
	const g = "g"
	// A's session is long enough for the setup (in-process requests of
	// a few milliseconds, and a restart), short enough to wait out.
	bID, aID := twoMemberGroup(t, ts, g, 1500)

	// B rejoins with new metadata: the rebalance waits for A, and the
	// server stops meanwhile.
	b := dial(t, ts.addr)
	held := b.start(joinSpec{version: 5, group: g, member: bID, metadataSuffix: "-v2"}.request())
	waitFor(t, func() bool {
		ts.srv.groups.mu.Lock()
		defer ts.srv.groups.mu.Unlock()
		return ts.srv.groups.byName[g].state == groupPreparingRebalance
	})
	ts.stop()
	held.c.readFrame() // NOT_COORDINATOR, or the connection closed

	ts = startServerPrepared(t, dir, cfg, prepare)
	c := dial(t, ts.addr)
	d := describeGroup(t, c, g)
	if d.State != "Stable" || len(d.Members) != 2 || string(d.Members[0].ProtocolMetadata) != "meta-range" {
		t.Fatalf("DescribeGroups after a restart mid-rebalance: %+v, want generation 2 as it was stored", d)
	}
	wantCode(t, "B's heartbeat in generation 2", c.heartbeat(g, 2, bID, nil), nil)

	// A never comes back: B keeps heartbeating until the rebalance that
	// A's session timeout starts, and rejoins alone.
	c.heartbeatUntilRebalance(g, 2, bID)
	j := c.join(joinSpec{version: 5, group: g, member: bID})
	if j.ErrorCode != 0 || j.Generation != 3 || j.LeaderID != bID || len(j.Members) != 1 {
		t.Fatalf("B's rejoin after A's session expired: %+v", j)
	}
	wantCode(t, "A's heartbeat after its session expired", c.heartbeat(g, 2, aID, kmsg.StringPtr("ia")), kerr.UnknownMemberID)
}
