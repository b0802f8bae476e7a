package index

import (
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// TestConcurrentOffsetIndex runs one writer (appends, with truncations and
// remaps mixed in) against readers doing Lookup, Entry and SanityCheck, and
// a flusher. Every entry the writer creates satisfies position = 10 ×
// relative offset, so a reader that ever sees a torn or stale entry, or a
// lookup result above its target, fails. Run with -race.
func TestConcurrentOffsetIndex(t *testing.T) {
	const base = 1_000_000
	x := openOffset(t, filepath.Join(t.TempDir(), "x.index"), base, 64<<10, true)
	var done atomic.Bool
	var wg sync.WaitGroup
	check := func(e OffsetEntry, target int64) {
		if e.Offset > target && e.Offset != base {
			t.Errorf("Lookup(%d) = %v, above target", target, e)
		}
		if int64(e.Position) != (e.Offset-base)*10 {
			t.Errorf("torn entry %v", e)
		}
	}
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int64(0); !done.Load(); i++ {
				target := base + (i*7919)%20000
				check(x.Lookup(target), target)
				if n := x.Entries(); n > 0 && i%64 == 0 {
					// Entries can shrink between the two calls when the
					// writer truncates, so recover from the range panic.
					func() {
						defer func() { recover() }()
						check(x.Entry(n-1), 1<<62)
					}()
				}
				if i%1024 == 0 {
					if err := x.SanityCheck(); err != nil {
						t.Errorf("SanityCheck: %v", err)
					}
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !done.Load() {
			if err := x.Flush(); err != nil {
				t.Errorf("Flush: %v", err)
			}
		}
	}()

	for round := 0; round < 20; round++ {
		for i := 0; i < 1000; i++ {
			off := x.LastOffset() + 1 + int64(i%3)
			if x.Entries() == 0 {
				off = base + 1
			}
			if err := x.Append(off, int32((off-base)*10)); err != nil {
				t.Fatalf("round %d Append: %v", round, err)
			}
		}
		switch round % 4 {
		case 0:
			x.TruncateTo(x.LastOffset() - 500)
		case 1:
			if err := x.Trim(); err != nil {
				t.Fatal(err)
			}
			if err := x.Resize(64 << 10); err != nil {
				t.Fatal(err)
			}
		case 2:
			if err := x.Resize(x.Entries()*OffsetEntrySize + 16<<10); err != nil {
				t.Fatal(err)
			}
		case 3:
			if round == 15 {
				x.Reset()
			}
		}
		if x.MaxEntries()-x.Entries() < 1000 {
			x.Reset()
		}
	}
	done.Store(true)
	wg.Wait()
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentTimeIndex is the time-index version: entries satisfy
// timestamp = 1000 × relative offset.
func TestConcurrentTimeIndex(t *testing.T) {
	const base = 500
	x := openTime(t, filepath.Join(t.TempDir(), "x.timeindex"), base, 96<<10, true)
	var done atomic.Bool
	var wg sync.WaitGroup
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int64(0); !done.Load(); i++ {
				target := (i * 7919) % 20_000_000
				e := x.Lookup(target)
				if e.Timestamp > target {
					t.Errorf("Lookup(%d) = %v, above target", target, e)
				}
				if e.Timestamp != -1 && e.Timestamp != (e.Offset-base)*1000 {
					t.Errorf("torn entry %v", e)
				}
				if i%1024 == 0 {
					if err := x.SanityCheck(); err != nil {
						t.Errorf("SanityCheck: %v", err)
					}
				}
			}
		}()
	}
	for round := 0; round < 20; round++ {
		for i := 0; i < 1000; i++ {
			off := x.Last().Offset + 1
			if err := x.MaybeAppend((off-base)*1000, off, false); err != nil {
				t.Fatalf("round %d MaybeAppend: %v", round, err)
			}
		}
		switch round % 3 {
		case 0:
			x.TruncateTo(x.Last().Offset - 300)
		case 1:
			if err := x.Trim(); err != nil {
				t.Fatal(err)
			}
			if err := x.Resize(96 << 10); err != nil {
				t.Fatal(err)
			}
		}
		if x.MaxEntries()-x.Entries() < 1100 {
			x.Reset()
		}
	}
	done.Store(true)
	wg.Wait()
}

// TestConcurrentClose closes the index while readers run: they must see an
// empty index afterwards, never a fault.
func TestConcurrentClose(t *testing.T) {
	x, err := OpenOffsetIndex(filepath.Join(t.TempDir(), "x.index"), 0, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(1); i <= 10000; i++ {
		if err := x.Append(i, int32(i)); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	var start sync.WaitGroup
	start.Add(1)
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start.Wait()
			for i := int64(0); i < 20000; i++ {
				if e := x.Lookup(i % 10000); e.Offset != int64(e.Position) {
					t.Errorf("bad entry %v", e)
				}
			}
		}()
	}
	start.Done()
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if x.Entries() != 0 || x.Lookup(50) != (OffsetEntry{}) {
		t.Fatalf("closed index not empty")
	}
}
