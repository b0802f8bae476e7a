package cli

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
	"syscall"
	"testing"

	"github.com/segfs/segfs/logstore/record"
)

// scanFile is a .log image built for scanner tests, with where each of
// its batches starts and ends.
type scanFile struct {
	data   []byte
	starts []int64
	ends   []int64
	bad    map[int]bool // batches whose CRC was spoiled
	legacy map[int]bool // magic 1 messages
}

// buildScanFile writes v2 batches of values of the given sizes (a batch of
// 700 bytes is larger than most chunks the tests use), a magic 1 message
// after the third, and spoils the CRC of the fifth.
func buildScanFile(t *testing.T) *scanFile {
	t.Helper()
	f := &scanFile{bad: map[int]bool{}, legacy: map[int]bool{}}
	var bl record.Builder
	off := int64(0)
	for i, n := range []int{1, 30, 200, -1, 5, 700, 3, 61, 0, 90} {
		f.starts = append(f.starts, int64(len(f.data)))
		if n < 0 {
			// A magic 1 message: offset, size, crc, magic, attributes,
			// timestamp, key -1, value.
			val := []byte("legacy value")
			body := []byte{record.MagicV1, 0}
			body = binary.BigEndian.AppendUint64(body, 1700000000000)
			body = binary.BigEndian.AppendUint32(body, 0xffffffff)
			body = binary.BigEndian.AppendUint32(body, uint32(len(val)))
			body = append(body, val...)
			m := binary.BigEndian.AppendUint64(nil, uint64(off))
			m = binary.BigEndian.AppendUint32(m, uint32(4+len(body)))
			m = binary.BigEndian.AppendUint32(m, crc32.ChecksumIEEE(body))
			f.data = append(f.data, append(m, body...)...)
			f.legacy[i] = true
			off++
		} else {
			spec := record.DefaultSpec()
			spec.BaseOffset = off
			bl.Reset(spec)
			bl.Add(1700000000000+int64(i), nil, bytes.Repeat([]byte{'a' + byte(i)}, n), nil)
			bl.Add(1700000000000+int64(i), []byte("k"), []byte("v"), nil)
			b, err := bl.Build(nil)
			if err != nil {
				t.Fatal(err)
			}
			if i == 4 {
				b[len(b)-3] ^= 0xff
				f.bad[i] = true
			}
			f.data = append(f.data, b...)
			off += 2
		}
		f.ends = append(f.ends, int64(len(f.data)))
	}
	return f
}

// failingReader is a file whose byte at bad cannot be read (EIO), as a
// bad sector answers.
type failingReader struct {
	data []byte
	bad  int64
}

func (r *failingReader) ReadAt(p []byte, off int64) (int, error) {
	if off <= r.bad && r.bad < off+int64(len(p)) {
		return copy(p, r.data[off:r.bad]), syscall.EIO
	}
	return bytes.NewReader(r.data).ReadAt(p, off)
}

// scanResult is what a whole scan returned, Raw copied.
type scanResult struct {
	pos    []int64
	raws   [][]byte
	hdrs   []record.Header
	crcErr []bool
	legacy []bool
	err    string // the error that ended the scan; "EOF" for the end
	end    int64  // Pos after it
}

func scanWhole(r io.ReaderAt, limit, chunk int64) scanResult {
	sc := newBatchScanner(r, 0, limit)
	sc.chunk = chunk
	var res scanResult
	for {
		b, err := sc.Next(true)
		if err != nil {
			res.err, res.end = err.Error(), sc.Pos()
			return res
		}
		res.pos = append(res.pos, b.Pos)
		res.raws = append(res.raws, bytes.Clone(b.Raw))
		res.hdrs = append(res.hdrs, b.Header)
		res.crcErr = append(res.crcErr, b.CRCErr != nil)
		res.legacy = append(res.legacy, b.Legacy)
	}
}

// TestBatchScannerChunks: a whole scan reads the file in chunks, refilled
// as it moves on, and must give the batches a scan of one read gives, and
// the same ending (end of file, torn tail, corrupt framing, a file cut
// under the scan, a read error), with chunk boundaries falling anywhere in
// headers and batches: every chunk size from 1 to past the largest batch.
// Each batch's bytes are checked against the file, its header against a
// header-only scan.
func TestBatchScannerChunks(t *testing.T) {
	f := buildScanFile(t)
	n := len(f.starts)
	full := int64(len(f.data))
	garbage := bytes.Repeat([]byte{0}, record.HeaderSize)
	binary.BigEndian.PutUint32(garbage[8:], 100)
	garbage[16] = 7 // magic 7
	cases := []struct {
		name    string
		r       io.ReaderAt
		limit   int64
		batches int    // whole batches before the end
		err     string // the ending
	}{
		{"whole file", bytes.NewReader(f.data), full, n, "EOF"},
		{"torn batch", bytes.NewReader(f.data[:f.ends[n-1]-20]), f.ends[n-1] - 20, n - 1,
			(&tailError{Pos: f.starts[n-1], Bytes: f.ends[n-1] - 20 - f.starts[n-1], Reason: fmt.Sprintf("batch length says %d bytes, only %d left", f.ends[n-1]-f.starts[n-1], f.ends[n-1]-20-f.starts[n-1])}).Error()},
		{"torn header", bytes.NewReader(f.data[:f.starts[n-1]+10]), f.starts[n-1] + 10, n - 1,
			(&tailError{Pos: f.starts[n-1], Bytes: 10, Reason: "only 10 bytes, a batch header needs 61"}).Error()},
		{"corrupt framing", bytes.NewReader(append(bytes.Clone(f.data), garbage...)), full + int64(len(garbage)), n, ""},
		{"cut in a batch under the scan", bytes.NewReader(f.data[:f.starts[5]+100]), full, 5,
			(&tailError{Pos: f.starts[5], Bytes: 100, Reason: "file ended early"}).Error()},
		{"cut in a header under the scan", bytes.NewReader(f.data[:f.starts[6]+30]), full, 6,
			(&tailError{Pos: f.starts[6], Bytes: 30, Reason: "file ended early"}).Error()},
		{"read error in a batch", &failingReader{f.data, f.starts[5] + 300}, full, 5,
			fmt.Sprintf("read at position %d: %v", f.starts[5], syscall.EIO)},
		{"read error in a header", &failingReader{f.data, f.starts[7] + 3}, full, 7,
			fmt.Sprintf("read at position %d: %v", f.starts[7], syscall.EIO)},
	}
	// The headers of a header-only scan.
	var hdrs []record.Header
	sc := newBatchScanner(bytes.NewReader(f.data), 0, full)
	for {
		b, err := sc.Next(false)
		if err != nil {
			break
		}
		hdrs = append(hdrs, b.Header)
	}
	if len(hdrs) != n {
		t.Fatalf("header-only scan: %d batches, want %d", len(hdrs), n)
	}
	for _, c := range cases {
		one := scanWhole(c.r, c.limit, c.limit+1) // one read
		if c.err == "" {
			c.err = fmt.Sprintf("corrupt batch at position %d: ", full)
			if !strings.HasPrefix(one.err, c.err) {
				t.Fatalf("%s: ended with %q, want %q...", c.name, one.err, c.err)
			}
			c.err = one.err
		}
		if one.err != c.err {
			t.Fatalf("%s, one read: ended with %q, want %q", c.name, one.err, c.err)
		}
		for chunk := int64(1); chunk <= 800; chunk++ {
			got := scanWhole(c.r, c.limit, chunk)
			where := fmt.Sprintf("%s, %d-byte chunks", c.name, chunk)
			if len(got.pos) != c.batches {
				t.Fatalf("%s: %d batches, want %d (ending %s)", where, len(got.pos), c.batches, got.err)
			}
			for i := range got.pos {
				if got.pos[i] != f.starts[i] || !bytes.Equal(got.raws[i], f.data[f.starts[i]:f.ends[i]]) {
					t.Fatalf("%s: batch %d at %d of %d bytes, want the file's %d bytes at %d", where, i, got.pos[i], len(got.raws[i]), f.ends[i]-f.starts[i], f.starts[i])
				}
				if got.hdrs[i] != hdrs[i] || got.crcErr[i] != f.bad[i] || got.legacy[i] != f.legacy[i] {
					t.Fatalf("%s: batch %d: header %+v crc error %v legacy %v, want %+v %v %v", where, i, got.hdrs[i], got.crcErr[i], got.legacy[i], hdrs[i], f.bad[i], f.legacy[i])
				}
			}
			if got.err != c.err || got.end != one.end {
				t.Fatalf("%s: ended with %q at %d, want %q at %d", where, got.err, got.end, c.err, one.end)
			}
		}
	}
	// A scan may mix header-only and whole reads (segmentEnd's first
	// Next(false) is on a scanner of its own, but nothing forbids it):
	// a header-only Next moves pos past the chunk read, and the next
	// whole one must read from there.
	for chunk := int64(1); chunk <= 800; chunk++ {
		sc := newBatchScanner(bytes.NewReader(f.data), 0, full)
		sc.chunk = chunk
		for i := range n {
			whole := (i+int(chunk))%3 != 0
			b, err := sc.Next(whole)
			if err != nil || b.Pos != f.starts[i] || b.Header != hdrs[i] || whole && !bytes.Equal(b.Raw, f.data[f.starts[i]:f.ends[i]]) {
				t.Fatalf("mixed scan, %d-byte chunks: batch %d (whole %v): %v at %d, want %d", chunk, i, whole, err, b.Pos, f.starts[i])
			}
		}
		if _, err := sc.Next(true); err != io.EOF {
			t.Fatalf("mixed scan, %d-byte chunks: ended with %v", chunk, err)
		}
	}
}
