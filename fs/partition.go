package fs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/segfs/segfs/logstore"
)

// partNode is TOPIC/N/.
type partNode struct {
	gofs.Inode
	noChanges
	fs    *fsys
	part  *logstore.Partition
	topic string
	num   string
}

var (
	_ gofs.NodeLookuper  = (*partNode)(nil)
	_ gofs.NodeReaddirer = (*partNode)(nil)
	_ gofs.NodeGetattrer = (*partNode)(nil)
)

var partEntries = []string{"data", "offset", "segments", "status", "time"}

// partSubdirs counts the directories among partEntries.
const partSubdirs = 3

// Getattr reports the mtime (and ctime, atime) of the partition's log
// directory in the data directory, which moves when its segment set
// changes (a roll, retention, a compaction swap); it was the mount time.
// offset/, time/ and segments/ report the same (virtDir.Getattr).
func (n *partNode) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.fs.setDirAttr(&out.Attr, modePartDir, partSubdirs, n.part.DirModTime())
	return 0
}

func (n *partNode) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return dirSetattr(n.fs, modePartDir, partSubdirs, n.part.DirModTime(), in, out)
}

func (n *partNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

func (n *partNode) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	modes := []uint32{syscall.S_IFREG, syscall.S_IFDIR, syscall.S_IFDIR, syscall.S_IFREG, syscall.S_IFDIR}
	es := make([]fuse.DirEntry, len(partEntries))
	for i, name := range partEntries {
		es[i] = fuse.DirEntry{Name: name, Mode: modes[i], Ino: inoFor(n.topic, n.num, name)}
	}
	return listDir(inoFor(n.topic, n.num), inoFor(n.topic), es), 0
}

func (n *partNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	ino := inoFor(n.topic, n.num, name)
	switch name {
	case "data":
		return lookupText(ctx, n.fs, &n.Inode, n.part, name, -1, ino, out)
	case "offset", "time", "segments":
		n.fs.setDirAttr(&out.Attr, modeVirtDir, 0, n.part.DirModTime())
		var node gofs.InodeEmbedder
		switch name {
		case "offset":
			node = &offsetDir{virtDir{fs: n.fs, part: n.part, topic: n.topic, num: n.num}}
		case "time":
			node = &timeDir{virtDir{fs: n.fs, part: n.part, topic: n.topic, num: n.num}}
		default:
			node = &segDir{virtDir{fs: n.fs, part: n.part, topic: n.topic, num: n.num}}
		}
		return n.NewInode(ctx, node, gofs.StableAttr{Mode: syscall.S_IFDIR, Ino: ino}), 0
	case "status":
		s := &statusNode{lockable: lockable{n.fs.locks, ino}, fs: n.fs, part: n.part, changed: n.fs.changeTimeFor(ino, n.part.LastModified)}
		if errno := s.attr(&out.Attr, nil); errno != 0 {
			// As its Getattr answers: a lookup that ignored it answered
			// a zeroed attribute (mode 0, 1970), kept by the kernel.
			return nil, errno
		}
		out.SetAttrTimeout(textAttrTimeout)
		return n.NewInode(ctx, s, gofs.StableAttr{Mode: syscall.S_IFREG, Ino: ino}), 0
	}
	return nil, syscall.ENOENT
}

// virtDir is the common part of offset/, time/ and segments/.
type virtDir struct {
	gofs.Inode
	noChanges
	fs    *fsys
	part  *logstore.Partition
	topic string
	num   string
	kids  childTracker // offset/ and time/: bounds the nodes go-fuse keeps
}

// Getattr reports the partition's log directory mtime: for segments/ that
// is the directory it lists; offset/ and time/, which list nothing and have
// no directory of their own, take their partition's.
func (n *virtDir) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.fs.setDirAttr(&out.Attr, modeVirtDir, 0, n.part.DirModTime())
	return 0
}

func (n *virtDir) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return dirSetattr(n.fs, modeVirtDir, 0, n.part.DirModTime(), in, out)
}

func (n *virtDir) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

// list lists es in the directory named name (offset, time, segments).
func (n *virtDir) list(name string, es []fuse.DirEntry) gofs.DirStream {
	return listDir(inoFor(n.topic, n.num, name), inoFor(n.topic, n.num), es)
}

// offsetDir is N/offset/: offset/N is the log from offset N on.
type offsetDir struct{ virtDir }

// Readdir lists only "." and "..": offset/ has a name for every offset,
// and listing them would make grep -r, find and backups read the log once
// per name.
func (n *offsetDir) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	return n.list("offset", nil), 0
}

func (n *offsetDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if len(name) > maxNameLen {
		return nil, syscall.ENAMETOOLONG
	}
	off, ok := parseOffsetName(name)
	if !ok {
		return nil, syscall.ENOENT
	}
	ch, errno := lookupText(ctx, n.fs, &n.Inode, n.part, name, off, inoFor(n.topic, n.num, "offset", name), out)
	if errno == 0 {
		n.kids.add(&n.Inode, name, ch)
	}
	return ch, errno
}

// timeDir is N/time/: time/T links to ../offset/N, N being the first
// record with timestamp >= T, or the log end offset if there is none yet.
type timeDir struct{ virtDir }

// Readdir lists only "." and "..", as offset/ does.
func (n *timeDir) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	return n.list("time", nil), 0
}

func (n *timeDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if len(name) > maxNameLen {
		return nil, syscall.ENAMETOOLONG
	}
	ts, ok := parseTimeName(name)
	if !ok {
		return nil, syscall.ENOENT
	}
	off, found, err := n.part.OffsetForTime(ts)
	if err != nil {
		return nil, toErrno(err)
	}
	if !found {
		// No record at or after T yet: link to the end, where the
		// first such record will land, and let the kernel look the
		// name up again on the next walk (the target may move).
		off = n.part.LogEndOffset()
		out.SetEntryTimeout(time.Nanosecond)
		out.SetAttrTimeout(time.Nanosecond)
	}
	l := &timeLink{fs: n.fs, target: []byte("../offset/" + strconv.FormatInt(off, 10))}
	n.fs.setAttr(&out.Attr, modeLink, int64(len(l.target)), n.fs.mounted)
	// The target is part of the identity: a node's link text never
	// changes, so the kernel may cache it (EnableSymlinkCaching).
	ch := n.NewInode(ctx, l, gofs.StableAttr{Mode: syscall.S_IFLNK,
		Ino: inoFor(n.topic, n.num, "time", name), Gen: uint64(off) + 1})
	n.kids.add(&n.Inode, name, ch)
	return ch, 0
}

// timeLink is one time/T symlink.
type timeLink struct {
	gofs.Inode
	fs     *fsys
	target []byte
}

var (
	_ gofs.NodeReadlinker = (*timeLink)(nil)
	_ gofs.NodeSetattrer  = (*timeLink)(nil)
)

func (l *timeLink) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	return l.target, 0
}

func (l *timeLink) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	l.fs.setAttr(&out.Attr, modeLink, int64(len(l.target)), l.fs.mounted)
	return 0
}

// Setattr answers as offset/N and the other read-only entries do
// (readOnlySetattr). Without it go-fuse answered ENOTSUP, so `touch -h
// time/T` failed with "Operation not supported" and `chown -h` reported
// success.
func (l *timeLink) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if errno := readOnlySetattr(in); errno != 0 {
		return errno
	}
	l.fs.setAttr(&out.Attr, modeLink, int64(len(l.target)), l.fs.mounted)
	return 0
}

// statusNode is N/status.
type statusNode struct {
	gofs.Inode
	lockable
	fs      *fsys
	part    *logstore.Partition
	changed *changeTime // fsys.changeTimeFor
}

var (
	_ gofs.NodeOpener    = (*statusNode)(nil)
	_ gofs.NodeGetattrer = (*statusNode)(nil)
	_ gofs.NodeFlusher   = (*statusNode)(nil)
	_ gofs.NodeSetlkwer  = (*statusNode)(nil)
)

func renderStatus(s logstore.Status) []byte {
	return fmt.Appendf(nil, "log.start.offset=%d\nlog.end.offset=%d\nsegments=%d\nsize.bytes=%d\n"+
		"first.timestamp=%d\nlast.timestamp=%d\nactive.segment.base.offset=%d\nrecovery.point=%d\n",
		s.LogStartOffset, s.LogEndOffset, s.Segments, s.SizeBytes,
		s.FirstTimestamp, s.LastTimestamp, s.ActiveSegmentBaseOffset, s.RecoveryPoint)
}

// attr fails as Status does (with the store closed under the mount, EIO
// from logstore.ErrClosed, as data's reads answer then), but for an open
// handle, whose snapshot is still read: it is its text.
func (n *statusNode) attr(a *fuse.Attr, f gofs.FileHandle) syscall.Errno {
	var text []byte
	if st, err := n.part.Status(); err == nil {
		text = renderStatus(st)
	} else if h, ok := f.(*snapshotHandle); ok {
		text = h.data
	} else if errors.Is(err, logstore.ErrClosed) {
		errno := toErrno(err)
		n.fs.warnStatusFailed("stat", n.part, errno, err)
		return errno
	} else {
		// The first or last batch cannot be read (damage, an I/O
		// error): stat answers, with size 0, so that ls -l, du, find
		// and rsync of the partition go on, as data's stat does in the
		// same state; the open answers EIO and logs why.
		n.fs.warnStatusFailed("stat", n.part, toErrno(err), err)
	}
	n.fs.setAttr(a, modeReadOnly, snapshotSize(f, text), n.changed.of(text))
	return 0
}

// Getattr: the size is not cached (textAttrTimeout), as config's is not.
// Every append changes the text, often its length (the timestamps of an
// empty partition, one more digit of an offset or a size, from the fetch
// server too), and a cached size shorter than the text made `tar`, which
// reads st_size bytes, archive status cut in the middle of a line for up
// to a second.
func (n *statusNode) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if errno := n.attr(&out.Attr, f); errno != 0 {
		return errno
	}
	out.SetTimeout(textAttrTimeout)
	return 0
}

func (n *statusNode) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if errno := readOnlySetattr(in); errno != 0 {
		return errno
	}
	if errno := n.attr(&out.Attr, f); errno != 0 {
		return errno
	}
	out.SetTimeout(textAttrTimeout)
	return 0
}

func (n *statusNode) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	n.noteOpen(ctx) // the lock table counts the opens of each file
	if errno := readOnlyOpen(flags); errno != 0 {
		return nil, 0, errno
	}
	st, err := n.part.Status()
	if err != nil {
		errno := toErrno(err)
		n.fs.warnStatusFailed("open", n.part, errno, err)
		return nil, 0, errno
	}
	return &snapshotHandle{data: renderStatus(st)}, fuse.FOPEN_DIRECT_IO, 0
}

func (n *statusNode) Fsync(ctx context.Context, f gofs.FileHandle, flags uint32) syscall.Errno {
	return 0
}

// Flush releases the closing process's POSIX locks (locks.go).
func (n *statusNode) Flush(ctx context.Context, f gofs.FileHandle) syscall.Errno {
	n.flushLocks(ctx)
	return 0
}

// segDir is N/segments/: the raw Kafka files, read-only.
type segDir struct{ virtDir }

func (n *segDir) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	files := n.part.SegmentFiles()
	es := make([]fuse.DirEntry, len(files))
	for i, f := range files {
		es[i] = fuse.DirEntry{Name: f.Name, Mode: syscall.S_IFREG, Ino: inoFor(n.topic, n.num, "segments", f.Name)}
	}
	return n.list("segments", es), 0
}

func (n *segDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	size, ok := segFileSize(n.part, name)
	if !ok {
		return nil, syscall.ENOENT
	}
	ino := inoFor(n.topic, n.num, "segments", name)
	f := &segFile{lockable: lockable{n.fs.locks, ino}, fs: n.fs, part: n.part, name: name}
	n.fs.setAttr(&out.Attr, modeReadOnly, size, f.mtime())
	// Compaction replaces a file under the same name in a new
	// generation: a new inode then.
	return n.NewInode(ctx, f, gofs.StableAttr{Mode: syscall.S_IFREG,
		Ino: ino, Gen: n.part.Generation() + 1}), 0
}

func segFileSize(p *logstore.Partition, name string) (int64, bool) {
	return p.SegmentFileSize(name)
}

// segFile is one raw segment file, served from the segment's own file
// descriptor at explicit offsets (zero-copy splice where the kernel can).
type segFile struct {
	gofs.Inode
	lockable
	fs   *fsys
	part *logstore.Partition
	name string
}

var (
	_ gofs.NodeOpener    = (*segFile)(nil)
	_ gofs.NodeGetattrer = (*segFile)(nil)
	_ gofs.NodeFlusher   = (*segFile)(nil)
	_ gofs.NodeSetlkwer  = (*segFile)(nil)
)

func (n *segFile) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	var size int64
	if h, ok := f.(*segHandle); ok {
		size = h.h.Size()
	} else {
		s, ok := segFileSize(n.part, n.name)
		if !ok {
			return syscall.ESTALE
		}
		size = s
	}
	n.fs.setAttr(&out.Attr, modeReadOnly, size, n.mtime())
	return 0
}

// mtime is the file's own mtime in the data directory, so that rsync's
// size-and-mtime check and find -newer see a segment appended to or a
// compacted file rewritten at the same size; it was always the mount time.
// The mount time stands in for a file gone meanwhile (zero time).
func (n *segFile) mtime() time.Time {
	t, err := n.part.SegmentFileModTime(n.name)
	if err != nil {
		return time.Time{}
	}
	return t
}

func (n *segFile) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if errno := readOnlySetattr(in); errno != 0 {
		return errno
	}
	return n.Getattr(ctx, f, out)
}

func (n *segFile) Fsync(ctx context.Context, f gofs.FileHandle, flags uint32) syscall.Errno {
	return 0
}

// Flush releases the closing process's POSIX locks (locks.go).
func (n *segFile) Flush(ctx context.Context, f gofs.FileHandle) syscall.Errno {
	n.flushLocks(ctx)
	return 0
}

func (n *segFile) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	n.noteOpen(ctx) // the lock table counts the opens of each file
	if errno := readOnlyOpen(flags); errno != 0 {
		return nil, 0, errno
	}
	h, err := n.part.OpenSegmentFile(n.name)
	if err != nil {
		if errors.Is(err, logstore.ErrOffsetOutOfRange) {
			return nil, 0, syscall.ESTALE
		}
		return nil, 0, toErrno(err)
	}
	return &segHandle{h: h}, 0, 0
}

type segHandle struct {
	h *logstore.SegmentFileHandle
}

func (h *segHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	size := h.h.Size()
	if off >= size {
		return fuse.ReadResultData(nil), 0
	}
	n := min(int64(len(dest)), size-off)
	return fuse.ReadResultFd(h.h.File().Fd(), off, int(n)), 0
}

func (h *segHandle) Release(ctx context.Context) syscall.Errno {
	h.h.Close()
	return 0
}
