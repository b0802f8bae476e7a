package index

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLookupSurvivesUnreadableMapping shrinks an index file under its
// mapping, so reading the mapped entries faults (SIGBUS), as it does when
// the backing filesystem is shut down: Lookup answers as an empty index
// and Append returns an error, instead of killing the process.
func TestLookupSurvivesUnreadableMapping(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "00000000000000000100.index")
	x, err := OpenOffsetIndex(path, 100, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < 4000; i++ {
		if err := x.Append(100+i*2, int32(i*64)); err != nil {
			t.Fatal(err)
		}
	}
	if e := x.Lookup(3000); e.Offset != 3000 {
		t.Fatalf("lookup before the damage: %+v", e)
	}
	if err := os.Truncate(path, 0); err != nil { // behind the mapping's back
		t.Fatal(err)
	}
	if e := x.Lookup(7000); e != (OffsetEntry{Offset: 100}) {
		t.Fatalf("lookup over an unreadable mapping: %+v", e)
	}
	// An append into the unreadable mapping fails with an error, not
	// SIGBUS.
	if err := x.Append(100+4000*2, 4000*64); err == nil || !strings.Contains(err.Error(), "faulted") {
		t.Fatalf("append over an unreadable mapping: %v", err)
	}
	tpath := filepath.Join(dir, "00000000000000000100.timeindex")
	ti, err := OpenTimeIndex(tpath, 100, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < 4000; i++ {
		ti.MaybeAppend(1000+i, 100+i, false)
	}
	os.Truncate(tpath, 0)
	if e := ti.Lookup(3000); e != (TimeEntry{Timestamp: -1, Offset: 100}) {
		t.Fatalf("time lookup over an unreadable mapping: %+v", e)
	}
}
