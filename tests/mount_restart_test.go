package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMountRemount unmounts and remounts: the content and the inode
// number of data are the same.
func TestMountRemount(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/re" && echo segment.bytes=65536 > "$M/re/config" && seq 1 50000 >> "$M/re/0/data"`)
	before := m.ok(`md5sum < "$M/re/0/data"; stat -c '%s %i' "$M/re/0/data"; grep -v recovery.point "$M/re/0/status"`)
	m.unmount()
	if mntIsMounted(m.dir) {
		t.Fatal("still mounted after umount")
	}
	if !strings.Contains(m.daemonLog(), "store closed") {
		t.Fatalf("umount did not lead to a clean store close:\n%s", m.daemonLog())
	}
	m.sanityCheck()
	m.mount()
	after := m.ok(`md5sum < "$M/re/0/data"; stat -c '%s %i' "$M/re/0/data"; grep -v recovery.point "$M/re/0/status"`)
	if before != after {
		t.Fatalf("remount changed the view:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	// SIGTERM unmounts cleanly too.
	m.ok(`kill -TERM ` + strconv.Itoa(m.pid))
	if !waitExit(m.pid, 20*time.Second) || mntIsMounted(m.dir) {
		t.Fatalf("SIGTERM did not unmount\n%s", m.daemonLog())
	}
	m.mount()
	if got := m.ok(`md5sum < "$M/re/0/data"; stat -c '%s %i' "$M/re/0/data"; grep -v recovery.point "$M/re/0/status"`); got != before {
		t.Fatalf("after SIGTERM and remount:\n%s", got)
	}
}

// TestMountKill9 kills the daemon with SIGKILL during an echo loop, twice:
// the first time the next `segfs mount` must clear the dead mount itself,
// the second time after `umount -l`. Every line whose echo returned is
// there, in order, and the indexes pass the sanity check.
func TestMountKill9(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/k9" && echo segment.bytes=16384 > "$M/k9/config"`)
	acked := filepath.Join(t.TempDir(), "acked")
	loop := `i=$(wc -l < ` + acked + ` 2>/dev/null || echo 0)
while :; do i=$((i+1)); echo "line $i" >> "$M/k9/0/data" || exit 0; echo "line $i" >> ` + acked + `; done`

	for round, detach := range []bool{false, true} {
		loopCmd := exec.Command("timeout", "120", "bash", "-c", loop)
		loopCmd.Env = append(os.Environ(), "M="+m.dir)
		loopCmd.Dir = filepath.Dir(acked)
		if err := loopCmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- loopCmd.Wait() }()
		if !mntWaitFor(30*time.Second, func() bool {
			b, _ := os.ReadFile(acked)
			return strings.Count(string(b), "\n") >= 2000*(round+1)
		}) {
			t.Fatal("the echo loop does not get going")
		}
		m.kill9()
		<-done
		if detach {
			m.ok(`umount -l "$M"`)
		}
		out := m.mount()
		if !detach && !strings.Contains(out, "dead mount") {
			t.Errorf("mount over a dead mount said %q, want a message about it", out)
		}
		if n := strings.Count(mountinfoLines(m.dir), "\n"); n != 1 {
			t.Errorf("%d mounts stacked on %s", n, m.dir)
		}
		stored := mntLines(m.ok(`cat "$M/k9/0/data"`))
		ack, _ := os.ReadFile(acked)
		checkAcked(t, mntLines(string(ack)), stored)
		// The line in flight at the kill may be stored: it counts as
		// acked from now on, so the next round does not repeat it.
		if err := os.WriteFile(acked, []byte(strings.Join(stored, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m.unmount()
	m.sanityCheck()
}

// checkAcked checks that every acknowledged line is stored, in order, and
// that at most one line more (the one in flight at the kill) is there.
func checkAcked(t *testing.T, acked, stored []string) {
	t.Helper()
	if len(stored) < len(acked) {
		t.Fatalf("%d lines acked, %d stored", len(acked), len(stored))
	}
	for i := range acked {
		if stored[i] != acked[i] {
			t.Fatalf("line %d: stored %q, acked %q", i+1, stored[i], acked[i])
		}
	}
	if extra := len(stored) - len(acked); extra > 1 {
		t.Fatalf("%d lines stored beyond the acked ones", extra)
	}
}

func mountinfoLines(dir string) string {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	var out strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == dir {
			out.WriteString(line + "\n")
		}
	}
	return out.String()
}

// TestMountSigtermBusy sends SIGTERM while `tail -f` holds data open: the
// daemon detaches the mount lazily, keeps serving the open file for the
// grace period, then exits; the next mount finds everything.
func TestMountSigtermBusy(t *testing.T) {
	m := mntNew(t, "--unmount-grace", "1s")
	m.ok(`mkdir "$M/busy" && seq 1 1000 >> "$M/busy/0/data"`)
	tail := exec.Command("timeout", "60", "tail", "-f", m.path("busy", "0", "data"))
	tail.Dir = t.TempDir()
	if err := tail.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tail.Process.Kill(); tail.Wait() })
	mntWaitOpen(t, m.path("busy", "0", "data"), 1, 30*time.Second) // the mount is busy
	m.ok(`kill -TERM ` + strconv.Itoa(m.pid))
	if !waitExit(m.pid, 20*time.Second) {
		t.Fatalf("daemon still running 20s after SIGTERM with a busy mount\n%s", m.daemonLog())
	}
	if mntIsMounted(m.dir) {
		t.Fatal("still in mountinfo after SIGTERM")
	}
	if !strings.Contains(m.daemonLog(), "store closed") {
		t.Fatalf("the store was not closed cleanly:\n%s", m.daemonLog())
	}
	tail.Process.Kill()
	tail.Wait()
	m.mount()
	if got := m.ok(`wc -l < "$M/busy/0/data"`); got != "1000\n" {
		t.Fatalf("after remount: %q lines", got)
	}
}

// TestMountSymlinkedPartitionDir: a partition directory moved to another
// disk and linked back (DATA/orders-0 -> /disk2/orders-0), which Kafka
// follows, is part of the log for the mount and for the offline tools.
// Both used to skip the link, so the mount came up without the topic and
// verify checked nothing.
func TestMountSymlinkedPartitionDir(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/orders" && seq 1 5 >> "$M/orders/0/data"`)
	m.unmount()
	moved := filepath.Join(t.TempDir(), "orders-0")
	if err := os.Rename(filepath.Join(m.data, "orders-0"), moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, filepath.Join(m.data, "orders-0")); err != nil {
		t.Fatal(err)
	}

	r := cliRun(t, "get-offsets", m.data)
	if r.Code != 0 || r.Stdout != "orders 0 0 5\n" {
		t.Errorf("get-offsets: exit %d, %q %q; want \"orders 0 0 5\"", r.Code, r.Stdout, r.Stderr)
	}
	r = cliRun(t, "verify", m.data)
	if r.Code != 0 || !strings.Contains(r.Stdout, "verified 1 partition,") {
		t.Errorf("verify: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}

	m.mount()
	if got := m.ok(`cat "$M/orders/0/data"`); got != "1\n2\n3\n4\n5\n" {
		t.Fatalf("after the move, data reads %q", got)
	}
	m.ok(`echo 6 >> "$M/orders/0/data"`)
	m.unmount()
	if r := cliRun(t, "get-offsets", moved+"/.."); r.Stdout != "orders 0 0 6\n" {
		t.Fatalf("the append did not reach the linked directory: get-offsets of its parent says %q %q", r.Stdout, r.Stderr)
	}
}
