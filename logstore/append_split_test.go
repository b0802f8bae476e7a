package logstore

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/segfs/segfs/logstore/record"
)

// batchSizes lists the record count of each batch of the partition, and
// fails the test if a batch is larger than maxBytes.
func batchSizes(t *testing.T, p *Partition, maxBytes int) []int {
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
			if len(b) > maxBytes {
				t.Errorf("a batch of %d records is %d bytes, over %d", h.LastOffsetDelta+1, len(b), maxBytes)
			}
			out = append(out, int(h.LastOffsetDelta)+1)
		}
		s.release()
	}
	return out
}

// TestAppendLinesSplitBoundary pins where AppendLines splits a write into
// batches with max.message.bytes = 1271: each batch takes lines while it
// stays within the limit, so a batch is full when the next line's record
// would take it past. A 99-byte line's record is 108 bytes (offset deltas
// under 64), so a batch holds at most 11 of them (61 + 11*108 = 1249):
// three, ten and eleven lines are one batch each, twenty-one are eleven
// and ten. An empty line's record is 7 bytes while its offset delta is
// under 64 and 8 after: 300 empty lines are 159 (61 + 64*7 + 95*8 = 1269)
// and 141.
func TestAppendLinesSplitBoundary(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	defer s.Close()
	s.CreateTopic("m", 1, map[string]string{"max.message.bytes": "1271"})
	p := mustPartition(t, s, "m")
	line := strings.Repeat("x", 99) + "\n"
	var want strings.Builder
	for _, text := range []string{
		strings.Repeat(line, 3),
		strings.Repeat(line, 10),
		strings.Repeat(line, 11),
		strings.Repeat("\n", 300),
		strings.Repeat(line, 21),
	} {
		if _, _, err := p.AppendLines([]byte(text)); err != nil {
			t.Fatal(err)
		}
		want.WriteString(text)
	}
	got := batchSizes(t, p, 1271)
	if wantB := []int{3, 10, 11, 159, 141, 11, 10}; !slices.Equal(got, wantB) {
		t.Fatalf("batches %v, want %v", got, wantB)
	}
	if txt := textOf(t, p, 0); txt != want.String() {
		t.Fatal("text differs")
	}
}

// TestAppendLinesAfter: head and text become one batch, head's lines
// first, also when they fill more than one batch (the first batch takes
// head and as many of text's lines as fit), and stored counts every byte;
// a head without its newline is refused and appends nothing.
func TestAppendLinesAfter(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	defer s.Close()
	s.CreateTopic("m", 1, map[string]string{"max.message.bytes": "1271"})
	p := mustPartition(t, s, "m")
	line := strings.Repeat("x", 99) + "\n"
	if _, _, stored, err := p.AppendLinesAfter([]byte("unfinished"), []byte(line)); !errors.Is(err, ErrInvalidRecord) || stored != 0 {
		t.Fatalf("head without a newline: stored %d, %v", stored, err)
	}
	steps := []struct {
		head, text  string
		first, last int64
	}{
		{"h0\n", line + line, 0, 2},               // one batch of 3
		{"h1\n", "", 3, 3},                        // head alone
		{"", line, 4, 4},                          // text alone
		{"h2\n", strings.Repeat(line, 20), 5, 25}, // 21 lines: h2 and 11 fill a batch, 9 more
	}
	var want strings.Builder
	for _, st := range steps {
		first, last, stored, err := p.AppendLinesAfter([]byte(st.head), []byte(st.text))
		if err != nil || first != st.first || last != st.last || stored != len(st.head)+len(st.text) {
			t.Fatalf("AppendLinesAfter(%q, %d bytes) = %d, %d, stored %d, %v; want %d, %d", st.head, len(st.text), first, last, stored, err, st.first, st.last)
		}
		want.WriteString(st.head + st.text)
	}
	got := batchSizes(t, p, 1271)
	if wantB := []int{3, 1, 1, 12, 9}; !slices.Equal(got, wantB) {
		t.Fatalf("batches %v, want %v", got, wantB)
	}
	if txt := textOf(t, p, 0); txt != want.String() {
		t.Fatalf("text %q, want %q", txt, want.String())
	}
}

// TestAppendLinesAfterStoredPrefix: when a text split into several batches
// fails after the first (here the roll the second batch needs cannot
// create its segment), stored counts the bytes of the batches that are in
// the log, whole lines, so the mount can answer a short write; after the
// obstacle is gone the rest appends after them, nothing twice.
func TestAppendLinesAfterStoredPrefix(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	defer s.Close()
	s.CreateTopic("m", 1, map[string]string{"max.message.bytes": "1271", "segment.bytes": "1400"})
	p := mustPartition(t, s, "m")
	line := strings.Repeat("x", 99) + "\n"
	text := strings.Repeat(line, 20)
	// The 21 lines are batches of 11 and 10; the second needs a new
	// segment at offset 11, and a non-empty directory holds its name.
	block := filepath.Join(p.dir, segmentName(11)+logSuffix)
	if err := os.MkdirAll(filepath.Join(block, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	first, last, stored, err := p.AppendLinesAfter([]byte(line), []byte(text))
	if err == nil || first != 0 || last != 10 || stored != 11*len(line) {
		t.Fatalf("append with the roll blocked = %d, %d, stored %d, %v; want 0, 10, stored %d and an error", first, last, stored, err, 11*len(line))
	}
	if err := os.RemoveAll(block); err != nil {
		t.Fatal(err)
	}
	rest := strings.Repeat(line, 10)
	if first, last, stored, err = p.AppendLinesAfter(nil, []byte(rest)); err != nil || first != 11 || last != 20 || stored != len(rest) {
		t.Fatalf("the rest = %d, %d, stored %d, %v; want 11, 20, stored %d", first, last, stored, err, len(rest))
	}
	if txt := textOf(t, p, 0); txt != strings.Repeat(line, 21) {
		t.Fatalf("text has %d lines, want 21", strings.Count(txt, "\n"))
	}
}
