package tests

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunScript: README's command that runs segfs, scripts/run.sh, with a
// data directory and a mountpoint of its own, mounts, and run again while
// mounted says so and exits 0 (it used to exit 1 with "already mounted");
// after umount it mounts again over the same data.
func TestRunScript(t *testing.T) {
	mntRequireFuse(t)
	tmp := t.TempDir()
	data, mp, bin := filepath.Join(tmp, "data"), filepath.Join(tmp, "mnt"), filepath.Join(tmp, "bin", "segfs")
	run := func() string {
		t.Helper()
		cmd := exec.Command("timeout", "-k", "5", "300", "bash", "../scripts/run.sh", data, mp)
		cmd.Env = append(cmd.Environ(), "SEGFS_BIN="+bin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("scripts/run.sh: %v\n%s", err, out)
		}
		return string(out)
	}
	m := &mnt{t: t, data: data, dir: mp}
	// The daemon runs bin, not the package's binary: found by its
	// command line, unmounted and waited for before TempDir's removal.
	daemon := func() int {
		for pid, args := range procArgs() {
			if len(args) > 2 && args[0] == bin && args[len(args)-1] == mp {
				return pid
			}
		}
		return 0
	}
	t.Cleanup(func() {
		if pid := daemon(); pid != 0 {
			m.teardown(pid)
		}
	})
	if out := run(); !strings.Contains(out, "segfs is mounted on "+mp) {
		t.Fatalf("first run:\n%s", out)
	}
	m.ok(`mkdir "$M/r" && seq 3 >> "$M/r/0/data"`)
	if out := run(); !strings.Contains(out, "already mounted") {
		t.Fatalf("second run:\n%s", out)
	}
	if got := m.ok(`cat "$M/r/0/data"`); got != "1\n2\n3\n" {
		t.Fatalf("after the second run: %q", got)
	}
	pid := daemon()
	if pid == 0 {
		t.Fatalf("no daemon serves %s after scripts/run.sh", mp)
	}
	m.teardown(pid)
	if out := run(); !strings.Contains(out, "segfs is mounted on "+mp) {
		t.Fatalf("run after umount:\n%s", out)
	}
	if got := m.ok(`cat "$M/r/0/data"`); got != "1\n2\n3\n" {
		t.Fatalf("after a remount: %q", got)
	}
}
