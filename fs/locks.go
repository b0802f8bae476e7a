package fs

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// File locks: flock(2), fcntl(2) record locks (F_SETLK, F_SETLKW,
// F_GETLK, lockf(3), F_OFD_*) are kept here, in the daemon, not by the
// kernel (MountOptions.EnableLocks). The kernel keeps locks per kernel
// inode, and a file here can be several at once with one st_ino: every
// partition generation of data and offset/N is a kernel inode of its own,
// and so is every incarnation of data a writer gets while cached readers
// hold the one before (doc.go, "Caching"). A `flock data` holder is such a
// reader, so the first `echo >> data` behind it moved new opens to a new
// inode, on which the lock was not seen: `flock data -c …` stopped
// excluding anyone. Here there is one table per st_ino, shared by every
// kernel inode of the file.
//
// The semantics are the kernel's own (fs/locks.c):
//
//   - flock (FUSE_LK_FLOCK): one lock per open file description, shared or
//     exclusive over the whole file; a conversion drops the old lock
//     first, as Linux does, so a conversion that fails or waits has lost
//     it. It is released at the RELEASE of the description, after its last
//     close. The owner is the description: go-fuse's file handle number
//     (Fh), which go-fuse hands out again only after that RELEASE was
//     served, unlike the kernel's owner id (a scrambled struct file
//     pointer, which a new open may reuse before the old RELEASE is
//     served).
//   - POSIX (fcntl, lockf, OFD): byte ranges [start, end] per lock owner
//     (the process's files table, or the description for OFD locks); a
//     lock replaces the owner's locks on its range, whatever their type,
//     and merges with the owner's adjacent and overlapping ones of its
//     type; F_UNLCK splits them. F_GETLK reports the conflicting lock of
//     another owner that starts first, with the pid that took it. A
//     close(2) of any descriptor of the file sends FLUSH with the closing
//     process's owner, which releases all of that owner's locks on the
//     file (on every kernel inode of it); the kernel sends no unlock of its
//     own at close (fuse_setlk: "Unlock on close is handled by the flush
//     method"). The
//     kernel tells nothing at all when the last descriptor of an OFD
//     lock's description closes, so RELEASE also drops every lock taken
//     through that description: a process's own locks taken through it
//     went at the FLUSH of that process's close of it. RELEASE comes
//     after close(2) returned, so a SETLK or GETLK that meets the lock of
//     a description just closed waits for it a little (lockWait).
//   - flock and POSIX locks do not conflict with each other.
//   - A conflict is EAGAIN for SETLK and a wait for SETLKW. A waiting
//     request is served in its own goroutine (go-fuse serves every request
//     in one), so it blocks nothing else; a signal to the waiter makes the
//     kernel send INTERRUPT, which go-fuse turns into the cancellation of
//     the request's context, and the wait ends with EINTR (the kernel
//     restarts the call if the handler says SA_RESTART). A SETLKW that
//     would close a cycle of POSIX owners waiting for each other fails
//     with EDEADLK, as the kernel's posix_locks_deadlock does (it follows
//     at most maxDeadlockSteps owners; OFD owners, which the kernel leaves
//     out, cannot be told apart here and take part).
//
// go-fuse's node API passes the node methods neither the Fh of a SETLK
// nor the lock owner of a FLUSH, and its RELEASE reaches only the handle:
// lockingFS, wrapped around go-fuse's raw filesystem, notes the first two
// by the request's cancel channel (unique among requests in flight) for
// the node methods, and drops a description's locks at RELEASE; it also
// counts the open descriptions of every file (lockopens.go), each node's
// Open telling it the file. Every node of a file that can be opened
// (data, offset/N, status, config, segments/NAME) embeds lockable and
// answers FLUSH: once locks are forwarded, a file whose node did not
// answer them would fail flock(1) with EOPNOTSUPP. Forwarding adds no
// request to reads and appends: the kernel sends FLUSH at every close
// anyway, and nothing at all while no lock is taken. Locks live in memory
// only: none survives an unmount or a daemon restart, as on any
// filesystem.
//
// Directories are not here: the kernel does not send lock requests for
// them (fuse_dir_operations has no lock methods), it keeps their locks
// itself, and a directory has one kernel inode.

// maxDeadlockSteps bounds the chain of waiting owners followed for
// EDEADLK, as MAX_DEADLK_ITERATIONS does in the kernel.
const maxDeadlockSteps = 10

// offsetMax is the end of a lock "to the end of the file" (OFFSET_MAX).
const offsetMax = math.MaxInt64

// lockSet holds the locks of one mount.
type lockSet struct {
	log   *slog.Logger // nil in unit tests
	mu    sync.Mutex
	files map[uint64]*fileLocks  // by st_ino, while it holds a lock or a waiter
	byFh  map[uint64][]uint64    // Fh → st_inos where a lock was taken through it
	waits map[*lockWait]struct{} // SETLKWs of POSIX locks waiting, for EDEADLK
	// flushed: Fhs in byFh one of whose descriptors was closed since
	// they were last waited for (true), or that were waited for or seen
	// still open since (false): see lockWait, closed.
	flushed map[uint64]bool
	flushes uint64       // FLUSHes that marked flushed (closed)
	posix   atomic.Int64 // POSIX locks held: a FLUSH notes nothing while 0
	fhs     atomic.Int64 // len(byFh): a FLUSH marks nothing while 0

	opens *lockOpens // every open description, to prove one still open
	// dev is the mount's device (major:minor, from mountinfo; set
	// before any request is served, "" if unknown, which proves
	// nothing): descriptors are looked up by it (lockOpens.held).
	dev string

	reqMu sync.Mutex
	reqs  map[<-chan struct{}]lockReq // by the request's cancel channel (lockingFS)
}

// lockReq is what go-fuse's node API leaves out of a lock request (its
// Fh) or a FLUSH (its lock owner), or what lockingFS.Open needs from the
// node it opens (its st_ino, noteOpen).
type lockReq struct {
	fh    uint64
	owner uint64 // FLUSH only
	ino   uint64 // OPEN only
}

// fileLocks are the locks of one file (st_ino).
type fileLocks struct {
	posix   []posixLock
	flocks  []flockLock
	waiters int
	looks   int           // stillOpen looks in progress
	wake    chan struct{} // closed and replaced when a lock goes or shrinks
}

type posixLock struct {
	owner      uint64
	fh         uint64 // the description it was taken through (RELEASE drops OFD locks by it)
	typ        uint32 // F_RDLCK or F_WRLCK
	start, end uint64 // inclusive
	pid        uint32
}

type flockLock struct {
	fh  uint64 // the open file description
	typ uint32
	pid uint32
}

// lockWait is a SETLKW of a POSIX lock waiting for blocker's lock.
type lockWait struct {
	owner, blocker uint64
}

// holder is the owner and description of a lock in a request's way.
type holder struct {
	owner, fh uint64
}

func newLockSet() *lockSet {
	return &lockSet{
		files:   make(map[uint64]*fileLocks),
		byFh:    make(map[uint64][]uint64),
		waits:   make(map[*lockWait]struct{}),
		flushed: make(map[uint64]bool),
		opens:   newLockOpens(),
		reqs:    make(map[<-chan struct{}]lockReq),
	}
}

// note records r for the request whose cancel channel is cancel, for the
// node method go-fuse calls; the returned func forgets it.
func (s *lockSet) note(cancel <-chan struct{}, r lockReq) func() {
	s.reqMu.Lock()
	s.reqs[cancel] = r
	s.reqMu.Unlock()
	return func() {
		s.reqMu.Lock()
		delete(s.reqs, cancel)
		s.reqMu.Unlock()
	}
}

// notedBy returns what lockingFS noted for the request whose cancel
// channel is cancel (and the node filled in).
func (s *lockSet) notedBy(cancel <-chan struct{}) (lockReq, bool) {
	s.reqMu.Lock()
	r, ok := s.reqs[cancel]
	s.reqMu.Unlock()
	return r, ok
}

// noted returns what lockingFS noted for the request ctx serves.
func (s *lockSet) noted(ctx context.Context) (lockReq, bool) {
	c, ok := ctx.(*fuse.Context)
	if !ok {
		return lockReq{}, false
	}
	s.reqMu.Lock()
	r, ok := s.reqs[c.Cancel]
	s.reqMu.Unlock()
	return r, ok
}

// file returns ino's locks, creating them. The caller holds mu.
func (s *lockSet) file(ino uint64) *fileLocks {
	f := s.files[ino]
	if f == nil {
		f = &fileLocks{wake: make(chan struct{})}
		s.files[ino] = f
	}
	return f
}

// idle forgets ino's locks once nothing is left in them. The caller holds
// mu.
func (s *lockSet) idle(ino uint64, f *fileLocks) {
	if len(f.posix) == 0 && len(f.flocks) == 0 && f.waiters == 0 && f.looks == 0 {
		delete(s.files, ino)
	}
}

// wakeAll lets every waiter of f try again. The caller holds mu.
func (f *fileLocks) wakeAll() {
	close(f.wake)
	f.wake = make(chan struct{})
}

// usedFh notes that a lock of ino was taken through fh, for release. The
// caller holds mu.
func (s *lockSet) usedFh(fh, ino uint64) {
	inos, ok := s.byFh[fh]
	for _, i := range inos {
		if i == ino {
			return
		}
	}
	s.byFh[fh] = append(inos, ino)
	if !ok {
		s.fhs.Add(1)
	}
}

func overlaps(a posixLock, start, end uint64) bool {
	return a.start <= end && start <= a.end
}

func conflicts(held, want uint32) bool {
	return held == unix.F_WRLCK || want == unix.F_WRLCK
}

// posixConflict returns the lock of another owner that a lock of type
// typ on [start, end] by owner conflicts with, the one that starts first
// if there are several.
func (f *fileLocks) posixConflict(owner uint64, typ uint32, start, end uint64) (posixLock, bool) {
	var found posixLock
	ok := false
	for _, l := range f.posix {
		if l.owner != owner && overlaps(l, start, end) && conflicts(l.typ, typ) && (!ok || l.start < found.start) {
			found, ok = l, true
		}
	}
	return found, ok
}

// setPosix applies req (no conflict left) to the owner's locks: they give
// up req's range whatever their type, and those of req's type that touch
// it merge with it. F_UNLCK only cuts. It reports whether a lock went,
// shrank or became a read lock: waiters may proceed.
func setPosix(locks []posixLock, req posixLock) (out []posixLock, freed bool) {
	out = make([]posixLock, 0, len(locks)+2)
	unlock := req.typ == unix.F_UNLCK
	for _, l := range locks {
		if l.owner != req.owner {
			out = append(out, l)
			continue
		}
		touches := overlaps(l, req.start, req.end) ||
			(l.end != offsetMax && l.end+1 == req.start) || (req.end != offsetMax && req.end+1 == l.start)
		if !unlock && l.typ == req.typ && touches {
			req.start, req.end = min(req.start, l.start), max(req.end, l.end)
			continue
		}
		if !overlaps(l, req.start, req.end) {
			out = append(out, l)
			continue
		}
		// req takes [req.start, req.end] out of l. That lets a waiter
		// in unless a read lock became a write lock there (a write
		// lock of req's type merged above).
		if unlock || l.typ == unix.F_WRLCK {
			freed = true
		}
		if l.start < req.start {
			left := l
			left.end = req.start - 1
			out = append(out, left)
		}
		if l.end > req.end {
			right := l
			right.start = req.end + 1
			out = append(out, right)
		}
	}
	if !unlock {
		out = append(out, req)
	}
	return out, freed
}

// getlk answers F_GETLK: the lock of another owner that lk conflicts
// with, or F_UNLCK. A lock whose description was just closed is waited
// for as a SETLK waits for it (lockWait): an OFD lock goes at RELEASE.
func (s *lockSet) getlk(ctx context.Context, ino, owner uint64, lk *fuse.FileLock, out *fuse.FileLock) syscall.Errno {
	if (lk.Typ != unix.F_RDLCK && lk.Typ != unix.F_WRLCK) || lk.Start > lk.End || lk.End > offsetMax {
		return syscall.EINVAL
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var closing <-chan time.Time
	var looked, open []uint64 // descriptions looked for, and those proved open (stillOpen)
	for {
		*out = fuse.FileLock{Typ: unix.F_UNLCK}
		f := s.files[ino]
		if f == nil {
			return 0
		}
		l, ok := f.posixConflict(owner, lk.Typ, lk.Start, lk.End)
		if !ok {
			return 0
		}
		*out = fuse.FileLock{Start: l.start, End: l.end, Typ: l.typ, Pid: l.pid}
		if !s.flushed[l.fh] || slices.Contains(open, l.fh) {
			return 0
		}
		if !slices.Contains(looked, l.fh) {
			looked = append(looked, l.fh)
			if s.stillOpen(ctx, f, l.fh) {
				open = append(open, l.fh)
			}
			// Look again: the lock may have gone while mu was
			// not held.
			s.idle(ino, f)
			continue
		}
		if closing == nil {
			t := time.NewTimer(closeOrderWait)
			defer t.Stop()
			closing = t.C
		}
		f.waiters++
		wake := f.wake
		s.mu.Unlock()
		expired, interrupted := false, false
		select {
		case <-wake:
		case <-ctx.Done():
			expired, interrupted = true, true
		case <-closing:
			expired = true
		}
		s.mu.Lock()
		f.waiters--
		s.idle(ino, f)
		if expired {
			if _, ok := s.flushed[l.fh]; ok {
				s.flushed[l.fh] = false
			}
			if !interrupted {
				s.waitedOut(ino)
			}
			return 0
		}
	}
}

// setlk serves SETLK (wait false) and SETLKW of st_ino ino.
func (s *lockSet) setlk(ctx context.Context, ino, owner uint64, lk *fuse.FileLock, flags uint32, wait bool) syscall.Errno {
	r, ok := s.noted(ctx)
	if !ok {
		// Every lock request comes through lockingFS.
		return syscall.ENOLCK
	}
	switch lk.Typ {
	case unix.F_RDLCK, unix.F_WRLCK, unix.F_UNLCK:
	default:
		return syscall.EINVAL
	}
	if flags&fuse.FUSE_LK_FLOCK != 0 {
		return s.flock(ctx, ino, r.fh, lk.Typ, lk.Pid, wait)
	}
	if lk.Start > lk.End || lk.End > offsetMax {
		return syscall.EINVAL
	}
	req := posixLock{owner: owner, fh: r.fh, typ: lk.Typ, start: lk.Start, end: lk.End, pid: lk.Pid}
	return s.lockWait(ctx, ino, owner, wait, true, func(f *fileLocks) (holder, bool) {
		if req.typ != unix.F_UNLCK {
			if l, ok := f.posixConflict(owner, req.typ, req.start, req.end); ok {
				return holder{l.owner, l.fh}, false
			}
		}
		before := len(f.posix)
		var freed bool
		f.posix, freed = setPosix(f.posix, req)
		s.posix.Add(int64(len(f.posix) - before))
		if req.typ != unix.F_UNLCK {
			s.usedFh(req.fh, ino)
		}
		if freed {
			f.wakeAll()
		}
		return holder{}, true
	})
}

// flock serves a flock(2) request of the description fh.
func (s *lockSet) flock(ctx context.Context, ino, fh uint64, typ, pid uint32, wait bool) syscall.Errno {
	first := true
	return s.lockWait(ctx, ino, fh, wait, false, func(f *fileLocks) (holder, bool) {
		if first {
			first = false
			// The description's lock goes first, as in the kernel's
			// flock_lock_inode: a conversion that must wait, or fails,
			// has given it up.
			for i, l := range f.flocks {
				if l.fh != fh {
					continue
				}
				if l.typ == typ {
					return holder{}, true
				}
				f.flocks = append(f.flocks[:i], f.flocks[i+1:]...)
				f.wakeAll()
				break
			}
		}
		if typ == unix.F_UNLCK {
			return holder{}, true
		}
		for _, l := range f.flocks {
			if conflicts(l.typ, typ) {
				return holder{l.fh, l.fh}, false
			}
		}
		f.flocks = append(f.flocks, flockLock{fh: fh, typ: typ, pid: pid})
		s.usedFh(fh, ino)
		return holder{}, true
	})
}

// lockWait runs try on ino's locks until it succeeds: at once for SETLK
// (EAGAIN if it does not), and for SETLKW again each time a lock of the
// file goes or shrinks, until the request is interrupted (EINTR). try
// reports, when it fails, the lock in the way.
//
// A SETLK in the way of a lock whose description was just closed waits a
// little, though: a flock or OFD lock goes at the description's RELEASE,
// which the kernel sends after close(2) returned, and go-fuse serves
// requests concurrently, so `flock(fd, LOCK_EX); close(fd)` and then
// LOCK_EX|LOCK_NB on a new descriptor, by the same process or one it
// told, failed now and then with EWOULDBLOCK (2 in 200 such pairs), the
// lock being on its way out. The FLUSH of that close came before (it is
// answered before close(2) returns) and marked the description (flushed),
// so the SETLK waits for a lock of the file to go, at most closeOrderWait.
// The FLUSH may also have been the close of a dup, the description living
// on, as every program a lock holder's shell runs closes one as it exits:
// the SETLK first looks for a descriptor of the description in the
// processes that have to do with it (stillOpen), and fails at once if it
// finds one. Where that proves nothing (another open of the file with
// the same access mode), the wait runs out, once per such FLUSH, and the
// answer is EAGAIN.
func (s *lockSet) lockWait(ctx context.Context, ino, owner uint64, wait, posix bool, try func(*fileLocks) (holder, bool)) syscall.Errno {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.file(ino)
	defer s.idle(ino, f)
	var closing <-chan time.Time // closeOrderWait, for a SETLK
	var looked, open []uint64    // descriptions looked for, and those proved open (stillOpen)
	for {
		h, ok := try(f)
		if ok {
			return 0
		}
		if !wait {
			if !s.flushed[h.fh] || slices.Contains(open, h.fh) {
				return syscall.EAGAIN
			}
			if !slices.Contains(looked, h.fh) {
				looked = append(looked, h.fh)
				if s.stillOpen(ctx, f, h.fh) {
					open = append(open, h.fh)
				}
				// Try again: the lock may have gone (RELEASE)
				// while mu was not held.
				continue
			}
			if closing == nil {
				t := time.NewTimer(closeOrderWait)
				defer t.Stop()
				closing = t.C
			}
		} else if posix && s.deadlocks(owner, h.owner) {
			return syscall.EDEADLK
		}
		w := &lockWait{owner: owner, blocker: h.owner}
		if posix && wait {
			s.waits[w] = struct{}{}
		}
		f.waiters++
		wake := f.wake
		s.mu.Unlock()
		var errno syscall.Errno
		select {
		case <-wake:
		case <-ctx.Done():
			errno = syscall.EINTR
		case <-closing:
			errno = syscall.EAGAIN
		}
		s.mu.Lock()
		f.waiters--
		delete(s.waits, w)
		if errno == syscall.EAGAIN {
			if _, ok := s.flushed[h.fh]; ok {
				s.flushed[h.fh] = false // waited out until its next FLUSH
			}
			s.waitedOut(ino)
		}
		if errno != 0 {
			return errno
		}
	}
}

// stillOpen reports whether the description fh, which holds a lock of f
// in a request's way and one of whose descriptors was closed (flushed),
// is surely still open, so that its lock is held now and its RELEASE is
// not coming: a process has a descriptor of it (lockOpens.held). It looks
// in the processes that took locks through fh, the one that opened it
// and the one asking (which inherited the holder's descriptor if it is a
// program the holder's shell ran). Every close of a descriptor of a
// locked description sends a FLUSH, so without this look a shell holding
// `exec 9>>data; flock 9` made each `flock -n data` wait closeOrderWait
// after every program it ran, as the program exited (and `flock -n`
// itself is one). false means unknown, and the request waits as before.
//
// The caller holds mu, which is released during the look (it reads
// /proc), so it must try the lock again after it; f stays in the table
// meanwhile (looks).
func (s *lockSet) stillOpen(ctx context.Context, f *fileLocks, fh uint64) bool {
	if s.dev == "" {
		return false
	}
	pids := f.lockPids(fh, []uint32{callerPid(ctx)})
	gen := s.flushes
	f.looks++
	s.mu.Unlock()
	open := s.opens.held(fh, pids, s.dev)
	s.mu.Lock()
	f.looks--
	// A FLUSH served meanwhile may have been of another description
	// that got fh once this one's RELEASE was served: the look saw
	// that one.
	return open && s.flushes == gen
}

// waitedOut logs, at debug level, that a request waited closeOrderWait
// for the RELEASE of a description one of whose descriptors was closed,
// and none came: the close was not the last.
func (s *lockSet) waitedOut(ino uint64) {
	if s.log != nil {
		s.log.Debug("no RELEASE after a close of a locked file; a dup may still be open",
			"ino", ino, "waited", closeOrderWait)
	}
}

// deadlocks reports whether owner waiting for blocker closes a cycle:
// blocker waits (for an owner that waits …) for owner. The caller holds
// mu.
func (s *lockSet) deadlocks(owner, blocker uint64) bool {
	for i := 0; i < maxDeadlockSteps; i++ {
		next, ok := uint64(0), false
		for w := range s.waits {
			if w.owner == blocker {
				next, ok = w.blocker, true
				break
			}
		}
		if !ok {
			return false
		}
		if next == owner {
			return true
		}
		blocker = next
	}
	return false
}

// flush drops the POSIX locks that the closing process (the FLUSH's lock
// owner) holds on st_ino ino.
func (s *lockSet) flush(ctx context.Context, ino uint64) {
	if s.posix.Load() == 0 {
		return
	}
	r, ok := s.noted(ctx)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.files[ino]
	if f == nil {
		return
	}
	kept := f.posix[:0]
	for _, l := range f.posix {
		if l.owner != r.owner {
			kept = append(kept, l)
		}
	}
	if n := len(f.posix) - len(kept); n > 0 {
		clear(f.posix[len(kept):])
		f.posix = kept
		s.posix.Add(-int64(n))
		f.wakeAll()
	}
	s.idle(ino, f)
}

// closed notes the FLUSH of a descriptor of fh by thread closer: if fh
// holds locks, its RELEASE may be on its way (lockWait), unless fh is
// seen still open after the close (lockOpens.held). The look is made
// here as well as by a request in fh's way (stillOpen) because here no
// other open of the file may stand beside it yet: `flock -n data` opens
// data read-only too, so by the time it asks, a holder's read-only open
// is no longer the file's only one (`flock data -c 'script'`, whose
// programs close the inherited descriptor as they exit, and the next
// `flock -n data` waited closeOrderWait each time).
func (s *lockSet) closed(fh uint64, closer uint32) {
	s.mu.Lock()
	inos, ok := s.byFh[fh]
	if !ok {
		s.mu.Unlock()
		return
	}
	s.flushed[fh] = true
	s.flushes++
	gen := s.flushes
	pids := []uint32{closer}
	for _, ino := range inos {
		if f := s.files[ino]; f != nil {
			pids = f.lockPids(fh, pids)
		}
	}
	s.mu.Unlock()
	if s.dev == "" || !s.opens.held(fh, pids, s.dev) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// A FLUSH of another close served since may have been fh's last:
	// its mark stays.
	if _, ok := s.flushed[fh]; ok && s.flushes == gen {
		s.flushed[fh] = false
	}
}

// relook looks again for the descriptions holding locks of st_ino ino one
// of whose descriptors was closed (flushed), after the RELEASE of another
// open of the file: while that open stood beside them with their access
// mode, the look of their FLUSH proved nothing (closed). A `flock -n data`
// that inherited a read-only holder's descriptor closes it as it exits,
// before the RELEASE of its own read-only open of data. No one waits for a
// RELEASE, so the look costs nobody time.
func (s *lockSet) relook(ino uint64) {
	if s.dev == "" || s.fhs.Load() == 0 {
		return
	}
	type look struct {
		fh   uint64
		pids []uint32
	}
	var looks []look
	s.mu.Lock()
	f := s.files[ino]
	for fh, marked := range s.flushed {
		if marked && f != nil && slices.Contains(s.byFh[fh], ino) {
			looks = append(looks, look{fh, f.lockPids(fh, nil)})
		}
	}
	gen := s.flushes
	s.mu.Unlock()
	for _, l := range looks {
		if !s.opens.held(l.fh, l.pids, s.dev) {
			continue
		}
		s.mu.Lock()
		// As in closed: a FLUSH served since may have been the last.
		if _, ok := s.flushed[l.fh]; ok && s.flushes == gen {
			s.flushed[l.fh] = false
		}
		s.mu.Unlock()
	}
}

// lockPids appends to pids those of the processes that took f's locks
// through the description fh.
func (f *fileLocks) lockPids(fh uint64, pids []uint32) []uint32 {
	for _, l := range f.flocks {
		if l.fh == fh && !slices.Contains(pids, l.pid) {
			pids = append(pids, l.pid)
		}
	}
	for _, l := range f.posix {
		if l.fh == fh && !slices.Contains(pids, l.pid) {
			pids = append(pids, l.pid)
		}
	}
	return pids
}

// release drops the locks taken through the description fh, whose last
// descriptor closed: its flock, and its OFD locks.
func (s *lockSet) release(fh uint64) {
	// Every close sends a RELEASE: without a lock taken through any
	// description (fhs counts them), it has nothing to drop. A lock is
	// taken through fh only in a request on an open fh, which RELEASE
	// cannot overtake.
	if s.fhs.Load() == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	inos, ok := s.byFh[fh]
	if !ok {
		return
	}
	delete(s.byFh, fh)
	delete(s.flushed, fh)
	s.fhs.Add(-1)
	for _, ino := range inos {
		f := s.files[ino]
		if f == nil {
			continue
		}
		changed := false
		flocks := f.flocks[:0]
		for _, l := range f.flocks {
			if l.fh == fh {
				changed = true
			} else {
				flocks = append(flocks, l)
			}
		}
		f.flocks = flocks
		posix := f.posix[:0]
		for _, l := range f.posix {
			if l.fh == fh {
				changed = true
				s.posix.Add(-1)
			} else {
				posix = append(posix, l)
			}
		}
		clear(f.posix[len(posix):])
		f.posix = posix
		if changed {
			f.wakeAll()
		}
		s.idle(ino, f)
	}
}

// lockable gives a file's node the lock requests, served from the
// mount's table of its st_ino (lockSet).
type lockable struct {
	locks *lockSet
	ino   uint64
}

var (
	_ gofs.NodeGetlker  = lockable{}
	_ gofs.NodeSetlker  = lockable{}
	_ gofs.NodeSetlkwer = lockable{}
)

func (l lockable) Getlk(ctx context.Context, f gofs.FileHandle, owner uint64, lk *fuse.FileLock, flags uint32, out *fuse.FileLock) syscall.Errno {
	return l.locks.getlk(ctx, l.ino, owner, lk, out)
}

func (l lockable) Setlk(ctx context.Context, f gofs.FileHandle, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return l.locks.setlk(ctx, l.ino, owner, lk, flags, false)
}

func (l lockable) Setlkw(ctx context.Context, f gofs.FileHandle, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return l.locks.setlk(ctx, l.ino, owner, lk, flags, true)
}

// flushLocks is the lock part of a FLUSH: every node that has lockable
// answers FLUSH and calls it.
func (l lockable) flushLocks(ctx context.Context) {
	l.locks.flush(ctx, l.ino)
}

// lockingFS is go-fuse's raw filesystem with what the lock table needs
// from requests whose fields the node API drops: the Fh of SETLK and
// SETLKW, the lock owner of FLUSH, and RELEASE.
type lockingFS struct {
	fuse.RawFileSystem
	locks *lockSet
}

func (l *lockingFS) SetLk(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	defer l.locks.note(cancel, lockReq{fh: in.Fh})()
	return l.RawFileSystem.SetLk(cancel, in)
}

func (l *lockingFS) SetLkw(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	defer l.locks.note(cancel, lockReq{fh: in.Fh})()
	return l.RawFileSystem.SetLkw(cancel, in)
}

// Flush notes the lock owner, and that a descriptor of the description
// was closed (lockWait), only while locks are held anywhere in the mount:
// every close(2) sends a FLUSH.
func (l *lockingFS) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	if l.locks.fhs.Load() != 0 {
		l.locks.closed(in.Fh, in.Caller.Pid)
	}
	if l.locks.posix.Load() != 0 {
		defer l.locks.note(cancel, lockReq{fh: in.Fh, owner: in.LockOwner})()
	}
	return l.RawFileSystem.Flush(cancel, in)
}

// Open notes the description it opens, with its file's st_ino (which the
// node's Open tells, noteOpen), before the kernel hears of it
// (lockOpens).
func (l *lockingFS) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	forget := l.locks.note(cancel, lockReq{})
	st := l.RawFileSystem.Open(cancel, in, out)
	if st == fuse.OK {
		r, _ := l.locks.notedBy(cancel)
		l.locks.opens.opened(out.Fh, r.ino, in.Flags, in.Caller.Pid)
	}
	forget()
	return st
}

// Create is refused by every directory here (noChanges); a description
// it made would be one of a file not known (lockOpens).
func (l *lockingFS) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	st := l.RawFileSystem.Create(cancel, in, name, out)
	if st == fuse.OK {
		l.locks.opens.opened(out.Fh, 0, in.Flags, in.Caller.Pid)
	}
	return st
}

// Release drops the description's locks, and forgets the open, before
// go-fuse releases the handle: go-fuse hands the Fh out again only after
// that. The open gone, the file's locked descriptions may be told still
// open (relook).
func (l *lockingFS) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	l.locks.release(in.Fh)
	ino := l.locks.opens.released(in.Fh)
	l.RawFileSystem.Release(cancel, in)
	if ino != 0 {
		l.locks.relook(ino)
	}
}
