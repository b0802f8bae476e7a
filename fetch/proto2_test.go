package fetch

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Metadata v12 naming one topic by ID and another by name, auto-creation
// allowed: Kafka's handleTopicMetadataRequest answers by the IDs alone
// (useTopicId) and ignores every name, so "b" is neither answered nor
// created. segfs answered both and created "b". A name given with the ID
// of another topic is ignored as well, and a repeated ID is answered once.
func TestMetadataIDsIgnoreNames(t *testing.T) {
	ts := startServer(t, Config{AutoCreateTopics: true})
	createTopic(t, ts, "a", 2)
	a, _ := ts.store.Topic("a")
	c := dial(t, ts.addr)

	req := kmsg.NewPtrMetadataRequest()
	req.Version, req.AllowAutoTopicCreation = 12, true
	byID := kmsg.NewMetadataRequestTopic()
	byID.TopicID = a.ID()
	byName := kmsg.NewMetadataRequestTopic()
	byName.Topic = kmsg.StringPtr("b")
	again := kmsg.NewMetadataRequestTopic()
	again.Topic, again.TopicID = kmsg.StringPtr("c"), a.ID()
	req.Topics = []kmsg.MetadataRequestTopic{byID, byName, again}
	r := c.roundTrip(req).(*kmsg.MetadataResponse)
	if len(r.Topics) != 1 {
		t.Fatalf("%d topics answered, want 1 (a, by its ID): %+v", len(r.Topics), r.Topics)
	}
	if mt := r.Topics[0]; mt.ErrorCode != 0 || mt.Topic == nil || *mt.Topic != "a" || mt.TopicID != a.ID() || len(mt.Partitions) != 2 {
		t.Errorf("by id: %v, name %v, %d partitions; want a with 2", kerr.ErrorForCode(mt.ErrorCode), mt.Topic, len(mt.Partitions))
	}
	for _, name := range []string{"b", "c"} {
		if _, err := ts.store.Topic(name); err == nil {
			t.Errorf("topic %q was auto-created by a request naming topics by ID", name)
		}
	}

	// An unknown ID beside a name: UNKNOWN_TOPIC_ID for the ID, the name
	// still ignored.
	unknown := [16]byte{9, 9, 9}
	req.Topics[0].TopicID = unknown
	req.Topics = req.Topics[:2]
	r = c.roundTrip(req).(*kmsg.MetadataResponse)
	if len(r.Topics) != 1 || r.Topics[0].ErrorCode != kerr.UnknownTopicID.Code || r.Topics[0].TopicID != unknown || r.Topics[0].Topic != nil {
		t.Fatalf("unknown id beside a name: %+v; want only UNKNOWN_TOPIC_ID for the id", r.Topics)
	}
	if _, err := ts.store.Topic("b"); err == nil {
		t.Error(`topic "b" was auto-created beside an unknown ID`)
	}

	// All IDs zero: the names are served (and created) as usual, each
	// once (Kafka takes them as a set).
	req.Topics[0].TopicID = [16]byte{}
	req.Topics[0].Topic = kmsg.StringPtr("a")
	req.Topics = append(req.Topics, req.Topics[0])
	r = c.roundTrip(req).(*kmsg.MetadataResponse)
	if len(r.Topics) != 2 || r.Topics[0].ErrorCode != 0 || r.Topics[1].ErrorCode != 0 {
		t.Fatalf("zero ids, names a, b and a again: %+v", r.Topics)
	}
	if _, err := ts.store.Topic("b"); err != nil {
		t.Errorf(`topic "b" not auto-created by name: %v`, err)
	}
}

// The empty group id is a group for the APIs Kafka 4's group coordinator
// refuses only a null id for: a simple commit (generation -1) to "" is
// stored (segfs answered INVALID_GROUP_ID), OffsetFetch reads it back,
// ListGroups lists "" and DescribeGroups describes it as Empty, all of it
// across a restart (the offsets file keeps "" as a group name), and
// DeleteGroups deletes it. JoinGroup, Heartbeat and OffsetDelete still
// refuse "", as Kafka does.
func TestEmptyGroupIDSimpleCommit(t *testing.T) {
	dir := t.TempDir()
	ts := startServerDir(t, dir, Config{})
	createTopic(t, ts, "t", 1)
	c := dial(t, ts.addr)

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation = 9, "", -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "t"
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset, cp.Metadata = 0, 7, kmsg.StringPtr("m")
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	wantCode(t, `simple commit to ""`, c.roundTrip(commit).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, nil)

	check := func(when string, c *client) {
		t.Helper()
		if o, _ := fetchOffset(c, "", "t", 0); o != 7 {
			t.Errorf(`%s: OffsetFetch "" t/0 = %d, want 7`, when, o)
		}
		lr := kmsg.NewPtrListGroupsRequest()
		lr.Version = 5
		lg := c.roundTrip(lr).(*kmsg.ListGroupsResponse)
		if len(lg.Groups) != 1 || lg.Groups[0].Group != "" || lg.Groups[0].GroupState != "Empty" {
			t.Errorf(`%s: ListGroups = %+v, want the group "" (Empty)`, when, lg.Groups)
		}
		dg := kmsg.NewPtrDescribeGroupsRequest()
		dg.Groups = []string{""}
		d := c.roundTrip(dg).(*kmsg.DescribeGroupsResponse)
		if len(d.Groups) != 1 || d.Groups[0].ErrorCode != 0 || d.Groups[0].State != "Empty" {
			t.Errorf(`%s: DescribeGroups "" = %+v, want Empty`, when, d.Groups)
		}
	}
	check("after the commit", c)

	ts.stop()
	ts = startServerDir(t, dir, Config{})
	c = dial(t, ts.addr)
	check("after a restart", c)

	join := kmsg.NewPtrJoinGroupRequest()
	join.Version, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = 5, 10000, 10000, "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
	wantCode(t, `JoinGroup ""`, c.roundTrip(join).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InvalidGroupID)
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.MemberID, hb.Generation = "m", 1
	wantCode(t, `Heartbeat ""`, c.roundTrip(hb).(*kmsg.HeartbeatResponse).ErrorCode, kerr.InvalidGroupID)
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	wantCode(t, `OffsetDelete ""`, c.roundTrip(od).(*kmsg.OffsetDeleteResponse).ErrorCode, kerr.InvalidGroupID)

	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{""}
	r := c.roundTrip(del).(*kmsg.DeleteGroupsResponse)
	if len(r.Groups) != 1 {
		t.Fatalf("DeleteGroups: %+v", r)
	}
	wantCode(t, `DeleteGroups ""`, r.Groups[0].ErrorCode, nil)
	if o, _ := fetchOffset(c, "", "t", 0); o != -1 {
		t.Errorf(`OffsetFetch "" t/0 after DeleteGroups = %d, want -1`, o)
	}
}

// ListOffsets v10 (KIP-1075) adds only TimeoutMs, for lookups in remote
// storage, which no segfs topic has: Kafka 4.0 serves v10 and segfs
// answers it exactly as v9, whatever the timeout (0 included), for every
// kind of timestamp, an unknown partition too. segfs did not advertise
// v10, so clients that know it stayed at v9.
func TestListOffsetsV10AsV9(t *testing.T) {
	ts := startServer(t, Config{})
	createTopic(t, ts, "t", 1)
	c := dial(t, ts.addr)
	c.produce(9, "t", 0, produceBatch(t, "a", "b"))
	c.produce(9, "t", 0, produceBatch(t, "c"))

	list := func(v int16, timeout int32, partition int32, timestamp int64) kmsg.ListOffsetsResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version, req.ReplicaID, req.TimeoutMillis = v, -1, timeout
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, timestamp, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := c.roundTrip(req).(*kmsg.ListOffsetsResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("v%d %d: %+v", v, timestamp, resp)
		}
		return resp.Topics[0].Partitions[0]
	}
	for _, partition := range []int32{0, 5} {
		for _, timestamp := range []int64{-1, -2, -3, -4, -5, -7, 0, 1 << 62} {
			want := list(9, 0, partition, timestamp)
			for _, timeout := range []int32{0, 30000} {
				got := list(10, timeout, partition, timestamp)
				if got.ErrorCode != want.ErrorCode || got.Offset != want.Offset || got.Timestamp != want.Timestamp || got.LeaderEpoch != want.LeaderEpoch {
					t.Errorf("partition %d timestamp %d timeout %d: v10 %+v, v9 %+v", partition, timestamp, timeout, got, want)
				}
			}
		}
	}
	if p := list(10, 0, 0, -1); p.ErrorCode != 0 || p.Offset != 3 {
		t.Errorf("v10 latest: %v offset %d, want 3", kerr.ErrorForCode(p.ErrorCode), p.Offset)
	}
}

// ConsumerGroupHeartbeat with an empty or blank group id: Kafka 4's
// throwIfConsumerGroupHeartbeatRequestIsInvalid answers INVALID_REQUEST
// "GroupId can't be empty." after checking the member id, and takes an id
// of only spaces (Java's trim()) as empty, for the member, instance and
// rack ids too. segfs answered INVALID_GROUP_ID before the member id and
// let blank ids through: a group named "  " was created.
func TestConsumerGroupHeartbeatBlankIDs(t *testing.T) {
	_, c, _, _ := newCGServer(t, Config{}, map[string]int{"t": 1})
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		what string
		h    cgh
		msg  string
	}{
		{"empty group", cgh{member: "m", topics: []string{"t"}}, "GroupId can't be empty."},
		{"blank group", cgh{group: " \t", member: "m", topics: []string{"t"}}, "GroupId can't be empty."},
		{"empty group and member", cgh{topics: []string{"t"}}, "MemberId can't be empty."},
		{"blank member", cgh{group: "g", member: "  ", topics: []string{"t"}}, "MemberId can't be empty."},
		{"blank instance id", cgh{group: "g", member: "m", topics: []string{"t"}, instance: str(" ")}, "InstanceId can't be empty."},
	} {
		r := c.cgh(tc.h)
		m := "<nil>"
		if r.ErrorMessage != nil {
			m = *r.ErrorMessage
		}
		if r.ErrorCode != kerr.InvalidRequest.Code || m != tc.msg {
			t.Errorf("%s: %v %q, want INVALID_REQUEST %q", tc.what, kerr.ErrorForCode(r.ErrorCode), m, tc.msg)
		}
	}
	lg := c.roundTrip(&kmsg.ListGroupsRequest{Version: 5}).(*kmsg.ListGroupsResponse)
	if len(lg.Groups) != 0 {
		t.Errorf("refused heartbeats left groups behind: %+v", lg.Groups)
	}
}
