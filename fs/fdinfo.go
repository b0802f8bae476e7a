package fs

import (
	"bytes"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxHolderFds caps how many descriptors holds looks at: reading one
// fdinfo file costs about 10 µs, so the cap keeps the look well under the
// closeOrderWait it may spare. A process with more descriptors
// is taken not to hold the file, which only costs that wait.
const maxHolderFds = 1024

// holds reports whether thread tid's descriptor table has a writable
// descriptor of the open file whose WRITEs ended at pos (dataHandle.pos),
// on an inode ino of the mount whose device (major:minor) is dev. It
// reads /proc/TID/fdinfo and /proc/TID/mountinfo only: neither calls into
// FUSE, whereas a stat or readlink of /proc/TID/fd/N could ask this very
// daemon and deadlock a request handler.
//
// fdinfo does not name the open file description, only its position,
// flags, mount and inode: the position tells two opens of one file apart,
// since appends through either move it to the end of what that open wrote
// (two opens the kernel put at the same end would be taken for each other:
// the caller rules that out, dataHandle.heldBy); an open whose position
// moved otherwise since its last WRITE (a read of an O_RDWR open, an
// lseek) is not found, nor is one written with pwrite, which leaves the
// position alone. Any doubt (tid gone, /proc unreadable, a kernel without
// "ino:" in fdinfo, too many descriptors) answers false. The mount ids are
// looked up in tid's own mountinfo, so a writer in another mount
// namespace, or going through a bind mount, is found too.
func holds(tid uint32, ino uint64, pos int64, dev string) bool {
	if pos <= 0 {
		return false
	}
	return holdsMatching(tid, ino, dev, func(fi fdinfo) bool {
		return fi.pos == pos && fi.flags&syscall.O_ACCMODE != syscall.O_RDONLY
	})
}

// holdsOpen reports whether thread tid's descriptor table has a
// descriptor of an open (not O_PATH) of inode ino of the mount whose
// device is dev, with access mode mode (O_RDONLY, O_WRONLY or O_RDWR):
// the lock table's proof that a locked description is still open, when
// it is the only open of the file with that mode (lockOpens.held). Any
// doubt answers false, as for holds.
func holdsOpen(tid uint32, ino uint64, mode uint32, dev string) bool {
	return holdsMatching(tid, ino, dev, func(fi fdinfo) bool {
		// An O_PATH descriptor reaches the file without an OPEN,
		// and shows access mode O_RDONLY.
		return fi.flags&unix.O_PATH == 0 && uint32(fi.flags&syscall.O_ACCMODE) == mode
	})
}

// holdsMatching reports whether thread tid's descriptor table has a
// descriptor of inode ino of the mount whose device is dev for which
// match is true.
func holdsMatching(tid uint32, ino uint64, dev string, match func(fdinfo) bool) bool {
	if tid == 0 || dev == "" {
		return false
	}
	dir := "/proc/" + strconv.FormatUint(uint64(tid), 10)
	d, err := os.Open(dir + "/fdinfo")
	if err != nil {
		return false
	}
	names, err := d.Readdirnames(maxHolderFds + 1)
	d.Close()
	if err != nil || len(names) > maxHolderFds {
		return false
	}
	var mnts []string
	buf := make([]byte, 512)
	for _, name := range names {
		n, ok := readSmall(dir+"/fdinfo/"+name, buf)
		if !ok {
			continue // closed since the listing
		}
		fi, ok := parseFdinfo(buf[:n])
		if ok && fi.ino == ino && match(fi) {
			mnts = append(mnts, fi.mntID)
		}
	}
	if len(mnts) == 0 {
		return false
	}
	// The mount ids are those of tid's mount namespace: its own
	// mountinfo gives their devices.
	f, err := os.Open(dir + "/mountinfo")
	if err != nil {
		return false
	}
	defer f.Close()
	mounts, err := parseMountInfo(f)
	if err != nil {
		return false
	}
	for _, mi := range mounts {
		if mi.dev != dev {
			continue
		}
		for _, id := range mnts {
			if mi.id == id {
				return true
			}
		}
	}
	return false
}

// readSmall reads the start of a small file into buf (an fdinfo file of
// a FUSE file is four short lines), with plain system calls: os.Open
// would also try to register the file with the poller.
func readSmall(path string, buf []byte) (int, bool) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return 0, false
	}
	defer syscall.Close(fd)
	n, err := syscall.Read(fd, buf)
	return n, err == nil && n > 0
}

// fdinfo is what holds needs of a /proc/PID/fdinfo/N file.
type fdinfo struct {
	pos   int64
	flags int    // octal in the file
	mntID string // as in mountinfo's first field
	ino   uint64
}

// parseFdinfo reads "pos:", "flags:", "mnt_id:" and "ino:" of an fdinfo
// file; ok is false unless all four are there.
func parseFdinfo(b []byte) (fi fdinfo, ok bool) {
	var seen int
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		k, v, found := bytes.Cut(line, []byte{':'})
		if !found {
			continue
		}
		v = bytes.TrimSpace(v)
		var err error
		switch string(k) {
		case "pos":
			fi.pos, err = strconv.ParseInt(string(v), 10, 64)
			seen |= 1
		case "flags":
			var f int64
			f, err = strconv.ParseInt(string(v), 8, 64)
			fi.flags = int(f)
			seen |= 2
		case "mnt_id":
			fi.mntID = string(v)
			seen |= 4
		case "ino":
			fi.ino, err = strconv.ParseUint(string(v), 10, 64)
			seen |= 8
		}
		if err != nil {
			return fdinfo{}, false
		}
	}
	return fi, seen == 15
}
