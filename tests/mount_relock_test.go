package tests

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestMountRemountWhileOldDaemonExits: umount(8) returns once the kernel
// has detached the mount, while the daemon is still shutting down and
// holds the data directory's lock, so `umount M && segfs mount D M` failed
// with "data directory ... is in use by another process" about one time in
// ten (every time with a few hundred partitions). The new mount now waits
// for a daemon that serves no mount any more to let go.
//
// Here the old daemon is stopped with SIGTERM while a `tail -f` reads, so
// it detaches its mount lazily and gives the open file its grace (60 s):
// its shutdown lasts as long as the test wants. The new mount must wait,
// not fail, and come up once tail exits. (A `umount -l` by the user with
// the file open is not a shutdown: the daemon serves the file as long as
// it is open, and a new mount refuses at once, saying why;
// TestMountAfterLazyUnmount.)
func TestMountRemountWhileOldDaemonExits(t *testing.T) {
	m := mntNew(t, "--unmount-grace", "60s")
	m.ok(`mkdir "$M/q" && seq 3 >> "$M/q/0/data"`)

	tail := exec.Command("timeout", "60", "tail", "-f", m.path("q", "0", "data"))
	out, err := tail.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := tail.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tail.Process.Kill(); tail.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "3" {
	}

	if err := syscall.Kill(m.pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !mntWaitFor(20*time.Second, func() bool { return !mntIsMounted(m.dir) }) {
		t.Fatalf("the daemon did not detach its mount after SIGTERM\n%s", m.daemonLog())
	}
	if !pidAlive(m.pid) {
		t.Fatalf("the old daemon exited with tail -f still reading")
	}
	logPath := filepath.Join(m.data, "segfs-mount.out")
	st, err := os.Stat(logPath)
	if err != nil {
		t.Fatal(err)
	}
	logFrom := st.Size()

	mount := exec.Command("timeout", "-k", "5", "60", segfsBin, "mount", m.data, m.dir)
	var mountOut strings.Builder
	mount.Stdout, mount.Stderr = &mountOut, &mountOut
	if err := mount.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mount.Wait() }()
	oldPid := m.pid
	t.Cleanup(func() {
		mount.Process.Kill()
		// tail first: while it reads, the old daemon cannot exit.
		// (Killing timeout leaves tail to exit on its closed stdout.)
		tail.Process.Kill()
		tail.Wait()
		if pid := m.findDaemon(); pid != 0 && pid != oldPid {
			m.teardown(pid)
		}
	})

	// The new mount either fails at once (the defect) or says it waits.
	waiting := func() bool {
		b, _ := os.ReadFile(logPath)
		return int64(len(b)) > logFrom && strings.Contains(string(b[logFrom:]), "shutting down; waiting")
	}
	deadline := time.Now().Add(30 * time.Second)
	for !waiting() {
		select {
		case err := <-done:
			t.Fatalf("segfs mount while the old daemon was shutting down: %v\n%s", err, mountOut.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("segfs mount neither failed nor waited\n%s", m.daemonLog())
		}
	}

	// The old daemon's last file closes: it exits, and the new mount
	// comes up on the same mountpoint with the same data.
	tail.Process.Kill()
	tail.Wait()
	if err := <-done; err != nil {
		t.Fatalf("segfs mount after the old daemon exited: %v\n%s\n%s", err, mountOut.String(), m.daemonLog())
	}
	if !waitExit(oldPid, 10*time.Second) {
		t.Fatalf("old daemon %d still running", oldPid)
	}
	if got := m.ok(`cat "$M/q/0/data"`); got != "1\n2\n3\n" {
		t.Fatalf("after the remount: %q", got)
	}
	// A data directory a live mount serves still fails at once.
	other := filepath.Join(t.TempDir(), "other")
	os.Mkdir(other, 0o755)
	b, err := exec.Command("timeout", "60", segfsBin, "mount", m.data, other).CombinedOutput()
	if err == nil || !strings.Contains(string(b), "in use") {
		t.Fatalf("second mount of a served data directory: %v %q", err, b)
	}
}

// TestMountSignalEndsHolderWait: a foreground mount waiting for a previous
// holder of the data directory to let go (up to 30 s, for one that is
// shutting down) stops at SIGINT and fails, mounting nothing. It used to
// sit out the whole wait, then mount, so Ctrl-C did nothing for 30 s.
func TestMountSignalEndsHolderWait(t *testing.T) {
	mntRequireFuse(t)
	base := t.TempDir()
	data, mp := filepath.Join(base, "data"), filepath.Join(base, "mnt")
	for _, d := range []string{data, mp} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A holder that serves no mount and is not `segfs serve`: a mount
	// takes it for one on its way out, and waits.
	holder := exec.Command("flock", filepath.Join(data, ".lock"), "sleep", "60")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	if !mntWaitFor(10*time.Second, func() bool {
		return exec.Command("flock", "-n", filepath.Join(data, ".lock"), "true").Run() != nil
	}) {
		t.Fatal("flock never took the lock")
	}
	cmd := exec.Command(segfsBin, "mount", "--foreground", data, mp)
	var errb strings.Builder
	var mu sync.Mutex
	cmd.Stderr = lockedWriter{&mu, &errb}
	stderr := func() string {
		mu.Lock()
		defer mu.Unlock()
		return errb.String()
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		if mntIsMounted(mp) {
			exec.Command("umount", "-l", mp).Run()
		}
	})
	if !mntWaitFor(10*time.Second, func() bool { return strings.Contains(stderr(), "waiting for it") }) {
		t.Fatalf("the mount did not wait for the holder: %s", stderr())
	}
	cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-done:
		done <- err
		if err == nil {
			t.Fatalf("mount exited 0 after SIGINT while waiting: %s", stderr())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("mount still running 15 s after SIGINT while it waited for the holder (it waits 30 s): %s", stderr())
	}
	if mntIsMounted(mp) {
		t.Fatalf("%s mounted after an interrupted wait", mp)
	}
	t.Logf("stderr: %s", stderr())
}
