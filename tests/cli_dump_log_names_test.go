package tests

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDumpLogSegmentNames: one rule for the name of every kind of segment
// file (.log, .index, .timeindex, .txnindex), as Kafka names them all by
// their base offset: a readable file whose name does not start with one is
// a problem (exit 1), and what can be shown without the base offset still
// is (a .log's batches, a .txnindex's entries); a file that cannot be read
// is reported as that alone. The name was a problem for an index but only
// a note for a .log (exit 0), and for a missing .log the note on its name
// came before the error that it is missing; a missing index was reported
// for its name only.
func TestDumpLogSegmentNames(t *testing.T) {
	dir := t.TempDir()
	seg := cliWriteSegment(t, filepath.Join(dir, "orders-0"), 0, cliThreeBatches())
	copyOf := func(src, name string) string {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, name)
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	txn := make([]byte, 34) // version 0, producer 7, offsets 2-4, LSO 0
	binary.BigEndian.PutUint64(txn[2:], 7)
	binary.BigEndian.PutUint64(txn[10:], 2)
	binary.BigEndian.PutUint64(txn[18:], 4)
	txnPath := filepath.Join(dir, "backup.txnindex")
	if err := os.WriteFile(txnPath, txn, 0o644); err != nil {
		t.Fatal(err)
	}
	badName := func(path string) string { return path + ": file name does not start with a base offset\n" }

	for _, tc := range []struct {
		path   string
		stdout string // shown although the name is wrong; "" for nothing but "Dumping"
	}{
		{copyOf(seg.Log, "backup.log"), "baseOffset: 2 lastOffset: 4 count: 3"},
		{copyOf(seg.Index, "backup.index"), ""},
		{copyOf(seg.TimeIndex, "backup.timeindex"), ""},
		{txnPath, "version: 0 producerId: 7 firstOffset: 2 lastOffset: 4 lastStableOffset: 0"},
	} {
		r := cliRun(t, "dump-log", tc.path)
		if r.Code != 1 || !strings.Contains(r.Stderr, badName(tc.path)) || !strings.HasSuffix(r.Stderr, "dump-log: 1 problem found\n") {
			t.Errorf("dump-log %s: exit %d, stderr %q; want exit 1 and %q", tc.path, r.Code, r.Stderr, badName(tc.path))
		}
		lines := strings.Split(strings.TrimSuffix(r.Stdout, "\n"), "\n")
		switch {
		case tc.stdout == "" && len(lines) != 1:
			t.Errorf("dump-log %s: stdout %q, want only its Dumping line", tc.path, r.Stdout)
		case !strings.Contains(r.Stdout, tc.stdout), strings.Contains(r.Stdout, "Log starting offset"):
			t.Errorf("dump-log %s: stdout %q, want %q and no starting offset", tc.path, r.Stdout, tc.stdout)
		}
	}

	// A file that is not there is reported as missing, and only that,
	// whatever its name and kind.
	for _, name := range []string{"gone.log", "gone.index", "gone.timeindex", "gone.txnindex"} {
		path := filepath.Join(dir, name)
		r := cliRun(t, "dump-log", path)
		if r.Code != 1 || !strings.HasPrefix(r.Stderr, path+": cannot read it: ") || !strings.Contains(r.Stderr, "no such file or directory") ||
			strings.Contains(r.Stderr, "base offset") || strings.Count(r.Stderr, path) != 1 {
			t.Errorf("dump-log %s: exit %d, stderr %q; want exit 1 and only that it cannot be read", path, r.Code, r.Stderr)
		}
	}

	// Well named files are unchanged: no problem.
	r := cliRun(t, "dump-log", seg.Log, seg.Index, seg.TimeIndex)
	if r.Code != 0 || r.Stderr != "" || !strings.Contains(r.Stdout, "Log starting offset: 0\n") {
		t.Errorf("dump-log of a well named segment: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}
