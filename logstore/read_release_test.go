package logstore

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestPerRequestReadersReleaseExactlyOnce runs every per-request reader
// that takes its references one segment at a time (ReadBelow, LookupTime,
// MaxTimestampAt, Status, OpenSegmentFile) beside rolls, compaction swaps
// that merge segments, retention and DeleteRecords, with
// file.delete.delay.ms=0, and then counts the references of every segment
// the log ever listed: one (the partition's) for those still listed, none
// for the others, whose .deleted files are then gone. A path that kept a
// reference (an error, a restart by offset, a re-read after a roll) leaves
// a deleted segment open and its files on disk; one that released twice
// drives a count below zero (and closed a file a reader still used).
func TestPerRequestReadersReleaseExactlyOnce(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	defer s.Close()
	p := compactTopic(t, s, "refs", map[string]string{
		"segment.bytes": "500", "cleanup.policy": "compact,delete", "retention.bytes": "12000",
		"min.cleanable.dirty.ratio": "0",
	})
	const appends = 300
	var done atomic.Bool
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	fail := func(err error) {
		select {
		case errc <- err:
		default:
		}
	}
	var seenMu sync.Mutex
	seen := map[*segment]bool{}
	note := func() {
		p.mu.RLock()
		seenMu.Lock()
		for _, sg := range p.segs {
			seen[sg] = true
		}
		seenMu.Unlock()
		p.mu.RUnlock()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer done.Store(true)
		for i := 0; i < appends; i++ {
			line := fmt.Sprintf("k%d=%d-%s\n", i%15, i, strings.Repeat("y", i%40))
			if _, _, err := p.AppendLines([]byte(line)); err != nil {
				fail(err)
				return
			}
			note()
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		cleanLoop(p, &done, 5, fail, note)
	}()
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 11))
			for !done.Load() {
				start, leo := p.LogStartOffset(), p.LogEndOffset()
				off := start + rng.Int64N(leo-start+1)
				switch rng.IntN(5) {
				case 0, 1:
					maxBytes := []int64{1, 400, 5000}[rng.IntN(3)]
					res, err := p.ReadBelow(off, maxBytes, math.MaxInt64)
					if errors.Is(err, ErrOffsetOutOfRange) {
						continue
					}
					if err != nil {
						fail(fmt.Errorf("ReadBelow(%d): %w", off, err))
						return
					}
					err = checkReadBatches(res, off, math.MaxInt64)
					res.Release()
					if err != nil {
						fail(fmt.Errorf("ReadBelow(%d, %d): %w", off, maxBytes, err))
						return
					}
				case 2:
					ts := 1_700_000_000_000 + rng.Int64N(4*appends)
					got, gotTs, ok, err := p.LookupTime(ts)
					if err != nil {
						fail(fmt.Errorf("LookupTime(%d): %w", ts, err))
						return
					}
					if ok && (gotTs < ts || got < start) {
						fail(fmt.Errorf("LookupTime(%d) = %d at %d, log start %d", ts, got, gotTs, start))
						return
					}
				case 3:
					st, err := p.Status()
					if err != nil {
						fail(fmt.Errorf("Status: %w", err))
						return
					}
					if st.Segments < 1 || st.SizeBytes < 0 || (st.LastTimestamp >= 0 && st.FirstTimestamp < 0) {
						fail(fmt.Errorf("status %+v", st))
						return
					}
					if _, _, _, _, err := p.MaxTimestampAt(); err != nil {
						fail(fmt.Errorf("MaxTimestampAt: %w", err))
						return
					}
				case 4:
					files := p.SegmentFiles()
					f := files[rng.IntN(len(files))]
					h, err := p.OpenSegmentFile(f.Name)
					if errors.Is(err, os.ErrNotExist) {
						continue
					}
					if err != nil {
						fail(fmt.Errorf("OpenSegmentFile(%s): %w", f.Name, err))
						return
					}
					h.Close()
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
	s.releasePending() // file.delete.delay.ms=0: timers may still be due
	note()
	p.mu.RLock()
	listed := map[*segment]bool{}
	for _, sg := range p.segs {
		listed[sg] = true
	}
	p.mu.RUnlock()
	deleted := 0
	for sg := range seen {
		want := int32(0)
		if listed[sg] {
			want = 1
		} else {
			deleted++
		}
		if got := sg.refs.Load(); got != want {
			t.Errorf("segment %d (listed %v): %d references, want %d", sg.base, listed[sg], got, want)
		}
	}
	ents, _ := os.ReadDir(p.dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), deletedSuffix) {
			t.Errorf("%s left on disk", e.Name())
		}
	}
	if deleted == 0 {
		t.Fatalf("no segment left the log under the readers")
	}
	t.Logf("%d segments seen, %d left the log; log [%d, %d)", len(seen), deleted, p.LogStartOffset(), p.LogEndOffset())
}

// TestStatusLastTimestampWhileAppending: every status of a log with
// records names its last batch's timestamp while appends go on. The
// segment published the position of a new last batch before its size,
// and a Status that loaded the position, then the old size, found no
// header there and said last.timestamp=-1 (some 1 in 1,000).
func TestStatusLastTimestampWhileAppending(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	defer s.Close()
	tp, _ := s.CreateTopic("laststatus", 1, nil)
	p, _ := tp.Partition(0)
	if _, _, err := p.AppendLines([]byte("first\n")); err != nil {
		t.Fatal(err)
	}
	var done atomic.Bool
	errc := make(chan error, 1)
	go func() {
		defer done.Store(true)
		for i := 0; i < 20000; i++ {
			if _, _, err := p.AppendLines([]byte("line\n")); err != nil {
				errc <- err
				return
			}
		}
	}()
	bad, n := 0, 0
	for !done.Load() {
		st := statusOf(t, p)
		n++
		if st.LogEndOffset > st.LogStartOffset && st.LastTimestamp < 0 {
			bad++
		}
	}
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	if bad > 0 {
		t.Fatalf("%d of %d statuses of a log with records without a last timestamp", bad, n)
	}
}
