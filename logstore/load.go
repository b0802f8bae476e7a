package logstore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/segfs/segfs/logstore/record"
)

// loadPartition opens a partition directory following Kafka's LogLoader
// (KAFKA-FORMAT.md §7.5): leftovers are cleaned or completed, orphan
// indexes removed, damaged or missing indexes rebuilt, and after an unclean
// stop every batch from the recovery point on is validated, the log being
// truncated at the first invalid one. A log that then ends below the
// checkpointed log start restarts empty there.
func (s *Store) loadPartition(t *Topic, n int32, clean bool, recoveryPoint, logStartCk int64) (*Partition, error) {
	dir := filepath.Join(s.dir, fmt.Sprintf("%s-%d", t.name, n))
	p := newPartition(s, t, n, dir)
	cfg := t.cfg.Load()
	log := p.log()

	if err := completeSwaps(dir, log); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	logs := map[int64]bool{}
	var bases []int64
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, deletedSuffix), strings.HasSuffix(name, cleanedSuffix), strings.HasSuffix(name, ".tmp"):
			os.Remove(filepath.Join(dir, name))
			log.Info("removed leftover file", "file", name)
		case strings.HasSuffix(name, logSuffix):
			if base, ok := parseSegmentBase(name, logSuffix); ok {
				logs[base] = true
				bases = append(bases, base)
			} else if !e.IsDir() {
				return nil, fmt.Errorf("%w: %s: %s", ErrCorrupt, filepath.Join(dir, name), StrayLogReason(name))
			}
		}
	}
	for _, e := range ents {
		name := e.Name()
		for _, suf := range []string{indexSuffix, timeIndexSuffix, textIndexSuffix, txnIndexSuffix} {
			if base, ok := parseSegmentBase(name, suf); ok && !logs[base] {
				os.Remove(filepath.Join(dir, name))
				log.Info("removed orphan index", "file", name)
			}
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })

	var dec record.Decoder
	var recEpochs []epochEntry // leader epoch changes in the recovered batches
	// Unclean: recover from the segment holding the recovery point.
	recoverFrom := len(bases)
	if !clean {
		recoverFrom = 0
		for i, b := range bases {
			if b <= recoveryPoint {
				recoverFrom = i
			}
		}
	}
	for i := 0; i < len(bases); i++ {
		base := bases[i]
		seg := newSegmentStruct(dir, base)
		f, err := os.OpenFile(seg.path(logSuffix), os.O_RDWR, 0)
		if err != nil {
			releaseAll(p.segs)
			return nil, err
		}
		seg.log = f
		fi, err := f.Stat()
		if err != nil {
			releaseAll(p.segs)
			return nil, err
		}
		seg.size.Store(fi.Size())
		isActive := i == len(bases)-1
		wasActive := isActive
		needRecover := i >= recoverFrom
		if !needRecover {
			if reason := seg.openTrusted(cfg, isActive); reason != "" {
				log.Warn("rebuilding indexes", "segment", segmentName(base), "reason", reason)
				needRecover = true
			}
		}
		if needRecover {
			before := seg.size.Load()
			dropped, err := seg.recover(cfg, isActive, &dec)
			if err != nil {
				seg.closeFiles()
				releaseAll(p.segs)
				var le *LegacyFormatError
				if errors.As(err, &le) {
					return nil, err // names the file already
				}
				return nil, fmt.Errorf("recovering %s: %w", seg.path(logSuffix), err)
			}
			if dropped > 0 {
				log.Warn("truncated torn or corrupt tail", "segment", segmentName(base),
					"valid_bytes", before-dropped, "dropped_bytes", dropped)
			}
			if dropped > 0 && i < recoverFrom && i < len(bases)-1 {
				// Below the recovery point every later segment was on
				// disk before the checkpoint said so: damage here is the
				// disk's or someone's, not a crash's, and what follows is
				// intact. Kafka's recoverSegment keeps it; so do we, with
				// a gap in the offsets where the damage was.
				log.Warn("kept the segments after the damaged one: they are below the recovery point", "segment", segmentName(base), "kept", len(bases)-1-i)
			} else if dropped > 0 {
				// Past the recovery point, everything after a damaged
				// segment is unreachable in order: Kafka deletes it, and
				// so do we.
				for _, later := range bases[i+1:] {
					for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, textIndexSuffix, txnIndexSuffix} {
						os.Remove(filepath.Join(dir, segmentName(later)+suf))
					}
					log.Warn("deleted segment after truncation", "segment", segmentName(later))
				}
				bases = bases[:i+1]
				isActive = true
			}
			if dropped > 0 && isActive && !wasActive {
				// A closed segment became the active one: its sealed
				// indexes must take appends again.
				seg.closeIndexes()
				if err := seg.openIndexes(true, cfg); err != nil {
					return nil, err
				}
			}
		}
		recEpochs = append(recEpochs, seg.recEpochs...)
		seg.recEpochs = nil
		p.segs = append(p.segs, seg)
	}
	wiped := false
	if n := len(p.segs); n > 0 && p.segs[n-1].next.Load() < logStartCk {
		// The log ends below the checkpointed log start: records the
		// checkpoint moved past (DeleteRecords, retention) were lost
		// after it was written, by a power cut that took unflushed
		// records, or files were removed by hand. Everything left lies
		// below the log start, and moving the start back to the end
		// would hand offsets out again that consumers may have
		// committed past. As Kafka's LogLoader does
		// (deleteSegmentsIfLogStartGreaterThanLogEnd), delete every
		// segment and the producer state and start the log afresh at
		// the checkpointed log start.
		leo := p.segs[n-1].next.Load()
		log.Warn("the log ends below the checkpointed log start: deleting every segment, the log restarts at the log start",
			"log_end_offset", leo, "log_start_offset", logStartCk, "segments", n)
		for _, seg := range p.segs {
			if err := seg.markDeleted(); err != nil {
				// Left under its name below the new log start: the
				// checkpoint must go on naming that start.
				p.strayBelowStart.Store(true)
				log.Warn("deleted segment not renamed", "segment", segmentName(seg.base), "err", err)
			}
			seg.release() // removes the .deleted files: nobody reads them yet
		}
		p.segs = nil
		wiped = true
		for _, off := range listSnapshots(dir) {
			os.Remove(filepath.Join(dir, segmentName(off)+snapshotSuffix))
		}
		// Nothing below the new segment is left to recover.
		recoveryPoint = max(recoveryPoint, logStartCk)
	}
	if len(p.segs) == 0 {
		start := max(logStartCk, 0)
		seg, err := createSegment(dir, start, cfg)
		if err != nil {
			return nil, err
		}
		p.segs = []*segment{seg}
	}
	// Closed segments' next offset is their successor's base (gaps from
	// compaction make anything finer unnecessary for lookups).
	for i := 0; i < len(p.segs)-1; i++ {
		if p.segs[i].next.Load() <= p.segs[i].base {
			p.segs[i].next.Store(p.segs[i+1].base)
		}
	}
	act := p.segs[len(p.segs)-1]
	leo := act.next.Load()
	p.leo.Store(leo)
	p.logStart.Store(max(logStartCk, p.segs[0].base))
	var damaged []*segment
	for _, s := range p.segs {
		if s.loadTxnIndex(leo, log) {
			damaged = append(damaged, s)
		}
	}
	if len(damaged) > 0 {
		p.rebuildTxnIndexes(damaged)
	}
	p.updateHasTxnsLocked()
	if clean {
		p.recoveryPoint.Store(leo)
	} else {
		p.recoveryPoint.Store(min(recoveryPoint, leo))
	}
	if _, err := os.Stat(filepath.Join(dir, "partition.metadata")); err != nil {
		// (A Kafka directory from before 2.8 has none; its
		// leader-epoch-checkpoint is kept.)
		if err := writePartitionMeta(dir, t.id); err != nil {
			return nil, err
		}
	}
	p.loadEpochs(recEpochs, wiped, log)
	p.loadProducers(clean)
	if err := p.recoverUnfinished(); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// openTrusted opens the indexes and text map of a segment that recovery
// does not need to rescan. It returns why the segment must be rebuilt
// instead, or "" when everything checks out.
func (s *segment) openTrusted(cfg *Config, active bool) string {
	size := s.size.Load()
	for _, suf := range []string{indexSuffix, timeIndexSuffix} {
		if _, err := os.Stat(s.path(suf)); err != nil {
			return suf + " missing"
		}
	}
	// Open read-only first: a writable open would extend a damaged file.
	if err := s.openIndexes(false, cfg); err != nil {
		return err.Error()
	}
	if err := s.oidx.SanityCheck(); err != nil {
		s.closeIndexes()
		return err.Error()
	}
	if err := s.oidx.CheckPositions(size); err != nil {
		s.closeIndexes()
		return err.Error()
	}
	if err := s.tidx.SanityCheck(); err != nil {
		s.closeIndexes()
		return err.Error()
	}
	if err := s.text.load(s.path(textIndexSuffix), size); err != nil {
		// The text map is segfs's own cache: rebuild it from the batches
		// without touching the log, whose indexes checked out.
		if err := s.buildText(); err != nil {
			s.closeIndexes()
			return "text index: " + err.Error()
		}
		if !active {
			s.text.save(s.path(textIndexSuffix), size)
		}
	}
	if err := s.loadTail(); err != nil {
		s.closeIndexes()
		return "log tail: " + err.Error()
	}
	if err := s.tidx.CheckOffsets(s.next.Load()); err != nil {
		s.closeIndexes()
		return err.Error()
	}
	if active {
		s.closeIndexes()
		if err := s.openIndexes(true, cfg); err != nil {
			return err.Error()
		}
	}
	return ""
}

// StrayLogReason explains why a .log file of a partition directory whose
// name is not a segment's (20 digits, the base offset, then .log) stops
// the partition from loading. Kafka's loader takes the base offset from
// the text before the first dot (LogFileUtils.offsetFromFileName) and then
// opens the segment by its 20-digit name, creating it empty: "40.log"
// becomes an empty segment at offset 40 beside a file whose records are
// never read, and a name without a number fails the whole log directory.
// segfs refuses both, naming the file, rather than lose its records
// silently; segfs verify reports the same.
func StrayLogReason(name string) string {
	stem, _, _ := strings.Cut(filepath.Base(name), ".")
	if n, err := strconv.ParseInt(stem, 10, 64); err == nil && n >= 0 {
		return fmt.Sprintf("not a segment file name (20 digits, then .log); Kafka would open an empty %s in its place and never read its records: rename it to that name, or move it out",
			segmentName(n)+logSuffix)
	}
	return "not a segment file name (20 digits, then .log), and no base offset can be read from it: move it out of the partition directory"
}

func parseSegmentBase(name, suffix string) (int64, bool) {
	if !strings.HasSuffix(name, suffix) || len(name) != 20+len(suffix) {
		return 0, false
	}
	n, err := strconv.ParseInt(name[:20], 10, 64)
	return n, err == nil && n >= 0
}

// completeSwaps finishes or rolls back an interrupted compaction swap
// (KAFKA-FORMAT.md §7.5 steps 1–2): .cleaned files are incomplete and
// dropped (loadPartition removes them), and so is every .swap at or above
// the lowest base of a .cleaned file: the cleaner renames a new segment's
// files .cleaned → .swap with its .log last (cleanSegments), so until the
// .log's rename the swap is not committed. A .log.swap was complete, with
// every .swap beside it: the segments inside its offsets are deleted, its
// own files too (among them any index the cleaner had already renamed
// from .swap into place, rebuilt at load if its .swap is gone), and every
// .swap takes its final name.
func completeSwaps(dir string, log interface{ Info(string, ...any) }) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	type swap struct {
		base int64
		name string
	}
	var swaps []swap
	minCleaned := int64(-1)
	for _, e := range ents {
		name := e.Name()
		if strings.HasSuffix(name, cleanedSuffix) {
			inner := strings.TrimSuffix(name, cleanedSuffix)
			for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, textIndexSuffix, txnIndexSuffix} {
				if base, ok := parseSegmentBase(inner, suf); ok && (minCleaned < 0 || base < minCleaned) {
					minCleaned = base
				}
			}
		}
		if strings.HasSuffix(name, swapSuffix) {
			inner := strings.TrimSuffix(name, swapSuffix)
			for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, textIndexSuffix, txnIndexSuffix} {
				if base, ok := parseSegmentBase(inner, suf); ok {
					swaps = append(swaps, swap{base, name})
				}
			}
		}
	}
	var logSwaps, kept []swap
	for _, sw := range swaps {
		if minCleaned >= 0 && sw.base >= minCleaned {
			os.Remove(filepath.Join(dir, sw.name))
			log.Info("removed incomplete swap", "file", sw.name)
			continue
		}
		kept = append(kept, sw)
		if strings.HasSuffix(sw.name, logSuffix+swapSuffix) {
			logSwaps = append(logSwaps, sw)
		}
	}
	swaps = kept
	if len(logSwaps) == 0 {
		// Index swaps without their log are meaningless, and rebuilt,
		// except a .txnindex: segfs cannot rebuild one, and the cleaner
		// renames its swap after the log's (cleanSegments), so one left
		// alone belongs to a log already in place.
		renamed := false
		for _, sw := range swaps {
			if strings.HasSuffix(sw.name, txnIndexSuffix+swapSuffix) {
				if err := os.Rename(filepath.Join(dir, sw.name), filepath.Join(dir, strings.TrimSuffix(sw.name, swapSuffix))); err != nil {
					return err
				}
				log.Info("completed interrupted swap", "file", sw.name)
				renamed = true
				continue
			}
			os.Remove(filepath.Join(dir, sw.name))
		}
		if renamed {
			return syncDir(dir)
		}
		return nil
	}
	lo, hi := int64(-1), int64(-1)
	for _, sw := range logSwaps {
		next, err := lastNextOffset(filepath.Join(dir, sw.name), sw.base)
		if err != nil {
			return err
		}
		// A swap replaces at least the segment at its own base, even when
		// compaction left it empty.
		next = max(next, sw.base+1)
		if lo < 0 || sw.base < lo {
			lo = sw.base
		}
		if next > hi {
			hi = next
		}
	}
	for _, e := range ents {
		name := e.Name()
		if strings.HasSuffix(name, swapSuffix) {
			continue
		}
		for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, textIndexSuffix, txnIndexSuffix} {
			if base, ok := parseSegmentBase(name, suf); ok && base >= lo && base < hi {
				os.Remove(filepath.Join(dir, name))
			}
		}
	}
	for _, sw := range swaps {
		if err := os.Rename(filepath.Join(dir, sw.name), filepath.Join(dir, strings.TrimSuffix(sw.name, swapSuffix))); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		log.Info("completed interrupted swap", "file", sw.name)
	}
	return syncDir(dir)
}

// lastNextOffset scans a segment file's batch headers for its next offset.
func lastNextOffset(path string, base int64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	next := base
	sc := newScanner(f, path, 0, fi.Size(), nil)
	for {
		_, b, err := sc.next()
		if err == io.EOF || err != nil {
			return next, nil
		}
		h, err := record.ParseHeader(b)
		if err != nil {
			return next, nil
		}
		next = h.NextOffset()
	}
}
