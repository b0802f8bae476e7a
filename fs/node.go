package fs

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/segfs/segfs/logstore"
)

// Modes of the view. Directories the user may mkdir in are writable.
const (
	modeRoot     = syscall.S_IFDIR | 0o755
	modeTopic    = syscall.S_IFDIR | 0o755
	modePartDir  = syscall.S_IFDIR | 0o555
	modeVirtDir  = syscall.S_IFDIR | 0o555
	modeData     = syscall.S_IFREG | 0o644
	modeConfig   = syscall.S_IFREG | 0o644
	modeReadOnly = syscall.S_IFREG | 0o444
	modeLink     = syscall.S_IFLNK | 0o777
)

// fsys is the state shared by every node of one mount.
type fsys struct {
	store    *logstore.Store
	log      *slog.Logger
	uid, gid uint32
	mounted  time.Time
	notify   *notifier

	// gate is held for reading by every append and for writing by
	// stopWrites, which flips closing: once it returns, no append is in
	// flight and none starts.
	gate    sync.RWMutex
	closing bool

	mu      sync.Mutex
	writers map[*dataHandle]struct{} // open writable data handles
	readers map[*readHandle]struct{} // open read handles of data and offset/N

	closers closers // handles whose close left an unfinished line
	// dev is the mount's device (major:minor, from mountinfo; set
	// before any request is served, "" if unknown): a writer's
	// descriptors are looked up by it (holds).
	dev string

	// estale: callers whose walk to a text file answered ESTALE, by
	// retryKey, with the time (UnixNano; negated once a GETATTR used it,
	// leaving it to the OPEN); their next GETATTR and OPEN of it are the
	// VFS's retry (answeredStale, usable).
	estale     sync.Map
	staleNotes atomic.Uint64 // answeredStale calls, to sweep estale now and then

	lookupViews lookupViews // views offset/N lookups opened, for the open that follows

	dataWarned atomic.Int64 // when warnDataFailed last logged (UnixNano)
	// statusWarned is dataWarned for warnStatusFailed.
	statusWarned atomic.Int64

	incarnations atomic.Uint64 // data nodes handed out for writers (textNode.inc)
	wantWriter   sync.Map      // data st_ino → when a writer answered ESTALE (UnixNano)
	incs         sync.Map      // data st_ino → incarnation of new data nodes (textNode.retire)
	retries      sync.Map      // retryKey → when the caller's walk to data answered ESTALE (mayWrite)
	retryNotes   atomic.Uint64 // mayWrite calls, to sweep retries now and then

	changed sync.Map // status st_ino → *changeTime, which outlives its nodes

	locks *lockSet // flock and POSIX locks, per st_ino (locks.go)
}

// changeTimeFor returns the change time of the status file with st_ino
// ino, whose text was last changed at since() when the mount first shows
// it. It lives here, not in the node: every LOOKUP (each second, as
// entries time out) builds a new node and answers with its attributes.
func (f *fsys) changeTimeFor(ino uint64, since func() time.Time) *changeTime {
	if c, ok := f.changed.Load(ino); ok {
		return c.(*changeTime)
	}
	c, _ := f.changed.LoadOrStore(ino, &changeTime{since: since})
	return c.(*changeTime)
}

// warnDataFailed logs why a lookup or open of an existing partition's data
// failed, at most once a second: data always exists, so this is a fenced
// partition, a damaged segment, or a bug, and a `tail -F` retrying every
// second must not flood the log.
func (f *fsys) warnDataFailed(op string, p *logstore.Partition, errno syscall.Errno, err error) {
	f.warnFailed(&f.dataWarned, op, "data", p, errno, err)
}

// warnStatusFailed is warnDataFailed for status, whose stat and open fail
// when the first or last batch of the log cannot be read: its EIO was
// logged nowhere. Limited on its own, so that failing opens of data do
// not hide it.
func (f *fsys) warnStatusFailed(op string, p *logstore.Partition, errno syscall.Errno, err error) {
	f.warnFailed(&f.statusWarned, op, "status", p, errno, err)
}

// warnFailed logs the failure of op on the partition's file name, at most
// once a second by warned.
func (f *fsys) warnFailed(warned *atomic.Int64, op, name string, p *logstore.Partition, errno syscall.Errno, err error) {
	now := time.Now().UnixNano()
	last := warned.Load()
	if now-last < int64(time.Second) || !warned.CompareAndSwap(last, now) {
		return
	}
	f.log.Warn(op+" of "+name+" failed", "topic", p.Topic().Name(), "partition", p.Num(),
		"errno", errno.Error(), "err", err)
}

func newFsys(store *logstore.Store, log *slog.Logger) *fsys {
	f := &fsys{
		store:   store,
		log:     log,
		uid:     uint32(os.Geteuid()),
		gid:     uint32(os.Getegid()),
		mounted: time.Now(),
		notify:  newNotifier(log),
		writers: make(map[*dataHandle]struct{}),
		readers: make(map[*readHandle]struct{}),
		closers: closers{log: log},
		locks:   newLockSet(),
	}
	f.locks.log = log
	return f
}

// setAttr fills the attributes every node shares.
func (f *fsys) setAttr(a *fuse.Attr, mode uint32, size int64, mtime time.Time) {
	a.Mode = mode
	a.Size = uint64(size)
	a.Uid, a.Gid = f.uid, f.gid
	a.Nlink = 1
	if mode&syscall.S_IFMT == syscall.S_IFDIR {
		a.Nlink = 2
	}
	if mtime.IsZero() {
		mtime = f.mounted
	}
	// Reads are not tracked, so atime is the mtime, as on a noatime
	// mount after the last write. Left at zero it read as 1970 in
	// `stat` and `ls -lu`, and `find -atime`/`-amin` never matched.
	a.SetTimes(&mtime, &mtime, &mtime)
	a.Blksize = 4096
	// Blocks follow the size, also for data, status and config, which
	// take no disk space of their own (so `du` of a topic counts data on
	// top of segments/). A file with a size and no blocks (as sysfs
	// files are) is all hole to GNU tar --sparse, which archives it as
	// zeros (TestMountBackupToolsCopyText).
	a.Blocks = (uint64(size) + 511) / 512
}

// setDirAttr fills a directory's attributes. Its link count is 2 plus its
// subdirectories, as on ext4 (each has a ".." to it): `find` without
// -noleaf and `ls -l` read it; it was always 2.
func (f *fsys) setDirAttr(a *fuse.Attr, mode uint32, subdirs int, mtime time.Time) {
	f.setAttr(a, mode, 0, mtime)
	a.Nlink = uint32(2 + subdirs)
}

// changeTime is the mtime (and ctime) of a file whose text is rendered on
// demand (status): when its text was first seen to differ, so that it
// stays put while the text does. tar compares a file's ctime before and
// after reading it ("file changed as we read it", exit status 1), and
// rsync skips a file whose size and mtime match. The first time the mount
// shows the text it takes since(), when what the text shows last changed
// on disk (status: the last append, as data's mtime, one fstat per
// mount), not the moment of that first look: after a remount, every
// status file looked changed to `find -newer` and `ls -lt`.
type changeTime struct {
	mu    sync.Mutex
	last  []byte
	at    time.Time
	since func() time.Time
}

func (c *changeTime) of(text []byte) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at.IsZero() {
		c.last = append(c.last[:0], text...)
		if c.since != nil {
			c.at = c.since()
		}
		if c.at.IsZero() {
			c.at = time.Now()
		}
	} else if !bytes.Equal(text, c.last) {
		c.last, c.at = append(c.last[:0], text...), time.Now()
	}
	return c.at
}

// stopWrites makes every later append fail with EROFS, waits for the
// appends in flight, and commits the unfinished lines of open handles.
func (f *fsys) stopWrites() {
	f.gate.Lock()
	defer f.gate.Unlock()
	if f.closing {
		return
	}
	f.closing = true
	f.mu.Lock()
	hs := make([]*dataHandle, 0, len(f.writers))
	for h := range f.writers {
		hs = append(hs, h)
	}
	f.mu.Unlock()
	for _, h := range hs {
		h.commitPartial()
	}
}

// setattrCommon answers the SETATTR parts every node treats alike:
// ownership and mode changes are EPERM, and so are explicit times (touch
// -d, touch -r, utime with times), since no entry of the mount can keep
// them: every mtime is the log's own (the last append, the segment file's,
// the directory's in the data directory). That is what Linux answers for
// an append-only (chattr +a) file, which data is, and the rest follow it
// so that a timestamp change either happens or fails: they used to succeed
// and change nothing. Times set to now (`touch FILE`, utime with no
// times) stay accepted and ignored, as Linux accepts them on an
// append-only file: `touch` is how scripts make sure a file is there.
// It reports whether a size change was asked for.
func setattrCommon(in *fuse.SetAttrIn) (sizeChange bool, errno syscall.Errno) {
	if in.Valid&(fuse.FATTR_MODE|fuse.FATTR_UID|fuse.FATTR_GID) != 0 || explicitTimes(in) {
		return false, syscall.EPERM
	}
	return in.Valid&fuse.FATTR_SIZE != 0, 0
}

// explicitTimes reports whether a SETATTR sets atime or mtime to a given
// time rather than to now: the kernel marks "now" (utimensat with no times
// or UTIME_NOW, and truncate(2)'s own mtime update) with FATTR_ATIME_NOW
// and FATTR_MTIME_NOW.
func explicitTimes(in *fuse.SetAttrIn) bool {
	return in.Valid&(fuse.FATTR_ATIME|fuse.FATTR_ATIME_NOW) == fuse.FATTR_ATIME ||
		in.Valid&(fuse.FATTR_MTIME|fuse.FATTR_MTIME_NOW) == fuse.FATTR_MTIME
}

// readOnlySetattr answers the SETATTR of a read-only entry (status,
// segments/NAME, offset/N, time/T): times set to now are accepted and
// ignored, explicit times, mode and owner changes are EPERM as everywhere
// in the mount (setattrCommon), and a size, of
// any value, is EROFS, the answer its writable open already gives
// (readOnlyOpen): truncate(2) by path said EPERM while `truncate -s`,
// which opens the file for writing first, said EROFS.
func readOnlySetattr(in *fuse.SetAttrIn) syscall.Errno {
	size, errno := setattrCommon(in)
	if errno != 0 {
		return errno
	}
	if size {
		return syscall.EROFS
	}
	return 0
}

// rootIno is the root's st_ino (gofs.Options.RootStableAttr).
const rootIno = 1

// listDir lists a directory's entries after "." and "..", as every Unix
// directory lists them: `ls -a`, readdir(3) loops that count or skip them,
// and scripts expect them, and go-fuse adds neither. self and parent are
// st_ino numbers; the root is its own parent, as on ext4. go-fuse's
// READDIRPLUS looks neither up, and find, du and tar skip both, so nothing
// walks them.
func listDir(self, parent uint64, es []fuse.DirEntry) gofs.DirStream {
	all := make([]fuse.DirEntry, 0, len(es)+2)
	all = append(all,
		fuse.DirEntry{Name: ".", Mode: syscall.S_IFDIR, Ino: self},
		fuse.DirEntry{Name: "..", Mode: syscall.S_IFDIR, Ino: parent})
	return gofs.NewListDirStream(append(all, es...))
}

// noChanges refuses every namespace change below a directory. go-fuse
// answers success for Unlink and Rmdir when a node lacks them, which would
// drop the entry from its tree; these answer EPERM instead.
type noChanges struct{}

func (noChanges) Unlink(ctx context.Context, name string) syscall.Errno { return syscall.EPERM }
func (noChanges) Rmdir(ctx context.Context, name string) syscall.Errno  { return syscall.EPERM }
func (noChanges) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	return syscall.EPERM
}
func (noChanges) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EPERM
}
func (noChanges) Mknod(ctx context.Context, name string, mode uint32, dev uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}
func (noChanges) Link(ctx context.Context, target gofs.InodeEmbedder, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}
func (noChanges) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

// Fsync of a directory (FSYNCDIR; `sync DIR`, the fsync of a parent after
// a mkdir) has nothing to do: the only entries ever added, topics and
// partitions, are on disk and their data directory synced when the mkdir
// returns (logstore.CreateTopic, AddPartition). Without it go-fuse answered
// ENOTSUP, and `sync /mnt/orders` failed with "Operation not supported".
func (noChanges) Fsync(ctx context.Context, f gofs.FileHandle, flags uint32) syscall.Errno {
	return 0
}

// dirSetattr is Setattr for directories: times set to now only (accepted
// and ignored, setattrCommon); mtime is what the directory's Getattr
// reports.
func dirSetattr(f *fsys, mode uint32, subdirs int, mtime time.Time, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, errno := setattrCommon(in); errno != 0 || size {
		if size {
			return syscall.EISDIR
		}
		return errno
	}
	f.setDirAttr(&out.Attr, mode, subdirs, mtime)
	return 0
}

// readOnlyOpen refuses writable opens of a read-only file. Root passes
// default_permissions' mode check, so the node refuses itself.
func readOnlyOpen(flags uint32) syscall.Errno {
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0 {
		return syscall.EROFS
	}
	return 0
}

// snapshotHandle serves a small text rendered at open (status, config):
// opened with FOPEN_DIRECT_IO, so reads are not limited by a cached size.
type snapshotHandle struct {
	data []byte
}

// snapshotSize is the size the GETATTR of status or config reports: that
// of the text an open file reads (its snapshot) when it comes with one,
// which is fstat, else that of the current text. An fstat that reported the
// current text's length disagreed with the reads of the same descriptor
// once the text had changed since the open.
func snapshotSize(f gofs.FileHandle, text []byte) int64 {
	if h, ok := f.(*snapshotHandle); ok {
		return int64(len(h.data))
	}
	return int64(len(text))
}

func (h *snapshotHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off >= int64(len(h.data)) {
		return fuse.ReadResultData(nil), 0
	}
	return fuse.ReadResultData(h.data[off:min(int64(len(h.data)), off+int64(len(dest)))]), 0
}

// Lseek answers SEEK_DATA and SEEK_HOLE for the snapshot (seekText).
func (h *snapshotHandle) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	return seekText(off, whence, int64(len(h.data)))
}

// seekText answers lseek's SEEK_DATA and SEEK_HOLE (the kernel answers the
// other whences itself) for an open text of size bytes, which has no
// holes: SEEK_DATA is the offset itself, SEEK_HOLE the end, and both are
// ENXIO at or past the end, as Linux's generic_file_llseek answers. Handles
// answer from their own text; go-fuse's fallback asked for the node's
// attributes without the handle, which a data node of a gone generation
// answers ESTALE (and whose size is then another generation's), and it
// put SEEK_HOLE at the end where Linux says ENXIO.
func seekText(off uint64, whence uint32, size int64) (uint64, syscall.Errno) {
	switch whence {
	case unix.SEEK_DATA, unix.SEEK_HOLE:
	default:
		return 0, syscall.EINVAL
	}
	if off >= uint64(size) {
		return 0, syscall.ENXIO
	}
	if whence == unix.SEEK_HOLE {
		return uint64(size), 0
	}
	return off, 0
}
