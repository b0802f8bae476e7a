package fs

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// fileOnDisk opens path (created) with flags and returns it with its
// st_ino and the device of its mount, as fdinfo and mountinfo give them.
func fileOnDisk(t *testing.T, path string, flags int) (*os.File, uint64, string) {
	t.Helper()
	f, err := os.OpenFile(path, flags|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	fi, ok := fdinfoOf(t, f)
	if !ok {
		t.Skip("this kernel's fdinfo has no ino: line")
	}
	mounts, err := readMountInfo()
	if err != nil {
		t.Fatal(err)
	}
	for _, mi := range mounts {
		if mi.id == fi.mntID {
			return f, fi.ino, mi.dev
		}
	}
	t.Fatalf("mount %s of %s not in mountinfo", fi.mntID, path)
	return nil, 0, ""
}

// TestLockOpensHeld: a description is proved open by a descriptor of its
// file with its access mode in a process looked at, and only while no
// other description of the file with that mode is open (or of a file not
// known); a descriptor of another mode, an O_PATH one, or another device
// proves nothing.
func TestLockOpensHeld(t *testing.T) {
	pid := uint32(os.Getpid())
	path := filepath.Join(t.TempDir(), "f")
	w, ino, dev := fileOnDisk(t, path, os.O_WRONLY|os.O_APPEND)
	o := newLockOpens()
	o.opened(1, ino, syscall.O_WRONLY|syscall.O_APPEND, pid)
	if !o.held(1, nil, dev) {
		t.Fatal("held = false with the only O_WRONLY description's descriptor open in its opener")
	}
	o.opened(2, ino, syscall.O_WRONLY, 1<<30)
	if o.held(1, nil, dev) {
		t.Error("held = true while another O_WRONLY description of the file is open: the descriptor may be its")
	}
	o.released(2)
	o.opened(3, ino, syscall.O_RDONLY, 0)
	o.opened(4, ino+1, syscall.O_WRONLY, 0)
	if !o.held(1, nil, dev) {
		t.Error("held = false beside a read-only description, and one of another file")
	}
	if o.held(1, nil, "0:0") {
		t.Error("held = true on another device")
	}
	o.opened(5, 0, syscall.O_WRONLY, 0)
	if o.held(1, nil, dev) {
		t.Error("held = true while a description of a file not known is open")
	}
	o.released(5)
	// A description is looked for in the processes named as well.
	o.opened(6, ino, syscall.O_RDWR, 1<<30)
	if o.held(6, nil, dev) {
		t.Error("held = true with no descriptor in a process that does not exist")
	}
	rw, _, _ := fileOnDisk(t, path, os.O_RDWR)
	if !o.held(6, []uint32{pid}, dev) {
		t.Error("held = false with the O_RDWR description's descriptor open in a process named")
	}
	rw.Close()
	o.released(6)

	// The description's last descriptor closes; a read-only and an
	// O_PATH descriptor of the file stay.
	r, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w.Close()
	if o.held(1, []uint32{pid}, dev) {
		t.Error("held = true with only a read-only descriptor of the file left")
	}
	pfd, err := unix.Open(path, unix.O_PATH, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pfd)
	r.Close()
	o.released(3)
	o.opened(7, ino, syscall.O_RDONLY, pid)
	if o.held(7, nil, dev) {
		t.Error("held = true for a read-only description with only an O_PATH descriptor of the file open")
	}
	for _, fh := range []uint64{1, 4, 7} {
		o.released(fh)
	}
	if len(o.byFh) != 0 || len(o.byIno) != 0 || o.unknown != 0 {
		t.Fatalf("all released, but %d descriptions, %d files, %d unknown kept", len(o.byFh), len(o.byIno), o.unknown)
	}
}

// syncBuffer is a bytes.Buffer for a logger written from other goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) waits() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.b.String(), "no RELEASE after a close of a locked file")
}

// TestLockFlushedHolderStillOpen: a flock whose description had a
// descriptor closed (FLUSH) is not waited for while the description is
// seen still open, by the FLUSH, by the RELEASE of another open of the
// file or by the request in its way, and a request waits for its RELEASE
// otherwise; in particular when another
// open of the file with the same access mode stands where the closed
// descriptor was, the request sees the RELEASE of the last close and gets
// the lock.
func TestLockFlushedHolderStillOpen(t *testing.T) {
	pid := uint32(os.Getpid())
	path := filepath.Join(t.TempDir(), "f")
	w, ino, dev := fileOnDisk(t, path, os.O_WRONLY|os.O_APPEND)
	s := newLockSet()
	var logged syncBuffer
	s.log = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s.dev = dev
	ex := func() *fuse.FileLock { return &fuse.FileLock{Typ: unix.F_WRLCK, End: offsetMax} }
	flushed := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.flushed[1]
	}

	// Description 1 (this process's w) holds the flock; a child that
	// had a copy of it exits (FLUSH): 1 is seen still open here.
	s.opens.opened(1, ino, syscall.O_WRONLY|syscall.O_APPEND, pid)
	a := newLockCall(s, 1)
	defer a.forget()
	if errno := s.setlk(a.ctx, ino, 0, ex(), fuse.FUSE_LK_FLOCK, false); errno != 0 {
		t.Fatal(errno)
	}
	s.closed(1, 0)
	if flushed() {
		t.Error("the FLUSH of a dup marked the description, with its descriptor open in its opener")
	}
	// Description 2, a read-only open, asks.
	s.opens.opened(2, ino, syscall.O_RDONLY, 0)
	b := newLockCall(s, 2)
	defer b.forget()
	flockN := func() syscall.Errno { return s.setlk(b.ctx, ino, 0, ex(), fuse.FUSE_LK_FLOCK, false) }
	if errno := flockN(); errno != syscall.EAGAIN {
		t.Fatalf("flock -n beside a held lock: %v, want EAGAIN", errno)
	}
	// A FLUSH while another O_WRONLY open of the file (of another
	// process) stood beside 1 proves nothing; the RELEASE of that open
	// looks again (lockingFS.Release).
	s.opens.opened(8, ino, syscall.O_WRONLY, 1<<30)
	s.closed(1, 0)
	if !flushed() {
		t.Fatal("the FLUSH was taken for a dup's beside another O_WRONLY open of the file")
	}
	s.relook(s.opens.released(8))
	if flushed() {
		t.Error("still marked after the RELEASE of the other O_WRONLY open, with 1's descriptor open here")
	}
	// A request in 1's way looks itself.
	s.opens.opened(8, ino, syscall.O_WRONLY, 1<<30)
	s.closed(1, 0)
	s.opens.released(8)
	if !flushed() {
		t.Fatal("the FLUSH was taken for a dup's beside another O_WRONLY open of the file")
	}
	if errno := flockN(); errno != syscall.EAGAIN {
		t.Fatalf("flock -n beside a held lock: %v, want EAGAIN", errno)
	}
	if n := logged.waits(); n != 0 {
		t.Fatalf("%d waits for a RELEASE with the holder's description open here", n)
	}

	// The last descriptor of 1 closes, while another O_WRONLY open of
	// the file (3) stands in this process; 1's RELEASE is late. Neither
	// the FLUSH nor the request may take 3's descriptor for 1's: the
	// request waits, and gets the lock when the RELEASE comes.
	s.opens.opened(3, ino, syscall.O_WRONLY|syscall.O_APPEND, pid)
	_, _, _ = fileOnDisk(t, path, os.O_WRONLY|os.O_APPEND)
	w.Close()
	s.closed(1, pid)
	s.opens.opened(9, ino, syscall.O_RDONLY, pid)
	s.relook(s.opens.released(9))
	if !flushed() {
		t.Fatal("the last close was taken for a dup's: another open of the file stood beside it")
	}
	done := make(chan syscall.Errno, 1)
	go func() { done <- flockN() }()
	for {
		s.mu.Lock()
		waiting := s.files[ino].waiters > 0
		s.mu.Unlock()
		if waiting {
			break
		}
		select {
		case errno := <-done:
			t.Fatalf("flock -n after the holder's last close, RELEASE not yet served: %v without waiting for it", errno)
		case <-time.After(time.Millisecond):
		}
	}
	s.release(1)
	s.opens.released(1)
	if errno := <-done; errno != 0 {
		t.Fatalf("flock -n after the RELEASE of the holder: %v", errno)
	}
}
