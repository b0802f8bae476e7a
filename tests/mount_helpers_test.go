package tests

// Helpers for the mount tests: start `segfs mount` on temp dirs, run real
// Unix tools against the mount (always in separate processes, always under
// timeout), and tear every mount down in t.Cleanup even when a test fails:
// umount, then umount -l, then SIGKILL of the daemon by its PID (only
// daemons these helpers started).

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mntRequireFuse skips the test when the machine has no FUSE device.
func mntRequireFuse(t testing.TB) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("FUSE tests need /dev/fuse: %v", err)
	}
}

// mnt is one mounted data directory.
type mnt struct {
	t    testing.TB
	data string // data directory
	dir  string // mountpoint
	pid  int    // daemon
	// nofile, when set, is the daemon's RLIMIT_NOFILE, soft and hard, and
	// the daemon runs without CAP_SYS_RESOURCE, so that it cannot raise
	// it (as root it raises the hard limit).
	nofile int
	// inheritNofile, when set, is the RLIMIT_NOFILE (soft, hard) the
	// daemon starts with, and may raise.
	inheritNofile [2]int
}

// mntNew makes a data dir and a mountpoint and mounts. Extra args go to
// `segfs mount` before the directories.
func mntNew(t testing.TB, extra ...string) *mnt {
	t.Helper()
	mntRequireFuse(t)
	base := t.TempDir()
	m := &mnt{t: t, data: filepath.Join(base, "data"), dir: filepath.Join(base, "mnt")}
	if err := os.Mkdir(m.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	m.mount(extra...)
	return m
}

// mntAt mounts the data directory data on a fresh mountpoint.
func mntAt(t testing.TB, data string, extra ...string) *mnt {
	t.Helper()
	mntRequireFuse(t)
	m := &mnt{t: t, data: data, dir: filepath.Join(t.TempDir(), "mnt")}
	if err := os.Mkdir(m.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	m.mount(extra...)
	return m
}

// mount runs `segfs mount` (daemon mode) and registers the cleanup.
func (m *mnt) mount(extra ...string) string {
	t := m.t
	t.Helper()
	args := append([]string{"mount"}, extra...)
	args = append(args, m.data, m.dir)
	cmd := exec.Command("timeout", append([]string{"-k", "5", "60", segfsBin}, args...)...)
	switch {
	case m.nofile > 0:
		if hasCapSysResource(t) {
			// Out of the bounding set, so out of what root's exec of
			// segfs is given.
			// A daemon under a file limit it cannot raise needs
			// setpriv to drop CAP_SYS_RESOURCE.
			needProgram(t, "setpriv", "util-linux")
			cmd.Args = append([]string{"setpriv", "--bounding-set", "-sys_resource", "--"}, cmd.Args...)
		}
		cmd = exec.Command("sh", append([]string{"-c", fmt.Sprintf(`ulimit -n %d && exec "$@"`, m.nofile), "sh"}, cmd.Args...)...)
	case m.inheritNofile != [2]int{}:
		cmd = exec.Command("sh", append([]string{"-c", fmt.Sprintf(`ulimit -Sn %d && ulimit -Hn %d && exec "$@"`,
			m.inheritNofile[0], m.inheritNofile[1]), "sh"}, cmd.Args...)...)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("segfs %s: %v\n%s\n--- daemon log:\n%s", strings.Join(args, " "), err, out, m.daemonLog())
	}
	m.pid = m.findDaemon()
	if m.pid == 0 {
		t.Fatalf("segfs mount returned, but no daemon serves %s", m.dir)
	}
	if !mntIsMounted(m.dir) {
		t.Fatalf("segfs mount returned 0, but %s is not in mountinfo", m.dir)
	}
	pid := m.pid
	t.Cleanup(func() { m.teardown(pid) })
	return string(out)
}

// hasCapSysResource reports whether this process has CAP_SYS_RESOURCE,
// which raising a hard rlimit takes (root in a container may lack it).
func hasCapSysResource(t testing.TB) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatalf("CapEff %q: %v", v, err)
			}
			const capSysResource = 24
			return caps&(1<<capSysResource) != 0
		}
	}
	t.Fatal("no CapEff in /proc/self/status")
	return false
}

func (m *mnt) daemonLog() string {
	b, _ := os.ReadFile(filepath.Join(m.data, "segfs-mount.out"))
	if len(b) > 8000 {
		b = b[len(b)-8000:]
	}
	return string(b)
}

// findDaemon returns the PID of the `segfs mount --foreground` serving
// m.dir: the process whose command line is our binary with our (unique,
// temporary) mountpoint.
func (m *mnt) findDaemon() int {
	for pid, args := range procArgs() {
		if len(args) < 3 || args[0] != segfsBin || args[len(args)-1] != m.dir {
			continue
		}
		for _, a := range args {
			if a == "--foreground" {
				return pid
			}
		}
	}
	return 0
}

// procArgs returns the command line of every process, by PID.
func procArgs() map[int][]string {
	procs := map[int][]string{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		procs[pid] = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	}
	return procs
}

// mntIsMounted reports whether dir is a mountpoint, from mountinfo only
// (stat could hang on a broken mount).
func mntIsMounted(dir string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && f[4] == dir {
			return true
		}
	}
	return false
}

func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	// A zombie is dead for our purpose, but only once every thread is:
	// after SIGKILL the thread-group leader turns Z while the other
	// threads still run their exit, holding the process's files (the
	// data directory's flock, /dev/fuse), and a restart then found the
	// data directory locked.
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if len(tasks) == 0 {
		tasks = []string{fmt.Sprintf("/proc/%d/stat", pid)}
	}
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X') {
			return true
		}
	}
	return false
}

// waitExit waits up to d for pid to exit.
func waitExit(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if !pidAlive(pid) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return !pidAlive(pid)
}

// teardown unmounts whatever is left: umount, umount -l, then SIGKILL of
// the daemon pid (ours).
func (m *mnt) teardown(pid int) {
	for i := 0; i < 5 && mntIsMounted(m.dir); i++ {
		if exec.Command("timeout", "10", "umount", m.dir).Run() != nil {
			exec.Command("timeout", "10", "umount", "-l", m.dir).Run()
		}
	}
	if !waitExit(pid, 15*time.Second) {
		m.t.Logf("daemon %d did not exit after unmount; killing it", pid)
		syscall.Kill(pid, syscall.SIGKILL)
		waitExit(pid, 5*time.Second)
	}
}

// unmount unmounts with umount(8) and waits for the daemon to exit.
func (m *mnt) unmount() {
	t := m.t
	t.Helper()
	// A process SIGKILLed while one of its FUSE requests is with the
	// daemon exits only once the daemon answers it (the kernel waits out
	// a request already read by the daemon), and holds the mount until
	// then: under load that can be a moment after the kill returned. So
	// "target is busy" is retried for a while; a holder that never goes
	// away still fails the test, named.
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := exec.Command("timeout", "20", "umount", m.dir).CombinedOutput()
		if err == nil {
			break
		}
		if !strings.Contains(string(out), "busy") || time.Now().After(deadline) {
			t.Fatalf("umount %s: %v\n%s\nprocesses using it: %s", m.dir, err, out, mntHolders(m.dir))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !waitExit(m.pid, 20*time.Second) {
		t.Fatalf("daemon %d still running 20s after umount\n%s", m.pid, m.daemonLog())
	}
}

// kill9 kills the daemon with SIGKILL and waits for it.
func (m *mnt) kill9() {
	syscall.Kill(m.pid, syscall.SIGKILL)
	if !waitExit(m.pid, 10*time.Second) {
		m.t.Fatalf("daemon %d survived SIGKILL", m.pid)
	}
}

// path joins names below the mountpoint.
func (m *mnt) path(names ...string) string {
	return filepath.Join(append([]string{m.dir}, names...)...)
}

// shResult is one bash run.
type shResult struct {
	out, err string
	code     int
}

// sh runs a bash script under timeout with $M set to the mountpoint and
// $D to the data dir. The working directory is outside the mount.
func (m *mnt) sh(script string, timeoutSec ...int) shResult {
	m.t.Helper()
	limit := 120
	if len(timeoutSec) > 0 {
		limit = timeoutSec[0]
	}
	cmd := exec.Command("timeout", "-k", "5", strconv.Itoa(limit), "bash", "-c", "set -o pipefail\n"+script)
	cmd.Dir = filepath.Dir(m.dir)
	cmd.Env = append(os.Environ(), "M="+m.dir, "D="+m.data, "LC_ALL=C")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := shResult{out: out.String(), err: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
		if r.code == 124 || r.code == 137 {
			m.t.Fatalf("timed out after %ds: %s\nstderr: %s", limit, script, r.err)
		}
	} else if err != nil {
		m.t.Fatalf("bash: %v", err)
	}
	return r
}

// ok runs a script that must succeed and returns its stdout.
func (m *mnt) ok(script string, timeoutSec ...int) string {
	m.t.Helper()
	r := m.sh(script, timeoutSec...)
	if r.code != 0 {
		m.t.Fatalf("script failed (exit %d): %s\nstdout: %.2000s\nstderr: %.2000s\n%s", r.code, script, r.out, r.err, m.walkDiag(r.err))
	}
	return r.out
}

// fails runs a script that must fail with stderr containing want.
func (m *mnt) fails(script, want string) {
	m.t.Helper()
	r := m.sh(script)
	if r.code == 0 {
		m.t.Fatalf("script succeeded, want failure %q: %s\nstdout: %.500s", want, script, r.out)
	}
	if !strings.Contains(r.err, want) {
		m.t.Fatalf("script failed with %q, want %q: %s", r.err, want, script)
	}
}

// sanityCheck runs `segfs dump-log --index-sanity-check` over every index
// of the data dir (the mount must be down or idle).
func (m *mnt) sanityCheck() {
	t := m.t
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(m.data, "*", "*.index"))
	tfiles, _ := filepath.Glob(filepath.Join(m.data, "*", "*.timeindex"))
	files = append(files, tfiles...)
	if len(files) == 0 {
		t.Fatalf("no index files in %s", m.data)
	}
	out, err := exec.Command(segfsBin, append([]string{"dump-log", "--index-sanity-check"}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("dump-log --index-sanity-check: %v\n%.3000s", err, string(out))
	}
}

// mntWaitFor polls cond every 50 ms for up to d.
func mntWaitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// mntLines splits text into lines without the final empty one.
func mntLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// mntHolders names the processes with a cwd, root or open file under dir,
// for the message of a failed unmount.
func mntHolders(dir string) string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		links := []string{filepath.Join(p, "cwd"), filepath.Join(p, "root")}
		fds, _ := filepath.Glob(filepath.Join(p, "fd", "*"))
		for _, l := range append(links, fds...) {
			if dest, err := os.Readlink(l); err == nil && (dest == dir || strings.HasPrefix(dest, dir+"/")) {
				comm, _ := os.ReadFile(filepath.Join(p, "comm"))
				stat, _ := os.ReadFile(filepath.Join(p, "stat"))
				out = append(out, fmt.Sprintf("%s %s (%s): %s", filepath.Base(p), strings.TrimSpace(string(comm)), procState(string(stat)), dest))
				break
			}
		}
	}
	if len(out) == 0 {
		return "none found"
	}
	return strings.Join(out, "; ")
}

// procState is the state letter of a /proc/PID/stat line.
func procState(stat string) string {
	if i := strings.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2 : i+3]
	}
	return "?"
}

// walkDiag explains a "No such file or directory" for paths below the
// mountpoint in msg: for each such path, which component fails a fresh
// stat now and with what error, whether the mount is in mountinfo, and
// whether the daemon lives. It tells a missing name apart from a mount
// that is gone or stacked (the fault suite saw an existing data answer
// ENOENT twice). Empty when msg names no such path.
func (m *mnt) walkDiag(msg string) string {
	if !strings.Contains(msg, "No such file or directory") {
		return ""
	}
	var b strings.Builder
	seen := map[string]bool{}
	for rest := msg; ; {
		i := strings.Index(rest, m.dir)
		if i < 0 {
			break
		}
		rest = rest[i:]
		j := strings.IndexAny(rest, ": \n'\"")
		if j < 0 {
			j = len(rest)
		}
		p := rest[:j]
		rest = rest[j:]
		if seen[p] {
			continue
		}
		seen[p] = true
		fmt.Fprintf(&b, "walk of %s now:", p)
		comps := strings.Split(strings.Trim(strings.TrimPrefix(p, m.dir), "/"), "/")
		cur := m.dir
		for _, c := range append([]string{""}, comps...) {
			cur = filepath.Join(cur, c)
			type res struct {
				ino uint64
				err error
			}
			done := make(chan res, 1)
			go func(path string) {
				st, err := os.Stat(path)
				if err != nil {
					done <- res{err: err}
					return
				}
				done <- res{ino: st.Sys().(*syscall.Stat_t).Ino}
			}(cur)
			var r res
			select {
			case r = <-done:
			case <-time.After(5 * time.Second):
				r.err = errors.New("stat hangs")
			}
			if r.err != nil {
				fmt.Fprintf(&b, " FAILS at %s: %v", cur, r.err)
				break
			}
			fmt.Fprintf(&b, " %s(ino %d)", filepath.Base(cur), r.ino)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "mountinfo at %s:\n%s", m.dir, mountinfoLines(m.dir))
	fmt.Fprintf(&b, "daemon %d alive: %v\n", m.pid, pidAlive(m.pid))
	return b.String()
}

// mntWaitOpen waits up to d until n processes (tail, cat) hold path open,
// and returns each one's file position in it: a reader started in the
// background has then opened the generation of data it will read, which a
// fixed sleep used to wait for. Reading /proc/PID/fd asks nothing of the
// mount (the kernel names the link itself).
func mntWaitOpen(t testing.TB, path string, n int, d time.Duration) []int64 {
	t.Helper()
	var pos []int64
	if !mntWaitFor(d, func() bool {
		pos = mntOpenPositions(path)
		return len(pos) >= n
	}) {
		t.Fatalf("%d of %d readers have %s open after %v", len(pos), n, path, d)
	}
	return pos
}

// mntOpenPositions is the file position of every descriptor of any
// process open on path.
func mntOpenPositions(path string) []int64 {
	var pos []int64
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if dest, err := os.Readlink(fd); err != nil || dest != path {
			continue
		}
		b, err := os.ReadFile(strings.Replace(fd, "/fd/", "/fdinfo/", 1))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "pos:"); ok {
				p, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				pos = append(pos, p)
			}
		}
	}
	return pos
}

// mntStep is one script of a batch: it must succeed (no wants) or fail
// with stderr containing one of wants.
type mntStep struct {
	script string
	wants  []string
}

// okStep and failsStep are the steps of m.ok and m.fails; failsStep
// takes any of several messages.
func okStep(script string) mntStep { return mntStep{script: script} }
func failsStep(script string, wants ...string) mntStep {
	return mntStep{script, wants}
}

// batch runs steps in order, each in a subshell of one bash, and checks
// each as m.ok or m.fails would; it returns their stdouts. A bash (and
// a timeout) of its own for each of dozens of short commands cost some
// 50 ms apiece under -race load, for nothing the checks need.
func (m *mnt) batch(steps ...mntStep) []string {
	m.t.Helper()
	dir := m.t.TempDir()
	var b strings.Builder
	for i, s := range steps {
		f := filepath.Join(dir, strconv.Itoa(i))
		fmt.Fprintf(&b, "(\n%s\n) >'%s.out' 2>'%s.err'; echo $? >'%s.code'\n", s.script, f, f, f)
	}
	if r := m.sh(b.String()); r.code != 0 {
		m.t.Fatalf("batch of %d steps: exit %d\nstderr: %.2000s", len(steps), r.code, r.err)
	}
	outs := make([]string, len(steps))
	for i, s := range steps {
		f := filepath.Join(dir, strconv.Itoa(i))
		out, _ := os.ReadFile(f + ".out")
		errb, _ := os.ReadFile(f + ".err")
		codeb, err := os.ReadFile(f + ".code")
		code, err2 := strconv.Atoi(strings.TrimSpace(string(codeb)))
		if err != nil || err2 != nil {
			m.t.Fatalf("step %d (%s) did not finish: %v %v", i, s.script, err, err2)
		}
		outs[i] = string(out)
		matched := false
		for _, w := range s.wants {
			matched = matched || strings.Contains(string(errb), w)
		}
		switch {
		case len(s.wants) == 0 && code != 0:
			m.t.Fatalf("script failed (exit %d): %s\nstdout: %.2000s\nstderr: %.2000s\n%s", code, s.script, out, errb, m.walkDiag(string(errb)))
		case len(s.wants) > 0 && code == 0:
			m.t.Fatalf("script succeeded, want failure %q: %s\nstdout: %.500s", s.wants, s.script, out)
		case len(s.wants) > 0 && !matched:
			m.t.Fatalf("script failed with %q, want %q: %s", errb, s.wants, s.script)
		}
	}
	return outs
}
