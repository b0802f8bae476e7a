package fs

import (
	"bufio"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// lockIntrScript waits in flock(2), then in fcntl(F_SETLKW), each until a
// SIGUSR1 interrupts it (its handler raises, so Python does not retry the
// call), and prints what each wait and a LOCK_NB/F_SETLK after it gave;
// each step starts at a line on stdin.
const lockIntrScript = `
import fcntl, os, signal, sys
class Sig(Exception): pass
def handler(s, f): raise Sig()
signal.signal(signal.SIGUSR1, handler)
fd = os.open(sys.argv[1], os.O_RDWR | os.O_APPEND)
def wait(name, call, retry):
    sys.stdin.readline()
    print("waiting", name, flush=True)
    try:
        call()
        print(name, "locked", flush=True)
    except Sig:
        print(name, "interrupted", flush=True)
    try:
        retry()
        print(name, "then locked", flush=True)
    except BlockingIOError:
        print(name, "then EAGAIN", flush=True)
wait("flock", lambda: fcntl.flock(fd, fcntl.LOCK_EX), lambda: fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB))
wait("fcntl", lambda: fcntl.lockf(fd, fcntl.LOCK_EX, 1, 0), lambda: fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0))
sys.stdin.readline()
fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
print("both locked", flush=True)
`

// TestLockWaitSignal: a signal ends a process's wait for a lock held by
// another, flock(2) and fcntl(F_SETLKW) alike: the kernel's INTERRUPT
// reaches the daemon's wait, the call fails with EINTR (the handler runs),
// the lock is not taken and no wait is left behind, and the process gets
// the lock once the holder lets go.
func TestLockWaitSignal(t *testing.T) {
	m := mountForTest(t, Options{})
	m.topic(t, "li")
	data := m.path("li", "0", "data")
	// The holder: this process, a flock and a POSIX lock of byte 0.
	h, err := os.OpenFile(data, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := unix.Flock(int(h.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if err := unix.FcntlFlock(h.Fd(), unix.F_SETLK, &unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 1}); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command("/usr/bin/python3", "-c", lockIntrScript, data)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string)
	go func() {
		defer close(lines)
		for out := bufio.NewScanner(stdout); out.Scan(); {
			lines <- out.Text()
		}
	}()
	line := func() string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the locker exited early")
			}
			return l
		case <-time.After(30 * time.Second):
			t.Fatal("the locker printed nothing for 30 s")
		}
		return ""
	}
	locks := m.srv.fs.locks
	waiters := func() int {
		locks.mu.Lock()
		defer locks.mu.Unlock()
		n := 0
		for _, f := range locks.files {
			n += f.waiters
		}
		return n
	}
	for _, name := range []string{"flock", "fcntl"} {
		stdin.Write([]byte("next\n"))
		if got := line(); got != "waiting "+name {
			t.Fatalf("locker: %q, want waiting %s", got, name)
		}
		// Signalled only once its request waits in the daemon.
		waitFor(t, func() bool { return waiters() == 1 })
		if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{name + " interrupted", name + " then EAGAIN"} {
			if got := line(); got != want {
				t.Fatalf("locker: %q, want %q", got, want)
			}
		}
		// The wait ended in the daemon, not only in the process.
		waitFor(t, func() bool { return waiters() == 0 })
	}
	if err := unix.Flock(int(h.Fd()), unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	if err := unix.FcntlFlock(h.Fd(), unix.F_SETLK, &unix.Flock_t{Type: unix.F_UNLCK, Whence: 0, Start: 0, Len: 1}); err != nil {
		t.Fatal(err)
	}
	stdin.Write([]byte("go\n"))
	if got := line(); got != "both locked" {
		t.Fatalf("locker after the holder let go: %q", got)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("locker: %v", err)
	}
}
