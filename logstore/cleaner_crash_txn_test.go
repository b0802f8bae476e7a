package logstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segfs/segfs/logstore/record"
)

// crashTxnState is what a reload must find of a partition after a pass
// that removes markers and keeps empty batches.
type crashTxnState struct {
	text      string
	batches   string // offset:records:control of every batch
	aborts    []AbortedTxn
	producers string
	lso, leo  int64
}

func (c crashTxnState) String() string {
	return fmt.Sprintf("text %q\nbatches %s\naborts %+v\nproducers %s\nlso %d leo %d", c.text, c.batches, c.aborts, c.producers, c.lso, c.leo)
}

func crashTxnStateOf(t *testing.T, p *Partition) crashTxnState {
	t.Helper()
	var bs []string
	for _, h := range batchesOf(t, p) {
		bs = append(bs, fmt.Sprintf("%d:%d:%v", h.BaseOffset, h.RecordCount, h.Control()))
	}
	var ps []string
	for _, pi := range p.ActiveProducers() {
		ps = append(ps, fmt.Sprintf("%d/e%d/s%d/t%d", pi.ID, pi.Epoch, pi.LastSequence, pi.TxnStartOffset))
	}
	return crashTxnState{
		text: textOf(t, p, 0), batches: strings.Join(bs, " "),
		aborts:    p.AbortedTxns(0, p.LogEndOffset()),
		producers: strings.Join(ps, " "),
		lso:       p.LastStableOffset(), leo: p.LogEndOffset(),
	}
}

// checkMarkersMatchTxnIndex: every ABORT marker in the log has its
// .txnindex entry, and every entry its ABORT marker.
func checkMarkersMatchTxnIndex(t *testing.T, p *Partition, what string) {
	t.Helper()
	var dec record.Decoder
	abortAt := map[int64]int64{} // marker offset → producer
	segs := p.acquireSegments(p.logStart.Load())
	for _, s := range segs {
		if err := scanSegment(s, &dec, func(_ int64, b []byte, h *record.Header) error {
			if h.Control() && h.RecordCount > 0 {
				if typ, _, ok := parseMarker(b); ok && typ == controlAbort {
					abortAt[h.BaseOffset] = h.ProducerID
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	releaseAll(segs)
	got := p.AbortedTxns(0, p.LogEndOffset())
	for _, a := range got {
		if pid, ok := abortAt[a.LastOffset]; !ok || pid != a.ProducerID {
			t.Errorf("%s: .txnindex entry %+v has no ABORT marker of its producer at %d", what, a, a.LastOffset)
		}
		delete(abortAt, a.LastOffset)
	}
	for off, pid := range abortAt {
		t.Errorf("%s: the ABORT marker of producer %d at %d has no .txnindex entry", what, pid, off)
	}
}

// TestCompactionCrashRemovingMarkers crashes, at each of its steps, a
// cleaning pass that removes COMMIT and ABORT markers past their delete
// horizon (and an ABORT's .txnindex entry), keeps an active producer's
// marker as an empty control batch and another active producer's last
// data batch as an empty batch, and reloads, with its producer snapshots
// and without them (the state rebuilt from the log). The reload must hold
// every record the completed pass keeps, a .txnindex entry for every
// ABORT marker left and none for a removed one, the producers' epochs and
// last sequences, and the last stable offset (the first offset of a
// transaction left open in the active segment); the next pass
// must leave the partition as the completed pass did. Each case is run
// with the recovery point at the log end (closed segments trusted) and
// with none (the loader recovers every segment, the cleaned ones, empty
// batches and all, too).
func TestCompactionCrashRemovingMarkers(t *testing.T) {
	type result struct {
		after, next crashTxnState
		steps       []string
	}
	// Every run starts from the same directory: the one a broker left
	// (abandoned, as by a crash) after the transactions, the two passes,
	// producer 42's batches and producer 800's open transaction below.
	// It is built once and each run loads a copy of it (the files and
	// their mtimes, with the fake clock where the build left it), which
	// is the state each run built for itself before, at a third of the
	// cost.
	type txnFixture struct {
		dir                 string
		opts                Options
		clockMs, expireAtMs int64
	}
	fixture := func(t *testing.T) (fx txnFixture) {
		t.Helper()
		// A Kafka data directory: transactions of producers 500
		// (k=committed), 600 (j=aborted) and 700 (i=aborted), left open.
		dir, _, clock, opts, s, p := openTxnMarkerDir(t)
		fx.opts = opts
		for _, m := range []struct {
			pid    int64
			epoch  int16
			commit bool
		}{{500, 0, true}, {600, 0, false}} {
			if _, err := p.WriteTxnMarker(m.pid, m.epoch, 0, m.commit); err != nil {
				t.Fatal(err)
			}
		}
		p.AppendLines([]byte("k=newer\n"))
		clock.ms.Add(2 * 60000)
		s.expireProducers(time.UnixMilli(clock.ms.Load()))
		if _, err := p.WriteTxnMarker(700, 1, 0, false); err != nil {
			t.Fatal(err)
		}
		// Expiring producers at this time leaves 700 and 42 (below).
		fx.expireAtMs = clock.ms.Load() + 30000
		pass := func(line string) {
			t.Helper()
			clock.ms.Add(2000)
			if line != "" {
				if _, _, err := p.AppendLines([]byte(line)); err != nil { // rolls
					t.Fatal(err)
				}
			}
			if _, err := p.Compact(); err != nil {
				t.Fatal(err)
			}
		}
		pass("z=1\n") // the transactions' data goes
		pass("z=2\n") // the markers get their horizon
		clock.ms.Add(60000)
		// Producer 42 (idempotent) writes m twice; a plain m supersedes
		// both, so the pass below keeps its last batch empty.
		for seq, v := range []string{"a", "b"} {
			if _, err := p.AppendBatch(keyedIdempotentBatch(t, 42, int32(seq), clock.ms.Load(), "m", v)); err != nil {
				t.Fatal(err)
			}
		}
		p.AppendLines([]byte("m=plain\n"))
		clock.ms.Add(2000)
		p.AppendLines([]byte("z=3\n")) // rolls
		// Producer 800's transaction, left open by the broker that wrote
		// the directory, in the active segment: the last stable offset
		// is its first offset. (segfs refuses transactional Produce; such
		// a transaction comes from a Kafka data directory, and the load
		// finds it.)
		{
			raw := kafkaBatch(t, p.LogEndOffset(), 800, clock.ms.Load(), "o", "open")
			active := p.active().path(logSuffix)
			s.abandon()
			f, err := os.OpenFile(active, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.Write(raw)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		fx.dir, fx.clockMs = dir, clock.ms.Load()
		return fx
	}(t)
	run := func(t *testing.T, flush, dropSnapshots, groups bool, stop func(step string) error) result {
		t.Helper()
		dir := t.TempDir()
		copyDirTimes(t, fixture.dir, dir)
		pdir := filepath.Join(dir, "mk-0")
		clock := newClock()
		clock.ms.Store(fixture.clockMs)
		opts := fixture.opts
		opts.Now = clock.now
		expireAt := time.UnixMilli(fixture.expireAtMs)
		s, err := Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		p := mustPartition(t, s, "mk")
		if flush {
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if groups {
			// Each segment its own group: a swap per segment.
			if err := p.Topic().SetConfig(map[string]string{"segment.bytes": "150"}); err != nil {
				t.Fatal(err)
			}
		}
		var res result
		_, err = compactStopping(p, func(step string) error {
			res.steps = append(res.steps, step)
			return stop(step)
		})
		if err != nil {
			s.abandon()
		} else if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if !flush {
			// No recovery point: the reload recovers every segment, the
			// ones the pass wrote (empty batches and all) too.
			os.Remove(filepath.Join(dir, recoveryCheckpointFile))
			os.Remove(filepath.Join(dir, ".kafka_cleanshutdown"))
		}
		if dropSnapshots {
			snaps, _ := filepath.Glob(filepath.Join(pdir, "*"+snapshotSuffix))
			for _, f := range snaps {
				os.Remove(f)
			}
			os.Remove(filepath.Join(dir, ".kafka_cleanshutdown"))
		}
		if s, err = Open(dir, opts); err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		p = mustPartition(t, s, "mk")
		// A load that rebuilds the producer state from the log start
		// replays the markers a crash before the swap left, and so
		// finds producers 500 and 600 again, expired long ago, as
		// Kafka's rebuildProducerState does; the periodic expiry check
		// removes them, as Kafka's does.
		s.expireProducers(expireAt)
		for _, pat := range []string{"*.swap", "*.cleaned", "*.deleted", "*.tmp"} {
			if m, _ := filepath.Glob(filepath.Join(pdir, pat)); len(m) != 0 {
				t.Fatalf("leftover %v", m)
			}
		}
		checkBatches(t, p)
		for _, prob := range indexProblems(t, p.config(), p.dir, p.active().base) {
			t.Errorf("after the reload: %s", prob)
		}
		checkMarkersMatchTxnIndex(t, p, "after the reload")
		res.after = crashTxnStateOf(t, p)
		if _, err := p.Compact(); err != nil {
			t.Fatal(err)
		}
		checkMarkersMatchTxnIndex(t, p, "after the next pass")
		res.next = crashTxnStateOf(t, p)
		return res
	}
	errStop := errors.New("stopped by the test")
	for _, c := range []struct {
		name                         string
		flush, dropSnapshots, groups bool
	}{
		// Recovering every segment and rebuilding the producer state
		// from the log are taken together (each alone is the
		// combination's half), to keep the suite's time.
		{"flushed", true, false, false}, {"recover-all-no-snapshots", false, true, false},
		{"groups", true, false, true}, {"groups-recover-all-no-snapshots", false, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			done := run(t, c.flush, c.dropSnapshots, c.groups, func(string) error { return nil })
			// The completed pass removed the markers of 500 and 600, kept
			// 700's empty, and 42's last batch empty.
			if done.after.text != "k=newer\nz=2\nm=plain\nz=3\no=open\n" || len(done.after.aborts) != 0 ||
				done.after.producers != "42/e0/s1/t-1 700/e1/s-1/t-1 800/e0/s0/t13" || done.after.lso != 13 || done.after.leo != 14 ||
				!strings.Contains(done.after.batches, "6:0:true") || !strings.Contains(done.after.batches, ":0:false") {
				t.Fatalf("after the completed pass and a reload:\n%v", done.after)
			}
			if n := strings.Count(strings.Join(done.steps, " "), "swapped"); n == 0 || c.groups && n < 3 {
				t.Fatalf("the pass swapped nothing in (steps %v)", done.steps)
			}
			t.Logf("steps: %v", done.steps)
			for crashAt := 1; crashAt <= len(done.steps); crashAt++ {
				n := 0
				var at string
				got := run(t, c.flush, c.dropSnapshots, c.groups, func(step string) error {
					if n++; n == crashAt {
						at = step
						return errStop
					}
					return nil
				})
				for _, line := range strings.SplitAfter(done.after.text, "\n") {
					if !strings.Contains(got.after.text, line) {
						t.Errorf("crash at step %d (%s): %q, which the completed pass keeps, is lost: %q", crashAt, at, line, got.after.text)
					}
				}
				if got.after.producers != done.after.producers || got.after.lso != done.after.lso || got.after.leo != done.after.leo {
					t.Errorf("crash at step %d (%s): after the reload\n%v\nwant producers and offsets as after the completed pass\n%v", crashAt, at, got.after, done.after)
				}
				if got.next.String() != done.next.String() {
					t.Errorf("crash at step %d (%s): after the next pass\n%v\nwant\n%v", crashAt, at, got.next, done.next)
				}
			}
		})
	}
}
