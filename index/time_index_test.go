package index

import (
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"
)

func TestTimeIndexMaybeAppendRules(t *testing.T) {
	const base = 1000
	type step struct {
		ts, offset int64
		skip       bool
		err        error
		written    bool
	}
	for _, c := range []struct {
		name     string
		maxBytes int
		steps    []step
	}{
		{"first entry", 120, []step{{5, 1000, false, nil, true}}},
		{"ts -1 never produces an entry", 120, []step{{-1, 1000, false, nil, false}, {-1, 1005, false, nil, false}}},
		{"ts below -1 on empty index is a no-op", 120, []step{{-5, 1000, false, nil, false}}},
		{"ts 0 on empty index is written", 120, []step{{0, 1000, false, nil, true}}},
		{"equal ts is a no-op", 120, []step{{5, 1001, false, nil, true}, {5, 1002, false, nil, false}}},
		{"smaller ts is an error", 120, []step{{5, 1001, false, nil, true}, {4, 1002, false, ErrOrder, false}}},
		{"offset going back is an error", 120, []step{{5, 1003, false, nil, true}, {6, 1002, false, ErrOrder, false}}},
		{"offset going back is an error even with equal ts", 120, []step{{5, 1003, false, nil, true}, {5, 1002, false, ErrOrder, false}}},
		{"equal offset with larger ts is written", 120, []step{{5, 1003, false, nil, true}, {6, 1003, false, nil, true}}},
		{"below base", 120, []step{{5, 999, false, ErrOffsetOverflow, false}}},
		{"max relative offset", 120, []step{{5, 1000 + math.MaxInt32, false, nil, true}}},
		{"past max relative offset", 120, []step{{5, 1000 + math.MaxInt32 + 1, false, ErrOffsetOverflow, false}}},
		{"last slot reserved", 36, []step{{1, 1001, false, nil, true}, {2, 1002, false, nil, true}, {3, 1003, false, ErrFull, false}, {3, 1003, true, nil, true}, {4, 1004, true, ErrFull, false}}},
		{"maxBytes rounded down", 47, []step{{1, 1001, false, nil, true}, {2, 1002, false, nil, true}, {3, 1003, false, ErrFull, false}}},
		{"one slot is full without skip", 12, []step{{1, 1001, false, ErrFull, false}, {1, 1001, true, nil, true}}},
		{"no slots", 11, []step{{1, 1001, true, ErrFull, false}}},
		{"skip with nothing to write needs no slot", 12, []step{{1, 1001, true, nil, true}, {1, 1001, true, nil, false}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := openTime(t, filepath.Join(t.TempDir(), "x.timeindex"), base, c.maxBytes, true)
			var want []TimeEntry
			for i, s := range c.steps {
				before := x.Entries()
				err := x.MaybeAppend(s.ts, s.offset, s.skip)
				if !errors.Is(err, s.err) || (s.err == nil) != (err == nil) {
					t.Fatalf("step %d MaybeAppend(%d, %d, %v) = %v, want %v", i, s.ts, s.offset, s.skip, err, s.err)
				}
				if got := x.Entries() - before; got != map[bool]int{false: 0, true: 1}[s.written] {
					t.Fatalf("step %d wrote %d entries, want written=%v", i, got, s.written)
				}
				if s.written {
					want = append(want, TimeEntry{s.ts, s.offset})
				}
			}
			if got := timeEntries(x); !reflect.DeepEqual(got, want) {
				t.Fatalf("entries = %v, want %v", got, want)
			}
			if err := x.SanityCheck(); err != nil {
				t.Fatalf("SanityCheck after valid appends: %v", err)
			}
		})
	}
}

func TestTimeIndexAccessors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.timeindex")
	x := openTime(t, path, 50, 100, true)
	if x.Path() != path || x.BaseOffset() != 50 || x.Entries() != 0 || x.MaxEntries() != 8 || x.Full() {
		t.Fatalf("fresh index: entries %d max %d full %v", x.Entries(), x.MaxEntries(), x.Full())
	}
	if got := fileSize(t, path); got != 96 {
		t.Fatalf("file size %d, want 96 (100 rounded down to 12)", got)
	}
	if got := x.Last(); got != (TimeEntry{-1, 50}) {
		t.Fatalf("Last of empty index = %v, want (-1, base)", got)
	}
	if err := x.MaybeAppend(77, 60, false); err != nil {
		t.Fatal(err)
	}
	if got := x.Last(); got != (TimeEntry{77, 60}) {
		t.Fatalf("Last = %v", got)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Errorf("Entry(1) did not panic")
			}
		}()
		x.Entry(1)
	}()
}

func TestTimeIndexLookup(t *testing.T) {
	x := openTime(t, filepath.Join(t.TempDir(), "x.timeindex"), 100, 1200, true)
	if got := x.Lookup(500); got != (TimeEntry{-1, 100}) {
		t.Fatalf("empty Lookup = %v, want (-1, base)", got)
	}
	for _, e := range []TimeEntry{{1000, 105}, {2000, 110}, {3000, 110}, {4000, 120}} {
		if err := x.MaybeAppend(e.Timestamp, e.Offset, false); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		target int64
		want   TimeEntry
	}{
		{math.MinInt64, TimeEntry{-1, 100}},
		{999, TimeEntry{-1, 100}},
		{1000, TimeEntry{1000, 105}},
		{2500, TimeEntry{2000, 110}},
		{3000, TimeEntry{3000, 110}},
		{3999, TimeEntry{3000, 110}},
		{math.MaxInt64, TimeEntry{4000, 120}},
	} {
		if got := x.Lookup(c.target); got != c.want {
			t.Errorf("Lookup(%d) = %v, want %v", c.target, got, c.want)
		}
	}
}

func linearTimeFloor(es []TimeEntry, base, target int64) TimeEntry {
	best := TimeEntry{Timestamp: -1, Offset: base}
	for _, e := range es {
		if e.Timestamp <= target {
			best = e
		}
	}
	return best
}

// TestTimeIndexLookupRandom compares Lookup with a linear scan, on both
// sides of the 682-entry warm section.
func TestTimeIndexLookupRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 2, 681, 682, 683, 684, 4000} {
		const base = 500
		x := openTime(t, filepath.Join(t.TempDir(), "x.timeindex"), base, (n+2)*TimeEntrySize, true)
		var es []TimeEntry
		ts, off := int64(1_700_000_000_000), int64(base)
		for i := 0; i < n; i++ {
			ts += 1 + rng.Int64N(1000)
			off += rng.Int64N(50) // equal offsets are allowed
			if err := x.MaybeAppend(ts, off, false); err != nil {
				t.Fatal(err)
			}
			es = append(es, TimeEntry{ts, off})
		}
		for i := 0; i < 1000; i++ {
			target := 1_700_000_000_000 - 10 + rng.Int64N(ts-1_700_000_000_000+20)
			if i%10 == 0 && n > 0 {
				target = es[rng.IntN(n)].Timestamp
			}
			if got, want := x.Lookup(target), linearTimeFloor(es, base, target); got != want {
				t.Fatalf("n=%d Lookup(%d) = %v, want %v", n, target, got, want)
			}
		}
	}
}

func TestTimeIndexTruncateTo(t *testing.T) {
	all := []TimeEntry{{100, 10}, {200, 20}, {300, 20}, {400, 30}}
	for _, c := range []struct {
		offset int64
		want   int
	}{
		{0, 0}, {10, 0}, {11, 1}, {20, 1}, {21, 3}, {30, 3}, {31, 4}, {math.MaxInt64, 4},
	} {
		x := openTime(t, filepath.Join(t.TempDir(), "x.timeindex"), 0, 1200, true)
		for _, e := range all {
			if err := x.MaybeAppend(e.Timestamp, e.Offset, false); err != nil {
				t.Fatal(err)
			}
		}
		x.TruncateTo(c.offset)
		if got := timeEntries(x); len(got) != c.want || (c.want > 0 && !reflect.DeepEqual(got, all[:c.want])) {
			t.Errorf("TruncateTo(%d): entries %v, want %v", c.offset, got, all[:c.want])
		}
		x.m.mu.RLock()
		if tail := x.m.data[c.want*TimeEntrySize : len(all)*TimeEntrySize]; !allZero(tail) {
			t.Errorf("TruncateTo(%d) left stale bytes % x", c.offset, tail)
		}
		x.m.mu.RUnlock()
	}
	x := openTime(t, filepath.Join(t.TempDir(), "x.timeindex"), 0, 1200, true)
	for _, e := range all {
		if err := x.MaybeAppend(e.Timestamp, e.Offset, false); err != nil {
			t.Fatal(err)
		}
	}
	x.Reset()
	if x.Entries() != 0 || x.Last() != (TimeEntry{-1, 0}) {
		t.Fatalf("after Reset: %d entries, last %v", x.Entries(), x.Last())
	}
}

func TestTimeIndexReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.timeindex")
	x, err := OpenTimeIndex(path, 7, 10<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []TimeEntry{{10, 8}, {20, 9}, {30, 20}}
	for _, e := range want {
		if err := x.MaybeAppend(e.Timestamp, e.Offset, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if err := x.MaybeAppend(40, 30, true); !errors.Is(err, ErrClosed) {
		t.Fatalf("MaybeAppend after Close = %v, want ErrClosed", err)
	}
	if got := fileSize(t, path); got != 36 {
		t.Fatalf("size after Close = %d, want 36", got)
	}
	r := openTime(t, path, 7, 0, false)
	if got := timeEntries(r); !reflect.DeepEqual(got, want) {
		t.Fatalf("reopen: %v, want %v", got, want)
	}
	if err := r.MaybeAppend(40, 30, true); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("MaybeAppend read-only = %v", err)
	}
	if err := r.Resize(1000); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Resize read-only = %v", err)
	}
	r.Close()
	w2 := openTime(t, path, 7, 10<<20, true)
	if w2.MaxEntries() != 873813 || fileSize(t, path) != 10485756 {
		t.Fatalf("writable reopen: max %d size %d", w2.MaxEntries(), fileSize(t, path))
	}
	if got := timeEntries(w2); !reflect.DeepEqual(got, want) {
		t.Fatalf("writable reopen: %v, want %v", got, want)
	}
}

func TestTimeIndexCrashedReopen(t *testing.T) {
	for _, c := range []struct {
		name    string
		entries []TimeEntry
		want    string
	}{
		{"no entries", nil, "entry 1 timestamp 0 <= previous 0"},
		{"some entries", []TimeEntry{{1000, 101}, {2000, 105}}, "last timestamp 0 < first timestamp 1000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.timeindex")
			x, err := OpenTimeIndex(path, 100, 1200, true)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range c.entries {
				if err := x.MaybeAppend(e.Timestamp, e.Offset, false); err != nil {
					t.Fatal(err)
				}
			}
			x.m.mu.Lock()
			x.m.unmapLocked()
			x.m.f.Close()
			x.m.closed = true
			x.m.mu.Unlock()

			r := openTime(t, path, 100, 1200, false)
			if r.Entries() != 100 {
				t.Fatalf("entries %d, want 100 (file length / 12)", r.Entries())
			}
			wantCorrupt(t, r.SanityCheck(), path, c.want)
		})
	}
}

func TestTimeIndexSanityCheck(t *testing.T) {
	const base = 10
	for _, c := range []struct {
		name string
		file []byte
		want string
	}{
		{"empty", nil, ""},
		{"valid", timeBytes(base, TimeEntry{1, 10}, TimeEntry{2, 10}, TimeEntry{5, 15}), ""},
		{"not a multiple", make([]byte, 13), "length 13 is not a multiple of 12"},
		{"last ts below first", timeBytes(base, TimeEntry{5, 11}, TimeEntry{4, 12}), "last timestamp 4 < first timestamp 5"},
		{"last below base", timeBytes(base, TimeEntry{5, 11}, TimeEntry{6, 5}), "last offset 5 < base offset 10"},
		{"first below base", timeBytes(base, TimeEntry{5, 5}, TimeEntry{6, 11}), "entry 0 offset 5 < base offset 10"},
		{"ts repeats", timeBytes(base, TimeEntry{5, 11}, TimeEntry{5, 12}), "entry 1 timestamp 5 <= previous 5"},
		{"ts dips in the middle", timeBytes(base, TimeEntry{5, 11}, TimeEntry{9, 12}, TimeEntry{7, 13}, TimeEntry{10, 14}), "entry 2 timestamp 7 <= previous 9"},
		{"offset decreases", timeBytes(base, TimeEntry{5, 11}, TimeEntry{6, 20}, TimeEntry{7, 19}), "entry 2 offset 19 < previous 20"},
		{"zeros", make([]byte, 36), "entry 1 timestamp 0 <= previous 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeIndexFile(t, "x.timeindex", c.file)
			for _, writable := range []bool{false, true} {
				x := openTime(t, path, base, 1200, writable)
				wantCorrupt(t, x.SanityCheck(), path, c.want)
				x.Close()
			}
		})
	}
}

func TestTimeIndexCheckOffsets(t *testing.T) {
	path := writeIndexFile(t, "x.timeindex", timeBytes(0, TimeEntry{1, 5}, TimeEntry{2, 9}))
	x := openTime(t, path, 0, 0, false)
	wantCorrupt(t, x.CheckOffsets(10), path, "")
	wantCorrupt(t, x.CheckOffsets(9), path, "entry 1 offset 9 >= log next offset 9 (index pointing past its log)")
	wantCorrupt(t, x.CheckOffsets(0), path, "entry 0 offset 5 >= log next offset 0")
}

func TestTimeIndexTrimResize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.timeindex")
	x := openTime(t, path, 0, 120, true)
	for i := int64(1); i <= 3; i++ {
		if err := x.MaybeAppend(i*100, i*10, false); err != nil {
			t.Fatal(err)
		}
	}
	want := timeEntries(x)
	for _, s := range []struct {
		name     string
		op       func() error
		size     int64
		max      int
		fullSkip bool
	}{
		{"trim", x.Trim, 36, 3, true},
		{"resize up", func() error { return x.Resize(125) }, 120, 10, false},
		{"resize below entries", func() error { return x.Resize(0) }, 36, 3, true},
		{"resize by one slot", func() error { return x.Resize(48) }, 48, 4, false},
	} {
		if err := s.op(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := fileSize(t, path); got != s.size || x.MaxEntries() != s.max {
			t.Fatalf("%s: size %d max %d, want %d %d", s.name, got, x.MaxEntries(), s.size, s.max)
		}
		if got := timeEntries(x); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: entries %v", s.name, got)
		}
		if got := x.Lookup(250); got != (TimeEntry{200, 20}) {
			t.Fatalf("%s: Lookup(250) = %v", s.name, got)
		}
	}
	// Four slots and three entries: full without skip, the roll entry fits.
	if !x.Full() {
		t.Fatal("not Full with the reserved slot left")
	}
	if err := x.MaybeAppend(400, 40, true); err != nil {
		t.Fatal(err)
	}
}
