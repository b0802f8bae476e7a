package fs

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// feed emulates the kernel and a writer: it sends p in chunks of the given
// sizes, resending the remainder after a short write as the kernel's
// caller would, and collects the records the assembler lets through. It
// stops at the first error and returns it.
func feed(a *lineAssembler, p []byte, sizes []int, limit int) (records []string, err error) {
	i := 0
	for len(p) > 0 {
		size := len(p)
		if i < len(sizes) && sizes[i] > 0 && sizes[i] < size {
			size = sizes[i]
		}
		i++
		chunk := p[:size]
		head, lines, keep, n, err := a.add(chunk, limit)
		if err != nil {
			// As dataHandle.Write: add's own refusal leaves the
			// assembler as add left it.
			return records, err
		}
		if head != nil && (len(head) == 0 || head[len(head)-1] != '\n' || bytes.Count(head, []byte{'\n'}) != 1) {
			return records, fmt.Errorf("head %q is not one complete line", head)
		}
		if head != nil || lines != nil {
			for _, l := range strings.SplitAfter(string(head)+string(lines), "\n") {
				if l != "" {
					records = append(records, strings.TrimSuffix(l, "\n"))
				}
			}
		}
		a.commit(head, lines, keep)
		p = p[n:]
	}
	return records, nil
}

func expectedRecords(p []byte) []string {
	var out []string
	for _, l := range strings.SplitAfter(string(p), "\n") {
		if l != "" {
			out = append(out, strings.TrimSuffix(l, "\n"))
		}
	}
	return out
}

func finish(a *lineAssembler, records []string) []string {
	if l := a.take(); l != nil {
		records = append(records, strings.TrimSuffix(string(l), "\n"))
	}
	return records
}

func longestLine(p []byte) int {
	m := 0
	for _, l := range bytes.Split(p, []byte("\n")) {
		m = max(m, len(l))
	}
	return m
}

func FuzzLineAssemblerChunking(f *testing.F) {
	f.Add([]byte("a\nbb\nccc\n"), int64(1))
	f.Add([]byte("one line without newline"), int64(2))
	f.Add([]byte("\n\n\nx\n"), int64(3))
	f.Add(bytes.Repeat([]byte("0123456789\n"), 500), int64(4))
	f.Fuzz(func(t *testing.T, p []byte, seed int64) {
		rng := rand.New(rand.NewSource(seed))
		limit := longestLine(p) + rng.Intn(3)
		if limit == 0 {
			limit = 1
		}
		var sizes []int
		for range len(p) + 1 {
			sizes = append(sizes, 1+rng.Intn(len(p)+1))
		}
		var a lineAssembler
		got, err := feed(&a, p, sizes, limit)
		if err != nil {
			t.Fatalf("no line exceeds %d, got %v", limit, err)
		}
		got = finish(&a, got)
		want := expectedRecords(p)
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") || len(got) != len(want) {
			t.Fatalf("chunks %v:\n got %q\nwant %q", sizes, got, want)
		}
	})
}

func TestLineAssemblerRandomChunkings(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var b strings.Builder
	for i := range 2000 {
		b.WriteString(strings.Repeat("x", rng.Intn(300)))
		if i%7 != 0 {
			b.WriteString("\n")
		}
	}
	p := []byte(b.String())
	want := expectedRecords(p)
	for trial := range 40 {
		// Room for them all at once: growing the slice to some 300,000
		// values append by append was about half of this test's CPU time
		// under -race.
		sizes := make([]int, 0, len(p))
		for range len(p) {
			sizes = append(sizes, 1+rng.Intn(5000))
		}
		var a lineAssembler
		got, err := feed(&a, p, sizes, longestLine(p))
		if err != nil {
			t.Fatal(err)
		}
		got = finish(&a, got)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("trial %d: records differ", trial)
		}
	}
}

func TestLineAssemblerTooLong(t *testing.T) {
	const limit = 100
	long := strings.Repeat("L", 250)
	tests := []struct {
		name  string
		input string
		sizes []int
		want  []string // records before the error
	}{
		{"long line in one chunk", "a\n" + long + "\nb\n", []int{1000}, nil},
		{"long line across chunks", "a\n" + long + "\nb\n", []int{10, 40, 40, 40, 40}, []string{"a"}},
		{"long unfinished line", "a\n" + long, []int{60, 60, 60, 60, 60}, []string{"a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a lineAssembler
			got, err := feed(&a, []byte(tc.input), tc.sizes, limit)
			if !errors.As(err, new(errLineTooLong)) {
				t.Fatalf("err = %v, want errLineTooLong", err)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("records %q, want %q", got, tc.want)
			}
			if a.pending() {
				t.Fatalf("a refused line left a partial %q", a.partial)
			}
		})
	}

	// The writer resends the failed chunk after a short write: the tail of
	// the refused line must not become a record, and a later line must.
	var a lineAssembler
	if _, _, _, _, err := a.add([]byte("start-"+strings.Repeat("L", 90)), limit); err != nil {
		t.Fatal(err)
	}
	a.commit(nil, nil, []byte("start-"+strings.Repeat("L", 90)))
	if _, _, _, _, err := a.add([]byte(strings.Repeat("L", 20)+"\nnext\n"), limit); err == nil {
		t.Fatal("a 116-byte line was accepted")
	}
	if _, _, _, _, err := a.add([]byte(strings.Repeat("L", 20)+"\nnext\n"), limit); err == nil {
		t.Fatal("the resent tail of a refused line was accepted")
	}
	head, lines, keep, n, err := a.add([]byte("after\n"), limit)
	if err != nil || head != nil || string(lines) != "after\n" || n != 6 {
		t.Fatalf("after a refused line: %q %q %q %d %v", head, lines, keep, n, err)
	}
}

// TestFailedAppendKeepsPartial: when the append of a chunk's lines fails
// for a reason the writer may retry (ENOSPC: the caller neither commits
// nor aborts), the start of the line the chunk completes stays pending, so
// the resent chunk completes the same line, not a fragment of it.
func TestFailedAppendKeepsPartial(t *testing.T) {
	var a lineAssembler
	const limit = 1 << 20
	head, lines, keep, _, err := a.add([]byte("abc"), limit)
	if err != nil || head != nil || lines != nil {
		t.Fatalf("first chunk: %q %q %v", head, lines, err)
	}
	a.commit(head, lines, keep)
	chunk := []byte("def\nghi\njk")
	for try := 0; try < 2; try++ { // the first try's append "fails"
		head, lines, keep, _, err = a.add(chunk, limit)
		if err != nil || string(head) != "abcdef\n" || string(lines) != "ghi\n" || string(keep) != "jk" {
			t.Fatalf("try %d: head %q lines %q keep %q err %v; want \"abcdef\\n\" \"ghi\\n\" \"jk\"", try, head, lines, keep, err)
		}
	}
	a.commit(head, lines, keep)
	if got := string(a.take()); got != "jk\n" {
		t.Fatalf("pending after commit %q, want \"jk\\n\"", got)
	}
}

// TestTooLongLaterLineKeepsPartial: a chunk that completes an unfinished
// line and holds, after it, a line too long is refused whole, but the
// unfinished line (acknowledged by an earlier write) stays: resending the
// good part completes it, nothing is skipped.
func TestTooLongLaterLineKeepsPartial(t *testing.T) {
	var a lineAssembler
	const limit = 100
	head, lines, keep, _, err := a.add([]byte("abc"), limit)
	if err != nil {
		t.Fatal(err)
	}
	a.commit(head, lines, keep)
	if _, _, _, _, err := a.add([]byte("def\n"+strings.Repeat("L", 200)+"\n"), limit); !errors.As(err, new(errLineTooLong)) {
		t.Fatalf("a chunk with a 200-byte line: %v, want errLineTooLong", err)
	}
	head, lines, keep, _, err = a.add([]byte("def\nnext\n"), limit)
	if err != nil || string(head) != "abcdef\n" || string(lines) != "next\n" || len(keep) != 0 {
		t.Fatalf("after the refused chunk: head %q lines %q keep %q err %v; want \"abcdef\\n\" \"next\\n\"", head, lines, keep, err)
	}
}

// TestTooLongFirstChunkSkipsNothing: a chunk that starts a line and alone
// exceeds the limit fails its write(2) whole, so the writer never resends
// the rest of that line; the next chunk through the handle (the next
// write of a logger, or of another process sharing the descriptor) is a
// line of its own and must be stored. It was refused as the long line's
// tail.
func TestTooLongFirstChunkSkipsNothing(t *testing.T) {
	const limit = 100
	var a lineAssembler
	if _, _, _, _, err := a.add([]byte(strings.Repeat("x", 150)), limit); !errors.As(err, new(errLineTooLong)) {
		t.Fatalf("a 150-byte chunk without a newline: err = %v, want errLineTooLong", err)
	}
	head, lines, _, n, err := a.add([]byte("after\n"), limit)
	if err != nil || head != nil || string(lines) != "after\n" || n != 6 {
		t.Fatalf("the line after a refused first chunk: %q %q %d %v", head, lines, n, err)
	}
}
