package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestMountDaemonDropsInheritedDescriptors: the daemon `segfs mount`
// starts outlives it, so a descriptor its caller left open without
// close-on-exec (a shell's extra redirection, make's jobserver pipe, a
// test harness's pipe) must not pass to the daemon: it would stay open
// until the unmount, and a reader of that pipe would wait for EOF as
// long. The caller here gives `segfs mount` the write end of a pipe as
// fd 7; once the mount is up, no descriptor of the daemon may be it.
func TestMountDaemonDropsInheritedDescriptors(t *testing.T) {
	mntRequireFuse(t)
	base := t.TempDir()
	m := &mnt{t: t, data: filepath.Join(base, "data"), dir: filepath.Join(base, "mnt")}
	if err := os.Mkdir(m.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(pw.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	pipe := fmt.Sprintf("pipe:[%d]", st.Ino)
	cmd := exec.Command("timeout", "-k", "5", "60", segfsBin, "mount", m.data, m.dir)
	// fd 7 of timeout and of segfs mount (not 3, which segfs mount
	// replaces with its own pipe to the daemon).
	cmd.ExtraFiles = []*os.File{nil, nil, nil, nil, pw}
	out, err := cmd.CombinedOutput()
	pw.Close()
	m.pid = m.findDaemon()
	if m.pid != 0 {
		pid := m.pid
		t.Cleanup(func() { m.teardown(pid) })
	}
	if err != nil {
		t.Fatalf("segfs mount: %v\n%s\n--- daemon log:\n%s", err, out, m.daemonLog())
	}
	if m.pid == 0 {
		t.Fatalf("segfs mount returned, but no daemon serves %s", m.dir)
	}
	if got := m.ok(`mkdir $M/t && echo x >> $M/t/0/data && cat $M/t/0/data`); got != "x\n" {
		t.Fatalf("data reads %q, want \"x\\n\"", got)
	}
	fdDir := fmt.Sprintf("/proc/%d/fd", m.pid)
	ents, err := os.ReadDir(fdDir)
	if err != nil {
		t.Fatal(err)
	}
	var held []string
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join(fdDir, e.Name())); err == nil && target == pipe {
			held = append(held, e.Name())
		}
	}
	if len(held) > 0 {
		t.Fatalf("the daemon holds the pipe its caller inherited to segfs mount (%s) as fd %s", pipe, strings.Join(held, ", "))
	}
}
