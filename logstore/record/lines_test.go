package record

import (
	"bytes"
	"fmt"
	"math/rand/v2"
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

// firstLongLineWalk is FirstLongLine the slow way, line by line.
func firstLongLineWalk(text []byte, prefix, max int) int {
	pos := 0
	for pos < len(text) || (pos == 0 && prefix > 0) {
		j := bytes.IndexByte(text[pos:], '\n')
		if j < 0 {
			j = len(text) - pos
		}
		if prefix+j > max {
			return pos
		}
		prefix = 0
		pos += j + 1
	}
	return -1
}

// TestFirstLongLine: the windowed search agrees with a walk of the lines,
// for every limit around the lengths of short texts (the first line with
// and without bytes held before it, a last line without its newline) and
// for longer texts of random lines.
func TestFirstLongLine(t *testing.T) {
	for _, p := range []string{"", "a\n", "abc\n", "ab\nc\n", "\n\n", "abcdef\n", "a\nbcdef\n", "abcdef\ng\n", "ab\ncdef", "abc"} {
		for prefix := 0; prefix < 4; prefix++ {
			for max := 0; max < 12; max++ {
				if got, want := FirstLongLine([]byte(p), prefix, max), firstLongLineWalk([]byte(p), prefix, max); got != want {
					t.Errorf("FirstLongLine(%q, %d, %d) = %d, want %d", p, prefix, max, got, want)
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		var text []byte
		for range rng.IntN(200) {
			text = append(text, bytes.Repeat([]byte{'x'}, rng.IntN(60))...)
			text = append(text, '\n')
		}
		prefix, max := rng.IntN(20), rng.IntN(70)
		if got, want := FirstLongLine(text, prefix, max), firstLongLineWalk(text, prefix, max); got != want {
			t.Fatalf("FirstLongLine(%d bytes, %d, %d) = %d, want %d", len(text), prefix, max, got, want)
		}
	}
}

// checkAppendLinesMax splits head and text into batches of at most max
// bytes with AppendLinesMax and checks every batch: within max; the very
// batch AppendLinesAfter makes of the lines it took (so a limit changes
// where batches end, never their bytes); full (the next line would not
// have fit); and together all of head and text, or up to a line that
// does not fit a batch alone.
func checkAppendLinesMax(t *testing.T, head, text, sep []byte, max int) {
	t.Helper()
	dst := []byte("prefix")
	for len(head)+len(text) > 0 {
		b, n, used := AppendLinesMax(dst, head, text, 7, sep, max)
		if string(b[:6]) != "prefix" {
			t.Fatal("dst prefix overwritten")
		}
		b = b[6:]
		all := append(bytes.Clone(head), text...)
		next := bytes.IndexByte(all, '\n') + 1
		if next == 0 {
			next = len(all)
		}
		if used == 0 {
			one, _ := AppendLines(nil, all[:next], 7, sep)
			if n != 0 || len(b) != 0 || len(one) <= max {
				t.Fatalf("max %d: nothing taken (%d records, %d bytes) though the first line's batch is %d bytes", max, n, len(b), len(one))
			}
			return
		}
		if len(b) > max {
			t.Fatalf("max %d: batch of %d bytes", max, len(b))
		}
		var want []byte
		var wn int
		if used >= len(head) {
			want, wn = AppendLinesAfter(nil, head, text[:used-len(head)], 7, sep)
		} else {
			want, wn = AppendLinesAfter(nil, nil, head[:used], 7, sep)
		}
		if !bytes.Equal(b, want) || n != wn {
			t.Fatalf("max %d: batch of %d lines differs from AppendLinesAfter's", max, n)
		}
		if used < len(all) {
			more := used + bytes.IndexByte(all[used:], '\n') + 1
			if more == used {
				more = len(all)
			}
			if bigger, _ := AppendLines(nil, all[:more], 7, sep); len(bigger) <= max {
				t.Fatalf("max %d: batch of %d bytes stops before a line that fits (%d bytes with it)", max, len(b), len(bigger))
			}
		}
		if used >= len(head) {
			text, head = text[used-len(head):], nil
		} else {
			head = head[used:]
		}
	}
}

// TestAppendLinesMax: batches under a limit, with and without a key
// separator, a head line first, lines whose varints change width (the
// fast path's edges), limits from below one record to above the text.
func TestAppendLinesMax(t *testing.T) {
	var text []byte
	for i, l := range []int{0, 5, 63, 64, 99, 100, 1000, 4095, 4096, 8191, 8192, 3, 0, 17} {
		line := bytes.Repeat([]byte{'a' + byte(i)}, l)
		if i%3 == 1 && l > 2 {
			line[l/2] = '='
		}
		text = append(append(text, line...), '\n')
	}
	for _, sep := range []string{"", "="} {
		for _, head := range []string{"", "head=line\n"} {
			maxes := []int{0, HeaderSize, HeaderSize + 8, 200, 1000, 4200, 8300, 9000, 20000, 1 << 20}
			// Limits a batch fills exactly, with 1 to 6 lines.
			for rest, k := text, 0; k < 6; k++ {
				rest = rest[bytes.IndexByte(rest, '\n')+1:]
				exact, _ := AppendLinesAfter(nil, []byte(head), text[:len(text)-len(rest)], 7, []byte(sep))
				maxes = append(maxes, len(exact))
			}
			for _, max := range maxes {
				checkAppendLinesMax(t, []byte(head), text, []byte(sep), max)
			}
		}
	}
	// Many short lines: offset deltas past 64 and 8192.
	many := bytes.Repeat([]byte("0123456789\n"), 10000)
	for _, max := range []int{1000, 1271, 100000, 1000000} {
		checkAppendLinesMax(t, []byte("h\n"), many, nil, max)
	}
}
