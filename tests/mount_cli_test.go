package tests

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestMountCLIErrors checks that `segfs mount` fails with a clear message
// and a non-zero status, and mounts nothing, when it cannot serve.
func TestMountCLIErrors(t *testing.T) {
	mntRequireFuse(t)
	base := t.TempDir()
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o644)

	mountFails := func(want string, args ...string) {
		t.Helper()
		out, err := exec.Command("timeout", append([]string{"60", segfsBin, "mount"}, args...)...).CombinedOutput()
		if err == nil {
			t.Fatalf("segfs mount %v succeeded, want %q", args, want)
		}
		if !strings.Contains(string(out), want) {
			t.Fatalf("segfs mount %v: %q, want it to say %q", args, out, want)
		}
	}
	mountFails("does not exist", filepath.Join(base, "d1"), filepath.Join(base, "missing"))
	mountFails("not a directory", filepath.Join(base, "d1"), file)
	mountFails("usage", filepath.Join(base, "d1"))

	m := mntNew(t)
	// The same mountpoint again: live, so not replaced.
	mountFails("already mounted", filepath.Join(base, "d2"), m.dir)
	// The same data directory on a second mountpoint: locked, and the
	// message names the process holding it.
	other := filepath.Join(base, "other")
	os.Mkdir(other, 0o755)
	mountFails(strconv.Itoa(m.pid), m.data, other)
	if mntIsMounted(other) {
		t.Fatalf("%s mounted despite the error", other)
	}
	// Foreground mode reports the same way.
	out, err := exec.Command("timeout", "60", segfsBin, "mount", "--foreground", m.data, other).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "in use") {
		t.Fatalf("--foreground on a locked data dir: %v %q", err, out)
	}
	m.ok(`test -d "$M"`)
}

// TestMountPartitionsFlag: `--partitions N` is the partition count of
// topics made with mkdir, and mkdir TOPIC/N adds the next one.
func TestMountPartitionsFlag(t *testing.T) {
	m := mntNew(t, "--partitions", "3")
	m.ok(`mkdir "$M/orders"`)
	if got := strings.Fields(m.ok(`ls "$M/orders"`)); strings.Join(got, " ") != "0 1 2 config" {
		t.Fatalf("ls orders: %q", got)
	}
	m.ok(`mkdir "$M/orders/3" && echo x >> "$M/orders/3/data"`)
	if got := m.ok(`cat "$M/orders/3/data"`); got != "x\n" {
		t.Fatalf("new partition reads %q", got)
	}
	m.fails(`mkdir "$M/orders/5"`, "Invalid argument")
}

// TestMountServeEmptyArgument: an empty DATA_DIR or MOUNTPOINT (a shell
// variable that is unset: `segfs mount "$DATA" /mnt/segfs`) is refused.
// filepath.Abs("") is the working directory, which mount and serve used to
// take as the data directory: they locked it, wrote checkpoints into it
// and served it.
func TestMountServeEmptyArgument(t *testing.T) {
	mntRequireFuse(t)
	cwd, mp := t.TempDir(), t.TempDir()
	// Without the check, "" meant the working directory: as the
	// mountpoint too.
	t.Cleanup(func() {
		for _, dir := range []string{mp, cwd} {
			for i := 0; i < 3 && mntIsMounted(dir); i++ {
				exec.Command("umount", "-l", dir).Run()
			}
		}
	})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mount", "", mp}, "mount: DATA_DIR is an empty string"},
		{[]string{"mount", "--foreground", "", mp}, "mount: DATA_DIR is an empty string"},
		{[]string{"mount", filepath.Join(t.TempDir(), "data"), ""}, "mount: MOUNTPOINT is an empty string"},
		{[]string{"serve", "--listen", "127.0.0.1:0", ""}, "serve: DATA_DIR is an empty string"},
	} {
		cmd := exec.Command("timeout", append([]string{"-k", "5", "20", segfsBin}, tc.args...)...)
		cmd.Dir = cwd
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("segfs %q: %v %q, want a failure saying %q", tc.args, err, out, tc.want)
		}
		for _, dir := range []string{mp, cwd} {
			if mntIsMounted(dir) {
				t.Errorf("segfs %q mounted %s", tc.args, dir)
				exec.Command("umount", "-l", dir).Run()
			}
		}
		if ents, _ := os.ReadDir(cwd); len(ents) > 0 {
			t.Errorf("segfs %q wrote %d files into the working directory, e.g. %s", tc.args, len(ents), ents[0].Name())
			os.RemoveAll(cwd)
			os.Mkdir(cwd, 0o755)
		}
	}
}

// TestMountSymlinkedMountpoint: a mountpoint given through a symbolic link
// is the directory it points to. mount(2) follows the link, so a live mount
// on the target is "already mounted" (it used to be checked under the
// link's name, found free, and a second segfs was stacked on the first),
// and a dead one is detached as when named directly.
func TestMountSymlinkedMountpoint(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/orders" && echo first >> "$M/orders/0/data"`)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(m.dir, link); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "data")
	countMounts := func() int {
		b, _ := os.ReadFile("/proc/self/mountinfo")
		n := 0
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 4 && f[4] == m.dir {
				n++
			}
		}
		return n
	}

	r := cliRun(t, "mount", other, link)
	if r.Code == 0 || !strings.Contains(r.Stderr, "already mounted") {
		t.Errorf("mount on a symlink to a live mount: exit %d, stderr %q; want \"already mounted\"", r.Code, r.Stderr)
	}
	if n := countMounts(); n != 1 {
		t.Fatalf("%d mounts on %s, want 1", n, m.dir)
	}
	if got := m.ok(`cat "$M/orders/0/data"`); got != "first\n" {
		t.Fatalf("the first mount reads %q after the refused one", got)
	}

	m.kill9()
	r = cliRun(t, "mount", m.data, link)
	if r.Code != 0 || !strings.Contains(r.Stderr, "dead mount") {
		t.Fatalf("mount on a symlink to a dead mount: exit %d, stderr %q; want it detached and mounted", r.Code, r.Stderr)
	}
	again := &mnt{t: t, data: m.data, dir: m.dir}
	again.pid = again.findDaemon()
	pid := again.pid
	t.Cleanup(func() { again.teardown(pid) })
	if pid == 0 || countMounts() != 1 {
		t.Fatalf("after the remount through the link: daemon %d, %d mounts on %s", pid, countMounts(), m.dir)
	}
	if got := again.ok(`cat "$M/orders/0/data"`); got != "first\n" {
		t.Fatalf("remounted through the link, data reads %q", got)
	}
	again.unmount()
}

// TestMountKafkaListenPortInUse: a --kafka-listen (or serve --listen)
// address that cannot be bound fails the command before the data
// directory is opened: no recovery runs, nothing is mounted. The port used
// to be bound only after the store was opened and the filesystem mounted,
// which was then unmounted again.
func TestMountKafkaListenPortInUse(t *testing.T) {
	mntRequireFuse(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	base := t.TempDir()
	data, mp := filepath.Join(base, "data"), filepath.Join(base, "mnt")
	os.Mkdir(mp, 0o755)
	t.Cleanup(func() {
		if mntIsMounted(mp) {
			exec.Command("umount", "-l", mp).Run()
		}
	})
	for _, args := range [][]string{
		{"mount", "--kafka-listen", addr, data, mp},
		{"mount", "--foreground", "--kafka-listen", addr, data, mp},
		{"serve", "--listen", addr, data},
	} {
		out, err := exec.Command("timeout", append([]string{"-k", "5", "30", segfsBin}, args...)...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "address already in use") {
			t.Errorf("segfs %q: %v %q, want it to fail naming the address in use", args, err, out)
		}
		if _, err := os.Stat(filepath.Join(data, ".lock")); err == nil {
			t.Errorf("segfs %q opened the data directory before binding %s", args, addr)
			os.Remove(filepath.Join(data, ".lock"))
		}
		if log, _ := os.ReadFile(filepath.Join(data, "segfs-mount.out")); strings.Contains(string(log), "msg=mounted") {
			t.Errorf("segfs %q mounted before binding %s:\n%s", args, addr, log)
			os.Remove(filepath.Join(data, "segfs-mount.out"))
		}
	}
}

// TestMountNegativeGrace: --unmount-grace is how long a signalled daemon
// keeps serving open files; a negative duration is refused like the other
// bad durations, not taken as zero.
func TestMountNegativeGrace(t *testing.T) {
	mntRequireFuse(t)
	base := t.TempDir()
	mp := filepath.Join(base, "mnt")
	os.Mkdir(mp, 0o755)
	t.Cleanup(func() {
		if mntIsMounted(mp) {
			exec.Command("umount", "-l", mp).Run()
		}
	})
	r := cliRun(t, "mount", "--unmount-grace", "-1s", filepath.Join(base, "data"), mp)
	if r.Code == 0 || !strings.Contains(r.Stderr, "--unmount-grace must not be negative") {
		t.Errorf("mount --unmount-grace -1s: exit %d, stderr %q", r.Code, r.Stderr)
	}
	if mntIsMounted(mp) {
		t.Errorf("mount --unmount-grace -1s mounted %s", mp)
	}
}

// TestMountRaceOneMountpoint: two `segfs mount` of different data
// directories started together on one mountpoint: exactly one mounts, the
// other fails with a message. Both used to pass the "already mounted"
// check before either had mounted, and both mounts stacked.
func TestMountRaceOneMountpoint(t *testing.T) {
	mntRequireFuse(t)
	base := t.TempDir()
	mp := filepath.Join(base, "mnt")
	os.Mkdir(mp, 0o755)
	countMounts := func() int {
		b, _ := os.ReadFile("/proc/self/mountinfo")
		n := 0
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 4 && f[4] == mp {
				n++
			}
		}
		return n
	}
	unmountAll := func() {
		for i := 0; i < 5 && mntIsMounted(mp); i++ {
			exec.Command("umount", mp).Run()
		}
		// The daemons exit once unmounted and release their data
		// directories; wait so that the next round can lock them.
		serving := &mnt{t: t, dir: mp}
		mntWaitFor(10*time.Second, func() bool { return serving.findDaemon() == 0 })
	}
	t.Cleanup(unmountAll)
	for round := 0; round < 5; round++ {
		var wg sync.WaitGroup
		results := make([]cliResult, 2)
		for i, d := range []string{"a", "b"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = cliRun(t, "mount", filepath.Join(base, d), mp)
			}()
		}
		wg.Wait()
		ok := 0
		for _, r := range results {
			if r.Code == 0 {
				ok++
			} else if r.Stderr == "" {
				t.Errorf("round %d: a refused mount said nothing", round)
			}
		}
		if n := countMounts(); n != 1 || ok != 1 {
			t.Fatalf("round %d: %d mounts on %s, %d commands exited 0 (stderr %q, %q); want one of each",
				round, n, mp, ok, results[0].Stderr, results[1].Stderr)
		}
		unmountAll()
	}
}

// TestMountInterruptedBeforeReady: when the `segfs mount` command is
// killed (Ctrl-C, a supervisor's SIGTERM) while its daemon is still
// starting, the daemon does not go on to leave a mount nobody was told
// about: it finds nobody to report "ready" to, unmounts and exits. It used
// to keep serving, being in its own session, where the signal never
// reached it.
func TestMountInterruptedBeforeReady(t *testing.T) {
	mntRequireFuse(t)
	base := t.TempDir()
	data, mp := filepath.Join(base, "data"), filepath.Join(base, "mnt")
	os.Mkdir(mp, 0o755)
	os.Mkdir(data, 0o755)
	// A long recovery, made deterministic: the daemon's first read of
	// segfs-topics.json blocks until this test writes the FIFO.
	fifo := filepath.Join(data, "segfs-topics.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(segfsBin, "mount", data, mp)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	daemon := &mnt{t: t, data: data, dir: mp}
	if !mntWaitFor(30*time.Second, func() bool { daemon.pid = daemon.findDaemon(); return daemon.pid != 0 }) {
		cmd.Process.Kill()
		t.Fatal("no daemon started")
	}
	pid := daemon.pid
	t.Cleanup(func() { daemon.teardown(pid) })
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if err := os.WriteFile(fifo, []byte(`{"topics":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if !waitExit(pid, 20*time.Second) {
		t.Fatalf("the daemon of an interrupted `segfs mount` still runs (mounted: %v)\n%s", mntIsMounted(mp), daemon.daemonLog())
	}
	if mntIsMounted(mp) {
		t.Fatalf("%s is still mounted after the daemon exited", mp)
	}
	if log := daemon.daemonLog(); !strings.Contains(log, "is gone") {
		t.Errorf("the daemon log does not say why it unmounted:\n%s", log)
	}
}

// TestMountPartitionGapMessage: a data directory where a topic's partition
// directories have a gap (orders-0 and orders-2: a Kafka broker's log
// directory holds only the partitions it hosts) is refused, with a message
// naming the data directory, the missing directory and the ones found. It
// said "topic orders: partition directories are not numbered 0..1
// (missing 1)".
func TestMountPartitionGapMessage(t *testing.T) {
	m := mntNew(t, "--partitions", "3")
	m.ok(`mkdir "$M/orders" && echo a >> "$M/orders/0/data"`)
	m.unmount()
	if err := os.RemoveAll(filepath.Join(m.data, "orders-1")); err != nil {
		t.Fatal(err)
	}
	mp := filepath.Join(t.TempDir(), "mnt")
	os.Mkdir(mp, 0o755)
	t.Cleanup(func() {
		if mntIsMounted(mp) {
			exec.Command("umount", "-l", mp).Run()
		}
	})
	r := cliRun(t, "mount", m.data, mp)
	want := m.data + ": topic orders: partition directory orders-1 is missing (found orders-0, orders-2)"
	if r.Code == 0 || !strings.Contains(r.Stderr, want) {
		t.Fatalf("mount with a partition gap: exit %d, stderr %q; want %q", r.Code, r.Stderr, want)
	}
}

// TestMountOnHungMount: `segfs mount` on a mountpoint whose segfs daemon
// is stopped (SIGSTOP: alive, answering nothing) fails within seconds
// with a message, named directly or through a symbolic link. Looking the
// path up (lstat, to follow links) blocked in the kernel for as long as
// the daemon stayed stopped.
func TestMountOnHungMount(t *testing.T) {
	// It mostly waits (the attribute cache, mount's 5 s bounds) on a
	// mount of its own, which no other test looks through: it runs beside
	// the other tests that wait (t.Parallel).
	t.Parallel()
	m := mntNew(t)
	m.ok(`ls "$M"`)
	syscall.Kill(m.pid, syscall.SIGSTOP)
	t.Cleanup(func() { syscall.Kill(m.pid, syscall.SIGCONT) }) // before the unmount
	// The kernel answers from its attribute cache for a second
	// (fs.cacheTimeout); past it, a lookup asks the stopped daemon.
	time.Sleep(1500 * time.Millisecond)
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(m.dir, link)
	other := filepath.Join(t.TempDir(), "data")
	for _, tc := range []struct{ mp, want string }{
		{m.dir, "does not answer"},
		{link, "does not answer"},
	} {
		// SIGKILL: a process blocked on a FUSE request ignores SIGTERM.
		out, err := exec.Command("timeout", "-s", "KILL", "60", segfsBin, "mount", other, tc.mp).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), tc.want) {
			t.Errorf("segfs mount on a hung mount via %s: %v %q; want exit 1 saying %q", tc.mp, err, out, tc.want)
		}
	}
}
