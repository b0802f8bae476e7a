package index

import (
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"
)

func TestOffsetIndexAppendRules(t *testing.T) {
	const base = 1000
	type step struct {
		offset   int64
		position int32
		err      error
	}
	for _, c := range []struct {
		name     string
		maxBytes int
		steps    []step
	}{
		{"first entry may equal base", 64, []step{{1000, 0, nil}, {1001, 10, nil}}},
		{"first entry any representable offset", 64, []step{{1500, 7, nil}}},
		{"offset must increase", 64, []step{{1005, 0, nil}, {1005, 10, ErrOrder}, {1004, 10, ErrOrder}, {1006, 10, nil}}},
		{"position may repeat", 64, []step{{1001, 50, nil}, {1002, 50, nil}}},
		{"position must not decrease", 64, []step{{1001, 50, nil}, {1002, 49, ErrOrder}}},
		{"negative position", 64, []step{{1001, -1, ErrOrder}}},
		{"below base", 64, []step{{999, 0, ErrOffsetOverflow}}},
		{"max relative offset", 64, []step{{1000 + math.MaxInt32, 0, nil}}},
		{"past max relative offset", 64, []step{{1000 + math.MaxInt32 + 1, 0, ErrOffsetOverflow}}},
		{"full at capacity", 16, []step{{1001, 0, nil}, {1002, 1, nil}, {1003, 2, ErrFull}}},
		{"maxBytes rounded down", 23, []step{{1001, 0, nil}, {1002, 1, nil}, {1003, 2, ErrFull}}},
		{"maxBytes below one entry", 7, []step{{1001, 0, ErrFull}}},
		{"full is checked first", 8, []step{{1001, 0, nil}, {1000, 0, ErrFull}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := openOffset(t, filepath.Join(t.TempDir(), "x.index"), base, c.maxBytes, true)
			var want []OffsetEntry
			for i, s := range c.steps {
				err := x.Append(s.offset, s.position)
				if !errors.Is(err, s.err) || (s.err == nil) != (err == nil) {
					t.Fatalf("step %d Append(%d, %d) = %v, want %v", i, s.offset, s.position, err, s.err)
				}
				if err == nil {
					want = append(want, OffsetEntry{s.offset, s.position})
				}
			}
			if got := offsetEntries(x); !reflect.DeepEqual(got, want) {
				t.Fatalf("entries = %v, want %v", got, want)
			}
			if err := x.SanityCheck(); err != nil {
				t.Fatalf("SanityCheck after valid appends: %v", err)
			}
		})
	}
}

func TestOffsetIndexAccessors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.index")
	x := openOffset(t, path, 50, 100, true)
	if x.Path() != path || x.BaseOffset() != 50 || x.Entries() != 0 || x.MaxEntries() != 12 || x.Full() {
		t.Fatalf("fresh index: path %q base %d entries %d max %d full %v", x.Path(), x.BaseOffset(), x.Entries(), x.MaxEntries(), x.Full())
	}
	if got := fileSize(t, path); got != 96 {
		t.Fatalf("file size %d, want 96 (100 rounded down to 8)", got)
	}
	if got := x.LastOffset(); got != 50 {
		t.Fatalf("LastOffset of empty index = %d, want base 50", got)
	}
	if err := x.Append(60, 100); err != nil {
		t.Fatal(err)
	}
	if got := x.LastOffset(); got != 60 {
		t.Fatalf("LastOffset = %d, want 60", got)
	}
	for _, i := range []int{-1, 1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Entry(%d) did not panic", i)
				}
			}()
			x.Entry(i)
		}()
	}
}

func TestOffsetIndexLookup(t *testing.T) {
	x := openOffset(t, filepath.Join(t.TempDir(), "x.index"), 100, 1024, true)
	if got := x.Lookup(500); got != (OffsetEntry{100, 0}) {
		t.Fatalf("empty Lookup = %v, want (base, 0)", got)
	}
	for _, e := range []OffsetEntry{{110, 4100}, {120, 8300}, {130, 12500}} {
		if err := x.Append(e.Offset, e.Position); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		target int64
		want   OffsetEntry
	}{
		{math.MinInt64, OffsetEntry{100, 0}},
		{0, OffsetEntry{100, 0}},
		{109, OffsetEntry{100, 0}},
		{110, OffsetEntry{110, 4100}},
		{119, OffsetEntry{110, 4100}},
		{120, OffsetEntry{120, 8300}},
		{129, OffsetEntry{120, 8300}},
		{130, OffsetEntry{130, 12500}},
		{math.MaxInt64, OffsetEntry{130, 12500}},
	} {
		if got := x.Lookup(c.target); got != c.want {
			t.Errorf("Lookup(%d) = %v, want %v", c.target, got, c.want)
		}
	}
}

// linearOffsetFloor is the obviously correct Lookup.
func linearOffsetFloor(es []OffsetEntry, base, target int64) OffsetEntry {
	best := OffsetEntry{Offset: base}
	for _, e := range es {
		if e.Offset <= target {
			best = e
		}
	}
	return best
}

// TestOffsetIndexLookupRandom compares Lookup with a linear scan on random
// indexes, sized on both sides of the 1024-entry warm section so both the
// hot and the cold search paths run.
func TestOffsetIndexLookupRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 3, 1023, 1024, 1025, 1026, 5000} {
		const base = 1 << 40
		x := openOffset(t, filepath.Join(t.TempDir(), "x.index"), base, (n+1)*OffsetEntrySize, true)
		var es []OffsetEntry
		off, pos := int64(base), int32(0)
		for i := 0; i < n; i++ {
			off += 1 + rng.Int64N(100)
			pos += int32(rng.IntN(5000))
			if err := x.Append(off, pos); err != nil {
				t.Fatal(err)
			}
			es = append(es, OffsetEntry{off, pos})
		}
		for i := 0; i < 1000; i++ {
			target := base - 10 + rng.Int64N(off-base+20)
			if i%10 == 0 && n > 0 {
				target = es[rng.IntN(n)].Offset // exact hits
			}
			if got, want := x.Lookup(target), linearOffsetFloor(es, base, target); got != want {
				t.Fatalf("n=%d Lookup(%d) = %v, want %v", n, target, got, want)
			}
		}
	}
}

func TestOffsetIndexTruncateTo(t *testing.T) {
	all := []OffsetEntry{{10, 0}, {20, 100}, {30, 200}, {40, 300}}
	for _, c := range []struct {
		offset int64
		want   int
	}{
		{0, 0}, {10, 0}, {11, 1}, {20, 1}, {21, 2}, {30, 2}, {40, 3}, {41, 4}, {math.MaxInt64, 4},
	} {
		path := filepath.Join(t.TempDir(), "x.index")
		x := openOffset(t, path, 0, 1024, true)
		for _, e := range all {
			if err := x.Append(e.Offset, e.Position); err != nil {
				t.Fatal(err)
			}
		}
		x.TruncateTo(c.offset)
		if got := offsetEntries(x); len(got) != c.want || (c.want > 0 && !reflect.DeepEqual(got, all[:c.want])) {
			t.Errorf("TruncateTo(%d): entries %v, want %v", c.offset, got, all[:c.want])
		}
		// The freed slots are zeroed so a crash leaves zeros behind.
		x.m.mu.RLock()
		tail := x.m.data[c.want*OffsetEntrySize : len(all)*OffsetEntrySize]
		if !allZero(tail) {
			t.Errorf("TruncateTo(%d) left stale bytes % x", c.offset, tail)
		}
		x.m.mu.RUnlock()
		// Appending goes on after the cut.
		if err := x.Append(min(c.offset, 1000)+1000, 1000); err != nil {
			t.Errorf("Append after TruncateTo(%d): %v", c.offset, err)
		}
	}
}

func TestOffsetIndexReset(t *testing.T) {
	x := openOffset(t, filepath.Join(t.TempDir(), "x.index"), 0, 1024, true)
	for i := int64(1); i <= 5; i++ {
		if err := x.Append(i, int32(i)); err != nil {
			t.Fatal(err)
		}
	}
	x.Reset()
	if x.Entries() != 0 || x.LastOffset() != 0 || x.Lookup(5) != (OffsetEntry{}) {
		t.Fatalf("after Reset: entries %d last %d", x.Entries(), x.LastOffset())
	}
	if err := x.Append(3, 0); err != nil {
		t.Fatal(err)
	}
}

// TestOffsetIndexReopen checks that Close trims, and that the trimmed file
// reopens with exactly the appended entries, read-only or writable.
func TestOffsetIndexReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.index")
	x, err := OpenOffsetIndex(path, 7, 10<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []OffsetEntry{{8, 0}, {9, 4097}, {20, 9000}}
	for _, e := range want {
		if err := x.Append(e.Offset, e.Position); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := x.Append(30, 9999); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close = %v, want ErrClosed", err)
	}
	if got := fileSize(t, path); got != 24 {
		t.Fatalf("size after Close = %d, want 24", got)
	}

	r := openOffset(t, path, 7, 10<<20, false)
	if got := offsetEntries(r); !reflect.DeepEqual(got, want) {
		t.Fatalf("read-only reopen: %v, want %v", got, want)
	}
	if r.MaxEntries() != 3 || !r.Full() {
		t.Fatalf("read-only reopen: max %d full %v", r.MaxEntries(), r.Full())
	}
	if err := r.Append(30, 9999); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Append read-only = %v, want ErrReadOnly", err)
	}
	if err := r.Trim(); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Trim read-only = %v, want ErrReadOnly", err)
	}
	if err := r.SanityCheck(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if got := fileSize(t, path); got != 24 {
		t.Fatalf("read-only Close changed the size to %d", got)
	}

	w := openOffset(t, path, 7, 10<<20, true)
	if got := offsetEntries(w); !reflect.DeepEqual(got, want) {
		t.Fatalf("writable reopen: %v, want %v", got, want)
	}
	if w.MaxEntries() != 10<<20/8 || fileSize(t, path) != 10<<20 {
		t.Fatalf("writable reopen: max %d size %d", w.MaxEntries(), fileSize(t, path))
	}
	if err := w.Append(21, 9000); err != nil {
		t.Fatal(err)
	}
}

// TestOffsetIndexCrashedReopen abandons a writable index without Close (as
// a crash would), so the file keeps its preallocated length. Reopening
// counts every slot, as Kafka does, and SanityCheck catches the zeros.
func TestOffsetIndexCrashedReopen(t *testing.T) {
	for _, c := range []struct {
		name    string
		entries []OffsetEntry
		want    string
	}{
		{"no entries", nil, "entry 1 offset 100 <= previous 100"},
		{"some entries", []OffsetEntry{{101, 0}, {105, 5000}}, "entry 2 offset 100 <= previous 105"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.index")
			x, err := OpenOffsetIndex(path, 100, 800, true)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range c.entries {
				if err := x.Append(e.Offset, e.Position); err != nil {
					t.Fatal(err)
				}
			}
			if err := x.Flush(); err != nil {
				t.Fatal(err)
			}
			// Drop the mapping and descriptor without trimming.
			x.m.mu.Lock()
			x.m.unmapLocked()
			x.m.f.Close()
			x.m.closed = true
			x.m.mu.Unlock()

			for _, writable := range []bool{false, true} {
				r, err := OpenOffsetIndex(path, 100, 800, writable)
				if err != nil {
					t.Fatal(err)
				}
				if r.Entries() != 100 {
					t.Fatalf("writable=%v: entries %d, want 100 (file length / 8)", writable, r.Entries())
				}
				wantCorrupt(t, r.SanityCheck(), path, c.want)
				// Rebuilding: Reset, append again, check, trim.
				if writable {
					r.Reset()
					for _, e := range c.entries {
						if err := r.Append(e.Offset, e.Position); err != nil {
							t.Fatal(err)
						}
					}
					if err := r.SanityCheck(); err != nil {
						t.Fatalf("after rebuild: %v", err)
					}
				}
				r.Close()
			}
		})
	}
}

func TestOffsetIndexSanityCheck(t *testing.T) {
	const base = 10
	for _, c := range []struct {
		name string
		file []byte
		want string
	}{
		{"empty", nil, ""},
		{"valid", offsetBytes(base, OffsetEntry{10, 0}, OffsetEntry{12, 0}, OffsetEntry{15, 300}), ""},
		{"not a multiple", make([]byte, 13), "length 13 is not a multiple of 8"},
		{"last below base", offsetBytes(base, OffsetEntry{11, 0}, OffsetEntry{5, 10}), "last offset 5 < base offset 10"},
		{"first below base", offsetBytes(base, OffsetEntry{5, 0}, OffsetEntry{11, 10}), "entry 0 offset 5 < base offset 10"},
		{"offset repeats", offsetBytes(base, OffsetEntry{11, 0}, OffsetEntry{11, 10}), "entry 1 offset 11 <= previous 11"},
		{"offset decreases", offsetBytes(base, OffsetEntry{11, 0}, OffsetEntry{12, 1}, OffsetEntry{19, 2}, OffsetEntry{17, 3}), "entry 3 offset 17 <= previous 19"},
		{"position decreases", offsetBytes(base, OffsetEntry{11, 0}, OffsetEntry{12, 1}, OffsetEntry{13, 2}, OffsetEntry{14, 200}, OffsetEntry{15, 100}), "entry 4 position 100 < previous 200"},
		{"negative position", offsetBytes(base, OffsetEntry{11, -4}), "entry 0 position -4 < 0"},
		{"zeros", make([]byte, 32), "entry 1 offset 10 <= previous 10"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeIndexFile(t, "x.index", c.file)
			for _, writable := range []bool{false, true} {
				x := openOffset(t, path, base, 1024, writable)
				wantCorrupt(t, x.SanityCheck(), path, c.want)
				x.Close()
			}
		})
	}
}

func TestOffsetIndexCheckPositionsAndOffsets(t *testing.T) {
	path := writeIndexFile(t, "x.index", offsetBytes(0, OffsetEntry{5, 0}, OffsetEntry{9, 4096}, OffsetEntry{14, 8192}))
	x := openOffset(t, path, 0, 0, false)
	for _, c := range []struct {
		logSize int64
		want    string
	}{
		{8193, ""},
		{8192, "entry 2 position 8192 >= log size 8192 (index pointing past its log)"},
		{100, "entry 1 position 4096 >= log size 100"},
		{0, "entry 0 position 0 >= log size 0"},
	} {
		wantCorrupt(t, x.CheckPositions(c.logSize), path, c.want)
	}
	for _, c := range []struct {
		next int64
		want string
	}{
		{15, ""},
		{14, "entry 2 offset 14 >= log next offset 14"},
		{6, "entry 1 offset 9 >= log next offset 6"},
	} {
		wantCorrupt(t, x.CheckOffsets(c.next), path, c.want)
	}
}

func TestOffsetIndexTrimResize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.index")
	x := openOffset(t, path, 0, 80, true)
	for i := int64(1); i <= 3; i++ {
		if err := x.Append(i*10, int32(i*100)); err != nil {
			t.Fatal(err)
		}
	}
	want := offsetEntries(x)
	check := func(step string, size int64, max int) {
		t.Helper()
		if got := fileSize(t, path); got != size {
			t.Fatalf("%s: file size %d, want %d", step, got, size)
		}
		if x.MaxEntries() != max {
			t.Fatalf("%s: MaxEntries %d, want %d", step, x.MaxEntries(), max)
		}
		if got := offsetEntries(x); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: entries %v, want %v", step, got, want)
		}
		if got := x.Lookup(25); got != (OffsetEntry{20, 200}) {
			t.Fatalf("%s: Lookup(25) = %v", step, got)
		}
	}
	check("open", 80, 10)
	if err := x.Trim(); err != nil {
		t.Fatal(err)
	}
	check("trim", 24, 3)
	if err := x.Append(40, 400); !errors.Is(err, ErrFull) {
		t.Fatalf("Append after Trim = %v, want ErrFull", err)
	}
	if err := x.Resize(1001); err != nil {
		t.Fatal(err)
	}
	check("resize up", 1000, 125)
	if err := x.Resize(8); err != nil {
		t.Fatal(err)
	}
	check("resize below entries keeps them", 24, 3)
	if err := x.Resize(40); err != nil {
		t.Fatal(err)
	}
	check("resize to 40", 40, 5)
	if err := x.Append(40, 400); err != nil {
		t.Fatal(err)
	}
	want = append(want, OffsetEntry{40, 400})
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if got := fileSize(t, path); got != 32 {
		t.Fatalf("size after Close = %d, want 32", got)
	}
	r := openOffset(t, path, 0, 0, false)
	if got := offsetEntries(r); !reflect.DeepEqual(got, want) {
		t.Fatalf("reopen: %v, want %v", got, want)
	}
}

// TestOffsetIndexTrimEmpty covers the zero-length mapping: a trimmed empty
// index has no mapping at all, and Resize brings one back.
func TestOffsetIndexTrimEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.index")
	x := openOffset(t, path, 0, 1024, true)
	if err := x.Trim(); err != nil {
		t.Fatal(err)
	}
	if fileSize(t, path) != 0 || x.MaxEntries() != 0 || !x.Full() {
		t.Fatalf("trimmed empty index: size %d max %d", fileSize(t, path), x.MaxEntries())
	}
	if got := x.Lookup(5); got != (OffsetEntry{}) {
		t.Fatalf("Lookup on unmapped index = %v", got)
	}
	if err := x.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := x.Append(1, 0); !errors.Is(err, ErrFull) {
		t.Fatalf("Append = %v, want ErrFull", err)
	}
	if err := x.Resize(16); err != nil {
		t.Fatal(err)
	}
	if err := x.Append(1, 0); err != nil {
		t.Fatal(err)
	}
}

// TestOffsetIndexWritableOpenKeepsEntries opens an existing file with a
// maxBytes smaller than its entries: nothing is dropped.
func TestOffsetIndexWritableOpenKeepsEntries(t *testing.T) {
	es := []OffsetEntry{{1, 0}, {2, 10}, {3, 20}, {4, 30}}
	path := writeIndexFile(t, "x.index", offsetBytes(0, es...))
	x := openOffset(t, path, 0, 16, true)
	if got := offsetEntries(x); !reflect.DeepEqual(got, es) || !x.Full() {
		t.Fatalf("entries %v full %v", got, x.Full())
	}
}

// TestOffsetIndexNonMultipleWritable opens a 13-byte file writable: one
// entry counts, the partial second entry is cleared, SanityCheck reports
// the length until Reset.
func TestOffsetIndexNonMultipleWritable(t *testing.T) {
	b := append(offsetBytes(0, OffsetEntry{3, 0}), 0xff, 0xff, 0xff, 0xff, 0xff)
	path := writeIndexFile(t, "x.index", b)
	x := openOffset(t, path, 0, 64, true)
	if x.Entries() != 1 || x.MaxEntries() != 8 {
		t.Fatalf("entries %d max %d", x.Entries(), x.MaxEntries())
	}
	wantCorrupt(t, x.SanityCheck(), path, "length 13 is not a multiple of 8")
	if err := x.Append(4, 1); err != nil {
		t.Fatal(err)
	}
	if got := x.Entry(1); got != (OffsetEntry{4, 1}) {
		t.Fatalf("entry 1 = %v", got)
	}
	x.m.mu.RLock()
	if !allZero(x.m.data[16:]) {
		t.Errorf("partial entry not cleared")
	}
	x.m.mu.RUnlock()
	x.Reset()
	if err := x.SanityCheck(); err != nil {
		t.Fatalf("after Reset: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := OpenOffsetIndex(filepath.Join(dir, "missing.index"), 0, 100, false); err == nil {
		t.Error("read-only open of a missing file succeeded")
	}
	if _, err := OpenTimeIndex(filepath.Join(dir, "missing.timeindex"), 0, 100, false); err == nil {
		t.Error("read-only open of a missing file succeeded")
	}
	if _, err := OpenOffsetIndex(dir, 0, 100, false); err == nil {
		t.Error("open of a directory succeeded")
	}
	if _, err := OpenOffsetIndex(dir, 0, 100, true); err == nil {
		t.Error("writable open of a directory succeeded")
	}
	if _, err := OpenOffsetIndex(filepath.Join(dir, "no", "such", "dir.index"), 0, 100, true); err == nil {
		t.Error("open in a missing directory succeeded")
	}
}

// sortedOffsets says whether a decoded offset index is well ordered
// (offsets strictly increasing), as every index SanityCheck passes must be:
// Lookup's binary search relies on it.
func sortedOffsets(es []OffsetEntry) bool {
	for i := 1; i < len(es); i++ {
		if es[i].Offset <= es[i-1].Offset {
			return false
		}
	}
	return true
}

// sortedTimes is sortedOffsets for a time index: timestamps strictly
// increasing, offsets never decreasing.
func sortedTimes(es []TimeEntry) bool {
	for i := 1; i < len(es); i++ {
		if es[i].Timestamp <= es[i-1].Timestamp || es[i].Offset < es[i-1].Offset {
			return false
		}
	}
	return true
}
