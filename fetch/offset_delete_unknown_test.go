package fetch

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// offsetDeleteReq is an OffsetDelete of group's partitions tps, topics in
// the order given.
func offsetDeleteReq(group string, tps ...struct {
	topic string
	parts []int32
}) *kmsg.OffsetDeleteRequest {
	req := kmsg.NewPtrOffsetDeleteRequest()
	req.Group = group
	for _, tp := range tps {
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = tp.topic
		for _, p := range tp.parts {
			rp := kmsg.NewOffsetDeleteRequestTopicPartition()
			rp.Partition = p
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

type odTopic = struct {
	topic string
	parts []int32
}

// TestOffsetDeleteUnknownPartitions: a partition that does not exist (of
// an unknown topic, an unknown partition of a known one, a topic a live
// member subscribes to but nobody created) is UNKNOWN_TOPIC_OR_PARTITION
// and deletes nothing, as Kafka's handleOffsetDeleteRequest answers it
// before the group coordinator; the coordinator's group-level errors
// still win; the partitions that exist are answered as before. segfs
// answered those partitions without error (or GROUP_SUBSCRIBED_TO_TOPIC).
func TestOffsetDeleteUnknownPartitions(t *testing.T) {
	ts := startServer(t, Config{GroupInitialRebalanceDelay: -1})
	createTopic(t, ts, "t", 2)
	c := dial(t, ts.addr)
	commit := func(group string, gen int32, member, topic string, part int32, offset int64) {
		t.Helper()
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.Generation, req.MemberID = 7, group, gen, member
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = part, offset
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		wantCode(t, "commit", c.roundTrip(req).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, nil)
	}
	commit("idle", -1, "", "t", 0, 3)
	commit("idle", -1, "", "t", 1, 4)

	r := c.roundTrip(offsetDeleteReq("idle", odTopic{"ghost", []int32{0}}, odTopic{"t", []int32{9, 0}}, odTopic{"bad/name", []int32{0}})).(*kmsg.OffsetDeleteResponse)
	want := []struct {
		topic string
		codes []*kerr.Error
	}{
		{"ghost", []*kerr.Error{kerr.UnknownTopicOrPartition}},
		{"t", []*kerr.Error{kerr.UnknownTopicOrPartition, nil}},
		{"bad/name", []*kerr.Error{kerr.UnknownTopicOrPartition}},
	}
	if r.ErrorCode != 0 || len(r.Topics) != len(want) {
		t.Fatalf("OffsetDelete: %+v", r)
	}
	for i, w := range want {
		rt := r.Topics[i]
		if rt.Topic != w.topic || len(rt.Partitions) != len(w.codes) {
			t.Fatalf("topic %d: %+v, want %s", i, rt, w.topic)
		}
		for j, code := range w.codes {
			wantCode(t, w.topic, rt.Partitions[j].ErrorCode, code)
		}
	}
	if o, _ := fetchOffset(c, "idle", "t", 0); o != -1 {
		t.Errorf("idle t/0 after OffsetDelete: %d", o)
	}
	if o, _ := fetchOffset(c, "idle", "t", 1); o != 4 {
		t.Errorf("idle t/1 kept: %d", o)
	}

	// A live member subscribed to t and to a topic that does not exist.
	j := joinSpec{version: 5, group: "busy"}
	first := c.join(j)
	req := j.request()
	req.MemberID = first.MemberID
	req.Protocols[0].Metadata = consumerMeta("t", "ghost")
	jb := c.roundTrip(req).(*kmsg.JoinGroupResponse)
	wantCode(t, "busy sync", c.sync("busy", jb.Generation, jb.MemberID, nil).ErrorCode, nil)
	r = c.roundTrip(offsetDeleteReq("busy", odTopic{"ghost", []int32{0}}, odTopic{"t", []int32{0, 7}})).(*kmsg.OffsetDeleteResponse)
	if r.ErrorCode != 0 || len(r.Topics) != 2 {
		t.Fatalf("OffsetDelete in busy: %+v", r)
	}
	wantCode(t, "subscribed, unknown topic", r.Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
	wantCode(t, "subscribed topic", r.Topics[1].Partitions[0].ErrorCode, kerr.GroupSubscribedToTopic)
	wantCode(t, "subscribed topic, unknown partition", r.Topics[1].Partitions[1].ErrorCode, kerr.UnknownTopicOrPartition)

	// Group-level errors come first, whatever the topics.
	wantCode(t, "unknown group", c.roundTrip(offsetDeleteReq("nope", odTopic{"ghost", []int32{0}})).(*kmsg.OffsetDeleteResponse).ErrorCode, kerr.GroupIDNotFound)
	wantCode(t, "empty group id", c.roundTrip(offsetDeleteReq("", odTopic{"ghost", []int32{0}})).(*kmsg.OffsetDeleteResponse).ErrorCode, kerr.InvalidGroupID)
}
