package fs

import (
	"cmp"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// lockCall is one lock request as go-fuse hands it over: lockingFS noted
// its Fh by its cancel channel.
type lockCall struct {
	ctx    *fuse.Context
	cancel chan struct{}
	forget func()
}

func newLockCall(s *lockSet, fh uint64) lockCall {
	cancel := make(chan struct{})
	return lockCall{ctx: &fuse.Context{Cancel: cancel}, cancel: cancel, forget: s.note(cancel, lockReq{fh: fh})}
}

// interrupt is the kernel's INTERRUPT: go-fuse closes the channel.
func (c lockCall) interrupt() { close(c.cancel) }

func posixRanges(s *lockSet, ino, owner uint64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := ""
	if f := s.files[ino]; f != nil {
		ls := slices.Clone(f.posix)
		slices.SortFunc(ls, func(a, b posixLock) int { return cmp.Compare(a.start, b.start) })
		for _, l := range ls {
			if l.owner == owner {
				t := "R"
				if l.typ == unix.F_WRLCK {
					t = "W"
				}
				out += fmt.Sprintf("%s[%d,%d]", t, l.start, l.end)
			}
		}
	}
	return out
}

// TestLockRanges (ranges listed by start): a POSIX lock takes its range from the owner's other
// locks, merges with those of its type it touches, and F_UNLCK splits.
func TestLockRanges(t *testing.T) {
	s := newLockSet()
	set := func(typ uint32, start, end uint64) {
		t.Helper()
		c := newLockCall(s, 1)
		defer c.forget()
		if errno := s.setlk(c.ctx, 7, 1, &fuse.FileLock{Start: start, End: end, Typ: typ}, 0, false); errno != 0 {
			t.Fatalf("setlk %d [%d,%d]: %v", typ, start, end, errno)
		}
	}
	steps := []struct {
		typ        uint32
		start, end uint64
		want       string
	}{
		{unix.F_RDLCK, 0, 9, "R[0,9]"},
		{unix.F_RDLCK, 10, 19, "R[0,19]"},                     // adjacent: merged
		{unix.F_WRLCK, 5, 7, "R[0,4]W[5,7]R[8,19]"},           // split by another type
		{unix.F_UNLCK, 15, 16, "R[0,4]W[5,7]R[8,14]R[17,19]"}, // split by unlock
		{unix.F_WRLCK, 8, 14, "R[0,4]W[5,14]R[17,19]"},        // merged with W[5,7]
		{unix.F_RDLCK, 0, offsetMax, fmt.Sprintf("R[0,%d]", uint64(offsetMax))},
		{unix.F_UNLCK, 0, offsetMax, ""},
	}
	for _, st := range steps {
		set(st.typ, st.start, st.end)
		if got := posixRanges(s, 7, 1); got != st.want {
			t.Fatalf("after %d [%d,%d]: %s, want %s", st.typ, st.start, st.end, got, st.want)
		}
	}
	if len(s.files) != 0 || s.posix.Load() != 0 {
		t.Fatalf("no lock left, but %d files and %d locks are kept", len(s.files), s.posix.Load())
	}
}

// TestLockWaitInterrupted: a SETLKW waits until interrupted (EINTR) and
// leaves nothing behind; one whose wait would close a cycle is EDEADLK;
// a waiter gets the lock when the holder's FLUSH drops it.
func TestLockWaitInterrupted(t *testing.T) {
	s := newLockSet()
	w := &fuse.FileLock{Start: 0, End: 0, Typ: unix.F_WRLCK}
	a := newLockCall(s, 1)
	if errno := s.setlk(a.ctx, 7, 100, w, 0, false); errno != 0 {
		t.Fatal(errno)
	}
	b := newLockCall(s, 2)
	if errno := s.setlk(b.ctx, 7, 200, &fuse.FileLock{Start: 1, End: 1, Typ: unix.F_WRLCK}, 0, false); errno != 0 {
		t.Fatal(errno)
	}
	if errno := s.setlk(b.ctx, 7, 200, w, 0, false); errno != syscall.EAGAIN {
		t.Fatalf("SETLK on a held range: %v, want EAGAIN", errno)
	}

	// b waits for a's byte 0 …
	done := make(chan syscall.Errno, 1)
	go func() { done <- s.setlk(b.ctx, 7, 200, w, 0, true) }()
	for {
		s.mu.Lock()
		n := len(s.waits)
		s.mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	// … so a waiting for b's byte 1 would deadlock.
	if errno := s.setlk(a.ctx, 7, 100, &fuse.FileLock{Start: 1, End: 1, Typ: unix.F_WRLCK}, 0, true); errno != syscall.EDEADLK {
		t.Fatalf("SETLKW closing a cycle: %v, want EDEADLK", errno)
	}
	b.interrupt()
	if errno := <-done; errno != syscall.EINTR {
		t.Fatalf("interrupted SETLKW: %v, want EINTR", errno)
	}
	if len(s.waits) != 0 || s.files[7].waiters != 0 {
		t.Fatalf("an interrupted waiter is left: %d waits, %d waiters", len(s.waits), s.files[7].waiters)
	}

	c := newLockCall(s, 3)
	go func() { done <- s.setlk(c.ctx, 7, 300, w, 0, true) }()
	// a's process closes a descriptor of the file.
	fl := make(chan struct{})
	forget := s.note(fl, lockReq{fh: 9, owner: 100})
	s.flush(&fuse.Context{Cancel: fl}, 7)
	forget()
	select {
	case errno := <-done:
		if errno != 0 {
			t.Fatalf("SETLKW after the holder's FLUSH: %v", errno)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SETLKW still waiting after the holder's FLUSH dropped its lock")
	}
	if got := posixRanges(s, 7, 300); got != "W[0,0]" {
		t.Fatalf("waiter's locks: %s", got)
	}
	// flock of the description 3, and its locks, go at its RELEASE.
	f := newLockCall(s, 3)
	if errno := s.setlk(f.ctx, 7, 0, &fuse.FileLock{Typ: unix.F_WRLCK, End: offsetMax}, fuse.FUSE_LK_FLOCK, false); errno != 0 {
		t.Fatal(errno)
	}
	s.release(3)
	if got := posixRanges(s, 7, 300); got != "" || len(s.files[7].flocks) != 0 {
		t.Fatalf("after RELEASE of the description: POSIX %q, %d flocks", got, len(s.files[7].flocks))
	}
}
