package tests

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKafkaSimpleGroupAfterOffsetDelete: a group made by an admin commit
// (kafka-consumer-groups --reset-offsets, kadm CommitOffsets: Kafka's
// "simple" classic group) whose offsets kafka-consumer-groups
// --delete-offsets removes is still there, Empty, as in Kafka: listed,
// described Empty and deletable, until the offsets expiry check removes
// the Empty group without offsets. segfs knew such a group from its
// offsets only: it vanished with the last one, and DeleteGroups answered
// GROUP_ID_NOT_FOUND.
func TestKafkaSimpleGroupAfterOffsetDelete(t *testing.T) {
	for _, tc := range []struct {
		name   string
		flags  []string
		expiry bool // wait for the expiry check instead of deleting
	}{
		{"deleted", nil, false},
		{"expired", []string{"--offsets-retention-check-interval", "100ms"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The consumer at the end joins alone: no initial
			// rebalance delay to wait out.
			srv := kafkaServe(t, "", append([]string{"--group-initial-rebalance-delay", "0"}, tc.flags...)...)
			cl := kafkaClient(t, srv.addr)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			ct := kmsg.NewPtrCreateTopicsRequest()
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "sg", 1, 1
			ct.Topics = append(ct.Topics, rt)
			if resp, err := ct.RequestWith(ctx, cl); err != nil || resp.Topics[0].ErrorCode != 0 {
				t.Fatalf("create sg: %v %+v", err, resp)
			}
			kafkaProduce(t, cl, "sg", 0, "a", "b")

			req := func(r kmsg.Request) kmsg.Response {
				t.Helper()
				resp, err := cl.Request(ctx, r)
				if err != nil {
					t.Fatalf("%T: %v", r, err)
				}
				return resp
			}
			oc := kmsg.NewPtrOffsetCommitRequest()
			oc.Group, oc.Generation = "simple", -1
			oct := kmsg.NewOffsetCommitRequestTopic()
			oct.Topic = "sg"
			ocp := kmsg.NewOffsetCommitRequestTopicPartition()
			ocp.Partition, ocp.Offset = 0, 1
			oct.Partitions = append(oct.Partitions, ocp)
			oc.Topics = append(oc.Topics, oct)
			if code := req(oc).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
				t.Fatalf("admin commit: %v", kerr.ErrorForCode(code))
			}
			od := kmsg.NewPtrOffsetDeleteRequest()
			od.Group = "simple"
			odt := kmsg.NewOffsetDeleteRequestTopic()
			odt.Topic = "sg"
			odt.Partitions = append(odt.Partitions, kmsg.OffsetDeleteRequestTopicPartition{Partition: 0})
			od.Topics = append(od.Topics, odt)
			if r := req(od).(*kmsg.OffsetDeleteResponse); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
				t.Fatalf("OffsetDelete: %+v", r)
			}

			listed := func() []string {
				var out []string
				for _, g := range req(kmsg.NewPtrListGroupsRequest()).(*kmsg.ListGroupsResponse).Groups {
					out = append(out, g.Group+" "+g.GroupState+" "+g.ProtocolType)
				}
				return out
			}
			if tc.expiry {
				// Kafka's cleanup removes the Empty group without
				// offsets at its next run.
				if !mntWaitFor(20*time.Second, func() bool { return len(listed()) == 0 }) {
					t.Fatalf("ListGroups after the expiry checks: %q, want no group", listed())
				}
				return
			}
			if got := listed(); !slices.Equal(got, []string{"simple Empty "}) {
				t.Errorf("ListGroups after OffsetDelete: %q, want the simple group, Empty", got)
			}
			dg := kmsg.NewPtrDescribeGroupsRequest()
			dg.Groups = []string{"simple"}
			if d := req(dg).(*kmsg.DescribeGroupsResponse).Groups[0]; d.ErrorCode != 0 || d.State != "Empty" {
				t.Errorf("DescribeGroups after OffsetDelete: %v %q, want Empty", kerr.ErrorForCode(d.ErrorCode), d.State)
			}
			del := func() int16 {
				r := kmsg.NewPtrDeleteGroupsRequest()
				r.Groups = []string{"simple"}
				return req(r).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode
			}
			if code := del(); code != 0 {
				t.Errorf("DeleteGroups after OffsetDelete: %v, want success", kerr.ErrorForCode(code))
			}
			if got := listed(); len(got) != 0 {
				t.Errorf("ListGroups after DeleteGroups: %q, want none", got)
			}
			if code := del(); code != kerr.GroupIDNotFound.Code {
				t.Errorf("DeleteGroups again: %v, want GROUP_ID_NOT_FOUND", kerr.ErrorForCode(code))
			}
			// A consumer can still use the name.
			m, err := kgo.NewClient(kgo.SeedBrokers(srv.addr), kgo.ConsumerGroup("simple"), kgo.ConsumeTopics("sg"),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			n := 0
			for n < 2 && ctx.Err() == nil {
				fs := m.PollFetches(ctx)
				if err := fs.Err0(); err != nil {
					t.Fatal(err)
				}
				n += fs.NumRecords()
			}
		})
	}
}
