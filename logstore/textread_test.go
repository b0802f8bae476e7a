package logstore

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestTextReadPieces reads the text of a partition (several segments,
// batches from one line to thousands, keyed and unkeyed lines with a
// separator) in pieces from a byte to several megabytes, from many
// starting positions: pieces that hold whole batches are rendered in
// place, the others through the view's cache, and every byte must be the
// text's.
func TestTextReadPieces(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	defer s.Close()
	tp, err := s.CreateTopic("pieces", 1, map[string]string{"key.separator": "=", "segment.bytes": "3000000"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := tp.Partition(0)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	var want bytes.Buffer
	for i := 0; i < 120; i++ {
		var b bytes.Buffer
		lines := []int{1, 10, 1300, 5000}[r.IntN(4)]
		for j := 0; j < lines; j++ {
			switch r.IntN(4) {
			case 0:
				fmt.Fprintf(&b, "k%d=%s\n", j, strings.Repeat("v", r.IntN(200)))
			case 1:
				fmt.Fprintf(&b, "=empty key %d\n", j)
			case 2:
				b.WriteString("\n")
			default:
				fmt.Fprintf(&b, "plain %d %d %s\n", i, j, strings.Repeat("p", r.IntN(120)))
			}
		}
		if _, _, err := p.AppendLines(b.Bytes()); err != nil {
			t.Fatal(err)
		}
		want.Write(b.Bytes())
	}
	w := want.Bytes()
	v, err := p.Text(0)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if v.Size() != int64(len(w)) {
		t.Fatalf("Size %d, text %d", v.Size(), len(w))
	}
	for _, piece := range []int{1, 7, 4096, 128 << 10, 1 << 20, 4 << 20} {
		buf := make([]byte, piece)
		for round := 0; round < 6; round++ {
			off := int64(r.IntN(len(w)))
			if round == 0 {
				off = 0
			}
			for reads := 0; reads < 40 && off < int64(len(w)); reads++ {
				n, err := v.ReadAt(buf, off)
				if err != nil && err != io.EOF {
					t.Fatalf("piece %d at %d: %v", piece, off, err)
				}
				if !bytes.Equal(buf[:n], w[off:min(off+int64(piece), int64(len(w)))]) {
					t.Fatalf("piece %d at %d: %d bytes differ from the text", piece, off, n)
				}
				off += int64(n)
			}
		}
	}
}

// digitLines is a partition of a store closed at the test's end, holding
// 1,000 lines of 11 bytes, and its text.
func digitLines(t *testing.T) (*Partition, string) {
	s := openStore(t, t.TempDir(), nil)
	t.Cleanup(func() { s.Close() })
	if _, err := s.CreateTopic("digits", 1, nil); err != nil {
		t.Fatal(err)
	}
	p := mustPartition(t, s, "digits")
	text := strings.Repeat("0123456789\n", 1000)
	if _, _, err := p.AppendLines([]byte(text)); err != nil {
		t.Fatal(err)
	}
	return p, text
}

// TestSizedViewHoldsNoBuffers: a view that is only sized (what a stat of
// data opens, and the node keeps until the kernel forgets it) takes no
// buffer from the pool from the log start; its first read takes them, and
// the text is still right. A view from an offset inside a batch (offset/N,
// or data after a log start moved inside one) has read and rendered that
// batch to size it: it holds the batch from the offset on, checked, for
// its first read (lookupViews keeps at most a few such views, briefly; a
// data node drops its view's buffers when its last handle closes).
func TestSizedViewHoldsNoBuffers(t *testing.T) {
	p, text := digitLines(t)
	for _, from := range []int64{0, 500} {
		v, err := p.Text(from)
		if err != nil {
			t.Fatal(err)
		}
		want := text[from*11:]
		if v.Size() != int64(len(want)) {
			t.Fatalf("from %d: size %d, want %d", from, v.Size(), len(want))
		}
		if from == 0 && (v.buf != nil || v.cache != nil) {
			t.Fatalf("from %d: a sized view holds buffers of %d and %d bytes", from, cap(v.buf), cap(v.cache))
		}
		if from == 500 && (len(v.cache) == 0 || !strings.HasPrefix(want, string(v.cache))) {
			t.Fatalf("from %d: the view holds %q, not the text from the offset (%q...)", from, v.cache, want[:11])
		}
		got := make([]byte, len(want))
		if n, err := v.ReadAt(got, 0); n != len(want) || (err != nil && err != io.EOF) || string(got) != want {
			t.Fatalf("from %d: read %d bytes, %v; text differs: %v", from, n, err, string(got) != want)
		}
		if v.buf == nil {
			t.Fatalf("from %d: a read view has no scan buffer", from)
		}
		v.Close()
	}
}

// TestDropBuffersKeepsText: a read view gives its buffers back with
// DropBuffers (what a data node does when its last handle closes, since
// the node keeps its view until the kernel forgets it), and reads after
// it, from the start, from the middle and continuing where the last one
// stopped, return the same text; a view opened inside a batch (its first
// read's hint dropped) too.
func TestDropBuffersKeepsText(t *testing.T) {
	p, text := digitLines(t)
	for _, from := range []int64{0, 500} {
		v, err := p.Text(from)
		if err != nil {
			t.Fatal(err)
		}
		want := text[from*11:]
		// Drop before the first read: the hint Text left goes.
		v.DropBuffers()
		read := func(off, n int) string {
			got := make([]byte, n)
			k, err := v.ReadAt(got, int64(off))
			if err != nil && err != io.EOF {
				t.Fatalf("from %d: read at %d: %v", from, off, err)
			}
			return string(got[:k])
		}
		if got := read(0, 100); got != want[:100] {
			t.Fatalf("from %d: first read %q, want %q", from, got, want[:100])
		}
		if v.buf == nil && v.cur == nil {
			t.Fatalf("from %d: a read view has no scan buffer", from)
		}
		v.DropBuffers()
		if v.buf != nil || v.cur != nil || v.cache != nil {
			t.Fatalf("from %d: after DropBuffers the view holds buffers (scan %v, cursor %v, cache %v)", from, v.buf != nil, v.cur != nil, v.cache != nil)
		}
		// Continue where the last read stopped, then from the start.
		if got := read(100, len(want)-100); got != want[100:] {
			t.Fatalf("from %d: continued read differs", from)
		}
		v.DropBuffers()
		if got := read(0, len(want)); got != want {
			t.Fatalf("from %d: full read after DropBuffers differs", from)
		}
		v.Close()
		v.DropBuffers() // a closed view: nothing to do, no panic
	}
}
