package fetch

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/segfs/segfs/logstore/record"
)

// min_bytes holds the answer back while less is available (the long poll
// is woken by each append, reads again and goes back to waiting), answers
// the moment enough has arrived, and at max_wait answers with what there
// is, data included.
func TestFetchMinBytes(t *testing.T) {
	ts := startServer(t, Config{})
	createTopic(t, ts, "t", 1)
	c := dial(t, ts.addr)
	prod := dial(t, ts.addr)
	prod.produce(9, "t", 0, produceBatch(t, "small"))

	corr := c.send(fetchReq(12, "t", 0, 0, 60000, 10000, 1<<20, 1<<20))
	// Another small append wakes the poll, which must go back to waiting.
	prod.produce(9, "t", 0, produceBatch(t, "small 2"))
	c.conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	var one [1]byte
	if n, err := c.conn.Read(one[:]); n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("fetch answered with less than min_bytes, long before max_wait (read %d, %v)", n, err)
	}
	big := strings.Repeat("B", 12000)
	prod.produce(9, "t", 0, produceBatch(t, big))
	frame, err := c.readFrame()
	if err != nil {
		t.Fatal(err)
	}
	resp := decodeResponse(t, frame, corr, &kmsg.FetchResponse{Version: 12}).(*kmsg.FetchResponse)
	if got := values(t, resp.Topics[0].Partitions[0].RecordBatches, 0); !slices.Equal(got, []string{"small", "small 2", big}) {
		t.Fatalf("min_bytes fetch returned %d values", len(got))
	}

	// Not enough ever arrives: max_wait ends the poll with what there is.
	start := time.Now()
	resp = c.roundTrip(fetchReq(12, "t", 0, 1, 300, 1<<20, 1<<20, 1<<20)).(*kmsg.FetchResponse)
	if el := time.Since(start); el < 250*time.Millisecond {
		t.Errorf("fetch below min_bytes answered after %v, before max_wait 300ms", el)
	}
	if got := values(t, resp.Topics[0].Partitions[0].RecordBatches, 1); !slices.Equal(got, []string{"small 2", big}) {
		t.Fatalf("max_wait answer returned %d values, want the 2 available", len(got))
	}
}

// A fetch spanning several segments returns every batch, in order, from
// the batch holding the fetch offset, and the record bytes still all go by
// sendfile.
func TestFetchAcrossSegments(t *testing.T) {
	ts := startServer(t, Config{})
	if _, err := ts.store.CreateTopic("seg", 1, map[string]string{"segment.bytes": "4096"}); err != nil {
		t.Fatal(err)
	}
	c := dial(t, ts.addr)
	var want []string
	for i := range 30 {
		v := strings.Repeat(string(rune('a'+i%26)), 900)
		want = append(want, v)
		if sp := c.produce(9, "seg", 0, produceBatch(t, v)); sp.ErrorCode != 0 {
			t.Fatalf("produce %d: error %d", i, sp.ErrorCode)
		}
	}
	p, _ := ts.store.Partition("seg", 0)
	logs := 0
	for _, f := range p.SegmentFiles() {
		if strings.HasSuffix(f.Name, ".log") {
			logs++
		}
	}
	if n := logs; n < 5 {
		t.Fatalf("only %d segments; the test needs several", n)
	}
	for _, from := range []int64{0, 7, 29} {
		before := ts.srv.Stats()
		resp := c.roundTrip(fetchReq(12, "seg", 0, from, 0, 0, 1<<20, 1<<20)).(*kmsg.FetchResponse)
		after := ts.srv.Stats()
		recs := resp.Topics[0].Partitions[0].RecordBatches
		if got := values(t, recs, from); !slices.Equal(got, want[from:]) {
			t.Fatalf("from %d: %d values, want %d", from, len(got), len(want)-int(from))
		}
		if bo := batchOffsets(recs); len(bo) != 30-int(from) || bo[0][0] != from {
			t.Fatalf("from %d: batches %v", from, bo)
		}
		if sent := after.SendfileBytes - before.SendfileBytes; sent != int64(len(recs)) {
			t.Fatalf("from %d: sendfile carried %d of %d record bytes", from, sent, len(recs))
		}
	}
}

// Produce validation as Kafka's leader does it, seen on the wire: message
// too large, wrong magic, record count that disagrees with the last offset
// delta, non-zero base offset, keyless records on a compacted topic.
func TestProduceValidationCodes(t *testing.T) {
	ts := startServer(t, Config{})
	if _, err := ts.store.CreateTopic("small", 1, map[string]string{"max.message.bytes": "1000"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.store.CreateTopic("compact", 1, map[string]string{"cleanup.policy": "compact"}); err != nil {
		t.Fatal(err)
	}
	createTopic(t, ts, "t", 1)
	c := dial(t, ts.addr)
	recrc := func(b []byte) []byte {
		binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
		return b
	}
	good := func() []byte { return produceBatch(t, "x", "y") }
	magic1 := good()
	magic1[16] = 1
	count := good()
	binary.BigEndian.PutUint32(count[57:], 3) // 2 records, last offset delta 1
	recrc(count)
	base := good()
	binary.BigEndian.PutUint64(base[0:], 5) // outside the CRC
	cases := []struct {
		name, topic string
		batch       []byte
		want        *kerr.Error
	}{
		{"over max.message.bytes", "small", produceBatch(t, strings.Repeat("m", 2000)), kerr.MessageTooLarge},
		{"magic 1", "t", magic1, kerr.CorruptMessage},
		{"record count vs last offset delta", "t", count, kerr.InvalidRecord},
		{"base offset not 0", "t", base, kerr.InvalidRecord},
		{"no key on a compacted topic", "compact", good(), kerr.InvalidRecord},
	}
	for _, tc := range cases {
		if sp := c.produce(9, tc.topic, 0, tc.batch); sp.ErrorCode != tc.want.Code {
			t.Errorf("%s: error %d (%v), want %d (%s)", tc.name, sp.ErrorCode, kerr.ErrorForCode(sp.ErrorCode), tc.want.Code, tc.want.Message)
		}
	}
	for _, topic := range []string{"small", "t", "compact"} {
		if p, _ := ts.store.Partition(topic, 0); p.LogEndOffset() != 0 {
			t.Errorf("%s: a refused batch was stored (log end %d)", topic, p.LogEndOffset())
		}
	}
	// The same partitions accept valid batches.
	if sp := c.produce(9, "small", 0, produceBatch(t, "fits")); sp.ErrorCode != 0 || sp.BaseOffset != 0 {
		t.Fatalf("valid batch refused: %+v", sp)
	}
}

// acks 1 and -1 answer after the append; with the topic's flush.messages=1
// the batch is also flushed (the recovery point covers it) by the time the
// answer arrives.
func TestProduceAcksAndFlush(t *testing.T) {
	ts := startServer(t, Config{})
	if _, err := ts.store.CreateTopic("synced", 1, map[string]string{"flush.messages": "1"}); err != nil {
		t.Fatal(err)
	}
	c := dial(t, ts.addr)
	p, _ := ts.store.Partition("synced", 0)
	for i, acks := range []int16{1, -1} {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = 9, acks, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "synced"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = produceBatch(t, "r")
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		sp := c.roundTrip(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if sp.ErrorCode != 0 || sp.BaseOffset != int64(i) {
			t.Fatalf("acks=%d: %+v", acks, sp)
		}
		st, err := p.Status()
		if err != nil {
			t.Fatal(err)
		}
		if rp := st.RecoveryPoint; rp != int64(i+1) {
			t.Fatalf("acks=%d on a flush.messages=1 topic: recovery point %d at the answer, want %d", acks, rp, i+1)
		}
	}
}

// An idempotent producer on the wire: a retried batch is answered with its
// original offsets and written once; a sequence gap is refused with
// OUT_OF_ORDER_SEQUENCE_NUMBER; an older epoch with INVALID_PRODUCER_EPOCH.
func TestProduceIdempotentOnTheWire(t *testing.T) {
	ts := startServer(t, Config{})
	createTopic(t, ts, "idem", 1)
	c := dial(t, ts.addr)
	ipr := c.roundTrip(kmsg.NewPtrInitProducerIDRequest()).(*kmsg.InitProducerIDResponse)
	if ipr.ErrorCode != 0 {
		t.Fatal(ipr.ErrorCode)
	}
	batch := func(epoch int16, seq int32, vals ...string) []byte {
		var bl record.Builder
		spec := record.DefaultSpec()
		spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence = ipr.ProducerID, epoch, seq
		bl.Reset(spec)
		for _, v := range vals {
			bl.Add(time.Now().UnixMilli(), nil, []byte(v), nil)
		}
		b, err := bl.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	first := batch(0, 0, "a", "b")
	if sp := c.produce(9, "idem", 0, slices.Clone(first)); sp.ErrorCode != 0 || sp.BaseOffset != 0 {
		t.Fatalf("first: %+v", sp)
	}
	if sp := c.produce(9, "idem", 0, batch(0, 2, "c")); sp.ErrorCode != 0 || sp.BaseOffset != 2 {
		t.Fatalf("second: %+v", sp)
	}
	if sp := c.produce(9, "idem", 0, slices.Clone(first)); sp.ErrorCode != 0 || sp.BaseOffset != 0 {
		t.Fatalf("retry of the first batch: %+v, want success at its original offset 0", sp)
	}
	if sp := c.produce(9, "idem", 0, batch(0, 9, "gap")); sp.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("sequence gap: error %d, want 45", sp.ErrorCode)
	}
	if sp := c.produce(9, "idem", 0, batch(1, 0, "new epoch")); sp.ErrorCode != 0 || sp.BaseOffset != 3 {
		t.Fatalf("new epoch: %+v", sp)
	}
	if sp := c.produce(9, "idem", 0, batch(0, 3, "fenced")); sp.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("old epoch: error %d, want 47", sp.ErrorCode)
	}
	// A newer epoch must start at sequence 0, as in Kafka (no test sent
	// one that did not); nothing is written, and sequence 0 then is.
	if sp := c.produce(9, "idem", 0, batch(2, 5, "mid-sequence")); sp.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("new epoch at sequence 5: error %d, want 45", sp.ErrorCode)
	}
	if sp := c.produce(9, "idem", 0, batch(2, 0, "epoch 2")); sp.ErrorCode != 0 || sp.BaseOffset != 4 {
		t.Fatalf("new epoch at sequence 0: %+v", sp)
	}
	resp := c.roundTrip(fetchReq(12, "idem", 0, 0, 0, 0, 1<<20, 1<<20)).(*kmsg.FetchResponse)
	if got := values(t, resp.Topics[0].Partitions[0].RecordBatches, 0); !slices.Equal(got, []string{"a", "b", "c", "new epoch", "epoch 2"}) {
		t.Fatalf("log holds %q", got)
	}
}

// Sequences wrap from 2^31-1 to 0, as Kafka's do (DefaultRecordBatch.
// incrementSequence): after a batch whose records run past 2^31-1 the next
// sequence is 1, a retry of it is a duplicate at its offsets, and a gap
// after it is out of order. No test wrapped.
func TestProduceSequenceWraps(t *testing.T) {
	ts := startServer(t, Config{})
	createTopic(t, ts, "wrap", 1)
	c := dial(t, ts.addr)
	ipr := c.roundTrip(kmsg.NewPtrInitProducerIDRequest()).(*kmsg.InitProducerIDResponse)
	if ipr.ErrorCode != 0 {
		t.Fatal(ipr.ErrorCode)
	}
	batch := func(seq int32, vals ...string) []byte {
		var bl record.Builder
		spec := record.DefaultSpec()
		spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence = ipr.ProducerID, 0, seq
		bl.Reset(spec)
		for _, v := range vals {
			bl.Add(time.Now().UnixMilli(), nil, []byte(v), nil)
		}
		b, err := bl.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// The producer's first batch: any sequence starts it.
	if sp := c.produce(9, "wrap", 0, batch(math.MaxInt32-3, "a", "b")); sp.ErrorCode != 0 || sp.BaseOffset != 0 {
		t.Fatalf("first batch: %+v", sp)
	}
	wrapping := batch(math.MaxInt32-1, "c", "d", "e") // 2^31-2, 2^31-1, 0
	if sp := c.produce(9, "wrap", 0, slices.Clone(wrapping)); sp.ErrorCode != 0 || sp.BaseOffset != 2 {
		t.Fatalf("the batch that wraps: %+v", sp)
	}
	if sp := c.produce(9, "wrap", 0, batch(1, "f")); sp.ErrorCode != 0 || sp.BaseOffset != 5 {
		t.Fatalf("sequence 1 after the wrap: %+v", sp)
	}
	if sp := c.produce(9, "wrap", 0, slices.Clone(wrapping)); sp.ErrorCode != 0 || sp.BaseOffset != 2 {
		t.Fatalf("a retry of the batch that wrapped: %+v, want a duplicate at offset 2", sp)
	}
	if sp := c.produce(9, "wrap", 0, batch(3, "gap")); sp.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("sequence 3 after 1: error %d, want 45", sp.ErrorCode)
	}
	resp := c.roundTrip(fetchReq(12, "wrap", 0, 0, 0, 0, 1<<20, 1<<20)).(*kmsg.FetchResponse)
	if got := values(t, resp.Topics[0].Partitions[0].RecordBatches, 0); !slices.Equal(got, []string{"a", "b", "c", "d", "e", "f"}) {
		t.Fatalf("log holds %q", got)
	}
}

// Produce v3-v6 cannot carry zstd (Kafka's ProduceRequest.validateRecords:
// UNSUPPORTED_COMPRESSION_TYPE), and nothing is written; v7 takes it.
func TestProduceZstdNeedsV7(t *testing.T) {
	ts := startServer(t, Config{})
	createTopic(t, ts, "t", 1)
	c := dial(t, ts.addr)
	var bl record.Builder
	spec := record.DefaultSpec()
	spec.Codec = record.CodecZstd
	bl.Reset(spec)
	bl.Add(time.Now().UnixMilli(), nil, []byte(strings.Repeat("z", 100)), nil)
	batch, err := bl.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	for v := int16(3); v <= 6; v++ {
		sp := c.produce(v, "t", 0, slices.Clone(batch))
		if sp.ErrorCode != kerr.UnsupportedCompressionType.Code || sp.BaseOffset != -1 {
			t.Errorf("zstd at produce v%d: %v, base offset %d; want UNSUPPORTED_COMPRESSION_TYPE, -1", v, kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
		}
	}
	if p, _ := ts.store.Partition("t", 0); p.LogEndOffset() != 0 {
		t.Fatalf("a refused zstd batch was stored (log end %d)", p.LogEndOffset())
	}
	if sp := c.produce(7, "t", 0, slices.Clone(batch)); sp.ErrorCode != 0 || sp.BaseOffset != 0 {
		t.Fatalf("zstd at produce v7: %v, base offset %d", kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
	}
}

// Committed metadata is capped at offset.metadata.max.bytes (4096, Kafka's
// default): one byte more is OFFSET_METADATA_TOO_LARGE and the offset
// committed before stays.
func TestOffsetCommitMetadataTooLarge(t *testing.T) {
	ts := startServer(t, Config{})
	createTopic(t, ts, "t", 1)
	c := dial(t, ts.addr)
	commit := func(off int64, meta string) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.Generation = 8, "g", -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset, rp.Metadata = off, kmsg.StringPtr(meta)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return c.roundTrip(req).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	if code := commit(5, strings.Repeat("m", 4096)); code != 0 {
		t.Fatalf("4096 bytes of metadata: %v", kerr.ErrorForCode(code))
	}
	if code := commit(6, strings.Repeat("m", 4097)); code != kerr.OffsetMetadataTooLarge.Code {
		t.Fatalf("4097 bytes of metadata: %v, want OFFSET_METADATA_TOO_LARGE", kerr.ErrorForCode(code))
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.Group = 7, "g"
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = "t", []int32{0}
	req.Topics = append(req.Topics, rt)
	p := c.roundTrip(req).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.Offset != 5 || p.Metadata == nil || len(*p.Metadata) != 4096 {
		t.Fatalf("offset after the refused commit: %d (error %d), want 5 with its metadata", p.Offset, p.ErrorCode)
	}
}

// Metadata v12 by a topic ID nobody has: UNKNOWN_TOPIC_ID with the ID and a
// null name, as Kafka answers; a known ID in the same request is served.
func TestMetadataUnknownTopicID(t *testing.T) {
	ts := startServer(t, Config{AutoCreateTopics: true})
	createTopic(t, ts, "a", 1)
	c := dial(t, ts.addr)
	a, _ := ts.store.Topic("a")
	unknown := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	req := kmsg.NewPtrMetadataRequest()
	req.Version, req.AllowAutoTopicCreation = 12, true
	for _, id := range [][16]byte{unknown, a.ID()} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.TopicID = id
		req.Topics = append(req.Topics, rt)
	}
	r := c.roundTrip(req).(*kmsg.MetadataResponse)
	if len(r.Topics) != 2 {
		t.Fatalf("%d topics, want 2", len(r.Topics))
	}
	if u := r.Topics[0]; u.ErrorCode != kerr.UnknownTopicID.Code || u.TopicID != unknown || u.Topic != nil {
		t.Errorf("unknown id: %v id %x name %v; want UNKNOWN_TOPIC_ID, the id, no name", kerr.ErrorForCode(u.ErrorCode), u.TopicID, u.Topic)
	}
	if k := r.Topics[1]; k.ErrorCode != 0 || k.Topic == nil || *k.Topic != "a" || len(k.Partitions) != 1 {
		t.Errorf("known id: %+v", k)
	}
	if n := len(ts.store.Topics()); n != 1 {
		t.Errorf("%d topics after a lookup by id, want 1 (nothing created)", n)
	}
}

// Fetch answers throttle 0 (segfs has no quotas) and, v11+, no preferred
// read replica (-1): consumers keep fetching from the leader.
func TestFetchNoThrottleNoReadReplica(t *testing.T) {
	ts := startServer(t, Config{})
	createTopic(t, ts, "t", 1)
	c := dial(t, ts.addr)
	c.produce(9, "t", 0, produceBatch(t, "a"))
	for _, v := range []int16{4, 10, 11, 12} {
		resp := c.roundTrip(fetchReq(v, "t", 0, 0, 0, 0, 1<<20, 1<<20)).(*kmsg.FetchResponse)
		if resp.ThrottleMillis != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("v%d: throttle %d, %d topics", v, resp.ThrottleMillis, len(resp.Topics))
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.PreferredReadReplica != -1 || len(batchOffsets(p.RecordBatches)) != 1 {
			t.Errorf("v%d: error %d, preferred read replica %d, %d batches; want 0, -1, 1", v, p.ErrorCode, p.PreferredReadReplica, len(batchOffsets(p.RecordBatches)))
		}
	}
}

// A client may not produce a control batch: INVALID_RECORD, as Kafka's
// LogValidator answers a client's (control markers are the coordinator's,
// through WriteTxnMarkers), and nothing is written.
func TestProduceControlBatchRefused(t *testing.T) {
	ts := startServer(t, Config{})
	createTopic(t, ts, "t", 1)
	c := dial(t, ts.addr)
	var bl record.Builder
	spec := record.DefaultSpec()
	spec.Control = true
	bl.Reset(spec)
	bl.Add(time.Now().UnixMilli(), []byte{0, 0, 0, 1}, []byte{0, 0, 0, 0, 0, 0}, nil)
	batch, err := bl.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	if sp := c.produce(9, "t", 0, batch); sp.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("control batch: %v, want INVALID_RECORD", kerr.ErrorForCode(sp.ErrorCode))
	}
	if p, _ := ts.store.Partition("t", 0); p.LogEndOffset() != 0 {
		t.Fatalf("a produced control batch was stored (log end %d)", p.LogEndOffset())
	}
}
