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

// The leadership admin calls a single-broker cluster answers with
// "nothing to do": ElectLeaders (`kafka-leader-election.sh`, kadm's
// ElectLeaders) and ListPartitionReassignments
// (`kafka-reassign-partitions.sh --list`, kadm's
// ListPartitionReassignments), sent by franz-go as an admin client does.
// They used to be unadvertised, so the client refused them before
// sending ("broker is too old") where Kafka answers.
func TestKafkaElectLeadersAndReassignments(t *testing.T) {
	srv := kafkaServe(t, "", "--partitions", "2")
	cl := kafkaClient(t, srv.addr, kgo.AllowAutoTopicCreation())
	kafkaProduce(t, cl, "orders", 1, "o1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Named partitions: every one that exists needs no election, for a
	// preferred election (v0's only kind) and an unclean one alike; an
	// unknown partition or topic is UNKNOWN_TOPIC_OR_PARTITION.
	for _, typ := range []int8{0, 1} {
		req := kmsg.NewPtrElectLeadersRequest()
		req.ElectionType = typ
		for _, tp := range []struct {
			topic string
			parts []int32
		}{{"orders", []int32{0, 1, 7}}, {"nosuch", []int32{0}}} {
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic, rt.Partitions = tp.topic, tp.parts
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("ElectLeaders type %d: %v", typ, err)
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			t.Fatalf("ElectLeaders type %d: %v", typ, err)
		}
		got := map[string][]int16{}
		for _, rt := range resp.Topics {
			for _, p := range rt.Partitions {
				got[rt.Topic] = append(got[rt.Topic], p.ErrorCode)
			}
		}
		notNeeded, unknown := kerr.ElectionNotNeeded.Code, kerr.UnknownTopicOrPartition.Code
		if len(got) != 2 || len(got["orders"]) != 3 || got["orders"][0] != notNeeded || got["orders"][1] != notNeeded ||
			got["orders"][2] != unknown || len(got["nosuch"]) != 1 || got["nosuch"][0] != unknown {
			t.Fatalf("ElectLeaders type %d: error codes %v, want orders [84 84 3] nosuch [3]", typ, got)
		}
	}
	// All partitions (null topics): Kafka lists only the elections it
	// held, none here.
	req := kmsg.NewPtrElectLeadersRequest()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ElectLeaders of every partition: %v", err)
	}
	for _, rt := range resp.Topics {
		if len(rt.Partitions) != 0 {
			t.Fatalf("ElectLeaders of every partition: %s lists %+v", rt.Topic, rt.Partitions)
		}
	}

	// No reassignment is ever in progress.
	for _, topics := range [][]kmsg.ListPartitionReassignmentsRequestTopic{nil, {{Topic: "orders", Partitions: []int32{0, 1}}}} {
		lr := kmsg.NewPtrListPartitionReassignmentsRequest()
		lr.Topics = topics
		resp, err := lr.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("ListPartitionReassignments %v: %v", topics, err)
		}
		if resp.ErrorCode != 0 || len(resp.Topics) != 0 {
			t.Fatalf("ListPartitionReassignments %v: error %d, topics %+v", topics, resp.ErrorCode, resp.Topics)
		}
	}
}

// `kafka-reassign-partitions.sh --execute` and `--cancel` on a single
// broker: moving a partition to the replica it has, node 0 (what
// `--generate` proposes), succeeds at once and nothing is left in
// progress; another broker is INVALID_REPLICA_ASSIGNMENT; cancelling is
// NO_REASSIGNMENT_IN_PROGRESS; an unknown partition or topic is
// UNKNOWN_TOPIC_OR_PARTITION. The key used to be unadvertised, so the
// client refused the call before sending ("broker is too old").
func TestKafkaAlterPartitionReassignments(t *testing.T) {
	srv := kafkaServe(t, "", "--partitions", "2")
	cl := kafkaClient(t, srv.addr, kgo.AllowAutoTopicCreation())
	kafkaProduce(t, cl, "orders", 1, "o1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = "orders"
	for _, p := range []struct {
		part     int32
		replicas []int32
	}{{0, []int32{0}}, {1, []int32{1}}, {1, nil}, {9, []int32{0}}} {
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = p.part, p.replicas
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	nosuch := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	nosuch.Topic = "nosuch"
	np := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	np.Replicas = []int32{0}
	nosuch.Partitions = append(nosuch.Partitions, np)
	req.Topics = append(req.Topics, nosuch)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("AlterPartitionReassignments: %v", err)
	}
	var got []int16
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			got = append(got, p.ErrorCode)
		}
	}
	want := []int16{0, kerr.InvalidReplicaAssignment.Code, kerr.NoReassignmentInProgress.Code,
		kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Code}
	if resp.ErrorCode != 0 || !slices.Equal(got, want) {
		t.Fatalf("AlterPartitionReassignments: error %d, partition codes %v, want %v", resp.ErrorCode, got, want)
	}

	// Nothing is left in progress, and the partition still works.
	lr := kmsg.NewPtrListPartitionReassignmentsRequest()
	lresp, err := lr.RequestWith(ctx, cl)
	if err != nil || len(lresp.Topics) != 0 {
		t.Fatalf("ListPartitionReassignments after the move: %v %+v", err, lresp)
	}
	kafkaProduce(t, cl, "orders", 0, "o2")
	if vals := recordValues(kafkaConsume(t, srv.addr, "orders", 0, 0, 1)); !slices.Equal(vals, []string{"o2"}) {
		t.Fatalf("orders/0 after the move reads %q", vals)
	}
}
