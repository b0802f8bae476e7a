package fs

import (
	"os"
	"runtime"
	"syscall"
	"testing"
)

// TestThreadGroup: closedByOther tells processes apart by the thread group
// of the thread FUSE names, so that a writer closing on another thread
// than it opened on (a Go program, whose goroutines move between threads)
// is still the writer.
func TestThreadGroup(t *testing.T) {
	pid := uint32(os.Getpid())
	if got := threadGroup(pid); got != pid {
		t.Fatalf("threadGroup(own pid %d) = %d", pid, got)
	}
	tid := make(chan uint32)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid <- uint32(syscall.Gettid())
		<-tid
	}()
	other := <-tid
	defer close(tid)
	if got := threadGroup(other); got != pid {
		t.Fatalf("threadGroup(thread %d of process %d) = %d", other, pid, got)
	}
	// pid_max is at most 2^22: no such thread.
	if got := threadGroup(1 << 30); got != 0 {
		t.Fatalf("threadGroup of a thread that does not exist = %d, want 0", got)
	}
}
