package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKafkaManualAssignmentCheckOrder: a manual replica assignment that
// breaks two rules at once (an unregistered broker and a broker named
// twice) is refused with the error Kafka's controller gives, which checks
// the brokers in ascending id order
// (ReplicationControlManager.validateManualPartitionAssignment), in
// CreateTopics, CreatePartitions and AlterPartitionReassignments alike:
// [5, 0, 0] names broker 0 twice before broker 5 is reached, [0, 0, -1]
// names the unregistered broker -1 first. segfs walked the list in request
// order and answered the other error for both.
func TestKafkaManualAssignmentCheckOrder(t *testing.T) {
	srv := kafkaServe(t, "")
	cl := kafkaClient(t, srv.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const twice, unregistered = "includes the broker 0 more than once", "includes broker -1, but no such broker is registered"
	cases := []struct {
		replicas []int32
		want     string
	}{{[]int32{5, 0, 0}, twice}, {[]int32{0, 0, -1}, unregistered}}
	check := func(what string, code int16, msg *string, want string) {
		t.Helper()
		if code != kerr.InvalidReplicaAssignment.Code || msg == nil || !strings.Contains(*msg, want) {
			got := "<nil>"
			if msg != nil {
				got = *msg
			}
			t.Errorf("%s: %v %q, want INVALID_REPLICA_ASSIGNMENT %q", what, kerr.ErrorForCode(code), got, want)
		}
	}

	for _, tc := range cases {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 10000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "manual", -1, -1
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = 0, tc.replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		check("CreateTopics "+fmt.Sprint(tc.replicas), resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, tc.want)
	}

	kafkaProduce(t, kafkaClient(t, srv.addr, kgo.AllowAutoTopicCreation()), "grow", 0, "x") // auto-created, one partition
	for _, tc := range cases {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.TimeoutMillis = 10000
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = "grow", 2
		a := kmsg.NewCreatePartitionsRequestTopicAssignment()
		a.Replicas = tc.replicas
		rt.Assignment = append(rt.Assignment, a)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		check("CreatePartitions "+fmt.Sprint(tc.replicas), resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, tc.want)

		rreq := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		rreq.TimeoutMillis = 10000
		rrt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		rrt.Topic = "grow"
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = 0, tc.replicas
		rrt.Partitions = append(rrt.Partitions, rp)
		rreq.Topics = append(rreq.Topics, rrt)
		rresp, err := rreq.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if rresp.ErrorCode != 0 || len(rresp.Topics) != 1 {
			t.Fatalf("AlterPartitionReassignments: %+v", rresp)
		}
		p := rresp.Topics[0].Partitions[0]
		check("AlterPartitionReassignments "+fmt.Sprint(tc.replicas), p.ErrorCode, p.ErrorMessage, tc.want)
	}
}
