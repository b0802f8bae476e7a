package tests

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/segfs/segfs/logstore"
	"github.com/segfs/segfs/logstore/record"
)

// TestKafkaMaxTimestampEmptyBatch: `kcat -Q -t T:0:-3` (ListOffsets
// MAX_TIMESTAMP) on a compacted topic whose batch with the largest
// timestamp the cleaner emptied and kept as an idempotent producer's last
// (RETAIN_EMPTY), with a later record at that same timestamp. Kafka's
// UnifiedLog.fetchOffsetByTimestamp lets the first batch with the largest
// max timestamp decide, and that one holds no record: no offset (-1).
// segfs answered the later record's offset.
func TestKafkaMaxTimestampEmptyBatch(t *testing.T) {
	kafkaNeedKcat(t)
	data := filepath.Join(t.TempDir(), "data")
	s, err := logstore.Open(data, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tp, err := s.CreateTopic("mx", 1, map[string]string{
		"cleanup.policy": "compact", "segment.bytes": "100", // a batch a segment
		"min.cleanable.dirty.ratio": "0", "file.delete.delay.ms": "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tp.Partition(0)
	now := time.Now().UnixMilli()
	maxTs := now + 30*60*1000 // within message.timestamp.after.max.ms
	add := func(pid int64, seq int32, ts int64, k string) {
		t.Helper()
		spec := record.DefaultSpec()
		if pid >= 0 {
			spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence = pid, 0, seq
		}
		var bl record.Builder
		bl.Reset(spec)
		bl.Add(ts, []byte(k), []byte("v"), nil)
		b, err := bl.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.AppendBatch(b); err != nil {
			t.Fatal(err)
		}
	}
	add(7, 0, maxTs, "k")  // offset 0, the producer's first
	add(7, 1, maxTs, "k")  // 1, its last: emptied but kept
	add(-1, 0, now, "k")   // 2 supersedes both
	add(-1, 0, maxTs, "y") // 3 at the max timestamp too
	add(-1, 0, now, "z")   // 4
	add(-1, 0, now, "z")   // 5 rolls: the one before is cleanable
	if _, err := p.Compact(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	srv := kafkaServe(t, data)
	out := kcat(t, srv.addr, "", "-Q", "-t", "mx:0:-3")
	if !strings.Contains(out, "mx [0] offset -1\n") {
		t.Errorf("kcat -Q -t mx:0:-3: %q, want offset -1 (the first batch at the max timestamp is empty)", out)
	}
	cl := kafkaClient(t, srv.addr)
	if lp := kafkaListOffsetWith(t, cl, "mx", -3, listOffsetsV7); lp.ErrorCode != 0 || lp.Offset != -1 || lp.Timestamp != -1 || lp.LeaderEpoch != -1 {
		t.Errorf("ListOffsets v7 -3: %+v, want no error, offset, timestamp and leader epoch -1", lp)
	}
	// An ordinary lookup by that timestamp still finds the record.
	if out := kcat(t, srv.addr, "", "-Q", "-t", "mx:0:"+strconv.FormatInt(maxTs, 10)); !strings.Contains(out, "mx [0] offset 3\n") {
		t.Errorf("kcat -Q by the max timestamp: %q, want offset 3", out)
	}
}

// TestKafkaMaxTimestampBelowLogStart: `kcat -Q -t T:0:-3` after
// DeleteRecords past the first batch carrying the largest timestamp, in
// the middle of its segment. Kafka 4's UnifiedLog.fetchOffsetByTimestamp
// (MAX_TIMESTAMP) picks the segment and the first batch with the largest
// timestamp without looking at the log start offset, and answers that
// batch's record: an offset below the log start. segfs looked only at the
// batches from the log start on and answered the next record with that
// timestamp (or -1 with none).
func TestKafkaMaxTimestampBelowLogStart(t *testing.T) {
	kafkaNeedKcat(t)
	srv := kafkaServe(t, "")
	cl := kafkaClient(t, srv.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kafkaCreateTopic(t, cl, "mb", 1)
	now := time.Now().UnixMilli()
	maxTs := now + 10*60*1000 // within message.timestamp.after.max.ms
	for i, ts := range []int64{now, maxTs, now, maxTs, now} {
		// One batch each: separate synchronous produces.
		r := &kgo.Record{Topic: "mb", Value: []byte(strconv.Itoa(i)), Timestamp: time.UnixMilli(ts)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil || r.Offset != int64(i) {
			t.Fatalf("produce %d: %v at %d", i, err, r.Offset)
		}
	}
	if low, code := kafkaDeleteRecords(t, srv.addr, "mb", 2); code != 0 || low != 2 {
		t.Fatalf("DeleteRecords to 2: low watermark %d, %v", low, kerr.ErrorForCode(code))
	}
	out := kcat(t, srv.addr, "", "-Q", "-t", "mb:0:-3")
	if !strings.Contains(out, "mb [0] offset 1\n") {
		t.Errorf("kcat -Q -t mb:0:-3 with the log start at 2: %q, want offset 1 (Kafka's: the first batch at the max timestamp, below the log start)", out)
	}
	if p := kafkaListOffsetWith(t, cl, "mb", -3, listOffsetsV7); p.ErrorCode != 0 || p.Offset != 1 || p.Timestamp != maxTs || p.LeaderEpoch != 0 {
		t.Errorf("ListOffsets v7 -3: error %v, offset %d, timestamp %d, epoch %d; want offset 1 at %d, the batch's epoch 0",
			kerr.ErrorForCode(p.ErrorCode), p.Offset, p.Timestamp, p.LeaderEpoch, maxTs)
	}
}

// listOffsetsV7 pins a ListOffsets request at version 7 (Kafka 4's
// MAX_TIMESTAMP lookup, with the leader epoch).
func listOffsetsV7(req *kmsg.ListOffsetsRequest) { req.Version = 7 }
