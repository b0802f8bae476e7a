package fs

import (
	"context"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// The kernel sends STATFS for the inode of whatever path statfs(2) was
// given, and go-fuse answers all zeros for a node without Statfs: `df
// MOUNT/orders/0/data` showed a 0-byte filesystem with nothing available,
// and pathconf(_PC_NAME_MAX) (`getconf NAME_MAX`) was 0, everywhere but at
// the root. So every node answers as the root does.
var (
	_ gofs.NodeStatfser = (*rootNode)(nil)
	_ gofs.NodeStatfser = (*topicNode)(nil)
	_ gofs.NodeStatfser = (*configNode)(nil)
	_ gofs.NodeStatfser = (*partNode)(nil)
	_ gofs.NodeStatfser = (*textNode)(nil)
	_ gofs.NodeStatfser = (*virtDir)(nil)
	_ gofs.NodeStatfser = (*offsetDir)(nil)
	_ gofs.NodeStatfser = (*timeDir)(nil)
	_ gofs.NodeStatfser = (*segDir)(nil)
	_ gofs.NodeStatfser = (*timeLink)(nil)
	_ gofs.NodeStatfser = (*statusNode)(nil)
	_ gofs.NodeStatfser = (*segFile)(nil)
)

// statfs reports the data directory's filesystem, so df shows the space
// appends can still use.
func (f *fsys) statfs(out *fuse.StatfsOut) syscall.Errno {
	var st syscall.Statfs_t
	if err := syscall.Statfs(f.store.Dir(), &st); err != nil {
		return toErrno(err)
	}
	out.FromStatfsT(&st)
	return 0
}

func (n *topicNode) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	return n.fs.statfs(out)
}

func (n *configNode) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	return n.fs.statfs(out)
}

func (n *partNode) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	return n.fs.statfs(out)
}

func (n *textNode) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	return n.fs.statfs(out)
}

func (n *virtDir) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	return n.fs.statfs(out)
}

func (l *timeLink) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	return l.fs.statfs(out)
}

func (n *statusNode) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	return n.fs.statfs(out)
}

func (n *segFile) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	return n.fs.statfs(out)
}
