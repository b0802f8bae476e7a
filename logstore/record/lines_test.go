package record

import (
	"bytes"
	"fmt"
	"testing"
)

// linesViaBuilder is the batch AppendLines must produce for text without a
// key separator, built by the general Builder: one null-key record per
// line.
func linesViaBuilder(t *testing.T, text []byte, ts int64) []byte {
	t.Helper()
	var bl Builder
	for line := range bytes.Lines(text) {
		bl.Add(ts, nil, bytes.TrimSuffix(line, []byte{'\n'}), nil)
	}
	b, err := bl.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAppendLinesNoKeyMatchesBuilder pins the unlooped frame writer of the
// no-separator path to the Builder byte for byte where its varints change
// width: line lengths around 63/64 and 4095/4096 bytes (one and two zig-zag
// bytes, and where the fast path gives way to the general one) and offset
// deltas across 64 and 8192, in one piece and split after the first line
// as the mount splits.
func TestAppendLinesNoKeyMatchesBuilder(t *testing.T) {
	var texts [][]byte
	for _, l := range []int{0, 1, 61, 62, 63, 64, 65, 120, 4090, 4091, 4092, 4095, 4096, 4097, 8191, 8192, 9000, 70000} {
		texts = append(texts, append(bytes.Repeat([]byte{'x'}, l), '\n'))
	}
	// Counts that carry the offset delta past 63 and past 8191.
	var many []byte
	for i := range 8300 {
		many = fmt.Appendf(many, "%d\n", i%97)
	}
	texts = append(texts, many, bytes.Repeat([]byte("\n"), 9000))
	var mixed []byte
	for i := range 300 {
		mixed = append(mixed, bytes.Repeat([]byte{'a' + byte(i%26)}, (i*37)%5000)...)
		mixed = append(mixed, '\n')
	}
	texts = append(texts, mixed)

	for i, text := range texts {
		want := linesViaBuilder(t, text, 1700000000000)
		got, n := AppendLines(nil, text, 1700000000000, nil)
		if !bytes.Equal(got, want) {
			t.Fatalf("text %d (%d bytes, %d lines): batch differs from the Builder's", i, len(text), n)
		}
		// The same batch from head + rest, the mount's split.
		if j := bytes.IndexByte(text, '\n'); j+1 < len(text) {
			got, _ = AppendLinesAfter(nil, text[:j+1], text[j+1:], 1700000000000, nil)
			if !bytes.Equal(got, want) {
				t.Fatalf("text %d split after its first line: batch differs from the Builder's", i)
			}
		}
	}
}
