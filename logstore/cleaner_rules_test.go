package logstore

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/segfs/segfs/logstore/record"
)

// TestCompactionLeavesPastRoundEnd: when the offset map fills, the round
// ends after the last batch whose keys all went in, and the segment
// holding that end is rewritten; what lies past the end is outside the
// round and stays as it was, as Kafka's cleaner keeps every record past
// the map's latest offset (shouldRetainRecord's pastLatestOffset). segfs
// dropped a keyless record past the end, and a record of the batch the
// map filled in whose key the same batch repeats (the map had taken the
// repeat's offset before it refused the batch's new key).
func TestCompactionLeavesPastRoundEnd(t *testing.T) {
	clock := newClock()
	dir := t.TempDir()
	const mapBytes = 1024 // 42 slots, filled at 37 keys
	s, err := Open(dir, Options{Now: clock.now, Logger: discardLogger(), CleanerBufferBytes: mapBytes})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tp, _ := s.CreateTopic("end", 1, map[string]string{
		"cleanup.policy": "delete", "key.separator": "=", "segment.ms": "3600000",
		"min.cleanable.dirty.ratio": "0.01", "file.delete.delay.ms": "0",
	})
	p, _ := tp.Partition(0)
	var want strings.Builder
	appendText := func(text string) {
		t.Helper()
		if _, _, err := p.AppendLines([]byte(text)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 36; i++ { // 36 keys, one batch each: the map takes them all
		appendText(fmt.Sprintf("k%02d=%d\n", i, i))
		want.WriteString(fmt.Sprintf("k%02d=%d\n", i, i))
	}
	// The 37th key goes in twice, then the map refuses the 38th: the
	// round ends before this batch, and all of it is past the end.
	past := "a=1\na=2\nb=1\nno key past the end\nk00=newer\n"
	appendText("a=1\na=2\nb=1\n")
	appendText("no key past the end\n")
	appendText("k00=newer\n")
	want.WriteString(past)
	clock.ms.Add(2 * 3600000)
	appendText("z=rolls the segment\n")
	want.WriteString("z=rolls the segment\n")
	// Written before the topic was compacted (a compacted topic refuses
	// keyless records, as Kafka does).
	if err := tp.SetConfig(map[string]string{"cleanup.policy": "compact"}); err != nil {
		t.Fatal(err)
	}
	st, err := p.Compact()
	if err != nil || st.SegmentsCleaned != 1 {
		t.Fatalf("first pass: %+v, %v", st, err)
	}
	if got := textOf(t, p, 0); got != want.String() {
		t.Fatalf("after a pass that ended at offset 36 the log reads\n%s\nwant everything from offset 36 on as it was:\n%s", got, want.String())
	}
	// The next pass starts at the end of the first and cleans the rest:
	// the keyless record goes, as Kafka drops keyless records it cleans.
	if _, err := p.Compact(); err != nil {
		t.Fatal(err)
	}
	got := textOf(t, p, 0)
	if strings.Contains(got, "no key") || strings.Contains(got, "a=1\n") || strings.Contains(got, "k00=0\n") ||
		!strings.Contains(got, "a=2\nb=1\nk00=newer\nz=rolls the segment\n") {
		t.Fatalf("after the second pass the log reads\n%s", got)
	}
}

// compactTopic is a compacted topic of one partition whose segments roll
// at the first append a second after the last (segment.ms), cleaned
// whenever anything is dirty.
func compactTopic(t *testing.T, s *Store, name string, extra map[string]string) *Partition {
	t.Helper()
	cfg := map[string]string{
		"cleanup.policy": "compact", "key.separator": "=", "segment.ms": "1000",
		"min.cleanable.dirty.ratio": "0", "file.delete.delay.ms": "0",
	}
	for k, v := range extra {
		cfg[k] = v
	}
	tp, err := s.CreateTopic(name, 1, cfg)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tp.Partition(0)
	return p
}

// keyedIdempotentBatch is a one-record batch k=v of producer pid (epoch
// 0) at sequence seq.
func keyedIdempotentBatch(t *testing.T, pid int64, seq int32, ts int64, k, v string) []byte {
	t.Helper()
	spec := record.DefaultSpec()
	spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence = pid, 0, seq
	return oneRecordBatch(t, spec, ts, []byte(k), []byte(v))
}

// oneRecordBatch is a batch of spec holding the one record key=value (a
// nil key is none) at ts.
func oneRecordBatch(t *testing.T, spec record.BatchSpec, ts int64, key, value []byte) []byte {
	t.Helper()
	var bl record.Builder
	bl.Reset(spec)
	bl.Add(ts, key, value, nil)
	b, err := bl.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// kafkaBatch is a one-record batch k=v at offset base, as a Kafka broker
// writes it: in a transaction of producer pid (epoch 0, sequence 0), or
// plain when pid is -1.
func kafkaBatch(t *testing.T, base, pid, ts int64, k, v string) []byte {
	t.Helper()
	spec := record.DefaultSpec()
	spec.BaseOffset = base
	if pid >= 0 {
		spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence, spec.Transactional = pid, 0, 0, true
	}
	return oneRecordBatch(t, spec, ts, []byte(k), []byte(v))
}

// writeKafkaSegment makes the partition directory pdir holding one
// segment, at offset 0, of the batches given: a data directory a Kafka
// broker left, which the next Open loads.
func writeKafkaSegment(t *testing.T, pdir string, batches ...[]byte) {
	t.Helper()
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pdir, segmentName(0)+logSuffix), bytes.Join(batches, nil), 0o644); err != nil {
		t.Fatal(err)
	}
}

// openTxnMarkerDir opens a store on a Kafka data directory whose
// partition mk-0 (pdir) holds a transaction of producer 500 (k=committed,
// offset 0), one of producer 600 (j=aborted, 1) and one of producer 700
// (i=aborted, 2), all left open, with producer ids expiring after a
// minute; mk is compacted, its segments roll a second apart and
// delete.retention.ms is a minute. The caller closes s.
func openTxnMarkerDir(t *testing.T) (dir, pdir string, clock *fakeClock, opts Options, s *Store, p *Partition) {
	t.Helper()
	dir = t.TempDir()
	pdir = filepath.Join(dir, "mk-0")
	clock = newClock()
	ts := clock.ms.Load()
	writeKafkaSegment(t, pdir,
		kafkaBatch(t, 0, 500, ts, "k", "committed"),
		kafkaBatch(t, 1, 600, ts, "j", "aborted"),
		kafkaBatch(t, 2, 700, ts, "i", "aborted"))
	opts = Options{Now: clock.now, Logger: discardLogger(), ProducerIDExpiration: time.Minute}
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	p = mustPartition(t, s, "mk")
	if err := p.Topic().SetConfig(map[string]string{
		"cleanup.policy": "compact", "key.separator": "=", "segment.ms": "1000", "file.delete.delay.ms": "0",
		"min.cleanable.dirty.ratio": "0", "delete.retention.ms": "60000",
	}); err != nil {
		s.Close()
		t.Fatal(err)
	}
	return dir, pdir, clock, opts, s, p
}

// batchesOf lists the headers of every batch of p's segments.
func batchesOf(t *testing.T, p *Partition) []record.Header {
	t.Helper()
	var out []record.Header
	var dec record.Decoder
	segs := p.acquireSegments(p.logStart.Load())
	defer releaseAll(segs)
	for _, s := range segs {
		if err := scanSegment(s, &dec, func(_ int64, _ []byte, h *record.Header) error {
			out = append(out, *h)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestCompactionKeepsActiveProducerLastBatch: the cleaner keeps the last
// data batch of every producer the partition keeps state for, as an empty
// batch (no records, its offsets, producer id, epoch and sequence kept)
// when compaction removed all its records, as Kafka's does
// (isBatchLastRecordOfProducer, RETAIN_EMPTY). A reload that rebuilds the
// producer state from the log (a crash with no producer snapshot above
// that batch) then still knows the producer's last sequence: its retry is
// a duplicate, not a second copy. segfs dropped the batch, and the retry
// after the crash was written again.
func TestCompactionKeepsActiveProducerLastBatch(t *testing.T) {
	clock := newClock()
	dir := t.TempDir()
	s := openStore(t, dir, clock)
	p := compactTopic(t, s, "act", nil)
	ts := clock.ms.Load()
	const pid = 42
	for seq, v := range []string{"a", "b"} {
		if res, err := p.AppendBatch(keyedIdempotentBatch(t, pid, int32(seq), ts, "k", v)); err != nil || res.BaseOffset != int64(seq) {
			t.Fatalf("seq %d: %+v, %v", seq, res, err)
		}
	}
	// A plain record supersedes both: every record of the producer goes.
	if _, _, err := p.AppendLines([]byte("k=plain\n")); err != nil {
		t.Fatal(err)
	}
	clock.ms.Add(2000)
	if _, _, err := p.AppendLines([]byte("z=1\n")); err != nil { // rolls
		t.Fatal(err)
	}
	st, err := p.Compact()
	if err != nil || st.SegmentsCleaned != 1 || st.RecordsRemoved != 2 {
		t.Fatalf("pass: %+v, %v", st, err)
	}
	if got := textOf(t, p, 0); got != "k=plain\nz=1\n" {
		t.Fatalf("after the pass the log reads %q", got)
	}
	hs := batchesOf(t, p)
	if len(hs) != 3 || hs[0].BaseOffset != 1 || hs[0].RecordCount != 0 || hs[0].ProducerID != pid ||
		hs[0].BaseSequence != 1 || hs[0].LastOffsetDelta != 0 || hs[0].BaseTimestamp != -1 || hs[0].HasDeleteHorizon() {
		t.Fatalf("after the pass the batches are %+v, want an empty batch of producer %d at offset 1, sequence 1, first", hs, pid)
	}
	// A second pass keeps it too (the producer is still active).
	clock.ms.Add(2000)
	p.AppendLines([]byte("z=2\n"))
	if _, err := p.Compact(); err != nil {
		t.Fatal(err)
	}
	if hs := batchesOf(t, p); hs[0].BaseOffset != 1 || hs[0].RecordCount != 0 {
		t.Fatalf("after a second pass the batches are %+v", hs)
	}
	leo := p.LogEndOffset()
	// A crash that leaves no producer snapshot: the load rebuilds the
	// producer state from the log start.
	p.Flush()
	s.abandon()
	snaps, _ := filepath.Glob(filepath.Join(dir, "act-0", "*"+snapshotSuffix))
	for _, f := range snaps {
		os.Remove(f)
	}
	s = openStore(t, dir, clock)
	defer s.Close()
	p = mustPartition(t, s, "act")
	if got := p.ActiveProducers(); len(got) != 1 || got[0].ID != pid || got[0].LastSequence != 1 {
		t.Fatalf("producers after the crash: %+v, want %d with last sequence 1", got, pid)
	}
	res, err := p.AppendBatch(keyedIdempotentBatch(t, pid, 1, ts, "k", "b"))
	if err != nil || !res.Duplicate || res.BaseOffset != 1 || p.LogEndOffset() != leo {
		t.Fatalf("retry of sequence 1 after the crash: %+v, %v (log end %d, was %d); want a duplicate at offset 1", res, err, p.LogEndOffset(), leo)
	}
	if res, err := p.AppendBatch(keyedIdempotentBatch(t, pid, 2, ts, "k", "c")); err != nil || res.Duplicate || res.BaseOffset != leo {
		t.Fatalf("sequence 2 after the crash: %+v, %v", res, err)
	}
	if got := textOf(t, p, 0); got != "k=plain\nz=1\nz=2\nk=c\n" {
		t.Fatalf("the log reads %q", got)
	}
}

// TestCompactionRemovesTxnMarkers: a COMMIT or ABORT marker whose
// transaction has no data left is removed after delete.retention.ms, as
// Kafka's cleaner does (KIP-534): the first pass that finds it alone sets
// its delete horizon, a pass after the horizon removes it, and an ABORT's
// .txnindex entry with it. Before the horizon it stays, so a consumer
// that read the transaction's data before it was cleaned still finds the
// marker. A marker that carries the epoch of a producer the partition
// still keeps state for, and that has no data batch left, stays as an
// empty control batch, from which a load without a snapshot learns the
// epoch. segfs kept every marker for good. The horizon is read back from
// the batch after a restart, so an idle topic loses its markers too.
func TestCompactionRemovesTxnMarkers(t *testing.T) {
	// A Kafka data directory: k=committed in a transaction of producer
	// 500 (offset 0), j=aborted in one of producer 600 (1), i=aborted in
	// one of producer 700 (2), all left open; their markers follow.
	dir, pdir, clock, opts, s, p := openTxnMarkerDir(t)
	t.Cleanup(func() { s.Close() })
	var err error
	if off, err := p.WriteTxnMarker(500, 0, 0, true); err != nil || off != 3 {
		t.Fatalf("COMMIT marker: offset %d, %v", off, err)
	}
	if off, err := p.WriteTxnMarker(600, 0, 0, false); err != nil || off != 4 {
		t.Fatalf("ABORT marker: offset %d, %v", off, err)
	}
	if _, _, err := p.AppendLines([]byte("k=newer\n")); err != nil {
		t.Fatal(err)
	}
	// Producers 500 and 600 expire (their state would keep their last
	// batches); 700, in a transaction, does not, and its coordinator
	// aborts it with a new epoch, which its state keeps, without data.
	clock.ms.Add(2 * 60000)
	s.expireProducers(time.UnixMilli(clock.ms.Load()))
	if off, err := p.WriteTxnMarker(700, 1, 0, false); err != nil || off != 6 {
		t.Fatalf("ABORT marker of 700: offset %d, %v", off, err)
	}
	if got := p.ActiveProducers(); len(got) != 1 || got[0].ID != 700 || got[0].Epoch != 1 {
		t.Fatalf("active producers: %+v, want 700 at epoch 1", got)
	}
	pass := func(line string) CleanupStats {
		t.Helper()
		clock.ms.Add(2000)
		if line != "" {
			if _, _, err := p.AppendLines([]byte(line)); err != nil { // rolls
				t.Fatal(err)
			}
		}
		st, err := p.Compact()
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	markers := func() (n int, horizons []int64, empty []int64) {
		for _, h := range batchesOf(t, p) {
			if h.Control() {
				n++
				if h.HasDeleteHorizon() {
					horizons = append(horizons, h.BaseTimestamp)
				}
				if h.RecordCount == 0 {
					empty = append(empty, h.BaseOffset)
				}
			}
		}
		return n, horizons, empty
	}
	aborts := []AbortedTxn{
		{ProducerID: 600, FirstOffset: 1, LastOffset: 4, LastStableOffset: 2},
		{ProducerID: 700, FirstOffset: 2, LastOffset: 6, LastStableOffset: 7},
	}
	// Pass 1 removes the transactions' data; their markers stay as they
	// are (this pass read the data).
	pass("z=1\n")
	if got := textOf(t, p, 0); got != "k=newer\nz=1\n" {
		t.Fatalf("after pass 1 the log reads %q", got)
	}
	if n, hz, _ := markers(); n != 3 || len(hz) != 0 {
		t.Fatalf("after pass 1: %d markers, horizons %v; want all 3, without a horizon", n, hz)
	}
	if got := p.AbortedTxns(0, p.LogEndOffset()); !slices.Equal(got, aborts) {
		t.Fatalf("aborted transactions after pass 1: %+v, want %+v", got, aborts)
	}
	// Pass 2 finds them alone: their delete horizon is set.
	pass("z=2\n")
	horizon := clock.ms.Load() + 60000
	if n, hz, _ := markers(); n != 3 || len(hz) != 3 || hz[0] < horizon-10 || hz[0] > horizon || hz[1] != hz[0] || hz[2] != hz[0] {
		t.Fatalf("after pass 2: %d markers, horizons %v; want all 3 with a horizon about %d", n, hz, horizon)
	}
	// Before the horizon they stay.
	pass("")
	if n, _, _ := markers(); n != 3 {
		t.Fatalf("before the horizon: %d markers", n)
	}
	// A restart, then an idle topic past the horizon: the pass that reads
	// the horizon back removes them, and the aborted transactions'
	// .txnindex entries; 700's marker stays as an empty control batch.
	s.Close()
	if s, err = Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	p = mustPartition(t, s, "mk")
	clock.ms.Add(60000)
	st := pass("")
	if n, _, empty := markers(); n != 1 || !slices.Equal(empty, []int64{6}) || st.SegmentsCleaned == 0 {
		t.Fatalf("past the horizon: %d markers left, empty %v (%+v); want only the empty one at 6", n, empty, st)
	}
	if got := p.AbortedTxns(0, p.LogEndOffset()); len(got) != 0 {
		t.Fatalf("aborted transactions past the horizon: %+v", got)
	}
	if got := textOf(t, p, 0); got != "k=newer\nz=1\nz=2\n" {
		t.Fatalf("past the horizon the log reads %q", got)
	}
	// A crash that leaves no producer snapshot: the load rebuilds the
	// producer state from the log, 700's epoch from its empty marker; no
	// .txnindex entry comes back and no transaction is open.
	leo := p.LogEndOffset()
	p.Flush()
	s.abandon()
	snaps, _ := filepath.Glob(filepath.Join(pdir, "*"+snapshotSuffix))
	for _, f := range snaps {
		os.Remove(f)
	}
	if s, err = Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	p = mustPartition(t, s, "mk")
	if got := p.ActiveProducers(); len(got) != 1 || got[0].ID != 700 || got[0].Epoch != 1 || got[0].TxnStartOffset != -1 {
		t.Fatalf("active producers after the crash: %+v, want 700 at epoch 1 without a transaction", got)
	}
	if got := p.AbortedTxns(0, p.LogEndOffset()); len(got) != 0 {
		t.Fatalf("aborted transactions after the crash: %+v", got)
	}
	if lso := p.LastStableOffset(); lso != leo || p.LogEndOffset() != leo {
		t.Fatalf("last stable offset %d, log end %d; want both %d", lso, p.LogEndOffset(), leo)
	}
	if got := textOf(t, p, 0); got != "k=newer\nz=1\nz=2\n" {
		t.Fatalf("after the crash the log reads %q", got)
	}
}
