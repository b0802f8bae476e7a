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

func TestRetentionBySizeAndTime(t *testing.T) {
	clock := newClock()
	dir := t.TempDir()
	s := openStore(t, dir, clock)
	defer s.Close()
	tp, _ := s.CreateTopic("ret", 1, map[string]string{
		"segment.bytes": "1000", "retention.bytes": "3000", "file.delete.delay.ms": "0",
	})
	p, _ := tp.Partition(0)
	for i := 0; i < 200; i++ {
		p.AppendLines([]byte(fmt.Sprintf("line %05d %s\n", i, strings.Repeat("r", 40))))
	}
	before := statusOf(t, p)
	// A reader that opened the whole log before retention keeps its view.
	old, _ := p.Text(0)
	defer old.Close()
	oldText := readAll(t, old)
	gen := p.Generation()
	st, err := p.ApplyRetention()
	if err != nil || st.SegmentsDeleted == 0 {
		t.Fatalf("retention: %+v %v", st, err)
	}
	after := statusOf(t, p)
	if after.SizeBytes > 3000+1000 || after.SizeBytes < 3000-1000 {
		t.Fatalf("retention.bytes=3000 left %d bytes (before %d)", after.SizeBytes, before.SizeBytes)
	}
	if after.LogStartOffset != st.NewLogStart || after.LogStartOffset == 0 || p.Generation() == gen {
		t.Fatalf("log start %d, gen %d→%d", after.LogStartOffset, gen, p.Generation())
	}
	if _, err := p.Text(0); err == nil {
		t.Fatal("offset 0 must be out of range after retention")
	}
	if _, err := p.Read(0, 100); err == nil {
		t.Fatal("Read below the log start must fail")
	}
	if got := readAll(t, old); got != oldText {
		t.Fatal("an open view changed under retention")
	}
	newText := textOf(t, p, p.LogStartOffset())
	if !strings.HasSuffix(oldText, newText) || !strings.HasPrefix(newText, fmt.Sprintf("line %05d", after.LogStartOffset)) {
		t.Fatalf("retained text does not start at the log start: %q", newText[:30])
	}
	// Deleted files are renamed and removed once the last reader closes.
	del, _ := filepath.Glob(filepath.Join(dir, "ret-0", "*.deleted"))
	if len(del) == 0 {
		t.Fatal("expected .deleted files while a reader holds them")
	}
	old.Close()
	time.Sleep(50 * time.Millisecond)
	if del, _ := filepath.Glob(filepath.Join(dir, "ret-0", "*.deleted")); len(del) != 0 {
		t.Fatalf("files not removed after the reader closed: %v", del)
	}

	// Time retention with an idle active segment: it is rolled, then aged out.
	tp2, _ := s.CreateTopic("old", 1, map[string]string{"retention.ms": "100", "segment.ms": "50", "file.delete.delay.ms": "0"})
	p2, _ := tp2.Partition(0)
	p2.AppendLines([]byte("a\nb\n"))
	clock.ms.Add(200)
	// One pass rolls the idle active segment and then deletes it.
	st, _ = p2.ApplyRetention()
	if st.SegmentsDeleted != 1 || p2.LogStartOffset() != 2 || p2.LogEndOffset() != 2 {
		t.Fatalf("time retention: %+v start %d", st, p2.LogStartOffset())
	}
	s.Close()
	s2 := openStore(t, dir, newClock())
	defer s2.Close()
	p2, _ = s2.Partition("old", 0)
	if p2.LogStartOffset() != 2 {
		t.Fatalf("log start not checkpointed: %d", p2.LogStartOffset())
	}
	p, _ = s2.Partition("ret", 0)
	if got := textOf(t, p, p.LogStartOffset()); got != newText {
		t.Fatal("retained text changed across restart")
	}
}

func TestCompactionConverges(t *testing.T) {
	clock := newClock()
	dir := t.TempDir()
	s, err := Open(dir, Options{Now: clock.now, Logger: discardLogger(), CleanerBufferBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tp, _ := s.CreateTopic("cmp", 1, map[string]string{
		"cleanup.policy": "compact", "key.separator": "=", "segment.bytes": "50000",
		"min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "1000", "file.delete.delay.ms": "0",
	})
	p, _ := tp.Partition(0)
	const keys, updates = 1000, 100
	latest := map[string]int64{}
	for u := 0; u < updates; u++ {
		var b strings.Builder
		for k := 0; k < keys; k++ {
			fmt.Fprintf(&b, "key%04d=value %d of %d\n", k, u, k)
		}
		first, _, err := p.AppendLines([]byte(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < keys; k++ {
			latest[fmt.Sprintf("key%04d", k)] = first + int64(k)
		}
	}
	// Tombstone ten keys; the active segment is never cleaned, so roll it
	// away with one more batch of filler updates.
	var b strings.Builder
	for k := 0; k < 10; k++ {
		fmt.Fprintf(&b, "key%04d=\n", k)
	}
	p.AppendLines([]byte(b.String()))
	for k := 990; k < 1000; k++ {
		for i := 0; i < 30; i++ {
			first, _, _ := p.AppendLines([]byte(fmt.Sprintf("key%04d=final %d\n", k, i)))
			latest[fmt.Sprintf("key%04d", k)] = first
		}
	}
	leo := p.LogEndOffset()
	st, err := p.Compact()
	if err != nil || st.SegmentsCleaned == 0 || st.RecordsRemoved == 0 {
		t.Fatalf("compact: %+v %v", st, err)
	}
	if p.LogEndOffset() != leo {
		t.Fatal("compaction changed the log end")
	}
	// Every retained record is the latest of its key (or in the active
	// segment), offsets are the original ones, and values are right.
	var dec record.Decoder
	seen := map[string]bool{}
	activeBase := p.active().base
	for _, seg := range p.acquireSegments(0) {
		active := seg == p.active()
		scanSegment(seg, &dec, func(pos int64, b []byte, h *record.Header) error {
			return dec.Records(b, func(r *record.Record) error {
				k := string(r.Key)
				// Only the closed segments are cleaned, against the keys
				// seen there: a key updated in the active segment keeps
				// its last closed value until that segment closes.
				if !active && latest[k] != r.Offset && r.Value != nil && latest[k] < activeBase {
					t.Errorf("stale record %s@%d kept (latest %d)", k, r.Offset, latest[k])
				}
				seen[k] = true
				return nil
			})
		})
		seg.release()
	}
	if len(seen) != keys {
		t.Fatalf("%d keys survive, want %d", len(seen), keys)
	}
	text := textOf(t, p, p.LogStartOffset())
	for k := 10; k < 990; k++ {
		if !strings.Contains(text, fmt.Sprintf("key%04d=value 99 of %d\n", k, k)) {
			t.Fatalf("latest value of key%04d missing", k)
		}
	}
	// Tombstones stay until delete.retention.ms has passed, then go.
	if !strings.Contains(text, "key0003=\n") {
		t.Fatal("tombstone removed before delete.retention.ms")
	}
	clock.ms.Add(5000)
	tp.SetConfig(map[string]string{"min.cleanable.dirty.ratio": "0"})
	p.AppendLines([]byte(strings.Repeat("key0999=roll\n", 2000)))
	p.firstDirty.Store(0) // clean everything again
	if _, err := p.Compact(); err != nil {
		t.Fatal(err)
	}
	text = textOf(t, p, p.LogStartOffset())
	if strings.Contains(text, "key0003=") {
		t.Fatal("tombstoned key still present after delete.retention.ms")
	}
	// The compacted log reopens cleanly and unclean (no leftovers).
	s.Close()
	if left, _ := filepath.Glob(filepath.Join(dir, "cmp-0", "*.cleaned")); len(left) != 0 {
		t.Fatalf("leftovers: %v", left)
	}
	s2 := openStore(t, dir, newClock())
	defer s2.Close()
	p, _ = s2.Partition("cmp", 0)
	if got := textOf(t, p, p.LogStartOffset()); got != text {
		t.Fatal("compacted text changed across restart")
	}
}

// TestInterruptedSwap leaves the files of a crash in the middle of a swap:
// the loader completes a .swap and drops a .cleaned.
func TestInterruptedSwap(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, newClock())
	tp, _ := s.CreateTopic("sw", 1, map[string]string{"segment.bytes": "500"})
	p, _ := tp.Partition(0)
	for i := 0; i < 40; i++ {
		p.AppendLines([]byte(fmt.Sprintf("value %d\n", i)))
	}
	want := textOf(t, p, 0)
	s.Close()
	pd := filepath.Join(dir, "sw-0")
	first := filepath.Join(pd, "00000000000000000000.log")
	b, _ := os.ReadFile(first)
	// A finished rewrite identical to the original, caught between renames.
	os.WriteFile(first+".swap", b, 0o644)
	os.Rename(first, first+".deleted")
	// An unfinished rewrite of a later segment.
	os.WriteFile(filepath.Join(pd, "00000000000000000030.log.cleaned"), []byte("partial"), 0o644)
	s = openStore(t, dir, newClock())
	defer s.Close()
	p, _ = s.Partition("sw", 0)
	if got := textOf(t, p, 0); got != want {
		t.Fatal("log differs after completing the swap")
	}
	for _, pat := range []string{"*.swap", "*.cleaned", "*.deleted"} {
		if m, _ := filepath.Glob(filepath.Join(pd, pat)); len(m) != 0 {
			t.Fatalf("leftover %v", m)
		}
	}
}
