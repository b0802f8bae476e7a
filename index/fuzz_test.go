package index

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// seedFuzz adds the golden files and a few hand-made shapes to f.
func seedFuzz(f *testing.F, add func(b []byte)) {
	for _, name := range []string{"golden.index", "golden.timeindex"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		add(b)
	}
	add(nil)
	add([]byte("thirteen byte"))
	add(make([]byte, 96))
	add(offsetBytes(0, OffsetEntry{1, 0}, OffsetEntry{5, 100}, OffsetEntry{9, 50}))
	add(timeBytes(0, TimeEntry{1, 0}, TimeEntry{5, 100}, TimeEntry{3, 50}))
}

func FuzzParseOffsetEntries(f *testing.F) {
	seedFuzz(f, func(b []byte) { f.Add(b, int64(0)) })
	f.Fuzz(func(t *testing.T, b []byte, base int64) {
		es, trailing := ParseOffsetEntries(b, base)
		if trailing != len(b)%OffsetEntrySize || len(es)*OffsetEntrySize+trailing > len(b) {
			t.Fatalf("%d entries, %d trailing from %d bytes", len(es), trailing, len(b))
		}
		// Re-encoding the parsed entries gives back the bytes they came
		// from, and parsing those again agrees.
		enc := offsetBytes(base, es...)
		if !bytes.Equal(enc, b[:len(enc)]) {
			t.Fatalf("re-encoded % x, input % x", enc, b[:len(enc)])
		}
		if again, tr := ParseOffsetEntries(enc, base); !reflect.DeepEqual(again, es) || tr != 0 {
			t.Fatalf("re-parse %v, want %v", again, es)
		}
	})
}

func FuzzParseTimeEntries(f *testing.F) {
	seedFuzz(f, func(b []byte) { f.Add(b, int64(0)) })
	f.Fuzz(func(t *testing.T, b []byte, base int64) {
		es, trailing := ParseTimeEntries(b, base)
		if trailing != len(b)%TimeEntrySize || len(es)*TimeEntrySize+trailing > len(b) {
			t.Fatalf("%d entries, %d trailing from %d bytes", len(es), trailing, len(b))
		}
		enc := timeBytes(base, es...)
		if !bytes.Equal(enc, b[:len(enc)]) {
			t.Fatalf("re-encoded % x, input % x", enc, b[:len(enc)])
		}
		if again, tr := ParseTimeEntries(enc, base); !reflect.DeepEqual(again, es) || tr != 0 {
			t.Fatalf("re-parse %v, want %v", again, es)
		}
	})
}

// fuzzFile writes b to name in dir, which is shared by all executions of a
// fuzz target (a fresh t.TempDir per execution costs more than the test),
// and removes it when the execution ends.
func fuzzFile(t *testing.T, dir, name string, b []byte) string {
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path) })
	return path
}

// FuzzOpenOffsetIndex opens an index file holding the fuzz bytes. Whatever
// they are, nothing panics; the entry count follows the file length; and
// when SanityCheck passes, Lookup agrees with a linear scan.
func FuzzOpenOffsetIndex(f *testing.F) {
	seedFuzz(f, func(b []byte) { f.Add(b, int64(0), int64(5), uint16(256), false) })
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte, base, target int64, maxBytes uint16, writable bool) {
		path := fuzzFile(t, dir, "f.index", b)
		x, err := OpenOffsetIndex(path, base, int(maxBytes), writable)
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		n := len(b) / OffsetEntrySize
		if x.Entries() != n {
			t.Fatalf("Entries() = %d, want %d", x.Entries(), n)
		}
		var es []OffsetEntry
		for i := 0; i < n; i++ {
			e := x.Entry(i)
			if want := decodeOffsetEntry(b[i*OffsetEntrySize:], base); e != want {
				t.Fatalf("Entry(%d) = %v, want %v", i, e, want)
			}
			es = append(es, e)
		}
		got := x.Lookup(target)
		sane := x.SanityCheck()
		if sane == nil {
			if len(b)%OffsetEntrySize != 0 {
				t.Fatalf("SanityCheck passed a %d-byte file", len(b))
			}
			if !sortedOffsets(es) {
				t.Fatalf("SanityCheck passed entries out of order: %v", es)
			}
			if want := linearOffsetFloor(es, base, target); got != want {
				t.Fatalf("Lookup(%d) = %v, want %v", target, got, want)
			}
		}
		x.CheckPositions(int64(maxBytes))
		x.CheckOffsets(target)
		exerciseOffsetIndex(t, x)
	})
}

func FuzzOpenTimeIndex(f *testing.F) {
	seedFuzz(f, func(b []byte) { f.Add(b, int64(0), int64(5), uint16(256), false) })
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte, base, target int64, maxBytes uint16, writable bool) {
		path := fuzzFile(t, dir, "f.timeindex", b)
		x, err := OpenTimeIndex(path, base, int(maxBytes), writable)
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		n := len(b) / TimeEntrySize
		if x.Entries() != n {
			t.Fatalf("Entries() = %d, want %d", x.Entries(), n)
		}
		var es []TimeEntry
		for i := 0; i < n; i++ {
			e := x.Entry(i)
			if want := decodeTimeEntry(b[i*TimeEntrySize:], base); e != want {
				t.Fatalf("Entry(%d) = %v, want %v", i, e, want)
			}
			es = append(es, e)
		}
		got := x.Lookup(target)
		if x.SanityCheck() == nil {
			if len(b)%TimeEntrySize != 0 {
				t.Fatalf("SanityCheck passed a %d-byte file", len(b))
			}
			if !sortedTimes(es) {
				t.Fatalf("SanityCheck passed entries out of order: %v", es)
			}
			if want := linearTimeFloor(es, base, target); got != want {
				t.Fatalf("Lookup(%d) = %v, want %v", target, got, want)
			}
		}
		x.CheckOffsets(target)
		exerciseTimeIndex(t, x)
	})
}
