package logstore

import (
	"fmt"
	"strings"
	"testing"
)

// TestViewKeepsSegmentsRolledAndDeleted opens a view, then rolls several
// segments and deletes them with retention before the view reads again:
// the view still reads every line once (its segments were pinned before
// they left the partition), while a new view starts at the new log start.
func TestViewKeepsSegmentsRolledAndDeleted(t *testing.T) {
	clock := newClock()
	s := openStore(t, t.TempDir(), clock)
	defer s.Close()
	tp, _ := s.CreateTopic("pin", 1, map[string]string{
		"segment.bytes": "1000", "retention.ms": "1000", "file.delete.delay.ms": "0",
	})
	p, _ := tp.Partition(0)
	var want strings.Builder
	appendN := func(from, to int) {
		for i := from; i < to; i++ {
			line := fmt.Sprintf("line %04d %s\n", i, strings.Repeat("x", 30))
			want.WriteString(line)
			if _, _, err := p.AppendLines([]byte(line)); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendN(0, 10)
	v, err := p.Text(0)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if got := readAll(t, v); got != want.String() {
		t.Fatalf("view reads %q", got)
	}
	appendN(10, 200) // many rolls the view has not seen
	clock.ms.Add(10_000)
	st, err := p.ApplyRetention()
	if err != nil || st.SegmentsDeleted < 5 {
		t.Fatalf("retention: %+v %v", st, err)
	}
	if got := readAll(t, v); got != want.String() {
		t.Fatalf("the view skipped or repeated text under retention: %d bytes, want %d", len(got), want.Len())
	}
	if got, all := textOf(t, p, p.LogStartOffset()), want.String(); !strings.HasSuffix(all, got) || len(got) >= len(all) {
		t.Fatalf("a new view reads %d bytes of %d", len(got), len(all))
	}
}

// TestTombstonesExpireWithoutWrites: on a compacted topic an idle active
// segment is rolled by the retention pass once segment.ms passes; the
// cleaner then keeps the tombstones it finds for delete.retention.ms and
// removes them afterwards without any new dirty record (Kafka's
// logsWithTombstonesExpired).
func TestTombstonesExpireWithoutWrites(t *testing.T) {
	clock := newClock()
	s := openStore(t, t.TempDir(), clock)
	defer s.Close()
	tp, _ := s.CreateTopic("tomb", 1, map[string]string{
		"cleanup.policy": "compact", "key.separator": "=", "segment.ms": "100",
		"min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "1000", "file.delete.delay.ms": "0",
	})
	p, _ := tp.Partition(0)
	if _, _, err := p.AppendLines([]byte("a=1\nb=1\na=2\nb=\n")); err != nil {
		t.Fatal(err)
	}
	clock.ms.Add(200)
	if _, err := p.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	if st := statusOf(t, p); st.Segments != 2 || st.ActiveSegmentBaseOffset != 4 {
		t.Fatalf("the idle active segment of a compacted topic was not rolled: %+v", st)
	}
	size := statusOf(t, p).SizeBytes
	st, err := p.Compact()
	if err != nil || st.RecordsRemoved != 2 {
		t.Fatalf("first clean: %+v %v", st, err)
	}
	// The pass reports (and the daemon logs) the bytes it freed.
	if after := statusOf(t, p).SizeBytes; st.BytesFreed <= 0 || st.BytesFreed != size-after {
		t.Fatalf("first clean freed %d bytes by its stats, %d → %d by status", st.BytesFreed, size, after)
	}
	if got := textOf(t, p, 0); got != "a=2\nb=\n" {
		t.Fatalf("after the first clean: %q", got)
	}
	clock.ms.Add(500)
	if st, _ := p.Compact(); st.SegmentsCleaned != 0 {
		t.Fatalf("cleaned again before the delete horizon: %+v", st)
	}
	clock.ms.Add(1000)
	st, err = p.Compact()
	if err != nil || st.RecordsRemoved != 1 {
		t.Fatalf("clean after the delete horizon: %+v %v", st, err)
	}
	if got := textOf(t, p, 0); got != "a=2\n" {
		t.Fatalf("the tombstone outlived delete.retention.ms: %q", got)
	}
	if st, _ := p.Compact(); st.SegmentsCleaned != 0 {
		t.Fatalf("cleaned again with nothing to do: %+v", st)
	}
}

// TestTombstonesExpireAfterRestart: the delete horizon of the tombstones a
// pass kept is not lost with the daemon: after a restart, an idle
// compacted topic's tombstones still go once delete.retention.ms passes.
func TestTombstonesExpireAfterRestart(t *testing.T) {
	clock := newClock()
	dir := t.TempDir()
	s := openStore(t, dir, clock)
	tp, _ := s.CreateTopic("tomb", 1, map[string]string{
		"cleanup.policy": "compact", "key.separator": "=", "segment.ms": "100",
		"min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "1000", "file.delete.delay.ms": "0",
	})
	p, _ := tp.Partition(0)
	if _, _, err := p.AppendLines([]byte("a=1\nb=1\na=2\nb=\n")); err != nil {
		t.Fatal(err)
	}
	clock.ms.Add(200)
	if _, err := p.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	if st, err := p.Compact(); err != nil || st.RecordsRemoved != 2 {
		t.Fatalf("first clean: %+v %v", st, err)
	}
	if got := textOf(t, p, 0); got != "a=2\nb=\n" {
		t.Fatalf("after the first clean: %q", got)
	}
	s.Close()
	for _, when := range []string{"before", "after"} {
		later := newClock()
		later.ms.Store(clock.ms.Load() + 500)
		if when == "after" {
			later.ms.Add(1000) // past the delete horizon
		}
		s = openStore(t, dir, later)
		p, _ = s.Partition("tomb", 0)
		st, err := p.Compact()
		if err != nil {
			t.Fatal(err)
		}
		got := textOf(t, p, 0)
		if when == "before" && (st.SegmentsCleaned != 0 || got != "a=2\nb=\n") {
			t.Fatalf("restarted before the delete horizon: pass %+v, text %q", st, got)
		}
		if when == "after" && (st.RecordsRemoved != 1 || got != "a=2\n") {
			t.Fatalf("restarted after the delete horizon: pass %+v, text %q; the tombstone stays", st, got)
		}
		s.Close()
	}
}
