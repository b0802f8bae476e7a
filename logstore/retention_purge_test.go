package logstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRetentionPurgesQuietPartition: retention.ms deletes the active
// segment too once its newest record is older, as Kafka's does (the
// well-known purge: retention.ms=1000 on a quiet topic). A new empty
// segment is rolled at the log end first, so the log start becomes the
// log end and the next record keeps its offset; a view opened before the
// purge keeps its text and goes on with the records appended after it,
// while a new one is empty. The empty segment left is never deleted.
func TestRetentionPurgesQuietPartition(t *testing.T) {
	clock := newClock()
	dir := t.TempDir()
	s := openStore(t, dir, clock)
	defer func() { s.Close() }()
	tp, _ := s.CreateTopic("q", 1, map[string]string{"retention.ms": "1000", "file.delete.delay.ms": "0"})
	p, _ := tp.Partition(0)
	if _, _, err := p.AppendLines([]byte("a\nb\nc\n")); err != nil {
		t.Fatal(err)
	}
	old, err := p.Text(0)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if got := readAll(t, old); got != "a\nb\nc\n" {
		t.Fatalf("view reads %q", got)
	}
	if st, err := p.ApplyRetention(); err != nil || st.SegmentsDeleted != 0 || p.LogStartOffset() != 0 {
		t.Fatalf("records younger than retention.ms were deleted: %+v %v", st, err)
	}
	gen := p.Generation()
	clock.ms.Add(2000)
	st, err := p.ApplyRetention()
	if err != nil || st.SegmentsDeleted != 1 || st.NewLogStart != 3 {
		t.Fatalf("retention.ms=1000 two seconds after the last record: %+v %v (log start %d)", st, err, p.LogStartOffset())
	}
	status := statusOf(t, p)
	if status.LogStartOffset != 3 || status.LogEndOffset != 3 || status.Segments != 1 || status.SizeBytes != 0 || status.ActiveSegmentBaseOffset != 3 {
		t.Fatalf("after the purge: %+v", status)
	}
	if p.Generation() == gen {
		t.Fatal("the purge did not start a new generation")
	}
	if _, err := os.Stat(filepath.Join(dir, "q-0", segmentName(0)+logSuffix)); err == nil {
		t.Fatal("the purged segment's .log is still there under its name")
	}
	if _, err := p.Text(0); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("Text(0) below the new log start: %v", err)
	}
	if _, err := p.Read(0, 1<<20); err == nil {
		t.Fatal("Read(0) below the new log start succeeded")
	}
	if got := textOf(t, p, 3); got != "" {
		t.Fatalf("a new view after the purge reads %q", got)
	}
	if off, ok, err := p.OffsetForTime(0); err != nil || ok {
		t.Fatalf("OffsetForTime(0) on the purged log found offset %d (%v)", off, err)
	}
	// The empty segment left is never deleted, however old.
	clock.ms.Add(1_000_000)
	if st, err := p.ApplyRetention(); err != nil || st.SegmentsDeleted != 0 {
		t.Fatalf("a pass over the empty log: %+v %v", st, err)
	}
	if base, _, err := p.AppendLines([]byte("d\n")); err != nil || base != 3 {
		t.Fatalf("the record after the purge got offset %d (%v), want 3", base, err)
	}
	if got := readAll(t, old); got != "a\nb\nc\nd\n" {
		t.Fatalf("the view opened before the purge reads %q, want it to go on with d", got)
	}
	if got := textOf(t, p, 3); got != "d\n" {
		t.Fatalf("a new view reads %q", got)
	}
	s.Close()
	s = openStore(t, dir, clock)
	p, _ = s.Partition("q", 0)
	if p.LogStartOffset() != 3 || p.LogEndOffset() != 4 || textOf(t, p, 3) != "d\n" {
		t.Fatalf("after reopening: start %d end %d", p.LogStartOffset(), p.LogEndOffset())
	}
}

// TestRetentionBytesZeroEmptiesPartition: retention.bytes counts every
// segment, the active one included, and retention.bytes=0 deletes them
// all (Kafka's size rule); a crash right after the purge loses nothing
// and gives back no record.
func TestRetentionBytesZeroEmptiesPartition(t *testing.T) {
	clock := newClock()
	dir := t.TempDir()
	s := openStore(t, dir, clock)
	defer func() { s.Close() }()
	tp, _ := s.CreateTopic("b", 1, map[string]string{"segment.bytes": "1000", "file.delete.delay.ms": "0"})
	p, _ := tp.Partition(0)
	for i := 0; i < 60; i++ {
		if _, _, err := p.AppendLines([]byte(fmt.Sprintf("line %02d %s\n", i, strings.Repeat("x", 30)))); err != nil {
			t.Fatal(err)
		}
	}
	segs := statusOf(t, p).Segments
	if segs < 3 {
		t.Fatalf("%d segments, want several", segs)
	}
	total := p.Size()
	// Exactly the size of the log: nothing goes.
	tp.SetConfig(map[string]string{"retention.bytes": strconv.FormatInt(total, 10)})
	if st, err := p.ApplyRetention(); err != nil || st.SegmentsDeleted != 0 {
		t.Fatalf("retention.bytes = the log's size: %+v %v", st, err)
	}
	tp.SetConfig(map[string]string{"retention.bytes": "0"})
	st, err := p.ApplyRetention()
	if err != nil || st.SegmentsDeleted != segs || st.BytesFreed != total {
		t.Fatalf("retention.bytes=0 over %d segments of %d bytes: %+v %v", segs, total, st, err)
	}
	if status := statusOf(t, p); status.LogStartOffset != 60 || status.LogEndOffset != 60 || status.Segments != 1 || status.SizeBytes != 0 {
		t.Fatalf("after retention.bytes=0: %+v", status)
	}
	if st, err := p.ApplyRetention(); err != nil || st.SegmentsDeleted != 0 {
		t.Fatalf("a second pass over the empty log: %+v %v", st, err)
	}
	s.abandon()
	s = openStore(t, dir, clock)
	p, _ = s.Partition("b", 0)
	if p.LogStartOffset() != 60 || p.LogEndOffset() != 60 {
		t.Fatalf("after a crash: start %d end %d, want 60 60", p.LogStartOffset(), p.LogEndOffset())
	}
	if base, _, err := p.AppendLines([]byte("next\n")); err != nil || base != 60 {
		t.Fatalf("next record at %d (%v), want 60", base, err)
	}
}

// TestRetentionRulesContinueInOrder: as in Kafka's deleteOldSegments, the
// time rule goes on from where the size rule stopped. The first segment
// carries a timestamp in the future (a clock that jumped back), so time
// alone deletes nothing; once retention.bytes takes it, every older
// segment after it goes by time.
func TestRetentionRulesContinueInOrder(t *testing.T) {
	clock := newClock()
	s := openStore(t, t.TempDir(), clock)
	defer s.Close()
	tp, _ := s.CreateTopic("o", 1, map[string]string{"segment.bytes": "1000", "retention.ms": "1000", "file.delete.delay.ms": "0"})
	p, _ := tp.Partition(0)
	t0 := clock.ms.Load()
	clock.ms.Store(t0 + 1_000_000)
	line := func(i int) []byte { return []byte(fmt.Sprintf("line %02d %s\n", i, strings.Repeat("x", 30))) }
	p.AppendLines(line(0))
	b := p.Size() // every line is a batch of this size
	i := 1
	for ; p.Size() <= 1000-b; i++ { // no roll yet (maybeRollLocked)
		p.AppendLines(line(i))
	}
	clock.ms.Store(t0) // the clock jumps back
	for ; i < 60; i++ {
		p.AppendLines(line(i))
	}
	clock.ms.Store(t0 + 10_000)
	if st, err := p.ApplyRetention(); err != nil || st.SegmentsDeleted != 0 {
		t.Fatalf("time retention passed a segment from the future: %+v %v", st, err)
	}
	first := p.acquireSegmentsReleased()[0]
	tp.SetConfig(map[string]string{"retention.bytes": strconv.FormatInt(p.Size()-first.size.Load(), 10)})
	segs := statusOf(t, p).Segments
	st, err := p.ApplyRetention()
	if err != nil || st.SegmentsDeleted != segs || p.LogStartOffset() != 60 {
		t.Fatalf("size then time over %d segments: %+v %v (log start %d)", segs, st, err, p.LogStartOffset())
	}
}

// TestRetentionPurgeRacesAppends: purges (retention.bytes=0) run over and
// over while a writer appends. The roll and the deletion happen under the
// append lock, so every append lands either in a segment the purge then
// deletes, whole, or in the new one: offsets stay dense, none is handed
// out twice, and a view opened before reads every line once, in order.
func TestRetentionPurgeRacesAppends(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	defer s.Close()
	tp, _ := s.CreateTopic("race", 1, map[string]string{"segment.bytes": "1000", "retention.bytes": "0", "file.delete.delay.ms": "0"})
	p, _ := tp.Partition(0)
	v, err := p.Text(0)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	const lines = 3000
	var want strings.Builder
	done := make(chan error, 1)
	go func() {
		for i := 0; i < lines; i++ {
			line := fmt.Sprintf("line %d\n", i)
			base, _, err := p.AppendLines([]byte(line))
			if err == nil && base != int64(i) {
				err = fmt.Errorf("line %d got offset %d", i, base)
			}
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i := 0; i < lines; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	deleted := 0
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		default:
		}
		st, err := p.ApplyRetention()
		if err != nil {
			t.Fatal(err)
		}
		deleted += st.SegmentsDeleted
	}
	if st := statusOf(t, p); st.LogStartOffset != lines || st.LogEndOffset != lines || st.SizeBytes != 0 {
		t.Fatalf("after the last pass: %+v", st)
	}
	t.Logf("%d segments deleted while the writer ran", deleted)
	if deleted == 0 {
		t.Fatal("no pass deleted anything while the writer ran")
	}
	if got := readAll(t, v); got != want.String() {
		t.Fatalf("the view opened before reads %d bytes, want %d", len(got), want.Len())
	}
}

// TestIdleRollFailureDoesNotFence: the retention pass's roll of an idle
// active segment (segment.ms) that cannot create the new segment (here a
// directory in the way of its .log; ENOSPC or EDQUOT in life) fails that
// pass and leaves the partition writable, as an append's roll does; the
// next pass rolls. It used to fence the partition, so a full disk at an
// idle roll refused every later append until a restart.
func TestIdleRollFailureDoesNotFence(t *testing.T) {
	clock := newClock()
	s := openStore(t, t.TempDir(), clock)
	defer s.abandon()
	tp, err := s.CreateTopic("idle", 1, map[string]string{"segment.ms": "1000"})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tp.Partition(0)
	if _, _, err := p.AppendLines([]byte("a\nb\n")); err != nil {
		t.Fatal(err)
	}
	// Not empty, or createSegment's clean-up would remove it.
	in := filepath.Join(p.dir, segmentName(2)+logSuffix)
	if err := os.MkdirAll(filepath.Join(in, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	clock.ms.Add(5000)
	if _, err := p.ApplyRetention(); err == nil {
		t.Fatal("the pass rolled with a directory in the way of the new segment")
	}
	if p.Fenced() {
		t.Fatal("a failed idle roll fenced the partition")
	}
	if err := os.RemoveAll(in); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ApplyRetention(); err != nil {
		t.Fatalf("the next pass: %v", err)
	}
	if _, _, err := p.AppendLines([]byte("c\n")); err != nil {
		t.Fatalf("append after the retried roll: %v", err)
	}
	p.mu.RLock()
	n := len(p.segs)
	p.mu.RUnlock()
	if n != 2 {
		t.Fatalf("%d segments after the retried roll, want 2", n)
	}
}
