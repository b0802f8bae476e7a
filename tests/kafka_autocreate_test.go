package tests

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/segfs/segfs/logstore/record"
)

// TestKafkaAutoCreateOnMetadataOnly: as in Kafka, topics are auto-created
// by Metadata requests (allow_auto_topic_creation), never by Produce. A
// Produce straight to an unknown topic (franz-go's kmsg, at partition 3 and
// 0) answers UNKNOWN_TOPIC_OR_PARTITION and creates nothing; segfs used to
// create the topic with one partition, then refuse partition 3. kcat and
// franz-go producers, which send Metadata first, still create topics.
func TestKafkaAutoCreateOnMetadataOnly(t *testing.T) {
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
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("produce to unknown direct/%d: %v, want UNKNOWN_TOPIC_OR_PARTITION", part, kerr.ErrorForCode(code))
		}
		if _, err := os.Stat(filepath.Join(srv.data, "direct-0")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("produce to direct/%d created the topic: %v", part, err)
		}
	}

	kcat(t, srv.addr, "k1\nk2\n", "-P", "-t", "bykcat")
	kafkaProduce(t, cl, "bykgo", 0, "g1")
	for topic, want := range map[string][]string{"bykcat": {"k1", "k2"}, "bykgo": {"g1"}} {
		if got := recordValues(kafkaConsume(t, srv.addr, topic, 0, 0, len(want))); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", topic, got, want)
		}
	}
}
