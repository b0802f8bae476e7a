package fetch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Protocol tests of KIP-848 consumer groups: ConsumerGroupHeartbeat's
// state machine and errors, and the group APIs' answers for such groups.

// cgh is one ConsumerGroupHeartbeat, v1 unless v0 is set.
type cgh struct {
	v0       bool
	group    string
	member   string
	epoch    int32
	instance *string
	topics   []string // nil: not sent
	regex    *string
	assignor *string
	owned    map[[16]byte][]int32 // nil: not sent
	full     bool                 // send rebalance timeout and topics as on a join
	rack     *string
	// rebalance, when not 0, is the rebalance timeout sent instead of
	// 60000 on a join (or -1 otherwise).
	rebalance int32
}

func (c *client) cgh(h cgh) *kmsg.ConsumerGroupHeartbeatResponse {
	c.t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	if h.v0 {
		req.Version = 0
	}
	req.Group, req.MemberID, req.MemberEpoch, req.InstanceID = h.group, h.member, h.epoch, h.instance
	req.RebalanceTimeoutMillis = -1
	if h.epoch == 0 || h.full {
		req.RebalanceTimeoutMillis = 60000
	}
	if h.rebalance != 0 {
		req.RebalanceTimeoutMillis = h.rebalance
	}
	req.RackID = h.rack
	req.SubscribedTopicNames, req.SubscribedTopicRegex, req.ServerAssignor = h.topics, h.regex, h.assignor
	if h.owned != nil {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for id, ps := range h.owned {
			t := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			t.TopicID, t.Partitions = id, ps
			req.Topics = append(req.Topics, t)
		}
	}
	return c.roundTrip(req).(*kmsg.ConsumerGroupHeartbeatResponse)
}

// assigned flattens a heartbeat's assignment to "topicIndex/partition"
// strings, sorted; nil when the response carries none.
func assigned(resp *kmsg.ConsumerGroupHeartbeatResponse, ids map[[16]byte]string) []string {
	if resp.Assignment == nil {
		return nil
	}
	out := []string{}
	for _, t := range resp.Assignment.Topics {
		for _, p := range t.Partitions {
			out = append(out, fmt.Sprintf("%s/%d", ids[t.TopicID], p))
		}
	}
	slices.Sort(out)
	return out
}

// owned turns an assignment back into the owned partitions of a request.
func ownedOf(resp *kmsg.ConsumerGroupHeartbeatResponse) map[[16]byte][]int32 {
	out := map[[16]byte][]int32{}
	if resp.Assignment != nil {
		for _, t := range resp.Assignment.Topics {
			out[t.TopicID] = slices.Clone(t.Partitions)
		}
	}
	return out
}

func newCGServer(t *testing.T, cfg Config, topics map[string]int) (*testServer, *client, map[string][16]byte, map[[16]byte]string) {
	t.Helper()
	ts := startServer(t, cfg)
	ids, names := map[string][16]byte{}, map[[16]byte]string{}
	for name, n := range topics {
		tp, err := ts.store.CreateTopic(name, n, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids[name], names[tp.ID()] = tp.ID(), name
	}
	return ts, dial(t, ts.addr), ids, names
}

func wantAssigned(t *testing.T, what string, resp *kmsg.ConsumerGroupHeartbeatResponse, names map[[16]byte]string, want ...string) {
	t.Helper()
	if resp.ErrorCode != 0 {
		t.Fatalf("%s: error %s", what, kerr.ErrorForCode(resp.ErrorCode))
	}
	got := assigned(resp, names)
	if want == nil {
		want = []string{}
	}
	if got == nil || !slices.Equal(got, want) {
		t.Fatalf("%s: assignment %v, want %v", what, got, want)
	}
}

// The state machine of KIP-848 with two members: the first gets every
// partition; when the second joins, the first must revoke half before the
// second gets them (never both at once), and the epochs move as Kafka's
// do. Before, ConsumerGroupHeartbeat was not served (the connection was
// closed).
func TestConsumerGroupRevokeBeforeAssign(t *testing.T) {
	_, c, ids, names := newCGServer(t, Config{}, map[string]int{"t": 4})
	id := ids["t"]

	a := c.cgh(cgh{group: "g", member: "A", topics: []string{"t"}, owned: map[[16]byte][]int32{}})
	wantAssigned(t, "A joins", a, names, "t/0", "t/1", "t/2", "t/3")
	if a.MemberEpoch != 1 || a.MemberID == nil || *a.MemberID != "A" || a.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("A joins: member %v epoch %d interval %d, want A 1 5000", a.MemberID, a.MemberEpoch, a.HeartbeatIntervalMillis)
	}
	// A keepalive (nothing but group, id and epoch) changes nothing and
	// carries no assignment.
	if r := c.cgh(cgh{group: "g", member: "A", epoch: 1}); r.ErrorCode != 0 || r.MemberEpoch != 1 || r.Assignment != nil {
		t.Fatalf("keepalive: %+v", r)
	}

	b := c.cgh(cgh{group: "g", member: "B", topics: []string{"t"}, owned: map[[16]byte][]int32{}})
	wantAssigned(t, "B joins while A holds everything", b, names)
	if b.MemberEpoch != 2 {
		t.Fatalf("B joins: epoch %d, want the new group epoch 2", b.MemberEpoch)
	}

	all := map[[16]byte][]int32{id: {0, 1, 2, 3}}
	a = c.cgh(cgh{group: "g", member: "A", epoch: 1, owned: all})
	wantAssigned(t, "A asked to revoke", a, names, "t/0", "t/1")
	if a.MemberEpoch != 1 {
		t.Fatalf("A revoking: epoch %d, want 1 (it keeps its epoch until it revoked)", a.MemberEpoch)
	}
	// A still owns everything: B gets nothing.
	a = c.cgh(cgh{group: "g", member: "A", epoch: 1, owned: all})
	if a.MemberEpoch != 1 || a.Assignment != nil {
		t.Fatalf("A still owning: epoch %d assignment %v, want 1 and none", a.MemberEpoch, a.Assignment)
	}
	b = c.cgh(cgh{group: "g", member: "B", epoch: 2, owned: map[[16]byte][]int32{}})
	if b.ErrorCode != 0 || b.Assignment != nil && len(b.Assignment.Topics) > 0 {
		t.Fatalf("B before A revoked: got %v (error %d); a partition went to two members", assigned(b, names), b.ErrorCode)
	}
	// A revokes: it moves to epoch 2, and B then gets the rest.
	a = c.cgh(cgh{group: "g", member: "A", epoch: 1, owned: map[[16]byte][]int32{id: {0, 1}}})
	if a.ErrorCode != 0 || a.MemberEpoch != 2 {
		t.Fatalf("A after revoking: epoch %d error %d, want 2", a.MemberEpoch, a.ErrorCode)
	}
	b = c.cgh(cgh{group: "g", member: "B", epoch: 2, owned: map[[16]byte][]int32{}})
	wantAssigned(t, "B after A revoked", b, names, "t/2", "t/3")

	// ConsumerGroupDescribe: Stable, epochs 2, both members at 2.
	d := c.roundTrip(&kmsg.ConsumerGroupDescribeRequest{Version: 1, Groups: []string{"g", "nope"}}).(*kmsg.ConsumerGroupDescribeResponse)
	if len(d.Groups) != 2 {
		t.Fatalf("describe: %d groups", len(d.Groups))
	}
	g := d.Groups[0]
	if g.ErrorCode != 0 || g.State != "Stable" || g.Epoch != 2 || g.AssignmentEpoch != 2 || g.AssignorName != "uniform" || len(g.Members) != 2 {
		t.Fatalf("describe g: %+v", g)
	}
	for _, m := range g.Members {
		if m.MemberEpoch != 2 || m.MemberType != 1 || len(m.Assignment.TopicPartitions) != 1 || m.Assignment.TopicPartitions[0].Topic != "t" || len(m.Assignment.TopicPartitions[0].Partitions) != 2 {
			t.Fatalf("describe member: %+v", m)
		}
	}
	wantCode(t, "describe unknown group", d.Groups[1].ErrorCode, kerr.GroupIDNotFound)

	// A member that leaves hands its partitions over.
	if r := c.cgh(cgh{group: "g", member: "A", epoch: -1}); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("A leaves: %+v", r)
	}
	b = c.cgh(cgh{group: "g", member: "B", epoch: 2, owned: map[[16]byte][]int32{id: {2, 3}}})
	wantAssigned(t, "B after A left", b, names, "t/0", "t/1", "t/2", "t/3")
	if b.MemberEpoch != 3 {
		t.Fatalf("B after A left: epoch %d, want 3", b.MemberEpoch)
	}
}

// A member asked to revoke partitions that still owns them when its
// rebalance timeout (sent on its join) runs out is fenced, as Kafka's
// coordinator fences it (the consumer group rebalance timeout): the
// partitions it held go to the member waiting for them, the group moves
// to a new epoch, and the fenced member's next heartbeat is
// UNKNOWN_MEMBER_ID. The timer was armed but no test let it fire: a
// member that stopped revoking (a stuck poll loop) would have held its
// partitions from the others for as long as it heartbeated.
func TestConsumerGroupRevocationTimeout(t *testing.T) {
	_, c, ids, names := newCGServer(t, Config{}, map[string]int{"t": 4})
	all := map[[16]byte][]int32{ids["t"]: {0, 1, 2, 3}}

	a := c.cgh(cgh{group: "g", member: "A", topics: []string{"t"}, owned: map[[16]byte][]int32{}, rebalance: 300})
	wantAssigned(t, "A joins", a, names, "t/0", "t/1", "t/2", "t/3")
	b := c.cgh(cgh{group: "g", member: "B", topics: []string{"t"}, owned: map[[16]byte][]int32{}})
	wantAssigned(t, "B joins while A holds everything", b, names)
	a = c.cgh(cgh{group: "g", member: "A", epoch: 1, owned: all})
	wantAssigned(t, "A asked to revoke", a, names, "t/0", "t/1")

	// A never revokes. B heartbeats (as a client does, every few hundred
	// milliseconds) until it holds all four partitions.
	deadline := time.Now().Add(30 * time.Second)
	for {
		b = c.cgh(cgh{group: "g", member: "B", epoch: b.MemberEpoch, owned: ownedOf(b)})
		if b.ErrorCode != 0 {
			t.Fatalf("B waiting: %s", kerr.ErrorForCode(b.ErrorCode))
		}
		if got := assigned(b, names); len(got) == 4 {
			wantAssigned(t, "B after A was fenced", b, names, "t/0", "t/1", "t/2", "t/3")
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("A did not revoke within its 300 ms rebalance timeout and was not fenced in 30 s: B holds %v", assigned(b, names))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if b.MemberEpoch != 3 {
		t.Fatalf("B after A was fenced: epoch %d, want 3 (A's fencing is a new group epoch)", b.MemberEpoch)
	}
	wantCode(t, "A's heartbeat after it was fenced", c.cgh(cgh{group: "g", member: "A", epoch: 1, owned: all}).ErrorCode, kerr.UnknownMemberID)
	d := c.roundTrip(&kmsg.ConsumerGroupDescribeRequest{Version: 1, Groups: []string{"g"}}).(*kmsg.ConsumerGroupDescribeResponse)
	if g := d.Groups[0]; g.ErrorCode != 0 || len(g.Members) != 1 || g.Members[0].MemberID != "B" {
		t.Fatalf("describe after A was fenced: %+v, want B alone", g)
	}
}

// Kafka's answers to bad ConsumerGroupHeartbeats.
func TestConsumerGroupHeartbeatErrors(t *testing.T) {
	_, c, ids, _ := newCGServer(t, Config{}, map[string]int{"t": 2})
	str := func(s string) *string { return &s }
	cases := []struct {
		what string
		h    cgh
		want *kerr.Error
	}{
		{"empty group", cgh{member: "m", topics: []string{"t"}}, kerr.InvalidRequest},
		{"empty member id at v1", cgh{group: "g", topics: []string{"t"}}, kerr.InvalidRequest},
		{"join without subscription", cgh{group: "g", member: "m"}, kerr.InvalidRequest},
		{"join with owned partitions", cgh{group: "g", member: "m", topics: []string{"t"}, owned: map[[16]byte][]int32{ids["t"]: {0}}}, kerr.InvalidRequest},
		{"empty instance id", cgh{group: "g", member: "m", topics: []string{"t"}, instance: str("")}, kerr.InvalidRequest},
		{"epoch -2 without instance id", cgh{group: "g", member: "m", epoch: -2}, kerr.InvalidRequest},
		{"epoch -3", cgh{group: "g", member: "m", epoch: -3}, kerr.InvalidRequest},
		{"unknown assignor", cgh{group: "g", member: "m", topics: []string{"t"}, assignor: str("sticky")}, kerr.UnsupportedAssignor},
		{"bad regex", cgh{group: "g", member: "m", regex: str("t(")}, kerr.InvalidRegularExpression},
		{"heartbeat for an unknown member", cgh{group: "g2", member: "m", epoch: 3}, kerr.UnknownMemberID},
		{"leave of an unknown group", cgh{group: "g3", member: "m", epoch: -1}, kerr.GroupIDNotFound},
		// Kafka's messages, checked below; no test sent either.
		{"blank rack id", cgh{group: "g", member: "m", topics: []string{"t"}, rack: str(" ")}, kerr.InvalidRequest},
		{"join without a rebalance timeout", cgh{group: "g", member: "m", topics: []string{"t"}, rebalance: -1}, kerr.InvalidRequest},
	}
	wantMsg := map[string]string{
		"blank rack id":                    "RackId can't be empty.",
		"join without a rebalance timeout": "RebalanceTimeoutMs must be provided in first request.",
	}
	for _, tc := range cases {
		r := c.cgh(tc.h)
		wantCode(t, tc.what, r.ErrorCode, tc.want)
		if r.ErrorMessage == nil || *r.ErrorMessage == "" {
			t.Errorf("%s: no error message", tc.what)
		} else if m, ok := wantMsg[tc.what]; ok && *r.ErrorMessage != m {
			t.Errorf("%s: message %q, want Kafka's %q", tc.what, *r.ErrorMessage, m)
		}
	}
	// None of them created a group.
	lg := c.roundTrip(&kmsg.ListGroupsRequest{Version: 5}).(*kmsg.ListGroupsResponse)
	if len(lg.Groups) != 0 {
		t.Fatalf("refused heartbeats left groups behind: %+v", lg.Groups)
	}

	j := c.cgh(cgh{group: "g", member: "m", topics: []string{"t"}})
	if j.ErrorCode != 0 || j.MemberEpoch != 1 {
		t.Fatalf("join: %+v", j)
	}
	// An epoch ahead of the member's, or behind it and not the previous
	// one, is fenced.
	wantCode(t, "epoch ahead", c.cgh(cgh{group: "g", member: "m", epoch: 5}).ErrorCode, kerr.FencedMemberEpoch)
	c.cgh(cgh{group: "g", member: "m2", topics: []string{"t"}}) // group epoch 2
	// m is asked to revoke one partition (in epoch 1), then says it
	// owns none and moves to epoch 2.
	if r := c.cgh(cgh{group: "g", member: "m", epoch: 1, owned: ownedOf(j)}); r.MemberEpoch != 1 || len(assigned(r, nil)) != 1 {
		t.Fatalf("m asked to revoke: %+v", r)
	}
	r := c.cgh(cgh{group: "g", member: "m", epoch: 1, owned: map[[16]byte][]int32{ids["t"]: {}}})
	if r.MemberEpoch != 2 {
		t.Fatalf("m: epoch %d, want 2", r.MemberEpoch)
	}
	// Its previous epoch with partitions within its assignment: a lost
	// response, accepted.
	if r := c.cgh(cgh{group: "g", member: "m", epoch: 1, owned: map[[16]byte][]int32{}}); r.ErrorCode != 0 || r.MemberEpoch != 2 {
		t.Fatalf("previous epoch: %+v", r)
	}
	// Epoch 0 from a known member rejoins it in place with its
	// assignment.
	if r := c.cgh(cgh{group: "g", member: "m", topics: []string{"t"}}); r.ErrorCode != 0 || r.MemberEpoch != 2 || r.Assignment == nil {
		t.Fatalf("rejoin: %+v", r)
	}
	// v0: the server names a member that joins without an id.
	r = c.cgh(cgh{v0: true, group: "g", topics: []string{"t"}})
	if r.ErrorCode != 0 || r.MemberID == nil || len(*r.MemberID) != 22 {
		t.Fatalf("v0 join: %+v", r)
	}
}

// OffsetCommit and OffsetFetch from members of a consumer group: Kafka's
// member-epoch checks. Before, the commits of a member of a group
// segfs did not know failed (the group did not exist).
func TestConsumerGroupOffsetCommitEpochs(t *testing.T) {
	_, c, _, _ := newCGServer(t, Config{}, map[string]int{"t": 2})
	j := c.cgh(cgh{group: "g", member: "m", topics: []string{"t"}})
	if j.ErrorCode != 0 || j.MemberEpoch != 1 {
		t.Fatalf("join: %+v", j)
	}
	commit := func(version int16, member string, epoch int32, offset int64) int16 {
		t.Helper()
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.MemberID, req.Generation = version, "g", member, epoch
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, offset
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := c.roundTrip(req).(*kmsg.OffsetCommitResponse)
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	wantCode(t, "commit at the member epoch", commit(9, "m", 1, 7), nil)
	wantCode(t, "commit at an older epoch", commit(9, "m", 0, 8), kerr.StaleMemberEpoch)
	wantCode(t, "commit at a newer epoch", commit(9, "m", 2, 8), kerr.StaleMemberEpoch)
	wantCode(t, "commit from an unknown member", commit(9, "x", 1, 8), kerr.UnknownMemberID)
	wantCode(t, "simple commit into a group with members", commit(9, "", -1, 8), kerr.UnknownMemberID)
	wantCode(t, "commit before v9", commit(8, "m", 1, 8), kerr.UnsupportedVersion)

	fetch := func(member *string, epoch int32) *kmsg.OffsetFetchResponseGroup {
		t.Helper()
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 9
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group, g.MemberID, g.MemberEpoch = "g", member, epoch
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.Topic, gt.Partitions = "t", []int32{0}
		g.Topics = append(g.Topics, gt)
		req.Groups = append(req.Groups, g)
		resp := c.roundTrip(req).(*kmsg.OffsetFetchResponse)
		return &resp.Groups[0]
	}
	m, x := "m", "x"
	if g := fetch(&m, 1); g.ErrorCode != 0 || len(g.Topics) != 1 || g.Topics[0].Partitions[0].Offset != 7 {
		t.Fatalf("fetch at the member epoch: %+v", g)
	}
	wantCode(t, "fetch at a stale epoch", fetch(&m, 0).ErrorCode, kerr.StaleMemberEpoch)
	wantCode(t, "fetch from an unknown member", fetch(&x, 1).ErrorCode, kerr.UnknownMemberID)
	if g := fetch(nil, -1); g.ErrorCode != 0 || g.Topics[0].Partitions[0].Offset != 7 {
		t.Fatalf("admin fetch: %+v", g)
	}

	// The group's other APIs: type consumer in ListGroups, Dead in
	// DescribeGroups (not a classic group), not deletable while it has
	// members.
	lg := c.roundTrip(&kmsg.ListGroupsRequest{Version: 5, TypesFilter: []string{"Consumer"}}).(*kmsg.ListGroupsResponse)
	if len(lg.Groups) != 1 || lg.Groups[0].Group != "g" || lg.Groups[0].GroupType != "consumer" || lg.Groups[0].ProtocolType != "consumer" || lg.Groups[0].GroupState != "Stable" {
		t.Fatalf("ListGroups: %+v", lg.Groups)
	}
	if lg := c.roundTrip(&kmsg.ListGroupsRequest{Version: 5, TypesFilter: []string{"classic"}}).(*kmsg.ListGroupsResponse); len(lg.Groups) != 0 {
		t.Fatalf("ListGroups classic: %+v", lg.Groups)
	}
	dg := c.roundTrip(&kmsg.DescribeGroupsRequest{Version: 5, Groups: []string{"g"}}).(*kmsg.DescribeGroupsResponse)
	if d := dg.Groups[0]; d.ErrorCode != 0 || d.State != "Dead" || d.ProtocolType != "" || d.Protocol != "" || len(d.Members) != 0 {
		t.Fatalf("DescribeGroups: %+v, want Dead as Kafka answers for a group that is not classic", d)
	}
	od := c.roundTrip(&kmsg.OffsetDeleteRequest{Group: "g", Topics: []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}}).(*kmsg.OffsetDeleteResponse)
	wantCode(t, "OffsetDelete of a subscribed topic", od.Topics[0].Partitions[0].ErrorCode, kerr.GroupSubscribedToTopic)
	del := func() int16 {
		return c.roundTrip(&kmsg.DeleteGroupsRequest{Version: 2, Groups: []string{"g"}}).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode
	}
	wantCode(t, "DeleteGroups with members", del(), kerr.NonEmptyGroup)

	// A classic member cannot join while it has members.
	jr := c.join(joinSpec{version: 9, group: "g", member: ""})
	wantCode(t, "classic JoinGroup (consumer protocol)", jr.ErrorCode, kerr.GroupIDNotFound)
	jr = c.join(joinSpec{version: 9, group: "g", protocolType: "connect"})
	wantCode(t, "classic JoinGroup (other protocol)", jr.ErrorCode, kerr.InconsistentGroupProtocol)

	// The member leaves; the group is Empty, simple commits go in, and it
	// can be deleted with its offsets.
	if r := c.cgh(cgh{group: "g", member: "m", epoch: -1}); r.ErrorCode != 0 {
		t.Fatalf("leave: %+v", r)
	}
	wantCode(t, "simple commit into the empty group", commit(9, "", -1, 9), nil)
	if g := fetch(nil, -1); g.Topics[0].Partitions[0].Offset != 9 {
		t.Fatalf("after the simple commit: %+v", g)
	}
	wantCode(t, "DeleteGroups of the empty group", del(), nil)
	if g := fetch(nil, -1); g.Topics[0].Partitions[0].Offset != -1 {
		t.Fatalf("offsets after DeleteGroups: %+v", g)
	}
}

// A classic group with members refuses consumer-protocol members, as Kafka
// does when it cannot upgrade it; an empty one becomes a consumer group.
func TestConsumerGroupClassicConflict(t *testing.T) {
	_, c, _, _ := newCGServer(t, Config{GroupInitialRebalanceDelay: -1}, map[string]int{"t": 1})
	jr := c.joinNew(joinSpec{version: 5, group: "cl"})
	if jr.ErrorCode != 0 {
		t.Fatalf("classic join: %v", kerr.ErrorForCode(jr.ErrorCode))
	}
	wantCode(t, "consumer join into a classic group with members", c.cgh(cgh{group: "cl", member: "m", topics: []string{"t"}}).ErrorCode, kerr.GroupIDNotFound)
	lr := c.roundTrip(&kmsg.LeaveGroupRequest{Version: 5, Group: "cl", Members: []kmsg.LeaveGroupRequestMember{{MemberID: jr.MemberID}}}).(*kmsg.LeaveGroupResponse)
	if lr.ErrorCode != 0 {
		t.Fatalf("leave: %v", lr.ErrorCode)
	}
	if r := c.cgh(cgh{group: "cl", member: "m", topics: []string{"t"}}); r.ErrorCode != 0 || r.MemberEpoch != 1 {
		t.Fatalf("consumer join into the empty classic group: %+v", r)
	}
	lg := c.roundTrip(&kmsg.ListGroupsRequest{Version: 5}).(*kmsg.ListGroupsResponse)
	if len(lg.Groups) != 1 || lg.Groups[0].GroupType != "consumer" {
		t.Fatalf("ListGroups: %+v", lg.Groups)
	}
}

// Static members: a member leaving with epoch -2 keeps its partitions
// (nobody else gets them) until a member with its instance id takes them
// over, without a new group epoch; while it has not left, its instance id
// is refused to others.
func TestConsumerGroupStaticMember(t *testing.T) {
	_, c, ids, names := newCGServer(t, Config{}, map[string]int{"t": 2})
	inst := "worker-1"
	a := c.cgh(cgh{group: "g", member: "A", instance: &inst, topics: []string{"t"}})
	b := c.cgh(cgh{group: "g", member: "B", topics: []string{"t"}})
	a = c.cgh(cgh{group: "g", member: "A", instance: &inst, epoch: a.MemberEpoch, owned: ownedOf(a)})
	a = c.cgh(cgh{group: "g", member: "A", instance: &inst, epoch: a.MemberEpoch, owned: map[[16]byte][]int32{ids["t"]: {0}}})
	b = c.cgh(cgh{group: "g", member: "B", epoch: b.MemberEpoch, owned: map[[16]byte][]int32{}})
	wantAssigned(t, "B", b, names, "t/1")
	if a.MemberEpoch != 2 || b.MemberEpoch != 2 {
		t.Fatalf("epochs A %d B %d, want 2", a.MemberEpoch, b.MemberEpoch)
	}

	wantCode(t, "another member with A's instance id", c.cgh(cgh{group: "g", member: "A2", instance: &inst, topics: []string{"t"}}).ErrorCode, kerr.UnreleasedInstanceID)
	if r := c.cgh(cgh{group: "g", member: "A", instance: &inst, epoch: -2}); r.ErrorCode != 0 || r.MemberEpoch != -2 {
		t.Fatalf("static leave: %+v", r)
	}
	// B heartbeats: t/0 stays reserved for the instance.
	if r := c.cgh(cgh{group: "g", member: "B", epoch: 2, owned: map[[16]byte][]int32{ids["t"]: {1}}}); r.MemberEpoch != 2 || r.Assignment != nil {
		t.Fatalf("B after A left temporarily: epoch %d assignment %v", r.MemberEpoch, assigned(r, names))
	}
	a2 := c.cgh(cgh{group: "g", member: "A2", instance: &inst, topics: []string{"t"}})
	wantAssigned(t, "A2 replacing A", a2, names, "t/0")
	if a2.MemberEpoch != 2 {
		t.Fatalf("A2: epoch %d, want 2 (no new group epoch)", a2.MemberEpoch)
	}
	wantCode(t, "the old member id", c.cgh(cgh{group: "g", member: "A", instance: &inst, epoch: 2}).ErrorCode, kerr.FencedInstanceID)

	// The replaced member's leave is fenced too, and leaves A2 in place;
	// an instance id nobody has is unknown, to a heartbeat and a leave.
	// No test sent these.
	wantCode(t, "the old member id leaving", c.cgh(cgh{group: "g", member: "A", instance: &inst, epoch: -2}).ErrorCode, kerr.FencedInstanceID)
	nobody := "worker-9"
	wantCode(t, "a heartbeat of an unknown instance id", c.cgh(cgh{group: "g", member: "N", instance: &nobody, epoch: 2}).ErrorCode, kerr.UnknownMemberID)
	wantCode(t, "a leave of an unknown instance id", c.cgh(cgh{group: "g", member: "N", instance: &nobody, epoch: -1}).ErrorCode, kerr.UnknownMemberID)
	// A2 joining again with epoch 0 (a lost response) keeps its place:
	// its assignment, and no new group epoch.
	a2 = c.cgh(cgh{group: "g", member: "A2", instance: &inst, topics: []string{"t"}})
	wantAssigned(t, "A2 joining again", a2, names, "t/0")
	if a2.MemberEpoch != 2 {
		t.Fatalf("A2 joining again: epoch %d, want 2", a2.MemberEpoch)
	}
	// A2 leaves for good (-1): its partition goes to B, in a new epoch.
	if r := c.cgh(cgh{group: "g", member: "A2", instance: &inst, epoch: -1}); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("A2 leaves: %+v", r)
	}
	b = c.cgh(cgh{group: "g", member: "B", epoch: 2, owned: map[[16]byte][]int32{ids["t"]: {1}}})
	wantAssigned(t, "B after A2 left", b, names, "t/0", "t/1")
	if b.MemberEpoch != 3 {
		t.Fatalf("B after A2 left: epoch %d, want 3", b.MemberEpoch)
	}
}

// A member whose heartbeats stop is removed after the session timeout and
// its partitions go to the others; a new partition starts a new target
// assignment that hands it out.
func TestConsumerGroupSessionTimeoutAndNewPartition(t *testing.T) {
	// B's heartbeats must keep it within its session across AddPartition
	// (a directory, its files and fsyncs): with a 500 ms session that took
	// longer under -race on a loaded machine, and B was gone.
	ts, c, ids, names := newCGServer(t, Config{ConsumerGroupSessionTimeout: 2 * time.Second, ConsumerGroupHeartbeatInterval: 100 * time.Millisecond}, map[string]int{"t": 2})
	a := c.cgh(cgh{group: "g", member: "A", topics: []string{"t"}})
	b := c.cgh(cgh{group: "g", member: "B", topics: []string{"t"}})
	a = c.cgh(cgh{group: "g", member: "A", epoch: a.MemberEpoch, owned: ownedOf(a)}) // revoke request
	a = c.cgh(cgh{group: "g", member: "A", epoch: a.MemberEpoch, owned: ownedOf(a)}) // revoked
	if a.MemberEpoch != 2 {
		t.Fatalf("A: epoch %d, want 2", a.MemberEpoch)
	}
	// Only B heartbeats now; A's session expires and B gets both.
	owned := map[[16]byte][]int32{}
	epoch := b.MemberEpoch
	deadline := time.Now().Add(30 * time.Second)
	for len(owned[ids["t"]]) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("B owns %v 30s after A stopped, want both partitions", owned)
		}
		time.Sleep(100 * time.Millisecond)
		r := c.cgh(cgh{group: "g", member: "B", epoch: epoch, owned: owned})
		if r.ErrorCode != 0 {
			t.Fatalf("B heartbeat: %v", kerr.ErrorForCode(r.ErrorCode))
		}
		epoch = r.MemberEpoch
		if r.Assignment != nil {
			owned = ownedOf(r)
		}
	}
	wantCode(t, "A after its session expired", c.cgh(cgh{group: "g", member: "A", epoch: 2}).ErrorCode, kerr.UnknownMemberID)

	// A new partition: the next heartbeat assigns it.
	tp, err := ts.store.Topic("t")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tp.AddPartition(2); err != nil {
		t.Fatal(err)
	}
	r := c.cgh(cgh{group: "g", member: "B", epoch: epoch, owned: owned})
	wantAssigned(t, "after a partition was added", r, names, "t/0", "t/1", "t/2")
	if r.MemberEpoch != epoch+1 {
		t.Fatalf("epoch %d after a new partition, want %d", r.MemberEpoch, epoch+1)
	}
}

// The range assignor, chosen by the members, gives each member a
// contiguous range of each topic's partitions, the same for topics of the
// same size; regex subscriptions match whole topic names.
func TestConsumerGroupRangeAndRegex(t *testing.T) {
	_, c, _, names := newCGServer(t, Config{}, map[string]int{"x1": 3, "x2": 3, "ax1": 1})
	rng, re := "range", `x\d`
	a := c.cgh(cgh{group: "g", member: "A", regex: &re, assignor: &rng})
	wantAssigned(t, "A alone", a, names, "x1/0", "x1/1", "x1/2", "x2/0", "x2/1", "x2/2")
	b := c.cgh(cgh{group: "g", member: "B", topics: []string{"x1", "x2"}, assignor: &rng})
	a = c.cgh(cgh{group: "g", member: "A", epoch: a.MemberEpoch, owned: ownedOf(a)})
	wantAssigned(t, "A after B joined", a, names, "x1/0", "x1/1", "x2/0", "x2/1")
	a = c.cgh(cgh{group: "g", member: "A", epoch: a.MemberEpoch, owned: ownedOf(a)})
	b = c.cgh(cgh{group: "g", member: "B", epoch: b.MemberEpoch, owned: map[[16]byte][]int32{}})
	wantAssigned(t, "B", b, names, "x1/2", "x2/2")
	d := c.roundTrip(&kmsg.ConsumerGroupDescribeRequest{Groups: []string{"g"}}).(*kmsg.ConsumerGroupDescribeResponse)
	if g := d.Groups[0]; g.AssignorName != "range" || g.State != "Stable" {
		t.Fatalf("describe: %+v", g)
	}
}

// The uniform assignor balances (counts differ by at most one) and keeps
// partitions where they are when members come and go.
func TestUniformAssignorSticky(t *testing.T) {
	topic := topicMeta{name: "t", id: [16]byte{1}, parts: 7}
	sub := map[string]bool{"t": true}
	ms := []assignMember{{id: "a", topics: sub}, {id: "b", topics: sub}}
	out := assignUniform(ms, []topicMeta{topic})
	if len(out["a"])+len(out["b"]) != 7 || len(out["a"]) < 3 || len(out["b"]) < 3 {
		t.Fatalf("two members: %v", out)
	}
	ms = []assignMember{{id: "a", topics: sub, prev: out["a"]}, {id: "b", topics: sub, prev: out["b"]}, {id: "c", topics: sub}}
	next := assignUniform(ms, []topicMeta{topic})
	total := 0
	for _, m := range ms {
		n := len(next[m.id])
		total += n
		if n < 2 || n > 3 {
			t.Fatalf("three members: %s has %d", m.id, n)
		}
		for tp := range next[m.id] {
			if m.prev != nil && !m.prev.has(tp) {
				t.Fatalf("%s got %v it did not have: only c should gain", m.id, tp)
			}
		}
	}
	if total != 7 {
		t.Fatalf("three members: %d partitions assigned", total)
	}
}

// TestConsumerGroupTypeFromOffsetsFile: the offsets file records the
// KIP-848 consumer groups, with offsets or without (a group that never
// committed), and their epochs; a server started on it answers for them
// as consumer groups, Empty at those epochs. A file written before segfs
// recorded them (no consumer_groups) loads as before: its groups are
// classic.
func TestConsumerGroupTypeFromOffsetsFile(t *testing.T) {
	dir := t.TempDir()
	const offsets = `"t": {"0": {"offset": 5, "leader_epoch": -1, "metadata": "", "commit_time_ms": 1}}`
	file := `{"version": 1, "groups": {"old": {` + offsets + `}, "cg": {` + offsets + `}},
		"consumer_groups": {"cg": {"epoch": 7, "assignment_epoch": 6}, "idle": {"epoch": 3, "assignment_epoch": 2}}}`
	if err := os.WriteFile(filepath.Join(dir, OffsetsFile), []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := startServerDir(t, dir, Config{})
	c := dial(t, ts.addr)
	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version = 5
	var listed []string
	for _, g := range c.roundTrip(lg).(*kmsg.ListGroupsResponse).Groups {
		listed = append(listed, g.Group+" "+g.GroupType+" "+g.ProtocolType+" "+g.GroupState)
	}
	if want := []string{"cg consumer consumer Empty", "idle consumer consumer Empty", "old classic  Empty"}; !slices.Equal(listed, want) {
		t.Errorf("ListGroups: %q, want %q", listed, want)
	}
	cd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cd.Groups = []string{"cg", "idle", "old", "nope"}
	gs := c.roundTrip(cd).(*kmsg.ConsumerGroupDescribeResponse).Groups
	for i, want := range [][2]int32{{7, 6}, {3, 2}} {
		if g := gs[i]; g.ErrorCode != 0 || g.State != "Empty" || g.Epoch != want[0] || g.AssignmentEpoch != want[1] || len(g.Members) != 0 || g.AssignorName != "uniform" {
			t.Errorf("ConsumerGroupDescribe %s: error %d, state %q, epoch %d, assignment epoch %d, %d members, assignor %q; want Empty at %d and %d, assignor uniform",
				g.Group, g.ErrorCode, g.State, g.Epoch, g.AssignmentEpoch, len(g.Members), g.AssignorName, want[0], want[1])
		}
	}
	for _, g := range gs[2:] {
		if g.ErrorCode != kerr.GroupIDNotFound.Code {
			t.Errorf("ConsumerGroupDescribe %s: error %d, want GROUP_ID_NOT_FOUND", g.Group, g.ErrorCode)
		}
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"cg", "idle", "old"}
	for _, g := range c.roundTrip(dg).(*kmsg.DescribeGroupsResponse).Groups {
		want := map[string]string{"cg": "Dead ", "idle": "Dead ", "old": "Empty "}[g.Group]
		if got := g.State + " " + g.ProtocolType; got != want {
			t.Errorf("DescribeGroups %s: %q, want %q", g.Group, got, want)
		}
	}
}

// TestConsumerGroupRecordWrittenOnEpochChange: a consumer group's record
// in the offsets file (its group and assignment epochs) is written when
// the group is created and when an epoch changes, committed offsets or
// not, before the heartbeat that changed it is answered, and not at a
// heartbeat that changes nothing; DeleteGroups removes it. A group that
// never committed used to have none, so a restart forgot it.
func TestConsumerGroupRecordWrittenOnEpochChange(t *testing.T) {
	ts, c, _, _ := newCGServer(t, Config{}, map[string]int{"t": 2})
	path := filepath.Join(ts.dir, OffsetsFile)
	record := func() (consumerGroupMeta, bool, uint64) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var d offsetsFileData
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		if len(d.Groups) != 0 {
			t.Fatalf("the offsets file has offsets: %s", b)
		}
		var st syscall.Stat_t
		if err := syscall.Stat(path, &st); err != nil {
			t.Fatal(err)
		}
		m, ok := d.ConsumerGroups["g"]
		return m, ok, st.Ino // a rewrite renames a new file into place
	}

	a := c.cgh(cgh{group: "g", member: "A", topics: []string{"t"}, owned: map[[16]byte][]int32{}})
	if a.ErrorCode != 0 {
		t.Fatalf("join: %v", kerr.ErrorForCode(a.ErrorCode))
	}
	m, ok, ino := record()
	if !ok || m.Epoch != 1 || m.AssignmentEpoch != 1 {
		t.Fatalf("after the join the file records g as %+v (%v), want epochs 1 and 1", m, ok)
	}
	// Heartbeats that change nothing write nothing.
	for range 3 {
		if r := c.cgh(cgh{group: "g", member: "A", epoch: a.MemberEpoch, owned: ownedOf(a)}); r.ErrorCode != 0 {
			t.Fatalf("heartbeat: %v", kerr.ErrorForCode(r.ErrorCode))
		}
	}
	if _, _, again := record(); again != ino {
		t.Errorf("heartbeats that changed no epoch rewrote the offsets file")
	}
	// A subscription change is a new epoch: written before the answer.
	b := c.cgh(cgh{group: "g", member: "B", topics: []string{"t"}, owned: map[[16]byte][]int32{}})
	if b.ErrorCode != 0 {
		t.Fatalf("second join: %v", kerr.ErrorForCode(b.ErrorCode))
	}
	if m, ok, _ := record(); !ok || m.Epoch != 2 || m.AssignmentEpoch != 2 {
		t.Fatalf("after the second join the file records g as %+v (%v), want epochs 2 and 2", m, ok)
	}
	for _, id := range []string{"A", "B"} {
		if r := c.cgh(cgh{group: "g", member: id, epoch: leaveGroupEpoch}); r.ErrorCode != 0 {
			t.Fatalf("leave %s: %v", id, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	if m, ok, _ := record(); !ok || m.Epoch != 4 {
		t.Fatalf("after both left the file records g as %+v (%v), want epoch 4", m, ok)
	}

	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{"g"}
	if r := c.roundTrip(dg).(*kmsg.DeleteGroupsResponse); r.Groups[0].ErrorCode != 0 {
		t.Fatalf("DeleteGroups: %v", kerr.ErrorForCode(r.Groups[0].ErrorCode))
	}
	if m, ok, _ := record(); ok {
		t.Fatalf("after DeleteGroups the file still records g: %+v", m)
	}
}
