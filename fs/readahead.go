package fs

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/segfs/segfs/logstore"
)

// Reads of data and offset/N bypass the page cache (FOPEN_DIRECT_IO, see
// Open), so every read(2) is one READ that the daemon renders while the
// reader waits, and the kernel sends the next READ of a synchronous reader
// only after the reply. Rendering (pread, CRC, decoding) and writing the
// reply (the copy into the reader's buffer) then take turns on one core.
// A handle that reads sequentially therefore renders the next chunk ahead,
// in a goroutine, while the reply to this one is written and the reader
// consumes it: the next READ waits only for what is not ready yet.
//
// Text positions never change for the life of a view (logstore.TextView),
// so bytes rendered ahead are the bytes a later read would return. What a
// read-ahead did not get (the end of the text, which may have grown since,
// or an error) is read again when the READ for it arrives: an error,
// such as a damaged batch's EIO, is reported by the read that reaches it,
// exactly as without read-ahead.

// readAheadBudget bounds the bytes held by rendered-ahead chunks of all
// handles together. A handle holds at most one chunk, until its next READ
// or RELEASE; an idle reader that stopped halfway holds it meanwhile, so
// without a bound thousands of open handles could pin a chunk each. Over
// the budget a handle simply reads without read-ahead.
const readAheadBudget = 32 << 20

var readAheadBytes atomic.Int64

// Chunk buffers come in two sizes: cat reads 128 KiB, grep 96 KiB; the
// kernel sends at most max_read (MaxWrite, 1 MiB) in one READ.
const (
	smallChunk = 128 << 10
	largeChunk = 1 << 20
)

var (
	smallChunks = sync.Pool{New: func() any { b := make([]byte, smallChunk); return &b }}
	largeChunks = sync.Pool{New: func() any { b := make([]byte, largeChunk); return &b }}
)

func getChunk(n int) *[]byte {
	if n <= smallChunk {
		return smallChunks.Get().(*[]byte)
	}
	if n <= largeChunk {
		return largeChunks.Get().(*[]byte)
	}
	b := make([]byte, n)
	return &b
}

func putChunk(b *[]byte) {
	switch cap(*b) {
	case smallChunk:
		smallChunks.Put(b)
	case largeChunk:
		largeChunks.Put(b)
	}
}

// readAhead is the rendering of [off, off+len(*buf)) started after a READ.
type readAhead struct {
	off  int64
	buf  *[]byte
	n    int
	err  error
	done chan struct{}
}

// sliceResult is a READ reply. It implements go-fuse's withSlice
// (Slices), so the reply is written with one writev after which Done runs:
// a plain fuse.ReadResultData first tries splice(2), which for in-memory
// bytes costs a pipe write of the header and a splice to /dev/null per
// READ before falling back to the same writev. Done returns a rendered-ahead
// chunk to its pool; go-fuse does not call Done on every path (an
// interrupted request, an empty reply), in which case the chunk is simply
// left to the garbage collector.
type sliceResult struct {
	s     [1][]byte
	chunk *[]byte // pooled buffer holding s[0], nil for go-fuse's dest
}

func (r *sliceResult) Bytes(buf []byte) ([]byte, fuse.Status) { return r.s[0], fuse.OK }
func (r *sliceResult) Size() int                              { return len(r.s[0]) }
func (r *sliceResult) Slices() ([][]byte, fuse.Status)        { return r.s[:], fuse.OK }

func (r *sliceResult) Done() {
	if r.chunk != nil {
		putChunk(r.chunk)
		r.chunk = nil
	}
}

func bytesResult(b []byte) *sliceResult { return &sliceResult{s: [1][]byte{b}} }

// readView serves a READ without read-ahead.
func readView(v *logstore.TextView, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n, err := v.ReadAt(dest, off)
	if err != nil && !errors.Is(err, io.EOF) && n == 0 {
		return nil, toErrno(err)
	}
	// Bytes read before a damaged batch are good: return them as a short
	// read (reads bypass the page cache, so the kernel keeps no zero-filled
	// rest), and the next read, starting at the damage, reports it.
	return bytesResult(dest[:n]), 0
}

// readHandle reads a text file through its node's shared view.
type readHandle struct {
	node *textNode
	view *logstore.TextView

	// mu serializes the handle's READs (the view serializes them anyway)
	// and guards next and ahead.
	mu    sync.Mutex
	next  int64      // where the last READ ended; -1 before the first
	ahead *readAhead // rendering after next, or nil
}

func newReadHandle(n *textNode, v *logstore.TextView) *readHandle {
	return &readHandle{node: n, view: v, next: -1}
}

// takeAhead waits for the read-ahead, if any, and hands it over (nil if
// none); the caller owns its chunk.
func (h *readHandle) takeAhead() *readAhead {
	a := h.ahead
	if a == nil {
		return nil
	}
	h.ahead = nil
	<-a.done
	readAheadBytes.Add(-int64(cap(*a.buf)))
	return a
}

func (h *readHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	h.mu.Lock()
	defer h.mu.Unlock()
	seq := off == h.next
	var res *sliceResult
	n := 0
	if a := h.takeAhead(); a != nil {
		// Only what the read-ahead rendered without error is used: an
		// error is found again, and reported, by the read below.
		if a.off == off && a.err == nil && a.n > 0 {
			if a.n >= len(dest) {
				n = len(dest)
				res = &sliceResult{s: [1][]byte{(*a.buf)[:n]}, chunk: a.buf}
			} else {
				// The text ended there when the read-ahead ran, and
				// may have grown since: read the rest now.
				n = copy(dest, (*a.buf)[:a.n])
				putChunk(a.buf)
				m, err := h.view.ReadAt(dest[n:], off+int64(n))
				n += m
				_ = err // bytes before an error are a short read; the next read reports it
				res = bytesResult(dest[:n])
			}
		} else {
			putChunk(a.buf)
		}
	}
	if res == nil {
		r, errno := readView(h.view, dest, off)
		if errno != 0 {
			h.next = -1
			return nil, errno
		}
		res = r.(*sliceResult)
		n = res.Size()
	}
	h.next = off + int64(n)
	// Read ahead only for a reader that has read sequentially at least
	// twice, with the last read full: not for `head -n1 offset/N` (one
	// read), nor for `tail -f` polling the end.
	if seq && n == len(dest) && n > 0 {
		h.startAhead(h.next, n)
	}
	return res, 0
}

// startAhead renders [off, off+size) in a goroutine, within the budget.
func (h *readHandle) startAhead(off int64, size int) {
	buf := getChunk(size)
	c := int64(cap(*buf))
	if readAheadBytes.Add(c) > readAheadBudget {
		readAheadBytes.Add(-c)
		putChunk(buf)
		return
	}
	a := &readAhead{off: off, buf: buf, done: make(chan struct{})}
	h.ahead = a
	go func() {
		defer close(a.done)
		a.n, a.err = h.view.ReadAt((*buf)[:size], off)
		if errors.Is(a.err, io.EOF) {
			a.err = nil
		}
	}()
}

// Release waits for a read-ahead still rendering before the view can be
// closed.
func (h *readHandle) Release(ctx context.Context) syscall.Errno {
	h.mu.Lock()
	if a := h.takeAhead(); a != nil {
		putChunk(a.buf)
	}
	h.mu.Unlock()
	h.node.release()
	return 0
}
