package logstore

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// logFileBytes is what stat says the partition directory's .log files hold
// (not the .deleted ones).
func logFileBytes(t *testing.T, dir string) int64 {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, name := range names {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// TestPartitionSize: Size is the bytes of the .log files on disk, as
// Kafka's log.size, after appends and rolls, after DeleteRecords (the
// segments below the new log start stay on disk, and in Size, until the
// retention pass), after that pass deletes them, and after compaction
// rewrites segments.
func TestPartitionSize(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, newClock())
	defer func() { s.Close() }()
	check := func(p *Partition, when string) int64 {
		t.Helper()
		want := logFileBytes(t, p.dir)
		if got := p.Size(); got != want {
			t.Fatalf("%s: Size %d, the .log files hold %d", when, got, want)
		}
		return want
	}

	tp, err := s.CreateTopic("sz", 1, map[string]string{"segment.bytes": "1000", "retention.ms": "-1", "file.delete.delay.ms": "0"})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tp.Partition(0)
	if got := check(p, "empty"); got != 0 {
		t.Fatalf("empty partition: %d bytes", got)
	}
	prev := int64(0)
	for i := 0; i < 60; i += 5 {
		if _, _, err := p.AppendLines([]byte(drLines(i, i+5))); err != nil {
			t.Fatal(err)
		}
		got := check(p, fmt.Sprintf("after appending up to %d", i+5))
		if got <= prev {
			t.Fatalf("an append did not grow the size: %d after %d", got, prev)
		}
		prev = got
	}
	if n := len(logBases(t, p.dir)); n < 4 {
		t.Fatalf("want several segments, have %d", n)
	}
	if _, err := p.DeleteRecords(p.LogEndOffset() - 3); err != nil {
		t.Fatal(err)
	}
	if got := check(p, "after DeleteRecords"); got != prev {
		t.Fatalf("DeleteRecords alone changed the size from %d to %d: nothing is deleted before the retention pass", prev, got)
	}
	if st, err := p.ApplyRetention(); err != nil || st.SegmentsDeleted == 0 {
		t.Fatalf("retention: %+v %v", st, err)
	}
	if got := check(p, "after retention"); got >= prev {
		t.Fatalf("retention deleted segments but the size stayed %d (was %d)", got, prev)
	}

	tc, err := s.CreateTopic("szc", 1, map[string]string{"segment.bytes": "2000", "cleanup.policy": "compact",
		"min.cleanable.dirty.ratio": "0.01", "file.delete.delay.ms": "0", "key.separator": "="})
	if err != nil {
		t.Fatal(err)
	}
	pc, _ := tc.Partition(0)
	for u := 0; u < 20; u++ {
		var b strings.Builder
		for k := 0; k < 10; k++ {
			fmt.Fprintf(&b, "key%d=update %03d of key %d\n", k, u, k)
		}
		if _, _, err := pc.AppendLines([]byte(b.String())); err != nil {
			t.Fatal(err)
		}
	}
	before := check(pc, "before compaction")
	if st, err := pc.Compact(); err != nil || st.RecordsRemoved == 0 {
		t.Fatalf("compact: %+v %v", st, err)
	}
	if got := check(pc, "after compaction"); got >= before {
		t.Fatalf("compaction removed records but the size stayed %d (was %d)", got, before)
	}
}
