package fs

import (
	"os"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// detachSettle is how long a mount that left the mount table must keep
// answering before it counts as detached lazily. A plain umount also
// takes the mount out of the table first and aborts the connection a
// moment later, before umount(2) returns; the connection of a lazy one
// lives on while files are open.
const detachSettle = 500 * time.Millisecond

// Detached is closed when the mount was detached lazily (`umount -l`)
// while files on it were still open: the kernel keeps the connection, so
// the daemon keeps serving them, and Done comes only once they are all
// closed, which for a `tail -f` can be days. Nothing else can reach the
// filesystem meanwhile (fuser -m and lsof +f no longer find it), and the
// daemon keeps its data directory (Store.MarkDetached tells a second
// segfs so).
func (s *Server) Detached() <-chan struct{} { return s.detached }

// watchDetach closes s.detached when the mount with device dev (mountinfo
// "major:minor") leaves this process's mount table while the connection
// still answers and nobody called Unmount. It waits for mount table
// changes with poll(2) on /proc/self/mountinfo (POLLPRI), waking every
// second to notice Done and to look at the table again.
func (s *Server) watchDetach(dev string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		s.fs.log.Debug("not watching for a lazy unmount", "err", err)
		return
	}
	defer f.Close()
	for {
		select {
		case <-s.done:
			return
		default:
		}
		// The table is checked after every wake-up, the 1 s timeout
		// included: a change once seen is not reported again, so a
		// check that came too early (the settle below found the
		// connection not answering for a moment) would otherwise have
		// been the last. A new mount then waited 30 s for a daemon that
		// never said it was detached (seen once under load).
		fds := []unix.PollFd{{Fd: int32(f.Fd()), Events: unix.POLLPRI}}
		unix.Poll(fds, 1000)
		if s.stopping.Load() || s.mounted(dev) {
			continue
		}
		// Out of the table. A connection a plain umount ended no longer
		// takes a notification (ENODEV); give it detachSettle to end.
		select {
		case <-s.done:
			return
		case <-time.After(detachSettle):
		}
		if s.stopping.Load() || s.mounted(dev) || !s.alive() {
			continue
		}
		s.fs.log.Warn("mount detached lazily (umount -l) with files still open; serving them until they are closed, keeping the data directory until then",
			"mountpoint", s.mountpoint, "data", s.fs.store.Dir())
		close(s.detached)
		return
	}
}

// mounted reports whether the mount with device dev is in this process's
// mount table (true if the table cannot be read: not detached, as far as
// anyone can tell).
func (s *Server) mounted(dev string) bool {
	mounts, err := readMountInfo()
	if err != nil {
		return true
	}
	for _, mi := range mounts {
		if mi.dev == dev && mi.fstype == "fuse.segfs" {
			return true
		}
	}
	return false
}

// alive reports whether the kernel still takes notifications on the
// connection: an attribute-only invalidation of the root (offset -1: no
// page work, safe outside callbacks; FUSE-NOTES §2.3), which an ended
// connection answers with ENODEV.
func (s *Server) alive() bool {
	return s.srv.InodeNotify(fuse.FUSE_ROOT_ID, -1, 0) == fuse.OK
}
