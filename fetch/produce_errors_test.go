package fetch

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/segfs/segfs/logstore/record"
)

// keyedBatch builds a batch of records whose key is keys[i] ("" for none).
func keyedBatch(t testing.TB, keys ...string) []byte {
	t.Helper()
	var bl record.Builder
	bl.Reset(record.DefaultSpec())
	now := time.Now().UnixMilli()
	for i, k := range keys {
		var key []byte
		if k != "" {
			key = []byte(k)
		}
		bl.Add(now, key, []byte(fmt.Sprint("v", i)), nil)
	}
	b, err := bl.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// kgoProduce sends one raw Produce of batch to topic/0 at version through
// a kgo client (client.Request) and returns the partition's answer.
func kgoProduce(t *testing.T, addr string, version int16, topic string, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(0, version)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MaxVersions(vs))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := cl.Request(ctx, req)
	if err != nil {
		t.Fatalf("produce v%d to %s: %v", version, topic, err)
	}
	pr := resp.(*kmsg.ProduceResponse)
	if pr.Version != version || len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		t.Fatalf("produce v%d response: %+v", version, pr)
	}
	return pr.Topics[0].Partitions[0]
}

// Records without a key on a compacted topic: from Produce v8 every one of
// them is listed in ErrorRecords with its index and Kafka's message, and
// the ErrorMessage is Kafka's summary (LogValidator.processRecordErrors).
// Every other produce error carries no message, as in Kafka
// (ReplicaManager's hasCustomErrorMessage is false for them). segfs sent
// no ErrorRecords nor ErrorMessage.
func TestProduceRecordErrors(t *testing.T) {
	ts := startServer(t, Config{})
	if _, err := ts.store.CreateTopic("compact", 1, map[string]string{"cleanup.policy": "compact"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.store.CreateTopic("small", 1, map[string]string{"max.message.bytes": "1000"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.store.CreateTopic("__consumer_offsets", 1, nil); err != nil {
		t.Fatal(err)
	}
	createTopic(t, ts, "t", 1)
	const keyMsg = "Compacted topic cannot accept message without key in topic partition compact-0."
	wantRecs := []int32{1, 3, 4, 5}
	wantMsg := "One or more records have been rejected due to 4 record errors in total, and only showing the first three errors at most: [" +
		"RecordError(batchIndex=1, message='" + keyMsg + "'), " +
		"RecordError(batchIndex=3, message='" + keyMsg + "'), " +
		"RecordError(batchIndex=4, message='" + keyMsg + "')]"
	for _, v := range []int16{7, 8, 9, 12} {
		sp := kgoProduce(t, ts.addr, v, "compact", keyedBatch(t, "k0", "", "k2", "", "", ""))
		if sp.ErrorCode != kerr.InvalidRecord.Code {
			t.Fatalf("v%d keyless records: error %v, want INVALID_RECORD", v, kerr.ErrorForCode(sp.ErrorCode))
		}
		if v < 8 {
			// The fields are not in the v7 response.
			if sp.ErrorMessage != nil || sp.ErrorRecords != nil {
				t.Errorf("v%d: message %v, records %v", v, sp.ErrorMessage, sp.ErrorRecords)
			}
			continue
		}
		if sp.ErrorMessage == nil || *sp.ErrorMessage != wantMsg {
			t.Errorf("v%d error message:\n got %v\nwant %q", v, deref(sp.ErrorMessage), wantMsg)
		}
		var got []int32
		for _, r := range sp.ErrorRecords {
			got = append(got, r.RelativeOffset)
			if r.ErrorMessage == nil || *r.ErrorMessage != keyMsg {
				t.Errorf("v%d record %d: message %v, want %q", v, r.RelativeOffset, deref(r.ErrorMessage), keyMsg)
			}
		}
		if !slices.Equal(got, wantRecs) {
			t.Errorf("v%d record errors at %v, want %v", v, got, wantRecs)
		}
	}
	if p, _ := ts.store.Partition("compact", 0); p.LogEndOffset() != 0 {
		t.Fatalf("the refused batch was stored")
	}
	if sp := kgoProduce(t, ts.addr, 12, "compact", keyedBatch(t, "a", "b")); sp.ErrorCode != 0 || sp.ErrorMessage != nil || sp.ErrorRecords != nil {
		t.Fatalf("keyed batch: %+v", sp)
	}

	// Errors Kafka answers without a message.
	base := produceBatch(t, "x")
	base[7] = 5 // base offset 5: outside the CRC, a batch-level INVALID_RECORD
	crc := produceBatch(t, "y")
	crc[len(crc)-1] ^= 0xff
	for _, tc := range []struct {
		name, topic string
		batch       []byte
		want        *kerr.Error
	}{
		{"over max.message.bytes", "small", produceBatch(t, strings.Repeat("m", 2000)), kerr.MessageTooLarge},
		{"bad CRC", "t", crc, kerr.CorruptMessage},
		{"base offset not 0", "t", base, kerr.InvalidRecord},
		{"unknown topic", "nope", produceBatch(t, "z"), kerr.UnknownTopicOrPartition},
		{"internal topic", "__consumer_offsets", produceBatch(t, "z"), kerr.InvalidTopicException},
	} {
		sp := kgoProduce(t, ts.addr, 12, tc.topic, tc.batch)
		if sp.ErrorCode != tc.want.Code || sp.ErrorMessage != nil || sp.ErrorRecords != nil {
			t.Errorf("%s: error %v, message %v, records %v; want %s with no message, as Kafka", tc.name,
				kerr.ErrorForCode(sp.ErrorCode), deref(sp.ErrorMessage), sp.ErrorRecords, tc.want.Message)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%q", *s)
}

// TestProduceMinInsyncReplicas: a topic whose min.insync.replicas exceeds
// the one in-sync replica a single node has refuses acks=all produces
// with NOT_ENOUGH_REPLICAS and writes nothing, as Kafka's leader does
// (Partition.appendRecordsToLeader); acks=1 is appended. segfs refused the
// setting itself as an unknown key, so such a topic could not be made.
func TestProduceMinInsyncReplicas(t *testing.T) {
	ts := startServer(t, Config{})
	tp, err := ts.store.CreateTopic("isr", 1, map[string]string{"min.insync.replicas": "2"})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, ts.addr)
	sp := c.produce(9, "isr", 0, produceBatch(t, "a"))
	if sp.ErrorCode != kerr.NotEnoughReplicas.Code || sp.LogStartOffset != 0 {
		t.Errorf("acks=all with min.insync.replicas=2: %v, log start %d; want NOT_ENOUGH_REPLICAS, 0",
			kerr.ErrorForCode(sp.ErrorCode), sp.LogStartOffset)
	}
	p, _ := tp.Partition(0)
	if end := p.LogEndOffset(); end != 0 {
		t.Errorf("log end %d after a refused produce", end)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "isr"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = produceBatch(t, "b")
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if sp := c.roundTrip(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]; sp.ErrorCode != 0 || sp.BaseOffset != 0 {
		t.Errorf("acks=1: %v at %d", kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
	}
	// Back to 1: acks=all is appended again.
	if err := tp.SetConfig(map[string]string{"min.insync.replicas": "1"}); err != nil {
		t.Fatal(err)
	}
	if sp := c.produce(9, "isr", 0, produceBatch(t, "c")); sp.ErrorCode != 0 || sp.BaseOffset != 1 {
		t.Errorf("acks=all, min.insync.replicas=1: %v at %d", kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
	}
}

// TestProduceInvalidAcksOrder: acks other than 0, 1, -1 are checked where
// Kafka 4 checks them, in ReplicaManager.appendRecords, which
// handleProduceRequest calls only with the partitions that exist and whose
// record set passes ProduceRequest.validateRecords. So an unknown topic or
// partition answers UNKNOWN_TOPIC_OR_PARTITION (and with auto-creation on
// is not created), a record set of two batches INVALID_RECORD, a zstd one
// below v7 UNSUPPORTED_COMPRESSION_TYPE, a transactional one its
// (verification) error; the acks come before the internal-topic and
// min.insync.replicas checks and the append. segfs answered
// INVALID_REQUIRED_ACKS for all of them.
func TestProduceInvalidAcksOrder(t *testing.T) {
	ts := startServer(t, Config{AutoCreateTopics: true})
	createTopic(t, ts, "t", 1)
	if _, err := ts.store.CreateTopic("isr", 1, map[string]string{"min.insync.replicas": "2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.store.CreateTopic("__consumer_offsets", 1, nil); err != nil {
		t.Fatal(err)
	}
	c := dial(t, ts.addr)
	good := produceBatch(t, "x")
	two := append(slices.Clone(good), good...)
	zstd := slices.Clone(good)
	zstd[batchAttributesPos+1] |= codecZstd
	txn := slices.Clone(good)
	txn[batchAttributesPos+1] |= attrTransactional
	cases := []struct {
		name    string
		version int16
		topic   string
		part    int32
		batch   []byte
		want    *kerr.Error
	}{
		{"unknown topic (auto-creation on)", 9, "ghost", 0, good, kerr.UnknownTopicOrPartition},
		{"unknown partition", 9, "t", 5, good, kerr.UnknownTopicOrPartition},
		{"unknown topic, v3", 3, "ghost", 0, good, kerr.UnknownTopicOrPartition},
		{"unknown topic, v12", 12, "ghost", 0, good, kerr.UnknownTopicOrPartition},
		{"short record set", 9, "t", 0, good[:30], kerr.CorruptMessage},
		{"two batches", 9, "t", 0, two, kerr.InvalidRecord},
		{"zstd at v5", 5, "t", 0, zstd, kerr.UnsupportedCompressionType},
		{"transactional", 9, "t", 0, txn, kerr.InvalidTxnState},
		{"existing partition", 9, "t", 0, good, kerr.InvalidRequiredAcks},
		{"existing partition, v3", 3, "t", 0, good, kerr.InvalidRequiredAcks},
		{"min.insync.replicas=2", 9, "isr", 0, good, kerr.InvalidRequiredAcks},
		{"internal topic", 9, "__consumer_offsets", 0, good, kerr.InvalidRequiredAcks},
	}
	for _, acks := range []int16{5, 2, -2} {
		for _, tc := range cases {
			req := kmsg.NewPtrProduceRequest()
			req.Version, req.Acks, req.TimeoutMillis = tc.version, acks, 5000
			req.TransactionID = kmsg.StringPtr("tx") // else the transactional batch is refused first
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = tc.topic
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = tc.part, slices.Clone(tc.batch)
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			sp := c.roundTrip(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
			if sp.ErrorCode != tc.want.Code || sp.BaseOffset != -1 {
				t.Errorf("acks=%d, %s: %v at %d, want %s", acks, tc.name, kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset, tc.want.Message)
			}
		}
	}
	if _, err := ts.store.Topic("ghost"); err == nil {
		t.Error("a produce refused for its acks auto-created its topic")
	}
	for _, topic := range []string{"t", "isr", "__consumer_offsets"} {
		if p, _ := ts.store.Partition(topic, 0); p.LogEndOffset() != 0 {
			t.Errorf("%s/0: log end %d after refused produces", topic, p.LogEndOffset())
		}
	}
}

// TestProduceTransactionalWithoutID: a Produce holding a transactional
// batch but no transactional id is refused whole, every partition
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED with no message and nothing
// appended, whatever else is wrong with it (an unknown topic, invalid
// acks), as Kafka's handleProduceRequest refuses it before anything else;
// with acks=0 the connection is closed. With a transactional id the
// partitions are answered one by one as before. segfs answered an unknown
// topic UNKNOWN_TOPIC_OR_PARTITION and the batch INVALID_TXN_STATE.
func TestProduceTransactionalWithoutID(t *testing.T) {
	ts := startServer(t, Config{AutoCreateTopics: true})
	createTopic(t, ts, "t", 1)
	c := dial(t, ts.addr)
	txn := produceBatch(t, "x")
	txn[batchAttributesPos+1] |= attrTransactional
	mk := func(version, acks int16, id *string) *kmsg.ProduceRequest {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis, req.TransactionID = version, acks, 5000, id
		for _, tp := range []struct {
			topic string
			batch []byte
		}{{"ghost", produceBatch(t, "g")}, {"t", txn}, {"t", produceBatch(t, "plain")}} {
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = tp.topic
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Records = slices.Clone(tp.batch)
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		return req
	}
	for _, v := range []int16{3, 9, 12} {
		for _, acks := range []int16{-1, 1, 5} {
			resp := c.roundTrip(mk(v, acks, nil)).(*kmsg.ProduceResponse)
			n := 0
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					n++
					if rp.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code || rp.BaseOffset != -1 || rp.ErrorMessage != nil {
						t.Errorf("v%d acks=%d %s/%d: %v at %d, %v; want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", v, acks, rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode), rp.BaseOffset, rp.ErrorMessage)
					}
				}
			}
			if n != 3 {
				t.Fatalf("v%d: %d partitions answered: %+v", v, n, resp)
			}
		}
	}
	if _, err := ts.store.Topic("ghost"); err == nil {
		t.Error("a refused request auto-created a topic")
	}
	if p, _ := ts.store.Partition("t", 0); p.LogEndOffset() != 0 {
		t.Errorf("t/0: log end %d after refused requests", p.LogEndOffset())
	}
	// acks=0: no answer can carry the error; the connection is closed.
	bad := dial(t, ts.addr)
	bad.send(mk(9, 0, nil))
	bad.send(kmsg.NewPtrApiVersionsRequest())
	if _, err := bad.readFrame(); err == nil {
		t.Error("acks=0 refused produce: the connection stayed open")
	}
	// With a transactional id: each partition on its own.
	resp := c.roundTrip(mk(9, -1, kmsg.StringPtr("tx"))).(*kmsg.ProduceResponse)
	want := []*kerr.Error{nil, kerr.InvalidTxnState, nil} // ghost is auto-created
	for i, rt := range resp.Topics {
		wantCode(t, rt.Topic, rt.Partitions[0].ErrorCode, want[i])
	}
}
