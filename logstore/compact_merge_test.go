package logstore

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/segfs/segfs/logstore/record"
)

// latestText is what a fully compacted keyed log renders: the latest value
// of every key, in the order of those latest offsets.
func latestText(lines []string) string {
	last := map[string]int{}
	for i, l := range lines {
		last[strings.SplitN(l, "=", 2)[0]] = i
	}
	var b strings.Builder
	for i, l := range lines {
		if last[strings.SplitN(l, "=", 2)[0]] == i {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestCompactionMergesSmallSegments: compaction cleans groups of
// consecutive segments into one (Kafka's groupSegmentsBySize), so a
// compacted topic with small segments does not pile up segments, and
// with them open descriptors, as it is rewritten pass after pass. The soak
// found a daemon out of descriptors from exactly that.
func TestCompactionMergesSmallSegments(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, newClock())
	tp, _ := s.CreateTopic("m", 1, map[string]string{
		"cleanup.policy": "compact", "key.separator": "=", "segment.bytes": "2048",
		"min.cleanable.dirty.ratio": "0", "file.delete.delay.ms": "0",
	})
	p, _ := tp.Partition(0)
	var lines []string
	maxClosed := 0
	for round := 0; round < 40; round++ {
		for i := 0; i < 100; i++ {
			l := fmt.Sprintf("k%02d=round %d line %d", i%20, round, i)
			lines = append(lines, l)
			if _, _, err := p.AppendLines([]byte(l + "\n")); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := p.Compact(); err != nil {
			t.Fatal(err)
		}
		segs := p.acquireSegments(0)
		closed := len(segs) - 1
		var closedBytes int64
		for _, sg := range segs[:closed] {
			closedBytes += sg.size.Load()
		}
		releaseAll(segs)
		maxClosed = max(maxClosed, closed)
		// A round rolls about five 2 KiB segments, which this pass cleaned
		// one by one (groups are sized before cleaning, as in Kafka); the
		// next pass merges them with what earlier passes left.
		if round > 0 && closed > 10 {
			t.Fatalf("round %d: %d closed segments hold %d bytes: small segments are not merged", round, closed, closedBytes)
		}
	}
	// Without merging, 4000 lines would have left ~200 segments.
	if maxClosed > 10 {
		t.Fatalf("up to %d closed segments; merging should keep a handful", maxClosed)
	}
	// Offsets survive the merge, and the text is the latest value of every
	// key up to the active segment.
	var dec record.Decoder
	segs := p.acquireSegments(0)
	prev := int64(-1)
	for _, sg := range segs {
		err := scanSegment(sg, &dec, func(pos int64, b []byte, h *record.Header) error {
			return dec.Records(b, func(r *record.Record) error {
				if r.Offset <= prev {
					return fmt.Errorf("offset %d after %d", r.Offset, prev)
				}
				prev = r.Offset
				if want := lines[r.Offset]; !strings.HasPrefix(want, string(r.Key)+"="+string(r.Value)) || len(want) != len(r.Key)+1+len(r.Value) {
					return fmt.Errorf("offset %d holds %s=%s, was written as %q", r.Offset, r.Key, r.Value, want)
				}
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	activeBase := segs[len(segs)-1].base
	releaseAll(segs)
	got := textOf(t, p, 0)
	if want := latestText(lines[:activeBase]); !strings.HasPrefix(got, want) {
		t.Fatalf("compacted text:\n%s\nwant it to start with the latest of each key:\n%s", got, want)
	}
	// The merged log reads the same after a crash (no sealing, no
	// checkpoints) and after a clean restart.
	s.abandon()
	s = openStore(t, dir, newClock())
	p, _ = s.Partition("m", 0)
	if again := textOf(t, p, 0); again != got {
		t.Fatal("merged log reads differently after a crash")
	}
	s.Close()
	s = openStore(t, dir, newClock())
	defer s.Close()
	p, _ = s.Partition("m", 0)
	if again := textOf(t, p, 0); again != got {
		t.Fatal("merged log reads differently after a clean restart")
	}
}

// TestInterruptedGroupSwap crashes the cleaner while it swaps a merged
// group in, after each of the group's segments is renamed .deleted: the
// loader deletes every segment inside the swap's offsets and puts the
// swap in their place. The log then holds no offset twice, nothing that
// was not written, and every record the completed swap keeps.
func TestInterruptedGroupSwap(t *testing.T) {
	cfg := map[string]string{
		"cleanup.policy": "compact", "key.separator": "=", "segment.bytes": "4096",
		"min.cleanable.dirty.ratio": "0", "file.delete.delay.ms": "0",
	}
	var lines []string
	// scenario writes, compacts, writes more and compacts again, stopping
	// the second pass where stop says; it returns the records then found
	// after a crash and a reload.
	scenario := func(stop func(step string) error) (map[int64]string, []int64) {
		dir := t.TempDir()
		s := openStore(t, dir, newClock())
		tp, _ := s.CreateTopic("g", 1, cfg)
		p, _ := tp.Partition(0)
		lines = lines[:0]
		write := func(batches int) {
			for b := 0; b < batches; b++ {
				var sb strings.Builder
				for k := 0; k < 20; k++ {
					// Every fourth key is written once, so every cleaned
					// segment keeps records; the others are overwritten.
					key := fmt.Sprintf("k%d", (len(lines)*7)%13)
					if len(lines)%4 == 0 {
						key = fmt.Sprintf("u%d", len(lines))
					}
					l := fmt.Sprintf("%s=value %d", key, len(lines))
					lines = append(lines, l)
					sb.WriteString(l + "\n")
				}
				if _, _, err := p.AppendLines([]byte(sb.String())); err != nil {
					t.Fatal(err)
				}
			}
		}
		write(40)
		if _, err := p.Compact(); err != nil {
			t.Fatal(err)
		}
		write(20)
		cleanerCrash = stop
		_, err := p.Compact()
		cleanerCrash = nil
		if err == nil {
			t.Fatal("the second pass did not reach the crash")
		}
		s.abandon()
		s = openStore(t, dir, newClock())
		defer s.Close()
		p, _ = s.Partition("g", 0)
		for _, pat := range []string{"*.swap", "*.cleaned", "*.deleted"} {
			if m, _ := filepath.Glob(filepath.Join(dir, "g-0", pat)); len(m) != 0 {
				t.Fatalf("leftover %v", m)
			}
		}
		for _, prob := range indexProblems(t, p.config(), p.dir, p.active().base) {
			t.Errorf("after the reload: %s", prob)
		}
		got := map[int64]string{}
		var order []int64
		var dec record.Decoder
		segs := p.acquireSegments(0)
		defer releaseAll(segs)
		for _, sg := range segs {
			err := scanSegment(sg, &dec, func(pos int64, b []byte, h *record.Header) error {
				return dec.Records(b, func(r *record.Record) error {
					l := string(r.Key) + "=" + string(r.Value)
					if r.Offset >= int64(len(lines)) || lines[r.Offset] != l {
						return fmt.Errorf("offset %d holds %q, never written there", r.Offset, l)
					}
					if len(order) > 0 && r.Offset <= order[len(order)-1] {
						return fmt.Errorf("offset %d after %d: a replaced segment survived", r.Offset, order[len(order)-1])
					}
					got[r.Offset] = l
					order = append(order, r.Offset)
					return nil
				})
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		return got, order
	}
	errStop := fmt.Errorf("stopped by the test")
	deletes := 0
	done, _ := scenario(func(step string) error {
		switch step {
		case "deleting":
			deletes++
		case "swapped":
			return errStop // after the first group is swapped in
		}
		return nil
	})
	if deletes < 2 {
		t.Fatalf("the first group merged %d segments; the test needs several", deletes)
	}
	for crashAt := 1; crashAt <= deletes; crashAt++ {
		n := 0
		got, _ := scenario(func(step string) error {
			if step == "deleting" {
				if n++; n == crashAt {
					return errStop
				}
			}
			return nil
		})
		for off, l := range done {
			if got[off] != l {
				t.Fatalf("crash after %d of %d renames: offset %d (%q) lost", crashAt, deletes, off, l)
			}
		}
	}
}

// TestClosedSegmentDescriptors: a closed segment keeps one descriptor
// open, its .log; the indexes are read through their mappings alone, so
// RLIMIT_NOFILE bounds three times as many segments as before. Lookups
// through the closed segments' indexes still work.
func TestClosedSegmentDescriptors(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, newClock())
	tp, _ := s.CreateTopic("fd", 1, map[string]string{"segment.bytes": "4096", "index.interval.bytes": "100"})
	p, _ := tp.Partition(0)
	for i := 0; i < 2000; i++ {
		if _, _, err := p.AppendLines([]byte(fmt.Sprintf("line %04d %s\n", i, strings.Repeat("x", 40)))); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string) {
		t.Helper()
		pd := filepath.Join(dir, "fd-0")
		ents, _ := os.ReadDir("/proc/self/fd")
		counts := map[string]int{}
		for _, e := range ents {
			target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
			if err == nil && filepath.Dir(target) == pd {
				counts[filepath.Ext(target)]++
			}
		}
		segs := p.acquireSegments(0)
		n := len(segs)
		releaseAll(segs)
		if n < 20 {
			t.Fatalf("%s: only %d segments", when, n)
		}
		// The active segment keeps its two indexes open for appends.
		if counts[".log"] != n || counts[".index"] != 1 || counts[".timeindex"] != 1 {
			t.Fatalf("%s: %d segments hold descriptors %v; want one .log each and the active segment's indexes", when, n, counts)
		}
		for _, off := range []int64{0, 37, 999, 1500, 1999} {
			if got := textOf(t, p, off); !strings.HasPrefix(got, fmt.Sprintf("line %04d ", off)) {
				t.Fatalf("%s: offset %d reads %.20q", when, off, got)
			}
		}
	}
	check("after rolls")
	s.Close()
	s = openStore(t, dir, newClock())
	defer s.Close()
	p, _ = s.Partition("fd", 0)
	check("after a restart")
}

// TestInterruptedGroupSwapEmptyTail: a group whose last segment keeps
// nothing (every key in it is written again in the next segment, which is
// too big to join the group). The swap then ends below that segment's
// base, and the loader, which replaces only the offsets a swap holds,
// would bring the segment back whole after a crash: superseded values
// reappearing in data. A crash at every step of the swap must leave the
// log as the completed pass does.
func TestInterruptedGroupSwapEmptyTail(t *testing.T) {
	cfg := map[string]string{
		"cleanup.policy": "compact", "key.separator": "=", "segment.bytes": "4096",
		"segment.ms": "1000", "min.cleanable.dirty.ratio": "0", "file.delete.delay.ms": "0",
	}
	// run writes three segments, A (keys kept), D (keys all written again
	// in E) and E (those keys and a large value), then compacts, stopping
	// where stop says; it returns the text after a crash and a reload, and
	// the text before the pass.
	run := func(stop func(step string) error) (string, string, int) {
		dir := t.TempDir()
		clock := newClock()
		s := openStore(t, dir, clock)
		tp, _ := s.CreateTopic("e", 1, cfg)
		p, _ := tp.Partition(0)
		var d, e strings.Builder
		for i := 0; i < 20; i++ {
			fmt.Fprintf(&d, "x%02d=old %d\n", i, i)
			fmt.Fprintf(&e, "x%02d=new %d\n", i, i)
		}
		e.WriteString("pad=" + strings.Repeat("p", 3500) + "\n")
		for _, text := range []string{"a0=1\na1=2\na2=3\n", d.String(), e.String(), "z=last\n"} {
			if _, _, err := p.AppendLines([]byte(text)); err != nil {
				t.Fatal(err)
			}
			clock.ms.Add(2000) // the next append rolls (segment.ms)
		}
		segs := p.acquireSegments(0)
		n := len(segs)
		releaseAll(segs)
		if n != 4 {
			t.Fatalf("%d segments, the test needs A, D, E and the active one", n)
		}
		before := textOf(t, p, 0)
		steps, err := compactStopping(p, stop)
		if err != nil {
			s.abandon()
		} else {
			s.Close()
		}
		s = openStore(t, dir, newClock())
		defer s.Close()
		p, _ = s.Partition("e", 0)
		for _, pat := range []string{"*.swap", "*.cleaned", "*.deleted"} {
			if m, _ := filepath.Glob(filepath.Join(dir, "e-0", pat)); len(m) != 0 {
				t.Fatalf("leftover %v", m)
			}
		}
		for _, prob := range indexProblems(t, p.config(), p.dir, p.active().base) {
			t.Errorf("after the reload: %s", prob)
		}
		return textOf(t, p, 0), before, steps
	}
	done, _, steps := run(func(string) error { return nil })
	if strings.Contains(done, "old") || !strings.Contains(done, "x19=new 19\npad=") || !strings.HasPrefix(done, "a0=1\na1=2\na2=3\nx00=new 0\n") {
		t.Fatalf("the completed pass left:\n%.300s", done)
	}
	errStop := fmt.Errorf("stopped by the test")
	for crashAt := 1; crashAt <= steps; crashAt++ {
		n := 0
		var at string
		got, before, _ := run(func(step string) error {
			if n++; n == crashAt {
				at = step
				return errStop
			}
			return nil
		})
		// A crash once a group's new files are written, before anything
		// of the group is deleted, rolls the group back.
		if got != done && !(at == "cleaned" && got == before) {
			t.Fatalf("crash at step %d of %d (%s): the log reads\n%.300s\nwant, as after the completed pass,\n%.300s", crashAt, steps, at, got, done)
		}
	}
}

// TestCompactionMapSmallerThanSegment: the offset map is fixed in size
// (--cleaner-buffer-size), whatever the partition holds. When one segment
// holds more keys than the map, each pass cleans up to where the map
// filled, inside that segment, and the next pass goes on from there, as
// in Kafka; the log converges to the latest value of every key. (Before,
// a pass gave up on the segment where the map filled, so a segment with
// more keys than the map was never cleaned.)
func TestCompactionMapSmallerThanSegment(t *testing.T) {
	clock := newClock()
	dir := t.TempDir()
	const mapBytes = 1024 // 42 slots, 37 keys
	s, err := Open(dir, Options{Now: clock.now, Logger: discardLogger(), CleanerBufferBytes: mapBytes})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tp, _ := s.CreateTopic("big", 1, map[string]string{
		"cleanup.policy": "compact", "key.separator": "=", "segment.ms": "3600000",
		"min.cleanable.dirty.ratio": "0.01", "file.delete.delay.ms": "0",
	})
	p, _ := tp.Partition(0)
	var lines []string
	for i := 0; i < 1000; i++ { // 200 keys, 5 values each, one batch a line
		l := fmt.Sprintf("k%03d=value %d", i%200, i)
		lines = append(lines, l)
		if _, _, err := p.AppendLines([]byte(l + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	clock.ms.Add(2 * 3600000)
	p.AppendLines([]byte("z=rolls the segment\n"))
	if st := statusOf(t, p); st.Segments != 2 {
		t.Fatalf("want one closed segment of 1000 records and the active one: %+v", st)
	}
	passes := 0
	for ; passes < 200; passes++ {
		st, err := p.Compact()
		if err != nil {
			t.Fatal(err)
		}
		if st.SegmentsCleaned == 0 {
			break
		}
	}
	want := latestText(lines) + "z=rolls the segment\n"
	if got := textOf(t, p, 0); got != want {
		t.Fatalf("after %d passes with a %d-byte map the log reads %d bytes:\n%.200s\nwant the latest of 200 keys (%d bytes):\n%.200s",
			passes, mapBytes, len(got), got, len(want), want)
	}
	t.Logf("converged in %d passes", passes)
}

// TestCompactionKeepsEmptyKeys: an empty key ("" in Kafka, the line
// "=value" with key.separator "=") is a key like any other, not a null
// one. The cleaner copied the key of each record it keeps in a rebuilt
// batch with append([]byte(nil), key...), which is nil for an empty key:
// after a pass that rebuilt its batch the line "=empty" read "empty" (a
// record without a key), and the next pass dropped it, as it drops every
// record without a key.
func TestCompactionKeepsEmptyKeys(t *testing.T) {
	clock := newClock()
	s := openStore(t, t.TempDir(), clock)
	defer s.Close()
	tp, _ := s.CreateTopic("e", 1, map[string]string{
		"cleanup.policy": "compact", "key.separator": "=", "segment.ms": "1000",
		"min.cleanable.dirty.ratio": "0", "file.delete.delay.ms": "0",
	})
	p, _ := tp.Partition(0)
	// One batch whose k=1 the next batch supersedes: the cleaner rebuilds
	// it, keeping the empty key's record.
	for _, text := range []string{"=empty\nk=1\n", "k=2\n"} {
		if _, _, err := p.AppendLines([]byte(text)); err != nil {
			t.Fatal(err)
		}
	}
	for pass := 1; pass <= 2; pass++ {
		clock.ms.Add(2000) // the next append rolls (segment.ms)
		if _, _, err := p.AppendLines(fmt.Appendf(nil, "z=pass %d\n", pass)); err != nil {
			t.Fatal(err)
		}
		st, err := p.Compact()
		if err != nil || st.SegmentsCleaned == 0 {
			t.Fatalf("pass %d: %+v, %v", pass, st, err)
		}
		if got := textOf(t, p, 0); !strings.HasPrefix(got, "=empty\nk=2\n") {
			t.Fatalf("after pass %d the log reads %q, want it to start with %q", pass, got, "=empty\nk=2\n")
		}
	}
}
