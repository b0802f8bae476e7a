package fs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
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

// Options configure a mount.
type Options struct {
	Logger *slog.Logger // nil = slog.Default()
	Debug  bool         // log every FUSE request (go-fuse's debug output)

	// AllowOther lets other users use the mount. default_permissions is
	// always on, so the kernel checks modes against real owners.
	AllowOther bool

	// ReadAheadKB, if > 0, is written to the mount's bdi read_ahead_kb
	// (sequential reads served by the daemon roughly double with 1024).
	// 0 means 1024; < 0 leaves the kernel's default.
	ReadAheadKB int

	// attrTimeout overrides cacheTimeout for attributes; tests use a
	// long one to see that growth reaches the kernel by notification.
	attrTimeout time.Duration
}

// Timeouts: 1 s entry and attribute caching, as libfuse does; growth is
// announced by the notifier. Negative entries are not cached: offset/N and
// time/T that are missing now become valid later.
const cacheTimeout = time.Second

// ErrAlreadyMounted reports a live filesystem on the mountpoint.
var ErrAlreadyMounted = errors.New("already mounted")

// Server is a mounted segfs view.
type Server struct {
	fs         *fsys
	root       *rootNode
	srv        *fuse.Server
	mountpoint string
	done       chan struct{} // closed when the FUSE server stopped
	detached   chan struct{} // closed on a lazy unmount with files open (watchDetach)
	stopping   atomic.Bool   // Unmount was called: its own detach is not news
	unmounting sync.Once
}

// Mount mounts store's view on mountpoint and returns once the kernel
// answers requests on it. As root it mounts with mount(2); otherwise
// go-fuse falls back to fusermount3.
func Mount(store *logstore.Store, mountpoint string, opts Options) (*Server, error) {
	lg := opts.Logger
	if lg == nil {
		lg = slog.Default()
	}
	mp, err := filepath.Abs(mountpoint)
	if err != nil {
		return nil, err
	}
	f := newFsys(store, lg)
	root := &rootNode{fs: f}
	timeout, attrTimeout := cacheTimeout, cacheTimeout
	if opts.attrTimeout > 0 {
		attrTimeout = opts.attrTimeout
	}
	fuseLog := log.New(&slogWriter{lg}, "", 0)
	mopts := &gofs.Options{
		EntryTimeout: &timeout,
		AttrTimeout:  &attrTimeout,
		// NegativeTimeout stays nil: ENOENT is not cached.
		NullPermissions: true, // every node sets its own mode
		UID:             f.uid,
		GID:             f.gid,
		Logger:          fuseLog,
		RootStableAttr:  &gofs.StableAttr{Ino: rootIno},
		MountOptions: fuse.MountOptions{
			FsName:      store.Dir(),
			Name:        "segfs",
			DirectMount: true,
			// 1 MiB WRITEs: a write(2) up to that size arrives whole
			// (with FOPEN_DIRECT_IO), and becomes one batch.
			MaxWrite: 1 << 20,
			// ENOSYS for GETXATTR once, and the kernel stops asking
			// for security.capability before every write.
			DisableXAttrs: true,
			AllowOther:    opts.AllowOther,
			Options:       []string{"default_permissions"},
			// Safe: a time/T node's link text never changes.
			EnableSymlinkCaching: true,
			// flock and fcntl locks are kept by the daemon, one table
			// per st_ino: the kernel keeps them per kernel inode, and
			// data is several of those at once (locks.go).
			EnableLocks: true,
			Debug:       opts.Debug,
			Logger:      fuseLog,
			PanicHandler: func(v any) fuse.Status {
				lg.Error("panic in FUSE handler; answered EIO", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				return fuse.EIO
			},
			// Never CAP_WRITEBACK_CACHE (merges, re-sends and
			// reorders appends) nor CAP_ATOMIC_O_TRUNC: go-fuse
			// enables neither by default. Nor
			// CAP_DIRECT_IO_ALLOW_MMAP, although it would let
			// offset/N, status and config (direct I/O) be mapped
			// shared: it also grants a writable shared mapping of
			// data opened O_RDWR|O_APPEND (direct I/O too), whose
			// dirty pages the kernel writes back as WRITEs at page
			// offsets, and data appends every WRITE; go-fuse's node
			// API does not pass the FUSE_WRITE_CACHE flag that
			// would tell them apart (TestMountMmap).
		},
	}
	// gofs.Mount, with lockingFS and syncWritesFS around the node
	// filesystem.
	raw := &syncWritesFS{&lockingFS{RawFileSystem: gofs.NewNodeFS(root, mopts), locks: f.locks}}
	srv, err := fuse.NewServer(raw, mp, &mopts.MountOptions)
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", mp, err)
	}
	// The mount is in mountinfo once NewServer returned; its device is
	// set before Serve answers any request that could read it.
	mi, _ := findMount(mp)
	if mi != nil {
		f.dev = mi.dev
		f.locks.dev = mi.dev
	}
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		return nil, fmt.Errorf("mount %s: %w", mp, err)
	}
	s := &Server{fs: f, root: root, srv: srv, mountpoint: mp, done: make(chan struct{}), detached: make(chan struct{})}
	go func() {
		srv.Wait()
		close(s.done)
	}()
	if mi != nil {
		go s.watchDetach(mi.dev)
	}
	ra := opts.ReadAheadKB
	if ra == 0 {
		ra = 1024
	}
	if ra > 0 {
		if err := setReadAhead(mp, ra); err != nil {
			lg.Debug("read_ahead_kb not set", "err", err)
		}
	}
	lg.Info("mounted", "mountpoint", mp, "data", store.Dir())
	return s, nil
}

// Mountpoint is the absolute mountpoint.
func (s *Server) Mountpoint() string { return s.mountpoint }

// Done is closed when the filesystem is no longer served: after Unmount,
// or after a user ran umount.
func (s *Server) Done() <-chan struct{} { return s.done }

// Wait blocks until the filesystem is no longer served, then stops the
// notifier, appends the unfinished lines of handles the kernel never
// released and closes the read handles it never released. The store may
// be closed after it returns.
func (s *Server) Wait() {
	<-s.done
	s.fs.stopWrites()
	s.fs.notify.stop(2 * time.Second)
	s.fs.lookupViews.closeAll()
	s.fs.releaseReaders()
}

// Unmount unmounts cleanly: it refuses new appends (EROFS), lets the ones
// in flight finish, appends the unfinished lines of open writers and
// unmounts. If files are still open (EBUSY, e.g. a `tail -f`), it detaches
// the mount lazily (MNT_DETACH): open files keep being served until they
// close or grace passes, and Unmount returns then. The caller closes the
// store afterwards; reads on files still open then fail.
func (s *Server) Unmount(grace time.Duration) error {
	var err error
	s.unmounting.Do(func() { err = s.unmount(grace) })
	return err
}

func (s *Server) unmount(grace time.Duration) error {
	s.stopping.Store(true)
	lg := s.fs.log
	s.fs.stopWrites()
	s.fs.notify.stop(2 * time.Second)
	s.fs.lookupViews.closeAll()
	select {
	case <-s.done:
		return nil // a user unmounted already
	default:
	}
	if err := s.srv.Unmount(); err != nil {
		lg.Info("mount busy; detaching lazily", "mountpoint", s.mountpoint, "err", err, "grace", grace)
		if err := syscall.Unmount(s.mountpoint, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			return fmt.Errorf("unmount %s: %w", s.mountpoint, err)
		}
	}
	select {
	case <-s.done:
		lg.Info("unmounted", "mountpoint", s.mountpoint)
	case <-time.After(grace):
		lg.Warn("files still open after the grace period; stopping anyway", "mountpoint", s.mountpoint)
	}
	return nil
}

// DetachStale clears a dead mount on mountpoint, as a daemon killed with
// SIGKILL leaves it ("Transport endpoint is not connected"): it detaches it
// lazily and reports true. A live mount there is ErrAlreadyMounted; a mount
// that does not answer within a few seconds is an error too.
func DetachStale(mountpoint string) (bool, error) {
	mp, err := filepath.Abs(mountpoint)
	if err != nil {
		return false, err
	}
	mi, err := findMount(mp)
	if err != nil || mi == nil {
		return false, err
	}
	errc := make(chan error, 1)
	go func() {
		// statfs always asks the daemon; stat may be answered from
		// attributes the kernel still caches for a dead mount.
		var st syscall.Statfs_t
		errc <- syscall.Statfs(mp, &st)
	}()
	select {
	case err := <-errc:
		switch {
		case err == nil:
			return false, fmt.Errorf("%s: %w (%s from %s)", mp, ErrAlreadyMounted, mi.fstype, mi.source)
		case errors.Is(err, syscall.ENOTCONN) || errors.Is(err, syscall.ECONNABORTED):
			if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil {
				return false, fmt.Errorf("detach dead mount %s: %w", mp, err)
			}
			return true, nil
		default:
			return false, fmt.Errorf("%s: %w", mp, err)
		}
	case <-time.After(5 * time.Second):
		return false, fmt.Errorf("%s: the %s filesystem mounted there does not answer (try umount -l %s)", mp, mi.fstype, mp)
	}
}

// ServesDir reports whether a segfs mount of the data directory dir is in
// this mount namespace: a mountinfo entry of type fuse.segfs whose source
// (the FsName, the data directory) is dir. It reads only mountinfo and
// stats the source directories, never a mount.
func ServesDir(dir string) (bool, error) {
	want, err := os.Stat(dir)
	if err != nil {
		return false, err
	}
	mounts, err := readMountInfo()
	for _, mi := range mounts {
		if mi.fstype != "fuse.segfs" {
			continue
		}
		if st, err := os.Stat(mi.source); err == nil && os.SameFile(st, want) {
			return true, nil
		}
	}
	return false, err
}

// IsMountpoint reports whether something is mounted on mountpoint (an
// absolute path), from /proc/self/mountinfo only: it never touches the
// mount, which a stopped daemon would make hang.
func IsMountpoint(mountpoint string) (bool, error) {
	mi, err := findMount(mountpoint)
	return mi != nil, err
}

type mountInfo struct {
	id, mountpoint, dev, fstype, source string
}

// readMountInfo lists the mounts of /proc/self/mountinfo, in its order
// (a later entry on the same mountpoint is on top of an earlier one).
func readMountInfo() ([]mountInfo, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseMountInfo(f)
}

// findMount returns the topmost mount on mp from /proc/self/mountinfo, or
// nil.
func findMount(mp string) (*mountInfo, error) {
	mounts, err := readMountInfo()
	return topmost(mounts, mp), err
}

// topmost returns the last of mounts on mp, or nil.
func topmost(mounts []mountInfo, mp string) *mountInfo {
	var found *mountInfo
	for i := range mounts {
		if mounts[i].mountpoint == mp {
			found = &mounts[i]
		}
	}
	return found
}

func parseMountInfo(r io.Reader) ([]mountInfo, error) {
	var out []mountInfo
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 {
			continue
		}
		sep := -1
		for i := 6; i < len(fields); i++ {
			if fields[i] == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+2 >= len(fields) {
			continue
		}
		out = append(out, mountInfo{id: fields[0], mountpoint: unescapeMount(fields[4]), dev: fields[2],
			fstype: fields[sep+1], source: unescapeMount(fields[sep+2])})
	}
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// setReadAhead raises the mount's bdi read_ahead_kb. The bdi is named by
// the mount's device number, read from mountinfo rather than by stat, so
// the daemon never accesses its own mount.
func setReadAhead(mp string, kb int) error {
	mi, err := findMount(mp)
	if err != nil {
		return err
	}
	if mi == nil {
		return fmt.Errorf("%s not in mountinfo", mp)
	}
	return os.WriteFile(filepath.Join("/sys/class/bdi", mi.dev, "read_ahead_kb"), []byte(strconv.Itoa(kb)), 0)
}

// slogWriter carries go-fuse's log.Logger output into slog.
type slogWriter struct{ l *slog.Logger }

func (w *slogWriter) Write(p []byte) (int, error) {
	w.l.Debug(strings.TrimRight(string(p), "\n"), "src", "go-fuse")
	return len(p), nil
}
