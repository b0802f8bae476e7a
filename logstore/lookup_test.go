package logstore

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/segfs/segfs/logstore/record"
)

// TestTextFromOffsetLargeBatches opens views at random offsets inside
// large batches (the lookup path renders N's batch from N from the bytes
// Text checked) and reads them in pieces of every size, first at position
// 0 and first elsewhere: the text must be the partition's text from N's
// line, with keys and without, across batch and segment ends.
func TestTextFromOffsetLargeBatches(t *testing.T) {
	for _, sep := range []string{"", "="} {
		t.Run(fmt.Sprintf("sep=%q", sep), func(t *testing.T) {
			s := openStore(t, t.TempDir(), newClock())
			defer s.Close()
			tp, err := s.CreateTopic("big", 1, map[string]string{"segment.bytes": "300000", "key.separator": sep})
			if err != nil {
				t.Fatal(err)
			}
			p, _ := tp.Partition(0)
			var lines []string
			r := rand.New(rand.NewPCG(3, 4))
			for b := 0; b < 12; b++ {
				var text strings.Builder
				for i := 0; i < 500+r.IntN(1000); i++ {
					line := fmt.Sprintf("k%d=%s", len(lines), strings.Repeat("v", r.IntN(120)))
					if r.IntN(10) == 0 {
						line = fmt.Sprintf("k%d=", len(lines)) // a tombstone with sep
					}
					lines = append(lines, line)
					text.WriteString(line + "\n")
				}
				if _, _, err := p.AppendLines([]byte(text.String())); err != nil {
					t.Fatal(err)
				}
			}
			full := textOf(t, p, 0)
			// Where each record's line starts in the full text.
			starts := make([]int, 0, len(lines)+1)
			for i, pos := 0, 0; i <= len(lines); i++ {
				starts = append(starts, pos)
				if i < len(lines) {
					pos = strings.IndexByte(full[pos:], '\n') + pos + 1
				}
			}
			if starts[len(lines)] != len(full) {
				t.Fatalf("%d lines, text of %d bytes", len(lines), len(full))
			}
			for i := 0; i < 60; i++ {
				n := r.Int64N(int64(len(lines)) + 1)
				want := full[starts[n]:]
				v, err := p.Text(n)
				if err != nil {
					t.Fatal(err)
				}
				if v.Size() != int64(len(want)) {
					t.Fatalf("offset %d: size %d, want %d", n, v.Size(), len(want))
				}
				// The first read at a random position, then the rest in
				// random pieces, then the start.
				first := r.Int64N(int64(len(want)) + 1)
				got := make([]byte, len(want))
				for off := first; off < int64(len(want)); {
					m, err := v.ReadAt(got[off:min(off+1+r.Int64N(20000), int64(len(got)))], off)
					if err != nil {
						t.Fatalf("offset %d: ReadAt(%d): %v", n, off, err)
					}
					off += int64(m)
				}
				if _, err := v.ReadAt(got[:first], 0); err != nil && first > 0 {
					t.Fatalf("offset %d: ReadAt(0): %v", n, err)
				}
				v.Close()
				if string(got) != want {
					t.Fatalf("offset %d (first read at %d): text differs", n, first)
				}
			}
		})
	}
}

// TestTextFromOffsetCorruptBatch: a view at an offset inside a batch that
// fails its CRC is an error, never text; offsets in other batches still
// read.
func TestTextFromOffsetCorruptBatch(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, newClock())
	tp, _ := s.CreateTopic("c", 1, nil)
	p, _ := tp.Partition(0)
	for b := 0; b < 3; b++ {
		p.AppendLines([]byte(strings.Repeat(strings.Repeat("c", 99)+"\n", 1300)))
	}
	s.Close()
	// Damage a value byte in the middle of the second batch.
	logs, _ := filepath.Glob(filepath.Join(dir, "c-0", "*.log"))
	f, err := os.OpenFile(logs[0], os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	var hdr [record.HeaderSize]byte
	f.ReadAt(hdr[:], 0)
	h, _ := record.ParseHeader(hdr[:])
	f.WriteAt([]byte("X"), h.Size()+h.Size()/2)
	f.Close()
	s = openStore(t, dir, nil)
	defer s.Close()
	p = mustPartition(t, s, "c")
	for _, n := range []int64{1300, 1301, 1950, 2599} {
		v, err := p.Text(n)
		if err == nil {
			buf := make([]byte, 8192)
			m, rerr := v.ReadAt(buf, 0)
			v.Close()
			t.Fatalf("offset %d: Text ok, read %d bytes, %v", n, m, rerr)
		}
		if !errors.Is(err, record.ErrCorrupt) {
			t.Fatalf("offset %d: %v, want ErrCorrupt", n, err)
		}
	}
	for _, n := range []int64{0, 1299, 2600, 3899} {
		v, err := p.Text(n)
		if err != nil {
			t.Fatalf("offset %d: %v", n, err)
		}
		buf := make([]byte, 100)
		if m, err := v.ReadAt(buf, 0); err != nil || m != 100 || buf[99] != '\n' {
			t.Fatalf("offset %d: read %d, %v", n, m, err)
		}
		v.Close()
	}
}
