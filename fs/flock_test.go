package fs

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestFlockUnlockAndConvert: flock(2) through the mount between two open
// file descriptions of data, both left open throughout. LOCK_UN gives the
// lock up at once (not only at close), and wakes a waiter; asking again for
// the lock held is a no-op that keeps it; a conversion (LOCK_EX to
// LOCK_SH) lets a shared lock in; LOCK_UN without a lock succeeds.
func TestFlockUnlockAndConvert(t *testing.T) {
	m := mountForTest(t, Options{})
	m.topic(t, "fl")
	open := func() int {
		t.Helper()
		f, err := os.Open(m.path("fl", "0", "data"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return int(f.Fd())
	}
	a, b := open(), open()
	step := func(who string, fd, how int, want error) {
		t.Helper()
		if err := unix.Flock(fd, how); !errors.Is(err, want) && !(err == nil && want == nil) {
			t.Fatalf("%s flock(%#x): %v, want %v", who, how, err, want)
		}
	}
	nb := unix.LOCK_NB
	step("a", a, unix.LOCK_UN, nil) // no lock: nothing to give up
	step("a", a, unix.LOCK_SH, nil)
	step("a", a, unix.LOCK_SH|nb, nil) // the lock held: kept
	step("b", b, unix.LOCK_EX|nb, syscall.EAGAIN)
	step("b", b, unix.LOCK_SH|nb, nil)
	step("b", b, unix.LOCK_UN, nil)
	step("a", a, unix.LOCK_UN, nil)
	step("b", b, unix.LOCK_EX|nb, nil) // a's descriptor is still open
	step("a", a, unix.LOCK_SH|nb, syscall.EAGAIN)
	step("b", b, unix.LOCK_EX|nb, nil) // held again: still held
	step("a", a, unix.LOCK_SH|nb, syscall.EAGAIN)
	step("b", b, unix.LOCK_SH, nil) // converted to shared
	step("a", a, unix.LOCK_SH|nb, nil)
	step("b", b, unix.LOCK_UN, nil)

	// flock(1), with a description of its own, waits for an exclusive
	// lock while b holds a shared one; b's LOCK_UN, with b still open,
	// lets it in. (A child process, which the test can kill if it waits
	// for ever: a thread of the test's own process stuck in flock(2)
	// would keep the mount's server from stopping.)
	step("a", a, unix.LOCK_UN, nil)
	step("b", b, unix.LOCK_SH, nil)
	cmd := exec.Command("flock", "-x", m.path("fl", "0", "data"), "true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer cmd.Process.Kill()
	locks := m.srv.fs.locks
	waitFor(t, func() bool {
		select {
		case err := <-done:
			t.Fatalf("flock -x returned while b holds LOCK_SH: %v", err)
		default:
		}
		locks.mu.Lock()
		defer locks.mu.Unlock()
		for _, f := range locks.files {
			if f.waiters > 0 {
				return true
			}
		}
		return false
	})
	step("b", b, unix.LOCK_UN, nil)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("flock -x after b's LOCK_UN: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("flock -x still waits 30 s after b's LOCK_UN")
	}
	step("b", b, unix.LOCK_EX|nb, nil) // flock(1) exited: its lock went with it
}
