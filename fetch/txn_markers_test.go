package fetch

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/segfs/segfs/logstore"
	"github.com/segfs/segfs/logstore/record"
)

// hangingTxnDir writes a data directory whose partition txo-0 holds
// plain-a (0), then open-1 and open-2 (1, 2): a transaction of producer
// 500 at epoch 2 that a Kafka broker left without a marker.
func hangingTxnDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	pdir := filepath.Join(dir, "txo-0")
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	ts := time.Now().UnixMilli()
	var log []byte
	for _, b := range []struct {
		base   int64
		pid    int64
		values []string
	}{{0, -1, []string{"plain-a"}}, {1, 500, []string{"open-1", "open-2"}}} {
		spec := record.DefaultSpec()
		spec.BaseOffset = b.base
		if b.pid >= 0 {
			spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence, spec.Transactional = b.pid, 2, 0, true
		}
		var bl record.Builder
		bl.Reset(spec)
		for _, v := range b.values {
			bl.Add(ts, nil, []byte(v), nil)
		}
		raw, err := bl.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		log = append(log, raw...)
	}
	if err := os.WriteFile(filepath.Join(pdir, "00000000000000000000.log"), log, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func describeProducers(t *testing.T, c *client, topic string, parts ...int32) kmsg.DescribeProducersResponseTopic {
	t.Helper()
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = topic, parts
	req.Topics = append(req.Topics, rt)
	resp := c.roundTrip(req).(*kmsg.DescribeProducersResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != len(parts) {
		t.Fatalf("describe producers %s %v: %+v", topic, parts, resp)
	}
	return resp.Topics[0]
}

func writeMarker(t *testing.T, c *client, version int16, topic string, part int32, pid int64, epoch int16, coordEpoch int32, commit bool) int16 {
	t.Helper()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = version
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Committed = pid, epoch, coordEpoch, commit
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = topic, []int32{part}
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	resp := c.roundTrip(req).(*kmsg.WriteTxnMarkersResponse)
	if len(resp.Markers) != 1 || resp.Markers[0].ProducerID != pid || len(resp.Markers[0].Topics) != 1 ||
		len(resp.Markers[0].Topics[0].Partitions) != 1 || resp.Markers[0].Topics[0].Partitions[0].Partition != part {
		t.Fatalf("write markers response: %+v", resp)
	}
	return resp.Markers[0].Topics[0].Partitions[0].ErrorCode
}

// TestDescribeProducersAndMarkers: DescribeProducers shows a hanging
// transaction with its start offset; WriteTxnMarkers refuses what Kafka's
// leader refuses (an older producer epoch, an older coordinator epoch, an
// unknown topic or partition) and writes nothing then; a valid ABORT ends
// the transaction (the last stable offset reaches the log end, the
// producer shows no transaction and the marker's coordinator epoch), and
// the aborted transaction is listed to read_committed fetches. A marker
// for a producer without a transaction, or unknown, is written and ends
// nothing, as in Kafka.
func TestDescribeProducersAndMarkers(t *testing.T) {
	ts := startServerDir(t, hangingTxnDir(t), Config{})
	c := dial(t, ts.addr)
	p, err := ts.store.Partition("txo", 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.LastStableOffset() != 1 {
		t.Fatalf("LSO before: %d, want 1", p.LastStableOffset())
	}

	dt := describeProducers(t, c, "txo", 0, 7)
	dp := dt.Partitions[0]
	if dp.ErrorCode != 0 || len(dp.ActiveProducers) != 1 {
		t.Fatalf("describe producers txo-0: %+v", dp)
	}
	ap := dp.ActiveProducers[0]
	if ap.ProducerID != 500 || ap.ProducerEpoch != 2 || ap.LastSequence != 1 || ap.CoordinatorEpoch != -1 || ap.CurrentTxnStartOffset != 1 || ap.LastTimestamp <= 0 {
		t.Fatalf("producer 500: %+v, want epoch 2, last sequence 1, coordinator epoch -1, transaction at 1", ap)
	}
	if e := dt.Partitions[1]; e.Partition != 7 || e.ErrorCode != kerr.UnknownTopicOrPartition.Code || e.ErrorMessage != nil {
		t.Errorf("describe producers of an unknown partition: %+v", e)
	}
	if e := describeProducers(t, c, "nope", 0).Partitions[0]; e.ErrorCode != kerr.UnknownTopicOrPartition.Code || e.ErrorMessage == nil {
		t.Errorf("describe producers of an unknown topic: %+v, want UNKNOWN_TOPIC_OR_PARTITION with Kafka's message", e)
	}

	// Refusals write nothing.
	for _, tc := range []struct {
		name       string
		topic      string
		part       int32
		epoch      int16
		coordEpoch int32
		want       *kerr.Error
	}{
		{"older producer epoch", "txo", 0, 1, 5, kerr.InvalidProducerEpoch},
		{"unknown topic", "nope", 0, 2, 5, kerr.UnknownTopicOrPartition},
		{"unknown partition", "txo", 3, 2, 5, kerr.UnknownTopicOrPartition},
	} {
		for _, v := range []int16{0, 1} {
			if got := writeMarker(t, c, v, tc.topic, tc.part, 500, tc.epoch, tc.coordEpoch, false); got != tc.want.Code {
				t.Errorf("v%d %s: %v, want %v", v, tc.name, kerr.ErrorForCode(got), tc.want)
			}
		}
	}
	if got := writeMarker(t, c, 1, "txo", 0, -1, 0, 5, false); got != kerr.InvalidRecord.Code {
		t.Errorf("marker without a producer id: %v, want INVALID_RECORD", kerr.ErrorForCode(got))
	}
	if p.LogEndOffset() != 3 || p.LastStableOffset() != 1 {
		t.Fatalf("after refused markers: LEO %d LSO %d, want 3 and 1", p.LogEndOffset(), p.LastStableOffset())
	}

	// The abort: marker at 3, LSO 4.
	if got := writeMarker(t, c, 1, "txo", 0, 500, 2, 5, false); got != 0 {
		t.Fatalf("abort: %v", kerr.ErrorForCode(got))
	}
	if p.LogEndOffset() != 4 || p.LastStableOffset() != 4 {
		t.Fatalf("after the abort: LEO %d LSO %d, want 4 and 4", p.LogEndOffset(), p.LastStableOffset())
	}
	if got := p.AbortedTxns(0, 4); len(got) != 1 || got[0] != (logstore.AbortedTxn{ProducerID: 500, FirstOffset: 1, LastOffset: 3, LastStableOffset: 4}) {
		t.Fatalf("aborted transactions: %+v", got)
	}
	ap = describeProducers(t, c, "txo", 0).Partitions[0].ActiveProducers[0]
	if ap.CurrentTxnStartOffset != -1 || ap.CoordinatorEpoch != 5 || ap.ProducerEpoch != 2 {
		t.Fatalf("producer 500 after the abort: %+v", ap)
	}
	// An older coordinator epoch is fenced now.
	if got := writeMarker(t, c, 0, "txo", 0, 500, 2, 4, true); got != kerr.TransactionCoordinatorFenced.Code {
		t.Errorf("older coordinator epoch: %v, want TRANSACTION_COORDINATOR_FENCED", kerr.ErrorForCode(got))
	}
	// No ongoing transaction, and an unknown producer: written, nothing ends.
	if got := writeMarker(t, c, 1, "txo", 0, 500, 2, 5, true); got != 0 {
		t.Errorf("commit without a transaction: %v", kerr.ErrorForCode(got))
	}
	if got := writeMarker(t, c, 1, "txo", 0, 900, 0, 0, false); got != 0 {
		t.Errorf("abort of an unknown producer: %v", kerr.ErrorForCode(got))
	}
	if p.LogEndOffset() != 6 || p.LastStableOffset() != 6 || len(p.AbortedTxns(0, 6)) != 1 {
		t.Fatalf("after markers that end nothing: LEO %d LSO %d aborted %+v", p.LogEndOffset(), p.LastStableOffset(), p.AbortedTxns(0, 6))
	}
	if got := describeProducers(t, c, "txo", 0).Partitions[0].ActiveProducers; len(got) != 2 || got[1].ProducerID != 900 || got[1].LastSequence != -1 {
		t.Fatalf("producers after a marker of producer 900: %+v", got)
	}
}

// failedLogStart: the produce errors Kafka's ReplicaManager answers with
// log_start_offset -1 (UNKNOWN_LOG_APPEND_INFO), the others with the log
// start; segfs answered the log start for all.
func TestProduceFailedLogStart(t *testing.T) {
	ts := startServer(t, Config{})
	if _, err := ts.store.CreateTopic("small", 1, map[string]string{"max.message.bytes": "1000"}); err != nil {
		t.Fatal(err)
	}
	p, _ := ts.store.Partition("small", 0)
	if _, _, err := p.AppendLines([]byte("a\nb\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.DeleteRecords(1); err != nil {
		t.Fatal(err)
	}
	base := produceBatch(t, "x")
	base[7] = 5 // base offset 5: INVALID_RECORD
	crc := produceBatch(t, "y")
	crc[len(crc)-1] ^= 0xff
	for _, tc := range []struct {
		name  string
		batch []byte
		want  *kerr.Error
		start int64
	}{
		{"over max.message.bytes", produceBatch(t, string(make([]byte, 2000))), kerr.MessageTooLarge, -1},
		{"bad CRC", crc, kerr.CorruptMessage, -1},
		{"base offset not 0", base, kerr.InvalidRecord, 1},
	} {
		sp := kgoProduce(t, ts.addr, 12, "small", tc.batch)
		if sp.ErrorCode != tc.want.Code || sp.LogStartOffset != tc.start {
			t.Errorf("%s: %v log start %d, want %v and %d", tc.name, kerr.ErrorForCode(sp.ErrorCode), sp.LogStartOffset, tc.want, tc.start)
		}
	}
}
