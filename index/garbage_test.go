package index

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"
)

// garbageFiles is the table of broken index files: each must open, answer
// Lookup without panicking and be reported by SanityCheck (or a log check).
func garbageFiles() []struct {
	name string
	b    []byte
} {
	rng := rand.New(rand.NewPCG(7, 8))
	random := make([]byte, 4096)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	ones := make([]byte, 96)
	for i := range ones {
		ones[i] = 0xff
	}
	// Entries that decrease, point below the base and far past any log.
	wild := make([]byte, 0, 96)
	for _, v := range []uint32{0x7fffffff, 0x80000000, 5, 0xffffffff, 0, 0x7ffffff0, 3, 1} {
		wild = binary.BigEndian.AppendUint32(wild, v)
		wild = binary.BigEndian.AppendUint32(wild, v^0x5a5a5a5a)
		wild = binary.BigEndian.AppendUint32(wild, ^v)
	}
	return []struct {
		name string
		b    []byte
	}{
		{"zero-length", nil},
		{"13 bytes", []byte("thirteen byte")},
		{"one byte", []byte{1}},
		{"random 4096", random},
		{"random 4099", append(random[:4096:4096], 1, 2, 3)},
		{"all ones", ones},
		{"all zeros", make([]byte, 96)},
		{"wild entries", wild},
	}
}

func TestGarbageOffsetIndex(t *testing.T) {
	for _, g := range garbageFiles() {
		for _, writable := range []bool{false, true} {
			path := writeIndexFile(t, "x.index", g.b)
			x := openOffset(t, path, 1000, 1024, writable)
			err := errors.Join(x.SanityCheck(), x.CheckPositions(100), x.CheckOffsets(1001))
			exerciseOffsetIndex(t, x)
			if len(g.b) > 0 && err == nil {
				t.Errorf("%s (writable=%v): no check reported the garbage", g.name, writable)
			}
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s: error %v does not wrap ErrCorrupt", g.name, err)
			}
			if err := x.Close(); err != nil {
				t.Errorf("%s: Close: %v", g.name, err)
			}
		}
	}
}

func TestGarbageTimeIndex(t *testing.T) {
	for _, g := range garbageFiles() {
		for _, writable := range []bool{false, true} {
			path := writeIndexFile(t, "x.timeindex", g.b)
			x := openTime(t, path, 1000, 1200, writable)
			err := errors.Join(x.SanityCheck(), x.CheckOffsets(1001))
			exerciseTimeIndex(t, x)
			if len(g.b) > 0 && err == nil {
				t.Errorf("%s (writable=%v): no check reported the garbage", g.name, writable)
			}
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s: error %v does not wrap ErrCorrupt", g.name, err)
			}
			if err := x.Close(); err != nil {
				t.Errorf("%s: Close: %v", g.name, err)
			}
		}
	}
}

// exerciseOffsetIndex calls every reader and mutator on a possibly garbage
// index; it only asserts that nothing panics and results stay in range.
func exerciseOffsetIndex(t testing.TB, x *OffsetIndex) {
	n := x.Entries()
	for _, target := range []int64{-1 << 62, 0, 999, 1000, 1001, 5000, 1 << 31, 1 << 62} {
		e := x.Lookup(target)
		if n == 0 && e != (OffsetEntry{Offset: x.BaseOffset()}) {
			t.Fatalf("Lookup(%d) on empty index = %v", target, e)
		}
	}
	for i := 0; i < n; i++ {
		x.Entry(i)
	}
	x.LastOffset()
	x.SanityCheck()
	x.Append(x.LastOffset()+1, 1<<30)
	x.TruncateTo(1005)
	x.Flush()
	if x.m.writable {
		x.Trim()
		x.Resize(4096)
		x.Append(x.LastOffset()+1, 1<<30)
	}
	x.Reset()
}

func exerciseTimeIndex(t testing.TB, x *TimeIndex) {
	n := x.Entries()
	for _, target := range []int64{-1 << 62, -1, 0, 1 << 40, 1 << 62} {
		e := x.Lookup(target)
		if n == 0 && e != (TimeEntry{-1, x.BaseOffset()}) {
			t.Fatalf("Lookup(%d) on empty index = %v", target, e)
		}
	}
	for i := 0; i < n; i++ {
		x.Entry(i)
	}
	last := x.Last()
	x.SanityCheck()
	x.MaybeAppend(last.Timestamp+1, last.Offset+1, true)
	x.TruncateTo(1005)
	x.Flush()
	if x.m.writable {
		x.Trim()
		x.Resize(4096)
	}
	x.Reset()
}

// TestGarbagePointingPastLog has well-ordered entries that point past a
// shorter log: SanityCheck passes, the log checks catch it.
func TestGarbagePointingPastLog(t *testing.T) {
	opath := writeIndexFile(t, "x.index", offsetBytes(0, OffsetEntry{10, 0}, OffsetEntry{20, 1 << 20}))
	ox := openOffset(t, opath, 0, 0, false)
	wantCorrupt(t, ox.SanityCheck(), opath, "")
	wantCorrupt(t, ox.CheckPositions(4096), opath, "entry 1 position 1048576 >= log size 4096")
	wantCorrupt(t, ox.CheckOffsets(15), opath, "entry 1 offset 20 >= log next offset 15")

	tpath := writeIndexFile(t, "x.timeindex", timeBytes(0, TimeEntry{1, 10}, TimeEntry{2, 20}))
	tx := openTime(t, tpath, 0, 0, false)
	wantCorrupt(t, tx.SanityCheck(), tpath, "")
	wantCorrupt(t, tx.CheckOffsets(15), tpath, "entry 1 offset 20 >= log next offset 15")
}
