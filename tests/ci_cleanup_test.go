package tests

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestUnmountLeftovers: scripts/unmount-leftovers.sh, which .ci/run runs
// over /tmp at start, detaches a dead segfs mount and leaves a live one,
// with its files, alone: a soak running beside CI once had its mount
// detached by CI's clean-up, and its next `echo >> TOPIC/0/data` failed
// with ENOENT (twice, in two sessions' soaks, before the cause was found).
// With --all (for the TMPDIR .ci/run owns) it detaches live mounts too.
func TestUnmountLeftovers(t *testing.T) {
	script, err := filepath.Abs(filepath.Join("..", "scripts", "unmount-leftovers.sh"))
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("bash", append([]string{script}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("unmount-leftovers.sh %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	live := mntNew(t)
	live.ok(`mkdir "$M/keep" && echo one >> "$M/keep/0/data"`)
	dead := mntNew(t)
	dead.ok(`mkdir "$M/gone"`)
	dead.kill9()
	// A request the kernel queued before it saw /dev/fuse close ends with
	// ECONNABORTED rather than ENOTCONN (fuse_abort_conn fails the requests
	// in flight; only later ones find the connection gone). The clean-clone
	// CI once saw it here: the daemon's last thread was gone from /proc a
	// moment before the connection was torn down. So wait for ENOTCONN.
	var statErr error
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, statErr = os.Stat(dead.path("gone"))
		if statErr == nil || !errors.Is(statErr, syscall.ECONNABORTED) || time.Now().After(deadline) {
			break
		}
	}
	if statErr == nil || !errors.Is(statErr, syscall.ENOTCONN) {
		t.Fatalf("after kill -9 the mount answers %v; want ENOTCONN", statErr)
	}

	out := run(filepath.Dir(filepath.Dir(live.dir)))
	out += run(filepath.Dir(filepath.Dir(dead.dir)))
	if !mntIsMounted(live.dir) {
		t.Fatalf("the live mount was detached:\n%s", out)
	}
	if got := live.ok(`echo two >> "$M/keep/0/data" && cat "$M/keep/0/data"`); got != "one\ntwo\n" {
		t.Fatalf("the live mount reads %q after the clean-up", got)
	}
	if mntIsMounted(dead.dir) {
		t.Fatalf("the dead mount is still mounted:\n%s", out)
	}
	if !strings.Contains(out, "detached "+dead.dir) {
		t.Fatalf("the script did not name the mount it detached:\n%s", out)
	}

	out = run("--all", filepath.Dir(filepath.Dir(live.dir)))
	if mntIsMounted(live.dir) {
		t.Fatalf("--all left the live mount mounted:\n%s", out)
	}
}
