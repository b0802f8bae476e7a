package fs

import (
	"context"
	"slices"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// lockOpens knows every open file description of the mount's files (all
// of which take locks: lockable): by go-fuse's Fh, its st_ino, access mode
// and opening thread, and per st_ino how many are open with each access
// mode. It lets the lock table tell that a locked description one of
// whose descriptors was closed is still open (held), so that a SETLK in
// its way fails at once instead of waiting closeOrderWait for a RELEASE
// that is not coming (lockWait). The lock table looks at the FLUSH
// (closed), at the RELEASE of another open of the file (relook) and at a
// request in the way (stillOpen).
//
// The proof: a process has, now, a descriptor of the file with the
// description's access mode (/proc/PID/fdinfo: mount, inode, flags;
// holdsOpen), and no other description of the file with that mode is
// open. Every description of a file of this mount comes from an OPEN this
// daemon answered (an O_PATH descriptor, which does not, is not counted),
// and stays counted until its RELEASE, which comes after its last
// descriptor closed; so such a descriptor can only be the locked
// description's own. An OPEN answered while the look ran may have put
// another description in a table looked at: gen counts them, and the
// look then proves nothing. fdinfo tells nothing else that sets one
// description of a file apart from another (two opens of a file that
// nobody read or wrote both stand at position 0), so while another
// description of the file has the same access mode (a `flock -n data` of
// its own, O_RDONLY, beside a holder's read-only open) there is no proof,
// and the request waits as before. The proof only ever spares a wait: a
// lock released by a last close is still seen by a request made after
// that close returned.
type lockOpens struct {
	mu      sync.Mutex
	byFh    map[uint64]lockOpen
	byIno   map[uint64]*inoOpens
	unknown int // open descriptions of a file not known: no proof while > 0
}

// lockOpen is one open file description.
type lockOpen struct {
	ino    uint64 // 0: not known (a node whose Open did not say, noteOpen)
	mode   uint32 // O_ACCMODE of its open flags, which F_SETFL cannot change
	opener uint32 // the thread that opened it
}

// inoOpens counts the open descriptions of one st_ino.
type inoOpens struct {
	n   [4]int // by access mode (3 is a valid one, though no read or write)
	gen uint64 // OPENs answered
}

func newLockOpens() *lockOpens {
	return &lockOpens{byFh: make(map[uint64]lockOpen), byIno: make(map[uint64]*inoOpens)}
}

// opened notes the description fh that an OPEN of st_ino ino (0 if not
// known) with flags, by thread opener, is about to answer: before the
// kernel can put it in any descriptor table.
func (o *lockOpens) opened(fh, ino uint64, flags, opener uint32) {
	d := lockOpen{ino: ino, mode: flags & syscall.O_ACCMODE, opener: opener}
	o.mu.Lock()
	defer o.mu.Unlock()
	if old, ok := o.byFh[fh]; ok {
		o.forget(old) // not seen: go-fuse reuses an Fh only after its RELEASE
	}
	o.byFh[fh] = d
	if ino == 0 {
		o.unknown++
		return
	}
	c := o.byIno[ino]
	if c == nil {
		c = &inoOpens{}
		o.byIno[ino] = c
	}
	c.n[d.mode]++
	c.gen++
}

// released forgets the description fh, whose last descriptor closed,
// and returns its st_ino (0 if not known).
func (o *lockOpens) released(fh uint64) uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	d, ok := o.byFh[fh]
	if !ok {
		return 0
	}
	delete(o.byFh, fh)
	o.forget(d)
	return d.ino
}

// forget takes d out of the counts. The caller holds mu.
func (o *lockOpens) forget(d lockOpen) {
	if d.ino == 0 {
		o.unknown--
		return
	}
	c := o.byIno[d.ino]
	if c == nil {
		return
	}
	c.n[d.mode]--
	if c.n == [4]int{} {
		delete(o.byIno, d.ino)
	}
}

// held reports whether the description fh is surely still open: one of
// the processes pids, or the thread that opened it, has a descriptor of
// it, on the mount whose device is dev (see lockOpens). false means
// unknown. It reads /proc, so the caller holds no lock a FUSE request
// needs.
func (o *lockOpens) held(fh uint64, pids []uint32, dev string) bool {
	o.mu.Lock()
	d, ok := o.byFh[fh]
	c := o.byIno[d.ino]
	if !ok || d.ino == 0 || o.unknown > 0 || c == nil || c.n[d.mode] != 1 {
		o.mu.Unlock()
		return false
	}
	gen := c.gen
	o.mu.Unlock()
	found := false
	looked := make([]uint32, 0, len(pids)+1)
	for _, pid := range append([]uint32{d.opener}, pids...) {
		if pid == 0 || slices.Contains(looked, pid) {
			continue
		}
		looked = append(looked, pid)
		if holdsOpen(pid, d.ino, d.mode, dev) {
			found = true
			break
		}
	}
	if !found {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	// No OPEN of the file was answered during the look (the count
	// stays the same object while the description is open).
	return o.byIno[d.ino] == c && c.gen == gen
}

// noteOpen tells lockingFS.Open, which knows the Fh go-fuse gives the
// description but not the file, the st_ino of the node being opened.
// Every node's Open calls it first.
func (l lockable) noteOpen(ctx context.Context) {
	c, ok := ctx.(*fuse.Context)
	if !ok {
		return
	}
	s := l.locks
	s.reqMu.Lock()
	if r, ok := s.reqs[c.Cancel]; ok {
		r.ino = l.ino
		s.reqs[c.Cancel] = r
	}
	s.reqMu.Unlock()
}
