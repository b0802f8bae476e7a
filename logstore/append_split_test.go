package logstore

import (
	"errors"
	"io"
	"slices"
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
// batches, on both sides of its shortcut (text no longer than the limit is
// encoded as one batch, kept if the batch fits). A 100-byte line is a
// 106-byte record and a batch header 61 bytes, so with max.message.bytes =
// 1271 eleven lines are one batch (1227 bytes); twelve (1333 bytes) do not
// fit, and neither do 21, whose text alone is over the limit: those take
// the walk, which estimates a line at 99+22 bytes and so splits at ten.
func TestAppendLinesSplitBoundary(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	defer s.Close()
	s.CreateTopic("m", 1, map[string]string{"max.message.bytes": "1271"})
	p := mustPartition(t, s, "m")
	line := strings.Repeat("x", 99) + "\n"
	for _, n := range []int{10, 11, 1, 12, 21} {
		if _, _, err := p.AppendLines([]byte(strings.Repeat(line, n))); err != nil {
			t.Fatal(err)
		}
	}
	got := batchSizes(t, p)
	want := []int{10, 11, 1, 10, 2, 10, 10, 1}
	if len(got) != len(want) {
		t.Fatalf("batches %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("batches %v, want %v", got, want)
		}
	}
	if txt := textOf(t, p, 0); txt != strings.Repeat(line, 55) {
		t.Fatal("text differs")
	}
}

// TestAppendLinesAfter: head and text become one batch, head's lines
// first, on the shortcut and through the walk (where the two are joined
// and split as one text); a head without its newline is refused and
// appends nothing.
func TestAppendLinesAfter(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	defer s.Close()
	s.CreateTopic("m", 1, map[string]string{"max.message.bytes": "1271"})
	p := mustPartition(t, s, "m")
	line := strings.Repeat("x", 99) + "\n"
	if _, _, err := p.AppendLinesAfter([]byte("unfinished"), []byte(line)); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("head without a newline: %v", err)
	}
	steps := []struct {
		head, text  string
		first, last int64
	}{
		{"h0\n", line + line, 0, 2},               // shortcut: one batch of 3
		{"h1\n", "", 3, 3},                        // head alone
		{"", line, 4, 4},                          // text alone
		{"h2\n", strings.Repeat(line, 20), 5, 25}, // walk: 21 lines, split 10+10+1
	}
	var want strings.Builder
	for _, st := range steps {
		first, last, err := p.AppendLinesAfter([]byte(st.head), []byte(st.text))
		if err != nil || first != st.first || last != st.last {
			t.Fatalf("AppendLinesAfter(%q, %d bytes) = %d, %d, %v; want %d, %d", st.head, len(st.text), first, last, err, st.first, st.last)
		}
		want.WriteString(st.head + st.text)
	}
	got := batchSizes(t, p)
	if wantB := []int{3, 1, 1, 10, 10, 1}; !slices.Equal(got, wantB) {
		t.Fatalf("batches %v, want %v", got, wantB)
	}
	if txt := textOf(t, p, 0); txt != want.String() {
		t.Fatalf("text %q, want %q", txt, want.String())
	}
}
