package logstore

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// latestByKey is each key's last record, as compaction must keep it.
func latestByKey(recs []storedRecord) map[string]storedRecord {
	out := map[string]storedRecord{}
	for _, r := range recs {
		k := r.line[:indexByte(r.line, '=')]
		out[k] = r
	}
	return out
}

// sameRecords compares offsets and lines (the timestamps come from a clock
// the store's own goroutines also read).
func sameRecords(a, b []storedRecord) bool {
	return slices.EqualFunc(a, b, func(x, y storedRecord) bool { return x.offset == y.offset && x.line == y.line })
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return len(s)
}

// faultCompactionLog opens a store in dir with a compacted topic x whose
// next pass merges groups of segments (as TestCompactionCrashAtEveryStep's),
// flushed.
func faultCompactionLog(t *testing.T, dir string) (*Store, *Partition) {
	t.Helper()
	s, err := Open(dir, Options{Now: newClock().now, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	tp, _ := s.CreateTopic("x", 1, swapTestConfig)
	p, _ := tp.Partition(0)
	swapTestLog(t, p, 24)
	if _, err := p.Compact(); err != nil {
		t.Fatal(err)
	}
	swapTestLog(t, p, 12)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	// The first pass's segments are removed by timers: wait for them, or
	// the inodes they free would come back under TestCompactionENOSPC.
	for i := 0; ; i++ {
		if m, _ := filepath.Glob(filepath.Join(p.dir, "*.deleted")); len(m) == 0 {
			break
		}
		if i == 1000 {
			t.Fatal("the first pass's .deleted files stay")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return s, p
}

func noLeftovers(t *testing.T, p *Partition, pats ...string) {
	t.Helper()
	for _, pat := range pats {
		if m, _ := filepath.Glob(filepath.Join(p.dir, pat)); len(m) != 0 {
			t.Fatalf("leftover %v", m)
		}
	}
}

// compactionStates runs the reference pass over faultCompactionLog's log
// and returns what the partition holds before it and after each group is
// swapped in, and the text of the log after it.
func compactionStates(t *testing.T) (states [][]storedRecord, doneText string) {
	t.Helper()
	s, p := faultCompactionLog(t, t.TempDir())
	defer s.Close()
	states = [][]storedRecord{recordsOf(t, p)}
	cleanerCrash = func(step string) error {
		if step == "swapped" {
			states = append(states, recordsOf(t, p))
		}
		return nil
	}
	_, err := p.Compact()
	cleanerCrash = nil
	if err != nil {
		t.Fatal(err)
	}
	return states, textOf(t, p, 0)
}

// TestCompactionENOSPC: a compaction pass on a full disk, out of inodes
// (the new segment's .log, .index or .timeindex cannot be created, or its
// text map saved) or out of blocks (the new .log cannot be written): the
// pass fails with ENOSPC or goes on without the text map, the partition
// serves what it held (the groups swapped before, compacted), no .cleaned
// file is left, and once space is back the next pass and a restart give
// the log of a pass that never failed. No test compacted on a full disk.
func TestCompactionENOSPC(t *testing.T) {
	states, doneText := compactionStates(t)
	for _, full := range []string{"inodes=0", "inodes=1", "inodes=2", "inodes=3", "blocks"} {
		t.Run(full, func(t *testing.T) {
			fs := smallTmpfs(t, "size=16m,nr_inodes=500")
			dir := filepath.Join(fs, "data")
			s, p := faultCompactionLog(t, dir)
			defer func() { s.Close() }()
			var fillers []string
			if full == "blocks" {
				filler := filepath.Join(fs, "filler")
				exec.Command("dd", "if=/dev/zero", "of="+filler, "bs=4k", "status=none").Run()
				fillers = []string{filler}
			} else {
				var free int
				fmt.Sscanf(full, "inodes=%d", &free)
				fillers = exhaustInodes(t, fs)
				for _, f := range fillers[len(fillers)-free:] {
					os.Remove(f)
				}
				fillers = fillers[:len(fillers)-free]
			}
			swapped := 0
			cleanerCrash = func(step string) error {
				if step == "swapped" {
					swapped++
				}
				return nil
			}
			_, err := p.Compact()
			cleanerCrash = nil
			t.Logf("the pass on the full disk: %d groups swapped, %v", swapped, err)
			if err != nil && !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("the pass on a full disk: %v", err)
			}
			if full != "inodes=3" && err == nil {
				t.Fatal("the pass succeeded on a full disk")
			}
			if got := recordsOf(t, p); !sameRecords(got, states[swapped]) {
				t.Fatalf("after the failed pass (%d groups swapped) the partition holds %d records, not the %d it held before", swapped, len(got), len(states[swapped]))
			}
			noLeftovers(t, p, "*.cleaned")
			for _, f := range fillers {
				if err := os.Remove(f); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := p.Compact(); err != nil {
				t.Fatalf("the pass once space is back: %v", err)
			}
			if got := textOf(t, p, 0); got != doneText {
				t.Fatalf("once space is back the log reads\n%.300s\nwant, as after a pass that never failed,\n%.300s", got, doneText)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s, err = Open(dir, Options{Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			p = mustPartition(t, s, "x")
			noLeftovers(t, p, "*.swap", "*.cleaned", "*.deleted", "*.tmp")
			if got := textOf(t, p, 0); got != doneText {
				t.Fatalf("after a restart the log reads\n%.300s\nwant\n%.300s", got, doneText)
			}
			checkBatches(t, p)
			for _, prob := range indexProblems(t, p.config(), p.dir, p.active().base) {
				t.Errorf("after a restart: %s", prob)
			}
		})
	}
}

// TestCompactionFailureAtEveryCall fails each rename and directory sync of
// a compaction pass's swaps in turn (cleanerFault: EIO, the process goes
// on, unlike TestCompactionCrashAtEveryStep's crashes). The pass must
// return the error and leave the partition serving exactly the records it
// held before; no .cleaned file may be left (a pass that failed before its
// .log's swap exists removes its files). Then, going on, the next pass must
// complete and the log read as after a pass that never failed, also after
// a clean restart, with no leftover; and a crash or a clean close right
// after the failure must reload to a consistent log: only records
// written, at their offsets, every key's latest record, every index what
// recovery builds, and the next pass again gives the log of a pass that
// never failed. No test made these calls fail.
func TestCompactionFailureAtEveryCall(t *testing.T) {
	open := func(dir string, clock *fakeClock) *Store {
		t.Helper()
		s, err := Open(dir, Options{Now: clock.now, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	setup := func() (string, *Store, *Partition) {
		dir := t.TempDir()
		s, p := faultCompactionLog(t, dir)
		return dir, s, p
	}
	// The reference: a pass that never fails.
	// states[g] is what the partition holds once g groups are swapped in.
	var calls []string
	_, s, p := setup()
	before := recordsOf(t, p)
	states := [][]storedRecord{before}
	cleanerFault = func(op, name string) error {
		calls = append(calls, op+" "+filepath.Base(name))
		return nil
	}
	cleanerCrash = func(step string) error {
		if step == "swapped" {
			states = append(states, recordsOf(t, p))
		}
		return nil
	}
	_, err := p.Compact()
	cleanerFault, cleanerCrash = nil, nil
	if err != nil {
		t.Fatal(err)
	}
	doneText := textOf(t, p, 0)
	s.Close()
	if !slices.Contains(calls, "syncdir "+filepath.Base(p.dir)) || len(calls) < 10 {
		t.Fatalf("the pass made the calls %v: the test needs the swaps of merged groups", calls)
	}
	t.Logf("%d calls: %v", len(calls), calls)

	failAt := func(k int) func(op, name string) error {
		n := 0
		return func(op, name string) error {
			if n++; n == k {
				return syscall.EIO
			}
			return nil
		}
	}
	for k := 1; k <= len(calls); k++ {
		t.Run(fmt.Sprintf("%d_%s", k, calls[k-1]), func(t *testing.T) {
			for _, stop := range []string{"", "crash", "close"} {
				dir, s, p := setup()
				if got := recordsOf(t, p); !sameRecords(got, before) {
					t.Fatal("the log is not what the reference pass started from")
				}
				cleanerFault = failAt(k)
				swapped := 0
				cleanerCrash = func(step string) error {
					if step == "swapped" {
						swapped++
					}
					return nil
				}
				_, err := p.Compact()
				cleanerFault, cleanerCrash = nil, nil
				if !errors.Is(err, syscall.EIO) {
					s.abandon()
					t.Fatalf("the pass whose call %d failed returned %v", k, err)
				}
				// The groups swapped in before the failure stay compacted.
				if got := recordsOf(t, p); !sameRecords(got, states[swapped]) {
					s.abandon()
					t.Fatalf("after the failed pass (%d groups swapped) the partition holds %d records, not the %d it held before", swapped, len(got), len(states[swapped]))
				}
				if got := textOf(t, p, 0); got != textOf(t, p, 0) || len(got) == 0 {
					t.Fatal("unreadable after the failed pass")
				}
				noLeftovers(t, p, "*.cleaned")
				if stop != "" {
					if stop == "crash" {
						s.abandon()
					} else if err := s.Close(); err != nil {
						t.Fatal(err)
					}
					s = open(dir, newClock())
					p = mustPartition(t, s, "x")
					noLeftovers(t, p, "*.swap", "*.cleaned", "*.deleted", "*.tmp")
					checkBatches(t, p)
					for _, prob := range indexProblems(t, p.config(), p.dir, p.active().base) {
						t.Errorf("after a %s and reload: %s", stop, prob)
					}
					got := recordsOf(t, p)
					for i, r := range got {
						if r.line != swapTestLine(r.offset) || i > 0 && r.offset <= got[i-1].offset {
							t.Fatalf("after a %s and reload, offset %d holds %q after offset %d", stop, r.offset, r.line, got[max(i-1, 0)].offset)
						}
					}
					if want, have := latestByKey(before), latestByKey(got); !mapsEqual(want, have) {
						t.Fatalf("after a %s and reload the keys' latest records changed", stop)
					}
				}
				if _, err := p.Compact(); err != nil {
					t.Fatalf("the next pass: %v", err)
				}
				if got := textOf(t, p, 0); got != doneText {
					t.Fatalf("after the next pass the log reads\n%.300s\nwant, as after a pass that never failed,\n%.300s", got, doneText)
				}
				for _, prob := range indexProblems(t, p.config(), p.dir, p.active().base) {
					t.Errorf("after the next pass: %s", prob)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				s = open(dir, newClock())
				p = mustPartition(t, s, "x")
				noLeftovers(t, p, "*.swap", "*.cleaned", "*.deleted", "*.tmp")
				if got := textOf(t, p, 0); got != doneText {
					t.Fatalf("after a restart the log reads\n%.300s\nwant\n%.300s", got, doneText)
				}
				checkBatches(t, p)
				s.Close()
			}
		})
	}
}

func mapsEqual(a, b map[string]storedRecord) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w.offset != v.offset || w.line != v.line {
			return false
		}
	}
	return true
}

// TestCompactionDeleteRenameFails: a pass whose rename of a replaced
// segment's file to .deleted fails (cleanerFault: EIO), each such rename
// in turn. Whatever the pass returns, the log must then read consistently
// (offsets rising, every key's latest record kept) in the running process,
// after its next pass, and after a clean restart or a crash, with no
// leftover, and the next pass give the log of a pass that never failed. A failed rename used to be ignored: the
// replaced segment stayed on disk under its own name beside the new one
// holding its offsets, and the restart served both.
func TestCompactionDeleteRenameFails(t *testing.T) {
	states, doneText := compactionStates(t)
	before := states[0]
	var calls []string
	{
		s, p := faultCompactionLog(t, t.TempDir())
		cleanerFault = func(op, name string) error {
			if strings.HasSuffix(name, deletedSuffix) {
				calls = append(calls, filepath.Base(name))
			}
			return nil
		}
		_, err := p.Compact()
		cleanerFault = nil
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("renames to .deleted: %v", calls)
	check := func(t *testing.T, p *Partition, when string) {
		t.Helper()
		got := recordsOf(t, p)
		for i, r := range got {
			if r.line != swapTestLine(r.offset) || i > 0 && r.offset <= got[i-1].offset {
				t.Fatalf("%s, offset %d holds %q after offset %d", when, r.offset, r.line, got[max(i-1, 0)].offset)
			}
		}
		if !mapsEqual(latestByKey(before), latestByKey(got)) {
			t.Fatalf("%s the keys' latest records changed", when)
		}
		checkBatches(t, p)
	}
	for k, name := range calls {
		if !strings.HasSuffix(name, logSuffix+deletedSuffix) && !strings.HasSuffix(name, indexSuffix+deletedSuffix) {
			continue
		}
		for _, stop := range []string{"next", "close", "crash"} {
			t.Run(fmt.Sprintf("%d_%s/%s", k+1, name, stop), func(t *testing.T) {
				dir := t.TempDir()
				s, p := faultCompactionLog(t, dir)
				n := 0
				cleanerFault = func(op, target string) error {
					if strings.HasSuffix(target, deletedSuffix) {
						if n++; n == k+1 {
							return syscall.EIO
						}
					}
					return nil
				}
				_, err := p.Compact()
				cleanerFault = nil
				t.Logf("the pass: %v", err)
				check(t, p, "after the pass")
				if stop == "next" {
					if _, err := p.Compact(); err != nil {
						t.Fatalf("the next pass: %v", err)
					}
					if got := textOf(t, p, 0); got != doneText {
						t.Fatalf("after the next pass the log reads\n%.300s\nwant, as after a pass that never failed,\n%.300s", got, doneText)
					}
				}
				if stop == "crash" {
					s.abandon()
				} else if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				s, err = Open(dir, Options{Logger: discardLogger()})
				if err != nil {
					t.Fatal(err)
				}
				defer func() { s.Close() }()
				p = mustPartition(t, s, "x")
				noLeftovers(t, p, "*.swap", "*.cleaned", "*.deleted", "*.tmp")
				check(t, p, "after a restart")
				for _, prob := range indexProblems(t, p.config(), p.dir, p.active().base) {
					t.Errorf("after a restart: %s", prob)
				}
				if _, err := p.Compact(); err != nil {
					t.Fatalf("the pass after the restart: %v", err)
				}
				if got := textOf(t, p, 0); got != doneText {
					t.Fatalf("after the pass after the restart the log reads\n%.300s\nwant, as after a pass that never failed,\n%.300s", got, doneText)
				}
			})
		}
	}
}

// TestCompactionFailedSwapThenRetention: a compaction pass stops with its
// swap committed (the rename of the new .log to its final name fails), and
// retention then deletes the segments the swap was to replace before any
// pass completes it. A restart completes the swap from the .swap files
// left; the log-start checkpoint must then hold the log start, or the
// compacted copy of the deleted records is served again from offset 0.
func TestCompactionFailedSwapThenRetention(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(fmt.Sprintf("crash=%v", crash), func(t *testing.T) {
			dir := t.TempDir()
			s, p := faultCompactionLog(t, dir)
			defer func() { s.Close() }()
			p.mu.RLock()
			first := p.segs[0]
			p.mu.RUnlock()
			cleanerFault = func(op, name string) error {
				if op == "rename" && name == first.path(logSuffix) {
					return syscall.EIO
				}
				return nil
			}
			_, err := p.Compact()
			cleanerFault = nil
			if !errors.Is(err, syscall.EIO) {
				t.Fatalf("the pass: %v", err)
			}
			if m, _ := filepath.Glob(filepath.Join(p.dir, "*.log.swap")); len(m) != 1 {
				t.Fatalf("the failed pass left %v, want its .log.swap", m)
			}
			p.mu.RLock()
			keep := p.segs[2].base // retention deletes the first two segments
			p.mu.RUnlock()
			var size int64
			p.mu.RLock()
			for _, sg := range p.segs[2:] {
				size += sg.size.Load()
			}
			p.mu.RUnlock()
			p.topic.SetConfig(map[string]string{"cleanup.policy": "compact,delete", "retention.bytes": fmt.Sprint(size)})
			st, err := p.ApplyRetention()
			if err != nil || st.NewLogStart != keep {
				t.Fatalf("retention: %+v %v, want the log start at %d", st, err, keep)
			}
			want := textOf(t, p, keep)
			if crash {
				s.abandon()
			} else if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s, err = Open(dir, Options{Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			p = mustPartition(t, s, "x")
			if p.LogStartOffset() != keep {
				t.Fatalf("after a restart the log starts at %d, want %d, where retention left it", p.LogStartOffset(), keep)
			}
			if got := textOf(t, p, keep); got != want {
				t.Fatalf("after a restart the log reads\n%.300s\nwant\n%.300s", got, want)
			}
			if _, err := p.Text(0); !errors.Is(err, ErrOffsetOutOfRange) {
				t.Fatalf("Text(0) below the log start after a restart: %v", err)
			}
			if _, err := p.ApplyRetention(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(first.path(logSuffix)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the next retention pass left the segment below the log start: %v", err)
			}
		})
	}
}
