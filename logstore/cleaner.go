package logstore

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"time"

	"github.com/segfs/segfs/index"
	"github.com/segfs/segfs/logstore/record"
)

// Compaction (cleanup.policy=compact, KAFKA-FORMAT.md §9) keeps the latest
// record of every key in the closed segments. Each cleaned segment keeps its
// base offset and every retained record its offset (gaps appear); batches
// whose records all survive are copied byte for byte. A rewrite writes the
// new segment whole (.log, .index, .timeindex, .textindex) under .cleaned
// names, renames them .swap (the .log last, which commits the swap),
// renames the old files .deleted, then the .swap files to their final
// names (the .log last again), so that a crash at any step is finished or
// rolled back by the loader (completeSwaps).

var errMapFull = errors.New("offset map full")

// cleanerCrash is set only by tests: it is called at the steps of a swap,
// and an error from it stops the cleaner there, as a crash would. The
// steps, in order: "cleaned" (the new segment written and synced under
// .cleaned names), "deleting" (after each segment of the group that kept
// nothing at its end is renamed .deleted), "swapping" (after each of the
// new files is renamed .cleaned → .swap, the .log last), "deleting" (after
// each other segment of the group is renamed .deleted), "placing" (after
// each index is renamed .swap → its final name), "renamed" (after the .log
// is), "swapped" (the new segment serves the group's offsets).
var cleanerCrash func(step string) error

// cleanerFault is set only by tests: it is called before each rename and
// directory sync of a swap, and each rename of a deleted segment's files
// to .deleted, with the operation ("rename", "syncdir") and the file it
// is about (the rename's target), and an error from it is that call's
// failure (the process goes on, unlike cleanerCrash).
var cleanerFault func(op, name string) error

func cleanerRename(from, to string) error {
	if cleanerFault != nil {
		if err := cleanerFault("rename", to); err != nil {
			return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
		}
	}
	return os.Rename(from, to)
}

func cleanerSyncDir(dir string) error {
	if cleanerFault != nil {
		if err := cleanerFault("syncdir", dir); err != nil {
			return &os.PathError{Op: "fsync", Path: dir, Err: err}
		}
	}
	return syncDir(dir)
}

// Compact runs one cleaning pass if the partition is eligible (the store
// runs it every Options.CleanerInterval).
func (p *Partition) Compact() (CleanupStats, error) {
	p.cleanMu.Lock()
	defer p.cleanMu.Unlock()
	start := time.Now()
	cfg := p.config()
	st := CleanupStats{NewLogStart: p.logStart.Load()}
	if !cfg.Compact() || p.store.closed.Load() {
		return st, nil
	}
	now := p.store.now().UnixMilli()
	segs := p.acquireSegments(p.logStart.Load())
	defer releaseAll(segs)
	if len(segs) < 2 {
		// One segment, the active one: nothing to clean. None: the
		// partition was closed after the check above (acquireSegments).
		return st, nil
	}
	closed := segs[:len(segs)-1]
	// Kafka's cleanableOffsets: a first dirty offset below the log start
	// starts at the log start; one past the log end (a checkpoint the log
	// no longer matches: a tail lost or cut after it was written, a data
	// directory put together from copies) tells nothing about what was
	// cleaned, and the whole log is taken as dirty. It used to be cut to
	// the log end, which left everything below it uncleaned for good.
	firstDirty := max(p.firstDirty.Load(), p.logStart.Load())
	if firstDirty > p.leo.Load() {
		p.log().Warn("cleaner checkpoint past the log end; cleaning from the log start",
			"first_dirty", firstDirty, "log_end_offset", p.leo.Load(), "log_start_offset", p.logStart.Load())
		firstDirty = p.logStart.Load()
		p.firstDirty.Store(firstDirty) // and the checkpoint with it, as Kafka's forceUpdateCheckpoint
		p.store.markDirty()
	}
	// The uncleanable boundary: the active segment, the segment holding
	// the first offset of an ongoing transaction (Kafka cleans below the
	// last stable offset only), and any segment still younger than
	// min.compaction.lag.ms.
	limit := len(closed)
	fu := p.firstUnstable()
	for i, s := range closed {
		if fu >= 0 && s.next.Load() > fu {
			limit = i
			break
		}
		if cfg.MinCompactionLagMs > 0 && s.next.Load() > firstDirty && s.largestTimestamp() > now-cfg.MinCompactionLagMs {
			limit = i
			break
		}
	}
	var cleanBytes, dirtyBytes int64
	var firstDirtyTs int64 = -1
	for _, s := range closed[:limit] {
		if s.next.Load() <= firstDirty {
			cleanBytes += s.size.Load()
			continue
		}
		dirtyBytes += s.size.Load()
		if s.firstBatchTs >= 0 && (firstDirtyTs < 0 || s.firstBatchTs < firstDirtyTs) {
			firstDirtyTs = s.firstBatchTs
		}
	}
	// Tombstones whose delete horizon has passed are removed even when
	// nothing new is dirty (Kafka: logsWithTombstonesExpired). After a
	// restart the horizon is read back from the cleaned segments' batch
	// headers once; Kafka keeps it in memory only, so an idle topic's
	// tombstones would stay until something new was written.
	if p.deleteHorizon.Load() < 0 {
		p.deleteHorizon.Store(latestDeleteHorizon(closed, firstDirty))
	}
	horizon := p.deleteHorizon.Load()
	// Due at the horizon itself, as retained removes them then.
	tombstonesDue := horizon > 0 && now >= horizon && cleanBytes > 0
	if dirtyBytes == 0 && !tombstonesDue {
		return st, nil
	}
	ratio := float64(dirtyBytes) / float64(cleanBytes+dirtyBytes)
	overdue := firstDirtyTs >= 0 && now-firstDirtyTs > cfg.MaxCompactionLagMs
	if ratio <= cfg.MinCleanableDirtyRatio && !overdue && !tombstonesDue {
		return st, nil
	}

	m := p.store.acquireOffsetMap()
	defer p.store.releaseOffsetMap()
	m.reset()
	var dec record.Decoder
	aborted := p.abortedIn(segs)
	end := firstDirty
	rewrite := 0 // closed[:rewrite] are rewritten
	for i, s := range closed[:limit] {
		if s.next.Load() <= firstDirty {
			rewrite = i + 1
			continue
		}
		err := scanSegment(s, &dec, func(pos int64, b []byte, h *record.Header) error {
			if h.LastOffset() < firstDirty {
				return nil
			}
			// Markers and the data of aborted transactions put no key in
			// the map, but the round covers them (Kafka's latestOffset):
			// a range ending in them is not dirty again at the next pass.
			if !h.Control() && !aborted.holds(h) {
				err := dec.Records(b, func(r *record.Record) error {
					if r.Key == nil || r.Offset < firstDirty {
						return nil
					}
					if !m.put(r.Key, r.Offset) {
						return errMapFull
					}
					return nil
				})
				if err != nil {
					return err
				}
			}
			end = h.NextOffset()
			return nil
		})
		if errors.Is(err, errMapFull) {
			// As Kafka does, the round ends after the last batch whose
			// keys all went in, inside this segment if need be: the
			// segment is rewritten too, keeping every record from end on
			// (none of them is older than what the map holds for its
			// key). Stopping at the previous segment instead would never
			// clean a segment holding more keys than the map.
			if end > max(s.base, firstDirty) { // a batch of s went in
				rewrite = i + 1
			}
			p.log().Warn("cleaner offset map full; cleaning part of the dirty log", "end", end)
			break
		}
		if err != nil {
			return st, err
		}
		rewrite = i + 1
	}
	if rewrite == 0 {
		return st, nil
	}
	p.pinViews()
	r := &cleanRound{m: m, aborted: aborted, cfg: cfg, now: now, end: end, dec: &dec,
		active: p.lastRecordsOfActiveProducers(), open: map[int64]bool{}}
	for _, group := range groupSegments(closed[:rewrite], cfg) {
		removed, freed, err := p.cleanSegments(group, r)
		if err != nil {
			return st, fmt.Errorf("cleaning %s: %w", group[0].path(logSuffix), err)
		}
		st.SegmentsCleaned += len(group)
		st.RecordsRemoved += removed
		st.BytesFreed += freed
	}
	// Every segment below end holding tombstones was rewritten above.
	p.deleteHorizon.Store(r.horizon)
	p.firstDirty.Store(end)
	p.store.markDirty()
	p.bumpGeneration()
	st.Duration = time.Since(start)
	return st, nil
}

// abortedTxns is the aborted transactions of a partition by producer id,
// from the .txnindex entries of its segments (a data directory written by
// Kafka, or WriteTxnMarker's aborts).
type abortedTxns map[int64][]AbortedTxn

// abortedIn collects the aborted transactions of segs. An entry sits in
// the segment of its ABORT marker, which may lie past the data it aborts,
// so every segment is read, the active one too. s.txns changes under mu
// (addAbortedLocked).
func (p *Partition) abortedIn(segs []*segment) abortedTxns {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var a abortedTxns
	for _, s := range segs {
		for _, t := range s.txns {
			if a == nil {
				a = abortedTxns{}
			}
			a[t.ProducerID] = append(a[t.ProducerID], t)
		}
	}
	return a
}

// holds reports whether h is a data batch of an aborted transaction: a
// transactional batch of a producer inside one of its aborted spans (from
// its first offset to its ABORT marker). Kafka's cleaner neither maps the
// keys of such batches nor keeps them (LogCleaner's
// AbortedTransactionMetadata): mapped, an aborted record would supersede
// the committed value of its key, which the pass then removed, leaving
// read_committed consumers neither.
func (a abortedTxns) holds(h *record.Header) bool {
	if len(a) == 0 || !h.Transactional() || h.Control() {
		return false
	}
	for _, t := range a[h.ProducerID] {
		if h.BaseOffset >= t.FirstOffset && h.BaseOffset <= t.LastOffset {
			return true
		}
	}
	return false
}

// scanSegment calls fn for every batch of s (CRC-checked).
func scanSegment(s *segment, dec *record.Decoder, fn func(pos int64, b []byte, h *record.Header) error) error {
	sc := newScanner(s.log, s.path(logSuffix), 0, s.size.Load(), nil)
	for {
		pos, b, err := sc.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		h, err := record.ParseHeader(b)
		if err != nil {
			return &CorruptError{Path: s.path(logSuffix), Pos: pos, Err: err}
		}
		if err := record.Validate(b); err != nil {
			return &CorruptError{Path: s.path(logSuffix), Pos: pos, Err: err}
		}
		if err := fn(pos, b, &h); err != nil {
			return err
		}
	}
}

// latestDeleteHorizon is the latest delete horizon set on a batch of the
// segments below firstDirty (only the cleaner sets one), 0 if none is.
func latestDeleteHorizon(segs []*segment, firstDirty int64) int64 {
	var horizon int64
	for _, s := range segs {
		if s.base >= firstDirty {
			break
		}
		limit := s.size.Load()
		for pos := int64(0); pos < limit; {
			h, err := s.header(pos, limit)
			if err != nil {
				break // a damaged batch fails the pass that reads it
			}
			if h.HasDeleteHorizon() {
				horizon = max(horizon, h.BaseTimestamp)
			}
			pos += h.Size()
		}
	}
	return horizon
}

// groupSegments splits consecutive segments into the groups that are each
// cleaned into one segment, as Kafka's cleaner does (groupSegmentsBySize):
// a group's logs and indexes together fit one segment's limits and its
// offsets fit the relative offsets of one base. Without this, the small
// segments that compaction leaves behind would never merge, and each keeps
// a descriptor open for as long as the partition lives.
func groupSegments(segs []*segment, cfg *Config) [][]*segment {
	var groups [][]*segment
	for len(segs) > 0 {
		first := segs[0]
		size, oidx, tidx := first.size.Load(), first.oidx.Entries()*8, first.tidx.Entries()*12
		n := 1
		for ; n < len(segs); n++ {
			s := segs[n]
			size += s.size.Load()
			oidx += s.oidx.Entries() * 8
			tidx += s.tidx.Entries() * 12
			if size > int64(cfg.SegmentBytes) || oidx > int(cfg.SegmentIndexBytes) || tidx > int(cfg.SegmentIndexBytes) ||
				s.next.Load()-1-first.base > math.MaxInt32 {
				break
			}
		}
		groups = append(groups, segs[:n])
		segs = segs[n:]
	}
	return groups
}

// cleanSegments rewrites a group of consecutive segments into one, keeping
// what the offset map says is latest, and swaps it in at the first one's
// base. It returns the number of records removed and of bytes freed, and
// raises r.horizon to the delete horizon of any tombstone or marker it
// keeps.
//
// The new segment is built as the append path builds one: each batch it
// writes goes through segment.addBatch, which adds the sparse .index and
// .timeindex entries and the text map, and it is sealed (final time-index
// entry, indexes trimmed, everything fsynced) under .cleaned names. Its
// files then move together through .swap to their final names, complete,
// as Kafka's cleaner moves a cleaned LogSegment (KAFKA-FORMAT.md §9.6), and
// it is served as written: nothing reads it again, and no index is ever
// built in place under a name a reader (segfs verify beside the mount, a
// Kafka broker after a crash) could open half-built.
func (p *Partition) cleanSegments(group []*segment, r *cleanRound) (removed, freed int64, err error) {
	cfg, dec := r.cfg, r.dec
	old, last := group[0], group[len(group)-1]
	cleaned := func(suf string) string { return old.path(suf) + cleanedSuffix }
	swapped := func(suf string) string { return old.path(suf) + swapSuffix }
	crash := func(step string) error {
		if cleanerCrash != nil {
			return cleanerCrash(step)
		}
		return nil
	}
	// The new segment's files, in the order they are swapped in: the
	// indexes first, the .log last (see the swap below).
	files := []string{indexSuffix, timeIndexSuffix, textIndexSuffix, logSuffix}
	// A failed pass removes its files, a crash leaves them to the loader:
	// none can be here, but an index opened over one would keep its
	// entries.
	for _, suf := range files {
		os.Remove(cleaned(suf))
	}
	ns := newSegmentStruct(p.dir, old.base)
	installed := false
	committed := false // the new .log's swap exists
	defer func() {
		if !installed {
			ns.closeFiles() // a crash in a test, or a failure: the files are the loader's or dropped
		}
		if !installed && committed {
			// Stopped with the swap for the loader to complete: if
			// retention deletes the group before a pass completes it,
			// the restart brings the new segment back below the log
			// start, which the checkpoint must then name.
			p.strayBelowStart.Store(true)
		}
	}()
	// drop abandons the new segment, before its .log's swap exists.
	drop := func() {
		ns.closeFiles()
		for _, suf := range files {
			os.Remove(cleaned(suf))
		}
		for _, suf := range files[:len(files)-1] {
			os.Remove(swapped(suf))
		}
	}
	f, err := os.OpenFile(cleaned(logSuffix), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, 0, err
	}
	ns.log = f
	if ns.oidx, err = index.OpenOffsetIndex(cleaned(indexSuffix), ns.base, int(cfg.SegmentIndexBytes), true); err != nil {
		drop()
		return 0, 0, err
	}
	if ns.tidx, err = index.OpenTimeIndex(cleaned(timeIndexSuffix), ns.base, int(cfg.SegmentIndexBytes), true); err != nil {
		drop()
		return 0, 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	// put writes a batch at the end of the new segment and takes it in.
	put := func(b []byte, h *record.Header, st record.TextStats) error {
		pos := ns.size.Load()
		if _, err := w.Write(b); err != nil {
			return err
		}
		ns.addBatch(pos, int64(len(b)), h, st, cfg)
		return nil
	}
	var out []byte
	// copyBatch writes b as it is, with what it renders.
	copyBatch := func(b []byte, h *record.Header) error {
		var st record.TextStats
		if !h.Control() {
			if err := dec.Records(b, func(r *record.Record) error { st.AddRecord(r); return nil }); err != nil {
				return err
			}
		}
		return put(b, h, st)
	}
	// putEmpty writes the header of b alone, with no records: a batch
	// the cleaner keeps for the producer state it carries.
	putEmpty := func(h *record.Header) error {
		out = record.AppendEmpty(out[:0], h)
		oh, err := record.ParseHeader(out)
		if err != nil {
			return err
		}
		return put(out, &oh, record.TextStats{})
	}
	clean := func(pos int64, b []byte, h *record.Header) error {
		if h.BaseOffset >= r.end {
			// Past the end of the round (the offset map filled): no key
			// there is in the map, and nothing is decided about it, as
			// Kafka's cleaner retains every record past the map's
			// latest offset. A keyless record there used to be dropped,
			// and one whose key its own batch repeats.
			return copyBatch(b, h)
		}
		if h.Control() {
			return r.cleanMarker(b, h, copyBatch, putEmpty, &out, &removed)
		}
		if h.Transactional() && h.ProducerID >= 0 {
			// Its transaction's marker stays until the data is gone.
			r.open[h.ProducerID] = true
		}
		if r.aborted.holds(h) {
			// Kafka's cleaner drops the data of aborted transactions
			// whatever its keys; their markers and .txnindex entries stay.
			removed += int64(h.RecordCount)
			if r.keepsEmpty(h) {
				return putEmpty(h)
			}
			return nil
		}
		keep, total, all, err := r.retained(b, h)
		if err != nil {
			return err
		}
		removed += int64(total - len(keep))
		tombstones := false
		for _, k := range keep {
			tombstones = tombstones || k.value == nil
		}
		needHorizon := tombstones && !h.HasDeleteHorizon()
		if tombstones {
			if h.HasDeleteHorizon() {
				r.horizon = max(r.horizon, h.BaseTimestamp)
			} else {
				r.horizon = max(r.horizon, r.now+r.cfg.DeleteRetentionMs)
			}
		}
		if len(keep) == 0 {
			// An empty batch left by an earlier pass goes too, once its
			// producer has moved on.
			if r.keepsEmpty(h) {
				return putEmpty(h)
			}
			return nil
		}
		if len(keep) == total && !needHorizon {
			return put(b, h, all) // unchanged: byte for byte, CRC and all
		}
		horizon := int64(0)
		if h.HasDeleteHorizon() {
			horizon = h.BaseTimestamp
		} else if needHorizon {
			horizon = r.now + r.cfg.DeleteRetentionMs
		}
		if out, err = r.rebuild(out[:0], h, keep, horizon); err != nil {
			return err
		}
		oh, err := record.ParseHeader(out)
		if err != nil {
			return err
		}
		var st record.TextStats
		for _, k := range keep {
			st.AddRecord(&record.Record{Key: k.key, Value: k.value})
		}
		return put(out, &oh, st)
	}
	for _, s := range group {
		if err = scanSegment(s, dec, clean); err != nil {
			break
		}
	}
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		// The final time-index entry, then the log, the indexes (trimmed,
		// read-only from here on) and the text map, all fsynced.
		err = ns.sealText(cleaned(textIndexSuffix))
	}
	if err != nil {
		drop()
		return 0, 0, err
	}
	if _, err := os.Stat(cleaned(textIndexSuffix)); err != nil {
		// Not saved (a full disk): the loader rebuilds it after a restart.
		files = slices.DeleteFunc(files, func(suf string) bool { return suf == textIndexSuffix })
	}
	if fi, err := last.log.Stat(); err == nil {
		// Retention falls back to the .log's mtime; Kafka sets its
		// indexes' too (KAFKA-FORMAT.md §9.6).
		for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
			os.Chtimes(cleaned(suf), fi.ModTime(), fi.ModTime())
		}
	}
	if err := crash("cleaned"); err != nil {
		return 0, 0, err
	}
	// Segments at the end of the group that kept nothing go before the
	// swap exists: the loader replaces only the segments inside the
	// offsets a swap holds (completeSwaps), so after a crash they would
	// come back whole, superseded values and expired tombstones with them.
	// Deleting them first is itself a compacted state of the log (the
	// records that supersede theirs lie beyond this group). A file that
	// cannot be renamed .deleted stops the pass, here and below: left
	// under its name, a restart served it beside the new segment. Here
	// the new segment is dropped.
	tail := len(group)
	for tail > 1 && group[tail-1].base >= ns.next.Load() {
		tail--
	}
	for _, s := range group[tail:] {
		if err := s.markDeleted(); err != nil {
			drop()
			return 0, 0, err
		}
		if err := crash("deleting"); err != nil {
			return 0, 0, err
		}
	}
	// The cleaner keeps transactional batches and their markers, so the
	// group's aborted transactions all still apply: the merged segment
	// takes them, in a .txnindex of its own, which segfs cannot rebuild
	// from the log. It is written as a swap file before the log's swap
	// exists, and the loader completes it like the log's (completeSwaps):
	// dropped while the .cleaned log is still there, renamed into place
	// once the log's swap is.
	var txns []AbortedTxn
	for _, s := range group {
		for _, t := range s.txns {
			if !r.removedAborts[t.LastOffset] {
				txns = append(txns, t)
			}
		}
	}
	txnSwap := old.path(txnIndexSuffix) + swapSuffix
	if len(txns) > 0 {
		if err := WriteFileAtomic(txnSwap, encodeTxnIndex(txns)); err != nil {
			drop()
			return 0, 0, err
		}
	}
	// The swap. Every file goes .cleaned → .swap, the .log last: its
	// rename commits the swap. Before it, the loader drops every .swap at
	// or above a .cleaned file's base; from it on, the loader completes
	// the swap (completeSwaps).
	for _, suf := range files {
		if err := cleanerRename(cleaned(suf), swapped(suf)); err != nil {
			drop()
			os.Remove(txnSwap)
			return 0, 0, err
		}
		if suf == logSuffix {
			committed = true
		}
		if err := crash("swapping"); err != nil {
			return 0, 0, err
		}
	}
	if err := cleanerSyncDir(p.dir); err != nil {
		return 0, 0, err
	}
	// Oldest first: a crash part way leaves the swap and the segments it
	// replaces, which the loader deletes by offset range (completeSwaps).
	// So does a file that cannot be renamed .deleted: the pass stops with
	// the swap committed, for the loader or the next pass to complete.
	for _, s := range group[:tail] {
		if err := s.markDeleted(); err != nil {
			return 0, 0, err
		}
		if err := crash("deleting"); err != nil {
			return 0, 0, err
		}
	}
	// .swap → final names, the .log last again: whenever the new .log is
	// at its name, its indexes are at theirs, complete. A crash before the
	// .log's rename leaves its swap, and the loader deletes the indexes
	// already renamed with the rest of the swap's offsets, renames the
	// rest and rebuilds what is missing.
	for _, suf := range files {
		if err := cleanerRename(swapped(suf), old.path(suf)); err != nil {
			return 0, 0, err
		}
		step := "placing"
		if suf == logSuffix {
			step = "renamed"
		}
		if err := crash(step); err != nil {
			return 0, 0, err
		}
	}
	if len(txns) > 0 {
		// The old segments' .txnindex files are .deleted by now.
		if err := cleanerRename(txnSwap, old.path(txnIndexSuffix)); err != nil {
			return 0, 0, err
		}
	}
	if err := cleanerSyncDir(p.dir); err != nil {
		return 0, 0, err
	}
	// The new segment is served as written: the sealed indexes stay
	// mapped (a rename does not change the file under a mapping or a
	// descriptor).
	ns.txns = txns
	ns.next.Store(max(ns.next.Load(), last.next.Load()))
	installed = true
	for _, s := range group {
		freed += s.size.Load()
	}
	freed -= ns.size.Load()
	p.mu.Lock()
	for i, s := range p.segs {
		if s == old {
			// Only the cleaner removes closed segments other than
			// retention, and both hold cleanMu: the group is still here,
			// in order.
			p.segs = slices.Replace(p.segs, i, i+len(group), ns)
			break
		}
	}
	p.mu.Unlock()
	for _, s := range group {
		p.store.scheduleRelease(s, time.Duration(cfg.FileDeleteDelayMs)*time.Millisecond)
	}
	if err := crash("swapped"); err != nil {
		return removed, freed, err
	}
	return removed, freed, nil
}

// cleanRound is what one cleaning pass decides by, across its groups of
// segments, which it cleans in offset order from the log start.
type cleanRound struct {
	m       *offsetMap
	aborted abortedTxns
	cfg     *Config
	now     int64
	// end is the end of the round (the map's latest offset + 1): what
	// lies at or past it is copied as it is.
	end int64
	// active is the producers whose state the log must keep (Kafka's
	// lastRecordsOfActiveProducers).
	active map[int64]lastRecord
	// open holds the producers with a transactional data batch read
	// since their last marker: that marker's transaction still has data.
	open map[int64]bool
	// removedAborts is the offsets of the ABORT markers this round
	// removed: their .txnindex entries go with them.
	removedAborts map[int64]bool
	// horizon is the latest delete horizon of a tombstone or marker kept.
	horizon int64
	// Reused from batch to batch.
	dec  *record.Decoder
	bl   record.Builder
	keep []keptRecord
}

// lastRecord is where an active producer's state sits in the log: the last
// offset of its last data batch (-1: none left, a marker changed its
// epoch), and its epoch.
type lastRecord struct {
	dataOffset int64
	epoch      int16
}

// lastRecordsOfActiveProducers snapshots the producers the partition keeps
// state for. Their last batches outlive compaction, so that a reload that
// rebuilds the producer state from the log (no snapshot at or above them,
// after a crash) finds their last sequence and epoch: without it, the
// producer's next batch is refused as out of order.
func (p *Partition) lastRecordsOfActiveProducers() map[int64]lastRecord {
	p.amu.Lock()
	defer p.amu.Unlock()
	out := make(map[int64]lastRecord, len(p.producers.m))
	for id, e := range p.producers.m {
		lr := lastRecord{dataOffset: -1, epoch: e.epoch}
		if n := len(e.batches); n > 0 {
			lr.dataOffset = e.batches[n-1].lastOff
		}
		out[id] = lr
	}
	return out
}

// keepsEmpty reports whether the data batch h, all of whose records the
// round removes, is kept as an empty batch: it is the last data batch of
// an active producer (Kafka's isBatchLastRecordOfProducer,
// BatchRetention.RETAIN_EMPTY).
func (r *cleanRound) keepsEmpty(h *record.Header) bool {
	if h.ProducerID < 0 {
		return false
	}
	lr, ok := r.active[h.ProducerID]
	return ok && lr.dataOffset == h.LastOffset()
}

// keepsEmptyMarker reports whether the marker h, removed by the round, is
// kept as an empty control batch: its producer is active with no data
// batch left, and h carries its epoch.
func (r *cleanRound) keepsEmptyMarker(h *record.Header) bool {
	lr, ok := r.active[h.ProducerID]
	return ok && lr.dataOffset < 0 && lr.epoch == h.ProducerEpoch
}

// keptRecord is a record the round keeps in a rebuilt batch.
type keptRecord struct {
	delta int32
	ts    int64
	key   []byte
	value []byte
	hdrs  []record.RecordHeader
}

// retained decides the records of the data batch b below the round's end
// (KAFKA-FORMAT.md §9.4): a keyed record stays if no later offset of its
// key is in the map, a tombstone until its batch's delete horizon (at
// the horizon it goes, as markers do: cleanMarker); keyless records go.
// It returns those kept (copied; valid until the next call), how many the
// batch holds, and what the whole batch
// renders.
func (r *cleanRound) retained(b []byte, h *record.Header) (keep []keptRecord, total int, all record.TextStats, err error) {
	keep = r.keep[:0]
	defer func() { r.keep = keep }()
	err = r.dec.Records(b, func(rec *record.Record) error {
		total++
		all.AddRecord(rec)
		if rec.Key == nil {
			return nil
		}
		if latest, ok := r.m.get(rec.Key); ok && rec.Offset < latest {
			return nil
		}
		// Kafka's Cleaner.shouldRetainRecord keeps a tombstone while
		// currentTime < deleteHorizonMs: at the horizon it goes (segfs
		// kept it until the millisecond after).
		if rec.Value == nil && h.HasDeleteHorizon() && r.now >= h.BaseTimestamp {
			return nil // the tombstone has done its job
		}
		keep = append(keep, copyRecord(rec))
		return nil
	})
	return keep, total, all, err
}

// copyRecord copies what a rebuilt batch needs of rec. The key may be
// empty, which a copy onto nil would make null (and the next pass drop).
func copyRecord(rec *record.Record) keptRecord {
	k := keptRecord{delta: rec.OffsetDelta, ts: rec.Timestamp, hdrs: append([]record.RecordHeader(nil), rec.Headers...)}
	if rec.Key != nil {
		k.key = append([]byte{}, rec.Key...)
	}
	if rec.Value != nil {
		k.value = append([]byte{}, rec.Value...)
	}
	return k
}

// rebuild appends to dst the batch h rebuilt with the records keep, its
// offsets, producer fields, codec and flags kept, and the delete horizon
// horizon (0: none).
func (r *cleanRound) rebuild(dst []byte, h *record.Header, keep []keptRecord, horizon int64) ([]byte, error) {
	spec := record.BatchSpec{
		BaseOffset: h.BaseOffset, LeaderEpoch: h.PartitionLeaderEpoch,
		ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, BaseSequence: h.BaseSequence,
		Codec: h.Codec(), Transactional: h.Transactional(), Control: h.Control(), LogAppendTime: h.LogAppendTime(),
		LastOffsetDelta: h.LastOffsetDelta, DeleteHorizon: horizon,
	}
	if h.LogAppendTime() {
		// The broker's append time, which no record carries, stays.
		// A CreateTime batch's MaxTimestamp becomes its retained
		// records' largest (Kafka rebuilds it with a
		// MemoryRecordsBuilder, which computes it): kept, the
		// timestamp of a record the pass removed went on steering
		// the time index, retention, and ListOffsets -3, which then
		// looked for a record that no longer exists and found none.
		spec.MaxTimestamp = h.MaxTimestamp
	}
	r.bl.Reset(spec)
	for _, k := range keep {
		r.bl.AddAt(k.delta, k.ts, k.key, k.value, k.hdrs)
	}
	return r.bl.Build(dst)
}

// cleanMarker decides a control batch below the round's end, as Kafka's
// cleaner does (CleanedTransactionMetadata, KIP-534). A COMMIT or ABORT
// marker whose transaction has no data batch left before it is done:
// the first pass that finds it so sets its delete horizon (now +
// delete.retention.ms), and a pass after the horizon removes it, with its
// .txnindex entry, keeping an empty control batch in its place if it
// carries the epoch of an active producer that has no data batch left.
// Until the horizon, consumers that read the transaction's data before
// the cleaner removed it still find its marker. An empty control batch
// (a marker the cleaner emptied) goes once its producer is no longer
// active. Other control records are kept.
func (r *cleanRound) cleanMarker(b []byte, h *record.Header, copyBatch func([]byte, *record.Header) error,
	putEmpty func(*record.Header) error, out *[]byte, removed *int64) error {
	hasData := r.open[h.ProducerID]
	delete(r.open, h.ProducerID)
	if h.RecordCount == 0 {
		if r.keepsEmptyMarker(h) {
			return copyBatch(b, h)
		}
		return nil
	}
	typ, _, ok := parseMarker(b)
	if !ok || hasData || h.ProducerID < 0 {
		return copyBatch(b, h)
	}
	if !h.HasDeleteHorizon() {
		var keep []keptRecord
		if err := r.dec.Records(b, func(rec *record.Record) error {
			keep = append(keep, copyRecord(rec))
			return nil
		}); err != nil {
			return err
		}
		horizon := r.now + r.cfg.DeleteRetentionMs
		r.horizon = max(r.horizon, horizon)
		var err error
		if *out, err = r.rebuild((*out)[:0], h, keep, horizon); err != nil {
			return err
		}
		oh, err := record.ParseHeader(*out)
		if err != nil {
			return err
		}
		return copyBatch(*out, &oh)
	}
	if r.now < h.BaseTimestamp {
		r.horizon = max(r.horizon, h.BaseTimestamp)
		return copyBatch(b, h)
	}
	*removed += int64(h.RecordCount)
	if typ == controlAbort {
		if r.removedAborts == nil {
			r.removedAborts = map[int64]bool{}
		}
		r.removedAborts[h.BaseOffset] = true
	}
	if r.keepsEmptyMarker(h) {
		return putEmpty(h)
	}
	return nil
}
