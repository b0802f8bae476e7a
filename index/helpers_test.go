package index

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeIndexFile writes raw bytes to a fresh file in a temp dir.
func writeIndexFile(t testing.TB, name string, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// offsetBytes encodes entries relative to base.
func offsetBytes(base int64, es ...OffsetEntry) []byte {
	var b []byte
	for _, e := range es {
		b = AppendOffsetEntry(b, base, e)
	}
	return b
}

// timeBytes encodes entries relative to base.
func timeBytes(base int64, es ...TimeEntry) []byte {
	var b []byte
	for _, e := range es {
		b = AppendTimeEntry(b, base, e)
	}
	return b
}

func openOffset(t testing.TB, path string, base int64, maxBytes int, writable bool) *OffsetIndex {
	t.Helper()
	x, err := OpenOffsetIndex(path, base, maxBytes, writable)
	if err != nil {
		t.Fatalf("OpenOffsetIndex(%s): %v", path, err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

func openTime(t testing.TB, path string, base int64, maxBytes int, writable bool) *TimeIndex {
	t.Helper()
	x, err := OpenTimeIndex(path, base, maxBytes, writable)
	if err != nil {
		t.Fatalf("OpenTimeIndex(%s): %v", path, err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// wantCorrupt checks that err is a *CorruptError for path whose reason
// contains want ("" means err must be nil).
func wantCorrupt(t testing.TB, err error, path, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	var ce *CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v is not a *CorruptError (want %q)", err, want)
	}
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("error %v does not wrap ErrCorrupt", err)
	}
	if ce.Path != path {
		t.Fatalf("CorruptError.Path = %q, want %q", ce.Path, path)
	}
	if !strings.Contains(ce.Reason, want) {
		t.Fatalf("CorruptError.Reason = %q, want it to contain %q", ce.Reason, want)
	}
}

// offsetEntries returns every entry of x.
func offsetEntries(x *OffsetIndex) []OffsetEntry {
	var es []OffsetEntry
	for i := 0; i < x.Entries(); i++ {
		es = append(es, x.Entry(i))
	}
	return es
}

func timeEntries(x *TimeIndex) []TimeEntry {
	var es []TimeEntry
	for i := 0; i < x.Entries(); i++ {
		es = append(es, x.Entry(i))
	}
	return es
}
