package tests

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/segfs/segfs/logstore/record"
)

// TestKafkaAutoCreateOnProduce: with auto-creation on (the default, as
// issue #4 asks), a Produce straight to an unknown topic (franz-go's kmsg,
// no Metadata first) creates it if the partition asked for is one it will
// have: at partition 3 of a default of 1 it answers
// UNKNOWN_TOPIC_OR_PARTITION and creates nothing (segfs used to create the
// topic, then refuse the partition), at 0 it creates the topic and
// appends. kcat and franz-go producers, which send Metadata first, create
// topics too.
func TestKafkaAutoCreateOnProduce(t *testing.T) {
	kafkaNeedKcat(t)
	srv := kafkaServe(t, "")
	cl := kafkaClient(t, srv.addr, kgo.AllowAutoTopicCreation())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var bl record.Builder
	bl.Reset(record.DefaultSpec())
	bl.Add(time.Now().UnixMilli(), nil, []byte("x"), nil)
	batch, err := bl.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []int32{3, 0} {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "direct"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = part, batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		code := resp.Topics[0].Partitions[0].ErrorCode
		_, statErr := os.Stat(filepath.Join(srv.data, "direct-0"))
		if part == 3 {
			if code != kerr.UnknownTopicOrPartition.Code {
				t.Errorf("produce to unknown direct/3: %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(code))
			}
			if !errors.Is(statErr, os.ErrNotExist) {
				t.Fatalf("produce to direct/3, past the default partition count, created the topic: %v", statErr)
			}
			continue
		}
		if code != 0 || statErr != nil {
			t.Fatalf("produce to unknown direct/0: %v, topic directory: %v; want it created", kerr.ErrorForCode(code), statErr)
		}
	}

	kcat(t, srv.addr, "k1\nk2\n", "-P", "-t", "bykcat")
	kafkaProduce(t, cl, "bykgo", 0, "g1")
	for topic, want := range map[string][]string{"direct": {"x"}, "bykcat": {"k1", "k2"}, "bykgo": {"g1"}} {
		if got := recordValues(kafkaConsume(t, srv.addr, topic, 0, 0, len(want))); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", topic, got, want)
		}
	}
}

// TestKafkaAutoCreateNotInternal: `kcat -L -t __consumer_offsets` with
// auto-creation on (the default) created a one-partition delete-policy
// __consumer_offsets nobody can produce to (segfs keeps committed offsets
// in its own file). Kafka's internal topic names are not auto-created:
// the answer is INVALID_TOPIC_EXCEPTION, whatever auto-creation says
// (TestKafkaUnknownInternalTopicFailsFast), and nothing appears in the
// data directory. An ordinary name still is
// auto-created, and an explicit CreateTopics still creates an internal one.
func TestKafkaAutoCreateNotInternal(t *testing.T) {
	srv := kafkaServe(t, "")
	for _, name := range []string{"__consumer_offsets", "__transaction_state", "__share_group_state"} {
		out, errs, _ := kcatRun(t, srv.addr, "", "-L", "-t", name)
		if !strings.Contains(out+errs, "Broker: Invalid topic") {
			t.Errorf("kcat -L -t %s:\n%s%s\nwant Invalid topic", name, out, errs)
		}
		if _, err := os.Stat(filepath.Join(srv.data, name+"-0")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("kcat -L -t %s created the topic: %v", name, err)
		}
	}
	kcat(t, srv.addr, "", "-L", "-t", "ordinary")
	if _, err := os.Stat(filepath.Join(srv.data, "ordinary-0")); err != nil {
		t.Errorf("kcat -L -t ordinary did not auto-create it: %v", err)
	}

	cl := kafkaClient(t, srv.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "__consumer_offsets", 1, 1
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics __consumer_offsets: %v %+v", err, resp)
	}
	out := kcat(t, srv.addr, "", "-L", "-t", "__consumer_offsets")
	if !strings.Contains(out, `topic "__consumer_offsets" with 1 partitions`) {
		t.Errorf("kcat -L after CreateTopics:\n%s", out)
	}
}
