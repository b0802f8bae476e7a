package tests

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMountAfterLazyUnmount: after `umount -l` while a `tail -f` still
// reads, the kernel keeps the connection and the daemon keeps serving the
// open file, and the data directory, for as long as tail runs. A new
// `segfs mount` of the directory waited 30 s for an exit that was not
// coming, then failed with "in use by process P (segfs mount); waited 30s
// for it to exit", which did not say why nor what to do. It now refuses at
// once, naming the daemon, the lazily unmounted mountpoint and the way
// out; tail keeps following; and once tail is gone the daemon exits and
// the directory mounts again.
func TestMountAfterLazyUnmount(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/q" && seq 3 >> "$M/q/0/data"`)

	tail := exec.Command("timeout", "120", "tail", "-f", m.path("q", "0", "data"))
	out, err := tail.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := tail.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tail.Process.Kill(); tail.Wait() })
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for l := range lines {
		if l == "3" {
			break
		}
	}

	if b, err := exec.Command("umount", "-l", m.dir).CombinedOutput(); err != nil {
		t.Fatalf("umount -l: %v %s", err, b)
	}
	other := filepath.Join(t.TempDir(), "other")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	oldPid := m.pid
	t.Cleanup(func() {
		tail.Process.Kill()
		tail.Wait()
		exec.Command("umount", other).Run()
	})
	start := time.Now()
	b, err := exec.Command("timeout", "-k", "5", "60", segfsBin, "mount", m.data, other).CombinedOutput()
	took := time.Since(start)
	if err == nil {
		t.Fatalf("segfs mount of a data directory still served on a lazily unmounted mount succeeded:\n%s", b)
	}
	for _, want := range []string{fmt.Sprintf("process %d (segfs mount)", oldPid), "still serves files open on " + m.dir, "umount -l", fmt.Sprintf("kill %d", oldPid)} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("segfs mount after umount -l took %s and said %q; want it to say %q\n%s", took.Round(time.Millisecond), b, want, m.daemonLog())
		}
	}
	if mntIsMounted(other) {
		t.Fatalf("the refused mount left %s mounted", other)
	}
	if !pidAlive(oldPid) {
		t.Fatalf("the old daemon exited with tail -f still reading")
	}

	if !pidAlive(tail.Process.Pid) {
		t.Fatal("tail -f stopped after umount -l")
	}
	// The last file closes: the daemon lets go and exits.
	tail.Process.Kill()
	tail.Wait()
	if !waitExit(oldPid, 20*time.Second) {
		t.Fatalf("old daemon %d still running after the last file closed\n%s", oldPid, m.daemonLog())
	}
	m2 := mntAt(t, m.data)
	if got := m2.ok(`cat "$M/q/0/data"`); got != "1\n2\n3\n" {
		t.Fatalf("after the remount: %q", got)
	}
}
