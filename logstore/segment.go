package logstore

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segfs/segfs/index"
	"github.com/segfs/segfs/logstore/record"
	"golang.org/x/sys/unix"
)

// File suffixes. .textindex is segfs's own (Kafka ignores it): the sparse
// map from rendered text positions to batches, saved when a segment closes.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	textIndexSuffix = ".textindex"
	snapshotSuffix  = ".snapshot"
	deletedSuffix   = ".deleted"
	cleanedSuffix   = ".cleaned"
	swapSuffix      = ".swap"
)

// segment is one .log file with its indexes. The appender (holding the
// partition's append lock) is the only writer; readers use pread at
// positions below size, which is published after the bytes are written.
type segment struct {
	dir  string
	base int64
	log  *os.File
	oidx *index.OffsetIndex
	tidx *index.TimeIndex
	text textMap
	txns []AbortedTxn // the imported .txnindex (txnindex.go); fixed once the segment is shared

	// logPath is path(logSuffix), built once: a text view names it in
	// every scanner it starts (for its errors), at least once per offset/N
	// lookup, and formatting it there (fmt.Sprintf of the base, a Join)
	// was 1.8 % of the daemon's CPU under a loop of lookups.
	logPath string

	// The leader epoch changes recover met, in order (epoch, first
	// offset), for the partition's epoch cache (epochs.go: loadEpochs).
	recEpochs []epochEntry

	size         atomic.Int64 // committed bytes of the .log
	next         atomic.Int64 // offset after the last batch (base when empty)
	lastBatchPos atomic.Int64 // position of the last batch, -1 when empty
	maxTs        atomic.Int64 // largest timestamp, -1 when none
	maxTsOffset  atomic.Int64 // last offset of the batch holding maxTs

	// Appender-only state.
	bytesSinceIndex int64
	firstBatchTs    int64 // MaxTimestamp of the first batch, -1 unknown
	created         time.Time
	rollJitter      int64
	reserved        int64 // blocks are reserved past the size up to here (see reserve)
	kickedTo        int64 // writeback was started up to here (see kickWriteback)
	noReserve       bool  // a reservation failed (no fallocate, disk full): stop reserving

	refs atomic.Int32 // the partition holds one; readers hold others
	// References taken since the segment was opened, for the tests
	// that check a read takes only those of the segments it reads.
	acquires atomic.Int64
	deleted  atomic.Bool // renamed .deleted: remove the files at the last release
	closeMu  sync.Mutex
	closed   bool
}

func (s *segment) path(suffix string) string {
	return filepath.Join(s.dir, segmentName(s.base)+suffix)
}

func newSegmentStruct(dir string, base int64) *segment {
	s := &segment{dir: dir, base: base, firstBatchTs: -1, created: time.Now()}
	s.logPath = s.path(logSuffix)
	s.next.Store(base)
	s.lastBatchPos.Store(-1)
	s.maxTs.Store(-1)
	s.maxTsOffset.Store(base)
	s.refs.Store(1)
	return s
}

// createSegment makes a new empty active segment at base, replacing stale
// files of the same name, and fsyncs the directory so the new file survives
// a power cut.
func createSegment(dir string, base int64, cfg *Config) (*segment, error) {
	s := newSegmentStruct(dir, base)
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, textIndexSuffix, txnIndexSuffix} {
		os.Remove(s.path(suf))
	}
	f, err := os.OpenFile(s.path(logSuffix), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	s.log = f
	if err := s.openIndexes(true, cfg); err != nil {
		f.Close()
		return nil, err
	}
	if cfg.SegmentJitterMs > 0 {
		s.rollJitter = int64(randUint64() % uint64(min(cfg.SegmentJitterMs, cfg.SegmentMs)))
	}
	if err := syncDir(dir); err != nil {
		s.closeFiles()
		return nil, err
	}
	return s, nil
}

// openIndexes opens (creating if absent) both indexes. Writable indexes are
// preallocated to segment.index.bytes; read-only ones are mapped as they are.
func (s *segment) openIndexes(writable bool, cfg *Config) error {
	max := int(cfg.SegmentIndexBytes)
	o, err := index.OpenOffsetIndex(s.path(indexSuffix), s.base, max, writable)
	if err != nil {
		return err
	}
	t, err := index.OpenTimeIndex(s.path(timeIndexSuffix), s.base, max, writable)
	if err != nil {
		o.Close()
		return err
	}
	s.oidx, s.tidx = o, t
	return nil
}

func (s *segment) closeIndexes() {
	if s.oidx != nil {
		s.oidx.Close()
	}
	if s.tidx != nil {
		s.tidx.Close()
	}
}

func (s *segment) acquire() {
	s.refs.Add(1)
	s.acquires.Add(1)
}

// release drops a reference; the last one closes the files, and removes
// them if retention or compaction deleted the segment meanwhile.
func (s *segment) release() {
	if s.refs.Add(-1) == 0 {
		s.closeFiles()
		if s.deleted.Load() {
			for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, textIndexSuffix, txnIndexSuffix} {
				os.Remove(s.path(suf) + deletedSuffix)
			}
		}
	}
}

func (s *segment) closeFiles() {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	s.closeIndexes()
	if s.log != nil {
		s.log.Close()
	}
}

// readFull reads len(b) bytes at off or fails.
func (s *segment) readFull(b []byte, off int64) error {
	n, err := s.log.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// header reads the batch header at pos (which must lie below limit).
func (s *segment) header(pos, limit int64) (record.Header, error) {
	var buf [record.HeaderSize]byte
	if limit-pos < record.HeaderSize {
		return record.Header{}, &CorruptError{Path: s.path(logSuffix), Pos: pos, Err: record.ErrShort}
	}
	if err := s.readFull(buf[:], pos); err != nil {
		return record.Header{}, err
	}
	h, err := record.ParseHeader(buf[:])
	if err != nil {
		return h, &CorruptError{Path: s.path(logSuffix), Pos: pos, Err: err}
	}
	if pos+h.Size() > limit {
		return h, &CorruptError{Path: s.path(logSuffix), Pos: pos, Err: record.ErrShort}
	}
	return h, nil
}

// findBatch returns the position and header of the first batch whose last
// offset is >= offset, scanning headers from the index's floor entry.
// found is false when no batch below limit qualifies.
func (s *segment) findBatch(offset, limit int64) (pos int64, h record.Header, found bool, err error) {
	if s.oidx != nil {
		pos = int64(s.oidx.Lookup(offset).Position)
	}
	if pos > limit {
		pos = 0 // an index entry past the committed end cannot be trusted
	}
	for pos < limit {
		h, err = s.header(pos, limit)
		if err != nil {
			return pos, h, false, err
		}
		if h.LastOffset() >= offset {
			return pos, h, true, nil
		}
		pos += h.Size()
	}
	return pos, h, false, nil
}

// headerChunk is what walkHeaders reads at a time.
// walkStart returns where a walk of s's batch headers for the offsets
// from `from` on starts (the batch that holds from, or 0 when s starts at
// or after it) and the segment's size; ok is false when s holds no batch
// at or after from, or the search failed.
func (s *segment) walkStart(from int64) (pos, limit int64, ok bool) {
	limit = s.size.Load()
	if from <= s.base {
		return 0, limit, true
	}
	pos, _, found, err := s.findBatch(from, limit)
	return pos, limit, found && err == nil
}

const headerChunk = 64 << 10

// walkHeaders calls fn with the position and header of every batch of the
// segment from pos (a batch start) up to limit, and stops at the first
// header that is damaged or runs past limit (recovery has dealt with
// those). It reads the file headerChunk bytes at a time and takes only
// the headers from them: a walk over many small batches costs one pread
// per chunk rather than one per batch, and one over large batches one
// short read per batch, never their records.
func (s *segment) walkHeaders(pos, limit int64, fn func(pos int64, h *record.Header)) {
	var buf []byte
	bufPos, n := int64(0), 0
	for limit-pos >= record.HeaderSize {
		if pos < bufPos || pos+record.HeaderSize > bufPos+int64(n) {
			if buf == nil {
				buf = make([]byte, headerChunk)
			}
			m, _ := s.log.ReadAt(buf[:min(int64(len(buf)), limit-pos)], pos)
			if m < record.HeaderSize {
				return
			}
			bufPos, n = pos, m
		}
		o := pos - bufPos
		h, err := record.ParseHeader(buf[o : o+record.HeaderSize])
		if err != nil || pos+h.Size() > limit {
			return
		}
		fn(pos, &h)
		pos += h.Size()
	}
}

// batchScanner iterates whole batches of a segment file through a large
// read buffer, so recovery and text rendering cost one pread per megabyte
// rather than one per batch.
type batchScanner struct {
	f        *os.File
	path     string
	pos      int64 // next batch position
	end      int64
	buf      []byte
	bufPos   int64
	bufLen   int
	readSize int // next refill size: starts small, doubles up to scanBufSize
	reads    int // preads so far: the buffer's bytes change only with it
}

const (
	scanBufSize   = 1 << 20
	scanFirstRead = 16 << 10
)

// newScanner starts with small reads, so a lookup that needs one or two
// batches reads kilobytes, and grows them for long sequential scans.
func newScanner(f *os.File, path string, pos, end int64, buf []byte) *batchScanner {
	return &batchScanner{f: f, path: path, pos: pos, end: end, buf: buf[:cap(buf)], readSize: scanFirstRead}
}

// ensure makes [pos, pos+n) available in the buffer.
func (sc *batchScanner) ensure(pos int64, n int) ([]byte, error) {
	if pos >= sc.bufPos && pos+int64(n) <= sc.bufPos+int64(sc.bufLen) {
		o := int(pos - sc.bufPos)
		return sc.buf[o : o+n], nil
	}
	want := max(n, sc.readSize)
	sc.readSize = min(sc.readSize*2, scanBufSize)
	if rem := sc.end - pos; int64(want) > rem {
		want = int(rem)
	}
	if want < n {
		return nil, io.ErrUnexpectedEOF
	}
	if cap(sc.buf) < want {
		sc.buf = make([]byte, want)
	}
	sc.buf = sc.buf[:cap(sc.buf)]
	sc.reads++
	m, err := sc.f.ReadAt(sc.buf[:want], pos)
	if m < n {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		sc.bufLen = 0
		return nil, err
	}
	sc.bufPos, sc.bufLen = pos, m
	return sc.buf[:n], nil
}

// next returns the next whole batch (aliasing the buffer until the next
// call). io.EOF at the end; a *CorruptError (ErrShort for a torn tail) when
// the bytes at pos are not a complete batch header and length. It does not
// check the CRC.
func (sc *batchScanner) next() (int64, []byte, error) {
	if sc.pos >= sc.end {
		return sc.pos, nil, io.EOF
	}
	pos := sc.pos
	if sc.end-pos < 17 {
		return pos, nil, &CorruptError{Path: sc.path, Pos: pos, Err: fmt.Errorf("%w: %d bytes left", record.ErrShort, sc.end-pos)}
	}
	hdr, err := sc.ensure(pos, 17)
	if err != nil {
		return pos, nil, err
	}
	size, err := record.PeekSize(hdr)
	if err != nil {
		return pos, nil, &CorruptError{Path: sc.path, Pos: pos, Err: err}
	}
	if size > sc.end-pos {
		return pos, nil, &CorruptError{Path: sc.path, Pos: pos, Err: fmt.Errorf("%w: batch of %d bytes, %d left", record.ErrShort, size, sc.end-pos)}
	}
	b, err := sc.ensure(pos, int(size))
	if err != nil {
		return pos, nil, err
	}
	sc.pos = pos + size
	return pos, b, nil
}

// appendBatch writes one batch at the end of the segment and maintains the
// indexes and the text map (KAFKA-FORMAT.md §3.3, §4.2). The caller holds
// the partition's append lock and publishes the new end afterwards.
func (s *segment) appendBatch(b []byte, h *record.Header, st record.TextStats, cfg *Config) error {
	pos := s.size.Load()
	if len(b) >= reserveMinBatch {
		s.reserve(pos+int64(len(b)), cfg.SegmentBytes)
	}
	if _, err := s.log.WriteAt(b, pos); err != nil {
		// Take back whatever part of the batch reached the file, so the
		// log never holds a torn batch; a failed truncate is the caller's
		// cue to fence the partition. The truncate also frees any
		// reservation: stop reserving for this segment.
		s.reserved, s.noReserve = 0, true
		if terr := s.log.Truncate(pos); terr != nil {
			return &writeFailure{err: err, fatal: true}
		}
		return &writeFailure{err: err}
	}
	s.addBatch(pos, int64(len(b)), h, st, cfg)
	return nil
}

// addBatch takes in a batch of size bytes just written at pos, the end of
// the segment: the sparse index entries (KAFKA-FORMAT.md §3.3, §4.2), the
// max timestamp, the text map, then the new end, published last. The
// append path calls it for every batch it writes, and so does the cleaner
// for every batch of the segment it writes (cleanSegments), whose indexes
// thus follow the same rules, and match what recovery would rebuild.
func (s *segment) addBatch(pos, size int64, h *record.Header, st record.TextStats, cfg *Config) {
	last := h.LastOffset()
	ts := h.MaxTimestamp
	if s.bytesSinceIndex > cfg.IndexIntervalBytes {
		// Index failures (full) are not data loss: the roll check keeps
		// them from happening, and recovery rebuilds indexes anyway.
		if err := s.oidx.Append(last, int32(pos)); err == nil {
			s.tidx.MaybeAppend(max(s.maxTs.Load(), ts), s.offsetOfMaxAfter(ts, last), false)
		}
		s.bytesSinceIndex = 0
	}
	s.bytesSinceIndex += size
	if ts > s.maxTs.Load() {
		s.maxTs.Store(ts)
		s.maxTsOffset.Store(last)
	}
	if s.firstBatchTs < 0 && pos == 0 {
		s.firstBatchTs = ts
	}
	s.text.add(pos, size, h.BaseOffset, st)
	s.next.Store(last + 1)
	s.size.Store(pos + size)
	// After the size: Status reads the header at lastBatchPos below the
	// size it loads next, and found none there (last.timestamp=-1 on a
	// log with records) when it saw the position before the size.
	s.lastBatchPos.Store(pos)
}

// Block reservation for bulk appends. Appending to the end of a file makes
// the filesystem find blocks (ext4: a delayed-allocation reservation per
// page) inside every pwrite, on the critical path of the writer's reply.
// Large appends therefore reserve the blocks ahead of the writer, a few
// megabytes at a time, with fallocate(FALLOC_FL_KEEP_SIZE): the file's size
// stays the bytes written, so readers, recovery, Kafka and a kill -9 see
// exactly what they saw without it, and the unused tail is given back when
// the segment is sealed (releaseReserve). Small appends (a line at a time)
// never reserve, so idle partitions hold no extra space. Kafka's
// preallocate (whole segment, size included) is a different thing.
const (
	reserveStep     = 4 << 20  // reserve this far past the end of the append
	reserveMinBatch = 64 << 10 // only batches at least this large reserve
)

// reserve makes sure the blocks of the file are allocated up to end, and
// reserveStep beyond it (never past limit, the segment's maximum size). Any
// failure (no fallocate on this filesystem, ENOSPC, EDQUOT) only stops the
// reservations for this segment: the write that follows then allocates its
// blocks, and succeeds or fails, exactly as without them. The caller holds
// the partition's append lock.
func (s *segment) reserve(end, limit int64) {
	if end <= s.reserved || s.noReserve {
		return
	}
	from := max(s.reserved, s.size.Load())
	to := min(end+reserveStep, limit, math.MaxInt32)
	if to <= from {
		return
	}
	if err := fallocateKeepSize(s.log, from, to-from); err != nil {
		s.noReserve = true
		return
	}
	s.reserved = to
}

// fallocateKeepSize is fallocate(2) with FALLOC_FL_KEEP_SIZE, a variable so
// that tests can make it fail.
var fallocateKeepSize = func(f *os.File, off, n int64) error {
	for {
		err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, off, n)
		if err != unix.EINTR {
			return err
		}
	}
}

// releaseReserve frees blocks past the end of the file: the unused part of
// this process's reservations, or one left by a process killed while the
// segment was active. It is an ftruncate to the current size (ext4, XFS and
// tmpfs free the blocks past EOF even when the size does not change), so
// the size never changes; the mtime it bumps is put back, because retention
// falls back to it for segments without timestamps. Best effort: blocks it
// cannot free only cost space until the segment is deleted.
func (s *segment) releaseReserve() {
	reserved := s.reserved
	s.reserved, s.noReserve = 0, true
	var st unix.Stat_t
	if err := unix.Fstat(int(s.log.Fd()), &st); err != nil {
		return
	}
	// st_blocks also counts metadata (extent tree blocks): without a
	// reservation of our own, only a tail of at least a megabyte past the
	// last block of data (a killed process's) is worth the call.
	if reserved <= st.Size && st.Blocks*512 < (st.Size+4095)/4096*4096+1<<20 {
		return
	}
	mtime := time.Unix(st.Mtim.Unix())
	if err := s.log.Truncate(st.Size); err != nil {
		return
	}
	os.Chtimes(s.path(logSuffix), time.Time{}, mtime)
}

// offsetOfMaxAfter is the offset to pair with the segment's max timestamp
// once a batch (ts, last) is included.
func (s *segment) offsetOfMaxAfter(ts, last int64) int64 {
	if ts > s.maxTs.Load() {
		return last
	}
	return s.maxTsOffset.Load()
}

// syncFile is the fsync of segment data, a variable so that tests can
// inject the failure of a real disk (FUSE-NOTES.md F10).
var syncFile = func(f *os.File) error { return f.Sync() }

// writeFailure is an append that did not reach the file. fatal means the
// file could not be restored to its previous size.
type writeFailure struct {
	err   error
	fatal bool
}

func (w *writeFailure) Error() string { return w.err.Error() }
func (w *writeFailure) Unwrap() error { return w.err }

// flush makes the segment durable: data, then indexes.
func (s *segment) flush() error {
	if err := syncFile(s.log); err != nil {
		return err
	}
	if err := s.oidx.Flush(); err != nil {
		return err
	}
	return s.tidx.Flush()
}

// seal is Kafka's onBecomeInactiveSegment: the final time-index entry,
// indexes trimmed to their entries, the text map saved, all fsynced. A
// roll whose next segment cannot be created leaves the sealed segment
// active; the roll is retried by the next append and sealing again is
// harmless.
func (s *segment) seal() error { return s.sealText(s.path(textIndexSuffix)) }

// sealText is seal saving the text map at textPath: the cleaner seals the
// segment it writes under .cleaned names (cleanSegments).
func (s *segment) sealText(textPath string) error {
	s.releaseReserve()
	if ts := s.maxTs.Load(); ts >= 0 {
		s.tidx.MaybeAppend(ts, s.maxTsOffset.Load(), true)
	}
	// Data first, then the indexes, which Seal trims, syncs and turns
	// read-only, closing their descriptors: a closed segment keeps only
	// its .log open.
	if err := syncFile(s.log); err != nil {
		return err
	}
	if err := s.oidx.Seal(); err != nil {
		return err
	}
	if err := s.tidx.Seal(); err != nil {
		return err
	}
	// The text map is derived data, rebuilt at the next load when its file
	// is missing: failing to save it (a full disk) must not fail the roll.
	if err := s.text.save(textPath, s.size.Load()); err != nil {
		os.Remove(textPath)
	}
	return nil
}

// batchHeader checks one whole batch b as recovery does, all but its CRC:
// its header, and offsets that move forward from prevNext and fit the
// segment. In a dense segment each batch must start exactly at prevNext.
func (s *segment) batchHeader(b []byte, prevNext int64, dense bool) (record.Header, error) {
	h, err := record.ParseHeader(b)
	if err != nil {
		return h, err
	}
	if h.Size() != int64(len(b)) {
		return h, fmt.Errorf("%w: batch of %d bytes in %d", record.ErrCorrupt, h.Size(), len(b))
	}
	if h.BaseOffset < prevNext || h.LastOffsetDelta < 0 || h.LastOffset()-s.base > math.MaxInt32 ||
		(dense && h.BaseOffset != prevNext) {
		return h, fmt.Errorf("%w: batch offsets %d..%d do not follow %d", record.ErrCorrupt, h.BaseOffset, h.LastOffset(), prevNext)
	}
	return h, nil
}

// recover rebuilds the segment's indexes and text map from its .log,
// validating every batch, and truncates the file at the first invalid or
// torn one (KAFKA-FORMAT.md §7.5). It returns the bytes dropped.
func (s *segment) recover(cfg *Config, writable bool, dec *record.Decoder) (int64, error) {
	s.closeIndexes()
	os.Remove(s.path(indexSuffix))
	os.Remove(s.path(timeIndexSuffix))
	os.Remove(s.path(textIndexSuffix))
	if err := s.openIndexes(true, cfg); err != nil {
		return 0, err
	}
	fi, err := s.log.Stat()
	if err != nil {
		return 0, err
	}
	end := fi.Size()
	s.text = textMap{}
	s.recEpochs = nil
	s.maxTs.Store(-1)
	s.maxTsOffset.Store(s.base)
	s.lastBatchPos.Store(-1)
	s.firstBatchTs = -1
	s.bytesSinceIndex = 0
	// The active segment is dense: offsets are assigned one after another
	// and the cleaner never rewrites it. The base offset lies outside the
	// batch CRC, so a gap there is damage to that field (a flipped bit),
	// and the batch is cut like any other corrupt one. Closed segments
	// may have been compacted, and compaction leaves gaps.
	valid, prevNext, lastIndexed, err := s.recoverScan(cfg, end, dec, writable)
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", s.path(logSuffix), err)
	}
	s.bytesSinceIndex = valid - lastIndexed
	dropped := end - valid
	if dropped > 0 {
		// Only a torn or damaged tail may go. A message of Kafka's old
		// formats with a valid CRC is data segfs cannot serve, not a
		// torn write: refuse it, the .log untouched. Open checks each
		// segment's first message beforehand (checkLegacySegments);
		// this catches old messages after v2 batches.
		if err := legacyAt(s.log, s.path(logSuffix), valid, end); err != nil {
			return 0, err
		}
		if err := s.log.Truncate(valid); err != nil {
			return 0, err
		}
	}
	s.size.Store(valid)
	s.next.Store(prevNext)
	if !writable {
		if err := s.seal(); err != nil {
			return dropped, err
		}
	} else if err := s.log.Sync(); err != nil {
		return dropped, err
	}
	return dropped, nil
}

// recoverChunk is a run of whole batches, headers checked, in one of the
// read buffers of recoverScan. Their CRCs are checked by both goroutines:
// the worker from the first batch up, the reader from the last one down,
// each claiming a batch in crc before checking it, so that whichever has
// time left does the rest and they meet somewhere in the middle.
type recoverChunk struct {
	buf     int // which buffer; handed back when the worker is done
	pos     []int64
	batches [][]byte
	headers []record.Header
	crc     []atomic.Int32 // crcUnclaimed, crcBusy, crcOK or crcBad per batch
	// readerDone is closed when the reader has stopped checking CRCs in
	// this chunk: the worker waits on it for a batch the reader claimed.
	readerDone chan struct{}
}

const (
	crcUnclaimed = iota
	crcBusy
	crcOK
	crcBad
)

// claim takes batch i's CRC check for the caller, false if the other
// goroutine has it.
func (c *recoverChunk) claim(i int) bool { return c.crc[i].CompareAndSwap(crcUnclaimed, crcBusy) }

// check checks batch i's CRC (claimed by the caller) and publishes it.
func (c *recoverChunk) check(i int) {
	if record.Validate(c.batches[i]) == nil {
		c.crc[i].Store(crcOK)
	} else {
		c.crc[i].Store(crcBad)
	}
}

// recoverChunkSize is how much of the file recovery reads at a time. A
// variable only so that TestRecoveryDamageAcrossChunks can run its ~60
// cases over chunks a sixteenth of the size (the same pipeline over a
// sixteenth of the bytes); nothing else sets it.
var recoverChunkSize = 4 << 20

const recoverBuffers = 3

// recoverScan validates every batch of the segment from position 0 and
// rebuilds the indexes and the text map, stopping at the first batch that
// is torn, fails its CRC, goes backwards (in a dense segment: does not
// start exactly at the previous batch's next offset) or does not decode. It returns the
// valid length, the next offset and the position of the last index entry.
//
// The work is split in a pipeline over a few buffers: this goroutine reads
// and checks batch headers and offsets, a second one sizes records (for the
// text map) and maintains the indexes, and both check CRCs, so that
// recovery costs about half of one pass over the file on two cores. The
// worker takes batches in file order and stops at the first bad one;
// everything before it is kept, which is what checking batch by batch in
// one goroutine keeps. A read error before that point fails recovery (it
// is not a torn tail: truncating could destroy good data).
func (s *segment) recoverScan(cfg *Config, end int64, dec *record.Decoder, dense bool) (valid, next, lastIndexed int64, ioErr error) {
	var bufs [recoverBuffers][]byte
	free := make(chan int, recoverBuffers)
	for i := range bufs {
		free <- i
	}
	work := make(chan *recoverChunk, recoverBuffers)
	next = s.base
	var broken atomic.Bool // the worker met a bad batch: read no further
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range work {
			for i, b := range c.batches {
				if broken.Load() {
					break
				}
				if c.claim(i) {
					c.check(i)
				}
				if c.crc[i].Load() == crcBad {
					broken.Store(true)
					break
				}
				st, err := dec.LengthStats(b, 0)
				if c.crc[i].Load() == crcBusy {
					<-c.readerDone
				}
				if err != nil || c.crc[i].Load() != crcOK {
					broken.Store(true)
					break
				}
				pos, h := c.pos[i], &c.headers[i]
				if pos-lastIndexed > cfg.IndexIntervalBytes && pos > 0 {
					if s.oidx.Append(h.LastOffset(), int32(pos)) == nil {
						s.tidx.MaybeAppend(max(s.maxTs.Load(), h.MaxTimestamp), s.offsetOfMaxAfter(h.MaxTimestamp, h.LastOffset()), false)
					}
					lastIndexed = pos
				}
				if h.MaxTimestamp > s.maxTs.Load() {
					s.maxTs.Store(h.MaxTimestamp)
					s.maxTsOffset.Store(h.LastOffset())
				}
				if pos == 0 {
					s.firstBatchTs = h.MaxTimestamp
				}
				s.text.add(pos, int64(len(b)), h.BaseOffset, st)
				s.lastBatchPos.Store(pos)
				if e := h.PartitionLeaderEpoch; e >= 0 && (len(s.recEpochs) == 0 || s.recEpochs[len(s.recEpochs)-1].epoch != e) {
					s.recEpochs = append(s.recEpochs, epochEntry{e, h.BaseOffset})
				}
				next = h.NextOffset()
				valid = pos + int64(len(b))
			}
			<-c.readerDone // the reader no longer touches the buffer
			free <- c.buf
		}
	}()
	// send hands a chunk to the worker, then checks CRCs from its last
	// batch down until it meets the worker.
	send := func(c *recoverChunk) {
		c.crc = make([]atomic.Int32, len(c.batches))
		c.readerDone = make(chan struct{})
		work <- c
		for i := len(c.batches) - 1; i >= 0 && !broken.Load() && c.claim(i); i-- {
			c.check(i)
		}
		close(c.readerDone)
	}
	prevNext := s.base
	pos := int64(0)
	var big []byte // a batch larger than a chunk gets a buffer of its own
scan:
	for pos < end && !broken.Load() {
		bi := <-free
		n := int(min(int64(recoverChunkSize), end-pos))
		if len(bufs[bi]) < n { // a small segment needs no whole chunk
			bufs[bi] = make([]byte, n)
		}
		buf := bufs[bi][:n]
		if m, err := s.log.ReadAt(buf, pos); m < n {
			// A read error is not a torn tail: truncating here could
			// destroy good data, so recovery fails instead.
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			ioErr = err
			free <- bi
			break
		}
		c := &recoverChunk{buf: bi}
		off := 0
		for off < n {
			rest := buf[off:]
			if len(rest) < 17 {
				break // the header straddles the chunk (or a torn tail): next chunk starts here
			}
			size, err := record.PeekSize(rest)
			if err != nil {
				send(c)
				break scan
			}
			if size > end-(pos+int64(off)) {
				send(c)
				break scan // torn tail
			}
			var b []byte
			isBig := false
			if size <= int64(len(rest)) {
				b = rest[:size]
			} else if off > 0 {
				break // straddles: reread from this batch
			} else {
				// One batch larger than the chunk: read it on its own.
				big = make([]byte, size)
				if m, err := s.log.ReadAt(big, pos); int64(m) < size {
					if err == nil || err == io.EOF {
						err = io.ErrUnexpectedEOF
					}
					ioErr = err
					send(c)
					break scan
				}
				b, isBig = big, true
			}
			h, err := s.batchHeader(b, prevNext, dense)
			if err != nil {
				send(c)
				break scan
			}
			c.pos = append(c.pos, pos+int64(off))
			c.batches = append(c.batches, b)
			c.headers = append(c.headers, h)
			prevNext = h.NextOffset()
			off += int(size)
			if isBig {
				break
			}
		}
		if off == 0 {
			free <- bi
			break // nothing whole fits: a torn tail shorter than a header
		}
		send(c)
		pos += int64(off)
	}
	close(work)
	<-done
	if broken.Load() {
		// The worker stopped at a bad batch before anything the reader
		// failed to read: the original single pass would have stopped
		// there too.
		ioErr = nil
	}
	return valid, next, lastIndexed, ioErr
}

// loadTail restores the appender state of a cleanly closed active segment
// (or a trusted closed one) by scanning batch headers from the last offset
// index entry: next offset, last batch, max timestamp.
func (s *segment) loadTail() error {
	size := s.size.Load()
	if s.tidx != nil {
		if e := s.tidx.Last(); e.Timestamp >= 0 {
			s.maxTs.Store(e.Timestamp)
			s.maxTsOffset.Store(e.Offset)
		}
	}
	pos := int64(0)
	if s.oidx != nil && s.oidx.Entries() > 0 {
		pos = int64(s.oidx.Entry(s.oidx.Entries() - 1).Position)
	}
	if size > 0 {
		h, err := s.header(0, size)
		if err != nil {
			return err
		}
		s.firstBatchTs = h.MaxTimestamp
	}
	for pos < size {
		h, err := s.header(pos, size)
		if err != nil {
			return err
		}
		if h.MaxTimestamp > s.maxTs.Load() {
			s.maxTs.Store(h.MaxTimestamp)
			s.maxTsOffset.Store(h.LastOffset())
		}
		s.lastBatchPos.Store(pos)
		s.next.Store(h.NextOffset())
		pos += h.Size()
	}
	return nil
}

// buildText rebuilds the text map by reading every batch. A batch that
// cannot be decoded stops it and is remembered, so that readers reaching it
// get an error instead of silently skipping its records.
func (s *segment) buildText() error {
	var dec record.Decoder
	size := s.size.Load()
	s.text = textMap{}
	sc := newScanner(s.log, s.path(logSuffix), 0, size, nil)
	for {
		pos, b, err := sc.next()
		if err == io.EOF {
			return nil
		}
		if err == nil {
			var h record.Header
			h, err = record.ParseHeader(b)
			if err == nil {
				var st record.TextStats
				if st, err = dec.LengthStats(b, 0); err == nil {
					s.text.add(pos, int64(len(b)), h.BaseOffset, st)
					continue
				}
			}
		}
		var ce *CorruptError
		if !errors.As(err, &ce) && !errors.Is(err, record.ErrCorrupt) && !errors.Is(err, record.ErrShort) && !errors.Is(err, record.ErrCodec) {
			return err
		}
		s.text.mu.Lock()
		s.text.corruptAt = max(pos, 1)
		s.text.mu.Unlock()
		return nil
	}
}
