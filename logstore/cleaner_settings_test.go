package logstore

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segfs/segfs/logstore/record"
)

// TestCompactionSettings: when a pass cleans is decided by
// min.cleanable.dirty.ratio, min.compaction.lag.ms and
// max.compaction.lag.ms (KAFKA-FORMAT.md §9.1), and the active segment is
// never cleaned, whatever it holds.
func TestCompactionSettings(t *testing.T) {
	clock := newClock()
	s := openStore(t, t.TempDir(), clock)
	defer s.Close()
	tp, _ := s.CreateTopic("cs", 1, map[string]string{
		"cleanup.policy": "compact", "key.separator": "=", "segment.ms": "1000", "file.delete.delay.ms": "0",
	})
	p, _ := tp.Partition(0)
	// closeSegment appends text and rolls the segment it went to (the
	// retention pass rolls an idle active segment after segment.ms).
	closeSegment := func(text string) {
		t.Helper()
		if _, _, err := p.AppendLines([]byte(text)); err != nil {
			t.Fatal(err)
		}
		clock.ms.Add(2000)
		if _, err := p.ApplyRetention(); err != nil {
			t.Fatal(err)
		}
	}
	set := func(kv ...string) {
		t.Helper()
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		if err := tp.SetConfig(m); err != nil {
			t.Fatal(err)
		}
	}
	compact := func(wantClean bool, when string) {
		t.Helper()
		st, err := p.Compact()
		if err != nil {
			t.Fatal(err)
		}
		if cleaned := st.SegmentsCleaned > 0; cleaned != wantClean {
			t.Fatalf("%s: pass %+v; want cleaned=%v", when, st, wantClean)
		}
	}
	var b strings.Builder
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&b, "k%d=first %d\n", i%10, i)
	}
	closeSegment(b.String())
	compact(true, "a first pass (nothing clean yet, ratio 1)")
	if got := textOf(t, p, 0); strings.Count(got, "\n") != 10 {
		t.Fatalf("after the first pass: %q", got)
	}

	// min.cleanable.dirty.ratio (default 0.5): one small dirty segment
	// beside the larger clean one is not enough; a lower ratio is.
	closeSegment("k0=second\n")
	compact(false, "dirty ratio below 0.5")
	if !strings.Contains(textOf(t, p, 0), "k0=first 90\n") {
		t.Fatal("cleaned below min.cleanable.dirty.ratio")
	}
	set("min.cleanable.dirty.ratio", "0.1")
	compact(true, "dirty ratio above 0.1")
	if strings.Contains(textOf(t, p, 0), "k0=first") {
		t.Fatal("k0's old value survived the pass")
	}

	// min.compaction.lag.ms: a segment younger than the lag is not
	// cleaned, even with every other condition met.
	set("min.cleanable.dirty.ratio", "0.01", "min.compaction.lag.ms", "10000")
	closeSegment("k1=second\n")
	compact(false, "younger than min.compaction.lag.ms")
	if !strings.Contains(textOf(t, p, 0), "k1=first 91\n") {
		t.Fatal("cleaned a segment younger than min.compaction.lag.ms")
	}
	clock.ms.Add(10000)
	compact(true, "older than min.compaction.lag.ms")
	if strings.Contains(textOf(t, p, 0), "k1=first") {
		t.Fatal("k1's old value survived the lag")
	}

	// max.compaction.lag.ms: a dirty segment older than the lag is
	// cleaned even below min.cleanable.dirty.ratio.
	set("min.cleanable.dirty.ratio", "0.9", "min.compaction.lag.ms", "0", "max.compaction.lag.ms", "5000")
	closeSegment("k2=second\n")
	compact(false, "dirty ratio below 0.9, within max.compaction.lag.ms")
	clock.ms.Add(6000)
	compact(true, "past max.compaction.lag.ms")
	if strings.Contains(textOf(t, p, 0), "k2=first") {
		t.Fatal("k2's old value outlived max.compaction.lag.ms")
	}

	// The active segment is never cleaned, even when all of it is stale.
	set("min.cleanable.dirty.ratio", "0.01", "max.compaction.lag.ms", "")
	if _, _, err := p.AppendLines([]byte("k3=active 1\nk3=active 2\nk4=active 1\nk4=active 2\n")); err != nil {
		t.Fatal(err)
	}
	clock.ms.Add(500) // less than segment.ms: it stays active
	p.Compact()
	got := textOf(t, p, 0)
	if !strings.HasSuffix(got, "k3=active 1\nk3=active 2\nk4=active 1\nk4=active 2\n") || !strings.Contains(got, "k3=first 93\n") {
		t.Fatalf("the active segment or the value it supersedes was cleaned: %q", got)
	}
	if st := statusOf(t, p); st.ActiveSegmentBaseOffset != st.LogEndOffset-4 {
		t.Fatalf("the active segment moved: %+v", st)
	}
}

// TestFileDeleteDelay: segments deleted by retention are renamed .deleted
// at once and removed file.delete.delay.ms later, even with no reader.
func TestFileDeleteDelay(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, newClock())
	defer s.Close()
	tp, _ := s.CreateTopic("fd", 1, map[string]string{
		"segment.bytes": "1000", "retention.bytes": "1000", "file.delete.delay.ms": "700",
	})
	p, _ := tp.Partition(0)
	for i := 0; i < 100; i++ {
		p.AppendLines([]byte(fmt.Sprintf("line %05d %s\n", i, strings.Repeat("d", 40))))
	}
	start := time.Now()
	st, err := p.ApplyRetention()
	if err != nil || st.SegmentsDeleted == 0 {
		t.Fatalf("retention: %+v %v", st, err)
	}
	deleted := func() int {
		m, _ := filepath.Glob(filepath.Join(dir, "fd-0", "*.deleted"))
		return len(m)
	}
	time.Sleep(200 * time.Millisecond)
	if n := deleted(); n < st.SegmentsDeleted && time.Since(start) < 700*time.Millisecond {
		t.Fatalf("%d .deleted files for %d deleted segments before file.delete.delay.ms", n, st.SegmentsDeleted)
	}
	for deleted() > 0 && time.Since(start) < 10*time.Second {
		time.Sleep(20 * time.Millisecond)
	}
	if n, waited := deleted(), time.Since(start); n > 0 || waited < 700*time.Millisecond {
		t.Fatalf("%d .deleted files left after %v (file.delete.delay.ms=700)", n, waited)
	}
}

// TestCompactDeletePolicy: with cleanup.policy=compact,delete a partition
// is both compacted and aged out: retention deletes the cleaned segments
// once their newest record is older than retention.ms, the log start moves
// past them, and compaction goes on from the new log start.
func TestCompactDeletePolicy(t *testing.T) {
	clock := newClock()
	s := openStore(t, t.TempDir(), clock)
	defer s.Close()
	tp, _ := s.CreateTopic("cd", 1, map[string]string{
		"cleanup.policy": "compact,delete", "key.separator": "=", "segment.ms": "1000",
		"retention.ms": "10000", "min.cleanable.dirty.ratio": "0.01", "file.delete.delay.ms": "0",
	})
	p, _ := tp.Partition(0)
	roll := func(text string) CleanupStats {
		t.Helper()
		if _, _, err := p.AppendLines([]byte(text)); err != nil {
			t.Fatal(err)
		}
		clock.ms.Add(2000)
		st, err := p.ApplyRetention()
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	compact := func(removed int64, want string) {
		t.Helper()
		st, err := p.Compact()
		if err != nil || st.RecordsRemoved != removed {
			t.Fatalf("pass %+v %v; want %d records removed", st, err, removed)
		}
		if got := textOf(t, p, p.LogStartOffset()); got != want {
			t.Fatalf("after the pass: %q, want %q", got, want)
		}
	}
	roll("a=1\nb=1\na=2\n")
	compact(1, "b=1\na=2\n")
	roll("c=1\nb=2\n")
	compact(1, "a=2\nc=1\nb=2\n")
	clock.ms.Add(20000)
	if st := roll("d=1\n"); st.SegmentsDeleted == 0 || st.NewLogStart != 5 {
		t.Fatalf("retention of the compacted segments: %+v", st)
	}
	if p.LogStartOffset() != 5 || textOf(t, p, 5) != "d=1\n" {
		t.Fatalf("log start %d, text %q", p.LogStartOffset(), textOf(t, p, 5))
	}
	if _, err := p.Text(0); err == nil {
		t.Fatal("offset 0 still readable below the log start")
	}
	roll("d=2\n")
	compact(1, "d=2\n")
}

// TestMaxCompactionLagRollsActiveSegment: on a compacted topic the active
// segment rolls once it is max.compaction.lag.ms old when that is shorter
// than segment.ms (Kafka's LogConfig.maxSegmentMs), by an append or, idle,
// by the retention pass, so that the cleaner, which never touches the
// active segment, can meet the lag. It used to roll only after segment.ms
// (a week), keeping superseded values that long.
func TestMaxCompactionLagRollsActiveSegment(t *testing.T) {
	clock := newClock()
	s := openStore(t, t.TempDir(), clock)
	defer s.Close()
	tp, err := s.CreateTopic("lag", 1, map[string]string{
		"cleanup.policy": "compact", "key.separator": "=", "max.compaction.lag.ms": "1000",
		"file.delete.delay.ms": "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tp.Partition(0)
	add := func(text string) {
		t.Helper()
		if _, _, err := p.AppendLines([]byte(text)); err != nil {
			t.Fatal(err)
		}
	}
	add("k=1\n")
	clock.ms.Add(500)
	add("k=2\n")
	if n := statusOf(t, p).Segments; n != 1 {
		t.Fatalf("%d segments within max.compaction.lag.ms, want 1", n)
	}
	clock.ms.Add(1000)
	add("k=3\n")
	if st := statusOf(t, p); st.Segments != 2 || st.ActiveSegmentBaseOffset != 2 {
		t.Fatalf("an append past max.compaction.lag.ms did not roll: %+v", st)
	}
	// Idle, the retention pass rolls it, and the cleaner can then clean
	// what it holds.
	clock.ms.Add(1500)
	if _, err := p.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	if st := statusOf(t, p); st.Segments != 3 || st.ActiveSegmentBaseOffset != 3 {
		t.Fatalf("an idle active segment past max.compaction.lag.ms did not roll: %+v", st)
	}
	if _, err := p.Compact(); err != nil {
		t.Fatal(err)
	}
	if got := textOf(t, p, 0); got != "k=3\n" {
		t.Fatalf("after the pass: %q, want k=3 alone", got)
	}

	// Without compaction max.compaction.lag.ms rolls nothing.
	if err := tp.SetConfig(map[string]string{"cleanup.policy": "delete"}); err != nil {
		t.Fatal(err)
	}
	add("k=4\n")
	clock.ms.Add(1500)
	add("k=5\n")
	if st := statusOf(t, p); st.ActiveSegmentBaseOffset != 3 {
		t.Fatalf("max.compaction.lag.ms rolled a topic that is not compacted: %+v", st)
	}
}

// TestCleanerCheckpointPastLogEnd: a cleaner-offset-checkpoint that says
// more was cleaned than the log holds (a tail lost after it was written, a
// data directory assembled from copies) is reset to the log start, and the
// whole log is cleaned, as Kafka's cleanableOffsets does. segfs used to
// cut it to the log end instead: the records below it counted as clean,
// and their superseded values were never removed.
func TestCleanerCheckpointPastLogEnd(t *testing.T) {
	dir := t.TempDir()
	clock := newClock()
	s := openStore(t, dir, clock)
	tp, err := s.CreateTopic("ck", 1, map[string]string{
		"cleanup.policy": "compact", "key.separator": "=", "segment.ms": "1000", "file.delete.delay.ms": "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tp.Partition(0)
	if _, _, err := p.AppendLines([]byte("a=1\nb=1\na=2\nb=2\n")); err != nil {
		t.Fatal(err)
	}
	clock.ms.Add(2000)
	if _, err := p.ApplyRetention(); err != nil { // rolls the idle segment
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, cleanerCheckpointFile)
	if err := os.WriteFile(ck, []byte("0\n1\nck 0 1000\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, dir, clock)
	defer s.Close()
	p = mustPartition(t, s, "ck")
	st, err := p.Compact()
	if err != nil {
		t.Fatal(err)
	}
	if got := textOf(t, p, 0); got != "a=2\nb=2\n" || st.RecordsRemoved != 2 {
		t.Fatalf("after a pass with the checkpoint at 1000 past the log end 4: %q (%+v), want a=2 b=2", got, st)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(ck); string(b) != "0\n1\nck 0 4\n" {
		t.Fatalf("cleaner checkpoint after the pass: %q", b)
	}
}

// TestCleanedBatchMaxTimestamp: a CreateTime batch the cleaner rebuilds
// takes its retained records' largest timestamp as MaxTimestamp, as
// Kafka's rebuild computes it. It used to keep the original one: when the
// record carrying it was removed (superseded by a later record stamped
// earlier), the segment went on claiming that time, and ListOffsets -3
// (MaxTimestamp) looked for a record with it, found none, and answered
// that the log had no records at all.
func TestCleanedBatchMaxTimestamp(t *testing.T) {
	dir := t.TempDir()
	clock := newClock()
	s := openStore(t, dir, clock)
	defer s.Close()
	tp, err := s.CreateTopic("mt", 1, map[string]string{
		"cleanup.policy": "compact", "segment.ms": "1000", "file.delete.delay.ms": "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tp.Partition(0)
	now := clock.ms.Load()
	produce := func(recs ...any) {
		t.Helper()
		var bl record.Builder
		bl.Reset(record.DefaultSpec())
		for i := 0; i < len(recs); i += 3 {
			bl.Add(now+recs[i].(int64), []byte(recs[i+1].(string)), []byte(recs[i+2].(string)), nil)
		}
		b, err := bl.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.AppendBatch(b); err != nil {
			t.Fatal(err)
		}
	}
	produce(int64(10), "a", "1", int64(0), "b", "1") // MaxTimestamp now+10, a's
	clock.ms.Add(2000)
	if _, err := p.ApplyRetention(); err != nil { // rolls the idle segment
		t.Fatal(err)
	}
	produce(int64(5), "a", "2") // supersedes a=1, stamped earlier
	clock.ms.Add(2000)
	if _, err := p.ApplyRetention(); err != nil { // and closes a=2's segment: the cleaner maps closed segments only
		t.Fatal(err)
	}
	if st := statusOf(t, p); st.Segments != 3 {
		t.Fatalf("want both batches in closed segments: %+v", st)
	}
	if _, err := p.Compact(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "mt-0", segmentName(0)+logSuffix))
	if err != nil {
		t.Fatal(err)
	}
	h, err := record.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.RecordCount != 1 || h.MaxTimestamp != now || h.LastOffsetDelta != 1 {
		t.Fatalf("rebuilt batch: %d records, MaxTimestamp %d (want %d, b's), last offset delta %d", h.RecordCount, h.MaxTimestamp, now, h.LastOffsetDelta)
	}
	ts, off, ok, err := p.MaxTimestamp()
	if err != nil || !ok || ts != now+5 || off != 2 {
		t.Fatalf("MaxTimestamp() = %d at %d, ok=%v, %v; want %d at 2 (a=2)", ts, off, ok, err, now+5)
	}
}

// TestCompactionDropsAbortedTxnData: the cleaner neither maps nor keeps
// the records of an aborted transaction (a data directory written by
// Kafka, or an abort by WriteTxnMarker), as Kafka's cleaner does; the
// ABORT marker and its .txnindex entry stay. segfs used to map them like
// any record: an aborted value superseded the committed value of its key,
// which the pass removed, so read_committed consumers (which skip the
// aborted one) lost the key altogether.
func TestCompactionDropsAbortedTxnData(t *testing.T) {
	dir := t.TempDir()
	// k=committed (offset 0), then k=aborted in a transaction of producer
	// 500 (offset 1), left open as Kafka leaves a transaction mid-way; x=1
	// (2) and the transaction's ABORT marker (3) follow.
	writeKafkaSegment(t, filepath.Join(dir, "txc-0"),
		kafkaBatch(t, 0, -1, 1_700_000_000_000, "k", "committed"),
		kafkaBatch(t, 1, 500, 1_700_000_000_000, "k", "aborted"))
	clock := newClock()
	s := openStore(t, dir, clock)
	defer s.Close()
	p := mustPartition(t, s, "txc")
	if err := p.Topic().SetConfig(map[string]string{
		"cleanup.policy": "compact", "key.separator": "=", "segment.ms": "1000", "file.delete.delay.ms": "0",
	}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.AppendLines([]byte("x=1\n")); err != nil {
		t.Fatal(err)
	}
	if off, err := p.WriteTxnMarker(500, 0, 0, false); err != nil || off != 3 {
		t.Fatalf("ABORT marker: offset %d, %v", off, err)
	}
	clock.ms.Add(2000)
	if _, err := p.ApplyRetention(); err != nil { // rolls the idle segment
		t.Fatal(err)
	}
	if got := textOf(t, p, 0); got != "k=committed\nk=aborted\nx=1\n" {
		t.Fatalf("before the pass: %q", got)
	}
	st, err := p.Compact()
	if err != nil {
		t.Fatal(err)
	}
	if got := textOf(t, p, 0); got != "k=committed\nx=1\n" || st.RecordsRemoved != 1 {
		t.Fatalf("after the pass: %q (%+v), want the committed k and x, the aborted k gone", got, st)
	}
	want := AbortedTxn{ProducerID: 500, FirstOffset: 1, LastOffset: 3, LastStableOffset: 4}
	if got := p.AbortedTxns(0, p.LogEndOffset()); len(got) != 1 || got[0] != want {
		t.Fatalf("aborted transactions after the pass: %+v, want %+v", got, want)
	}
	// The pass covered the marker that ends the segment: the next has
	// nothing dirty to clean.
	if st, err := p.Compact(); err != nil || st.SegmentsCleaned != 0 {
		t.Fatalf("a second pass: %+v, %v; want nothing cleaned", st, err)
	}
}
