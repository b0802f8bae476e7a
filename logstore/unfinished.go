package logstore

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
)

// The journal of unfinished lines (doc.go, "Unfinished lines").
//
// A writer of a partition's data file whose last write(2) ended inside a
// line holds that line's start in the daemon's memory until more bytes or
// its close make it a record. The write(2) that gave those bytes returned,
// so they must survive kill -9 of the daemon: each change of a writer's
// unfinished line is appended to this per-partition file first, with one
// pwrite (the page cache survives the daemon's death; no fsync on the hot
// path), and the next open of the partition makes each writer's last
// unfinished line a record, as that writer's close would have.
//
// An entry is
//
//	u32 body length, u32 CRC-32C of the body, then the body:
//	u8 kind (set: the writer's unfinished line is tail; extend: tail is
//	   appended to it; mark: no change, see below; 0x80 set: an end
//	   field follows cond), u64 run id, u64 writer id (together unique
//	   across daemon runs), i64 time of the write (Unix ms), i64 cond,
//	   [i64 end], u32 tail length, tail, zero padding.
//
// (Entries without end, kinds 1 and 2, are those of a daemon from before
// the end field; they are read, and a journal holding one is recovered
// without the check below.)
//
// cond < 0: unconditional. cond >= 0: the entry happened only if the log
// ends at cond or later: an append whose lines end a writer's unfinished
// line writes its entry first, under the append lock, with cond the log
// end after all its batches; if the daemon died before those batches
// reached the segment, the entry is ignored and the writer's line is the
// one its earlier entries say. An append that fails afterwards rewrites
// its entry in place (same length, so no new space is needed): never
// valid (cond = MaxInt64), or, for a write whose first batches were
// stored, an empty tail valid once the first batch is there.
//
// end is the log end the entry implies: cond for a conditional entry, the
// log end when it was written for an unconditional one. The journal and
// the segments are written without fsync, so a power cut keeps of each
// whatever pages the kernel had written back, and the segment's may be
// newer than the journal's: a batch that ended a writer's line is in the
// log while the entry that cleared the line is lost, and the older entry
// would bring the line's start back as a second record. So while any
// writer has a line in the journal, every append to the partition
// (appendLocked: lines of any writer, produced batches, transaction
// markers) first writes a mark, a conditional entry that changes no line,
// recording the log end its batch reaches, unless an entry already
// records that end or a later one (the conditional entry of a
// LineWriter.AppendLines covers all its batches). At the next open, if a
// writer's line is left and the log ends past the largest end a valid
// entry records, batches reached the segment whose entries did not reach
// the journal: the journal is behind the log, and no line is recovered
// (a warning says how many lines and bytes are dropped). A log that ends
// at or before that end (kill -9, where the page cache keeps both files
// whole, or a power cut that lost the segment's newer pages) is
// consistent with the journal, and the lines are recovered as the
// entries say, the conditional entries whose batches are missing being
// ignored as above.
//
// A line its writer made durable (fsync(2) of its descriptor, or a write
// through one opened O_SYNC or O_DSYNC: LineWriter.Sync) must survive a
// power cut even when the journal is behind because of other writers'
// appends: fsync returned success. Its writer journals a synced mark, a
// mark whose writer field names it (a mark of no writer is an append's),
// and syncs the journal; the line is synced from then until an entry sets
// the writer's line (an extend keeps it synced). The entry that ends or
// replaces a synced line (an AppendLines' conditional entries, a Set) is
// made durable (fdatasync of the journal) before the batch that ends it
// is written, and a failed append's in-place undo of it too. So a synced
// line whose ending entry is not in the recovered journal was not ended
// by any batch in the log, and recovery keeps the synced lines when the
// journal is behind, dropping only the others. Nor is the file emptied,
// or rewritten from memory, before the batch that ended a synced line is
// durable (syncedEnd): a power cut could keep the emptying and lose the
// batch, and with both the line; that append flushes the partition, so
// the wait is short. Only writers that sync mid-line pay the
// extra syncs; a writer whose every write is synced
// (O_SYNC, O_DSYNC: LineWriter.SyncWrites) writes its line's synced mark
// with the entry that begins the line (in the same pwrite, conditional
// as it), so that the sync after the write needs no room. A rewrite of a journal that holds a
// synced line (or held one: a line removed in memory must not come back)
// syncs the new file before its rename, and the directory; the next sync
// after any rewrite syncs the directory first, so that an entry synced
// into the new file is not lost with its rename. (A daemon from before
// synced marks reads them as marks: its recovery drops synced lines as
// any when the journal is behind.)
const (
	unfinishedFile    = "segfs-unfinished-lines"
	unfinishedHdr     = 8  // length, CRC
	unfinishedBodyHdr = 45 // kind, run, writer, time, cond, end, tail length
	unfinishedOldHdr  = 37 // the same without end (kinds 1 and 2 without unfinishedHasEnd)
	unfinishedSet     = 1
	unfinishedExtend  = 2
	unfinishedMark    = 3 // no change: the log end an append reaches (end = cond); of a writer: its line is synced
	unfinishedHasEnd  = 0x80
	// unfinishedRewriteAt: past this size the journal is rewritten with
	// only the current lines (when they take less than half of it).
	unfinishedRewriteAt = 1 << 20
	condNever           = math.MaxInt64
)

// writerKey names one writer across daemon runs.
type writerKey struct{ run, id uint64 }

// unfinishedLine is one writer's unfinished line as the journal has it.
type unfinishedLine struct {
	tail []byte
	ts   int64
	seq  uint64 // order of its last entry
	// synced: its writer made it durable (a synced mark since its last
	// set entry); its end is journaled durably first, so recovery keeps
	// it even when the journal is behind the log.
	synced bool
}

// unfinishedJournal is a partition's journal. Its lock is taken after amu
// (the appends that end lines hold amu across their entry and batches).
type unfinishedJournal struct {
	mu     sync.Mutex
	f      *os.File // nil until the first entry (or after a truncation to nothing)
	size   int64    // bytes of entries in f
	dirty  bool     // written since the last sync (flushLocked)
	broken bool     // a failed write may have left f untrustworthy: rewrite before the next entry
	// syncFailed: an fdatasync of f failed. Its pages may never reach
	// the disk, and Linux reports the next fdatasync of f as success
	// all the same, so no sync succeeds until f is rewritten (syncLocked).
	syncFailed bool
	lines      map[writerKey]*unfinishedLine
	live       int64  // bytes the entries of lines take
	seq        uint64 // entries written
	buf        []byte
	pending    bool // a conditional entry's batches are being appended
	// pendingMark: that entry is followed by a synced mark (writeCond).
	pendingMark bool
	// syncedIn: the file holds a synced mark, so a rewrite or an
	// emptying that removes a line must be made durable (else a power
	// cut would bring back a line that a dropped or repaired entry
	// removed, kept as synced however behind the journal is).
	syncedIn bool
	// renamed: a rewrite replaced the file since the last sync, whose
	// rename sync makes durable first (the directory), so that a synced
	// entry in the new file is not lost with it.
	renamed bool
	// syncedEnd is the largest log end an entry that ended a synced
	// line is valid at (its batches' end; 0 if none): until the segments
	// are durable that far (recoveryPoint), the file keeps the line's
	// entries and that ending, neither emptied nor rewritten from memory
	// (maybeShrink), or a power cut that lost the batch would lose the
	// line too, its start being in no file.
	syncedEnd int64
	// forgotten: forget ran while an append's conditional entry was
	// pending; resolve sets broken once it is settled (broken while
	// pending would fail that append's marks).
	forgotten bool
	// reach is the log end once the append under way (amu) is done, or
	// the log end when none is: the end an unconditional entry records.
	// appendLocked sets it before each batch, under mu, so that an entry
	// either records a batch's end or is in the journal before the
	// batch's mark is decided (and then a mark is written).
	reach int64
	// recorded is the largest end an entry in the file records that is
	// sure to be valid once the log reaches it (an unconditional entry,
	// or a conditional one whose append has not failed); -1 when none.
	// An append whose batch ends at or before it writes no mark.
	recorded int64

	// The recovery of the lines an earlier run left (recoverUnfinished)
	// when it could not finish at the open (a full disk): the writers
	// whose lines are still to be appended, in order, and whether the
	// journal must first be rewritten without its conditional entries.
	// Guarded by amu, not mu: recoverPendingLocked retries it before
	// the next append, under amu, so that no append moves the log end
	// past a lost entry's condition before the rewrite.
	unrecovered []writerKey
	needRewrite bool
	recovering  bool // recoverPendingLocked is appending (its appends skip the retry)
}

// runID tells this daemon run's writers from earlier runs' in the journal.
var runID = func() uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return binary.LittleEndian.Uint64(b[:])
}()

var writerIDs atomic.Uint64

// LineWriter is one writer of a partition's lines whose unfinished line
// (bytes after its last newline) is journaled, so that it survives the
// daemon's death (see unfinishedJournal). The mount makes one per
// writable open of data. Its methods are not safe for concurrent use:
// the caller serialises a writer's calls.
type LineWriter struct {
	p   *Partition
	key writerKey
	has bool // the journal holds a non-empty line for it
	// stale: a Set failed, so the journal may hold another line than
	// the caller's: the next Extend writes the whole line.
	stale bool
	// synced: its line was made durable (Sync) since the line began:
	// the entry that ends or replaces it is made durable before the
	// batch that ends it (see the file's comment).
	synced bool
	// syncWrites: every write is synced (a descriptor opened O_SYNC or
	// O_DSYNC): a line's first entry carries its synced mark in the same
	// pwrite, so that the Sync after the write needs no room in the
	// journal (on a full disk, the write fails whole, before its bytes
	// are taken, rather than its sync after).
	syncWrites bool
	ts         int64
}

// NewLineWriter returns a writer with no unfinished line.
func (p *Partition) NewLineWriter() *LineWriter {
	return &LineWriter{p: p, key: writerKey{runID, writerIDs.Add(1)}, ts: -1}
}

// Extend journals b as added to the writer's unfinished line, prev.
// Nothing is written for an empty b. An error means the bytes are not
// journaled: the caller must not take them.
func (w *LineWriter) Extend(prev, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if w.stale {
		return w.Set(append(append([]byte(nil), prev...), b...))
	}
	mark := w.syncWrites && !w.synced
	if err := w.p.unfinished.write(w.p, unfinishedExtend, w.key, w.now(), -1, b, mark); err != nil {
		return err
	}
	w.has, w.synced = true, w.synced || mark
	return nil
}

// Set journals tail (possibly empty) as the writer's unfinished line,
// unconditionally: the mount dropped the line (a refused write) or the
// caller restores a known state. Nothing is written if the writer has no
// line and tail is empty.
func (w *LineWriter) Set(tail []byte) error {
	if !w.has && len(tail) == 0 {
		return nil
	}
	mark := w.syncWrites && len(tail) > 0
	if err := w.p.unfinished.write(w.p, unfinishedSet, w.key, w.now(), -1, tail, mark); err != nil {
		w.stale = true
		return err
	}
	if w.synced {
		// The synced line is replaced: the entry must not be lost while
		// the synced mark before it survives (recovery would store the
		// line the mount dropped).
		if err := w.p.unfinished.sync(w.p); err != nil {
			w.p.log().Warn("journal of unfinished lines not synced after a synced line was dropped", "err", err)
		}
	}
	w.has, w.stale, w.synced = len(tail) > 0, false, mark
	return nil
}

// SyncWrites says that every write of the writer is synced (opened O_SYNC
// or O_DSYNC): the entry that begins each of its lines carries the line's
// synced mark, so that Sync after the write has nothing to journal.
func (w *LineWriter) SyncWrites() {
	w.syncWrites = true
}

// Drop journals that the writer has no line: the caller dropped it (a
// refused write). If the entry cannot be written (a full disk), the
// journal's memory says no line all the same, and its file, which still
// holds the line, is repaired from memory as soon as it can be: emptied
// at once if no writer has a line (a truncation needs no space), else
// rewritten before the journal's next entry, at Resync (the writer's
// next write and its release) and at the partition's clean close, which
// otherwise would keep the line for the next open to append.
func (w *LineWriter) Drop() error {
	err := w.Set(nil)
	if err != nil {
		// The file, which may keep a synced mark for the line, is
		// repaired durably (rewrite, maybeShrink: syncedIn).
		w.has, w.synced = false, false
		if w.p.unfinished.forget(w.p, w.key) {
			w.stale = false
		}
	}
	return err
}

// Resync retries, if a Set failed, the repair of the journal that Drop
// left pending; Extend and AppendLines set the whole line themselves.
func (w *LineWriter) Resync() error {
	if !w.stale {
		return nil
	}
	if err := w.p.unfinished.repair(w.p); err != nil {
		return err
	}
	if !w.has {
		// The journal's file is its memory again, which has no line
		// for the writer (Drop).
		w.stale = false
	}
	return nil
}

// Sync makes the writer's unfinished line, line (as the caller holds
// it), durable: fsync(2) of its descriptor, or a write through one opened
// O_SYNC or O_DSYNC, while the line is unfinished. The first Sync of a
// line journals a synced mark; every Sync then syncs the journal (not the
// segments: Partition.Flush does). From then on the entry that ends the
// line is made durable before the batch that ends it, and recovery keeps
// the line after a power cut however behind the journal is (see the
// file's comment).
func (w *LineWriter) Sync(line []byte) error {
	if w.stale {
		if err := w.Set(line); err != nil {
			return err
		}
	}
	if !w.has {
		return nil
	}
	j := &w.p.unfinished
	if !w.synced {
		if err := j.write(w.p, unfinishedMark, w.key, w.now(), -1, nil, false); err != nil {
			return err
		}
		w.synced = true
	}
	return j.sync(w.p)
}

func (w *LineWriter) now() int64 {
	if w.ts >= 0 {
		return w.ts
	}
	return w.p.store.now().UnixMilli()
}

// AppendLines is Partition.AppendLinesAfter for the writer: it appends
// the lines of head and text, after which tail is the writer's unfinished
// line. If the writer has or keeps an unfinished line, the journal entry
// for the change comes first, under the append lock, valid only once all
// the batches are in the log. On an error the journal is left saying what
// the caller then holds: the old line when nothing was stored, no line
// when stored > 0 (a short write: the caller keeps no tail).
func (w *LineWriter) AppendLines(head, text, tail []byte) (first, last int64, stored int, err error) {
	p := w.p
	if len(head)+len(text) == 0 {
		return -1, -1, 0, w.Set(tail)
	}
	cfg := p.config()
	if err := checkLines(head, text, cfg); err != nil {
		return -1, -1, 0, err
	}
	p.amu.Lock()
	defer p.amu.Unlock()
	return w.appendLinesLocked(head, text, tail, cfg)
}

// appendLinesLocked is AppendLines once the lines are checked, amu held
// (recoverPendingLocked's appends, which run under the amu of the append
// that retries them).
func (w *LineWriter) appendLinesLocked(head, text, tail []byte, cfg *Config) (first, last int64, stored int, err error) {
	p := w.p
	if !w.has && !w.stale && len(tail) == 0 {
		// The common case (an echo, a writer of whole lines): no line
		// before or after, nothing to journal but appendLocked's marks
		// while another writer has a line.
		return p.appendLinesLocked(head, text, -1, cfg, nil)
	}
	if p.fenceErr != nil {
		return -1, -1, 0, &fencedError{cause: p.fenceErr}
	}
	if p.store.closed.Load() {
		return -1, -1, 0, ErrClosed
	}
	// A recovery left pending goes first: it may rewrite the journal,
	// which must not happen between writeCond and resolve below.
	if err := p.recoverPendingLocked(); err != nil {
		return -1, -1, 0, err
	}
	leo := p.leo.Load()
	j := &p.unfinished
	ts := w.now()
	// The entries are written once the first batch is encoded, when its
	// end is known: a write that takes several batches (more than
	// max.message.bytes of records) journals first that the writer has
	// no line once the first batch is in (it holds the line the write
	// completes), so that a crash between its batches recovers neither
	// that line's start nor the new tail.
	at, at2 := int64(-1), int64(-1)
	// A new line of a writer whose writes are synced carries its synced
	// mark, conditional as its entry.
	mark := w.syncWrites && len(tail) > 0
	journal := func(firstEnd int64, all bool) error {
		// The log ends at end once all the batches are appended. When the
		// first batch takes every line it is firstEnd; otherwise every
		// line is one record, so it is leo+lines (counted only then: the
		// count is a pass over the whole WRITE, 128 KiB of a `cat`).
		end := firstEnd
		if all {
			firstEnd = -1
		} else {
			end = leo + int64(bytes.Count(head, []byte{'\n'})+bytes.Count(text, []byte{'\n'}))
		}
		var err error
		at, at2, err = j.writeCond(p, w.key, ts, firstEnd, end, tail, mark)
		if err == nil && w.synced {
			// A synced line: its end durable before the batch that ends
			// it, so that a power cut never keeps the batch without it;
			// and its entries kept until the batch is durable.
			err = j.syncEnding(p, end)
		}
		return err
	}
	first, last, stored, err = p.appendLinesLocked(head, text, w.ts, cfg, journal)
	switch {
	case err == nil:
		j.resolve(p, w.key, at, at2, ts, -1, tail, false)
		w.has, w.stale, w.synced = len(tail) > 0, false, mark
	case at2 < 0:
		// Nothing journaled, nothing appended: the writer keeps its line.
	case stored > 0:
		// The first batches are in the log (leo+1 at least), the writer
		// is answered a short write and keeps no line.
		j.resolve(p, w.key, at, at2, ts, leo+1, nil, w.synced || mark)
		w.has, w.stale, w.synced = false, false, false
	default:
		j.resolve(p, w.key, at, at2, ts, condNever, nil, w.synced || mark)
		// The new line's synced mark stays in the file, conditional on
		// a log end that other appends may reach: it would then mark
		// the line the writer keeps, whose end must be synced from now
		// on (see the file's comment).
		w.synced = w.synced || mark
	}
	if j.endingSynced(p) {
		// The batch that ended a synced line is made durable at once,
		// so that the journal may drop the line's entries, which it
		// keeps until then (syncedEnd), and does not grow meanwhile.
		// The writer paid a journal sync for it already; one that
		// writes O_SYNC or O_DSYNC flushes after the write anyway.
		if ferr := p.flushLocked(); ferr != nil {
			p.log().Warn("append that ended a synced unfinished line not flushed", "err", ferr)
		}
	}
	return first, last, stored, err
}

// encode appends an entry to dst.
func encodeUnfinished(dst []byte, kind byte, k writerKey, ts, cond, end int64, tail []byte) []byte {
	n := unfinishedBodyHdr + len(tail)
	start := len(dst)
	dst = append(dst, make([]byte, unfinishedHdr+n)...)
	e := dst[start:]
	binary.BigEndian.PutUint32(e[0:], uint32(n))
	b := e[unfinishedHdr:]
	b[0] = kind | unfinishedHasEnd
	binary.BigEndian.PutUint64(b[1:], k.run)
	binary.BigEndian.PutUint64(b[9:], k.id)
	binary.BigEndian.PutUint64(b[17:], uint64(ts))
	binary.BigEndian.PutUint64(b[25:], uint64(cond))
	binary.BigEndian.PutUint64(b[33:], uint64(end))
	binary.BigEndian.PutUint32(b[41:], uint32(len(tail)))
	copy(b[unfinishedBodyHdr:], tail)
	// b[unfinishedBodyHdr+len(tail):] is padding (zero), used by an in-place rewrite
	// that shortens the tail.
	binary.BigEndian.PutUint32(e[4:], crc32.Checksum(b, castagnoli))
	return dst
}

// unfinishedEntry is a decoded entry.
type unfinishedEntry struct {
	kind byte // without unfinishedHasEnd
	key  writerKey
	ts   int64
	cond int64
	end  int64 // -1: not recorded (an entry of an older daemon)
	tail []byte
}

// decodeUnfinished decodes the entries of b up to the first torn or
// damaged one, and returns them and the bytes they take.
func decodeUnfinished(b []byte) ([]unfinishedEntry, int) {
	var out []unfinishedEntry
	pos := 0
	for len(b)-pos >= unfinishedHdr {
		n := int(binary.BigEndian.Uint32(b[pos:]))
		if n < unfinishedOldHdr || n > len(b)-pos-unfinishedHdr {
			break
		}
		body := b[pos+unfinishedHdr : pos+unfinishedHdr+n]
		if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(b[pos+4:]) {
			break
		}
		kind, hdr, end := body[0]&^unfinishedHasEnd, unfinishedOldHdr, int64(-1)
		if body[0]&unfinishedHasEnd != 0 {
			if n < unfinishedBodyHdr {
				break
			}
			hdr, end = unfinishedBodyHdr, int64(binary.BigEndian.Uint64(body[33:]))
		} else if kind == unfinishedMark {
			break // marks always have an end
		}
		tl := int(binary.BigEndian.Uint32(body[hdr-4:]))
		if tl > n-hdr || (kind != unfinishedSet && kind != unfinishedExtend && kind != unfinishedMark) {
			break
		}
		out = append(out, unfinishedEntry{
			kind: kind,
			key:  writerKey{binary.BigEndian.Uint64(body[1:]), binary.BigEndian.Uint64(body[9:])},
			ts:   int64(binary.BigEndian.Uint64(body[17:])),
			cond: int64(binary.BigEndian.Uint64(body[25:])),
			end:  end,
			tail: body[hdr : hdr+tl],
		})
		pos += unfinishedHdr + n
	}
	return out, pos
}

// apply records an entry in the in-memory lines.
func (j *unfinishedJournal) apply(kind byte, k writerKey, ts int64, tail []byte) {
	if kind == unfinishedMark {
		if l := j.lines[k]; l != nil && k != (writerKey{}) {
			l.synced = true // a synced mark; an append's names no writer
		}
		return
	}
	if j.lines == nil {
		j.lines = map[writerKey]*unfinishedLine{}
	}
	j.seq++
	l := j.lines[k]
	if l != nil {
		j.live -= int64(unfinishedHdr + unfinishedBodyHdr + len(l.tail))
	}
	switch {
	case kind == unfinishedSet && len(tail) == 0:
		delete(j.lines, k)
		return
	case l == nil:
		l = &unfinishedLine{}
		j.lines[k] = l
	}
	if kind == unfinishedSet {
		l.tail = append(l.tail[:0], tail...)
		l.synced = false
	} else {
		l.tail = append(l.tail, tail...)
	}
	l.ts, l.seq = ts, j.seq
	j.live += int64(unfinishedHdr + unfinishedBodyHdr + len(l.tail))
}

// open opens (creating) the journal file. The caller holds j.mu.
func (j *unfinishedJournal) open(p *Partition) error {
	if j.f != nil {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(p.dir, unfinishedFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	j.f, j.size = f, 0
	if fi, err := f.Stat(); err == nil {
		j.size = fi.Size()
	}
	return nil
}

// appendEntry writes e at the journal's end and returns where. A failed
// write is cut off again, so that the entries written after it are read.
// The caller holds j.mu.
func (j *unfinishedJournal) appendEntry(p *Partition, e []byte) (int64, error) {
	if j.broken {
		if j.pending {
			// A rewrite would drop the conditional entry resolve is
			// yet to settle in place.
			return 0, errors.New("journal of unfinished lines being repaired")
		}
		if err := j.rewrite(p); err != nil {
			return 0, err
		}
	}
	if err := j.open(p); err != nil {
		return 0, err
	}
	at := j.size
	if _, err := j.f.WriteAt(e, at); err != nil {
		if terr := j.f.Truncate(at); terr != nil {
			j.broken = true
		}
		return 0, fmt.Errorf("journal of unfinished lines %s: %w", j.f.Name(), err)
	}
	j.size += int64(len(e))
	j.dirty = true
	return at, nil
}

// write appends an unconditional entry and applies it.
//
// mark: a synced mark for k follows the entry, in the same pwrite.
func (j *unfinishedJournal) write(p *Partition, kind byte, k writerKey, ts, cond int64, tail []byte, mark bool) error {
	if p.store.closed.Load() {
		return ErrClosed
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	end := j.reach
	if cond >= 0 {
		end = cond
	}
	j.buf = encodeUnfinished(j.buf[:0], kind, k, ts, cond, end, tail)
	if mark {
		j.buf = encodeUnfinished(j.buf, unfinishedMark, k, ts, cond, end, nil)
	}
	if _, err := j.appendEntry(p, j.buf); err != nil {
		return err
	}
	if cond < 0 {
		j.recorded = max(j.recorded, end)
	}
	if mark || kind == unfinishedMark && k != (writerKey{}) {
		j.syncedIn = true
	}
	j.apply(kind, k, ts, tail)
	if mark {
		j.apply(unfinishedMark, k, ts, nil)
	}
	j.maybeShrink(p)
	return nil
}

// mark is appendLocked's, before a batch that ends the log at next: while
// a writer has a line, the journal records that end first, unless an
// entry already does (see the file's comment). amu is held. An error
// means the batch must not be appended: it would reach the segment with
// nothing in the journal to tell a power cut's lost entries.
func (j *unfinishedJournal) mark(p *Partition, next int64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.lines) > 0 && j.recorded < next {
		// Marks grow the journal as long as a line is pending: it is
		// rewritten past unfinishedRewriteAt as for any entry, before
		// the mark, which the rewrite would drop. (A rewrite records
		// the log end as it is, the batch not being appended yet.)
		j.maybeShrink(p)
		j.buf = encodeUnfinished(j.buf[:0], unfinishedMark, writerKey{}, 0, next, next, nil)
		if _, err := j.appendEntry(p, j.buf); err != nil {
			return err
		}
		j.recorded = next
	}
	j.reach = next
	return nil
}

// unmark is appendLocked's after a batch failed: the log ends at leo, and
// the marks and conditional entries written for batches not stored do not
// count until the log reaches them (which a smaller batch may not). amu is
// held.
func (j *unfinishedJournal) unmark(leo int64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.reach, j.recorded = leo, -1
}

// writeCond appends the conditional entry of an append (amu held), tail
// valid once the log ends at cond, preceded, if firstEnd >= 0 (the append
// takes several batches, the first ending the log at firstEnd), by an
// entry that the writer has no line once the first batch is in; both with
// one pwrite; followed, if mark, by a synced mark for the tail, valid
// with it (its writer's writes are synced). It returns where the first
// entry and the tail's are, for resolve.
func (j *unfinishedJournal) writeCond(p *Partition, k writerKey, ts, firstEnd, cond int64, tail []byte, mark bool) (at, at2 int64, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.buf = j.buf[:0]
	if firstEnd >= 0 {
		j.buf = encodeUnfinished(j.buf, unfinishedSet, k, ts, firstEnd, firstEnd, nil)
	}
	n := len(j.buf)
	j.buf = encodeUnfinished(j.buf, unfinishedSet, k, ts, cond, cond, tail)
	if mark {
		j.buf = encodeUnfinished(j.buf, unfinishedMark, k, ts, cond, cond, nil)
	}
	at, err = j.appendEntry(p, j.buf)
	if err != nil {
		return -1, -1, err
	}
	j.pending, j.pendingMark = true, mark
	if mark {
		j.syncedIn = true
	}
	// The tail's entry covers the append's only batch (its mark is not
	// needed); of several, the first entry covers the first, and the
	// others have their marks, so that a crash between them finds the
	// journal consistent with the log. resolve takes that back if the
	// append fails.
	if firstEnd >= 0 {
		j.recorded = max(j.recorded, firstEnd)
	} else {
		j.recorded = max(j.recorded, cond)
	}
	return at, at + int64(n), nil
}

// resolve settles the conditional entry at at2 (and the first batch's at
// at, if at != at2) once its append returned (amu held). cond < 0: it
// succeeded, and the entry holds: tail is the writer's line, written at
// ts. Otherwise the entry is rewritten in place with cond and tail (no
// longer than the entry's, the rest padded): cond = condNever, the
// writer's line stays as before (and the first batch's entry becomes
// never valid too); another cond (the first batch's end) with no tail,
// after a short write. synced: the writer's line was synced, or the
// entry is followed by a synced mark (writeCond), so the undoing is
// synced: a power cut must not keep an entry that ended a synced line
// while the batch that ended it failed, nor a synced tail the write did
// not store.
func (j *unfinishedJournal) resolve(p *Partition, k writerKey, at, at2, ts, cond int64, tail []byte, synced bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.pending = false
	mark := j.pendingMark
	j.pendingMark = false
	if j.forgotten {
		// A line dropped meanwhile whose entry failed (forget): the
		// file is repaired from memory from now on.
		j.broken, j.forgotten = true, false
	}
	if cond != condNever {
		j.apply(unfinishedSet, k, ts, tail)
	}
	if mark && cond < 0 {
		j.apply(unfinishedMark, k, ts, nil)
	}
	if cond >= 0 {
		// The append failed: the log ends where its stored batches do,
		// which the entry records from now on. A synced line it ended
		// ends there at most (earlier appends ended before it).
		j.reach, j.recorded = p.leo.Load(), -1
		j.syncedEnd = min(j.syncedEnd, j.reach)
	}
	undone := cond < 0 || j.undo(at2, k, ts, cond, j.reach, tail)
	if cond == condNever && at != at2 && undone {
		undone = j.undo(at, k, ts, cond, j.reach, nil)
	}
	if !undone {
		// The entry may still claim a line the writer does not have:
		// the journal is rewritten from memory, now or before the
		// next entry.
		j.broken = true
		p.log().Warn("journal of unfinished lines: a failed append's entry could not be undone; rewriting the journal")
		if err := j.rewrite(p); err != nil {
			p.log().Warn("journal of unfinished lines not rewritten", "err", err)
		}
	} else if synced && cond >= 0 {
		if err := j.syncLocked(p); err != nil {
			p.log().Warn("journal of unfinished lines not synced after a synced line's failed append", "err", err)
		}
	}
	j.maybeShrink(p)
}

// forget removes k's line from the journal's memory after its "no line"
// entry could not be written (Drop), marking the file for a rewrite from
// memory (broken), or emptying it now if no writer has a line. It
// reports whether the file is repaired.
func (j *unfinishedJournal) forget(p *Partition, k writerKey) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.lines[k] == nil {
		return !j.broken
	}
	j.apply(unfinishedSet, k, 0, nil)
	if j.pending {
		j.forgotten = true
		return false
	}
	j.broken = true
	j.maybeShrink(p)
	return !j.broken
}

// repair rewrites the file from memory if it is broken (forget, a failed
// truncation), unless an append's conditional entry is pending (resolve
// repairs it then). A file with no line is emptied instead, which needs
// no space.
func (j *unfinishedJournal) repair(p *Partition) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.broken || j.pending {
		return nil
	}
	if len(j.lines) == 0 {
		if j.f == nil {
			if err := emptyUnfinishedFile(p.dir); err != nil {
				return err
			}
			j.broken = false
			return nil
		}
		j.maybeShrink(p)
		if j.broken {
			return errors.New("journal of unfinished lines not emptied")
		}
		return nil
	}
	return j.rewrite(p)
}

// undo rewrites the entry at at in place (resolve). The caller holds j.mu.
func (j *unfinishedJournal) undo(at int64, k writerKey, ts, cond, end int64, tail []byte) bool {
	if j.f == nil {
		return false
	}
	var hdr [unfinishedHdr]byte
	if _, err := j.f.ReadAt(hdr[:], at); err != nil {
		return false
	}
	n := int(binary.BigEndian.Uint32(hdr[:]))
	if n < unfinishedBodyHdr+len(tail) {
		return false
	}
	e := make([]byte, unfinishedHdr+n)
	enc := encodeUnfinished(nil, unfinishedSet, k, ts, cond, end, tail)
	copy(e, enc)
	binary.BigEndian.PutUint32(e[0:], uint32(n))
	binary.BigEndian.PutUint32(e[4:], crc32.Checksum(e[unfinishedHdr:], castagnoli))
	if _, err := j.f.WriteAt(e, at); err != nil {
		return false
	}
	j.dirty = true // the next sync must carry the undoing
	return true
}

// maybeShrink truncates the journal when no writer has a line, and
// rewrites it when it grew large with entries that no longer count. The
// caller holds j.mu.
func (j *unfinishedJournal) maybeShrink(p *Partition) {
	if j.pending || j.f == nil {
		return
	}
	if !j.broken && j.syncedEnd > p.recoveryPoint.Load() {
		// A synced line's end is not durable in the log yet: its
		// entries stay (syncedEnd) until flushLocked (shrinkFlushed).
		return
	}
	if len(j.lines) == 0 {
		if j.size == 0 && !j.broken {
			return
		}
		if err := j.f.Truncate(0); err != nil {
			j.broken = true
			return
		}
		if j.broken && j.syncedIn {
			// A repair that removes a line the memory forgot (Drop), the
			// file holding a synced mark: durable, or a power cut would
			// bring back that line.
			if err := fdatasync(j.f); err != nil {
				j.broken = true
				return
			}
		}
		// Empty, as the memory: nothing left to repair.
		j.size, j.recorded, j.broken, j.syncedIn, j.syncFailed = 0, -1, false, false, false
		j.dirty = true
		return
	}
	if j.size > unfinishedRewriteAt && j.size > 2*j.live {
		if err := j.rewrite(p); err != nil {
			p.log().Warn("journal of unfinished lines not rewritten", "err", err)
		}
	}
}

// rewrite replaces the journal with one unconditional entry per writer
// that has a line, in the order of their last entries, through a temp
// file and a rename (no fsync unless the file holds or held a synced
// mark, below: kill -9 keeps the page cache; flushLocked syncs the file
// before a batch is made durable). The caller holds j.mu.
func (j *unfinishedJournal) rewrite(p *Partition) error {
	path := filepath.Join(p.dir, unfinishedFile)
	var b []byte
	synced := false
	for _, k := range j.ordered() {
		l := j.lines[k]
		b = encodeUnfinished(b, unfinishedSet, k, l.ts, -1, j.reach, l.tail)
		if l.synced {
			b = encodeUnfinished(b, unfinishedMark, k, l.ts, -1, j.reach, nil)
			synced = true
		}
	}
	// A synced line must be in the file whichever of the two a power cut
	// keeps, and one the memory no longer has (ended or dropped) in
	// neither: the new file is made durable before its rename, and the
	// rename after.
	durable := synced || j.syncedIn
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err == nil && durable {
		err = fdatasync(f)
	}
	if err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if j.f != nil {
		j.f.Close()
	}
	j.f, j.size, j.live, j.broken, j.dirty, j.syncFailed = f, int64(len(b)), int64(len(b)), false, true, false
	j.syncedIn, j.renamed = synced, true
	if durable {
		if err := syncDir(p.dir); err != nil {
			p.log().Warn("partition directory not synced after the rewrite of its journal of unfinished lines", "err", err)
		} else {
			j.renamed = false
		}
	}
	j.recorded = -1
	if len(b) > 0 {
		j.recorded = j.reach
	}
	return nil
}

// shrinkFlushed is flushLocked's, once the segments are durable: the
// journal that maybeShrink left whole for a synced line's ending batch
// (syncedEnd) may be emptied or rewritten now. amu is held.
func (j *unfinishedJournal) shrinkFlushed(p *Partition) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.syncedEnd > 0 && j.syncedEnd <= p.recoveryPoint.Load() {
		j.syncedEnd = 0
		j.maybeShrink(p)
	}
}

// ordered returns the writers with a line, in the order of their last
// entries.
func (j *unfinishedJournal) ordered() []writerKey {
	keys := make([]writerKey, 0, len(j.lines))
	for k := range j.lines {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool { return j.lines[keys[a]].seq < j.lines[keys[b]].seq })
	return keys
}

// sync makes the journal durable before flushLocked makes batches
// durable: a batch that ended a writer's line is then never on disk
// without the entry that says so (its line would come back as a record
// after a power cut). amu is held, except for LineWriter.Sync's (an
// append's conditional entry may then be pending: syncLocked).
func (j *unfinishedJournal) sync(p *Partition) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.syncLocked(p)
}

// syncEnding is sync after the entry that ends a synced line, valid once
// the log ends at end (appendLinesLocked): the entries stay in the file
// until the log is durable that far (syncedEnd). amu is held.
func (j *unfinishedJournal) syncEnding(p *Partition, end int64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.syncedEnd = max(j.syncedEnd, end)
	return j.syncLocked(p)
}

// endingSynced reports whether the file keeps a synced line's entries
// for an append that ended it and is not durable yet (syncedEnd).
func (j *unfinishedJournal) endingSynced(p *Partition) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.syncedEnd > p.recoveryPoint.Load()
}

// syncLocked is sync with j.mu held. After a rewrite the directory is
// synced first: an entry synced into the new file would otherwise be lost
// if a power cut kept the old file.
//
// A failed fdatasync marks the file broken and failed (syncFailed): the
// kernel may have dropped its dirty pages, and would answer the next
// fdatasync with success (a retried fsync(2) of a synced line would then
// report a line durable that is not). The next sync first rewrites the
// file from memory, durably if it holds a synced line, and fails while it
// cannot be rewritten (an append's conditional entry pending, or a synced
// line's end not durable in the log yet, whose entries the memory may
// no longer have: maybeShrink).
func (j *unfinishedJournal) syncLocked(p *Partition) error {
	if j.f == nil {
		return nil
	}
	if j.syncFailed {
		if j.pending || j.syncedEnd > p.recoveryPoint.Load() {
			return fmt.Errorf("journal of unfinished lines %s: an earlier fdatasync failed and the file cannot be rewritten yet", j.f.Name())
		}
		if err := j.rewrite(p); err != nil {
			return err
		}
	}
	if !j.dirty {
		return nil
	}
	if j.renamed {
		if err := syncDir(filepath.Dir(j.f.Name())); err != nil {
			return err
		}
		j.renamed = false
	}
	if err := fdatasync(j.f); err != nil {
		j.broken, j.syncFailed = true, true
		return err
	}
	j.dirty = false
	return nil
}

// fdatasync is fdatasync(2) of f: the journal's entries and its size,
// not its times.
func fdatasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	if fdatasyncFail != nil {
		if err := fdatasyncFail(f.Name()); err != nil {
			return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
		}
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			serr = syscall.Fdatasync(int(fd))
			if serr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if serr != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: serr}
	}
	if fdatasyncDone != nil {
		fdatasyncDone(f.Name())
	}
	return nil
}

// fdatasyncDone, if set (tests), is called with the file's name after
// each fdatasync: its content is then what a power cut keeps.
var fdatasyncDone func(name string)

// fdatasyncFail, if set (tests), is called with the file's name before
// each fdatasync; an error it returns is the fdatasync's, as if the
// disk failed the writeback (the file's pages are then lost).
var fdatasyncFail func(name string) error

// close closes the journal at the partition's close, emptying it if no
// writer has a line (a clean stop leaves nothing in it). It is emptied,
// not removed: creating and removing a file moves the partition
// directory's mtime, which is the mounted topic and partition
// directories' mtime, and `tar` of a topic then reported "file changed as
// we read it" after a line written in pieces (emptyUnfinishedFile).
//
// A file that a failed write left behind the memory (broken: a dropped
// line's "no line" entry not written, Drop) is rewritten from memory if
// lines remain, and emptied, like any, if none does: either way the next
// open does not append a line the mount dropped.
func (j *unfinishedJournal) close(p *Partition) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.broken && len(j.lines) > 0 && !j.pending {
		if err := j.rewrite(p); err != nil {
			p.log().Warn("journal of unfinished lines not rewritten at close: the next open may append a line the mount dropped", "err", err)
		}
	}
	if j.f != nil {
		j.f.Close()
		j.f = nil
	}
	if len(j.lines) == 0 {
		if err := emptyUnfinishedFile(p.dir); err != nil {
			p.log().Warn("journal of unfinished lines not emptied", "err", err)
		}
	}
}

// emptyUnfinishedFile makes the journal in dir an empty file: created if
// missing (a partition created before the journal existed, or whose
// journal was lost), truncated if it holds entries, and left alone (its
// mtime too) if already empty. The file stays for the partition's life,
// so that a writer's first unfinished line does not create it and move
// the directory's mtime (close).
func emptyUnfinishedFile(dir string) error {
	path := filepath.Join(dir, unfinishedFile)
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		return f.Close()
	case err != nil:
		return err
	case fi.Size() == 0:
		return nil
	}
	return os.Truncate(path, 0)
}

// recoverUnfinished makes each writer's unfinished line in the journal a
// record, as its close would have (a daemon's death is its writers'
// close), at the open of the partition, after the segments are
// recovered: entries whose batches are not in the log did not happen.
// The lines are appended in the order of their writers' last entries,
// each with the time of its last write as CreateTime; one the close would
// have refused (no key on a compacted topic, too long) is dropped with a
// warning. If an append fails the journal keeps the lines not yet
// stored, for the next open.
func (p *Partition) recoverUnfinished() error {
	path := filepath.Join(p.dir, unfinishedFile)
	j := &p.unfinished
	leo := p.leo.Load()
	j.mu.Lock()
	j.reach, j.recorded = leo, -1
	j.mu.Unlock()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		// Created now, not at a writer's first unfinished line (close).
		// A read-only data directory takes no appends: nothing to do.
		if err := emptyUnfinishedFile(p.dir); err != nil {
			p.log().Debug("journal of unfinished lines not created", "file", path, "err", err)
		}
		return nil
	}
	if err != nil {
		// Left in place for the next open; nothing here depends on it.
		p.log().Warn("journal of unfinished lines not read; the lines it holds are not recovered", "file", path, "err", err)
		return nil
	}
	ents, used := decodeUnfinished(b)
	if used < len(b) {
		p.log().Warn("journal of unfinished lines ends in a torn or damaged entry; its later bytes are ignored",
			"file", path, "valid_bytes", used, "ignored_bytes", len(b)-used)
	}
	j.mu.Lock()
	// lstar: the largest log end a valid entry records (-1 if an entry
	// of an older daemon records none: no check).
	lstar := int64(-1)
	known := true
	for _, e := range ents {
		if e.cond >= 0 && leo < e.cond {
			continue // its batches are not in the log: it did not happen
		}
		if e.end < 0 {
			known = false
		}
		lstar = max(lstar, e.end)
		j.apply(e.kind, e.key, e.ts, e.tail)
	}
	if known && len(j.lines) > 0 && leo > lstar {
		// Batches past lstar reached the segment but not the entries
		// written before them (their marks at least): the journal is
		// behind the log, as after a power cut that kept newer pages of
		// the segment than of the journal. Its lines may have been ended
		// by those batches: recovering them could store a line's start
		// twice, so none is.
		// A synced line is kept: the entry that ended it was durable
		// before its batch was written, so it was not ended.
		var n, dropped, kept int
		for k, l := range j.lines {
			if l.synced {
				kept++
				continue
			}
			n += len(l.tail)
			dropped++
			j.live -= int64(unfinishedHdr + unfinishedBodyHdr + len(l.tail))
			delete(j.lines, k)
		}
		if dropped > 0 {
			p.log().Warn("journal of unfinished lines is behind the log (a power cut?): its writers' unfinished lines are dropped, not recovered, but for those their writers synced",
				"file", path, "lines", dropped, "bytes", n, "synced_lines_kept", kept,
				"log_end", leo, "journal_log_end", lstar)
		}
	}
	keys := j.ordered()
	if len(keys) == 0 {
		j.mu.Unlock()
		return emptyUnfinishedFile(p.dir)
	}
	j.mu.Unlock()
	// Conditional entries must go before anything is appended: the
	// appends move the log end past conditions that failed. If the
	// rewrite or an append fails (a full disk), the partition is not
	// fenced: the rest of the recovery is retried before each append,
	// which fails with its error until it succeeds (recoverPendingLocked).
	p.amu.Lock()
	j.unrecovered, j.needRewrite = keys, true
	err = p.recoverPendingLocked()
	p.amu.Unlock()
	if err != nil {
		p.log().Warn("unfinished lines not recovered yet: the journal keeps them, and each append retries first (failing while this fails)",
			"file", path, "lines", len(keys), "err", err)
	}
	return nil
}

// recoverPendingLocked does what is left of recoverUnfinished: the
// journal's rewrite without its conditional entries, if not done yet,
// then the appends of the lines not yet stored, each as a record as its
// writer's close would have (one the close would refuse is dropped with
// a warning). It is called at the open and then before every append
// (appendLocked, and LineWriter.AppendLines before its journal entry), amu
// held, until it succeeds; an append in the meantime fails with its error
// (ENOSPC while the disk is full), so that none can make a lost entry's
// condition come true nor store a record before the recovered lines. Its
// own appends go through LineWriter.appendLinesLocked and appendLocked,
// which call it again: recovering makes those calls return at once (amu
// is not reentrant, and the recovery must not recurse). Lock order: amu,
// then j.mu, as for every append.
func (p *Partition) recoverPendingLocked() error {
	j := &p.unfinished
	if len(j.unrecovered) == 0 || j.recovering {
		return nil
	}
	j.recovering = true
	defer func() { j.recovering = false }()
	path := filepath.Join(p.dir, unfinishedFile)
	if j.needRewrite {
		j.mu.Lock()
		err := j.rewrite(p)
		j.mu.Unlock()
		if err != nil {
			return fmt.Errorf("rewriting %s to recover unfinished lines: %w", path, err)
		}
		j.needRewrite = false
	}
	cfg := p.config()
	for len(j.unrecovered) > 0 {
		k := j.unrecovered[0]
		j.mu.Lock()
		l := j.lines[k]
		var line []byte
		var ts int64
		var synced bool
		if l != nil {
			line = append(append([]byte(nil), l.tail...), '\n')
			ts, synced = l.ts, l.synced
		}
		j.mu.Unlock()
		if l == nil {
			j.unrecovered = j.unrecovered[1:]
			continue
		}
		w := &LineWriter{p: p, key: k, has: true, ts: ts, synced: synced}
		err := checkLines(nil, line, cfg)
		if err == nil {
			_, _, _, err = w.appendLinesLocked(nil, line, nil, cfg)
		}
		if err != nil {
			if errors.Is(err, ErrMessageTooLarge) || errors.Is(err, ErrBatchTooLarge) || errors.Is(err, ErrInvalidRecord) {
				p.log().Warn("unfinished line of a writer the daemon lost not appended: the close would have refused it",
					"bytes", len(line)-1, "err", err)
				if err := w.Set(nil); err != nil {
					return err
				}
				j.unrecovered = j.unrecovered[1:]
				continue
			}
			return err
		}
		j.unrecovered = j.unrecovered[1:]
		p.log().Info("unfinished line of a writer the daemon lost appended as a record", "bytes", len(line)-1)
	}
	j.unrecovered = nil
	j.mu.Lock()
	defer j.mu.Unlock()
	// (A recovered synced line's record was flushed by its append; if
	// that failed, the journal keeps the line: syncedEnd.)
	if len(j.lines) == 0 && !j.pending && j.syncedEnd <= p.recoveryPoint.Load() {
		if j.f != nil {
			j.f.Close()
			j.f = nil
		}
		j.size = 0
		return emptyUnfinishedFile(p.dir)
	}
	return nil
}
