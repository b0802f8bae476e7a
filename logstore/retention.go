package logstore

import (
	"os"
	"time"
)

// Retention (cleanup.policy=delete, KAFKA-FORMAT.md §8) deletes whole
// closed segments, oldest first. The active segment is never deleted, so a
// partition overshoots retention.bytes by at most one segment; instead an
// idle active segment is rolled once it is older than segment.ms, so that
// time retention reaches its records on a later pass. Whatever the policy,
// a pass also deletes the closed segments wholly below the log start
// (DeleteRecords moves it, possibly mid-segment), as Kafka's
// deleteLogStartOffsetBreachedSegments does.

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
	p.amu.Lock()
	defer p.amu.Unlock()
	if p.fenceErr != nil || p.store.closed.Load() {
		return st, nil
	}
	// Roll an idle active segment whose first record is older than
	// segment.ms (on a compacted topic, max.compaction.lag.ms if shorter:
	// MaxSegmentMs), whatever the cleanup policy: closed, it can age out
	// like any closed segment, or be compacted.
	if act := p.active(); act.size.Load() > 0 {
		waited := now - act.created.UnixMilli()
		if act.firstBatchTs >= 0 {
			waited = now - act.firstBatchTs
		}
		if waited > cfg.MaxSegmentMs()-act.rollJitter {
			if err := p.rollLocked("segment.ms (idle)", cfg); err != nil {
				return st, p.failLocked(err)
			}
		}
	}
	p.mu.RLock()
	segs := append([]*segment(nil), p.segs...)
	p.mu.RUnlock()
	closed := segs[:len(segs)-1]
	// Segments wholly below the log start (DeleteRecords moved it, or a
	// checkpoint copied from Kafka says so) go whatever the policy, as
	// in Kafka's deleteLogStartOffsetBreachedSegments: a segment whose
	// successor starts at or below the log start holds nothing readable.
	n := 0
	for n < len(closed) && segs[n+1].base <= p.logStart.Load() {
		n++
	}
	if cfg.Delete() && cfg.RetentionBytes >= 0 {
		var total int64
		for _, s := range segs {
			total += s.size.Load()
		}
		diff := total - cfg.RetentionBytes
		k := 0
		for _, s := range closed {
			if diff-s.size.Load() < 0 {
				break
			}
			diff -= s.size.Load()
			k++
		}
		n = max(n, k)
	}
	if cfg.Delete() && cfg.RetentionMs >= 0 {
		k := 0
		for _, s := range closed {
			if now-s.largestTimestamp() <= cfg.RetentionMs {
				break
			}
			k++
		}
		n = max(n, k)
	}
	if n == 0 {
		return st, nil
	}
	st = p.deleteOldestLocked(segs[:n], segs[n].base, cfg)
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
	for _, s := range del {
		st.BytesFreed += s.size.Load()
		s.markDeleted()
		p.store.scheduleRelease(s, time.Duration(cfg.FileDeleteDelayMs)*time.Millisecond)
	}
	syncDir(p.dir)
	p.store.markDirty()
	p.notify()
	return st
}

// markDeleted renames the segment's files with the .deleted suffix; open
// descriptors keep working.
func (s *segment) markDeleted() {
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, textIndexSuffix, txnIndexSuffix} {
		os.Rename(s.path(suf), s.path(suf)+deletedSuffix)
	}
	s.deleted.Store(true)
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
