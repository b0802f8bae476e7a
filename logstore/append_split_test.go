package logstore

import (
	"io"
	"strings"
	"testing"

	"github.com/segfs/segfs/logstore/record"
)

// batchSizes lists the record count of each batch of the partition.
func batchSizes(t *testing.T, p *Partition) []int {
	t.Helper()
	var out []int
	for _, s := range p.acquireSegments(0) {
		sc := newScanner(s.log, s.path(logSuffix), 0, s.size.Load(), nil)
		for {
			_, b, err := sc.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			h, err := record.ParseHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, int(h.LastOffsetDelta)+1)
		}
		s.release()
	}
	return out
}

// TestAppendLinesSplitBoundary pins where AppendLines splits a write into
// batches, on both sides of its shortcut (text whose per-line estimates
// sum to at most the limit is one batch without a walk over the lines): a
// 100-byte line is estimated at 99+22 bytes and a batch header at 61, so
// with max.message.bytes = 61+10*121 ten lines are one batch and eleven
// are two (ten and one).
func TestAppendLinesSplitBoundary(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	defer s.Close()
	s.CreateTopic("m", 1, map[string]string{"max.message.bytes": "1271"})
	p := mustPartition(t, s, "m")
	line := strings.Repeat("x", 99) + "\n"
	for _, n := range []int{10, 11, 1, 21} {
		if _, _, err := p.AppendLines([]byte(strings.Repeat(line, n))); err != nil {
			t.Fatal(err)
		}
	}
	got := batchSizes(t, p)
	want := []int{10, 10, 1, 1, 10, 10, 1}
	if len(got) != len(want) {
		t.Fatalf("batches %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("batches %v, want %v", got, want)
		}
	}
	if txt := textOf(t, p, 0); txt != strings.Repeat(line, 43) {
		t.Fatal("text differs")
	}
}
