package index

import (
	"os"
	"testing"
	"time"
)

// TestUnchangedIndexKeepsMtime: a writable open preallocates the file and
// the seal or close trims it back; with no entry written or dropped in
// between, the file's bytes are those it had, and so is its mtime (an
// active segment's indexes over an idle mount and unmount). Any change
// leaves the trim's mtime. Both used to take the trims' mtime.
func TestUnchangedIndexKeepsMtime(t *testing.T) {
	old := time.Date(2020, 1, 1, 0, 0, 0, 123456789, time.UTC)
	mtime := func(path string) time.Time {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.ModTime()
	}
	const base = 100
	for _, tc := range []struct {
		name   string
		change func(o *OffsetIndex, x *TimeIndex) error
		seal   bool
		kept   bool
	}{
		{"sealed unchanged", nil, true, true},
		{"closed unchanged", nil, false, true},
		{"a final time entry equal to the last", func(o *OffsetIndex, x *TimeIndex) error { return x.MaybeAppend(2000, 120, true) }, true, true},
		{"appended", func(o *OffsetIndex, x *TimeIndex) error {
			if err := o.Append(130, 900); err != nil {
				return err
			}
			return x.MaybeAppend(3000, 130, true)
		}, true, false},
		{"truncated", func(o *OffsetIndex, x *TimeIndex) error { o.TruncateTo(110); x.TruncateTo(110); return nil }, true, false},
		{"truncated then appended back", func(o *OffsetIndex, x *TimeIndex) error {
			o.TruncateTo(120)
			x.TruncateTo(120)
			if err := o.Append(120, 600); err != nil {
				return err
			}
			return x.MaybeAppend(2000, 120, true)
		}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := writeIndexFile(t, "00000000000000000100.index", offsetBytes(base, OffsetEntry{Offset: 110, Position: 300}, OffsetEntry{Offset: 120, Position: 600}))
			tp := writeIndexFile(t, "00000000000000000100.timeindex", timeBytes(base, TimeEntry{Timestamp: 1000, Offset: 110}, TimeEntry{Timestamp: 2000, Offset: 120}))
			for _, p := range []string{op, tp} {
				if err := os.Chtimes(p, time.Time{}, old); err != nil {
					t.Fatal(err)
				}
			}
			o := openOffset(t, op, base, 4096, true)
			x := openTime(t, tp, base, 4096, true)
			if fileSize(t, op) != 4096 {
				t.Fatalf("writable open left %d bytes, want preallocated 4096", fileSize(t, op))
			}
			// While open, the preallocated file still shows the mtime
			// of its entries (segments/ shows it during a mount).
			for _, p := range []string{op, tp} {
				if got := mtime(p); !got.Equal(old) {
					t.Errorf("%s: mtime %v after a writable open, want %v", p, got, old)
				}
			}
			if tc.change != nil {
				if err := tc.change(o, x); err != nil {
					t.Fatal(err)
				}
			}
			var errO, errT error
			if tc.seal {
				errO, errT = o.Seal(), x.Seal()
			} else {
				errO, errT = o.Close(), x.Close()
			}
			if errO != nil || errT != nil {
				t.Fatal(errO, errT)
			}
			for _, p := range []string{op, tp} {
				got := mtime(p)
				if tc.kept && !got.Equal(old) {
					t.Errorf("%s: mtime %v after an unchanged open and trim, want %v", p, got, old)
				}
				if !tc.kept && got.Equal(old) {
					t.Errorf("%s: mtime still %v after a change", p, got)
				}
			}
		})
	}
}
