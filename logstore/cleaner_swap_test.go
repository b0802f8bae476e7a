package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/segfs/segfs/logstore/record"
)

// rebuiltCopy recovers a copy of the segment file logPath (base offset
// base) in a directory of its own, as the loader rebuilds a segment whose
// indexes are missing or damaged, and returns it sealed: its fields,
// indexes and text map are what recovery computes, its files (under its
// path) what recovery writes.
func rebuiltCopy(t *testing.T, cfg *Config, logPath string, base int64) *segment {
	t.Helper()
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	s := newSegmentStruct(t.TempDir(), base)
	if err := os.WriteFile(s.path(logSuffix), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if s.log, err = os.OpenFile(s.path(logSuffix), os.O_RDWR, 0); err != nil {
		t.Fatal(err)
	}
	var dec record.Decoder
	if dropped, err := s.recover(cfg, false, &dec); err != nil || dropped != 0 {
		t.Fatalf("recovering a copy of %s: %d bytes dropped, %v", logPath, dropped, err)
	}
	t.Cleanup(s.closeFiles)
	return s
}

// indexProblems compares the .index, .timeindex and .textindex of every
// closed segment in the partition directory dir (all but the one at
// activeBase) with what recovery rebuilds from its .log. The append path,
// recovery and the cleaner build them by the same rules, so they must be
// the same bytes: anything else is an index a reader (segfs verify beside
// the mount, Kafka after a crash) would find missing, half-built or wrong.
// A missing .textindex is fine: it is segfs's own cache, rebuilt at load.
func indexProblems(t *testing.T, cfg *Config, dir string, activeBase int64) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var probs []string
	for _, e := range ents {
		base, ok := parseSegmentBase(e.Name(), logSuffix)
		if !ok || base == activeBase {
			continue
		}
		name := filepath.Join(dir, segmentName(base))
		rb := rebuiltCopy(t, cfg, name+logSuffix, base)
		for _, suf := range []string{indexSuffix, timeIndexSuffix, textIndexSuffix} {
			got, err := os.ReadFile(name + suf)
			if errors.Is(err, os.ErrNotExist) && suf == textIndexSuffix {
				continue
			}
			if err != nil {
				probs = append(probs, fmt.Sprintf("%s%s beside its .log: %v", segmentName(base), suf, err))
				continue
			}
			want, err := os.ReadFile(rb.path(suf))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				probs = append(probs, fmt.Sprintf("%s%s: %d bytes (%x...), recovery builds %d bytes (%x...)",
					segmentName(base), suf, len(got), got[:min(len(got), 24)], len(want), want[:min(len(want), 24)]))
			}
		}
	}
	return probs
}

// checkBatches reads every batch of every segment of p (CRC-checked), as
// segfs verify does.
func checkBatches(t *testing.T, p *Partition) {
	t.Helper()
	var dec record.Decoder
	segs := p.acquireSegments(0)
	defer releaseAll(segs)
	for _, sg := range segs {
		if err := scanSegment(sg, &dec, func(int64, []byte, *record.Header) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
}

// swapTestConfig has small segments with several index entries each, so
// that the cleaner merges groups and writes indexes with entries.
var swapTestConfig = map[string]string{
	"cleanup.policy": "compact", "key.separator": "=", "segment.bytes": "4096", "index.interval.bytes": "300",
	"min.cleanable.dirty.ratio": "0", "file.delete.delay.ms": "0",
}

// TestCompactionSwapNeverExposesPartialIndex: a reader of the partition
// directory beside the running cleaner (segfs verify beside a mount, see
// tests/stress_mount_test.go) must never find a segment's .log beside a
// missing, half-built or wrong .index or .timeindex. The cleaner used to
// rename the new .log into place and only then build its indexes in place
// from it (recover), so at that moment NNN.log stood without NNN.index,
// and then beside one being written. Now the indexes are built while the
// log is written and move with it, so at every step of the pass, each
// closed segment's files are what recovery would build from its .log. The
// new segment is served as written, with the state recovery would have
// computed from it.
func TestCompactionSwapNeverExposesPartialIndex(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, newClock())
	defer s.Close()
	tp, _ := s.CreateTopic("x", 1, swapTestConfig)
	p, _ := tp.Partition(0)
	swapTestLog(t, p, 40)
	if _, err := p.Compact(); err != nil {
		t.Fatal(err)
	}
	swapTestLog(t, p, 20)
	cfg := p.config()
	activeBase := p.active().base
	var steps []string
	_, err := compactStopping(p, func(step string) error {
		steps = append(steps, step)
		for _, prob := range indexProblems(t, cfg, p.dir, activeBase) {
			t.Errorf("at step %d (%s): %s", len(steps), step, prob)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(steps, "renamed") {
		t.Fatalf("the pass swapped nothing in (steps %v)", steps)
	}
	t.Logf("steps: %v", steps)
	// The new segments hold what recovery would have computed from them.
	segs := p.acquireSegments(0)
	defer releaseAll(segs)
	for _, sg := range segs[:len(segs)-1] {
		rb := rebuiltCopy(t, cfg, sg.path(logSuffix), sg.base)
		got := fmt.Sprintf("size %d, last batch at %d, max timestamp %d at %d, first batch timestamp %d, index entries %d/%d",
			sg.size.Load(), sg.lastBatchPos.Load(), sg.maxTs.Load(), sg.maxTsOffset.Load(), sg.firstBatchTs, sg.oidx.Entries(), sg.tidx.Entries())
		want := fmt.Sprintf("size %d, last batch at %d, max timestamp %d at %d, first batch timestamp %d, index entries %d/%d",
			rb.size.Load(), rb.lastBatchPos.Load(), rb.maxTs.Load(), rb.maxTsOffset.Load(), rb.firstBatchTs, rb.oidx.Entries(), rb.tidx.Entries())
		if got != want {
			t.Errorf("segment %d: %s; recovery computes %s", sg.base, got, want)
		}
		if sg.next.Load() < rb.next.Load() {
			t.Errorf("segment %d: next offset %d, its last batch ends at %d", sg.base, sg.next.Load(), rb.next.Load())
		}
		gt, ge, gc := sg.text.snapshot()
		wt, we, wc := rb.text.snapshot()
		if gt != wt || ge != we || gc != wc || len(sg.text.entries) != len(rb.text.entries) {
			t.Errorf("segment %d: text map %+v to %d (%d entries), recovery builds %+v to %d (%d entries)",
				sg.base, gt, ge, len(sg.text.entries), wt, we, len(rb.text.entries))
		}
	}
}

// swapTestLine is the line swapTestLog writes at offset n.
func swapTestLine(n int64) string {
	key := fmt.Sprintf("k%d", (n*7)%13)
	if n%4 == 0 {
		key = fmt.Sprintf("u%d", n)
	}
	return fmt.Sprintf("%s=value %d", key, n)
}

// swapTestLog writes batches of 20 lines to p (swapTestLine): every fourth
// key is written once, the others over and over, so that every cleaned
// segment keeps records and loses some.
func swapTestLog(t *testing.T, p *Partition, batches int) {
	t.Helper()
	for b := 0; b < batches; b++ {
		var sb strings.Builder
		for k := int64(0); k < 20; k++ {
			sb.WriteString(swapTestLine(p.LogEndOffset()+k) + "\n")
		}
		if _, _, err := p.AppendLines([]byte(sb.String())); err != nil {
			t.Fatal(err)
		}
	}
}

// storedRecord is a record as the log holds it.
type storedRecord struct {
	offset, ts int64
	line       string
}

// recordsOf reads every record of p in offset order.
func recordsOf(t *testing.T, p *Partition) []storedRecord {
	t.Helper()
	var recs []storedRecord
	var dec record.Decoder
	segs := p.acquireSegments(0)
	defer releaseAll(segs)
	for _, sg := range segs {
		err := scanSegment(sg, &dec, func(_ int64, b []byte, h *record.Header) error {
			return dec.Records(b, func(r *record.Record) error {
				recs = append(recs, storedRecord{r.Offset, r.Timestamp, string(r.Key) + "=" + string(r.Value)})
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return recs
}

// TestCompactionCrashAtEveryStep crashes a compaction pass that merges
// groups of segments at each step of its swap (cleanerCrash) and reloads.
// The log must then hold only records written, each at its offset, in
// order, and every record the completed pass keeps; every batch checks
// out; no .cleaned, .swap or .deleted file is left; every closed
// segment's indexes are what recovery builds from its .log (the checks of
// segfs verify, and more); reads from an offset or a timestamp, which go
// through the indexes, find what a scan of the records finds. The next
// pass then leaves the log reading exactly as the completed pass left it.
// It runs with a map that holds every key, and with one that fills inside
// the dirty segments, so that the round ends early and the pass copies
// what lies past its end as it was.
func TestCompactionCrashAtEveryStep(t *testing.T) {
	t.Run("map-holds-all", func(t *testing.T) { compactionCrashAtEveryStep(t, 0) })
	t.Run("map-fills", func(t *testing.T) { compactionCrashAtEveryStep(t, 40*mapSlot) })
}

func compactionCrashAtEveryStep(t *testing.T, mapBytes int) {
	open := func(dir string, clock *fakeClock) *Store {
		t.Helper()
		s, err := Open(dir, Options{Now: clock.now, Logger: discardLogger(), CleanerBufferBytes: mapBytes})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	roundEnd := int64(-1) // where the completed pass's round ended
	run := func(stop func(step string) error) (kept []storedRecord, final string, steps int) {
		dir := t.TempDir()
		clock := newClock()
		s := open(dir, clock)
		tp, _ := s.CreateTopic("x", 1, swapTestConfig)
		p, _ := tp.Partition(0)
		from := clock.ms.Load()
		swapTestLog(t, p, 24)
		if _, err := p.Compact(); err != nil {
			t.Fatal(err)
		}
		swapTestLog(t, p, 12)
		to := clock.ms.Load() // the records' timestamps lie in [from, to]
		// The recovery point at the log end: after the crash, the loader
		// trusts the closed segments' indexes as it finds them (it
		// rebuilds those of segments past the recovery point anyway).
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
		steps, err := compactStopping(p, stop)
		crashed := err != nil
		if crashed {
			s.abandon()
		} else {
			if roundEnd < 0 {
				roundEnd = p.firstDirty.Load()
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
		s = open(dir, newClock())
		defer s.Close()
		p = mustPartition(t, s, "x")
		for _, pat := range []string{"*.swap", "*.cleaned", "*.deleted", "*.tmp"} {
			if m, _ := filepath.Glob(filepath.Join(p.dir, pat)); len(m) != 0 {
				t.Fatalf("leftover %v", m)
			}
		}
		checkBatches(t, p)
		for _, prob := range indexProblems(t, p.config(), p.dir, p.active().base) {
			t.Errorf("after the reload: %s", prob)
		}
		kept = recordsOf(t, p)
		for i, r := range kept {
			if r.line != swapTestLine(r.offset) || i > 0 && r.offset <= kept[i-1].offset {
				t.Fatalf("record %d: offset %d holds %q after offset %d: never written so", i, r.offset, r.line, kept[max(i-1, 0)].offset)
			}
		}
		// Lookups through the indexes against the scan.
		for i := 0; i < len(kept); i += 17 {
			var want strings.Builder
			for _, r := range kept[i:] {
				want.WriteString(r.line + "\n")
			}
			off := kept[i].offset
			if i > 0 && i%2 == 1 {
				off = kept[i-1].offset + 1 // if compacted away, it reads from the next record
			}
			if got := textOf(t, p, off); got != want.String() {
				t.Fatalf("from offset %d the log reads %.80q..., its records from there are %.80q...", off, got, want.String())
			}
		}
		for ts := from - 1; ts <= to+1; ts += max((to-from)/50, 1) {
			want := int64(-1)
			for _, r := range kept {
				if r.ts >= ts {
					want = r.offset
					break
				}
			}
			off, ok, err := p.OffsetForTime(ts)
			if err != nil || !ok && want >= 0 || ok && off != want {
				t.Fatalf("timestamp %d finds offset %d (%v, %v); the first record at or after it is at %d", ts, off, ok, err, want)
			}
		}
		if crashed {
			if _, err := p.Compact(); err != nil {
				t.Fatal(err)
			}
			for _, prob := range indexProblems(t, p.config(), p.dir, p.active().base) {
				t.Errorf("after the next pass: %s", prob)
			}
		}
		return kept, textOf(t, p, 0), steps
	}
	var names []string
	done, doneText, steps := run(func(step string) error {
		names = append(names, step)
		return nil
	})
	if mapBytes == 0 {
		// Two groups or more, the first merging segments.
		if first := slices.Index(names, "swapped"); first < 0 || strings.Count(strings.Join(names, " "), "swapped") < 2 || !slices.Contains(names[:first], "deleting") {
			t.Fatalf("the pass took steps %v: the test needs the swaps of several merged groups", names)
		}
	} else if !slices.Contains(names, "swapped") || roundEnd <= 0 || roundEnd >= done[len(done)-1].offset-12*20 {
		// The round must end inside the segments it cleans, well below
		// the records written after the first pass.
		t.Fatalf("the pass took steps %v and its round ended at %d: the test needs a map that fills in a segment the pass rewrites", names, roundEnd)
	}
	t.Logf("steps: %v, round end %d", names, roundEnd)
	errStop := errors.New("stopped by the test")
	for crashAt := 1; crashAt <= steps; crashAt++ {
		n := 0
		var at string
		got, gotText, _ := run(func(step string) error {
			if n++; n == crashAt {
				at = step
				return errStop
			}
			return nil
		})
		have := map[int64]bool{}
		for _, r := range got {
			have[r.offset] = true
		}
		for _, r := range done {
			if !have[r.offset] {
				t.Errorf("crash at step %d of %d (%s): offset %d (%q), which the completed pass keeps, is lost", crashAt, steps, at, r.offset, r.line)
				break
			}
		}
		if gotText != doneText {
			t.Errorf("crash at step %d of %d (%s): after the next pass the log reads\n%.300s\nwant, as after the completed pass,\n%.300s", crashAt, steps, at, gotText, doneText)
		}
	}
}
