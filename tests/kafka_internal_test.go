package tests

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKafkaProduceInternalTopic: Kafka's internal topics take no client's
// records, whether the topic exists or not: a Produce to
// __consumer_offsets or __transaction_state answers INVALID_TOPIC_EXCEPTION
// (Kafka's ReplicaManager), to franz-go and to kcat, and nothing is
// appended; Metadata flags them internal. (They are made here with
// CreateTopics: auto-creation does not make them.) Only Kafka's own admin client id
// may write there. Committed offsets, which segfs keeps in a file of its
// own, still work.
func TestKafkaProduceInternalTopic(t *testing.T) {
	kafkaNeedKcat(t)
	srv := kafkaServe(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := kafkaClient(t, srv.addr, kgo.AllowAutoTopicCreation(), kgo.RecordRetries(0))

	// The topics must exist, so that the refusal is not
	// UNKNOWN_TOPIC_OR_PARTITION. Auto-creation does not make Kafka's
	// internal topics (TestKafkaAutoCreateNotInternal): CreateTopics does.
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.TimeoutMillis = 10000
	for _, name := range []string{"__consumer_offsets", "__transaction_state"} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
		ct.Topics = append(ct.Topics, rt)
	}
	cresp, err := ct.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range cresp.Topics {
		if rt.ErrorCode != 0 {
			t.Fatalf("CreateTopics %s: error %d", rt.Topic, rt.ErrorCode)
		}
	}
	md := kmsg.NewPtrMetadataRequest()
	md.AllowAutoTopicCreation = true
	for _, name := range []string{"__consumer_offsets", "__transaction_state", "plain"} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		md.Topics = append(md.Topics, rt)
	}
	mresp, err := md.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, mt := range mresp.Topics {
		if mt.ErrorCode != 0 || mt.IsInternal != (*mt.Topic != "plain") {
			t.Errorf("metadata of %s: error %d, internal %v", *mt.Topic, mt.ErrorCode, mt.IsInternal)
		}
	}

	for _, topic := range []string{"__consumer_offsets", "__transaction_state"} {
		res := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("forged")})
		if err := res.FirstErr(); !errors.Is(err, kerr.InvalidTopicException) {
			t.Errorf("franz-go produce to %s: %v, want INVALID_TOPIC_EXCEPTION", topic, err)
		}
	}
	stdout, stderr, code := kcatRun(t, srv.addr, "forged\n", "-P", "-t", "__consumer_offsets", "-p", "0")
	if code == 0 || !strings.Contains(stderr, "Invalid topic") {
		t.Errorf("kcat -P to __consumer_offsets: exit %d, want a failure naming the invalid topic\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	ends := kcat(t, srv.addr, "", "-Q", "-t", "__consumer_offsets:0:-1", "-t", "__transaction_state:0:-1")
	// kcat -Q prints "TOPIC [0] offset N" per partition.
	if strings.Count(ends, " offset 0\n") != 2 {
		t.Errorf("internal topics after the refused produces: %q, want both at offset 0", ends)
	}

	// Kafka's admin client id may append, as in Kafka.
	admin := kafkaClient(t, srv.addr, kgo.ClientID("__admin_client"))
	if offs := kafkaProduce(t, admin, "__consumer_offsets", 0, "admin"); offs[0] != 0 {
		t.Errorf("admin produce at offset %d, want 0", offs[0])
	}

	// A consumer with a group id commits as before.
	kafkaProduce(t, cl, "plain", 0, "a", "b")
	kcat(t, srv.addr, "", "-C", "-t", "plain", "-p", "0", "-o", "stored", "-e", "-q",
		"-X", "group.id=g1", "-X", "auto.offset.reset=earliest")
	oreq := kmsg.NewPtrOffsetFetchRequest()
	oreq.Group = "g1"
	ot := kmsg.NewOffsetFetchRequestTopic()
	ot.Topic, ot.Partitions = "plain", []int32{0}
	oreq.Topics = append(oreq.Topics, ot)
	oresp, err := oreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if got := oresp.Topics[0].Partitions[0].Offset; got != 2 {
		t.Errorf("group g1's committed offset: %d, want 2", got)
	}
}

// TestKafkaUnknownInternalTopicFailsFast: segfs keeps group offsets in a
// file of its own, so __consumer_offsets and __transaction_state do not
// exist unless made by hand, and are never auto-created. Metadata answered
// such a name UNKNOWN_TOPIC_OR_PARTITION, which clients retry: `kcat -P -t
// __consumer_offsets` waited librdkafka's 30 s metadata propagation time
// before failing with "Unknown topic or partition". Kafka creates its
// internal topics on the first Metadata request and then refuses a
// client's produce with INVALID_TOPIC_EXCEPTION; segfs now answers that
// error in Metadata and Produce, so kcat and franz-go fail at once on it,
// and nothing is created.
func TestKafkaUnknownInternalTopicFailsFast(t *testing.T) {
	kafkaNeedKcat(t)
	srv := kafkaServe(t, "")
	for _, topic := range []string{"__consumer_offsets", "__transaction_state"} {
		for _, args := range [][]string{{"-P", "-t", topic}, {"-P", "-t", topic, "-p", "0"}} {
			stdout, stderr, code := kcatRun(t, srv.addr, "forged\n", args...)
			if code == 0 || !strings.Contains(stderr, "Invalid topic") {
				t.Errorf("kcat %s: exit %d, want a failure on Invalid topic\nstdout: %s\nstderr: %s",
					strings.Join(args, " "), code, stdout, stderr)
			}
		}
		stdout, stderr, code := kcatRun(t, srv.addr, "", "-C", "-e", "-t", topic)
		if code == 0 || !strings.Contains(stderr, "Topic "+topic+" error: Broker: Invalid topic") {
			t.Errorf("kcat -C -t %s: exit %d, want a failure naming the topic\nstdout: %s\nstderr: %s", topic, code, stdout, stderr)
		}
	}

	cl := kafkaClient(t, srv.addr, kgo.AllowAutoTopicCreation(), kgo.RecordRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, topic := range []string{"__consumer_offsets", "__transaction_state"} {
		res := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("forged")})
		if err := res.FirstErr(); !errors.Is(err, kerr.InvalidTopicException) {
			t.Errorf("franz-go produce to %s: %v, want INVALID_TOPIC_EXCEPTION", topic, err)
		}
	}
	// Metadata says why, flags the name internal and lists no partitions.
	md := kmsg.NewPtrMetadataRequest()
	md.AllowAutoTopicCreation = true
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("__consumer_offsets")
	md.Topics = append(md.Topics, rt)
	mresp, err := md.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if mt := mresp.Topics[0]; mt.ErrorCode != kerr.InvalidTopicException.Code || !mt.IsInternal || len(mt.Partitions) != 0 {
		t.Errorf("metadata of __consumer_offsets: error %v, internal %v, %d partitions; want INVALID_TOPIC_EXCEPTION, internal, none",
			kerr.ErrorForCode(mt.ErrorCode), mt.IsInternal, len(mt.Partitions))
	}
	ents, err := os.ReadDir(srv.data)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "__") {
			t.Errorf("%s was created", e.Name())
		}
	}
}
