package tests

// Kill -9 at exact points of the journal's protocol (logstore/
// unfinished.go): strace kills the daemon as it enters its Nth pwrite64
// to the segment or to the journal, while a python writer whose every
// write(2) result is known drives it. Each case says what recovery must
// make of the writer's lines.

import (
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// killpointPy writes (w HEX) or closes (c) data as told on stdin, one
// command a line, answering "ok N" or "err ERRNO" for each.
const killpointPy = `
import os, sys, binascii
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
print("ready", flush=True)
for line in sys.stdin:
    cmd = line.split()
    try:
        if cmd[0] == "w":
            print("ok", os.write(fd, binascii.unhexlify(cmd[1])), flush=True)
        else:
            os.close(fd)
            print("ok 0", flush=True)
    except OSError as e:
        print("err", e.errno, flush=True)
`

// killpointDo has the killpointPy writer py write b (cmd "w") or close
// (cmd "c"), and returns its answer.
func killpointDo(t *testing.T, py *unfinishedPy, cmd string, b []byte) string {
	t.Helper()
	if cmd == "w" {
		cmd += " " + hex.EncodeToString(b)
	}
	py.in.Write([]byte(cmd + "\n"))
	l, err := py.rd.ReadString('\n')
	if err != nil {
		t.Fatalf("writer: %v", err)
	}
	return strings.TrimSpace(l)
}

// killpointArm attaches strace to the daemon, to kill it as it enters
// its nth pwrite64 of path from now on; the returned func waits for
// strace to end.
func killpointArm(t *testing.T, m *mnt, path string, n int) func() {
	t.Helper()
	if n == 2 {
		return killAfterFirstPwrite(t, m, path)
	}
	if n != 1 {
		t.Fatalf("killpointArm: pwrite %d: only the first or second can be targeted", n)
	}
	st := straceInject(t, m.pid, path, "pwrite64", "signal=KILL:when=1")
	return func() { st.Wait() }
}

// killAfterFirstPwrite kills the daemon of m with SIGKILL once its first
// pwrite to path (from the arming on) has written, before its next one.
// strace counts injections per thread, not per process, and the daemon's
// appender may move between threads from one pwrite to the next, so
// "signal=KILL:when=2" let the second pwrite through about one run in
// three. Instead every thread's first pwrite to path is held at its exit
// for a few seconds (the thread stopped by strace, so the appender cannot
// go on), and the test kills the daemon once strace has printed that
// pwrite's result ("= N (DELAYED)"), which it does before it holds the
// thread. Not as soon as path grows: the file grows page by page while the
// pwrite copies, and a kill then stops the pwrite part way (the kernel
// ends a write at a fatal signal), leaving a torn first batch, which
// recovery rightly drops: about one run in five had no record at all.
// The held thread dies of the SIGKILL only once strace lets it go, which
// it did at the end of the 5 s hold; so strace (ours) is killed right
// after the daemon: a tracer's exit detaches the thread, past its
// pwrite, and the pending SIGKILL ends it there.
func killAfterFirstPwrite(t *testing.T, m *mnt, path string) func() {
	t.Helper()
	needProgram(t, "strace", "strace")
	st, written := straceInjectWatch(t, m.pid, path, "pwrite64", "delay_exit=5000000:when=1", "(DELAYED)")
	pid := m.pid
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		select {
		case <-written:
			syscall.Kill(pid, syscall.SIGKILL)
			st.Process.Kill()
		case <-time.After(60 * time.Second):
			// The caller's wait for the daemon's death fails.
		}
	}()
	return func() {
		<-killed
		st.Wait()
	}
}

func TestUnfinishedKillPoints(t *testing.T) {
	unfinishedNeedPython3(t)
	var many strings.Builder
	for i := 0; many.Len() < 1<<20-64; i++ {
		fmt.Fprintf(&many, "L%06d\n", i)
	}
	cases := []struct {
		name string
		// before: writes acknowledged before the arming; then the
		// daemon dies at the nth pwrite of file ("log" or "journal")
		// during the last command.
		before []string
		file   string
		n      int
		last   string // "w:TEXT" or "c"
		want   func(recs []string) error
	}{
		{"extend killed at its journal entry", []string{"abc-"}, "journal", 1, "w:more",
			exact("abc-", "abc-more")},
		{"completing write killed at its conditional entry", []string{"abc-"}, "journal", 1, "w:def\nghi",
			exact("abc-")},
		{"completing write killed at its batch", []string{"abc-"}, "log", 1, "w:def\nghi",
			exact("abc-")},
		{"extend after a completing write killed at its entry", []string{"abc-", "def\nghi"}, "journal", 1, "w:jk",
			exact("abc-def|ghi", "abc-def|ghijk")},
		{"close killed at its batch", []string{"abc-", "def"}, "log", 1, "c",
			exact("abc-def")},
		{"close killed at its entry", []string{"abc-", "def"}, "journal", 1, "c",
			exact("abc-def")},
		{"lines and a tail in two batches, no line before, killed at the second", nil, "log", 2, "w:" + many.String() + "tail",
			func(recs []string) error {
				// The first batch's lines, and no tail: the
				// write was not answered.
				if len(recs) == 0 {
					return fmt.Errorf("no records, want the first batch's lines")
				}
				if recs[0] != "L000000" || recs[len(recs)-1] == "tail" || len(recs) >= strings.Count(many.String(), "\n") {
					return fmt.Errorf("%d records, first %q, last %q", len(recs), recs[0], recs[len(recs)-1])
				}
				for i, r := range recs {
					if r != fmt.Sprintf("L%06d", i) {
						return fmt.Errorf("record %d is %q", i, r)
					}
				}
				return nil
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := mntNew(t)
			m.ok(`mkdir "$M/t"`)
			py := startUnfinishedPy(t, killpointPy, m.path("t", "0", "data"))
			for _, b := range c.before {
				if r := killpointDo(t, py, "w", []byte(b)); r != fmt.Sprintf("ok %d", len(b)) {
					t.Fatalf("write %q: %s", b, r)
				}
			}
			path := killpointFile(m, c.file)
			if c.file != "log" {
				if _, err := os.Stat(path); err != nil {
					t.Fatalf("no journal to watch: %v", err)
				}
			}
			wait := killpointArm(t, m, path, c.n)
			var r string
			if c.last == "c" {
				r = killpointDo(t, py, "c", nil)
			} else {
				r = killpointDo(t, py, "w", []byte(strings.TrimPrefix(c.last, "w:")))
			}
			if !waitExit(m.pid, 30e9) {
				t.Fatalf("the daemon survived its pwrite %d of %s (writer: %s)", c.n, c.file, r)
			}
			wait()
			t.Logf("writer's last command: %s", r)
			m.mount()
			if err := c.want(recordsOf(m, "t")); err != nil {
				t.Fatalf("after the kill and remount: %v\n%s", err, m.daemonLog())
			}
			m.unmount()
			journalEmpty(t, filepath.Join(m.data, "t-0"))
		})
	}
}

// exact accepts one of the given record lists (joined by '|').
func exact(alts ...string) func([]string) error {
	return func(recs []string) error {
		got := strings.Join(recs, "|")
		for _, a := range alts {
			if got == a {
				return nil
			}
		}
		return fmt.Errorf("records %q, want one of %q", got, alts)
	}
}

// Kill -9 during recovery, at each of its writes: the journal's entry
// for a recovered line (conditional on its batch) and the batch. Then
// a plain remount: each line is a record once, in the order of the
// writers' last writes.
func TestUnfinishedRecoveryKillPoints(t *testing.T) {
	straceBin := needProgram(t, "strace", "strace")
	for _, c := range []struct {
		file string
		n    int
	}{{"journal", 1}, {"log", 1}, {"journal", 2}, {"log", 2}, {"journal", 3}} {
		t.Run(fmt.Sprintf("%s_%d", c.file, c.n), func(t *testing.T) {
			m := mntNew(t)
			m.ok(`mkdir "$M/t"`)
			h := startUnfinishedHolder(t, m, `exec 3>>"$M/t/0/data" 4>>"$M/t/0/data" 5>>"$M/t/0/data"
printf 'one-' >&3
printf 'two' >&4
printf 'done\nthr' >&5
printf 'a' >&3
printf 'ee' >&5`)
			m.kill9()
			h.stop()
			for i := 0; i < 5 && mntIsMounted(m.dir); i++ {
				exec.Command("timeout", "10", "umount", "-l", m.dir).Run()
			}
			path := killpointFile(m, c.file)
			cmd := exec.Command("timeout", "-k", "5", "60", straceBin, "-f", "-o", "/dev/null", "-P", path,
				"-e", "trace=pwrite64", "-e", fmt.Sprintf("inject=pwrite64:signal=KILL:when=%d", c.n),
				segfsBin, "mount", "--foreground", m.data, m.dir)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the mount was not killed at pwrite %d of %s:\n%s", c.n, c.file, out)
			}
			for i := 0; i < 5 && mntIsMounted(m.dir); i++ {
				exec.Command("timeout", "10", "umount", "-l", m.dir).Run()
			}
			m.mount()
			if got, want := strings.Join(recordsOf(m, "t"), "|"), "done|two|one-a|three"; got != want {
				t.Fatalf("records %q, want %q\n%s", got, want, m.daemonLog())
			}
			m.unmount()
			journalEmpty(t, filepath.Join(m.data, "t-0"))
		})
	}
}

// Kill -9 inside the journal's rewrite (past 1 MiB and more than twice
// its writers' lines): at the temp file's creation, its write, or the
// rename over the journal. Writer A holds a 600000-byte line, writer B
// ends a 60000-byte line and starts the next in each write, so the
// journal grows by B's tails until a write of B's rewrites it; two
// lines held since before ("A", "B") are in it too. After the remount
// every line is there once: the held ones, A's, B's complete lines and
// B's last tail (its write's batch was stored before the rewrite that
// the kill cut; the kill came before the reply).
func TestUnfinishedRewriteKillPoints(t *testing.T) {
	needProgram(t, "strace", "strace")
	unfinishedNeedPython3(t)
	for _, c := range []struct{ syscall, file string }{
		{"openat", "segfs-unfinished-lines.tmp"},
		{"write", "segfs-unfinished-lines.tmp"},
		{"renameat", "segfs-unfinished-lines"},
	} {
		t.Run(c.syscall, func(t *testing.T) {
			m := mntNew(t)
			m.ok(`mkdir "$M/t"`)
			h := startUnfinishedHolder(t, m, `exec 3>>"$M/t/0/data" 4>>"$M/t/0/data"; printf A >&3; printf B >&4`)
			st := straceInject(t, m.pid, filepath.Join(m.data, "t-0", c.file), c.syscall, "signal=KILL:when=1")
			w := exec.Command("timeout", "-k", "5", "60", "bash", "-c", `exec 3>>"$D" 4>>"$D"
python3 -c '
import os
try:
    for i in range(10):
        os.write(3, b"A" * 60000)
    for j in range(40):
        os.write(4, b"B%d-" % j + b"b" * 50000)
        os.write(4, b"c" * 10000 + b"\n" + b"B%d-tail" % (j + 1))
    print("no kill")
except OSError as e:
    print("killed", j)
'`)
			w.Env = append(os.Environ(), "D="+m.path("t", "0", "data"))
			out, _ := w.CombinedOutput()
			if !waitExit(m.pid, 10e9) {
				st.Process.Kill()
				st.Wait()
				t.Fatalf("the daemon was not killed in the rewrite: %s", out)
			}
			st.Wait()
			h.stop()
			t.Logf("writer: %s", out)
			m.mount()
			recs := recordsOf(m, "t")
			// B's lines: "B0-b..c", then "Bi-tailBi-b..c"; then the
			// held A and B, A's line, and B's last tail.
			k := 0
			for k < len(recs) && strings.HasPrefix(recs[k], "B") && len(recs[k]) > 60000 {
				want := fmt.Sprintf("B%d-", k)
				if k > 0 {
					want = fmt.Sprintf("B%d-tail", k) + want
				}
				if r := recs[k]; !strings.HasPrefix(r, want+"bbbb") || !strings.HasSuffix(r, "ccc") || len(r) != len(want)+60000 {
					t.Fatalf("record %d: %.30q... (%d bytes), want %q and 60000 bytes", k, r, len(r), want)
				}
				k++
			}
			rest := recs[k:]
			if k == 0 || len(rest) != 4 || rest[0] != "A" || rest[1] != "B" || rest[2] != strings.Repeat("A", 600000) ||
				rest[3] != fmt.Sprintf("B%d-tail", k) {
				t.Fatalf("after B's %d lines: %d records, want A, B, A's line and B%d-tail\n%s", k, len(rest), k, m.daemonLog())
			}
			m.unmount()
			journalEmpty(t, filepath.Join(m.data, "t-0"))
		})
	}
}
