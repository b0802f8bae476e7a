package index

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// goldenOffset and goldenTime are the entries behind testdata/golden.index
// and testdata/golden.timeindex (base offset 100).
var (
	goldenOffset = []OffsetEntry{{100, 0}, {105, 4170}, {0x7fffffff + 100, 0x12345678}}
	goldenTime   = []TimeEntry{{1700000000000, 100}, {1700000000500, 105}, {-1 << 40, 0x7fffffff + 100}}
)

// TestGolden writes the golden entries through the index (then Close trims
// the file) and compares the bytes with testdata, so the on-disk layout is
// pinned down byte for byte.
func TestGolden(t *testing.T) {
	dir := t.TempDir()
	ox, err := OpenOffsetIndex(filepath.Join(dir, "g.index"), 100, 1024, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range goldenOffset {
		if err := ox.Append(e.Offset, e.Position); err != nil {
			t.Fatal(err)
		}
	}
	if err := ox.Close(); err != nil {
		t.Fatal(err)
	}
	tx, err := OpenTimeIndex(filepath.Join(dir, "g.timeindex"), 100, 1024, true)
	if err != nil {
		t.Fatal(err)
	}
	// The third golden time entry has a smaller timestamp, which
	// MaybeAppend refuses, so it is only checked through the encoder.
	for _, e := range goldenTime[:2] {
		if err := tx.MaybeAppend(e.Timestamp, e.Offset, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Close(); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		golden string
		got    []byte
	}{
		{"golden.index", mustRead(t, filepath.Join(dir, "g.index"))},
		{"golden.timeindex", append(mustRead(t, filepath.Join(dir, "g.timeindex")), AppendTimeEntry(nil, 100, goldenTime[2])...)},
	} {
		path := filepath.Join("testdata", c.golden)
		if *update {
			if err := os.WriteFile(path, c.got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want := mustRead(t, path)
		if !bytes.Equal(c.got, want) {
			t.Errorf("%s: got % x, want % x", c.golden, c.got, want)
		}
	}
	if got := offsetBytes(100, goldenOffset...); !bytes.Equal(got, mustRead(t, "testdata/golden.index")) {
		t.Errorf("AppendOffsetEntry disagrees with golden.index")
	}
	if got := timeBytes(100, goldenTime...); !bytes.Equal(got, mustRead(t, "testdata/golden.timeindex")) {
		t.Errorf("AppendTimeEntry disagrees with golden.timeindex")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEntryLayout(t *testing.T) {
	got := AppendOffsetEntry(nil, 10, OffsetEntry{Offset: 10 + 0x01020304, Position: 0x05060708})
	if want := []byte{1, 2, 3, 4, 5, 6, 7, 8}; !bytes.Equal(got, want) {
		t.Errorf("offset entry = % x, want % x", got, want)
	}
	got = AppendTimeEntry(nil, 10, TimeEntry{Timestamp: 0x0102030405060708, Offset: 10 + 0x090a0b0c})
	if want := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}; !bytes.Equal(got, want) {
		t.Errorf("time entry = % x, want % x", got, want)
	}
}

func TestParseOffsetEntries(t *testing.T) {
	const base = 1000
	for _, c := range []struct {
		name     string
		in       []byte
		want     []OffsetEntry
		trailing int
	}{
		{"empty", nil, nil, 0},
		{"short", []byte{1, 2, 3}, nil, 3},
		{"one", offsetBytes(base, OffsetEntry{1000, 0}), []OffsetEntry{{1000, 0}}, 0},
		{"entry 0 with relative offset 0 is kept", offsetBytes(base, OffsetEntry{1000, 0}, OffsetEntry{1003, 90}), []OffsetEntry{{1000, 0}, {1003, 90}}, 0},
		{"zero tail stops", append(offsetBytes(base, OffsetEntry{1001, 0}, OffsetEntry{1003, 90}), make([]byte, 80)...), []OffsetEntry{{1001, 0}, {1003, 90}}, 0},
		{"all zeros gives one entry", make([]byte, 64), []OffsetEntry{{1000, 0}}, 0},
		{"trailing bytes", append(offsetBytes(base, OffsetEntry{1001, 7}), 9, 9, 9, 9, 9), []OffsetEntry{{1001, 7}}, 5},
		{"garbage is decoded as is", offsetBytes(base, OffsetEntry{990, -5}, OffsetEntry{980, 3}), []OffsetEntry{{990, -5}, {980, 3}}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, trailing := ParseOffsetEntries(c.in, base)
			if !reflect.DeepEqual(got, c.want) || trailing != c.trailing {
				t.Errorf("got %v, %d; want %v, %d", got, trailing, c.want, c.trailing)
			}
		})
	}
}

func TestParseTimeEntries(t *testing.T) {
	const base = 1000
	for _, c := range []struct {
		name     string
		in       []byte
		want     []TimeEntry
		trailing int
	}{
		{"empty", nil, nil, 0},
		{"short", make([]byte, 11), nil, 11},
		{"entry 0 with relative offset 0 is kept", timeBytes(base, TimeEntry{5, 1000}, TimeEntry{6, 1002}), []TimeEntry{{5, 1000}, {6, 1002}}, 0},
		{"zero tail stops", append(timeBytes(base, TimeEntry{5, 1001}, TimeEntry{9, 1003}), make([]byte, 36)...), []TimeEntry{{5, 1001}, {9, 1003}}, 0},
		{"timestamp of the stop entry does not matter", timeBytes(base, TimeEntry{5, 1001}, TimeEntry{9, 1000}), []TimeEntry{{5, 1001}}, 0},
		{"trailing bytes", append(timeBytes(base, TimeEntry{-1, 1001}), 1, 2), []TimeEntry{{-1, 1001}}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, trailing := ParseTimeEntries(c.in, base)
			if !reflect.DeepEqual(got, c.want) || trailing != c.trailing {
				t.Errorf("got %v, %d; want %v, %d", got, trailing, c.want, c.trailing)
			}
		})
	}
}
