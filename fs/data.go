package fs

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/segfs/segfs/logstore"
)

// textNode is data (isData) or offset/N: the partition's records as text
// from an offset on, in one generation of the partition. See doc.go
// "Generations" for why a node never changes generation.
type textNode struct {
	gofs.Inode
	lockable // one table for every generation and incarnation (locks.go)
	fs       *fsys
	part     *logstore.Partition
	parent   *gofs.Inode // the directory holding it, for NotifyEntry
	name     string      // its name there
	from     int64       // offset/N: N (data views start at the log start)
	gen      uint64      // partition generation of this node
	isData   bool

	mu         sync.Mutex
	view       *logstore.TextView // shared by open handles; data nodes keep it while cached (unpinLocked)
	refs       int                // handles using view (+1 held by a data node while view is open)
	lastSize   int64
	mtime      time.Time
	registered bool // with the notifier

	staleNotified atomic.Bool // the notifier invalidated our dentry
	// attrsOut: data only, a reply since the last invalidation gave the
	// kernel attributes it may still hold (report), so an append through
	// another inode of the file must invalidate them (invalidateOthers).
	attrsOut atomic.Bool

	// The page cache of data (see doc.go, "Caching"). pubMu serializes
	// raising pub with the invalidation that must come first; it is taken
	// before mu, and nothing that serves a READ takes it.
	pubMu sync.Mutex
	pub   int64 // the largest size this node reported to the kernel
	// What report must drop before the kernel may learn of a larger
	// size: zeroFill is 1 + the smallest text position at which a cached
	// READ since the last invalidation ended short (the kernel zero-fills
	// the rest of that page and keeps it), 0 for none; cachedReads counts
	// the cached READs being served, which may yet end short. Both are
	// atomics: nothing that serves a READ takes pubMu.
	zeroFill    atomic.Int64
	cachedReads atomic.Int32
	// announceMu orders the invalidations that announce an append to
	// the kernel from outside n's requests (the notifier's round and
	// invalidateOthers, announce) with announced: the size of
	// announcedView when one was last sent. Taken before pubMu; nothing
	// that serves a request of n takes it.
	announceMu    sync.Mutex
	announcedView *logstore.TextView
	announced     int64
	// Under mu:
	cachedEver bool // a read handle using the page cache was given out
	// dropped: the node closed a view of its own (unpinLocked) since its
	// last cached handle; the first cached opens after that drop its
	// pages, which came from that view.
	dropped      bool
	cachedOpen   int    // such handles open now
	writers      int    // writable handles open now
	retired      bool   // a writer found cached readers: lookups hand out a new node
	noCacheUntil int64  // UnixNano: a node born for a writer's ESTALE retry gives no cached handle before
	inc          uint64 // incarnation of this generation's node, part of StableAttr.Gen
	// holds: callers (pid → until, UnixNano) whose walk retries an ESTALE
	// that came before their open could say whether it writes (mayWrite):
	// the node gives others no cached handle until each has opened it.
	holds map[uint32]int64
}

var (
	_ gofs.NodeOpener      = (*textNode)(nil)
	_ gofs.NodeGetattrer   = (*textNode)(nil)
	_ gofs.NodeSetattrer   = (*textNode)(nil)
	_ gofs.NodeFsyncer     = (*textNode)(nil)
	_ gofs.NodeFlusher     = (*textNode)(nil)
	_ gofs.NodeOnForgetter = (*textNode)(nil)
	_ gofs.NodeSetlkwer    = (*textNode)(nil)
)

// textAttrTimeout is the attribute timeout of data and offset/N: sizes are
// not cached (1 ns: go-fuse takes 0 for "use the default"). Reads bypass
// the page cache and are not limited by the kernel's idea of the size, so
// a cached size could lag what a read just returned (`cat data; stat data`
// disagreed when the fetch server had appended in between), and the
// kernel learns of growth from other paths only by notification, a few
// milliseconds later. A GETATTR per stat is the price: tail polls once a
// second.
const textAttrTimeout = time.Nanosecond

// retryWindow bounds the time between an ESTALE, the VFS's lookup that
// retries it, and the open or stat that follows. The VFS retries ESTALE
// once: with millisecond retention and compaction the generation can move
// again between that lookup and the open, and a second ESTALE would reach
// the user, so the caller's next request to the file is served even if
// the node it reaches went stale meanwhile.
const retryWindow = time.Second

// answeredStale notes that n answered ESTALE to the caller, so that the
// caller's next GETATTR or OPEN of the file, which belongs to the VFS's
// one retry, is served (usable). The pass is the caller's alone: keyed by
// name only, another process's request could spend it between the retry's
// LOOKUP and its GETATTR, and a second generation change there failed
// the caller's walk.
func (n *textNode) answeredStale(ctx context.Context) syscall.Errno {
	now := time.Now().UnixNano()
	n.fs.estale.Store(retryKey{n.parent, n.name, callerPid(ctx)}, now)
	if n.fs.staleNotes.Add(1)%64 == 0 {
		// Callers whose retry needed no GETATTR or OPEN (a stat
		// answered from the lookup), or that died.
		n.fs.estale.Range(func(k, v any) bool {
			if at := v.(int64); now-max(at, -at) >= int64(retryWindow) {
				n.fs.estale.CompareAndDelete(k, v)
			}
			return true
		})
	}
	return syscall.ESTALE
}

// retryKey names one caller's walk to a text file, for fsys.retries and
// fsys.estale.
type retryKey struct {
	parent *gofs.Inode
	name   string
	pid    uint32
}

// callerPid is the thread that sent the request (0 if unknown): a walk's
// LOOKUPs, GETATTR and OPEN, and the VFS's retry of them, all come from
// the thread of the one system call.
func callerPid(ctx context.Context) uint32 {
	if c, ok := fuse.FromContext(ctx); ok {
		return c.Pid
	}
	return 0
}

// mayWrite notes that the caller's walk to data answered ESTALE before it
// reached an OPEN that says how it opens: a handle-less GETATTR (the
// kernel's permission check, default_permissions, sends one before every
// open once the 1 ns attributes expired) or a writable open itself. The
// VFS retries the walk once, and if that retry is a writable open, its
// OPEN must not find cached readers: a second ESTALE reaches the writer.
// So the lookups of the retry hand out a node that has none and gives out
// none until the caller opened it (admit).
func (n *textNode) mayWrite(ctx context.Context) {
	pid := callerPid(ctx)
	if !n.isData || pid == 0 {
		return
	}
	now := time.Now().UnixNano()
	n.fs.retries.Store(retryKey{n.parent, n.name, pid}, now)
	if n.fs.retryNotes.Add(1)%64 == 0 {
		// Callers that never came back (a stat that needed no
		// GETATTR after its retry, a killed process).
		n.fs.retries.Range(func(k, v any) bool {
			if at := v.(int64); now-max(at, -at) >= int64(retryWindow) {
				n.fs.retries.CompareAndDelete(k, v)
			}
			return true
		})
	}
}

// retrying reports whether the lookup of data from pid belongs to a walk
// retrying an ESTALE that may be a writable open (mayWrite). Both LOOKUPs
// of the retry count: the revalidation's, whose new node the kernel
// forgets at once, and the lookup that follows it.
func (f *fsys) retrying(parent *gofs.Inode, name string, pid uint32) bool {
	if pid == 0 {
		return false
	}
	k := retryKey{parent, name, pid}
	at, ok := f.retries.Load(k)
	if !ok {
		return false
	}
	if time.Since(time.Unix(0, at.(int64))) < retryWindow {
		return true
	}
	f.retries.CompareAndDelete(k, at)
	return false
}

// writerWaits reports whether a writer of the data file with st_ino ino
// answered ESTALE within retryWindow (startWriter).
func (f *fsys) writerWaits(ino uint64) bool {
	at, ok := f.wantWriter.Load(ino)
	if !ok {
		return false
	}
	if time.Since(time.Unix(0, at.(int64))) < retryWindow {
		return true
	}
	f.wantWriter.CompareAndDelete(ino, at)
	return false
}

// lookupText answers the lookup of data (off < 0) or offset/N. It opens a
// view to learn the generation and the size. data closes it; offset/N
// leaves it briefly in fsys.lookupViews for the open that usually follows
// (at most lookupViewMax views, for at most lookupViewTTL): nodes keep no
// segment open for long until a handle needs them.
func lookupText(ctx context.Context, f *fsys, parent *gofs.Inode, p *logstore.Partition,
	name string, off int64, ino uint64, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	isData := off < 0
	f.closers.await(p, nil) // a line a close(2) just ended is in the text
	var v *logstore.TextView
	var err error
	for try := 0; ; try++ {
		from := off
		if isData {
			from = p.LogStartOffset()
		}
		v, err = p.Text(from)
		// Retention may move the start between the two calls.
		if err == nil || !isData || try == 2 || !errors.Is(err, logstore.ErrOffsetOutOfRange) {
			break
		}
	}
	if err != nil {
		errno := toErrno(err)
		if isData {
			// data of an existing partition always exists: say why a
			// walk to it failed (offset/N below the log start is ENOENT
			// by design and not worth a line).
			f.warnDataFailed("lookup", p, errno, err)
		}
		return nil, errno
	}
	// offset/N keeps the view for the open that usually follows (see
	// lookupViews); data opens its own, which it keeps for its life.
	keep := func(n *textNode) {
		if isData {
			v.Close()
		} else {
			f.lookupViews.put(n, v)
		}
	}
	n := &textNode{lockable: lockable{f.locks, ino}, fs: f, part: p, parent: parent, name: name, from: v.From(), gen: v.Generation(), isData: isData}
	if !isData {
		n.from = off
	}
	n.lastSize = v.Size()
	n.pub = v.Size()
	// The last append, as a file's mtime is, also for a node born long
	// after it (a remount, a kernel forget); the size's next change
	// moves it to that moment (attr).
	n.mtime = p.LastModified()
	if n.mtime.IsZero() {
		n.mtime = time.Now()
	}
	// A writer that met cached readers retries its walk (startWriter);
	// every node handed out meanwhile is one it can open. So is the node
	// handed to a walk retrying an ESTALE that may be a writable open
	// (mayWrite): its GETATTR answered ESTALE because the generation moved,
	// and the node of the new generation may already have cached readers.
	wanted := isData && f.writerWaits(ino)
	var holder uint32
	if isData {
		if pid := callerPid(ctx); f.retrying(parent, name, pid) {
			holder = pid
		}
	}
	if old := parent.GetChild(name); old != nil {
		if o, ok := old.Operations().(*textNode); ok && o.gen == n.gen && o.admit(wanted, holder) {
			// Reuse the known node of this generation rather than
			// build one that go-fuse would drop again. Its size is
			// that of the view it serves, if it holds one.
			size := v.Size()
			o.mu.Lock()
			if o.view != nil {
				size = o.view.Size()
			}
			o.mu.Unlock()
			o.attr(&out.Attr, o.report(size))
			out.SetAttrTimeout(textAttrTimeout)
			keep(o)
			return old, 0
		}
	}
	n.admit(wanted, holder)
	if isData {
		n.inc = f.incarnation(ino)
	}
	// One kernel inode per generation and incarnation, all with the same
	// st_ino. go-fuse hands out the node it knows of the same identity,
	// if any, instead of n (a retired node never has the current
	// incarnation).
	ch := parent.NewInode(ctx, n, gofs.StableAttr{Mode: uint32(syscall.S_IFREG), Ino: ino, Gen: n.gen + 1 + n.inc<<40})
	o, ok := ch.Operations().(*textNode)
	if !ok {
		v.Close()
		return nil, syscall.EIO
	}
	// o is n, or the known node of this identity (go-fuse keeps one per
	// StableAttr), whose size is that of the view it serves.
	size := v.Size()
	if o != n {
		o.mu.Lock()
		if o.view != nil {
			size = o.view.Size()
		}
		o.mu.Unlock()
	}
	o.attr(&out.Attr, o.report(size))
	out.SetAttrTimeout(textAttrTimeout)
	keep(o)
	return ch, 0
}

// attr fills the attributes for size. The mtime moves whenever the size
// this node reported changes: with AUTO_INVAL_DATA a changed mtime makes
// the kernel drop the page cache even when its own i_size already grew
// (a direct-I/O append through another handle grows i_size but leaves a
// cached, zero-padded last page behind).
//
// It moves to the partition's last append (the active segment's mtime),
// as a file's mtime is, not to the moment this node noticed the growth: a
// `stat` long after `echo x >> data` showed the stat's own time, so `ls
// -lt`, `find -newer` and make saw a quiet partition as just written
// whenever it was first looked at again (and an older time after a
// remount). If the segment's mtime did not move past the mtime reported
// before (two appends within one tick of the backing filesystem's clock),
// the mtime moves by a nanosecond, so that the kernel still drops its
// cache.
func (n *textNode) attr(a *fuse.Attr, size int64) {
	n.mu.Lock()
	changed := size != n.lastSize
	n.mu.Unlock()
	var appended time.Time
	if changed {
		appended = n.part.LastModified() // a stat: outside n.mu
	}
	n.mu.Lock()
	if size != n.lastSize {
		n.lastSize = size
		if appended.After(n.mtime) {
			n.mtime = appended
		} else {
			n.mtime = n.mtime.Add(time.Nanosecond)
		}
	}
	mtime := n.mtime
	n.mu.Unlock()
	mode := uint32(modeReadOnly)
	if n.isData {
		mode = modeData
	}
	n.fs.setAttr(a, mode, size, mtime)
}

// acquire returns the node's view, opening one if none is open: data from
// the current log start, offset/N from N (ENOENT once N is below the log
// start). The kernel can hold pages of a node only from the view it
// serves: data keeps the view it gave cached handles from until FORGET or
// until its generation is gone (unpinLocked), and offset/N, whose view may
// change between opens, is opened without FOPEN_KEEP_CACHE.
func (n *textNode) acquire() (*logstore.TextView, syscall.Errno) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.view != nil {
		n.refs++
		return n.view, 0
	}
	v, err := n.openView()
	if err != nil {
		errno := toErrno(err)
		if n.isData {
			n.fs.warnDataFailed("open", n.part, errno, err)
		}
		return nil, errno
	}
	n.view, n.refs = v, 1
	if n.isData {
		// data keeps its view while it may have pages of it in the
		// kernel: from its first cached handle to FORGET, or until its
		// generation is gone (unpinLocked).
		n.refs++
	}
	return v, 0
}

func (n *textNode) openView() (*logstore.TextView, error) {
	if !n.isData {
		if v := n.fs.lookupViews.take(n); v != nil {
			if v.Generation() == n.part.Generation() {
				return v, nil
			}
			// Retention or compaction since the lookup: a fresh
			// open sees the current generation.
			v.Close()
		}
		return n.part.Text(n.from)
	}
	for try := 0; ; try++ {
		v, err := n.part.Text(n.part.LogStartOffset())
		// Retention may move the start between the two calls.
		if err == nil || try == 2 || !errors.Is(err, logstore.ErrOffsetOutOfRange) {
			return v, err
		}
	}
}

func (n *textNode) release() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.refs--
	if n.refs == 0 && n.view != nil {
		n.view.Close()
		n.view = nil
	} else if n.isData && n.refs == 1 && n.view != nil {
		n.unpinLocked()
	}
	if n.isData && n.refs == 1 && n.view != nil {
		// Only the node's own reference is left: no handle reads
		// through the view until the next open, and the node lives
		// until FORGET, which the kernel sends only under memory
		// pressure; the view's 2 MiB of buffers go back to the pool.
		n.view.DropBuffers()
	}
}

// unpinLocked closes the view a data node keeps of its own when no handle
// uses it (the caller holds mu and saw refs == 1), if the kernel holds no
// page of the node that it must keep valid: the node never gave out a
// cached handle, or the view's generation is gone, so that every open by
// name reaches a newer node and the node's pages serve no one (the first
// cached open of it drops them: dropped). Kept, the view pinned every
// segment retention or compaction deleted while a writer (`app >> data`
// for days) held the node, their .deleted files, descriptors and mappings
// all, until the writer closed: FORGET, which closes it otherwise, never
// comes while the file is open. The next size() or open opens a view from
// the log start, of the current generation (a stale node without a view
// serves the current log: usable).
func (n *textNode) unpinLocked() {
	if n.cachedEver && n.view.Generation() == n.part.Generation() {
		return
	}
	n.cachedEver = false
	n.dropped = true
	n.refs = 0
	n.view.Close()
	n.view = nil
}

// unpin is unpinLocked for the notifier, which finds a node stale.
func (n *textNode) unpin() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.isData && n.refs == 1 && n.view != nil {
		n.unpinLocked()
	}
}

// register asks the notifier to tell the kernel about growth from now on.
func (n *textNode) register() {
	n.mu.Lock()
	reg := n.registered
	n.registered = true
	n.mu.Unlock()
	if !reg {
		n.fs.notify.add(n)
	}
}

func (n *textNode) OnForget() {
	n.mu.Lock()
	reg := n.registered
	n.registered = false
	n.mu.Unlock()
	if reg {
		n.fs.notify.remove(n)
	}
	if v := n.fs.lookupViews.take(n); v != nil {
		v.Close()
	}
	if n.isData {
		// Drop the node's own reference, if it holds one (its view may
		// have gone already: unpinLocked), in one step under mu, so that a
		// concurrent release cannot take it too.
		n.mu.Lock()
		if n.view != nil {
			n.refs--
			if n.refs == 0 {
				n.view.Close()
				n.view = nil
			}
		}
		n.mu.Unlock()
	}
}

func (n *textNode) size() (int64, syscall.Errno) {
	if !n.isData {
		// A GETATTR between the LOOKUP of offset/N and its OPEN (the
		// permission check of open(2), sent once the attributes are a
		// jiffy or two old: `stat` then `cat`, or a reader the scheduler
		// delayed) sizes the view the lookup kept for that open, and
		// leaves it there: taken, sized and closed, it made the OPEN
		// open it again (the pread, CRC check and render of N's batch).
		n.mu.Lock()
		held := n.view != nil
		n.mu.Unlock()
		if !held {
			if size, ok := n.fs.lookupViews.size(n); ok {
				return size, 0
			}
		}
	}
	v, errno := n.acquire()
	if errno != 0 {
		return 0, errno
	}
	defer n.release()
	return v.Size(), 0
}

// stale reports whether the partition moved on to a newer generation than
// this node's.
func (n *textNode) stale() bool {
	return n.gen != n.part.Generation()
}

// usable reports whether a path-based open for reading or stat may use
// this node. A stale node that serves a view of its own generation (to a
// `tail -f` that opened it) answers ESTALE instead, and the VFS retries the
// walk with revalidation, which reaches the current node: a new open sees
// the retained log. A stale node without a view has nothing of its
// generation cached and opens the current log; so does, once, any node
// for a caller whose walk just answered ESTALE, as the VFS retries only
// once (see retryWindow). Handles already open keep their view.
func (n *textNode) usable(ctx context.Context, open bool) bool {
	// The retry's pass covers the caller's walk to its OPEN: the
	// permission GETATTR (handle-less, sent before the OPEN) and the
	// OPEN may each meet a generation newer than the node the retry's
	// LOOKUP was handed, and the VFS retries only once; spent by the
	// GETATTR, the pass left the OPEN a second ESTALE under millisecond
	// retention (TestStressEverything's `grep data`). So a GETATTR of a
	// node still current leaves it, one that needs it keeps it for the
	// OPEN only (stored negated), and the OPEN spends it, stale or not:
	// left unspent by a fresh open, it let the node serve a later open
	// after the next generation change, with its old text (`tail -n1
	// data` right after a key.separator change).
	key := retryKey{n.parent, n.name, callerPid(ctx)}
	v, ok := n.fs.estale.Load(key)
	var at int64
	if ok {
		at = v.(int64)
		if open {
			n.fs.estale.CompareAndDelete(key, v)
		}
	}
	if !n.stale() {
		return true
	}
	n.mu.Lock()
	held := n.view != nil
	n.mu.Unlock()
	if !held {
		return true
	}
	if at < 0 {
		if !open {
			return false // the GETATTR's part of the pass is spent
		}
		at = -at
	}
	if at == 0 || time.Since(time.Unix(0, at)) >= retryWindow {
		return false
	}
	if !open {
		n.fs.estale.CompareAndSwap(key, v, -at)
	}
	return true
}

func (n *textNode) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	var size int64
	switch h := f.(type) {
	case *readHandle:
		size = h.view.Size() // fstat: the handle's generation
	case *dataHandle:
		if h.view != nil {
			size = h.view.Size()
		} else {
			s, errno := n.size()
			if errno != 0 {
				return errno
			}
			size = s
		}
	default:
		if !n.usable(ctx, false) {
			n.mayWrite(ctx)
			return n.answeredStale(ctx)
		}
		s, errno := n.size()
		if errno != 0 {
			return errno
		}
		size = s
	}
	n.register()
	n.attr(&out.Attr, n.report(size))
	out.SetTimeout(textAttrTimeout)
	return 0
}

// Setattr accepts times set to now (touch) and, for data, a size equal
// to the current one (truncate to the same size destroys nothing); any
// other size, as from `>`, truncate or O_TRUNC, is EPERM, as are mode and
// owner changes and explicit times (setattrCommon: data is append-only
// like chattr +a, and Linux refuses touch -d on such a file). offset/N,
// read-only, answers any size with EROFS, as its writable open does.
func (n *textNode) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	sizeChange, errno := setattrCommon(in)
	if errno != 0 {
		return errno
	}
	if !n.isData && sizeChange {
		return syscall.EROFS // offset/N is read-only (readOnlySetattr)
	}
	size, errno := n.size()
	if errno != 0 {
		return errno
	}
	size = n.report(size)
	if sizeChange && int64(in.Size) != size {
		return syscall.EPERM
	}
	n.attr(&out.Attr, size)
	return 0
}

// Flush releases the closing process's POSIX locks on the file (locks.go).
// Otherwise it pushes only what a writer asked to be durable: a WRITE is
// answered once its lines are appended, and an unfinished line waits for
// RELEASE, unless the writer opened O_SYNC/O_DSYNC or fsynced it
// (dataHandle.flush). It reports an unfinished line that RELEASE will not
// be able to store. It must
// not answer ENOSYS, although that would save a round trip per close: the
// kernel would then stop sending FLUSH for every file of the mount
// (fc->no_flush), and config reports an invalid unfinished line at
// close(2) from its FLUSH.
func (n *textNode) Flush(ctx context.Context, f gofs.FileHandle) syscall.Errno {
	n.flushLocks(ctx)
	if h, ok := f.(*dataHandle); ok {
		return h.flush(ctx)
	}
	return 0
}

// flush fails close(2) with EINVAL while the unfinished line is one the
// append would refuse: on a compacted topic, a line with no key so far
// (EMSGSIZE for one longer than a max.message.bytes lowered since).
// RELEASE, which comes after close(2) returned and whose error no one
// sees, would drop it with only a line in the daemon's log, so
// `open(p, "a").write("no key")` then close() succeeded and lost the
// line. The line stays pending: more bytes (the key separator) may still
// come through another descriptor of the same open file, since FLUSH is
// sent for every close of every dup. A shell ignores close(2)'s error,
// so `printf 'no key' >> data` still loses it silently; a write(2) cannot
// refuse it earlier, as the separator may still follow.
//
// A writer that asked for durability, by opening O_SYNC or O_DSYNC or by
// an fsync while the line was unfinished, has the line stored and synced
// here, before close(2) returns: stored at RELEASE, after close(2)
// returned, nothing synced it, and a power cut lost the last line of
// `os.write(fd, b"no newline"); os.close(fd)` on an O_DSYNC descriptor.
// The server cannot tell the last close from a dup's, so a close(2) by
// the process that opened the file ends the line, even of a dup (bytes
// written through a dup still open start a new line). Another process's
// close does not (closedByOther): a child that inherited the descriptor
// exits, or a program the writer spawns closes it at exec (close-on-exec,
// as Python's subprocess and posix_spawn do), in the middle of the
// writer's line. That line waits for more bytes or RELEASE, which syncs
// it after storing it.
//
// Another process's close registers the line with closers only once the
// opener has closed a descriptor of the file and not written since
// (openerClosed): until then the opener still holds the file, so no
// RELEASE follows, and a writer with an unfinished line that spawns
// programs made the partition's other writers wait closeOrderWait per
// spawn. A child that was handed the file and outlives the opener's close
// (Popen(stdout=f); f.close()) ends the line at its exit, and what is
// appended after that exit still comes after the line.
//
// Nor does any close register it while the opener's process, or the
// closer's, still has a descriptor of this open file (heldBy, which reads
// /proc/PID/fdinfo: the kernel takes the closed descriptor out of the
// table before it sends FLUSH): that close was a dup's. A shell closes one
// at every builtin redirected to a descriptor it holds: `exec 3>>data;
// printf a >&3` moves fd 1 onto fd 3 and back, and the move back closes a
// dup in the opener's own process, after which each program the script ran
// made the other writers wait closeOrderWait as it exited. A dup closed by
// a child while the opener has closed its copy leaves openerClosed as it
// is: the child's own last close may be the file's. fdinfo tells
// two opens of the file apart by their positions only (pos, where each
// one's appends ended), so while another open may stand at this one's
// position (writerAt) the close counts as possibly the last, as before
// (`exec 4>>data` beside `printf a >> data; echo b >> data` is told apart:
// their positions differ). The look costs about 10 µs per descriptor
// looked at, and is made only here, where the other choice is to make the
// partition wait.
func (h *dataHandle) flush(ctx context.Context) syscall.Errno {
	byOther := h.closedByOther(ctx)
	h.mu.Lock()
	if !byOther {
		h.openerClosed = true
	}
	pending, durable := h.asm.pending(), h.syncOpen || h.owesSync
	if pending {
		if len(h.asm.partial) > h.maxLine() {
			h.mu.Unlock()
			return syscall.EMSGSIZE // max.message.bytes lowered since it was taken
		}
		if cfg := h.node.part.Topic().Config(); cfg.KeyError(h.asm.partial) != nil {
			h.mu.Unlock()
			return syscall.EINVAL
		}
	}
	// owesSync without a pending line: a WRITE completed the line an
	// fsync found, and the close syncs it.
	if ((pending && durable) || h.owesSync) && !byOther {
		h.mu.Unlock()
		return h.syncClose()
	}
	if pending && h.openerClosed {
		switch h.heldBy(callerPid(ctx)) {
		case heldByOpener:
			// The closed descriptor was a dup, and the opener's
			// process still has one of this open file: no RELEASE
			// is coming, nor can another process's close be the
			// last until the opener closes again.
			h.openerClosed = false
		case heldByCaller:
			if !byOther {
				h.openerClosed = false // the caller is the opener's process
			}
			// Another process closed a dup of a file the opener has
			// closed: its other descriptor's close may still be the
			// last one, so openerClosed stays.
		default:
			// If this was the last close, RELEASE stores the line;
			// until then, the partition's other requests wait for it
			// (closers).
			h.node.fs.closers.flushed(h)
		}
	}
	h.mu.Unlock()
	return 0
}

// heldBy reports whether the opener's process, or else the closer's,
// still has a descriptor of h's open file (holds), after the close by
// caller that sent a FLUSH. The closer's is looked at too when the
// opener's is not found: the thread that opened the file may have ended
// while its process goes on (a Python thread that opened it), and a child
// may hold two copies. h.mu is held.
//
// A descriptor is known by its position only, so while another writable
// open of the file may stand at the same position the answer is no: that
// descriptor may be the other open's. Two opens of data share a position
// when the kernel's size fell back below an unfinished line between
// them (`exec 4>>data; printf xxx >&4; stat data; printf yyy >> data`:
// the size data reports leaves out unfinished lines, so both appends
// start at the same end), and then the second one's close must still be
// waited for, as it may be its last. An open that has not written, or an
// O_RDWR one, may stand anywhere (writerAt).
func (h *dataHandle) heldBy(caller uint32) dupHolder {
	f := h.node.fs
	ino, pos := h.node.StableAttr().Ino, h.pos.Load()
	if f.writerAt(h, ino, pos) {
		return heldByNone
	}
	if holds(h.opener, ino, pos, f.dev) {
		return heldByOpener
	}
	if caller != 0 && caller != h.opener && holds(caller, ino, pos, f.dev) {
		return heldByCaller
	}
	return heldByNone
}

// dupHolder says whose descriptor of a handle's open file heldBy found.
type dupHolder int

const (
	heldByNone   dupHolder = iota
	heldByOpener           // the opener's process
	heldByCaller           // the closing process (looked at after the opener's)
)

// writerAt reports whether a writable open of st_ino ino other than h
// may stand at position pos: its appends ended there, or the server
// cannot know where it stands. An open that has not written yet may have
// been moved to the end (Python's open(p, "a") and glibc's fopen(p, "a")
// seek there as they open), and the size data reports leaves out
// unfinished lines, so that end can be where h's appends ended; a read
// moves an O_RDWR open anywhere. lseek is not sent to the server, so
// either may stand at pos.
func (f *fsys) writerAt(h *dataHandle, ino uint64, pos int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for o := range f.writers {
		if o == h || o.node.StableAttr().Ino != ino {
			continue
		}
		if p := o.pos.Load(); p == pos || p == 0 || o.view != nil {
			return true
		}
	}
	return false
}

// closedByOther reports whether a FLUSH comes from a process other than
// the one that opened h (see flush). FUSE names the calling thread; two
// threads of one process are one process (Go moves a goroutine between
// threads, so a writer may close on another thread than it opened on).
// Unknown (a thread that is gone) counts as the opener: its line is
// stored and synced.
func (h *dataHandle) closedByOther(ctx context.Context) bool {
	pid := callerPid(ctx)
	if pid == 0 || h.opener == 0 || pid == h.opener {
		return false
	}
	a, b := threadGroup(pid), threadGroup(h.opener)
	return a != 0 && b != 0 && a != b
}

// threadGroup returns the process (thread group id) of thread tid, from
// /proc; 0 if it cannot be read (the thread ended). The daemon's pid
// namespace is the mount's, in which FUSE reports callers.
func threadGroup(tid uint32) uint32 {
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(tid), 10) + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Tgid:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
			if err != nil {
				return 0
			}
			return uint32(n)
		}
	}
	return 0
}

// syncClose stores the unfinished line, if any, and syncs the partition,
// for a FLUSH of a writer that asked for durability (flush). A failed
// append leaves the line pending, as a failed WRITE does, and fails
// close(2); RELEASE tries it once more.
func (h *dataHandle) syncClose() syscall.Errno {
	f := h.node.fs
	// The line follows the unfinished line another handle's close(2)
	// ended, as a WRITE's lines do (closers).
	f.closers.await(h.node.part, h)
	f.gate.RLock()
	if f.closing {
		// stopWrites stored the line; the unmount syncs it.
		f.gate.RUnlock()
		return 0
	}
	h.mu.Lock()
	stored := false
	if h.asm.pending() {
		line := append(append([]byte(nil), h.asm.partial...), '\n')
		if _, _, _, err := h.lw.AppendLines(nil, line, nil); err != nil {
			h.mu.Unlock()
			f.gate.RUnlock()
			f.log.Warn("unfinished line at close not appended", "topic", h.node.part.Topic().Name(),
				"partition", h.node.part.Num(), "bytes", len(line), "err", err)
			return toErrno(err)
		}
		h.asm.take()
		stored = true
	}
	h.owesSync = false
	h.mu.Unlock()
	f.gate.RUnlock()
	if stored {
		// Stored before close(2) returns: nothing need wait for RELEASE.
		f.closers.done(h)
		f.notify.invalidateOthers(h.node)
	}
	if err := h.node.part.Flush(); err != nil {
		f.log.Warn("fsync at close failed", "topic", h.node.part.Topic().Name(), "partition", h.node.part.Num(), "err", err)
		return toErrno(err)
	}
	return 0
}

// Fsync makes everything appended to the partition so far durable. It is
// never ENOSYS: the kernel would then report every later fsync as success.
// An unfinished line is not a record yet, and stays unfinished: storing
// it here would split a line its writer is still writing into two
// records. The handle's close(2) stores and syncs its own line
// (dataHandle.flush). The lines are made durable in the journal instead
// (LineWriter.Sync): fsync returned success, so a power cut must not lose
// them, even one that leaves the journal behind the log because of other
// writers' later appends. Every writer's line of the partition is synced,
// not only the handle's: on a local filesystem an fsync of any descriptor
// covers every byte written to the file, and an fsync of data, even
// through a read-only descriptor (`sync FILE`), promises everything
// appended so far (syncLines). The FSYNC of a synchronous WRITE
// (fsyncOfWrite) syncs its handle's line only.
func (n *textNode) Fsync(ctx context.Context, f gofs.FileHandle, flags uint32) syscall.Errno {
	if n.isData {
		if err := n.syncLines(f, flags&fsyncOfWrite != 0); err != nil {
			// The records appended so far are made durable all the same;
			// the fsync fails (ENOSPC when the journal has no room for
			// a line's synced mark): the line is not durable.
			n.fs.log.Warn("fsync of an unfinished line failed", "topic", n.part.Topic().Name(), "partition", n.part.Num(), "err", err)
			if ferr := n.part.Flush(); ferr != nil {
				err = ferr
			}
			return toErrno(err)
		}
	}
	if err := n.part.Flush(); err != nil {
		n.fs.log.Warn("fsync failed", "topic", n.part.Topic().Name(), "partition", n.part.Num(), "err", err)
		return toErrno(err)
	}
	return 0
}

// syncLines syncs the unfinished line of every writable handle of n's
// partition (LineWriter.Sync) for an fsync through handle f; a writer
// with no line costs a lock. f's own line, if f is a writer, is one the
// close then owes a sync (owesSync); another writer's close is left as it
// was: ending its line, now synced, flushes the partition
// (LineWriter.AppendLines). It returns the first error, having tried
// every line. ownOnly: only f's line (a synchronous WRITE's sync).
func (n *textNode) syncLines(f gofs.FileHandle, ownOnly bool) error {
	fsys := n.fs
	fsys.gate.RLock()
	defer fsys.gate.RUnlock()
	if fsys.closing {
		// stopWrites stored the lines; the unmount syncs them.
		return nil
	}
	// The handles are gathered before any is locked: a handle's mu is
	// taken before fsys.mu elsewhere (heldBy, writerAt).
	var hs []*dataHandle
	if !ownOnly {
		fsys.mu.Lock()
		for h := range fsys.writers {
			if h.node.part == n.part {
				hs = append(hs, h)
			}
		}
		fsys.mu.Unlock()
	}
	if own, ok := f.(*dataHandle); ok && !slices.Contains(hs, own) {
		hs = append(hs, own)
	}
	var first error
	for _, h := range hs {
		h.mu.Lock()
		if h.asm.pending() {
			if h == f {
				h.owesSync = true
			}
			if err := h.lw.Sync(h.asm.partial); err != nil && first == nil {
				first = err
			}
		}
		h.mu.Unlock()
	}
	return first
}

func (n *textNode) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	n.noteOpen(ctx)                 // the lock table counts the opens of each file
	n.fs.closers.await(n.part, nil) // a line a close(2) just ended is in the text
	if n.isData {
		// The open a retrying walk was handed this node for: from now
		// on (a writer is counted, or a reader's handle chosen), others
		// may get cached handles again.
		pid := callerPid(ctx)
		n.fs.retries.Delete(retryKey{n.parent, n.name, pid})
		defer n.unhold(pid)
	}
	acc := flags & syscall.O_ACCMODE
	if acc == syscall.O_RDONLY && flags&syscall.O_TRUNC == 0 {
		if !n.usable(ctx, true) {
			return nil, 0, n.answeredStale(ctx)
		}
		v, errno := n.acquire()
		if errno != 0 {
			return nil, 0, errno
		}
		n.register()
		h := newReadHandle(n, v)
		// data is read through the page cache while no writer has it
		// open (doc.go, "Caching"); offset/N, read a line at a time by
		// lookups, bypasses it, as does data while a writer appends.
		// A fenced partition's log may end in a batch whose pages the
		// backing filesystem lost (F9): only an uncached handle can
		// return the good text before it as a short read (a cached
		// READ fails whole, and with it the last good lines).
		n.mu.Lock()
		now := time.Now().UnixNano()
		h.cached = n.isData && n.writers == 0 && now >= n.noCacheUntil && !n.heldFrom(callerPid(ctx), now) && !n.part.Fenced()
		if h.cached {
			n.cachedOpen++
			n.cachedEver = true
		}
		purge := h.cached && n.dropped
		n.mu.Unlock()
		if purge {
			// The node served an earlier view, maybe of an older
			// generation, before it dropped it (unpinLocked), and a
			// private mmap through an uncached handle fills the page
			// cache (FUSE-NOTES: mmap of a direct-I/O file): drop
			// those pages before a cached handle may read them. From
			// OPEN, which holds no page lock (FUSE-NOTES §2.3); every
			// cached open until one has done so sends it.
			n.NotifyContent(0, 0)
			n.mu.Lock()
			n.dropped = false
			n.mu.Unlock()
		}
		if h.cached {
			return h, fuse.FOPEN_KEEP_CACHE, 0
		}
		return h, fuse.FOPEN_DIRECT_IO, 0
	}
	// Writers append whatever the generation: a writable open never
	// answers ESTALE.
	if !n.isData {
		return nil, 0, syscall.EROFS
	}
	// data is append-only like chattr +a: writers must say O_APPEND, and
	// truncation destroys nothing.
	if flags&syscall.O_APPEND == 0 || flags&syscall.O_TRUNC != 0 {
		return nil, 0, syscall.EPERM
	}
	if errno := n.startWriter(ctx); errno != 0 {
		if errno == syscall.ESTALE {
			// The VFS retries ESTALE once, but not always with a
			// LOOKUP: when this walk had just looked the name up, it
			// sent the retry's OPEN to the same retired node (seen on
			// 6.18), and the second ESTALE reached the writer. With the
			// dentry gone the retry must look the name up, and Lookup
			// hands out a node without cached readers. Sent from here,
			// with no lock of ours held (startWriter released pubMu and
			// mu; a LOOKUP holding the directory's lock shared, which
			// this waits for, takes pubMu), and the writer's walk holds
			// no directory lock during OPEN.
			n.parent.NotifyEntry(n.name)
		}
		return nil, 0, errno
	}
	// O_SYNC includes O_DSYNC's bit, and F_SETFL cannot change either.
	h := &dataHandle{node: n, syncOpen: flags&syscall.O_DSYNC != 0, opener: callerPid(ctx), lw: n.part.NewLineWriter()}
	if h.syncOpen {
		// Its every WRITE is followed by an FSYNC (syncwrite.go): the
		// journal entry beginning a line carries the line's synced mark,
		// so that the FSYNC needs no room in the journal.
		h.lw.SyncWrites()
	}
	if acc == syscall.O_RDWR {
		v, errno := n.acquire()
		if errno != 0 {
			n.endWriter()
			return nil, 0, errno
		}
		h.view = v
	}
	n.register()
	n.fs.mu.Lock()
	n.fs.writers[h] = struct{}{}
	n.fs.mu.Unlock()
	// Direct I/O: a write(2) up to max_write arrives as one WRITE, not
	// split at page boundaries, and writes do not fill the page cache.
	return h, fuse.FOPEN_DIRECT_IO, 0
}

// dataHandle is a writable open of data: it turns WRITEs into appends.
type dataHandle struct {
	node *textNode
	view *logstore.TextView // O_RDWR only

	// syncOpen: opened O_SYNC or O_DSYNC, so its close(2) stores and
	// syncs the unfinished line (flush).
	syncOpen bool
	opener   uint32 // the thread that opened it (closedByOther)

	mu  sync.Mutex
	asm lineAssembler
	// openerClosed: a FLUSH came from the opener's process, and no WRITE
	// from the opener's thread since, so another process's close may be
	// the last one (flush).
	openerClosed bool
	// pos is where the last WRITE ended (its offset plus the bytes
	// taken): the open file's position, as the kernel moves it past
	// each append, by which holds finds the descriptors of this open.
	// Stored under mu; read without it by other handles' heldBy.
	pos atomic.Int64
	// lw journals asm's unfinished line in the partition, so that the
	// bytes of it that write(2)s acknowledged survive the daemon's death
	// (logstore/unfinished.go): every change of it is journaled before
	// the WRITE is answered, and each end of it (a record) clears it in
	// the same step as its batch.
	lw *logstore.LineWriter
	// owesSync: an fsync (or a synchronous WRITE, syncwrite.go) found an
	// unfinished line, which it could not sync, not being a record yet;
	// the next close(2) stores and syncs it, or syncs the record a later
	// WRITE completed it into.
	owesSync bool
}

// maxLine is the longest line the handle takes (Config.MaxLineBytes): a
// longer one fails its write(2) with EMSGSIZE, never later at close.
func (h *dataHandle) maxLine() int {
	return int(h.node.part.Topic().Config().MaxLineBytes())
}

// Write appends the complete lines of this WRITE as one AppendLines call,
// whatever off says (the kernel's idea of EOF may be stale), and keeps the
// unfinished tail. It answers after the lines are in the segment file.
func (h *dataHandle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	f := h.node.fs
	// Once lines are appended, and before the reply (deferred first, so
	// it runs after the locks below are released), the other kernel
	// inodes of this file must forget their size: a reader that fstat's
	// its descriptor after this write() returned must see the lines
	// (invalidateOthers).
	grew := false
	defer func() {
		if grew {
			f.notify.invalidateOthers(h.node)
		}
	}()
	// Lines follow the unfinished line another handle's close(2) ended.
	// A FLUSH of this handle was a dup's close, since it writes again.
	f.closers.await(h.node.part, h)
	f.closers.done(h)
	f.gate.RLock()
	defer f.gate.RUnlock()
	if f.closing {
		return 0, syscall.EROFS
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if callerPid(ctx) == h.opener {
		// The opener still holds the file: a dup it closed was not
		// its last descriptor.
		h.openerClosed = false
	}
	h.journalResync()
	hadLine := len(h.asm.partial) > 0
	head, lines, keep, n, err := h.asm.add(data, h.maxLine())
	if err != nil {
		if hadLine && len(h.asm.partial) == 0 {
			// The line grew too long and is dropped: so it is from
			// the journal.
			h.journalDrop()
		}
		return 0, syscall.EMSGSIZE
	}
	if head == nil && lines == nil {
		// No line ends here: the unfinished line grows by the chunk,
		// journaled before the write(2) is answered.
		if err := h.lw.Extend(h.asm.partial, keep); err != nil {
			errno := toErrno(err)
			f.log.Warn("unfinished line not journaled; write failed", "topic", h.node.part.Topic().Name(),
				"partition", h.node.part.Num(), "bytes", len(keep), "err", err)
			return 0, errno
		}
	} else {
		// The journal entry (keep is the new unfinished line, valid
		// once the batches are in) goes first, under the append lock.
		if _, _, stored, err := h.lw.AppendLines(head, lines, keep); err != nil {
			if stored > 0 {
				// A write longer than max.message.bytes is several
				// batches, and one after the first failed (ENOSPC): the
				// lines of the ones before are in the log. Answer a
				// short write of exactly those bytes, so that the writer
				// neither believes them lost nor sends them twice; it
				// resends the rest, which fails or succeeds on its own.
				acked := stored - len(h.asm.partial)
				h.asm.commit(head, lines, nil)
				h.pos.Store(off + int64(acked))
				f.log.Warn("append stopped part-way; short write", "topic", h.node.part.Topic().Name(),
					"partition", h.node.part.Num(), "bytes", len(data), "acked", acked, "err", err)
				return uint32(acked), 0
			}
			errno := toErrno(err)
			if (errno == syscall.EMSGSIZE || errno == syscall.EINVAL) && head != nil && h.lineRefused(head) {
				// The refused line is the one this write completes:
				// the unfinished line is its start, so it goes too.
				// Had a later line of the chunk been refused, the
				// unfinished line, which an earlier write() was told
				// was taken, would stay as it was.
				h.asm.abort(errno == syscall.EMSGSIZE)
				h.journalDrop()
			}
			// Other failures (ENOSPC, EIO) leave the unfinished line
			// as it was: the writer may retry the same chunk.
			f.log.Warn("append failed", "topic", h.node.part.Topic().Name(),
				"partition", h.node.part.Num(), "bytes", len(head)+len(lines), "err", err)
			return 0, errno
		}
	}
	h.asm.commit(head, lines, keep)
	grew = head != nil || lines != nil
	h.pos.Store(off + int64(n))
	return uint32(n), 0
}

// journalDrop tells the journal that the handle's unfinished line was
// dropped (refused). If its entry cannot be written (a full disk), the
// journal forgets the line in memory and repairs its file later
// (LineWriter.Drop): journalResync at the handle's next WRITE and its
// RELEASE, the partition's clean close at the latest. Until then a crash
// would bring the line back as a record; the write fails anyway, so a
// warning is all.
func (h *dataHandle) journalDrop() {
	if err := h.lw.Drop(); err != nil {
		h.node.fs.log.Warn("dropped unfinished line not cleared from the journal yet", "topic", h.node.part.Topic().Name(),
			"partition", h.node.part.Num(), "err", err)
	}
}

// journalResync retries the repair a failed journalDrop left pending
// (nothing to do otherwise). A failure changes nothing for the caller:
// the journal retries at its next entry.
func (h *dataHandle) journalResync() {
	if err := h.lw.Resync(); err != nil {
		h.node.fs.log.Debug("dropped unfinished line still not cleared from the journal", "topic", h.node.part.Topic().Name(),
			"partition", h.node.part.Num(), "err", err)
	}
}

// lineRefused reports whether the append would refuse line ('\n'-ended) on
// its own: too long, or without a key on a compacted topic.
func (h *dataHandle) lineRefused(line []byte) bool {
	line = line[:len(line)-1]
	cfg := h.node.part.Topic().Config()
	return len(line) > h.maxLine() || cfg.KeyError(line) != nil
}

func (h *dataHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if h.view == nil {
		return nil, syscall.EBADF
	}
	return readView(h.view, dest, off)
}

// Lseek answers SEEK_DATA and SEEK_HOLE (seekText) from the size fstat
// reports: the view's for O_RDWR, the current text's for a writer.
func (h *dataHandle) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	if h.view != nil {
		return seekText(off, whence, h.view.Size())
	}
	size, errno := h.node.size()
	if errno != 0 {
		return 0, errno
	}
	return seekText(off, whence, size)
}

// commitPartial appends the unfinished last line, if any, as a record,
// and reports whether its writer asked for it to be synced (flush).
// The caller holds the gate (either side).
func (h *dataHandle) commitPartial() (durable bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.journalResync()
	line := h.asm.take()
	if line == nil {
		return false
	}
	if _, _, _, err := h.lw.AppendLines(nil, line, nil); err != nil {
		h.node.fs.log.Warn("unfinished line at close not appended", "topic", h.node.part.Topic().Name(),
			"partition", h.node.part.Num(), "bytes", len(line), "err", err)
		if errors.Is(err, logstore.ErrMessageTooLarge) || errors.Is(err, logstore.ErrBatchTooLarge) || errors.Is(err, logstore.ErrInvalidRecord) {
			// Refused for what it is: dropped, as the close drops it.
			h.journalDrop()
		}
		// Otherwise (a full disk, a fenced partition) the journal
		// keeps it, and the next open of the partition stores it.
		return false
	}
	return h.syncOpen || h.owesSync
}

// Release commits the unfinished last line: the writer has closed its
// last descriptor of this open. RELEASE arrives after close(2) returned,
// so that record shows up shortly after, not before, close returns. A
// line left there by a writer that asked for durability (its last close
// was another process's: flush) is synced too, shortly after.
func (h *dataHandle) Release(ctx context.Context) syscall.Errno {
	f := h.node.fs
	f.gate.RLock()
	durable := false
	if !f.closing {
		durable = h.commitPartial()
	}
	f.gate.RUnlock()
	if durable {
		if err := h.node.part.Flush(); err != nil {
			f.log.Warn("fsync at release failed", "topic", h.node.part.Topic().Name(), "partition", h.node.part.Num(), "err", err)
		}
	}
	f.closers.done(h)
	f.mu.Lock()
	delete(f.writers, h)
	f.mu.Unlock()
	h.node.endWriter()
	if h.view != nil {
		h.node.release()
	}
	return 0
}

// startWriter admits a writable open of data. The kernel grows its i_size
// by every byte a WRITE accepted, which can run ahead of the text (an
// unfinished line, a key cut by key.separator), and a cached reader racing
// that bump would be served the zero-filled rest of the last page as data.
// So no cached reader may share the inode with a writer: if one is open,
// the node retires and the open answers ESTALE; the VFS looks the name up
// again and Lookup hands out a new node (same st_ino) for the writer, while
// the cached readers keep the old one. Otherwise the pages from the last
// reported size on are dropped before the first WRITE, and reads opened
// while a writer is open bypass the page cache.
func (n *textNode) startWriter(ctx context.Context) syscall.Errno {
	n.pubMu.Lock()
	defer n.pubMu.Unlock()
	n.mu.Lock()
	if n.cachedOpen > 0 {
		n.retire()
		n.mu.Unlock()
		n.fs.wantWriter.Store(n.StableAttr().Ino, time.Now().UnixNano())
		n.mayWrite(ctx)
		return n.answeredStale(ctx)
	}
	n.writers++
	inval := n.cachedEver
	n.mu.Unlock()
	if inval {
		// From OPEN, which holds no page lock (FUSE-NOTES §2.3).
		n.NotifyContent(n.pub&^(pageSize-1), 0)
	}
	return 0
}

// admit reports whether a lookup may hand n out. A retired node is not
// handed out again. While a writer waits (wanted), a node with cached
// readers retires, and one without gives out no cached handle for
// retryWindow, so the writer's open, when it comes, meets none. For the
// walk of holder (a caller retrying an ESTALE, which may be a writable
// open: mayWrite) likewise, except that the node gives out cached handles
// again once holder opened it (unhold), or after retryWindow if it never
// does: its retry was not an open.
func (n *textNode) admit(wanted bool, holder uint32) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.retired {
		return false
	}
	if (wanted || holder != 0) && n.cachedOpen > 0 {
		n.retire()
		return false
	}
	now := time.Now()
	if wanted {
		n.noCacheUntil = max(n.noCacheUntil, now.Add(retryWindow).UnixNano())
	}
	if holder != 0 {
		if n.holds == nil {
			n.holds = make(map[uint32]int64)
		}
		n.holds[holder] = now.Add(retryWindow).UnixNano()
	}
	return true
}

// heldFrom reports whether a retrying walk other than pid's holds n
// (admit): then a read open gets no cached handle. The caller holds n.mu.
func (n *textNode) heldFrom(pid uint32, now int64) bool {
	held := false
	for p, until := range n.holds {
		if now >= until {
			delete(n.holds, p)
		} else if p != pid {
			held = true
		}
	}
	return held
}

// unhold ends pid's hold on n, once its open was served.
func (n *textNode) unhold(pid uint32) {
	n.mu.Lock()
	delete(n.holds, pid)
	n.mu.Unlock()
}

// retire keeps lookups from handing n out again: the nodes they build
// from now on have a new incarnation, so go-fuse cannot match them to n.
// The caller holds n.mu.
func (n *textNode) retire() {
	n.retired = true
	n.fs.incs.Store(n.StableAttr().Ino, n.fs.incarnations.Add(1))
}

// incarnation is the incarnation of the next data node of st_ino ino
// (keyed by ino, not by parent and name: the partition's directory node
// can be forgotten and rebuilt while a retired data node lives on).
func (f *fsys) incarnation(ino uint64) uint64 {
	if v, ok := f.incs.Load(ino); ok {
		return v.(uint64)
	}
	return 0
}

func (n *textNode) endWriter() {
	n.mu.Lock()
	n.writers--
	n.mu.Unlock()
}

// pageSize is the kernel's page size for the invalidations of report.
var pageSize = int64(os.Getpagesize())

// report returns the size to tell the kernel for a text whose view now
// holds size bytes, and raises pub to it. The kernel keeps a page read at
// the end of the text with its rest zero-filled; before it may learn of a
// larger size, the pages from the last size it was told on are dropped
// (NotifyContent with an offset: the kernel's own invalidation on a size
// change comes just after it sets i_size, and a racing reader saw NULs).
// A page read after that holds at least size bytes. Only data is cached,
// and a node with a writer has no cached pages (startWriter dropped them,
// and its reads bypass the cache). report is called from LOOKUP, GETATTR
// and SETATTR, none of which the kernel sends holding a page lock, so the
// invalidation cannot wait on its own request.
func (n *textNode) report(size int64) int64 {
	if !n.isData {
		return size
	}
	if !n.attrsOut.Load() {
		n.attrsOut.Store(true)
	}
	n.pubMu.Lock()
	defer n.pubMu.Unlock()
	if size <= n.pub {
		// Smaller only for a node whose view opened after it reported
		// an older generation's size (its lookup's, or its own dropped
		// view's: unpinLocked; see usable); such a node has no cached
		// handle open (that would keep its view), its first drops the
		// node's pages (dropped), and the kernel drops what lies past a
		// smaller size.
		n.pub = size
		return size
	}
	n.mu.Lock()
	inval := n.cachedEver && n.writers == 0
	n.mu.Unlock()
	// Only a page a cached READ filled short holds zeros the kernel could
	// serve below the new size. The invalidation is not free: the kernel
	// drops the attributes of the request it is sent during (the inode's
	// attr_version moved), so the read(2) whose GETATTR this is still
	// sees the old size and returns end-of-file. Sent on every growth, a
	// reader that polls with read(2) alone (`while read line <&4`, a log
	// shipper) saw nothing for as long as appends kept coming. A READ
	// still being served may yet end short, so it counts as one; one
	// that starts after this check reads at least size bytes of text.
	if inval && (n.cachedReads.Load() > 0 || zeroFillBelow(n.zeroFill.Load(), size)) {
		from := n.pub
		if z := n.zeroFill.Swap(0); z > 0 {
			from = min(from, z-1)
		}
		n.NotifyContent(from&^(pageSize-1), 0)
	}
	n.pub = size
	return size
}

// announce tells the kernel that n's view may have grown, from outside any
// request of n and holding no lock but announceMu: it drops the tail page
// a short READ left (dropTail), which invalidates the attributes too, or
// else invalidates only the attributes; for an append through another
// node (invalidateOthers: write), only if a reply gave the kernel
// attributes since the last such invalidation (attrsOut). It sends nothing when n
// was announced, or told (report: pub), the size its view has now: such
// an invalidation would only make the kernel discard the attributes of a
// GETATTR in flight, and the read(2) behind that GETATTR would see the
// old size. The notifier's round for an append through the mount runs
// beside the WRITE's own announcement (invalidateOthers); announceMu makes
// the second one see the first, so a reader woken by the write(2), whose
// read(2) comes after the WRITE's reply, does not have its GETATTR's
// attributes discarded by the round's (`echo x >> data; read <&3` read
// nothing a third of the time when the round came after the reply).
func (n *textNode) announce(write bool) {
	n.announceMu.Lock()
	defer n.announceMu.Unlock()
	n.mu.Lock()
	v := n.view
	n.mu.Unlock()
	var size int64
	if v != nil {
		// 0 once closed (forgotten, or unused and unpinned:
		// unpinLocked): no reader to tell.
		size = v.Size()
		if v == n.announcedView && n.announced >= size {
			return
		}
		n.pubMu.Lock()
		told := n.pub >= size
		n.pubMu.Unlock()
		if told {
			return
		}
	}
	// A node without a view reports the size of a view it opens on
	// demand: not known here, so always announced.
	attrs := true
	if write {
		// Cleared before the invalidation: a reply given after it is
		// invalidated by the next append's.
		attrs = n.attrsOut.CompareAndSwap(true, false)
	}
	if !n.dropTail(v, size) && attrs {
		// ENOENT for a node the kernel forgot: fine.
		if errno := n.NotifyContent(-1, 0); errno != 0 {
			n.fs.log.Debug("notify", "file", n.name, "errno", errno)
		}
	}
	// Every reply from now on gives at least size (report).
	n.announcedView, n.announced = v, size
}

// dropTail drops, ahead of report, the pages report would drop when the
// kernel next asks for n's size: those from the size it was last told on,
// when a cached READ since left one zero-filled below the size n's view has
// now (zeroFill). Dropped from the GETATTR of a reader's read(2), they cost
// that read(2) the new size (the kernel discards the attributes of a
// request during which the inode was invalidated): a reader that follows
// with read(2) alone got each line one read late, end-of-file first.
// Dropped here, when an append is announced (the notifier's round,
// invalidateOthers), that GETATTR finds nothing to drop and its size is
// kept. The caller (announce) is in no request of n and holds no lock a
// request takes: the invalidation waits for the lock of a page a READ of
// n is filling, which that READ's reply releases, and nothing serving a
// READ takes pubMu or waits for the caller (FUSE-NOTES §2.3: a page
// invalidation hung from inside a READ or WRITE of the same inode, which
// holds such a page lock itself; a WRITE of data is direct I/O and holds
// none, of its own inode or another's). A READ being served is left to
// report: it may yet end short. It reports whether it sent the
// invalidation, which invalidates the attributes too. v is n's view and
// size its size, read before.
func (n *textNode) dropTail(v *logstore.TextView, size int64) bool {
	if !n.isData || v == nil || n.zeroFill.Load() == 0 {
		// Without a view (no handle open, none kept), report answers
		// from a view it opens then, and keeps its drop.
		return false
	}
	n.pubMu.Lock()
	defer n.pubMu.Unlock()
	n.mu.Lock()
	inval := n.cachedEver && n.writers == 0
	n.mu.Unlock()
	// As in report, under pubMu: a report that raises pub after this
	// finds zeroFill cleared only once the pages are gone.
	if !inval || size <= n.pub || n.cachedReads.Load() > 0 || !zeroFillBelow(n.zeroFill.Load(), size) {
		return false
	}
	from := min(n.pub, n.zeroFill.Swap(0)-1)
	n.NotifyContent(from&^(pageSize-1), 0)
	return true
}

// zeroFillBelow reports whether zeroFill z (1 + position, 0 for none)
// lies below size.
func zeroFillBelow(z, size int64) bool { return z != 0 && z-1 < size }

// noteCachedRead records where a cached READ of [off, off+want) that
// returned got bytes left the kernel a zero-filled page (report). A READ
// that failed filled no page.
func (n *textNode) noteCachedRead(off int64, want, got int, failed bool) {
	if failed || got >= want {
		return
	}
	z := off + int64(got) + 1
	for {
		cur := n.zeroFill.Load()
		if cur != 0 && cur <= z {
			return
		}
		if n.zeroFill.CompareAndSwap(cur, z) {
			return
		}
	}
}
