package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segfs/segfs/logstore/record"
)

// Partition is one partition log. All methods are safe for concurrent use:
// appends are serialised by amu; readers snapshot the segment list under a
// short read lock and then read files without any lock.
type Partition struct {
	store *Store
	topic *Topic
	num   int32
	dir   string

	// Lock order: amu, then mu, then chMu.
	amu  sync.Mutex   // serialises appends, rolls, flushes
	mu   sync.RWMutex // guards segs and closed
	segs []*segment   // sorted by base offset; the last is active
	// closed: close released the partition's references to segs, whose
	// files are closed unless a reader still holds them. The segment
	// list stays (the store's methods go on answering from it), but no
	// reader may take a segment from it: a read that would answers
	// ErrClosed, or ends with what it has read.
	closed bool

	logStart   atomic.Int64
	savedStart atomic.Int64 // the log start the checkpoint on disk holds (DeleteRecords)
	// strayBelowStart: files that a restart loads as a segment may lie
	// below the log start (a deleted segment that could not be renamed
	// .deleted, a compaction swap left for the loader to complete), so
	// the log-start checkpoint must name the log start even where it is
	// the first segment's base in memory (writeLogStartsLocked), and
	// retention writes it at once.
	strayBelowStart atomic.Bool
	leo             atomic.Int64
	recoveryPoint   atomic.Int64
	gen             atomic.Uint64
	firstDirty      atomic.Int64 // compaction: end of the last cleaned range
	// compaction: the latest delete horizon of the tombstones the cleaner
	// kept (0: none; -1: not known yet, after a restart). Kafka's
	// latestDeleteHorizon: once it passes, the cleaner runs without new
	// dirty records to remove them.
	deleteHorizon atomic.Int64
	hasTxns       atomic.Bool // some segment has aborted transactions (txnindex.go)
	// The ongoing transactions (producer.go), nil if none: found at load
	// and replaced under amu when a marker ends one (WriteTxnMarker);
	// segfs takes no transactional batch, so none starts afterwards.
	unstable atomic.Pointer[[]txnSpan]

	cleanMu sync.Mutex // serialises retention and compaction passes

	// Leader epochs (epochs.go). epochs is replaced, never modified in
	// place, under epochMu; epochFileMu serialises the checkpoint's
	// writers and is taken before epochMu (after amu).
	epochFileMu  sync.Mutex
	epochMu      sync.RWMutex
	epochs       []epochEntry
	curEpoch     atomic.Int32 // this leadership's epoch, stamped on appended batches
	epochPending atomic.Bool  // curEpoch's entry waits for its first batch

	// Appender state (amu).
	fenceErr  error
	fenced    atomic.Bool // fenceErr != nil, read without amu (Fenced)
	lastFlush time.Time
	dec       record.Decoder
	batchBuf  []byte
	zbuf      []byte              // batchBuf recompressed for compression.type
	rc        record.Recompressor // for compression.type
	producers producerState

	chMu    sync.Mutex
	ch      chan struct{}
	watched bool

	// Open text views (a leaf lock): before a segment leaves segs, every
	// view takes the segments it has not seen yet (pinViews), so that a
	// segment rolled and deleted or rewritten between two reads of a view
	// is still read by it, not skipped.
	viewsMu sync.Mutex
	views   map[*TextView]struct{}

	// The journal of the mount's writers' unfinished lines (unfinished.go).
	unfinished unfinishedJournal
}

func (p *Partition) Topic() *Topic { return p.topic }
func (p *Partition) Num() int32    { return p.num }

// LogStartOffset is the first retained offset.
func (p *Partition) LogStartOffset() int64 { return p.logStart.Load() }

// LogEndOffset is the offset the next record will get (committed end).
func (p *Partition) LogEndOffset() int64 { return p.leo.Load() }

// Generation changes whenever the retained prefix of the log changes
// (retention delete, compaction swap, key.separator change): text positions
// of a new generation start again at the new log start. Appends do not
// change it.
func (p *Partition) Generation() uint64 { return p.gen.Load() }

// Changed returns a channel closed at the next change of the log (append,
// retention, compaction, truncation). Take a fresh one after each wake-up.
func (p *Partition) Changed() <-chan struct{} {
	p.chMu.Lock()
	defer p.chMu.Unlock()
	p.watched = true
	return p.ch
}

// notify wakes every Changed waiter. Nothing is allocated while nobody
// waits, which keeps the append path free of per-call garbage.
func (p *Partition) notify() {
	p.chMu.Lock()
	if p.watched {
		close(p.ch)
		p.ch = make(chan struct{})
		p.watched = false
	}
	p.chMu.Unlock()
}

// bumpGeneration starts a new text generation and wakes watchers.
func (p *Partition) bumpGeneration() {
	p.gen.Add(1)
	p.notify()
}

func (p *Partition) config() *Config { return p.topic.cfg.Load() }

func (p *Partition) active() *segment {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.segs[len(p.segs)-1]
}

// acquireSegments snapshots the segments from the one containing offset
// (floor by base offset) to the end, each with a reference taken; none
// once the partition is closed.
func (p *Partition) acquireSegments(offset int64) []*segment {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return nil
	}
	i := sort.Search(len(p.segs), func(i int) bool { return p.segs[i].base > offset }) - 1
	if i < 0 {
		i = 0
	}
	out := make([]*segment, 0, len(p.segs)-i)
	for _, s := range p.segs[i:] {
		s.acquire()
		out = append(out, s)
	}
	return out
}

// acquireSegment returns the segment holding offset (floor by base offset;
// the first when offset is below every base) with a reference taken. A
// per-request reader takes one segment at a time with it and segmentAfter,
// so that a read near the head of a long log pays for the segments it
// reads, not for every segment up to the log end (acquireSegments).
// It is nil once the partition is closed (the store closed): the segment
// files are closed then.
func (p *Partition) acquireSegment(offset int64) *segment {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return nil
	}
	i := sort.Search(len(p.segs), func(i int) bool { return p.segs[i].base > offset }) - 1
	s := p.segs[max(i, 0)]
	s.acquire()
	return s
}

// segmentAfter returns the segment that follows cur in the log now (the one
// with the smallest base offset above cur's), with a reference taken, or nil
// when cur is the last; in is false, and next nil, when cur has left the log
// (retention deleted it, or compaction swapped it, perhaps merged with its
// neighbours, for a segment whose base may be below cur's: what follows cur
// is then not known by base offset alone, and the caller starts again by
// offset). The segment list is looked at under the read lock, so a segment
// found in it is still open (the partition holds its own reference until
// the segment has left the list). Once the partition is closed, no
// segment follows cur and in is false: the caller that starts again by
// offset is told ErrClosed (acquireSegment is nil). It went on into the
// next segment, whose file the close had closed, and failed with "file
// already closed".
//
// A caller that read cur up to a size it loaded before this call must load
// cur's size again after it when next is not nil: the roll that made next
// published cur's last appends before next entered the list, and they are
// not in what the caller read.
func (p *Partition) segmentAfter(cur *segment) (next *segment, in bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return nil, false
	}
	i := sort.Search(len(p.segs), func(i int) bool { return p.segs[i].base > cur.base })
	if i == 0 || p.segs[i-1] != cur {
		return nil, false
	}
	if i == len(p.segs) {
		return nil, true
	}
	next = p.segs[i]
	next.acquire()
	return next, true
}

// acquireHolding is acquireSegment for a read from offset, which
// checkRange let in: ErrOffsetOutOfRange when every segment now begins
// above offset. Retention drops segments from the list before it moves the
// log start, so a read between the two found the new first segment and
// returned its batches, from an offset above the one asked for, where a
// consumer must be told its offset is out of range (and reset by its
// policy, or fail with none) rather than skip what retention removed.
func (p *Partition) acquireHolding(offset int64) (*segment, error) {
	s := p.acquireSegment(offset)
	if s == nil {
		return nil, p.closedErr()
	}
	if s.base > offset {
		base := s.base
		s.release()
		return nil, fmt.Errorf("%w: %d is below the first segment (base %d) of %s", ErrOffsetOutOfRange, offset, base, p.name())
	}
	return s, nil
}

// testHookSegmentRead, when set (by tests only), is called by ReadBelow and
// LookupTime when they have read a segment to its end and look for the
// next: the moment a roll, retention or a compaction swap changes what
// follows it.
var testHookSegmentRead func(s *segment)

// closedErr is the error of a read that needs a segment of a closed
// partition.
func (p *Partition) closedErr() error {
	return fmt.Errorf("%w: reading %s", ErrClosed, p.name())
}

func releaseAll(segs []*segment) {
	for _, s := range segs {
		s.release()
	}
}

func (p *Partition) name() string { return fmt.Sprintf("%s-%d", p.topic.name, p.num) }

// log is the store's logger with p named as every log line of segfs names
// a partition (fs, fetch): topic=T partition=N. Lines here said
// partition=T-N, so one grep could not find a partition's lines.
func (p *Partition) log() *slog.Logger {
	return p.store.log.With("topic", p.topic.name, "partition", p.num)
}

// AppendLines appends text (complete '\n'-terminated lines only) as one
// batch (several if it exceeds max.message.bytes per batch), one record per
// line with CreateTime = now, keys split on key.separator. A single line
// whose record exceeds max.message.bytes fails the whole call with
// ErrMessageTooLarge and appends nothing; on a compacted topic a line
// without a key fails with ErrInvalidRecord. When it returns nil the lines
// are in the log (written to the segment file) and visible to readers.
func (p *Partition) AppendLines(text []byte) (first, last int64, err error) {
	first, last, _, err = p.AppendLinesAfter(nil, text)
	return first, last, err
}

// AppendLinesAfter is AppendLines for the lines of head followed by those
// of text, as if they were one text: the mount passes the line a WRITE
// completes (begun in an earlier WRITE) as head and the rest of the WRITE
// as text, which spares it joining the two in one buffer. head, when not
// empty, must end in '\n' too. stored is the number of bytes of head and
// text whose lines are in the log: all of them when err is nil, and
// perhaps a prefix of whole lines when a text split into several batches
// failed after the first (ENOSPC on the second batch), so that the caller
// can answer a short write instead of failing bytes that were stored.
func (p *Partition) AppendLinesAfter(head, text []byte) (first, last int64, stored int, err error) {
	if len(head)+len(text) == 0 {
		return -1, -1, 0, nil
	}
	cfg := p.config()
	if err := checkLines(head, text, cfg); err != nil {
		return -1, -1, 0, err
	}
	p.amu.Lock()
	defer p.amu.Unlock()
	return p.appendLinesLocked(head, text, -1, cfg, nil)
}

// checkLines checks the lines of head and text as AppendLinesAfter takes
// them before anything is written: each piece, when not empty, ends in
// '\n'; a line too long (or, on a compacted topic, without a key) fails
// the call before any batch is appended. A line up to MaxLineBytes fits a
// batch of its own whatever its framing; a longer one is measured as that
// batch. FirstLongLine jumps a window of MaxLineBytes at a time, so a
// write of short lines is not walked line by line.
func checkLines(head, text []byte, cfg *Config) error {
	if (len(head) > 0 && head[len(head)-1] != '\n') || (len(text) > 0 && text[len(text)-1] != '\n') {
		return fmt.Errorf("%w: text must end with a newline", ErrInvalidRecord)
	}
	sep := []byte(cfg.KeySeparator)
	for _, t := range [][]byte{head, text} {
		for i := 0; ; {
			j := record.FirstLongLine(t[i:], 0, int(cfg.MaxLineBytes()))
			if j < 0 {
				break
			}
			i += j
			k := i + bytes.IndexByte(t[i:], '\n') + 1
			if err := checkLongLine(t[i:k], sep, cfg); err != nil {
				return err
			}
			i = k
		}
		if cfg.Compact() {
			for rest := t; len(rest) > 0; {
				j := bytes.IndexByte(rest, '\n')
				if err := cfg.KeyError(rest[:j]); err != nil {
					return err
				}
				rest = rest[j+1:]
			}
		}
	}
	return nil
}

// appendFail, set by tests, fails the append of a batch of lines: stored
// is the bytes of the call's lines stored before it.
var appendFail func(stored int) error

// appendLinesLocked appends the lines of head and text, checked by
// checkLines, as AppendLinesAfter does. Their CreateTime is ts (Unix ms),
// or the time of each batch's append when ts < 0. before, if not nil, is
// called once the first batch is encoded, before it is appended, with
// the log end after it and whether it holds all the lines; an error from
// it fails the call with nothing appended. The caller holds amu.
func (p *Partition) appendLinesLocked(head, text []byte, ts int64, cfg *Config, before func(firstEnd int64, all bool) error) (first, last int64, stored int, err error) {
	sep := []byte(cfg.KeySeparator)
	// A batch may not exceed max.message.bytes nor segment.bytes (Kafka
	// refuses a batch larger than a segment), so a long write is split.
	limit := min(cfg.MaxMessageBytes, cfg.SegmentBytes)
	// Each batch takes as many lines as fit under the limit; the first
	// holds all of a write below it, the mount's common case.
	first = -1
	// Lines an earlier run left in the journal of unfinished lines, which
	// the open could not recover (a full disk), go first, or this append
	// fails with why they cannot (unfinished.go, recoverPendingLocked).
	if err := p.recoverPendingLocked(); err != nil {
		return first, last, 0, err
	}
	for len(head)+len(text) > 0 {
		now := p.store.now().UnixMilli()
		create := now
		if ts >= 0 {
			create = ts
		}
		var used, n int
		p.batchBuf, n, used = record.AppendLinesMax(p.batchBuf[:0], head, text, create, sep, int(limit))
		if used == 0 {
			// checkLongLine let through a line that does not fit alone.
			return first, last, stored, fmt.Errorf("%w: a line does not fit a batch of %d bytes", ErrMessageTooLarge, limit)
		}
		if before != nil {
			if err := before(p.leo.Load()+int64(n), used == len(head)+len(text)); err != nil {
				return first, last, stored, err
			}
			before = nil
		}
		var f, l int64
		var err error
		if appendFail != nil {
			err = appendFail(stored)
		}
		if err == nil {
			f, l, err = p.appendEncodedLocked(p.batchBuf, int64(used), now, sep, cfg)
		}
		if int64(cap(p.batchBuf)) > 2*limit {
			p.batchBuf = nil // keep no buffer larger than the batches made
		}
		if err != nil {
			return first, last, stored, err
		}
		if first < 0 {
			first = f
		}
		last = l
		stored += used
		if used >= len(head) {
			text, head = text[used-len(head):], nil
		} else {
			head = head[used:]
		}
	}
	return first, last, stored, nil
}

// checkLongLine refuses line ('\n'-ended), longer than MaxLineBytes, if
// the batch of it alone exceeds max.message.bytes or segment.bytes.
func checkLongLine(line, sep []byte, cfg *Config) error {
	one, _ := record.AppendLines(nil, line, 0, sep)
	if int64(len(one)) > cfg.MaxMessageBytes {
		return fmt.Errorf("%w: a line of %d bytes exceeds max.message.bytes=%d", ErrMessageTooLarge, len(line)-1, cfg.MaxMessageBytes)
	}
	if int64(len(one)) > cfg.SegmentBytes {
		return fmt.Errorf("%w: a line of %d bytes makes a batch larger than segment.bytes=%d", ErrBatchTooLarge, len(line)-1, cfg.SegmentBytes)
	}
	return nil
}

// appendEncodedLocked appends b, a batch AppendLines encoded from textLen
// bytes of lines at time now, and returns its first and last offsets. The
// caller holds amu.
func (p *Partition) appendEncodedLocked(b []byte, textLen, now int64, sep []byte, cfg *Config) (first, last int64, err error) {
	h, err := record.ParseHeader(b)
	if err != nil {
		return -1, -1, err
	}
	if int64(len(b)) > cfg.SegmentBytes {
		return -1, -1, fmt.Errorf("%w: batch of %d bytes exceeds segment.bytes=%d", ErrBatchTooLarge, len(b), cfg.SegmentBytes)
	}
	if cfg.MessageTimestampType == "LogAppendTime" {
		record.SetLogAppendTime(b, now)
		h.MaxTimestamp = now
	}
	if codec, ok := cfg.Codec(); ok && codec != record.CodecNone {
		if p.zbuf, err = p.rc.Recompress(p.zbuf[:0], b, codec); err != nil {
			return -1, -1, err
		}
		// Incompressible lines (random bytes, base64) come out larger
		// than they went in, and a batch the encoder cut to the limits
		// can then exceed max.message.bytes or segment.bytes. A broker
		// would refuse a producer's such batch, but the mount checked
		// these lines as fitting before it stored any of the write, so
		// the batch is stored as it is, uncompressed.
		if int64(len(p.zbuf)) <= min(cfg.MaxMessageBytes, cfg.SegmentBytes) {
			b = p.zbuf
			if h, err = record.ParseHeader(b); err != nil {
				return -1, -1, err
			}
		}
	}
	var st record.TextStats
	if len(sep) == 0 {
		// Without a key separator every line became one record whose
		// value is the line: the stats are known without decoding the
		// batch again (that decode was a third of the append's CPU).
		st.Lines = int64(h.LastOffsetDelta) + 1
		st.ValueBytes = textLen - st.Lines
	} else if st, err = p.dec.Stats(b, 0); err != nil {
		return -1, -1, err
	}
	base, err := p.appendLocked(b, &h, st, cfg)
	if err != nil {
		return -1, -1, err
	}
	return base, base + int64(h.LastOffsetDelta), nil
}

// appendLocked assigns offsets to one validated batch and appends it,
// rolling first if needed. The caller holds amu.
func (p *Partition) appendLocked(b []byte, h *record.Header, st record.TextStats, cfg *Config) (int64, error) {
	if p.fenceErr != nil {
		return 0, &fencedError{cause: p.fenceErr}
	}
	if p.store.closed.Load() {
		return 0, ErrClosed
	}
	// The callers retried a pending recovery of unfinished lines before
	// encoding their batch (it appends, reusing batchBuf and zbuf), and
	// return its error: none can be left here but its own appends'.
	if u := &p.unfinished; len(u.unrecovered) > 0 && !u.recovering {
		return 0, errors.New("unfinished lines of an earlier run not recovered yet")
	}
	base := p.leo.Load()
	if p.epochPending.Load() {
		// The first batch of this leadership: its epoch's entry goes to
		// disk first (epochs.go). Nothing is written if that fails.
		if err := p.assignEpochLocked(base); err != nil {
			return 0, err
		}
	}
	epoch := p.curEpoch.Load()
	record.SetBaseOffset(b, base)
	record.SetLeaderEpoch(b, epoch)
	h.BaseOffset = base
	h.PartitionLeaderEpoch = epoch
	// While a writer of the mount has an unfinished line, the journal
	// records the log end this batch reaches before the batch is written
	// (unfinished.go): after a power cut, recovery then tells a journal
	// behind the log. Nothing is written when no line is pending.
	if err := p.unfinished.mark(p, h.NextOffset()); err != nil {
		return 0, err
	}
	stored := false
	defer func() {
		if !stored {
			p.unfinished.unmark(p.leo.Load())
		}
	}()
	if err := p.maybeRollLocked(int64(len(b)), h, cfg); err != nil {
		var wf *writeFailure
		if errors.As(err, &wf) && !wf.fatal {
			// The new segment could not be created (ENOSPC, EDQUOT): the
			// old one is sealed and intact, and the next append retries
			// the roll.
			return 0, fmt.Errorf("roll: %w", wf.err)
		}
		return 0, p.failLocked(err)
	}
	seg := p.active()
	if err := seg.appendBatch(b, h, st, cfg); err != nil {
		var wf *writeFailure
		if errors.As(err, &wf) && !wf.fatal {
			// The file is back at its previous size: this write failed
			// cleanly (ENOSPC, EDQUOT) and later ones may succeed.
			return 0, fmt.Errorf("append to %s: %w", seg.path(logSuffix), wf.err)
		}
		return 0, p.failLocked(err)
	}
	if end := seg.size.Load(); end-seg.kickedTo >= writebackStep {
		p.store.kickWriteback(seg, seg.kickedTo, end)
		seg.kickedTo = end
	}
	p.leo.Store(h.NextOffset())
	stored = true
	if h.ProducerID >= 0 && !h.Control() {
		// A marker's state change is WriteTxnMarker's.
		p.producers.update(h)
	}
	if p.leo.Load()-p.recoveryPoint.Load() >= cfg.FlushMessages {
		if err := p.flushLocked(); err != nil {
			p.notify()
			return 0, err
		}
	}
	p.notify()
	return base, nil
}

// Fenced reports whether a failed write or fsync fenced the partition:
// its log may end in a batch whose pages were lost.
func (p *Partition) Fenced() bool { return p.fenced.Load() }

// failLocked fences the partition: after a failed write or fsync the state
// of the file is unknown, so appends stop until a restart recovers it.
func (p *Partition) failLocked(err error) error {
	if p.fenceErr == nil {
		p.fenceErr = err
		p.fenced.Store(true)
		p.log().Error("partition fenced", "err", err)
	}
	return &fencedError{cause: err}
}

// maybeRollLocked applies Kafka's roll rules (KAFKA-FORMAT.md §5) before an
// append of size bytes.
func (p *Partition) maybeRollLocked(size int64, h *record.Header, cfg *Config) error {
	seg := p.active()
	cur := seg.size.Load()
	reason := ""
	switch {
	case cur > cfg.SegmentBytes-size:
		reason = "segment.bytes"
	case cur > 0 && p.timeWaited(seg, h.MaxTimestamp) > cfg.MaxSegmentMs()-seg.rollJitter:
		reason = "segment.ms"
	case seg.oidx.Full():
		reason = "offset index full"
	case seg.tidx.Full():
		reason = "time index full"
	case h.LastOffset()-seg.base > 1<<31-1 || h.LastOffset() < seg.base:
		reason = "relative offset overflow"
	}
	if reason == "" || cur == 0 {
		return nil
	}
	return p.rollLocked(reason, cfg)
}

// timeWaited follows Kafka: record time since the segment's first batch,
// or wall time since the segment was created when it has no timestamps.
func (p *Partition) timeWaited(seg *segment, maxTs int64) int64 {
	if seg.firstBatchTs >= 0 && maxTs >= 0 {
		return maxTs - seg.firstBatchTs
	}
	return p.store.now().Sub(seg.created).Milliseconds()
}

// rollLocked seals the active segment and starts a new one at the log end.
// The sealed segment is fsynced, so the recovery point moves to the new
// base and recovery after a crash rescans only the new segment.
func (p *Partition) rollLocked(reason string, cfg *Config) error {
	old := p.active()
	// The seal fsyncs the segment: the journal first, as flushLocked
	// does, so that its batches are not durable without their entries.
	p.syncUnfinished()
	if err := old.seal(); err != nil {
		return err
	}
	// The recovery point moves past the sealed segment below: only if its
	// fsyncs really made it durable.
	if err := p.store.probe.check(); err != nil {
		return err
	}
	ns, err := createSegment(p.dir, p.leo.Load(), cfg)
	if err != nil {
		// Nothing was written to the log: a retry may succeed.
		return &writeFailure{err: err}
	}
	p.mu.Lock()
	p.segs = append(p.segs, ns)
	p.mu.Unlock()
	p.recoveryPoint.Store(ns.base)
	p.store.markDirty()
	p.producers.snapshot(p.dir, ns.base)
	p.log().Debug("rolled segment", "reason", reason, "base", ns.base)
	return nil
}

// Flush makes everything appended so far durable (data, then indexes, then
// the recovery point). A failure fences the partition.
func (p *Partition) Flush() error {
	p.amu.Lock()
	defer p.amu.Unlock()
	return p.flushLocked()
}

func (p *Partition) flushLocked() error {
	if p.fenceErr != nil {
		return &fencedError{cause: p.fenceErr}
	}
	leo := p.leo.Load()
	if leo == p.recoveryPoint.Load() {
		return nil
	}
	// Journal entries before the batches they ended lines with: after a
	// power cut, a durable batch that ended a writer's unfinished line
	// must not come back with the journal's older entry, which would
	// make the line's start a record a second time.
	p.syncUnfinished()
	if err := p.active().flush(); err != nil {
		// After a failed fsync the kernel may have dropped the dirty pages;
		// a retry could report success for data that never reached disk.
		return p.failLocked(err)
	}
	if err := p.store.probe.check(); err != nil {
		return p.failLocked(err)
	}
	p.recoveryPoint.Store(leo)
	p.unfinished.shrinkFlushed(p)
	p.lastFlush = p.store.now()
	p.store.markDirty()
	return nil
}

// syncUnfinished makes the journal of unfinished lines durable before
// an fsync of the segment (amu held). A failure leaves the journal to be
// rewritten before its next entry; the batches are made durable all the
// same, and a power cut before the journal is synced is then told at the
// next open by the log ends its entries record (unfinished.go).
func (p *Partition) syncUnfinished() {
	if err := p.unfinished.sync(p); err != nil {
		p.log().Warn("journal of unfinished lines not synced", "err", err)
		p.unfinished.mu.Lock()
		p.unfinished.broken = true
		p.unfinished.mu.Unlock()
	}
}

// FileSlice is a byte range of a segment file.
type FileSlice struct {
	File *os.File // never read with Read/Seek: use pread / sendfile at Pos
	Pos  int64
	Len  int64
}

// ReadResult holds file ranges of whole batches. The segment files stay
// open (even if retention deletes them) until Release.
type ReadResult struct {
	Slices []FileSlice
	Bytes  int64 // sum of Slices[i].Len
	Next   int64 // the offset after the last batch returned (0 when Bytes is 0)
	segs   []*segment
	once   sync.Once

	// Backing arrays for Slices and segs: a read takes one or two
	// segments but for the largest maxBytes over the smallest segments.
	sliceBuf [2]FileSlice
	segBuf   [2]*segment
}

// Release drops the references taken by Read. Safe to call twice.
func (r *ReadResult) Release() {
	if r == nil {
		return
	}
	r.once.Do(func() { releaseAll(r.segs) })
}

// LastStableOffset is the offset below which every transaction is decided
// (Kafka's UnifiedLog.lastStableOffset on a single node, where the high
// watermark is the log end): the first offset of the earliest ongoing
// transaction, but not below the log start, or the log end if no
// transaction is open.
func (p *Partition) LastStableOffset() int64 {
	leo := p.leo.Load()
	fu := p.firstUnstable()
	if fu < 0 || fu >= leo {
		return leo
	}
	return max(fu, p.logStart.Load())
}

// Read returns whole batches starting with the batch that contains offset
// (its first record may be below offset), across segment boundaries, up to
// maxBytes — except that the first batch is always whole (KIP-74) — and
// never past the committed end. offset == LogEndOffset gives an empty
// result; offset outside [LogStartOffset, LogEndOffset] is
// ErrOffsetOutOfRange.
func (p *Partition) Read(offset int64, maxBytes int64) (*ReadResult, error) {
	return p.ReadBelow(offset, maxBytes, math.MaxInt64)
}

// txnSpan is an ongoing transaction: its first offset, and the last
// offset of its producer's data in the log.
type txnSpan struct{ first, last int64 }

// firstUnstable is the first offset of the earliest ongoing transaction
// whose producer still has data at or past the log start, -1 if none. Kafka
// evicts a producer, and its ongoing transaction with it, once the log
// start passes the producer's last data offset
// (ProducerStateManager.truncateHead): retention then frees
// read_committed consumers, which a transaction that nothing can end
// would otherwise stop for good.
func (p *Partition) firstUnstable() int64 {
	spans := p.unstable.Load()
	if spans == nil {
		return -1
	}
	start := p.logStart.Load()
	first := int64(-1)
	for _, s := range *spans {
		if s.last >= start && (first < 0 || s.first < first) {
			first = s.first
		}
	}
	return first
}

// ReadBelow is Read that stops before the first batch whose base offset is
// at or past upper: a read_committed fetch reads below the last stable
// offset, as Kafka's does. offset >= upper gives an empty result.
//
// It takes a reference on one segment at a time: the one holding offset,
// then the next only when the read goes on past the current one. Those that
// contribute bytes stay referenced until the caller releases the result;
// the others are released as the read leaves them. Without concurrent
// changes of the segment list the result is the one a snapshot of the whole
// list gives. A segment that retention or compaction swaps out while the
// read runs stays readable through its reference; if the read has to go on
// past a segment that has left the list, it ends there when it has bytes
// (the next read starts from Next, in the new list), and starts again by
// offset when it has none.
func (p *Partition) ReadBelow(offset, maxBytes, upper int64) (*ReadResult, error) {
	if err := p.checkRange(offset); err != nil {
		return nil, err
	}
	res := &ReadResult{}
	if offset == p.leo.Load() || offset >= upper {
		return res, nil
	}
	res.Slices = res.sliceBuf[:0]
	res.segs = res.segBuf[:0]
	s, err := p.acquireHolding(offset)
	if err != nil {
		return nil, err
	}
	for {
		limit := s.size.Load()
		var pos int64
		var h record.Header // the header at pos, when have
		have := false
		if res.Bytes == 0 {
			var err error
			pos, h, have, err = s.findBatch(offset, limit)
			if err != nil {
				s.release()
				res.Release()
				return nil, err
			}
			if !have {
				pos = limit // nothing at or past offset here: go on
			}
		}
		end := pos
		for end < limit {
			if !have {
				var err error
				h, err = s.header(end, limit)
				if err != nil {
					if res.Bytes == 0 && end == pos {
						s.release()
						res.Release()
						return nil, err
					}
					break // return what precedes the damage; the next read reports it
				}
			}
			have = false
			if h.BaseOffset >= upper {
				break
			}
			if res.Bytes+(end-pos) > 0 && res.Bytes+(end-pos)+h.Size() > maxBytes {
				break
			}
			end += h.Size()
			res.Next = h.NextOffset()
		}
		used := end > pos
		if used {
			res.Slices = append(res.Slices, FileSlice{File: s.log, Pos: pos, Len: end - pos})
			res.Bytes += end - pos
			res.segs = append(res.segs, s)
		}
		if end < limit || (res.Bytes > 0 && res.Bytes >= maxBytes) {
			if !used {
				s.release()
			}
			return res, nil
		}
		if testHookSegmentRead != nil {
			testHookSegmentRead(s)
		}
		next, in := p.segmentAfter(s)
		if next != nil && s.size.Load() != limit {
			// s grew and rolled while it was read: its last batches come
			// before next's. With bytes, end here (the next read starts
			// at them); without, read s again up to its final size.
			next.release()
			if res.Bytes > 0 {
				if !used {
					s.release()
				}
				return res, nil
			}
			continue
		}
		if !used {
			s.release()
		}
		switch {
		case next != nil:
			s = next
		case !in && res.Bytes == 0:
			if s, err = p.acquireHolding(offset); err != nil {
				return nil, err
			}
		default:
			return res, nil
		}
	}
}

func (p *Partition) checkRange(offset int64) error {
	if offset < p.logStart.Load() || offset > p.leo.Load() {
		return fmt.Errorf("%w: %d not in [%d, %d] of %s", ErrOffsetOutOfRange, offset, p.logStart.Load(), p.leo.Load(), p.name())
	}
	return nil
}

// OffsetForTime returns the first offset whose record timestamp is >= ts,
// or ok=false if there is none (KAFKA-FORMAT.md §4.4).
func (p *Partition) OffsetForTime(ts int64) (int64, bool, error) {
	off, _, ok, err := p.LookupTime(ts)
	return off, ok, err
}

// LookupTime is OffsetForTime that also returns the found record's own
// timestamp (ListOffsets answers with it). It takes a reference on one
// segment at a time (see ReadBelow): the search usually ends in the first
// segment whose max timestamp reaches ts.
func (p *Partition) LookupTime(ts int64) (offset, recordTs int64, ok bool, err error) {
	start := p.logStart.Load()
	var dec record.Decoder
	// A pooled buffer: a time/T lookup reads a batch or two, and a fresh
	// buffer each time was 160 KB of garbage per lookup.
	buf := getBuf()
	defer func() { putBuf(buf) }()
	s := p.acquireSegment(start)
	if s == nil {
		return 0, 0, false, p.closedErr()
	}
	for s != nil {
		limit := s.size.Load()
		var got, gotTs int64
		got, gotTs, buf, err = s.lookupTime(ts, start, limit, &dec, buf)
		if err != nil {
			s.release()
			return 0, 0, false, err
		}
		if got >= 0 {
			s.release()
			return got, gotTs, true, nil
		}
		if testHookSegmentRead != nil {
			testHookSegmentRead(s)
		}
		next, in := p.segmentAfter(s)
		if (next != nil || !in) && s.size.Load() != limit {
			// s grew and rolled meanwhile (and may have left the log
			// since: a compaction pass can swap it out at once): its
			// last batches come before what follows it, and s.next,
			// from which the search goes on once s has left the log,
			// is past them. Search it again to its final size; the
			// reference keeps its file readable.
			if next != nil {
				next.release()
			}
			continue
		}
		s.release()
		if !in {
			// s left the log (retention, a compaction swap): go on from
			// the segment that holds its next offset now. That is one
			// after s, or the one compaction swapped in for s (perhaps
			// with segments before it): it holds a subset of records
			// searched already, and searching them again finds nothing.
			if next = p.acquireSegment(s.next.Load()); next == nil {
				return 0, 0, false, p.closedErr()
			}
		}
		s = next
	}
	return 0, 0, false, nil
}

// lookupTime searches s below limit for the first record at or after
// start whose timestamp is >= ts: got is -1 when there is none. buf is the
// scan buffer, returned because the scan may grow it.
func (s *segment) lookupTime(ts, start, limit int64, dec *record.Decoder, buf []byte) (got, gotTs int64, _ []byte, err error) {
	if s.maxTs.Load() < ts {
		return -1, -1, buf, nil
	}
	from := max(s.tidx.Lookup(ts).Offset, start)
	pos, _, found, err := s.findBatch(from, limit)
	if err != nil || !found {
		return -1, -1, buf, err
	}
	sc := newScanner(s.log, s.path(logSuffix), pos, limit, buf)
	for {
		buf = sc.buf[:0] // ensure may have grown it
		_, b, err := sc.next()
		if err == io.EOF {
			return -1, -1, buf, nil
		}
		if err != nil {
			return -1, -1, buf, err
		}
		h, err := record.ParseHeader(b)
		if err != nil {
			return -1, -1, buf, err
		}
		if h.MaxTimestamp < ts || h.LastOffset() < start {
			continue
		}
		if err := record.Validate(b); err != nil {
			return -1, -1, buf, &CorruptError{Path: s.path(logSuffix), Pos: sc.pos - int64(len(b)), Err: err}
		}
		got, gotTs = -1, -1
		errStop := errors.New("stop")
		err = dec.Records(b, func(r *record.Record) error {
			if r.Timestamp >= ts && r.Offset >= start {
				got, gotTs = r.Offset, r.Timestamp
				return errStop
			}
			return nil
		})
		if err != nil && err != errStop {
			return -1, -1, buf, err
		}
		if got >= 0 {
			return got, gotTs, buf, nil
		}
	}
}

// MaxTimestamp returns the largest timestamp in the log and the offset of
// the record carrying it (ListOffsets -3), ok=false for an empty log: see
// MaxTimestampAt.
func (p *Partition) MaxTimestamp() (int64, int64, bool, error) {
	ts, off, _, ok, err := p.MaxTimestampAt()
	return ts, off, ok, err
}

// MaxTimestampAt returns the largest timestamp in the log, the offset of
// the record carrying it and the leader epoch of its batch (-1 if the
// batch has none), ok=false for an empty log. As Kafka's
// UnifiedLog.fetchOffsetByTimestamp(MAX_TIMESTAMP) finds it, the first
// batch whose max timestamp is the largest decides: the answer is its
// first record with that timestamp, and nothing when it has none. That
// is an empty batch the cleaner kept as an active producer's last (its
// header keeps the max timestamp of the records it held, as Kafka's
// RETAIN_EMPTY header does): Kafka answers no offset even when a later
// record has the same timestamp.
//
// Kafka looks at every segment it still has and does not filter by the
// log start offset: after DeleteRecords past that batch, the answer is an
// offset below the log start (until retention deletes the segment holding
// it). segfs did the same search from the log start: it skipped the
// deleted batch and answered a later one of the segment with the same
// timestamp, or nothing.
//
// The segment is chosen under the read lock, and only it is referenced.
func (p *Partition) MaxTimestampAt() (int64, int64, int32, bool, error) {
	var best *segment
	var ts int64
	p.mu.RLock()
	if p.closed {
		p.mu.RUnlock()
		return -1, -1, -1, false, p.closedErr()
	}
	for _, s := range p.segs {
		if t := s.maxTs.Load(); t >= 0 && (best == nil || t > ts) {
			best, ts = s, t
		}
	}
	if best != nil {
		best.acquire()
	}
	p.mu.RUnlock()
	if best == nil {
		return -1, -1, -1, false, nil
	}
	defer best.release()
	limit := best.size.Load()
	pos, _, found, err := best.findBatch(best.tidx.Lookup(ts).Offset, limit)
	if err != nil || !found {
		return -1, -1, -1, false, err
	}
	buf := getBuf()
	defer func() { putBuf(buf) }()
	sc := newScanner(best.log, best.path(logSuffix), pos, limit, buf)
	for {
		buf = sc.buf[:0] // ensure may have grown it
		_, b, err := sc.next()
		if err == io.EOF {
			return -1, -1, -1, false, nil
		}
		if err != nil {
			return -1, -1, -1, false, err
		}
		h, err := record.ParseHeader(b)
		if err != nil {
			return -1, -1, -1, false, err
		}
		if h.MaxTimestamp != ts {
			continue
		}
		if err := record.Validate(b); err != nil {
			return -1, -1, -1, false, &CorruptError{Path: best.path(logSuffix), Pos: sc.pos - int64(len(b)), Err: err}
		}
		got := int64(-1)
		errStop := errors.New("stop")
		var dec record.Decoder
		err = dec.Records(b, func(r *record.Record) error {
			if r.Timestamp == ts {
				got = r.Offset
				return errStop
			}
			return nil
		})
		if err != nil && err != errStop {
			return -1, -1, -1, false, err
		}
		if got < 0 {
			return -1, -1, -1, false, nil
		}
		return ts, got, max(h.PartitionLeaderEpoch, -1), true, nil
	}
}

// Status is a summary for the status file and dump tools.
type Status struct {
	LogStartOffset          int64
	LogEndOffset            int64
	Segments                int
	SizeBytes               int64 // sum of .log sizes
	FirstTimestamp          int64 // -1 when empty
	LastTimestamp           int64 // -1 when empty
	ActiveSegmentBaseOffset int64
	RecoveryPoint           int64
}

// Status summarises the partition. Segments and SizeBytes count the .log
// files on disk, as Size and DescribeLogDirs do: the closed segments
// wholly below the log start that DeleteRecords left for the next
// retention pass are in them until that pass deletes them. They were
// left out, so status disagreed with DescribeLogDirs and `du` of the
// partition directory for up to a retention check interval. Timestamps
// are those of the first retained record and of the last batch.
//
// Once the partition is closed (the store closed under the caller) it
// answers ErrClosed, as the reads do, and the error of a read of the first
// or last batch that fails: it answered first.timestamp=-1 and
// last.timestamp=-1 then, as for an empty log.
func (p *Partition) Status() (Status, error) {
	st := Status{
		LogStartOffset: p.logStart.Load(),
		LogEndOffset:   p.leo.Load(),
		FirstTimestamp: -1,
		LastTimestamp:  -1,
		RecoveryPoint:  p.recoveryPoint.Load(),
	}
	// Counts and sizes under the read lock; a reference on the segment
	// of the last batch only, read below.
	var last *segment
	p.mu.RLock()
	if p.closed {
		p.mu.RUnlock()
		return Status{}, p.closedErr()
	}
	st.Segments = len(p.segs)
	for _, s := range p.segs {
		st.SizeBytes += s.size.Load()
	}
	st.ActiveSegmentBaseOffset = p.segs[len(p.segs)-1].base
	if st.LogEndOffset > st.LogStartOffset {
		for i := len(p.segs) - 1; i >= 0; i-- {
			if p.segs[i].lastBatchPos.Load() >= 0 {
				last = p.segs[i]
				last.acquire()
				break
			}
		}
	}
	p.mu.RUnlock()
	if st.LogEndOffset <= st.LogStartOffset {
		return st, nil
	}
	if last != nil {
		h, err := last.header(last.lastBatchPos.Load(), last.size.Load())
		last.release()
		if err != nil {
			return Status{}, err
		}
		st.LastTimestamp = h.MaxTimestamp
	}
	// The first retained record is in the last segment starting at or
	// below the log start, or a later one (after a gap): one segment at a
	// time from there (see ReadBelow).
	ts, err := p.firstTimestamp(st.LogStartOffset)
	if err != nil {
		return Status{}, err
	}
	st.FirstTimestamp = ts
	return st, nil
}

// firstTimestamp is the timestamp of the first record at or past start,
// -1 if none is found. It goes on past batches that hold no record at or
// past start: the empty batch the cleaner keeps as an idempotent
// producer's last (RETAIN_EMPTY) may be the first of the log, and status
// showed first.timestamp=-1 for a log of records then.
func (p *Partition) firstTimestamp(start int64) (int64, error) {
	var dec record.Decoder
	errStop := errors.New("stop")
	var b []byte
	from := start // the first offset not searched yet
	s := p.acquireSegment(from)
	if s == nil {
		return -1, p.closedErr()
	}
	for {
		limit := s.size.Load()
		pos, _, found, err := s.findBatch(from, limit)
		if err != nil {
			s.release()
			return -1, err
		}
		for found && pos < limit {
			h, err := s.header(pos, limit)
			if err != nil {
				s.release()
				return -1, err
			}
			b = slices.Grow(b[:0], int(h.Size()))[:h.Size()]
			if err := s.readFull(b, pos); err != nil {
				s.release()
				return -1, err
			}
			ts, got := int64(-1), false
			err = dec.Records(b, func(r *record.Record) error {
				if r.Offset >= start {
					ts, got = r.Timestamp, true
					return errStop
				}
				return nil
			})
			if err != nil && err != errStop {
				s.release()
				return -1, &CorruptError{Path: s.path(logSuffix), Pos: pos, Err: err}
			}
			if got {
				s.release()
				return ts, nil
			}
			from, pos = h.NextOffset(), pos+h.Size()
		}
		next, in := p.segmentAfter(s)
		if next != nil && s.size.Load() != limit {
			// s grew and rolled while it was searched: its last batches
			// come before next's (see segmentAfter).
			next.release()
			continue
		}
		s.release()
		switch {
		case in && next == nil:
			return -1, nil // the log end
		case !in:
			// s left the log: go on from the segment holding from now.
			if next = p.acquireSegment(from); next == nil {
				return -1, p.closedErr()
			}
		}
		s = next
	}
}

// Size is the bytes of the partition's .log files, as Kafka's log.size
// (what DescribeLogDirs reports): every segment of the log, including
// closed ones wholly below the log start that the next retention pass
// deletes (they are still on disk), but not the files retention or
// compaction renamed .deleted. It sums the committed sizes the append,
// retention and compaction paths keep, under the segment list's read lock
// only: no file is stat'ed, and appends (which hold amu) never wait for it.
func (p *Partition) Size() int64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var n int64
	for _, s := range p.segs {
		n += s.size.Load()
	}
	return n
}

// SegmentFile names one raw file of the partition (.log, .index, .timeindex).
type SegmentFile struct {
	Name string
	Size int64 // committed size for the active .log; used size for indexes
}

// SegmentFiles lists the raw files, sorted by name: those of every segment
// on disk, including the closed ones wholly below the log start that the
// next retention pass deletes, as Status counts them.
// It reads no file, and takes no reference: the segments of the list are
// open while it holds the read lock.
func (p *Partition) SegmentFiles() []SegmentFile {
	p.mu.RLock()
	out := make([]SegmentFile, 0, 3*len(p.segs))
	for _, s := range p.segs {
		n := segmentName(s.base)
		out = append(out,
			SegmentFile{Name: n + indexSuffix, Size: segmentFileSize(s, indexSuffix)},
			SegmentFile{Name: n + logSuffix, Size: segmentFileSize(s, logSuffix)},
			SegmentFile{Name: n + timeIndexSuffix, Size: segmentFileSize(s, timeIndexSuffix)},
		)
	}
	p.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// SegmentFileSize is the size SegmentFiles gives the file name, ok=false
// when the log has no such file: a lookup of one file (a stat of it)
// without listing them all.
func (p *Partition) SegmentFileSize(name string) (size int64, ok bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	s, suf := p.segmentNamedLocked(name)
	if s == nil {
		return 0, false
	}
	return segmentFileSize(s, suf), true
}

// segmentFileSize is the size of s's file with the suffix (.log, .index,
// .timeindex) as SegmentFiles gives it.
func segmentFileSize(s *segment, suffix string) int64 {
	switch suffix {
	case indexSuffix:
		return int64(s.oidx.Entries()) * 8
	case timeIndexSuffix:
		return int64(s.tidx.Entries()) * 12
	}
	return s.size.Load()
}

// segmentNamedLocked finds (p.mu held) the segment whose .log, .index or
// .timeindex is named name, and that suffix; nil when the log has none.
func (p *Partition) segmentNamedLocked(name string) (*segment, string) {
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		base, ok := parseSegmentBase(name, suf)
		if !ok || segmentName(base)+suf != name {
			continue
		}
		i := sort.Search(len(p.segs), func(i int) bool { return p.segs[i].base >= base })
		if i < len(p.segs) && p.segs[i].base == base {
			return p.segs[i], suf
		}
		return nil, ""
	}
	return nil, ""
}

// SegmentFileModTime returns the modification time the data directory has
// for name, one of the files SegmentFiles lists: when its segment was last
// appended to or rewritten. A file gone meanwhile (retention, a compaction
// swap) is an error.
func (p *Partition) SegmentFileModTime(name string) (time.Time, error) {
	if name != filepath.Base(name) {
		return time.Time{}, fmt.Errorf("%s: %w", name, os.ErrNotExist)
	}
	fi, err := os.Stat(filepath.Join(p.dir, name))
	if err != nil {
		return time.Time{}, err
	}
	return fi.ModTime(), nil
}

// LastModified is when the log last changed on disk: the modification
// time of the active segment's .log, that is its last append, or its
// creation at a roll. The zero time if it cannot be read.
func (p *Partition) LastModified() time.Time {
	fi, err := p.active().log.Stat()
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}

// DirModTime is the modification time of the partition's log directory:
// when a file in it was last created, renamed or removed (a segment roll,
// retention, a compaction swap, a producer snapshot), not the last append.
// The zero time if it cannot be read.
func (p *Partition) DirModTime() time.Time { return dirModTime(p.dir) }

func dirModTime(dir string) time.Time {
	fi, err := os.Stat(dir)
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}

// SegmentFileHandle is an open raw segment file.
type SegmentFileHandle struct {
	seg  *segment
	file *os.File
	own  bool // file opened for this handle (indexes), closed with it
	size func() int64
	once sync.Once
}

func (h *SegmentFileHandle) File() *os.File { return h.file }
func (h *SegmentFileHandle) Size() int64    { return h.size() }
func (h *SegmentFileHandle) Close() error {
	h.once.Do(func() {
		if h.own {
			h.file.Close()
		}
		h.seg.release()
	})
	return nil
}

// OpenSegmentFile opens a raw file by name for reading. The handle keeps the
// file readable across retention until Close. Size() follows the committed
// size of a growing active .log.
func (p *Partition) OpenSegmentFile(name string) (*SegmentFileHandle, error) {
	p.mu.RLock()
	if p.closed {
		p.mu.RUnlock()
		return nil, p.closedErr()
	}
	seg, _ := p.segmentNamedLocked(name)
	if seg != nil {
		seg.acquire()
	}
	p.mu.RUnlock()
	if seg == nil {
		return nil, fmt.Errorf("%s: %w", name, os.ErrNotExist)
	}
	h := &SegmentFileHandle{seg: seg}
	switch filepath.Ext(name) {
	case logSuffix:
		h.file = seg.log
		h.size = seg.size.Load
	case indexSuffix, timeIndexSuffix:
		f, err := os.Open(filepath.Join(p.dir, name))
		if err != nil {
			seg.release()
			return nil, err
		}
		h.file, h.own = f, true
		if filepath.Ext(name) == indexSuffix {
			h.size = func() int64 { return int64(seg.oidx.Entries()) * 8 }
		} else {
			h.size = func() int64 { return int64(seg.tidx.Entries()) * 12 }
		}
	}
	return h, nil
}
