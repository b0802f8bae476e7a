package tests

// Helpers of the tests of the journal of unfinished lines
// (mount_unfinished_*_test.go): python writers driven line by line, a
// full disk, strace arming a kill at a syscall, and the checks of what a
// remount recovered.

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// unfinishedNeedPython3 skips t without python3 (the writers whose every
// write(2) result the tests know are python).
func unfinishedNeedPython3(t *testing.T) {
	t.Helper()
	needProgram(t, "python3", "python3")
}

// unfinishedPy is a python3 writer of a file on the mount, told what to
// do next by a line on its stdin and answering on its stdout.
type unfinishedPy struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	rd  *bufio.Reader
}

// startUnfinishedPy runs script with path and args as its arguments
// (under `timeout 60`), waits for its "ready" line and kills it at the
// end of the test.
func startUnfinishedPy(t *testing.T, script, path string, args ...string) *unfinishedPy {
	t.Helper()
	cmd := exec.Command("timeout", append([]string{"-k", "5", "60", "python3", "-c", script, path}, args...)...)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	py := &unfinishedPy{cmd: cmd, in: in, rd: bufio.NewReader(out)}
	t.Cleanup(py.stop)
	if l := py.line(); l != "ready\n" {
		t.Fatalf("writer: %q", l)
	}
	return py
}

// line reads the writer's next line, "\n" included ("" once it ended).
func (py *unfinishedPy) line() string {
	l, _ := py.rd.ReadString('\n')
	return l
}

// step tells the writer to go on ("go") and returns its answer.
func (py *unfinishedPy) step() string {
	py.in.Write([]byte("go\n"))
	return py.line()
}

// stop kills the writer (ours; it may be blocked on a dead mount) and
// waits for it.
func (py *unfinishedPy) stop() {
	py.cmd.Process.Kill()
	py.cmd.Wait()
}

// unfinishedDropPy holds an unfinished line of argv[2] bytes ("a"), then
// at each "go" on stdin makes it too long (5000 bytes of "b"), writes its
// tail "c\n", and closes the file, answering long-ok or long-ERRNO, c-ok
// or c-ERRNO, and closed.
const unfinishedDropPy = `
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
os.write(fd, b"a" * int(sys.argv[2]))
print("ready", flush=True)
for name, b in (("long", b"b" * 5000), ("c", b"c\n")):
    sys.stdin.readline()
    try:
        os.write(fd, b)
        print(name + "-ok", flush=True)
    except OSError as e:
        print("%s-%d" % (name, e.errno), flush=True)
sys.stdin.readline()
os.close(fd)
print("closed", flush=True)
sys.stdin.readline()
`

// unfinishedDropOnFullDisk starts an unfinishedDropPy writer of topic t's
// data holding a line of held bytes, fills disk, makes the line too long
// (EMSGSIZE, the line dropped, and the journal entry of the drop finding
// no room), frees the disk and writes the refused line's tail (EMSGSIZE
// too). It returns the writer, its file still open.
func unfinishedDropOnFullDisk(t *testing.T, m *mnt, disk string, held int) *unfinishedPy {
	t.Helper()
	py := startUnfinishedPy(t, unfinishedDropPy, m.path("t", "0", "data"), strconv.Itoa(held))
	free := unfinishedFillDisk(t, disk)
	emsgsize := strconv.Itoa(int(syscall.EMSGSIZE))
	if l := py.step(); l != "long-"+emsgsize+"\n" {
		t.Fatalf("the write that makes the line too long: %q, want EMSGSIZE", l)
	}
	free()
	// Room again; the writer's next bytes ("c\n", the refused line's
	// tail: EMSGSIZE too).
	if l := py.step(); l != "c-"+emsgsize+"\n" {
		t.Fatalf("the refused line's tail: %q, want EMSGSIZE", l)
	}
	return py
}

// straceInject attaches strace to process pid, injecting inject (as
// "signal=KILL:when=1") into its calls of syscall on path, and returns
// once strace says it attached; strace's output is drained until it ends.
func straceInject(t *testing.T, pid int, path, syscall, inject string) *exec.Cmd {
	t.Helper()
	st, _ := straceInjectWatch(t, pid, path, syscall, inject, "")
	return st
}

// straceInjectWatch is straceInject whose returned channel is closed
// once a line of strace's trace contains match ("" never matches).
func straceInjectWatch(t *testing.T, pid int, path, syscall, inject, match string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	straceBin := needProgram(t, "strace", "strace")
	// The trace goes to stderr, unbuffered: a line is read as strace
	// prints it, before it lets the traced thread go on.
	st := exec.Command(straceBin, "-f", "-p", strconv.Itoa(pid), "-P", path,
		"-e", "trace="+syscall, "-e", "inject="+syscall+":"+inject)
	stderr, _ := st.StderrPipe()
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	// A test that failed before its kill leaves no strace attached.
	t.Cleanup(func() { st.Process.Kill(); st.Wait() })
	sc := bufio.NewScanner(stderr)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() && !strings.Contains(sc.Text(), "attached") {
	}
	matched := make(chan struct{})
	go func() {
		closed := false
		for sc.Scan() {
			if match != "" && !closed && strings.Contains(sc.Text(), match) {
				close(matched)
				closed = true
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	return st, matched
}

// killpointFile is the file of m's partition t-0 that a kill point
// targets: "log", the last segment; else the journal.
func killpointFile(m *mnt, file string) string {
	if file == "log" {
		logs, _ := filepath.Glob(filepath.Join(m.data, "t-0", "*.log"))
		return logs[len(logs)-1]
	}
	return filepath.Join(m.data, "t-0", "segfs-unfinished-lines")
}

// wantRecords fails t unless the records of topic, joined by '|', are
// want; what begins the message ("records").
func wantRecords(t *testing.T, m *mnt, topic, what, want string) {
	t.Helper()
	if got := strings.Join(recordsOf(m, topic), "|"); got != want {
		t.Fatalf("%s %q, want %q", what, got, want)
	}
}

// wantDaemonLog fails t unless the daemon's log says msg; what begins
// the message ("no warning for ...").
func wantDaemonLog(t *testing.T, m *mnt, msg, what string) {
	t.Helper()
	if log := m.daemonLog(); !strings.Contains(log, msg) {
		t.Fatalf("%s:\n%s", what, log)
	}
}
