package logstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseTxnIndex(t *testing.T) {
	good := []AbortedTxn{{7, 100, 105, 100}, {8, 101, 110, 101}}
	got, err := ParseTxnIndex(encodeTxnIndex(good), 100)
	if err != nil || !reflect.DeepEqual(got, good) {
		t.Fatalf("good file: %v %v", got, err)
	}
	if got, err := ParseTxnIndex(nil, 0); err != nil || len(got) != 0 {
		t.Fatalf("empty file: %v %v", got, err)
	}
	badVersion := encodeTxnIndex(good)
	badVersion[txnEntrySize+1] = 1
	bad := map[string][]byte{
		"truncated entry":   encodeTxnIndex(good)[:txnEntrySize+10],
		"version 1":         badVersion,
		"below base":        encodeTxnIndex([]AbortedTxn{{7, 10, 50, 10}}),
		"not increasing":    encodeTxnIndex([]AbortedTxn{{7, 100, 110, 100}, {8, 100, 110, 100}}),
		"decreasing":        encodeTxnIndex([]AbortedTxn{{7, 100, 110, 100}, {8, 100, 105, 100}}),
		"first after last":  encodeTxnIndex([]AbortedTxn{{7, 120, 110, 100}}),
		"all bytes garbage": []byte(strings.Repeat("\xff", 2*txnEntrySize)),
	}
	for name, b := range bad {
		if got, err := ParseTxnIndex(b, 100); err == nil {
			t.Errorf("%s: accepted as %v", name, got)
		}
	}
}

// txnTestLog makes a partition of 3 segments of single-record batches and
// returns the store's directory, the partition's directory and the
// segment bases and log end.
func txnTestLog(t *testing.T) (dir, pdir string, bases []int64, leo int64) {
	dir = t.TempDir()
	s := openStore(t, dir, newClock())
	if _, err := s.CreateTopic("x", 1, map[string]string{"segment.bytes": "1000"}); err != nil {
		t.Fatal(err)
	}
	p := mustPartition(t, s, "x")
	for i := 0; len(p.segs) < 3 || p.LogEndOffset()-p.segs[2].base < 10; i++ {
		if _, _, err := p.AppendLines(fmt.Appendf(nil, "record %d %s\n", i, strings.Repeat("y", 20))); err != nil {
			t.Fatal(err)
		}
	}
	for _, sg := range p.segs {
		bases = append(bases, sg.base)
	}
	leo, pdir = p.LogEndOffset(), p.dir
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if len(bases) != 3 || bases[1]-bases[0] < 8 || bases[2]-bases[1] < 8 {
		t.Fatalf("segments %v too small for the test", bases)
	}
	return dir, pdir, bases, leo
}

func writeTxnIndex(t *testing.T, pdir string, base int64, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(pdir, segmentName(base)+txnIndexSuffix), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestAbortedTxnsCollect checks the walk of Kafka's
// collectAbortedTransactions: entries live in the segment of their ABORT
// marker, so a fetch in one segment finds a transaction indexed in a later
// one, and the walk stops at the first entry whose LastStableOffset reaches
// the upper bound (the crafted entry d, which would match, proves it does
// not look further).
func TestAbortedTxnsCollect(t *testing.T) {
	dir, pdir, b, leo := txnTestLog(t)
	b0, b1, b2 := b[0], b[1], b[2]
	a := AbortedTxn{1, b0 + 1, b0 + 3, b0 + 1}
	bb := AbortedTxn{2, b0 + 5, b1 + 1, b0 + 5} // starts in segment 0, aborted in 1
	c := AbortedTxn{3, b1 + 2, b1 + 4, b1 + 4}
	d := AbortedTxn{4, b0 + 1, b2 + 2, b0 + 1}
	past := AbortedTxn{5, leo + 2, leo + 4, leo + 2} // beyond the log end: dropped
	writeTxnIndex(t, pdir, b0, encodeTxnIndex([]AbortedTxn{a}))
	writeTxnIndex(t, pdir, b1, encodeTxnIndex([]AbortedTxn{bb, c}))
	writeTxnIndex(t, pdir, b2, encodeTxnIndex([]AbortedTxn{d, past}))

	s := openStore(t, dir, newClock())
	defer s.Close()
	p := mustPartition(t, s, "x")
	if !p.hasTxns.Load() {
		t.Fatal("hasTxns not set")
	}
	for _, tc := range []struct {
		from, upper int64
		want        []AbortedTxn
	}{
		{b0, b0 + 4, []AbortedTxn{a}},        // stops at bb (LSO b0+5 >= upper): d not seen
		{b0 + 4, b0 + 6, []AbortedTxn{bb}},   // bb is indexed in segment 1; c's LSO stops the walk
		{b0 + 6, b1 + 2, []AbortedTxn{bb}},   // c starts at upper; its LSO stops the walk
		{b1, b1 + 1, []AbortedTxn{bb}},       // bb's marker only
		{b1 + 3, leo, []AbortedTxn{c, d}},    // from segment 1 on
		{b2 - 1, b2 + 1, []AbortedTxn{d}},    // d spans all three segments
		{b0, leo, []AbortedTxn{a, bb, c, d}}, // everything
		{b2 + 3, leo, nil},                   // after every marker
		{leo, leo + 10, nil},                 // past would match here had it been kept
		{b0 + 2, b0 + 2, nil},                // empty range
	} {
		got := p.AbortedTxns(tc.from, tc.upper)
		if len(got) == 0 && len(tc.want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("AbortedTxns(%d, %d) = %v, want %v (bases %v, leo %d)", tc.from, tc.upper, got, tc.want, b, leo)
		}
	}
}

// TestTxnIndexBadFiles: a damaged .txnindex, or one that is not a regular
// file (a FIFO would block a plain read forever), is rebuilt from the log
// with the rest of the partition served: this log has no ABORT marker, so
// the files go; a partition without any has the flag clear.
func TestTxnIndexBadFiles(t *testing.T) {
	dir, pdir, b, leo := txnTestLog(t)
	writeTxnIndex(t, pdir, b[0], encodeTxnIndex([]AbortedTxn{{1, b[0], b[0] + 2, b[0]}, {2, b[0], b[0] + 1, b[0]}}))
	if err := unix.Mkfifo(filepath.Join(pdir, segmentName(b[1])+txnIndexSuffix), 0o644); err != nil {
		t.Fatal(err)
	}
	good := AbortedTxn{3, b[2], b[2] + 1, b[2]}
	writeTxnIndex(t, pdir, b[2], encodeTxnIndex([]AbortedTxn{good}))
	s := openStore(t, dir, newClock())
	p := mustPartition(t, s, "x")
	if got := p.AbortedTxns(b[0], leo); !reflect.DeepEqual(got, []AbortedTxn{good}) {
		t.Errorf("AbortedTxns = %v, want only %v", got, good)
	}
	for _, base := range b[:2] {
		if _, err := os.Lstat(filepath.Join(pdir, segmentName(base)+txnIndexSuffix)); !os.IsNotExist(err) {
			t.Errorf("the bad .txnindex of segment %d, rebuilt from a log without markers, is still there: %v", base, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	for _, base := range b {
		os.Remove(filepath.Join(pdir, segmentName(base)+txnIndexSuffix))
	}
	s = openStore(t, dir, newClock())
	defer s.Close()
	p = mustPartition(t, s, "x")
	if p.hasTxns.Load() || p.AbortedTxns(b[0], leo) != nil {
		t.Error("a partition without .txnindex reports aborted transactions")
	}
}

// TestTxnIndexFollowsSegment: retention renames a segment's .txnindex with
// the rest of its files and removes it at the last release.
func TestTxnIndexFollowsSegment(t *testing.T) {
	dir, pdir, b, _ := txnTestLog(t)
	writeTxnIndex(t, pdir, b[0], encodeTxnIndex([]AbortedTxn{{1, b[0], b[0] + 2, b[0]}}))
	s := openStore(t, dir, newClock())
	defer s.Close()
	p := mustPartition(t, s, "x")
	seg := p.segs[0]
	seg.acquire()
	seg.markDeleted()
	path := filepath.Join(pdir, segmentName(b[0])+txnIndexSuffix)
	if _, err := os.Stat(path + deletedSuffix); err != nil {
		t.Fatalf("after markDeleted: %v", err)
	}
	seg.release()
	seg.release()
	if _, err := os.Stat(path + deletedSuffix); !os.IsNotExist(err) {
		t.Fatalf("after the last release: %v", err)
	}
}

// TestTxnIndexSurvivesCompaction: the cleaner keeps transactional batches
// and markers, so a merged segment takes its group's aborted transactions
// in a .txnindex of its own, which segfs cannot rebuild from the log. A
// crash at any step of the pass (the cleaner's test hook) must leave every
// entry in place after the reload, as the completed pass and a clean
// restart do.
func TestTxnIndexSurvivesCompaction(t *testing.T) {
	// run builds four segments, gives the first two a .txnindex, then
	// compacts them into one group, stopping where stop says; it returns
	// the aborted transactions found after a reload, the ones written,
	// and the number of steps the pass took.
	run := func(stop func(step string) error) (got, want []AbortedTxn, steps int) {
		dir := t.TempDir()
		bases, pdir, leo := storeWithSegments(t, dir, "c", compactSmallSegments, 4, compactLine)
		want = []AbortedTxn{{1, bases[0], bases[0] + 1, bases[0] + 2}, {2, bases[0] + 3, bases[1] + 1, bases[1] + 2}}
		writeTxnIndex(t, pdir, bases[0], encodeTxnIndex(want[:1]))
		writeTxnIndex(t, pdir, bases[1], encodeTxnIndex(want[1:]))

		s := openStore(t, dir, newClock())
		p := mustPartition(t, s, "c")
		// Larger segments: the closed ones now fit one group.
		if err := p.Topic().SetConfig(map[string]string{"segment.bytes": "100000"}); err != nil {
			t.Fatal(err)
		}
		steps, err := compactStopping(p, stop)
		if err != nil {
			s.abandon()
		} else {
			if n := len(p.acquireSegmentsReleased()); n >= len(bases) {
				t.Fatalf("compaction merged nothing: %d segments", n)
			}
			if got := p.AbortedTxns(bases[0], leo); !reflect.DeepEqual(got, want) {
				t.Errorf("after compaction: %v, want %v", got, want)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(pdir, segmentName(bases[1])+txnIndexSuffix)); !os.IsNotExist(err) {
				t.Errorf("merged segment's .txnindex still there: %v", err)
			}
		}
		s = openStore(t, dir, newClock())
		defer s.Close()
		for _, pat := range []string{"*.swap", "*.cleaned", "*.deleted", "*.tmp"} {
			if m, _ := filepath.Glob(filepath.Join(pdir, pat)); len(m) != 0 {
				t.Fatalf("leftover %v", m)
			}
		}
		p = mustPartition(t, s, "c")
		for _, prob := range indexProblems(t, p.config(), p.dir, p.active().base) {
			t.Errorf("after the reload: %s", prob)
		}
		return p.AbortedTxns(bases[0], leo), want, steps
	}
	got, want, steps := run(func(string) error { return nil })
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after compaction and restart: %v, want %v", got, want)
	}
	errStop := errors.New("stopped by the test")
	for crashAt := 1; crashAt <= steps; crashAt++ {
		n := 0
		got, want, _ := run(func(string) error {
			if n++; n == crashAt {
				return errStop
			}
			return nil
		})
		if !reflect.DeepEqual(got, want) {
			t.Errorf("crash at step %d of %d: after the reload %v, want %v", crashAt, steps, got, want)
		}
	}
}

// acquireSegmentsReleased is the current segment list (references dropped).
func (p *Partition) acquireSegmentsReleased() []*segment {
	segs := p.acquireSegments(0)
	releaseAll(segs)
	return segs
}
