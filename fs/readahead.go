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

// Reads of offset/N, and of data while a writer has it open, bypass the
// page cache (FOPEN_DIRECT_IO, see Open and doc.go), so every read(2) is
// one READ that the daemon renders while the reader waits, and the kernel
// sends the next READ of a synchronous reader only after the reply (cached
// reads of data come as the kernel's read-ahead READs, which this serves
// alike). Rendering (pread, CRC, decoding) and writing the
// reply (the copy into the reader's buffer) then take turns on one core,
// and a READ that reaches a new batch waits for all of it to be rendered
// (a 128 KiB write(2) appends a batch of ~140 KB; cat reads 128 KiB, grep
// 96 KiB).
//
// A handle that reads sequentially therefore renders ahead in windows of
// windowSize bytes, in a goroutine: while READs are answered from one
// window (the reply points into it, no copy), the next is rendered. A
// handle holds at most two windows.
//
// Text positions never change for the life of a view (logstore.TextView),
// so bytes rendered ahead are the bytes a later read would return. What a
// window did not get (the end of the text, which may have grown since, or
// the bytes from an error on) is read by the READ that reaches it, as
// without read-ahead: an error, such as a damaged batch's EIO, is reported
// by the read that reaches it, with the good bytes before it as a short
// read (a cached handle fails the whole READ instead, see Read).

// windowSize is the size of a read-ahead window: eight of cat's reads, so
// that the renderer and the READs meet once per eight replies, and big
// enough to hold whole batches, which the view then renders straight into
// it (logstore.TextView.ReadAt) instead of through its cache.
const windowSize = 1 << 20

// readAheadBudget bounds the bytes of the windows that handles hold. A
// handle holds its windows until it reads elsewhere or is released; an
// idle reader that stopped halfway keeps them meanwhile, so without a
// bound thousands of open handles could pin two megabytes each. Over the
// budget a handle reads without read-ahead.
const readAheadBudget = 32 << 20

var readAheadBytes atomic.Int64

var windowPool = sync.Pool{New: func() any { return &window{buf: make([]byte, windowSize)} }}

// window is text [off, off+n) rendered ahead; err is what stopped it
// short of windowSize (nil at the end of the text). refs counts the
// handle's reference and the replies pointing into buf; the last one
// returns it to the pool.
type window struct {
	buf  []byte
	off  int64
	n    int
	err  error
	refs atomic.Int32
	done chan struct{}
}

func (w *window) contains(off int64) bool { return off >= w.off && off < w.off+int64(w.n) }

func (w *window) unref() {
	if w.refs.Add(-1) == 0 {
		w.done = nil
		windowPool.Put(w)
	}
}

// sliceResult is a READ reply. It implements go-fuse's withSlice
// (Slices), so the reply is written with one writev after which Done runs:
// a plain fuse.ReadResultData first tries splice(2), which for in-memory
// bytes costs a pipe write of the header and a splice to /dev/null per
// READ before falling back to the same writev. Done drops the reply's
// reference to a window; go-fuse does not call Done on every path (an
// interrupted request, an empty reply), in which case the window is left
// to the garbage collector instead of going back to the pool.
type sliceResult struct {
	s [1][]byte
	w *window // holding s[0], nil for go-fuse's dest
}

func (r *sliceResult) Bytes(buf []byte) ([]byte, fuse.Status) { return r.s[0], fuse.OK }
func (r *sliceResult) Size() int                              { return len(r.s[0]) }
func (r *sliceResult) Slices() ([][]byte, fuse.Status)        { return r.s[:], fuse.OK }

func (r *sliceResult) Done() {
	if r.w != nil {
		r.w.unref()
		r.w = nil
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
	// read (only handles that bypass the page cache come here, so the
	// kernel keeps no zero-filled rest), and the next read, starting at
	// the damage, reports it.
	return bytesResult(dest[:n]), 0
}

// readHandle reads a text file through its node's shared view.
type readHandle struct {
	node   *textNode
	view   *logstore.TextView
	cached bool // opened with the page cache (data without a writer)

	// mu serializes the handle's READs (the view serializes them anyway)
	// and guards the fields below.
	mu   sync.Mutex
	next int64   // where the last READ ended; -1 before the first
	cur  *window // rendered, holding text around next, or nil
	fill *window // being rendered (after cur), or nil
}

func newReadHandle(n *textNode, v *logstore.TextView) *readHandle {
	h := &readHandle{node: n, view: v, next: -1}
	n.fs.mu.Lock()
	n.fs.readers[h] = struct{}{}
	n.fs.mu.Unlock()
	return h
}

// drop gives up the handle's reference to w.
func drop(w *window) {
	readAheadBytes.Add(-windowSize)
	w.unref()
}

// windowFor returns the window holding off, waiting for the one being
// rendered if need be, or nil; windows that cannot serve a read at off
// any more are dropped.
func (h *readHandle) windowFor(off int64) *window {
	if h.cur != nil && h.cur.contains(off) {
		return h.cur
	}
	if h.fill != nil {
		<-h.fill.done
		if h.fill.contains(off) {
			if h.cur != nil {
				drop(h.cur)
			}
			h.cur, h.fill = h.fill, nil
			return h.cur
		}
	}
	h.dropAll()
	return nil
}

func (h *readHandle) dropAll() {
	if h.fill != nil {
		<-h.fill.done
		drop(h.fill)
		h.fill = nil
	}
	if h.cur != nil {
		drop(h.cur)
		h.cur = nil
	}
}

func (h *readHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if !h.cached {
		return h.read(dest, off)
	}
	// The kernel keeps what a cached READ returns, zero-filling a short
	// page: report must know before it tells of a larger size. This runs
	// before the reply is sent, so before the kernel has the page.
	n := h.node
	n.cachedReads.Add(1)
	defer n.cachedReads.Add(-1)
	res, errno := h.read(dest, off)
	got := 0
	if res != nil {
		got = res.Size()
	}
	n.noteCachedRead(off, len(dest), got, errno != 0)
	return res, errno
}

func (h *readHandle) read(dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	h.mu.Lock()
	defer h.mu.Unlock()
	seq := off == h.next
	var res *sliceResult
	n := 0
	if w := h.windowFor(off); w != nil {
		o := int(off - w.off)
		if w.n-o >= len(dest) {
			n = len(dest)
			w.refs.Add(1)
			res = &sliceResult{s: [1][]byte{w.buf[o : o+n : o+n]}, w: w}
		} else {
			// The read runs past the window: the rest comes from the
			// next window, or is read now (the end of the text, which
			// may have grown, or where the window's rendering failed).
			n = copy(dest, w.buf[o:w.n])
			if w.err == nil && w.n == windowSize {
				if nw := h.windowFor(off + int64(n)); nw != nil {
					n += copy(dest[n:], nw.buf[:nw.n])
				}
			}
			if n < len(dest) {
				m, err := h.view.ReadAt(dest[n:], off+int64(n))
				// Bytes before an error are a short read; the next
				// read, starting at the error, reports it.
				n += m
				if err != nil && !errors.Is(err, io.EOF) && h.cached {
					h.next = -1
					return nil, toErrno(err)
				}
			}
			res = bytesResult(dest[:n])
		}
	}
	if res == nil {
		m, err := h.view.ReadAt(dest, off)
		if err != nil && !errors.Is(err, io.EOF) && (m == 0 || h.cached) {
			// A cached handle cannot return the good bytes before
			// damage as a short read: the kernel would take that for
			// the end of the file (it shrinks i_size) and the reader
			// would see a clean EOF. The READ fails whole, and the
			// kernel's page-sized retries end with EIO at the page
			// holding the damage.
			h.next = -1
			return nil, toErrno(err)
		}
		res = bytesResult(dest[:m])
		n = m
	}
	h.next = off + int64(n)
	// Read ahead only for a reader that has read sequentially at least
	// twice, with the last read full: not for `head -n1 offset/N` (one
	// read), nor for `tail -f` polling the end.
	if seq && n == len(dest) && n > 0 && h.fill == nil {
		from := h.next
		if h.cur != nil {
			if h.cur.n < windowSize || h.cur.err != nil || !h.cur.contains(h.next-1) {
				// The window ended short: the reads after it go to the
				// view until one is full again.
				if !h.cur.contains(h.next) {
					drop(h.cur)
					h.cur = nil
				}
				return res, 0
			}
			from = h.cur.off + int64(h.cur.n)
		}
		h.startFill(from)
	}
	return res, 0
}

// startFill renders the window at off in a goroutine, within the budget.
func (h *readHandle) startFill(off int64) {
	if readAheadBytes.Add(windowSize) > readAheadBudget {
		readAheadBytes.Add(-windowSize)
		return
	}
	w := windowPool.Get().(*window)
	w.off, w.n, w.err = off, 0, nil
	w.refs.Store(1)
	w.done = make(chan struct{})
	h.fill = w
	go func() {
		defer close(w.done)
		w.n, w.err = h.view.ReadAt(w.buf, off)
		if errors.Is(w.err, io.EOF) {
			w.err = nil
		}
	}()
}

// Lseek answers SEEK_DATA and SEEK_HOLE from the handle's own view
// (seekText), as fstat does.
func (h *readHandle) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	return seekText(off, whence, h.view.Size())
}

// Release waits for a window still rendering before the view can be
// closed.
func (h *readHandle) Release(ctx context.Context) syscall.Errno {
	f := h.node.fs
	f.mu.Lock()
	_, open := f.readers[h]
	delete(f.readers, h)
	f.mu.Unlock()
	if open {
		h.close()
	}
	return 0
}

// close gives back the handle's windows, its place among the cached
// readers and its reference to the view: on RELEASE, or at the end of the
// mount for a handle the kernel never released (releaseReaders).
func (h *readHandle) close() {
	h.mu.Lock()
	h.dropAll()
	h.mu.Unlock()
	if h.cached {
		h.node.mu.Lock()
		h.node.cachedOpen--
		h.node.mu.Unlock()
	}
	h.node.release()
}

// releaseReaders closes the read handles the kernel never released, once
// it can send no more requests (Server.Wait). The kernel sends RELEASE
// after close(2) returned, in the background: an unmount right after a
// close ends the connection with the RELEASE still queued, and the kernel
// drops it. Left open, such a handle kept its view's segments and its
// read-ahead windows, charged to readAheadBytes, which is the process's:
// a daemon or test that mounted again found the budget spent (the fs
// tests waiting for it to drain timed out).
func (f *fsys) releaseReaders() {
	f.mu.Lock()
	hs := make([]*readHandle, 0, len(f.readers))
	for h := range f.readers {
		hs = append(hs, h)
	}
	clear(f.readers)
	f.mu.Unlock()
	for _, h := range hs {
		h.close()
	}
}
