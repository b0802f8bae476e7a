package logstore

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/segfs/segfs/logstore/record"
)

// TestRecoveryDamageAcrossChunks damages one batch of a segment that spans
// several read chunks of the recovery pipeline, at batches around the chunk
// boundaries and inside chunks, in each way recovery must catch: a CRC
// mismatch, records that do not decode under a valid CRC, and a base offset
// that goes backwards or leaves a gap. Recovery must keep exactly the batches before the
// damaged one, whichever goroutine of the pipeline checks what, and the
// rebuilt text map and indexes must serve the kept records.
func TestRecoveryDamageAcrossChunks(t *testing.T) {
	// Chunks of 256 KiB, not 4 MiB: the segment spans three and a half
	// of them as before, with four to eight batches in each (30-70 KB,
	// none as large as a chunk, as before), so every case below is the
	// same case, and each copies, recovers and reads 1 MB, not 15 (59
	// cases took 15-20 s under -race).
	defer func(n int) { recoverChunkSize = n }(recoverChunkSize)
	recoverChunkSize = 256 << 10
	src := t.TempDir()
	s := openStore(t, src, newClock())
	if _, err := s.CreateTopic("d", 1, map[string]string{"index.interval.bytes": "4096"}); err != nil {
		t.Fatal(err)
	}
	p := mustPartition(t, s, "d")
	var (
		pos   []int64  // batch positions, then the end
		bases []int64  // batch base offsets
		texts []string // text of the batches before batch i
		acc   strings.Builder
	)
	for i := 0; p.active().size.Load() < int64(3*recoverChunkSize+recoverChunkSize/2); i++ {
		pos = append(pos, p.active().size.Load())
		bases = append(bases, p.LogEndOffset())
		texts = append(texts, acc.String())
		var b strings.Builder
		for j := range 300 + i%7*40 {
			fmt.Fprintf(&b, "batch %d line %d %s\n", i, j, strings.Repeat("x", 60+(i+j)%50))
		}
		if _, _, err := p.AppendLines([]byte(b.String())); err != nil {
			t.Fatal(err)
		}
		acc.WriteString(b.String())
	}
	pos = append(pos, p.active().size.Load())
	s.abandon()
	n := len(pos) - 1

	// Batches to damage: the first two, the last, one in the middle of
	// each chunk, and those around each chunk boundary (the one that
	// straddles it is reread as the first batch of the next chunk).
	pick := map[int]bool{0: true, 1: true, n - 1: true}
	for i := 0; i < n; i++ {
		for k := int64(1); k <= 3; k++ {
			edge := k * int64(recoverChunkSize)
			if pos[i] <= edge && pos[i+1] > edge {
				pick[max(i-1, 0)], pick[i], pick[min(i+1, n-1)] = true, true, true
			}
			if mid := edge - int64(recoverChunkSize/2); pos[i] <= mid && pos[i+1] > mid {
				pick[i] = true
			}
		}
	}
	logName := filepath.Join("d-0", "00000000000000000000.log")
	damages := map[string]func(b []byte){
		"crc": func(b []byte) { b[record.HeaderSize+len(b)/3] ^= 0x20 },
		"records": func(b []byte) { // one record more than the batch holds, CRC made valid
			binary.BigEndian.PutUint32(b[57:], binary.BigEndian.Uint32(b[57:])+1)
			binary.BigEndian.PutUint32(b[17:], record.CRC(b))
		},
		"offset": func(b []byte) { binary.BigEndian.PutUint64(b[0:], 0) },
		// A flipped low bit of the base offset (outside the CRC): a gap
		// the dense active segment cannot have.
		"gap": func(b []byte) { binary.BigEndian.PutUint64(b[0:], binary.BigEndian.Uint64(b[0:])+1) },
	}
	for i := range pick {
		for name, damage := range damages {
			if name == "offset" && i == 0 {
				continue // offset 0 is the first batch's own
			}
			t.Run(fmt.Sprintf("%s/batch%d", name, i), func(t *testing.T) {
				dir := t.TempDir()
				copyDir(t, src, dir)
				path := filepath.Join(dir, logName)
				// Only batch i is read, damaged and written back in
				// place: the rest of the segment is the copy's.
				f, err := os.OpenFile(path, os.O_RDWR, 0)
				if err != nil {
					t.Fatal(err)
				}
				batch := make([]byte, pos[i+1]-pos[i])
				if _, err := f.ReadAt(batch, pos[i]); err != nil {
					t.Fatal(err)
				}
				damage(batch)
				if _, err := f.WriteAt(batch, pos[i]); err != nil {
					t.Fatal(err)
				}
				if err := f.Close(); err != nil {
					t.Fatal(err)
				}
				s := openStore(t, dir, newClock())
				defer s.Close()
				p := mustPartition(t, s, "d")
				if fi, _ := os.Stat(path); fi.Size() != pos[i] {
					t.Fatalf("log truncated to %d, want %d (batch %d of %d)", fi.Size(), pos[i], i, n)
				}
				if got := p.LogEndOffset(); got != bases[i] {
					t.Fatalf("log end %d, want %d", got, bases[i])
				}
				if got := textOf(t, p, 0); got != texts[i] {
					t.Fatalf("text after recovery: %d bytes, want %d", len(got), len(texts[i]))
				}
				for _, k := range []int{0, i / 2, i - 1} {
					if k < 0 || k >= i {
						continue
					}
					// The view from batch k's second record starts with
					// the rest of batch k and runs to the end of the kept
					// text: its size is known, and only batch k's part is
					// read (reading the whole view three times per case
					// was most of this test's time under -race).
					off := bases[k] + 1
					want := texts[k+1][len(texts[k]):]
					want = want[strings.IndexByte(want, '\n')+1:]
					v, err := p.Text(off)
					if err != nil {
						t.Fatal(err)
					}
					if size, wantSize := v.Size(), int64(len(texts[i])-len(texts[k+1])+len(want)); size != wantSize {
						v.Close()
						t.Fatalf("view from offset %d: Size()=%d, want %d", off, size, wantSize)
					}
					got := make([]byte, len(want))
					n, err := v.ReadAt(got, 0)
					v.Close()
					if n != len(want) || string(got) != want {
						t.Fatalf("text from offset %d does not start with batch %d's second line (%d bytes read, %v)", off, k, n, err)
					}
				}
				if first, _, err := p.AppendLines([]byte("after\n")); err != nil || first != bases[i] {
					t.Fatalf("append after recovery: %d %v", first, err)
				}
			})
		}
	}
}
