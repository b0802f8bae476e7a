package logstore

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/segfs/segfs/logstore/record"
)

// snapshotRead is ReadBelow as it was before it took its references one
// segment at a time: a reference on every segment from the one holding
// offset to the log end, then the same walk over them. Without concurrent
// changes of the segment list, ReadBelow must give exactly its result.
func snapshotRead(p *Partition, offset, maxBytes, upper int64) (*ReadResult, error) {
	if err := p.checkRange(offset); err != nil {
		return nil, err
	}
	res := &ReadResult{}
	if offset == p.leo.Load() || offset >= upper {
		return res, nil
	}
	segs := p.acquireSegments(offset)
	var used []*segment
	defer func() {
		for _, s := range segs {
			if !snapshotHas(used, s) {
				s.release()
			}
		}
	}()
	for _, s := range segs {
		if res.Bytes > 0 && res.Bytes >= maxBytes {
			break
		}
		limit := s.size.Load()
		var pos int64
		if res.Bytes == 0 {
			var found bool
			var err error
			pos, _, found, err = s.findBatch(offset, limit)
			if err != nil {
				used = nil
				return nil, err
			}
			if !found {
				continue
			}
		}
		end := pos
		for end < limit {
			h, err := s.header(end, limit)
			if err != nil {
				if res.Bytes == 0 && end == pos {
					used = nil
					return nil, err
				}
				break
			}
			if h.BaseOffset >= upper {
				break
			}
			if res.Bytes+(end-pos) > 0 && res.Bytes+(end-pos)+h.Size() > maxBytes {
				break
			}
			end += h.Size()
			res.Next = h.NextOffset()
		}
		if end > pos {
			res.Slices = append(res.Slices, FileSlice{File: s.log, Pos: pos, Len: end - pos})
			res.Bytes += end - pos
			used = append(used, s)
		}
		if end < limit {
			break
		}
	}
	res.segs = used
	return res, nil
}

func snapshotHas(list []*segment, s *segment) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// sameRead reports how got differs from want (slices, byte count, next
// offset), "" when it does not.
func sameRead(got, want *ReadResult) string {
	if got.Bytes != want.Bytes || got.Next != want.Next || len(got.Slices) != len(want.Slices) {
		return fmt.Sprintf("%d bytes in %d slices, next %d; want %d bytes in %d slices, next %d",
			got.Bytes, len(got.Slices), got.Next, want.Bytes, len(want.Slices), want.Next)
	}
	for i := range got.Slices {
		if got.Slices[i] != want.Slices[i] {
			return fmt.Sprintf("slice %d is %s@%d+%d, want %s@%d+%d", i,
				got.Slices[i].File.Name(), got.Slices[i].Pos, got.Slices[i].Len,
				want.Slices[i].File.Name(), want.Slices[i].Pos, want.Slices[i].Len)
		}
	}
	return ""
}

// checkReadBatches reads a result's slices from their files, as sendfile
// would, and checks that they hold whole, valid batches in offset order,
// the first holding an offset >= from, none at or past upper, the last
// ending at r.Next.
func checkReadBatches(r *ReadResult, from, upper int64) error {
	var total int64
	prev := int64(-1)
	for i, sl := range r.Slices {
		b := make([]byte, sl.Len)
		if n, err := sl.File.ReadAt(b, sl.Pos); int64(n) != sl.Len {
			return fmt.Errorf("slice %d of %s at %d: %d of %d bytes: %v", i, sl.File.Name(), sl.Pos, n, sl.Len, err)
		}
		for len(b) > 0 {
			h, err := record.ParseHeader(b)
			if err != nil {
				return fmt.Errorf("slice %d: %v", i, err)
			}
			if h.Size() > int64(len(b)) {
				return fmt.Errorf("slice %d ends inside a batch", i)
			}
			if err := record.Validate(b[:h.Size()]); err != nil {
				return fmt.Errorf("slice %d, batch %d: %v", i, h.BaseOffset, err)
			}
			switch {
			case prev < 0 && h.LastOffset() < from:
				return fmt.Errorf("first batch %d..%d below %d", h.BaseOffset, h.LastOffset(), from)
			case prev >= 0 && h.BaseOffset < prev:
				return fmt.Errorf("batch %d after offset %d", h.BaseOffset, prev)
			case h.BaseOffset >= upper:
				return fmt.Errorf("batch %d at or past upper %d", h.BaseOffset, upper)
			}
			prev = h.NextOffset()
			b = b[h.Size():]
		}
		total += sl.Len
	}
	if total != r.Bytes || (total > 0 && prev != r.Next) {
		return fmt.Errorf("%d bytes ending at %d; result says %d ending at %d", total, prev, r.Bytes, r.Next)
	}
	return nil
}

// TestReadManySegmentsMatchesSnapshot reads a log of many small segments
// from every offset, with maxBytes from one byte to more than the log and
// several upper bounds, and compares each result with that of a reference
// on every segment to the log end (snapshotRead): ReadBelow takes its
// references one segment at a time and must return the same slices. The
// compacted log has offset gaps inside and between segments, and its start
// moved by DeleteRecords into a segment.
func TestReadManySegmentsMatchesSnapshot(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	defer s.Close()
	plain, _ := s.CreateTopic("plain", 1, map[string]string{"segment.bytes": "700"})
	pp, _ := plain.Partition(0)
	cp := compactTopic(t, s, "compacted", map[string]string{"segment.bytes": "700", "cleanup.policy": "compact,delete"})
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 150; i++ {
		var b strings.Builder
		for j := 0; j <= rng.IntN(4); j++ {
			fmt.Fprintf(&b, "k%d=%d-%s\n", rng.IntN(12), i, strings.Repeat("v", rng.IntN(60)))
		}
		for _, p := range []*Partition{pp, cp} {
			if _, _, err := p.AppendLines([]byte(b.String())); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := cp.Compact(); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.DeleteRecords(cp.LogStartOffset() + 7); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*Partition{pp, cp} {
		p.mu.RLock()
		nsegs := len(p.segs)
		p.mu.RUnlock()
		if nsegs < 20 {
			t.Fatalf("%s: %d segments, want many", p.Topic().Name(), nsegs)
		}
		start, leo := p.LogStartOffset(), p.LogEndOffset()
		size := p.Size()
		reads := 0
		for off := start; off <= leo; off++ {
			for _, maxBytes := range []int64{0, 1, 150, 700, 2000, size / 2, size + 1} {
				for _, upper := range []int64{math.MaxInt64, leo - 1, (start + leo) / 2, off + 5} {
					got, err := p.ReadBelow(off, maxBytes, upper)
					want, werr := snapshotRead(p, off, maxBytes, upper)
					if err != nil || werr != nil {
						t.Fatalf("%s: ReadBelow(%d, %d, %d): %v; snapshot: %v", p.Topic().Name(), off, maxBytes, upper, err, werr)
					}
					if d := sameRead(got, want); d != "" {
						t.Fatalf("%s: ReadBelow(%d, %d, %d): %s", p.Topic().Name(), off, maxBytes, upper, d)
					}
					if err := checkReadBatches(got, off, upper); err != nil {
						t.Fatalf("%s: ReadBelow(%d, %d, %d): %v", p.Topic().Name(), off, maxBytes, upper, err)
					}
					got.Release()
					want.Release()
					reads++
				}
			}
		}
		// Every reference was dropped: the partition holds one of each.
		p.mu.RLock()
		for _, sg := range p.segs {
			if n := sg.refs.Load(); n != 1 {
				t.Errorf("%s: segment %d has %d references after %d reads", p.Topic().Name(), sg.base, n, reads)
			}
		}
		p.mu.RUnlock()
	}
}

// TestReadReferencesOnlyItsSegments: a fetch at the head of a partition
// of 100 segments takes a reference on the one segment it reads, and one
// of 2 KiB on the segments it reads and the one after them. It took one on
// every segment from the one holding the offset to the log end: 100 atomic
// adds, and as many to drop them, per fetch of a consumer near the log
// start (1,000 of each at 1,000 segments, see BenchmarkReadManySegments);
// a time lookup did the same from the log start. (100 segments, not 1,000:
// each roll costs a few fsyncs.) The other per-request readers of a few
// segments (ListOffsets -3, the status file, open and stat of a raw
// segment file) referenced every segment of the log too.
func TestReadReferencesOnlyItsSegments(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	defer s.Close()
	tp, _ := s.CreateTopic("many", 1, map[string]string{"segment.bytes": "100"})
	p, _ := tp.Partition(0)
	for i := 0; i < 100; i++ {
		if _, _, err := p.AppendLines([]byte(fmt.Sprintf("line %04d\n", i))); err != nil {
			t.Fatal(err)
		}
	}
	p.mu.RLock()
	segs := append([]*segment(nil), p.segs...)
	p.mu.RUnlock()
	if len(segs) < 100 {
		t.Fatalf("%d segments, want 100", len(segs))
	}
	taken := func() int64 {
		var n int64
		for _, sg := range segs {
			n += sg.acquires.Load()
		}
		return n
	}
	read := func(offset, maxBytes int64) func() (int64, error) {
		return func() (int64, error) {
			r, err := p.Read(offset, maxBytes)
			if err != nil {
				return 0, err
			}
			defer r.Release()
			return int64(len(r.segs)), nil
		}
	}
	for _, tc := range []struct {
		name  string
		read  func() (held int64, err error)
		extra int64 // references the read may take beyond those it holds
	}{
		{"Read(0, 1)", read(0, 1), 0},
		{"Read(0, 2 KiB)", read(0, 2048), 1}, // and the segment that did not fit
		{"Read(50, 1)", read(50, 1), 0},
		{"OffsetForTime(0)", func() (int64, error) {
			if _, ok, err := p.OffsetForTime(0); err != nil || !ok {
				return 0, fmt.Errorf("found %v: %v", ok, err)
			}
			return 0, nil
		}, 1},
		// ListOffsets -3 reads the segment of the largest timestamp.
		{"MaxTimestamp", func() (int64, error) {
			if _, off, ok, err := p.MaxTimestamp(); err != nil || !ok || off != 99 {
				return 0, fmt.Errorf("offset %d, found %v: %v", off, ok, err)
			}
			return 0, nil
		}, 1},
		// The status file reads the first and the last batch.
		{"Status", func() (int64, error) {
			if st, err := p.Status(); err != nil || st.Segments != len(segs) || st.FirstTimestamp < 0 || st.LastTimestamp < st.FirstTimestamp {
				return 0, fmt.Errorf("status %+v: %v", st, err)
			}
			return 0, nil
		}, 2},
		// A readdir and a stat of segments/ read no file.
		{"SegmentFiles", func() (int64, error) {
			if n := len(p.SegmentFiles()); n != 3*len(segs) {
				return 0, fmt.Errorf("%d files", n)
			}
			return 0, nil
		}, 0},
		{"SegmentFileSize", func() (int64, error) {
			if n, ok := p.SegmentFileSize(segmentName(segs[50].base) + logSuffix); !ok || n != segs[50].size.Load() {
				return 0, fmt.Errorf("size %d, found %v", n, ok)
			}
			return 0, nil
		}, 0},
		// An open raw file holds its own segment until Close.
		{"OpenSegmentFile", func() (int64, error) {
			h, err := p.OpenSegmentFile(segmentName(segs[0].base) + indexSuffix)
			if err != nil {
				return 0, err
			}
			return 1, h.Close()
		}, 0},
	} {
		before := taken()
		held, err := tc.read()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if n := taken() - before; n > held+tc.extra || n < held {
			t.Errorf("%s took %d segment references and holds %d; want at most %d", tc.name, n, held, held+tc.extra)
		}
	}
}

// TestReadWhileSegmentsChange runs reads and time lookups while appends
// roll segments, DeleteRecords and retention delete them and compaction
// swaps them, with file.delete.delay.ms=0 so that a segment whose last
// reference goes is closed at once: each read either fails with
// ErrOffsetOutOfRange or returns whole valid batches read from files still
// open until Release (run it with -race).
func TestReadWhileSegmentsChange(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	defer s.Close()
	p := compactTopic(t, s, "churn", map[string]string{
		"segment.bytes": "600", "cleanup.policy": "compact,delete", "retention.bytes": "20000",
	})
	const appends = 500
	var done atomic.Bool
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	fail := func(err error) {
		select {
		case errc <- err:
		default:
		}
	}
	wg.Add(1)
	go func() { // the writer, rolling a segment every few appends
		defer wg.Done()
		defer done.Store(true)
		for i := 0; i < appends; i++ {
			line := fmt.Sprintf("k%d=%d-%s\n", i%20, i, strings.Repeat("x", i%50))
			if _, _, err := p.AppendLines([]byte(line)); err != nil {
				fail(err)
				return
			}
		}
	}()
	wg.Add(1)
	go func() { // the cleaners: compaction, retention, DeleteRecords
		defer wg.Done()
		cleanLoop(p, &done, 7, fail, func() {})
	}()
	var reads, lookups atomic.Int64
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 7))
			for !done.Load() {
				start, leo := p.LogStartOffset(), p.LogEndOffset()
				off := start + rng.Int64N(leo-start+1)
				maxBytes := []int64{1, 500, 3000, 1 << 20}[rng.IntN(4)]
				upper := int64(math.MaxInt64)
				if rng.IntN(3) == 0 {
					upper = off + rng.Int64N(40)
				}
				res, err := p.ReadBelow(off, maxBytes, upper)
				if errors.Is(err, ErrOffsetOutOfRange) {
					continue
				}
				if err != nil {
					fail(fmt.Errorf("ReadBelow(%d, %d, %d): %w", off, maxBytes, upper, err))
					return
				}
				err = checkReadBatches(res, off, upper)
				res.Release()
				if err != nil {
					fail(fmt.Errorf("ReadBelow(%d, %d, %d): %w", off, maxBytes, upper, err))
					return
				}
				reads.Add(1)
				if rng.IntN(4) == 0 {
					if _, _, _, err := p.LookupTime(1_700_000_000_000 + rng.Int64N(2*appends)); err != nil {
						fail(fmt.Errorf("LookupTime: %w", err))
						return
					}
					lookups.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	if p.LogStartOffset() == 0 || reads.Load() == 0 {
		t.Fatalf("log start %d after %d reads: nothing changed under them", p.LogStartOffset(), reads.Load())
	}
	t.Logf("%d reads, %d lookups; log [%d, %d)", reads.Load(), lookups.Load(), p.LogStartOffset(), p.LogEndOffset())
}

// TestSegmentFileSize: the size of one raw file is the size SegmentFiles
// lists for it, and names that are not the log's files are not found.
func TestSegmentFileSize(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	defer s.Close()
	tp, _ := s.CreateTopic("sizes", 1, map[string]string{"segment.bytes": "300", "index.interval.bytes": "1"})
	p, _ := tp.Partition(0)
	for i := 0; i < 20; i++ {
		if _, _, err := p.AppendLines([]byte(fmt.Sprintf("line %04d\n", i))); err != nil {
			t.Fatal(err)
		}
	}
	files := p.SegmentFiles()
	if len(files) < 9 {
		t.Fatalf("%d files", len(files))
	}
	for _, f := range files {
		if n, ok := p.SegmentFileSize(f.Name); !ok || n != f.Size {
			t.Errorf("%s: size %d, found %v; listed %d", f.Name, n, ok, f.Size)
		}
	}
	last := files[len(files)-1].Name // the active segment's .timeindex
	base := strings.TrimSuffix(last, timeIndexSuffix)
	for _, name := range []string{
		"", "x", base, base + ".txnindex", base + ".log.deleted", "0" + base + ".log",
		"+" + base[1:] + ".log", segmentName(p.LogEndOffset()+1) + ".log", "../" + base + ".log",
	} {
		if n, ok := p.SegmentFileSize(name); ok {
			t.Errorf("%q: found, size %d", name, n)
		}
		if h, err := p.OpenSegmentFile(name); err == nil {
			h.Close()
			t.Errorf("%q: opened", name)
		}
	}
}

// contiguous reports the first gap between the batches of r (a read of a
// log without compaction, where each batch starts where the one before
// ends), "" when there is none.
func contiguous(r *ReadResult) string {
	prev := int64(-1)
	for _, sl := range r.Slices {
		b := make([]byte, sl.Len)
		if _, err := sl.File.ReadAt(b, sl.Pos); err != nil {
			return err.Error()
		}
		for len(b) >= record.HeaderSize {
			h, err := record.ParseHeader(b)
			if err != nil {
				return err.Error()
			}
			if prev >= 0 && h.BaseOffset != prev {
				return fmt.Sprintf("batch %d follows offset %d", h.BaseOffset, prev-1)
			}
			prev = h.NextOffset()
			b = b[h.Size():]
		}
	}
	return ""
}

// hookOnce sets testHookSegmentRead to call fn once, at the end of seg.
func hookOnce(t *testing.T, seg *segment, fn func()) *bool {
	t.Helper()
	called := new(bool)
	testHookSegmentRead = func(s *segment) {
		if s == seg && !*called {
			*called = true
			fn()
		}
	}
	t.Cleanup(func() { testHookSegmentRead = nil })
	return called
}

// TestReadPastSegmentThatGrewAndRolled: a read of the active segment that
// goes on past its end while the segment takes another batch and rolls
// must not go on into the new segment, past that batch: it ends before it
// (the next read starts there).
func TestReadPastSegmentThatGrewAndRolled(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	defer s.Close()
	tp, _ := s.CreateTopic("grow", 1, map[string]string{"segment.bytes": "1000"})
	p, _ := tp.Partition(0)
	line := func(n int) []byte { return []byte(strings.Repeat("g", n) + "\n") }
	for i := 0; i < 2; i++ {
		if _, _, err := p.AppendLines(line(100)); err != nil {
			t.Fatal(err)
		}
	}
	act := p.active()
	called := hookOnce(t, act, func() {
		// One more batch in act, then one that does not fit: a roll.
		for _, n := range []int{100, 600} {
			if _, _, err := p.AppendLines(line(n)); err != nil {
				t.Fatal(err)
			}
		}
		if p.active() == act {
			t.Fatal("no roll")
		}
	})
	r, err := p.Read(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if !*called {
		t.Fatal("the read did not reach the end of the active segment")
	}
	if gap := contiguous(r); gap != "" {
		t.Fatalf("read of %d bytes in %d slices skips a batch: %s", r.Bytes, len(r.Slices), gap)
	}
	if r.Next != 2 {
		t.Fatalf("read ends at %d, want 2 (the batches the segment had when it was read)", r.Next)
	}
	r2, err := p.Read(r.Next, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Release()
	if gap := contiguous(r2); gap != "" || r2.Next != 4 {
		t.Fatalf("the next read ends at %d, want 4: %s", r2.Next, gap)
	}
}

// mergeSetup builds a compacted log whose closed segments a first pass
// shrank (two keys overwritten throughout, a unique key every third line)
// and returns it with its first segment: the next pass merges that
// segment with the ones after it.
func mergeSetup(t *testing.T, s *Store, name string) (*Partition, *segment) {
	t.Helper()
	p := compactTopic(t, s, name, map[string]string{"segment.bytes": "1200"})
	n := 0
	appendLines := func(count int) {
		for i := 0; i < count; i++ {
			key := fmt.Sprintf("d%d", n%2)
			if n%3 == 0 {
				key = fmt.Sprintf("u%d", n)
			}
			if _, _, err := p.AppendLines([]byte(fmt.Sprintf("%s=%d-%s\n", key, n, strings.Repeat("v", 40)))); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	appendLines(120)
	if _, err := p.Compact(); err != nil {
		t.Fatal(err)
	}
	appendLines(10)
	p.mu.RLock()
	first := p.segs[0]
	p.mu.RUnlock()
	return p, first
}

// mergeFirst runs the pass that merges first (mergeSetup) with the
// segments after it, and checks that it did.
func mergeFirst(t *testing.T, p *Partition, first *segment) {
	t.Helper()
	if _, err := p.Compact(); err != nil {
		t.Fatal(err)
	}
	p.mu.RLock()
	merged := p.segs[0]
	p.mu.RUnlock()
	if merged == first || merged.base > first.base || merged.next.Load() <= first.next.Load() {
		t.Fatalf("the pass did not merge the first segment [%d, %d) with later ones: first now [%d, %d)",
			first.base, first.next.Load(), merged.base, merged.next.Load())
	}
}

// TestReadPastSegmentSwappedOut: a read that reaches the end of a segment
// that a compaction pass meanwhile merged with the segments after it ends
// there. The segment after it in the list now starts past the merged
// range, and going on with it would skip the records the merge kept
// (the latest value of their keys, for a consumer reading the topic from
// the start).
func TestReadPastSegmentSwappedOut(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	defer s.Close()
	p, first := mergeSetup(t, s, "swapread")
	called := hookOnce(t, first, func() { mergeFirst(t, p, first) })
	r, err := p.Read(p.LogStartOffset(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if !*called {
		t.Fatal("the read did not reach the end of the first segment")
	}
	if err := checkReadBatches(r, 0, math.MaxInt64); err != nil {
		t.Fatal(err)
	}
	for i, sl := range r.Slices {
		if sl.File != first.log {
			t.Fatalf("slice %d of %s: the read went on past the swapped segment %s (next %d)", i, sl.File.Name(), first.log.Name(), r.Next)
		}
	}
	// The next read goes on in the merged segment, from where this ended.
	r2, err := p.Read(r.Next, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Release()
	if err := checkReadBatches(r2, r.Next, math.MaxInt64); err != nil || r2.Bytes == 0 {
		t.Fatalf("next read from %d: %d bytes: %v", r.Next, r2.Bytes, err)
	}
	p.mu.RLock()
	merged := p.segs[0]
	p.mu.RUnlock()
	if r2.Slices[0].File != merged.log {
		t.Fatalf("next read from %d starts in %s, not in the merged segment", r.Next, r2.Slices[0].File.Name())
	}
}

// TestLookupTimePastSegmentSwappedOut: a time lookup that passes a
// segment which a compaction pass meanwhile merged with the segments after
// it goes on in the merged segment, not in the one after the merged range:
// it answers what a lookup after the pass answers.
func TestLookupTimePastSegmentSwappedOut(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	defer s.Close()
	p, first := mergeSetup(t, s, "swaplookup")
	ts := first.maxTs.Load() + 1 // the first record after the first segment
	called := hookOnce(t, first, func() { mergeFirst(t, p, first) })
	off, recTs, ok, err := p.LookupTime(ts)
	if err != nil || !ok || !*called {
		t.Fatalf("lookup: %d, %v, %v; the hook ran: %v", off, ok, err, *called)
	}
	testHookSegmentRead = nil
	wantOff, wantTs, ok, err := p.LookupTime(ts)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if off != wantOff || recTs != wantTs {
		t.Fatalf("lookup of %d during the pass: offset %d (ts %d); after it: %d (ts %d)", ts, off, recTs, wantOff, wantTs)
	}
}

// TestLookupTimePastSegmentThatGrewRolledAndWasSwapped: a time lookup that
// has searched the active segment to the size it loaded, while that
// segment takes a matching batch, rolls and is swapped by a compaction
// pass before the lookup looks for what follows it, must search that
// batch (now in the swapped-in segment) before the new active segment:
// the segment's next offset, from which the lookup goes on once the
// segment has left the log, is past it.
func TestLookupTimePastSegmentThatGrewRolledAndWasSwapped(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	defer s.Close()
	p := compactTopic(t, s, "growswap", map[string]string{"segment.bytes": "1000"})
	for _, l := range []string{"d=old\n", "d=new\n"} {
		if _, _, err := p.AppendLines([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	act := p.active()
	ts := act.maxTs.Load() + 1 // none of act's records yet
	called := hookOnce(t, act, func() {
		// A matching batch in act (offset 2), then one that does not
		// fit (offset 3): a roll; then the pass that swaps act out.
		for _, l := range []string{"a=" + strings.Repeat("a", 100) + "\n", "b=" + strings.Repeat("b", 900) + "\n"} {
			if _, _, err := p.AppendLines([]byte(l)); err != nil {
				t.Fatal(err)
			}
		}
		if p.active() == act {
			t.Fatal("no roll")
		}
		if _, err := p.Compact(); err != nil {
			t.Fatal(err)
		}
		p.mu.RLock()
		defer p.mu.RUnlock()
		if p.segs[0] == act {
			t.Fatal("the pass did not swap the rolled segment")
		}
	})
	off, recTs, ok, err := p.LookupTime(ts)
	if err != nil || !ok || !*called {
		t.Fatalf("lookup: %d, %v, %v; the hook ran: %v", off, ok, err, *called)
	}
	testHookSegmentRead = nil
	wantOff, wantTs, ok, err := p.LookupTime(ts)
	if err != nil || !ok || wantOff != 2 {
		t.Fatalf("lookup after the pass: %d, %v, %v; want offset 2", wantOff, ok, err)
	}
	if off != wantOff || recTs != wantTs {
		t.Fatalf("lookup of %d during the roll and pass: offset %d (ts %d); after them: %d (ts %d)", ts, off, recTs, wantOff, wantTs)
	}
}

// TestReadInRetentionWindow: retention drops segments from the list before
// it moves the log start, and a read let in by the old log start in
// between must answer ErrOffsetOutOfRange, as it would a moment later,
// not the batches of the new first segment (a consumer at offset 5 was
// handed offset 30 on, and skipped what retention removed without being
// told). The window is made by hand: the first segments leave the list,
// and the log start stays.
func TestReadInRetentionWindow(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	defer s.Close()
	tp, _ := s.CreateTopic("window", 1, map[string]string{"segment.bytes": "100"})
	p, _ := tp.Partition(0)
	for i := 0; i < 40; i++ {
		if _, _, err := p.AppendLines([]byte(fmt.Sprintf("line %04d\n", i))); err != nil {
			t.Fatal(err)
		}
	}
	p.mu.Lock()
	all := p.segs
	if len(all) < 10 {
		p.mu.Unlock()
		t.Fatalf("%d segments, want at least 10", len(all))
	}
	p.segs = all[3:]
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.segs = all
		p.mu.Unlock()
	}()
	gone := all[3].base - 1
	r, err := p.Read(gone, 1<<20)
	if err == nil {
		defer r.Release()
		t.Fatalf("Read(%d) with segments below %d gone: %d bytes from offset %d on, no error; want ErrOffsetOutOfRange",
			gone, all[3].base, r.Bytes, firstBase(t, r))
	}
	if !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("Read(%d): %v; want ErrOffsetOutOfRange", gone, err)
	}
	// An offset still held reads as before.
	r, err = p.Read(all[3].base, 1<<20)
	if err != nil || r.Bytes == 0 {
		t.Fatalf("Read(%d): %v, %d bytes; want the batches from there", all[3].base, err, r.Bytes)
	}
	r.Release()
}

// firstBase is the base offset of the first batch r returns.
func firstBase(t *testing.T, r *ReadResult) int64 {
	t.Helper()
	b := make([]byte, 61)
	if _, err := r.Slices[0].File.ReadAt(b, r.Slices[0].Pos); err != nil {
		t.Fatal(err)
	}
	h, err := record.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	return h.BaseOffset
}

// cleanLoop runs the cleaners on p in turn (compaction, retention,
// DeleteRecords up to i%step records past the log start) until done,
// calling after each pass; the first error goes to fail and ends it.
func cleanLoop(p *Partition, done *atomic.Bool, step int, fail func(error), after func()) {
	for i := 0; !done.Load(); i++ {
		var err error
		switch i % 3 {
		case 0:
			_, err = p.Compact()
		case 1:
			_, err = p.ApplyRetention()
		case 2:
			_, err = p.DeleteRecords(min(p.LogStartOffset()+int64(i%step), p.LogEndOffset()))
		}
		if err != nil {
			fail(err)
			return
		}
		after()
	}
}
