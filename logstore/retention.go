package logstore

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// Retention (cleanup.policy=delete, KAFKA-FORMAT.md §8) deletes whole
// segments, oldest first, by Kafka's rules (UnifiedLog.deleteOldSegments):
// the log-start rule, then retention.bytes over the size of every segment,
// then retention.ms, each going on from where the previous stopped. The
// active segment is a candidate like any other unless it is empty, so
// retention.ms=1000 empties a quiet partition within a pass and
// retention.bytes=0 empties any. When every segment goes, a new empty one
// is rolled at the log end first, so the log keeps its next offset and
// the log start becomes the log end: a purge. All of it happens under the
// append lock, so an append lands either before the purge (and is purged)
// or in the new segment. Open text views keep the deleted segments and go
// on with the new one (pinViews), as for any retention.
//
// Whatever the policy, a pass also deletes the closed segments wholly
// below the log start (DeleteRecords moves it, possibly mid-segment), as
// Kafka's deleteLogStartOffsetBreachedSegments does, and rolls an idle
// active segment once it is older than segment.ms (or, compacted,
// max.compaction.lag.ms): the cleaner never touches the active segment.

// CleanupStats is what one retention or compaction pass did, for its log
// line and for tests.
type CleanupStats struct {
	SegmentsDeleted int
	BytesFreed      int64
	SegmentsCleaned int
	RecordsRemoved  int64
	NewLogStart     int64
	Duration        time.Duration
}

// largestTimestamp is Kafka's: the segment's max record timestamp, or its
// file's mtime when it holds no timestamps.
func (s *segment) largestTimestamp() int64 {
	if ts := s.maxTs.Load(); ts >= 0 {
		return ts
	}
	if fi, err := s.log.Stat(); err == nil {
		return fi.ModTime().UnixMilli()
	}
	return -1
}

// ApplyRetention runs one retention pass now (the store runs it every
// Options.RetentionCheckInterval).
func (p *Partition) ApplyRetention() (CleanupStats, error) {
	p.cleanMu.Lock()
	defer p.cleanMu.Unlock()
	start := time.Now()
	cfg := p.config()
	st := CleanupStats{NewLogStart: p.logStart.Load()}
	now := p.store.now().UnixMilli()
	// amu for the whole pass: no append runs between the choice of the
	// segments and their deletion, so a full purge's roll starts the new
	// segment exactly at the log end and no record lands in a segment
	// being deleted.
	p.amu.Lock()
	defer p.amu.Unlock()
	if p.fenceErr != nil || p.store.closed.Load() {
		return st, nil
	}
	// Roll an idle active segment whose first record is older than
	// segment.ms (on a compacted topic, max.compaction.lag.ms if shorter:
	// MaxSegmentMs), whatever the cleanup policy, as an append would:
	// closed, it can be compacted.
	if act := p.active(); act.size.Load() > 0 {
		waited := now - act.created.UnixMilli()
		if act.firstBatchTs >= 0 {
			waited = now - act.firstBatchTs
		}
		if waited > cfg.MaxSegmentMs()-act.rollJitter {
			if err := p.rollLocked("segment.ms (idle)", cfg); err != nil {
				var wf *writeFailure
				if errors.As(err, &wf) && !wf.fatal {
					// The new segment could not be created (ENOSPC,
					// EDQUOT): the old one is sealed and intact, and
					// the next append or pass retries the roll, as
					// for an append's roll. Fencing here made a full
					// disk at an idle roll refuse every later append.
					return st, fmt.Errorf("idle roll: %w", wf.err)
				}
				return st, p.failLocked(err)
			}
		}
	}
	p.mu.RLock()
	segs := append([]*segment(nil), p.segs...)
	p.mu.RUnlock()
	// Kafka's rules, in its order (deleteOldSegments): each takes the
	// oldest segments while its predicate holds, continuing where the
	// previous one stopped; an empty last segment is never taken, since
	// it would only be created again.
	n := 0
	last := len(segs) - 1
	take := func(deletable func(i int) bool) {
		for n < len(segs) && !(n == last && segs[n].size.Load() == 0) && deletable(n) {
			n++
		}
	}
	// Segments wholly below the log start (DeleteRecords moved it, or a
	// checkpoint copied from Kafka says so) go whatever the policy, as
	// in Kafka's deleteLogStartOffsetBreachedSegments: a segment whose
	// successor starts at or below the log start holds nothing readable.
	logStart := p.logStart.Load()
	take(func(i int) bool { return i < last && segs[i+1].base <= logStart })
	if cfg.Delete() && cfg.RetentionBytes >= 0 {
		// Over every segment left, the active one included.
		var total int64
		for _, s := range segs[n:] {
			total += s.size.Load()
		}
		diff := total - cfg.RetentionBytes
		take(func(i int) bool {
			if diff-segs[i].size.Load() < 0 {
				return false
			}
			diff -= segs[i].size.Load()
			return true
		})
	}
	if cfg.Delete() && cfg.RetentionMs >= 0 {
		take(func(i int) bool { return now-segs[i].largestTimestamp() > cfg.RetentionMs })
	}
	if n == 0 {
		return st, nil
	}
	next := p.leo.Load()
	if n < len(segs) {
		next = segs[n].base
	} else {
		// Every segment goes, the active one too (it is not empty): as
		// Kafka does, roll a new empty one at the log end first, so the
		// log keeps a segment and its next offset. The log start moves
		// to the log end.
		if err := p.rollLocked("retention (all segments deletable)", cfg); err != nil {
			var wf *writeFailure
			if errors.As(err, &wf) && !wf.fatal {
				// The new segment could not be created (ENOSPC, EDQUOT):
				// nothing is deleted, the old one is sealed and intact,
				// and the next append or pass retries the roll.
				return st, fmt.Errorf("roll before deleting every segment: %w", wf.err)
			}
			return st, p.failLocked(err)
		}
	}
	st = p.deleteOldestLocked(segs[:n], next, cfg)
	st.Duration = time.Since(start)
	return st, nil
}

// deleteOldestLocked drops segments from the front of the log and moves
// the log start to next. Files are renamed .deleted at once and removed
// when both file.delete.delay.ms has passed and the last reader holding
// them has let go, like an unlinked Unix file.
func (p *Partition) deleteOldestLocked(del []*segment, next int64, cfg *Config) CleanupStats {
	st := CleanupStats{SegmentsDeleted: len(del)}
	p.pinViews()
	p.mu.Lock()
	p.segs = p.segs[len(del):]
	p.gen.Add(1) // with the change, for Text's consistency check
	p.mu.Unlock()
	if next > p.logStart.Load() {
		p.logStart.Store(next)
	}
	st.NewLogStart = p.logStart.Load()
	p.truncateEpochsStart(st.NewLogStart)
	stray := false
	for _, s := range del {
		st.BytesFreed += s.size.Load()
		if err := s.markDeleted(); err != nil {
			// Left under its name, the segment is loaded again at the
			// next open: the log-start checkpoint must then hold the log
			// start, which it names only above the first segment's base,
			// or the deleted records came back. It is written now, not
			// at the next checkpoint, so that a crash meanwhile does not
			// bring them back either. The next pass deletes the segment
			// again (it lies below the log start).
			p.strayBelowStart.Store(true)
			stray = true
			p.log().Warn("deleted segment not renamed", "segment", segmentName(s.base), "err", err)
		}
		p.store.scheduleRelease(s, time.Duration(cfg.FileDeleteDelayMs)*time.Millisecond)
	}
	if stray || p.strayBelowStart.Load() {
		if err := p.store.saveLogStarts(); err != nil {
			p.log().Warn("log-start checkpoint not written", "err", err)
		}
	}
	syncDir(p.dir)
	p.store.markDirty()
	p.notify()
	return st
}

// markDeleted renames the segment's files with the .deleted suffix; open
// descriptors keep working. It returns the first rename that failed, a
// file already gone aside (a segment has no .txnindex unless it holds an
// abort, no .textindex on a full disk, and a pass that failed after
// renaming some files renames the rest): the file is still there under
// its name, and the loader takes it as a live segment.
func (s *segment) markDeleted() error {
	var first error
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, textIndexSuffix, txnIndexSuffix} {
		if err := cleanerRename(s.path(suf), s.path(suf)+deletedSuffix); err != nil && !errors.Is(err, os.ErrNotExist) && first == nil {
			first = err
		}
	}
	s.deleted.Store(true)
	return first
}

// scheduleRelease drops the partition's reference to a deleted segment
// after delay. Close releases every pending one at once.
func (s *Store) scheduleRelease(seg *segment, delay time.Duration) {
	s.pendMu.Lock()
	defer s.pendMu.Unlock()
	if s.pending == nil {
		s.pending = map[*segment]*time.Timer{}
	}
	s.pending[seg] = time.AfterFunc(delay, func() {
		s.pendMu.Lock()
		_, ok := s.pending[seg]
		delete(s.pending, seg)
		s.pendMu.Unlock()
		if ok {
			seg.release()
		}
	})
}

func (s *Store) releasePending() {
	s.pendMu.Lock()
	pend := s.pending
	s.pending = nil
	s.pendMu.Unlock()
	for seg, t := range pend {
		t.Stop()
		seg.release()
	}
}
