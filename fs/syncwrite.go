package fs

import (
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// syncWritesFS is the raw filesystem with synchronous writes honoured: a
// WRITE from a file opened O_SYNC or O_DSYNC (`dd oflag=dsync`), or from
// pwritev2 with RWF_SYNC or RWF_DSYNC, is answered only after the FSYNC
// its file would get from fsync(2). The kernel syncs such a write itself
// only on its page-cache path (generic_write_sync); a direct-I/O file,
// which every writer of data is, leaves it to the server, and tells it in
// WRITE's flags (fuse_write_flags puts O_DSYNC there for both, as O_SYNC
// includes the O_DSYNC bit). go-fuse's node API drops those flags, so the
// wrapper reads them here. Without it, an O_DSYNC append returned before
// its lines were on disk and a power cut lost them.
type syncWritesFS struct {
	fuse.RawFileSystem
}

func (s *syncWritesFS) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	n, st := s.RawFileSystem.Write(cancel, in, data)
	return n, s.synced(cancel, in, n, st)
}

func (s *syncWritesFS) Writev(cancel <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	n, st := s.RawFileSystem.Writev(cancel, in, data)
	return n, s.synced(cancel, in, n, st)
}

// synced syncs the file after a successful synchronous WRITE. A failed
// sync fails the write, as Linux's generic_write_sync does: the writer
// must not take the bytes for durable (an fsync error fences the
// partition, so later writes fail too).
// fsyncOfWrite marks the FSYNC of a synchronous WRITE (a bit the kernel
// never sets in FsyncFlags): the write promises only its own bytes, as
// Linux's O_DSYNC syncs the range written, so textNode.Fsync syncs only
// its handle's unfinished line, not every writer's; another writer's line
// failing its sync (no room for its synced mark) must not fail a write
// whose lines are stored already (a retry would store them twice).
const fsyncOfWrite = 1 << 31

func (s *syncWritesFS) synced(cancel <-chan struct{}, in *fuse.WriteIn, n uint32, st fuse.Status) fuse.Status {
	if !st.Ok() || n == 0 || in.Flags&syscall.O_DSYNC == 0 {
		return st
	}
	fin := &fuse.FsyncIn{InHeader: in.InHeader, Fh: in.Fh, FsyncFlags: fsyncOfWrite}
	if in.Flags&syscall.O_SYNC != syscall.O_SYNC {
		fin.FsyncFlags |= 1 // datasync, as for fdatasync(2)
	}
	if fst := s.RawFileSystem.Fsync(cancel, fin); !fst.Ok() && fst != fuse.ENOTSUP {
		return fst
	}
	return st
}
