// Command discardfs is the FUSE ceiling that scripts/bench.sh measures
// segfs against: a go-fuse filesystem with the same mount options as segfs
// (fs/mount.go) whose files accept appends, count them and throw the bytes
// away. Sizes are truthful (the bytes accepted so far), so tools that stat
// the file behave as on segfs.
//
//	discardfs MOUNTPOINT
//
// It prints "ready" once the mount answers and unmounts on SIGINT/SIGTERM.
// Any name can be created at the top level (`cat x >> MNT/a` works);
// nothing else is supported.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

type root struct {
	gofs.Inode
	mu    sync.Mutex
	files map[string]*file
	next  uint64
}

type file struct {
	gofs.Inode
	size  atomic.Int64
	mtime atomic.Int64
}

type handle struct{ f *file }

var (
	_ gofs.NodeLookuper  = (*root)(nil)
	_ gofs.NodeCreater   = (*root)(nil)
	_ gofs.NodeReaddirer = (*root)(nil)
	_ gofs.NodeOpener    = (*file)(nil)
	_ gofs.NodeGetattrer = (*file)(nil)
	_ gofs.NodeSetattrer = (*file)(nil)
	_ gofs.NodeFsyncer   = (*file)(nil)
	_ gofs.FileWriter    = (*handle)(nil)
	_ gofs.FileReader    = (*handle)(nil)
)

var uid, gid = uint32(os.Geteuid()), uint32(os.Getegid())

func (f *file) attr(a *fuse.Attr) {
	// As segfs's setAttr: same mode, block size and times behaviour.
	a.Mode = syscall.S_IFREG | 0o644
	size := f.size.Load()
	a.Size = uint64(size)
	a.Uid, a.Gid = uid, gid
	a.Nlink = 1
	mt := time.Unix(0, f.mtime.Load())
	a.SetTimes(nil, &mt, &mt)
	a.Blksize = 4096
	a.Blocks = (uint64(size) + 511) / 512
}

func (r *root) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	r.mu.Lock()
	f := r.files[name]
	r.mu.Unlock()
	if f == nil {
		return nil, syscall.ENOENT
	}
	f.attr(&out.Attr)
	return &f.Inode, 0
}

func (r *root) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var es []fuse.DirEntry
	for name := range r.files {
		es = append(es, fuse.DirEntry{Name: name, Mode: syscall.S_IFREG})
	}
	return gofs.NewListDirStream(es), 0
}

func (r *root) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.files[name]
	if f == nil {
		r.next++
		f = &file{}
		f.mtime.Store(time.Now().UnixNano())
		r.NewPersistentInode(ctx, f, gofs.StableAttr{Mode: syscall.S_IFREG, Ino: r.next + 1})
		r.AddChild(name, &f.Inode, true)
		r.files[name] = f
	}
	f.attr(&out.Attr)
	return &f.Inode, &handle{f}, fuse.FOPEN_DIRECT_IO, 0
}

func (f *file) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	f.attr(&out.Attr)
	return 0
}

func (f *file) Setattr(ctx context.Context, fh gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	f.attr(&out.Attr)
	return 0
}

func (f *file) Fsync(ctx context.Context, fh gofs.FileHandle, flags uint32) syscall.Errno { return 0 }

// Open answers write opens with FOPEN_DIRECT_IO, as segfs does for data.
func (f *file) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_ACCMODE == syscall.O_RDONLY {
		return &handle{f}, fuse.FOPEN_KEEP_CACHE, 0
	}
	return &handle{f}, fuse.FOPEN_DIRECT_IO, 0
}

func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	h.f.size.Add(int64(len(data)))
	h.f.mtime.Store(time.Now().UnixNano())
	return uint32(len(data)), 0
}

// Read returns zeros up to the size (nothing is kept).
func (h *handle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n := h.f.size.Load() - off
	if n <= 0 {
		return fuse.ReadResultData(nil), 0
	}
	if n < int64(len(dest)) {
		dest = dest[:n]
	}
	clear(dest)
	return fuse.ReadResultData(dest), 0
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: discardfs MOUNTPOINT")
		os.Exit(2)
	}
	mp, err := filepath.Abs(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	timeout := time.Second
	r := &root{files: map[string]*file{}}
	// The options of segfs's fs.Mount, minus its logger and panic handler.
	opts := &gofs.Options{
		EntryTimeout:    &timeout,
		AttrTimeout:     &timeout,
		NullPermissions: true,
		UID:             uid,
		GID:             gid,
		RootStableAttr:  &gofs.StableAttr{Ino: 1},
		MountOptions: fuse.MountOptions{
			FsName:               "discard",
			Name:                 "discardfs",
			DirectMount:          true,
			MaxWrite:             1 << 20,
			DisableXAttrs:        true,
			Options:              []string{"default_permissions"},
			EnableSymlinkCaching: true,
		},
	}
	srv, err := gofs.Mount(mp, r, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "discardfs:", err)
		os.Exit(1)
	}
	setReadAhead(mp, 1024)
	fmt.Println("ready")
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sigc
		if err := srv.Unmount(); err != nil {
			syscall.Unmount(mp, syscall.MNT_DETACH)
		}
	}()
	srv.Wait()
}

// setReadAhead mirrors segfs: the mount's bdi read_ahead_kb = 1024, the
// bdi named by the device number in mountinfo (never a stat of our own
// mount from the daemon).
func setReadAhead(mp string, kb int) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && f[4] == mp {
			os.WriteFile(filepath.Join("/sys/class/bdi", f[2], "read_ahead_kb"), []byte(strconv.Itoa(kb)), 0)
		}
	}
}
