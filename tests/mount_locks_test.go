package tests

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Locks on data and the other files are kept by the daemon, one table per
// file (st_ino), because the kernel keeps them per kernel inode and data
// is several at once: every generation, and a new incarnation whenever a
// writer opens behind a cached reader. A `flock data` holder is such a
// reader, so the first append behind it moved every new open to another
// inode, where its lock was not seen: `flock data -c …` stopped excluding.

// lockHolder is a flock(1) process that holds a lock until released.
type lockHolder struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{} // closed when it exited, with err
	err   error
}

// holdLock runs `flock ARGS -c 'echo held; read x; exit 0'` and returns once the
// lock is held; it is released when release closes the command's stdin.
func holdLock(t *testing.T, args ...string) *lockHolder {
	t.Helper()
	cmd := exec.Command("flock", append(args, "-c", "echo held; read x; exit 0")...)
	cmd.Dir = os.TempDir()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &lockHolder{t: t, cmd: cmd, stdin: stdin, done: make(chan struct{})}
	held := make(chan bool, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		held <- line == "held\n"
		io.Copy(io.Discard, stdout)
		h.err = cmd.Wait()
		close(h.done)
	}()
	t.Cleanup(func() {
		stdin.Close()
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-h.done:
		case <-time.After(10 * time.Second):
		}
	})
	select {
	case ok := <-held:
		if !ok {
			t.Fatalf("flock %s did not take the lock: %s", strings.Join(args, " "), stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("flock %s: no lock after 30 s", strings.Join(args, " "))
	}
	return h
}

// release lets the holder go and waits for it to exit.
func (h *lockHolder) release() {
	h.t.Helper()
	h.stdin.Close()
	select {
	case <-h.done:
		if h.err != nil {
			h.t.Fatalf("lock holder: %v", h.err)
		}
	case <-time.After(30 * time.Second):
		h.t.Fatal("lock holder did not exit 30 s after release")
	}
}

// flockN runs `flock -n ARGS FILE true` and returns its exit status: 0 got
// the lock, 1 it is held.
func flockN(m *mnt, file string, args ...string) int {
	m.t.Helper()
	r := m.sh(fmt.Sprintf(`flock -n %s %q true`, strings.Join(args, " "), file))
	if r.code != 0 && r.code != 1 {
		m.t.Fatalf("flock -n %s %s: exit %d: %s", strings.Join(args, " "), file, r.code, r.err)
	}
	return r.code
}

// wantFlockN checks flockN's status.
func wantFlockN(m *mnt, want int, what, file string, args ...string) {
	m.t.Helper()
	if got := flockN(m, file, args...); got != want {
		state := map[int]string{0: "free", 1: "held"}
		m.t.Fatalf("%s: flock -n %s %s exited %d, want %d (the lock should be %s)",
			what, strings.Join(args, " "), file, got, want, state[want])
	}
}

// TestMountLocksFlockAcrossInodes: the reproduction, and shared against
// exclusive locks, across a writer appending behind the holder's cached
// read (a new incarnation of data) and a key.separator change (a new
// generation).
func TestMountLocksFlockAcrossInodes(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/q" && echo 0 >> "$M/q/0/data"`)
	data := m.path("q", "0", "data")

	h := holdLock(t, "-x", data)
	wantFlockN(m, 1, "exclusive lock held", data)
	m.ok(`echo 1 >> "$M/q/0/data"`)
	wantFlockN(m, 1, "exclusive lock held, after an append behind its holder", data)
	wantFlockN(m, 1, "exclusive lock held, after an append behind its holder", data, "-s")
	h.release()
	// The holder's RELEASE comes after its close(2) returned; a
	// waiting flock sees the lock go as soon as it does.
	m.ok(fmt.Sprintf(`flock -w 20 %q true`, data))

	s := holdLock(t, "-s", data)
	wantFlockN(m, 0, "shared lock held, shared wanted", data, "-s")
	wantFlockN(m, 1, "shared lock held, exclusive wanted", data, "-x")
	m.ok(`echo k:2 >> "$M/q/0/data"`)
	wantFlockN(m, 1, "shared lock held, after an append behind its holder", data, "-x")
	wantFlockN(m, 0, "shared lock held, after an append behind its holder", data, "-s")
	m.ok(`echo key.separator=: > "$M/q/config"`)
	wantFlockN(m, 1, "shared lock held, after a key.separator change", data, "-x")
	wantFlockN(m, 0, "shared lock held, after a key.separator change", data, "-s")
	s.release()
	m.ok(fmt.Sprintf(`flock -w 20 %q true`, data))
	if got, want := m.ok(`cat "$M/q/0/data"`), "0\n1\nk:2\n"; got != want {
		t.Fatalf("data: %q, want %q", got, want)
	}
}

// procSyscall is the number of the system call pid waits in ("" if it
// runs or is gone), from /proc/PID/syscall.
func procSyscall(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/syscall", pid))
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// startFlockWaiter starts `flock ARGS FILE -c SCRIPT` and returns once it
// waits in flock(2) for the lock (its SETLKW is with the daemon).
func startFlockWaiter(t *testing.T, file, script string, args ...string) (*exec.Cmd, chan error) {
	t.Helper()
	cmd := exec.Command("flock", append(append(args, file), "-c", script)...)
	cmd.Dir = os.TempDir()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	exited := make(chan struct{})
	go func() { done <- cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
		}
	})
	nr := strconv.Itoa(syscall.SYS_FLOCK)
	deadline := time.Now().Add(30 * time.Second)
	for procSyscall(cmd.Process.Pid) != nr {
		select {
		case err := <-done:
			t.Fatalf("flock %s did not wait for the lock held on the file: it exited (%v): %s", file, err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("flock %s: not waiting in flock(2) after 30 s", file)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cmd, done
}

// fuseWaiting is the number of requests of the mount the daemon has not
// answered yet (fusectl's "waiting").
func fuseWaiting(t *testing.T, m *mnt) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(faultFusectl(t), faultConnID(t, m.dir), "waiting"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMountLocksFlockWaits: a flock that must wait blocks (behind a holder
// on another kernel inode of data), blocks nothing else, and proceeds when
// the holder exits; `flock -w` times out through INTERRUPT, and neither it
// nor a waiter killed with SIGKILL leaves a lock or a request behind.
func TestMountLocksFlockWaits(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/q" && echo 0 >> "$M/q/0/data"`)
	data := m.path("q", "0", "data")
	order := filepath.Join(t.TempDir(), "order")

	h := holdLock(t, "-x", data)
	m.ok(`echo 1 >> "$M/q/0/data"`) // a new incarnation of data
	_, done := startFlockWaiter(t, data, fmt.Sprintf(`echo waiter >> %q`, order), "-x")
	// While it waits, the file serves everyone else.
	m.ok(`echo 2 >> "$M/q/0/data" && cat "$M/q/0/data" >/dev/null && stat "$M/q/0/data" >/dev/null && cat "$M/q/0/status" >/dev/null`)
	if err := os.WriteFile(order, []byte("holder\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("waiting flock: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("waiting flock did not get the lock 30 s after its holder exited")
	}
	if b, _ := os.ReadFile(order); string(b) != "holder\nwaiter\n" {
		t.Fatalf("order of the holder and the waiter: %q", b)
	}

	// flock -w: SIGALRM interrupts the wait (the kernel sends INTERRUPT
	// for the SETLKW), and flock(1) exits 1.
	h = holdLock(t, "-x", data)
	m.ok(`echo 3 >> "$M/q/0/data"`)
	if r := m.sh(fmt.Sprintf(`flock -w 0.5 %q true`, data), 60); r.code != 1 {
		t.Fatalf("flock -w 0.5 with the lock held: exit %d, want 1 (timed out): %s", r.code, r.err)
	}
	// A waiter killed outright.
	k, kdone := startFlockWaiter(t, data, "true", "-x")
	syscall.Kill(-k.Process.Pid, syscall.SIGKILL)
	select {
	case <-kdone:
	case <-time.After(30 * time.Second):
		t.Fatalf("a flock waiting on the mount did not die of SIGKILL within 30 s (state %s)", procStatus(k.Process.Pid))
	}
	h.release()
	// Neither left a lock: the next flock gets it once the holder's
	// RELEASE is in.
	m.ok(fmt.Sprintf(`flock -w 20 %q true`, data))
	// Nor a request the daemon never answered.
	if !mntWaitFor(20*time.Second, func() bool { return fuseWaiting(t, m) == 0 }) {
		t.Fatalf("%d requests still waiting for the daemon", fuseWaiting(t, m))
	}
}

// procStatus is the State line of /proc/PID/status.
func procStatus(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "State:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "gone"
}

// TestMountLocksPosix: fcntl byte-range locks (F_SETLK, F_SETLKW, F_GETLK,
// lockf, OFD) and flock between two Python processes on data, across a
// writer behind a cached reader and a key.separator change
// (testdata/locks/posix.py): conflicts and shared ranges, F_UNLCK cutting
// a range, conversion, F_GETLK naming the holder, EDEADLK, every POSIX
// lock of a process going when it closes any descriptor of the file, OFD
// and flock locks when their description closes.
func TestMountLocksPosix(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/q" && echo a:1 >> "$M/q/0/data"`)
	script, err := filepath.Abs(filepath.Join("testdata", "locks", "posix.py"))
	if err != nil {
		t.Fatal(err)
	}
	r := m.sh(fmt.Sprintf(`python3 %q "$M/q/0/data" "$M/q/config" %d`, script, syscall.SYS_FCNTL))
	got := r.out
	want := `A setlk(fr, fcntl.F_RDLCK, 0, 10): ok
A setlk(fw, fcntl.F_WRLCK, 20, 10): ok
B let fb = os.open(data, os.O_RDWR | os.O_APPEND): None
B getlk(fb, fcntl.F_WRLCK, 0, 0): R [0,+10) by A
B getlk(fb, fcntl.F_RDLCK, 0, 0): W [20,+10) by A
B setlk(fb, fcntl.F_WRLCK, 5, 1): EAGAIN
B setlk(fb, fcntl.F_RDLCK, 0, 10): ok
B setlk(fb, fcntl.F_WRLCK, 10, 10): ok
B setlk(fb, fcntl.F_RDLCK, 25, 1): EAGAIN
B fcntl.lockf(fb, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 29): EAGAIN
A setlk(fr, fcntl.F_UNLCK, 3, 2): ok
B getlk(fb, fcntl.F_WRLCK, 3, 2): unlocked
B getlk(fb, fcntl.F_WRLCK, 2, 1): R [0,+3) by A
B getlk(fb, fcntl.F_WRLCK, 6, 100): R [5,+5) by A
A setlk(fr, fcntl.F_RDLCK, 20, 10): ok
B setlk(fb, fcntl.F_RDLCK, 25, 1): ok
B getlk(fb, fcntl.F_WRLCK, 25, 1): R [20,+10) by A
B bg setlk(fb, fcntl.F_WRLCK, 0, 1, wait=True): started
A setlk(fw, fcntl.F_WRLCK, 10, 1, wait=True): EDEADLOCK
A setlk(fr, fcntl.F_UNLCK, 0, 3): ok
B join: ok
A getlk(fr, fcntl.F_WRLCK, 0, 1): W [0,+1) by B
A os.close(os.open(data, os.O_RDONLY)): None
B getlk(fb, fcntl.F_WRLCK, 0, 0): unlocked
B setlk(fb, fcntl.F_WRLCK, 0, 0): ok
A setlk(fr, fcntl.F_RDLCK, 40, 1): EAGAIN
B os.close(fb): None
A setlk(fr, fcntl.F_RDLCK, 40, 1): ok
B let fo = os.open(data, os.O_RDONLY): None
B setlk(fo, fcntl.F_RDLCK, 100, 10, cmd=fcntl.F_OFD_SETLK): ok
B os.close(os.open(data, os.O_RDONLY)): None
A setlk(fw, fcntl.F_WRLCK, 105, 1): EAGAIN
B os.close(fo): None
A setlk(fw, fcntl.F_WRLCK, 105, 1): ok
B let fl = os.open(data, os.O_RDONLY): None
A flock(fr, fcntl.LOCK_SH): ok
B flock(fl, fcntl.LOCK_SH | fcntl.LOCK_NB): ok
B flock(fl, fcntl.LOCK_EX | fcntl.LOCK_NB): EAGAIN
A flock(fw, fcntl.LOCK_EX | fcntl.LOCK_NB): EAGAIN
A flock(fr, fcntl.LOCK_EX | fcntl.LOCK_NB): ok
A os.close(os.dup(fr)): None
B flock(fl, fcntl.LOCK_SH | fcntl.LOCK_NB): EAGAIN
A os.close(fr): None
B flock(fl, fcntl.LOCK_SH | fcntl.LOCK_NB): ok
B os.close(fl): None
A close, then LOCK_NB, 100 times: 0 busy
`
	if got != want || r.code != 0 {
		t.Fatalf("lock transcript (exit %d, stderr %q):\n%s\nwant:\n%s", r.code, r.err, got, want)
	}
}

// TestMountLocksOtherFiles: every file that can be opened takes locks
// (the kernel sends them all to the daemon now: one that did not answer
// would fail flock with EOPNOTSUPP), offset/N across a generation change
// too; directories keep theirs in the kernel.
func TestMountLocksOtherFiles(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/q" && echo a:1 >> "$M/q/0/data"`)
	seg := strings.TrimSpace(m.ok(`cd "$M/q/0/segments" && ls *.log | head -1`))
	for _, f := range []string{m.path("q", "0", "offset", "0"), m.path("q", "0", "status"), m.path("q", "config"),
		m.path("q", "0", "segments", seg), m.path("q", "0")} {
		h := holdLock(t, "-x", f)
		wantFlockN(m, 1, "exclusive lock held", f)
		h.release()
		m.ok(fmt.Sprintf(`flock -w 20 %q true`, f))
	}
	off := m.path("q", "0", "offset", "0")
	h := holdLock(t, "-s", off)
	m.ok(`echo key.separator=: > "$M/q/config"`)
	wantFlockN(m, 1, "shared lock held on offset/0, after a key.separator change", off, "-x")
	wantFlockN(m, 0, "shared lock held on offset/0, after a key.separator change", off, "-s")
	h.release()
}

// TestMountLocksHeldFileSpawnsDoNotStall: a script holds a flock on data
// through `exec 9>>data` and runs programs, which inherit fd 9 and close
// it as they exit, and so does `flock -n` itself. Each such close sends a
// FLUSH of the locked open file, and a `flock -n` by anyone then waited
// closeOrderWait (200 ms) for a RELEASE that would free the lock before
// it failed: the close might have been the last. The daemon's debug log
// says so ("no RELEASE after a close of a locked file"), which is what
// this counts rather than timing the requests. The same with a read-only
// holder (`exec 9<data`, as `flock data -c script` holds it) and
// requests of other processes: its programs' closes are told from the
// last one when they happen, since by the time `flock -n data` asks, its
// own read-only open stands beside the holder's. (The holder's first
// open waits for the RELEASE of the `flock -n` before it, which took the
// lock: no other read-only open of data is left then.) Once the holder
// closes fd 9, the next `flock -n` gets the lock: the wait for a RELEASE
// after the last close stays.
func TestMountLocksHeldFileSpawnsDoNotStall(t *testing.T) {
	m := mntNew(t, "--debug")
	m.ok(`mkdir "$M/l"`)
	out := m.ok(`d="$M/l/0/data"
exec 9>>"$d"
flock 9
for i in 1 2 3 4 5; do
	/bin/true
	flock -n "$d" true
	echo "flock -n: $?"
done
exec 9>&-
flock -n "$d" true
echo "after the close: $?"
coproc holder { exec 9<"$d"; flock -s 9; for i in 1 2 3; do /bin/true; done; echo held; read x; }
read -r line <&"${holder[0]}"
echo "read-only holder: $line"
for i in 1 2 3; do
	flock -n "$d" true
	echo "read-only holder, flock -n: $?"
done
echo "waits: $(grep -c 'no RELEASE after a close of a locked file' "$D/segfs-mount.out")"
pid=$holder_PID
echo done >&"${holder[1]}"
wait "$pid"
flock -n "$d" true
echo "after the close: $?"`)
	want := strings.Repeat("flock -n: 1\n", 5) + "after the close: 0\n" +
		"read-only holder: held\n" + strings.Repeat("read-only holder, flock -n: 1\n", 3) +
		"waits: 0\nafter the close: 0\n"
	if out != want {
		t.Errorf("got:\n%swant:\n%s%s", out, want, m.daemonLog())
	}
}
