package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Leader epochs (KAFKA-FORMAT.md §10.2; Kafka's LeaderEpochFileCache).
//
// Every batch carries the leader epoch of the leadership that appended it
// (bytes 12-15, outside the CRC), and leader-epoch-checkpoint lists the
// first offset of each epoch. Clients use them to find out that a log
// they read was truncated under them (KIP-101, KIP-320): a consumer that
// resumes at offset O, committed after a record of epoch E, asks
// OffsetForLeaderEpoch(E) for the end of E; an answer below O means the
// records it had read from there on are gone, and offsets from there on
// were handed out again.
//
// segfs is the only replica and always the leader. Each open of a
// partition is a new leadership, as a Kafka broker's restart is (its
// controller elects it again with a bumped epoch): the current epoch is
// the latest epoch of the cache plus one, 0 for a partition created now.
// A power cut that loses the unflushed tail of a log therefore puts every
// record appended afterwards, at the reused offsets, in a later epoch than
// the lost ones, and the consumer's check above finds the truncation.
//
// The entry of the new epoch (epoch, log end) is written lazily, fsynced
// just before the first batch of the epoch is appended, so that opening
// and closing an idle data directory rewrites nothing. Until then readers
// see it as if it were written (epochView), as Kafka's leader has it from
// its election. A client can only have seen such an epoch with no record
// under it: no batch carries it before its entry is on disk, and the only
// offset shown with it is the log end (Metadata's epoch, ListOffsets'
// latest offset and epoch, OffsetForLeaderEpoch's answers). If the process
// dies before the first append, the next open takes the same epoch again,
// from the log end, which matches what clients saw as long as that log end
// was durable: after a clean close (which flushes), or when the loaded log
// ends at its recovery point. Otherwise (a crash left records past the
// recovery point: pages the dead process left in the page cache, which a
// power cut may still take) the entry is written at open, before any
// client sees the epoch; lazily, a client could take (log end, E) from
// ListOffsets and commit it, a power cut then shorten the log, and records
// of the same E fill the offsets below its commit unnoticed. It is written
// at open too when recovery dropped entries from the end of the cache (a
// power cut took records of a later epoch): that epoch must never come
// back, so the new one is above every epoch the file held, not only those
// that survive the truncation, and on disk before anything else happens.
//
// The cache is loaded as Kafka's loader does it: entries from the file
// (each assigned, dropping any that break the ascending order), entries
// for the recovered batches whose epoch is above the latest cached
// (LogSegment.recover), then truncated to [log start, log end]. A missing
// or unreadable checkpoint is rebuilt from the batches of every segment,
// with a warning; Kafka fails the log directory on an unreadable one, and
// keeps an empty cache for a missing one, which loses the epochs a Kafka
// data directory's batches carry. Log start moves (retention, DeleteRecords)
// truncate the cache from the start, as Kafka's do.

const epochCheckpointFile = "leader-epoch-checkpoint"

// epochEntry is one entry of the cache: the first offset of a leader epoch.
type epochEntry struct {
	epoch int32
	start int64
}

// EpochEntry is an entry of a partition's leader-epoch cache: the first
// offset of a leader epoch.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// parseEpochCheckpoint reads Kafka's leader-epoch-checkpoint: "0", the
// entry count, then "epoch startOffset" lines.
func parseEpochCheckpoint(b []byte) ([]epochEntry, error) {
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) < 2 || strings.TrimSpace(lines[0]) != "0" {
		return nil, errors.New("want version 0 and an entry count on the first two lines")
	}
	n, err := strconv.Atoi(strings.TrimSpace(lines[1]))
	if err != nil || n < 0 || n != len(lines)-2 {
		return nil, fmt.Errorf("says %q entries, has %d", lines[1], len(lines)-2)
	}
	out := make([]epochEntry, 0, n)
	for i, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) != 2 {
			return nil, fmt.Errorf("line %d: want \"epoch startOffset\", got %q", i+3, l)
		}
		e, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || e < 0 || o < 0 {
			return nil, fmt.Errorf("line %d: bad entry %q", i+3, l)
		}
		out = append(out, epochEntry{int32(e), o})
	}
	return out, nil
}

// formatEpochCheckpoint writes es in Kafka's format.
func formatEpochCheckpoint(es []epochEntry) []byte {
	b := make([]byte, 0, 8+len(es)*16)
	b = append(b, "0\n"...)
	b = strconv.AppendInt(b, int64(len(es)), 10)
	b = append(b, '\n')
	for _, e := range es {
		b = strconv.AppendInt(b, int64(e.epoch), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, e.start, 10)
		b = append(b, '\n')
	}
	return b
}

// assignEpoch is Kafka's LeaderEpochFileCache.assign: e becomes the latest
// entry unless it is the latest epoch already at the same or a lower start;
// entries it conflicts with (an epoch at or above it, a start at or past
// it) go first. es is not modified; the result may share its array only
// when nothing changed.
func assignEpoch(es []epochEntry, e epochEntry) ([]epochEntry, bool) {
	if n := len(es); n > 0 && es[n-1].epoch == e.epoch && es[n-1].start <= e.start {
		return es, false
	}
	k := len(es)
	for k > 0 && (es[k-1].epoch >= e.epoch || es[k-1].start >= e.start) {
		k--
	}
	out := make([]epochEntry, k, k+1)
	copy(out, es[:k])
	return append(out, e), true
}

// truncateEpochsFromEnd drops the entries starting at or past end (Kafka's
// truncateFromEnd, after a truncation of the log to end).
func truncateEpochsFromEnd(es []epochEntry, end int64) []epochEntry {
	k := len(es)
	for k > 0 && es[k-1].start >= end {
		k--
	}
	return es[:k:k]
}

// truncateEpochsFromStart drops the entries that start at or below start
// and puts the last of them back at start (Kafka's truncateFromStart,
// after the log start moved to start).
func truncateEpochsFromStart(es []epochEntry, start int64) []epochEntry {
	k := 0
	for k < len(es) && es[k].start <= start {
		k++
	}
	if k == 0 || (k == 1 && es[0].start == start) {
		return es
	}
	out := make([]epochEntry, 0, len(es)-k+1)
	out = append(out, epochEntry{es[k-1].epoch, start})
	return append(out, es[k:]...)
}

// epochEndOffset is Kafka's LeaderEpochFileCache.endOffsetFor: for the
// requested epoch, the largest cached epoch at or below it and the start of
// the first epoch above it, or the log end if the latest epoch was asked;
// (-1, -1) for epoch -1 or one above every cached epoch. An epoch below the
// first cached one answers itself and the first entry's start.
func epochEndOffset(es []epochEntry, req int32, leo int64) (int32, int64) {
	if req == -1 || len(es) == 0 {
		return -1, -1
	}
	if es[len(es)-1].epoch == req {
		return req, leo
	}
	hi := 0 // first entry with an epoch above req
	for hi < len(es) && es[hi].epoch <= req {
		hi++
	}
	if hi == len(es) {
		return -1, -1
	}
	if hi == 0 {
		return req, es[0].start
	}
	return es[hi-1].epoch, es[hi].start
}

// epochOfOffset is Kafka's LeaderEpochFileCache.epochForOffset: the epoch
// whose range holds offset, -1 if none starts at or below it.
func epochOfOffset(es []epochEntry, offset int64) int32 {
	e := int32(-1)
	for _, x := range es {
		if x.start > offset {
			break
		}
		e = x.epoch
	}
	return e
}

// readEpochCheckpoint reads and parses the partition's checkpoint. ok is
// false when it is missing or does not parse (err says why, nil when
// missing); raw is what the file held.
func readEpochCheckpoint(dir string) (es []epochEntry, raw []byte, ok bool, err error) {
	raw, err = os.ReadFile(filepath.Join(dir, epochCheckpointFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, false, nil
	}
	if err != nil {
		return nil, nil, false, err
	}
	parsed, err := parseEpochCheckpoint(raw)
	if err != nil {
		return nil, raw, false, err
	}
	// As Kafka's cache loads its file: each entry assigned in turn, so
	// one that breaks the order drops the ones it conflicts with.
	for _, e := range parsed {
		es, _ = assignEpoch(es, e)
	}
	return es, raw, true, nil
}

// scanEpochs rebuilds the cache from the batches of every segment: an
// entry for each batch whose epoch is above the latest one so far (the
// rule of Kafka's LogSegment.recover). Batches of epoch -1 (written
// before leader epochs existed) add none.
func scanEpochs(segs []*segment) ([]epochEntry, error) {
	var es []epochEntry
	for _, s := range segs {
		limit := s.size.Load()
		for pos := int64(0); pos < limit; {
			h, err := s.header(pos, limit)
			if err != nil {
				return es, err
			}
			if e := h.PartitionLeaderEpoch; e >= 0 && (len(es) == 0 || e > es[len(es)-1].epoch) {
				es, _ = assignEpoch(es, epochEntry{e, h.BaseOffset})
			}
			pos += h.Size()
		}
	}
	return es, nil
}

// loadEpochs sets up the leader-epoch cache and the current epoch of a
// partition being loaded (see the comment at the top of this file), after
// its segments, log start, log end and recovery point are known.
// recovered lists the epoch changes met in the recovered segments, in
// order; wiped says every segment was deleted (the log ended below its
// checkpointed start). A failure to write the checkpoint is logged, not
// returned: the entry of the new epoch then waits for the first append,
// which writes the whole cache first and fails if it cannot.
func (p *Partition) loadEpochs(recovered []epochEntry, wiped bool, log *slog.Logger) {
	es, raw, ok, err := readEpochCheckpoint(p.dir)
	path := filepath.Join(p.dir, epochCheckpointFile)
	if !ok {
		rebuilt, serr := scanEpochs(p.segs)
		switch {
		case err != nil:
			log.Warn("leader-epoch-checkpoint unreadable: rebuilt from the batches", "file", path, "err", err, "entries", len(rebuilt))
		case len(rebuilt) > 0:
			log.Warn("leader-epoch-checkpoint missing: rebuilt from the batches", "file", path, "entries", len(rebuilt))
		}
		if serr != nil {
			log.Warn("leader-epoch-checkpoint: reading the batches failed; epochs from there on are not cached", "err", serr)
		}
		es = rebuilt
	} else {
		for _, e := range recovered {
			if len(es) == 0 || e.epoch > es[len(es)-1].epoch {
				es, _ = assignEpoch(es, e)
			}
		}
	}
	// The new leadership's epoch is above every epoch the cache held,
	// those that the truncations below drop too.
	cur := int32(0)
	if len(es) > 0 {
		cur = es[len(es)-1].epoch + 1
		if es[len(es)-1].epoch == math.MaxInt32 {
			// Kafka's epoch is an int32 and has no room for another
			// leadership (a Kafka data directory's checkpoint can get
			// there). Wrapping to a negative epoch stamped batches
			// with it and wrote a checkpoint that no load parses,
			// which lost every cached epoch; the last epoch goes on
			// instead, which only costs the detection of a
			// truncation by a later power cut.
			cur = math.MaxInt32
			log.Warn("leader epoch at its maximum: this leadership keeps it", "file", path, "epoch", cur)
		}
	}
	leo, start := p.leo.Load(), p.logStart.Load()
	n := len(es)
	if wiped {
		es = nil
	}
	// Kafka drops the entries starting at the log end too; one there
	// is an epoch with no record (an election, or an open before a
	// crash, with no append), which the new epoch's entry replaces
	// anyway, and keeping it leaves the file as it is on an idle open.
	es = truncateEpochsFromEnd(es, leo+1)
	droppedEnd := len(es) < n
	es = truncateEpochsFromStart(es, start)
	eager := droppedEnd || leo > p.recoveryPoint.Load()
	if eager {
		es, _ = assignEpoch(es, epochEntry{cur, leo})
	}
	p.epochs = es
	p.curEpoch.Store(cur)
	p.epochPending.Store(!eager)
	if b := formatEpochCheckpoint(es); !bytes.Equal(b, raw) {
		if err := WriteFileAtomic(path, b); err != nil {
			log.Warn("writing leader-epoch-checkpoint failed: retried before the next append", "file", path, "err", err)
			p.epochPending.Store(true)
		}
	}
}

// assignEpochLocked writes the entry of the current epoch, at offset base
// (the log end), before the first batch of the epoch is appended. The
// caller holds amu. The batch must not be written if this fails.
func (p *Partition) assignEpochLocked(base int64) error {
	p.epochFileMu.Lock()
	defer p.epochFileMu.Unlock()
	p.epochMu.RLock()
	es, _ := assignEpoch(p.epochs, epochEntry{p.curEpoch.Load(), base})
	p.epochMu.RUnlock()
	path := filepath.Join(p.dir, epochCheckpointFile)
	if err := WriteFileAtomic(path, formatEpochCheckpoint(es)); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	// The batch that follows rests on this entry being on disk.
	if err := p.store.probe.check(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	p.epochMu.Lock()
	p.epochs = es
	p.epochPending.Store(false)
	p.epochMu.Unlock()
	return nil
}

// truncateEpochsStart drops the cache entries below a new log start, as
// Kafka's truncateFromStart, and rewrites the checkpoint if that changed
// it. As in Kafka (which flushes this asynchronously) a failed write only
// leaves stale entries that the next load truncates again.
func (p *Partition) truncateEpochsStart(start int64) {
	p.epochFileMu.Lock()
	defer p.epochFileMu.Unlock()
	p.epochMu.Lock()
	old := p.epochs
	es := truncateEpochsFromStart(old, start)
	p.epochs = es
	p.epochMu.Unlock()
	if slices.Equal(es, old) {
		return
	}
	path := filepath.Join(p.dir, epochCheckpointFile)
	if err := WriteFileAtomic(path, formatEpochCheckpoint(es)); err != nil {
		p.log().Warn("writing leader-epoch-checkpoint after the log start moved failed", "file", path, "err", err)
	}
}

// epochView is the cache as clients see it: with the current epoch's
// entry at the log end while it waits for the epoch's first batch. The
// result must not be modified.
func (p *Partition) epochView() []epochEntry {
	p.epochMu.RLock()
	defer p.epochMu.RUnlock()
	es := p.epochs
	if p.epochPending.Load() {
		es, _ = assignEpoch(es, epochEntry{p.curEpoch.Load(), p.leo.Load()})
	}
	return es
}

// LeaderEpoch is the partition's current leader epoch: one above the
// latest epoch of its leader-epoch-checkpoint when it was opened, 0 for a
// partition created by this process. Appended batches carry it.
func (p *Partition) LeaderEpoch() int32 { return p.curEpoch.Load() }

// EndOffsetForEpoch answers OffsetForLeaderEpoch for epoch as Kafka's
// leader does (LeaderEpochFileCache.endOffsetFor): the largest epoch at or
// below it and the offset where that epoch ends (the log end for the
// current epoch). ok is false when Kafka answers UNDEFINED (-1, -1): epoch
// -1, or one above the current epoch.
func (p *Partition) EndOffsetForEpoch(epoch int32) (foundEpoch int32, endOffset int64, ok bool) {
	leo := p.leo.Load()
	e, off := epochEndOffset(p.epochView(), epoch, leo)
	if off < 0 {
		return -1, -1, false
	}
	return e, off, true
}

// EpochForOffset is the leader epoch that offset belongs to by the cache
// (Kafka's epochForOffset), -1 when no cached epoch starts at or below it.
func (p *Partition) EpochForOffset(offset int64) int32 {
	return epochOfOffset(p.epochView(), offset)
}

// EarliestEpoch is the epoch ListOffsets answers with the log start offset
// (Kafka's fetchOffsetByTimestamp for EARLIEST_TIMESTAMP): the first
// cached epoch if it starts at or below the log start, else -1.
func (p *Partition) EarliestEpoch() int32 {
	es := p.epochView()
	if len(es) > 0 && es[0].start <= p.logStart.Load() {
		return es[0].epoch
	}
	return -1
}

// LeaderEpochs returns the leader-epoch cache as clients see it.
func (p *Partition) LeaderEpochs() []EpochEntry {
	es := p.epochView()
	out := make([]EpochEntry, len(es))
	for i, e := range es {
		out[i] = EpochEntry{e.epoch, e.start}
	}
	return out
}
