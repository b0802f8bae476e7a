package logstore

import (
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/segfs/segfs/logstore/record"
)

// TextView reads the partition as text (record.Decoder.AppendText rendering)
// from the first retained record with offset >= From(), with positions that
// never change for the life of the view: appends only extend it, and
// segments it has open stay readable after retention or compaction removes
// them. Safe for concurrent use.
type TextView struct {
	p    *Partition
	from int64
	gen  uint64
	sep  []byte

	mu     sync.Mutex
	segs   []*segment
	skip   int64 // text bytes of segs[0] before the first record >= from
	closed bool
	// cut: the partition closed (the store closed) with segments past
	// segs that v had not taken yet; a read at the end of segs answers
	// ErrClosed, not io.EOF, as there is more that v cannot read.
	cut bool
	dec record.Decoder
	buf []byte // scan buffer
	// The last rendered batch, so that sequential reads of a large batch in
	// 128 KiB pieces render it once.
	cacheSeg   *segment
	cacheStart int64 // text position of cache[0] within cacheSeg
	cache      []byte
	// A cursor after the last batch rendered, with its read buffer, so a
	// sequential reader continues where it stopped instead of rescanning
	// from a text-map entry and rereading the buffer.
	curSeg  *segment
	curBt   int64 // text position (in curSeg) of the batch at cur.pos
	curNext int64 // offset the batch at cur.pos must not start below
	cur     *batchScanner
	// The batch Text found from in, left for the first read: its CRC was
	// checked in the bytes cur still holds (cur.reads == hintReads), and
	// its text size and the size below from are known, so that read
	// neither checks nor sizes it again and renders it from `from` on.
	hintSeg   *segment
	hintPos   int64
	hintReads int
	hintBelow int64 // text of the batch's records below from
	hintSize  int64 // text of the whole batch
	hintSplit record.TextSplit
	// hintRendered: Text rendered the batch from `from` on into the
	// render cache (AppendTextBelow) and hintSplit is unset.
	hintRendered bool
}

// Text opens a view from offset from; ErrOffsetOutOfRange when from is
// below LogStartOffset or above LogEndOffset (== LogEndOffset: empty, grows).
func (p *Partition) Text(from int64) (*TextView, error) {
	var v *TextView
	for {
		// The generation is bumped under p.mu together with the change
		// of segs: if it is the same after the snapshot, the segments
		// are the generation's.
		gen := p.gen.Load()
		sep := []byte(p.config().KeySeparator)
		if err := p.checkRange(from); err != nil {
			return nil, err
		}
		v = &TextView{p: p, from: from, gen: gen, sep: sep}
		if v.segs = p.acquireSegments(from); v.segs == nil {
			return nil, p.closedErr()
		}
		p.addView(v)
		if p.gen.Load() == gen {
			break
		}
		v.Close()
	}
	skip, err := v.textBefore(v.segs[0], from)
	if err != nil {
		v.Close()
		return nil, err
	}
	v.skip = skip
	return v, nil
}

// allOffsets renders or sizes every record of a batch: which records a
// view shows is decided by its skip, not by record offsets.
const allOffsets = math.MinInt64

// bufPool recycles the scan and render buffers of text views: every
// `head -n1 offset/N` opens a view, and allocating a megabyte each time
// would dominate the lookup.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, scanBufSize); return &b }}

func getBuf() []byte { return (*bufPool.Get().(*[]byte))[:0] }

func putBuf(b []byte) {
	if cap(b) == scanBufSize {
		b = b[:0]
		bufPool.Put(&b)
	}
}

// scanBuf returns the view's scan buffer, taken from the pool at its first
// use, as the render cache is: a view that is only sized holds neither.
// Every stat of a data file opens such a view, which the node keeps until
// the kernel forgets it, and two pooled megabytes each made the buffers
// the largest item of the daemon's heap.
func (v *TextView) scanBuf() []byte {
	if v.buf == nil {
		v.buf = getBuf()
	}
	return v.buf
}

func (p *Partition) addView(v *TextView) {
	p.viewsMu.Lock()
	if p.views == nil {
		p.views = make(map[*TextView]struct{})
	}
	p.views[v] = struct{}{}
	p.viewsMu.Unlock()
}

func (p *Partition) removeView(v *TextView) {
	p.viewsMu.Lock()
	delete(p.views, v)
	p.viewsMu.Unlock()
}

// pinViews makes every open view take the segments rolled since it last
// looked. Retention and compaction call it before segments leave segs: a
// view then keeps reading them, like an unlinked file, instead of
// skipping the text of a segment that came and went between two of its
// reads. The caller holds neither p.mu nor a view's lock.
func (p *Partition) pinViews() {
	p.viewsMu.Lock()
	vs := make([]*TextView, 0, len(p.views))
	for v := range p.views {
		vs = append(vs, v)
	}
	p.viewsMu.Unlock()
	for _, v := range vs {
		v.mu.Lock()
		if !v.closed {
			v.refreshLocked()
		}
		v.mu.Unlock()
	}
}

// textBefore is the rendered size of the records of s below offset. When
// offset falls inside a batch it leaves that batch, checked and sized, as
// the view's cursor and hint for the first read.
func (v *TextView) textBefore(s *segment, offset int64) (int64, error) {
	total, end, _ := s.text.snapshot()
	if offset <= s.base {
		return 0, nil
	}
	sepLen := len(v.sep)
	e, span, found := s.text.floorOffsetSpan(offset)
	t := e.before.Size(sepLen)
	sc := newScanner(s.log, s.logPath, e.pos, end, v.scanBuf())
	// The batches from e to the next entry hold offset: read them in one
	// pread rather than a small one for the first header and another for
	// the rest.
	sc.readSize = int(min(max(span, scanFirstRead), scanBufSize))
	kept := false
	defer func() {
		if !kept {
			v.buf = sc.buf[:0]
		}
	}()
	// The offset checks of readSegment: a damaged BaseOffset (outside the
	// CRC) must not make this walk pick the wrong batch.
	prevNext, segNext, atEntry := e.offset, v.segNext(s), found
	if !found {
		prevNext = math.MinInt64 // offset lies below the first batch
	}
	for {
		pos, b, err := sc.next()
		if err == io.EOF {
			return total.Size(sepLen), nil // every record of s is below offset
		}
		if err != nil {
			return 0, err
		}
		h, err := record.ParseHeader(b)
		if err == nil {
			err = checkBatchOffsets(&h, prevNext, segNext, atEntry)
		}
		if err != nil {
			return 0, &CorruptError{Path: s.logPath, Pos: pos, Err: err}
		}
		if h.LastOffset() < offset {
			_, st, err := v.dec.TextStatsSplit(b, math.MinInt64)
			if err != nil {
				return 0, &CorruptError{Path: s.logPath, Pos: pos, Err: err}
			}
			t += st.Size(sepLen)
			prevNext, atEntry = h.NextOffset(), false
			continue
		}
		if err := record.Validate(b); err != nil {
			return 0, &CorruptError{Path: s.logPath, Pos: pos, Err: err}
		}
		// The size below offset needs a walk of every record of the
		// batch, and the first read renders those from offset on: do
		// both in one pass now, the text from offset on going to the
		// render cache, from which the first read copies it (the
		// batch's CRC is checked above, before anything is shown). The
		// lookup of offset/N that opened this view is usually followed
		// by that read at once (head -n1); a view only sized (a stat)
		// pays the render instead of a walk of the same records.
		if v.cache == nil {
			v.cache = getBuf()
		}
		out, below, ok := v.dec.AppendTextBelow(v.cache[:0], b, offset, v.sep)
		if ok {
			v.cache = out
			v.hintBelow, v.hintSize, v.hintRendered = below.Size(sepLen), below.Size(sepLen)+int64(len(out)), true
			v.cacheSeg, v.cacheStart = s, t+v.hintBelow
		} else {
			// Records the one-pass render does not take (headers, long
			// varints, damage): size them here and render them at the
			// first read, or word the error.
			sp, err := v.dec.SplitText(b, offset)
			if err != nil {
				return 0, &CorruptError{Path: s.logPath, Pos: pos, Err: err}
			}
			v.hintBelow, v.hintSize = sp.Below.Size(sepLen), sp.Below.Size(sepLen)+sp.Rest.Size(sepLen)
			v.hintSplit, v.hintRendered = sp, false
		}
		// Back up to the batch: it is still in the buffer, and the first
		// read continues from here as from a cursor.
		sc.pos = pos
		kept = true
		v.cur, v.curSeg, v.curBt, v.curNext = sc, s, t, prevNext
		v.hintSeg, v.hintPos, v.hintReads = s, pos, sc.reads
		return t + v.hintBelow, nil
	}
}

// segNext is the offset no batch of s may reach: the next segment's base,
// or unbounded for the active segment, whose end moves.
func (v *TextView) segNext(s *segment) int64 {
	segNext := s.next.Load()
	if v.p.active() == s || segNext <= s.base {
		return math.MaxInt64
	}
	return segNext
}

// checkBatchOffsets rejects a batch whose offsets do not follow prevNext
// (exactly, at a text map entry) or leave the segment. BaseOffset lies
// outside the CRC: a damaged one must not make the renderer drop records
// (or the offsets lie).
func checkBatchOffsets(h *record.Header, prevNext, segNext int64, atEntry bool) error {
	if h.BaseOffset < prevNext || h.LastOffset() >= segNext || h.LastOffsetDelta < 0 ||
		(atEntry && h.BaseOffset != prevNext) {
		return fmt.Errorf("%w: batch offsets %d..%d outside [%d, %d)", record.ErrCorrupt, h.BaseOffset, h.LastOffset(), prevNext, segNext)
	}
	return nil
}

// From is the view's first offset.
func (v *TextView) From() int64 { return v.from }

// Generation is the partition generation the view was opened in.
func (v *TextView) Generation() uint64 { return v.gen }

// refreshLocked adds segments rolled since the view last looked.
func (v *TextView) refreshLocked() {
	last := v.segs[len(v.segs)-1]
	v.p.mu.RLock()
	defer v.p.mu.RUnlock()
	if v.p.segs[len(v.p.segs)-1] == last {
		return
	}
	if v.p.closed {
		// The closed partition's segments are not v's to take (their
		// files are closed): v reads on through those it holds, as an
		// unlinked file is read, and then says the rest is gone.
		v.cut = true
		return
	}
	for _, s := range v.p.segs {
		if s.base > last.base {
			s.acquire()
			v.segs = append(v.segs, s)
		}
	}
}

// Size is the number of text bytes the view holds now (grows with appends).
func (v *TextView) Size() int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return 0
	}
	v.refreshLocked()
	var n int64
	for _, s := range v.segs {
		total, _, _ := s.text.snapshot()
		n += total.Size(len(v.sep))
	}
	return n - v.skip
}

// ReadAt fills b from text position off. It returns io.EOF at or past
// Size(). A batch that fails its CRC gives an error wrapping ErrCorrupt
// (never garbage text).
func (v *TextView) ReadAt(b []byte, off int64) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return 0, ErrClosed
	}
	if off < 0 {
		return 0, fmt.Errorf("negative offset %d", off)
	}
	v.refreshLocked()
	sepLen := len(v.sep)
	n := 0
	t := off + v.skip // position in the concatenated text of v.segs
	for i, s := range v.segs {
		total, end, corruptAt := s.text.snapshot()
		size := total.Size(sepLen)
		if t >= size {
			if corruptAt > 0 {
				return n, &CorruptError{Path: s.logPath, Pos: corruptAt, Err: record.ErrCorrupt}
			}
			t -= size
			continue
		}
		m, err := v.readSegment(s, b[n:], t, end)
		n += m
		if err != nil {
			return n, err
		}
		if n == len(b) {
			return n, nil
		}
		t = 0
		_ = i
	}
	if n == 0 {
		if v.cut {
			return 0, fmt.Errorf("%w: the text of %s goes on past what this open file holds", ErrClosed, v.p.name())
		}
		return 0, io.EOF
	}
	return n, nil
}

// readSegment copies text of s from text position t into b, reading batches
// below end.
func (v *TextView) readSegment(s *segment, b []byte, t, end int64) (_ int, rerr error) {
	sepLen := len(v.sep)
	n := 0
	// Serve from the cached batch when it covers t.
	if v.cacheSeg == s && t >= v.cacheStart && t < v.cacheStart+int64(len(v.cache)) {
		n = copy(b, v.cache[t-v.cacheStart:])
		t += int64(n)
		if n == len(b) {
			return n, nil
		}
	}
	var sc *batchScanner
	var bt int64
	e := s.text.floorText(t, sepLen)
	fromCursor := false
	if v.curSeg == s && v.cur != nil && v.curBt <= t && v.cur.pos <= end && e.before.Size(sepLen) <= v.curBt {
		sc, bt, fromCursor = v.cur, v.curBt, true
		sc.end = end // the active segment may have grown
	} else {
		bt = e.before.Size(sepLen)
		if v.cur != nil {
			// Reuse the buffer; its contents are dropped with bufLen.
			v.cur.f, v.cur.path, v.cur.pos, v.cur.end, v.cur.bufLen = s.log, s.logPath, e.pos, end, 0
			v.cur.readSize = scanFirstRead
			sc = v.cur
		} else {
			sc = newScanner(s.log, s.logPath, e.pos, end, v.scanBuf())
		}
	}
	prevNext, segNext := v.curNext, v.segNext(s)
	atEntry := !fromCursor // the text map recorded this batch's exact base
	if atEntry {
		prevNext = e.offset
	}
	defer func() {
		v.cur, v.curSeg, v.curBt, v.curNext = sc, s, bt, prevNext
		if rerr != nil {
			// The scanner has moved past the batch that failed: a cursor
			// left there would let the next read skip it silently.
			v.curSeg = nil
		}
	}()
	for n < len(b) {
		pos, batch, err := sc.next()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		// BaseOffset lies outside the CRC: a damaged one must not make the
		// renderer drop records (or the offsets lie), so batches must move
		// forward from the text map's entry and stay inside the segment.
		h, err := record.ParseHeader(batch)
		if err == nil {
			err = checkBatchOffsets(&h, prevNext, segNext, atEntry)
		}
		if err != nil {
			return n, &CorruptError{Path: s.logPath, Pos: pos, Err: err}
		}
		prevNext = h.NextOffset()
		atEntry = false
		// The batch Text found the view's first offset in is checked and
		// sized already, if these are still the bytes it checked.
		hinted := v.hintSeg == s && pos == v.hintPos && sc == v.cur && sc.reads == v.hintReads
		v.hintSeg = nil
		sz := int64(-1)
		if hinted {
			sz = v.hintSize
		} else if bt < t {
			// Skipping ahead: sizing a batch is cheaper than rendering it.
			_, st, err := v.dec.TextStatsSplit(batch, math.MinInt64)
			if err != nil {
				return n, &CorruptError{Path: s.logPath, Pos: pos, Err: err}
			}
			sz = st.Size(sepLen)
		}
		if sz >= 0 && bt+sz <= t {
			bt += sz
			continue
		}
		// The batch holds wanted text: check it before a byte of it is shown.
		if !hinted {
			if err := record.Validate(batch); err != nil {
				return n, &CorruptError{Path: s.logPath, Pos: pos, Err: err}
			}
		}
		// A whole uncompressed batch that surely fits in what is left of
		// b is rendered there, sparing the copy through the cache (read-
		// ahead windows hold many batches). Its text is at most its
		// records region plus a separator per record.
		if !hinted && bt == t && h.Codec() == record.CodecNone &&
			int64(len(b)-n) >= int64(len(batch))+int64(h.RecordCount)*int64(sepLen) {
			out, err := v.dec.AppendText(b[n:n:len(b)], batch, allOffsets, v.sep)
			if err != nil {
				return n, &CorruptError{Path: s.logPath, Pos: pos, Err: err}
			}
			if len(out) == 0 || &out[0] == &b[n] {
				c := len(out)
				n += c
				t += int64(c)
				bt += int64(c)
				continue
			}
			// Not in place after all (cannot happen by the bound):
			// render through the cache below.
		}
		// A read from the view's first offset renders the batch from
		// there: the records before it are text it will not show.
		// (AppendTextSplit renders what Stats(batch, from) sized:
		// hintSize - hintBelow bytes, ending where the batch's text does.)
		start := bt
		if v.cache == nil {
			v.cache = getBuf()
		}
		if hinted && t >= bt+v.hintBelow {
			start = bt + v.hintBelow
			if v.hintRendered {
				// Text rendered this into the cache, which no longer
				// holds it (cannot happen: the cache is replaced only
				// by a batch after this one): again, from the view's
				// first offset, which is Text's.
				v.cache, err = v.dec.AppendText(v.cache[:0], batch, v.from, v.sep)
			} else {
				v.cache, err = v.dec.AppendTextSplit(v.cache[:0], batch, &v.hintSplit, v.sep)
			}
		} else {
			v.cache, err = v.dec.AppendText(v.cache[:0], batch, allOffsets, v.sep)
		}
		if err != nil {
			v.cacheSeg = nil
			return n, &CorruptError{Path: s.logPath, Pos: pos, Err: err}
		}
		if sz < 0 {
			sz = int64(len(v.cache))
		}
		v.cacheSeg, v.cacheStart = s, start
		c := copy(b[n:], v.cache[t-start:])
		n += c
		t += int64(c)
		bt += sz
	}
	return n, nil
}

// DropBuffers gives the view's scan and render buffers back to the pool
// and forgets its cursor, its cached batch and the hint Text left, keeping
// its segments and coordinates: the next read takes buffers again and
// rescans from a text map entry, with the same text. A data node keeps
// its view until the kernel forgets the node, and the kernel keeps an
// unused inode as long as it has memory: without this, every partition
// whose data was read once (`cat`, `grep -r`, a backup) held 2 MiB until
// unmount.
func (v *TextView) DropBuffers() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return
	}
	v.dropBuffersLocked()
}

func (v *TextView) dropBuffersLocked() {
	if v.cur != nil {
		putBuf(v.cur.buf)
		v.cur = nil
	} else {
		putBuf(v.buf)
	}
	v.buf, v.curSeg, v.hintSeg = nil, nil, nil
	putBuf(v.cache)
	v.cache, v.cacheSeg = nil, nil
}

// Close releases the segments the view holds.
func (v *TextView) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return nil
	}
	v.closed = true
	v.p.removeView(v)
	releaseAll(v.segs)
	v.segs = nil
	v.dropBuffersLocked()
	return nil
}
