package tests

// A line without its newline yet lives in the daemon's memory, in the
// writer's file handle, until more bytes or the close. The write(2) that
// gave its bytes returned, so they must survive kill -9 of the daemon as
// a plain file's would: segfs journals them (segfs-unfinished-lines in
// the partition directory), and the next mount makes each handle's
// unfinished line a record, as that handle's close would have.

import (
	"bufio"
	"bytes"
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

// unfinishedHolder is a bash that wrote to data through descriptors it
// keeps open (so no close ends its lines) and waits.
type unfinishedHolder struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startUnfinishedHolder runs script in bash with $M set, waits until it
// prints "ready", and leaves it running, its descriptors open.
func startUnfinishedHolder(t *testing.T, m *mnt, script string) *unfinishedHolder {
	t.Helper()
	cmd := exec.Command("timeout", "-k", "5", "120", "bash", "-c", script+"\necho ready\nexec sleep 600")
	cmd.Env = append(os.Environ(), "M="+m.dir, "LC_ALL=C")
	cmd.Dir = filepath.Dir(m.dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &unfinishedHolder{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(h.done) }()
	t.Cleanup(h.stop)
	line, err := bufio.NewReader(out).ReadString('\n')
	if line != "ready\n" {
		h.stop()
		t.Fatalf("holder: %q %v\nstderr: %s", line, err, stderr.String())
	}
	return h
}

// stop kills the holder's process group (ours) and waits for it.
func (h *unfinishedHolder) stop() {
	syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-h.done:
	case <-time.After(30 * time.Second):
	}
}

// remountAfterKill kills the daemon with SIGKILL, stops the holders (a
// process blocked on the dead mount exits once the mount is gone) and
// mounts the data directory again.
func remountAfterKill(t *testing.T, m *mnt, holders ...*unfinishedHolder) {
	t.Helper()
	m.kill9()
	for _, h := range holders {
		h.stop()
	}
	m.mount()
}

// recordsOf returns the partition's records: each line of data is one.
func recordsOf(m *mnt, topic string) []string {
	return mntLines(m.ok(fmt.Sprintf(`cat "$M/%s/0/data"`, topic)))
}

// A shell's `exec 3>>data; printf abc >&3`, then kill -9 of the daemon:
// after the remount "abc" is a record, and `segfs verify` accepts the
// journal beside the segments while the daemon is down.
func TestUnfinishedLineSurvivesKill9(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/t" && echo first >> "$M/t/0/data"`)
	h := startUnfinishedHolder(t, m, `exec 3>>"$M/t/0/data"; printf abc >&3`)
	m.kill9()
	h.stop()
	if _, err := os.Stat(filepath.Join(m.data, "t-0", "segfs-unfinished-lines")); err != nil {
		t.Fatalf("no journal after the kill: %v", err)
	}
	if out, err := exec.Command("timeout", "60", segfsBin, "verify", m.data).CombinedOutput(); err != nil {
		t.Fatalf("segfs verify with the journal present: %v\n%s", err, out)
	}
	m.mount()
	if got, want := m.ok(`cat "$M/t/0/data"`), "first\nabc\n"; got != want {
		t.Fatalf("data after kill -9 and remount = %q, want %q", got, want)
	}
	if got := m.ok(`head -n1 "$M/t/0/offset/1"`); got != "abc\n" {
		t.Fatalf("offset/1 = %q, want the record abc", got)
	}
	m.unmount()
	journalEmpty(t, filepath.Join(m.data, "t-0"))
	if out, err := exec.Command("timeout", "60", segfsBin, "verify", m.data).CombinedOutput(); err != nil {
		t.Fatalf("segfs verify after recovery: %v\n%s", err, out)
	}
}

// `printf 'no newline' >> data` and kill -9 at once: the line becomes a
// record at RELEASE, which the kernel sends after close(2) returned, so
// the kill came before it; the journal keeps it.
func TestUnfinishedLineClosedThenKill9(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/t"`)
	var want []string
	for i := 0; i < 3; i++ {
		line := fmt.Sprintf("no newline %d", i)
		want = append(want, line)
		// The kill from the same shell, right after close(2) returned.
		m.ok(fmt.Sprintf(`printf '%s' >> "$M/t/0/data"; kill -9 %d`, line, m.pid))
		if !waitExit(m.pid, 10*time.Second) {
			t.Fatalf("daemon %d survived SIGKILL", m.pid)
		}
		m.mount()
		if got := recordsOf(m, "t"); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("round %d: records %q, want %q", i, got, want)
		}
	}
}

// Two writers with unfinished lines at once: each is its own record, in
// the order of their last writes; a line one of them completed before
// the kill is there once, and its start is not recovered again.
func TestUnfinishedLinesTwoWritersKill9(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/t"`)
	h := startUnfinishedHolder(t, m, `exec 3>>"$M/t/0/data" 4>>"$M/t/0/data" 5>>"$M/t/0/data"
printf 'one-' >&3
printf 'two-' >&4
printf 'done-' >&5
printf 'a' >&3
printf 'b\n' >&5
printf 'tw' >&4`)
	remountAfterKill(t, m, h)
	wantRecords(t, m, "t", "records", "done-b|one-a|two-tw")
}

// A writer whose lines complete before the kill: no duplicate partial of
// them (the journal's entries that ended them hold); its next unfinished
// line is recovered.
func TestUnfinishedLineCompletedBeforeKill9(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/t"`)
	h := startUnfinishedHolder(t, m, `exec 3>>"$M/t/0/data"
printf 'ab' >&3
printf 'c\nde' >&3
printf 'f\n' >&3
printf 'g' >&3`)
	remountAfterKill(t, m, h)
	wantRecords(t, m, "t", "records", "abc|def|g")
	m.unmount()
	journalEmpty(t, filepath.Join(m.data, "t-0"))
}

// A compacted topic's keyless unfinished line is dropped at the remount,
// as its close would have refused it, with a warning; the open does not
// fail, and a keyed unfinished line of another writer is recovered.
func TestUnfinishedKeylessLineDroppedAtRecovery(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/ck" && printf 'cleanup.policy=compact\nkey.separator==\n' > "$M/ck/config" && echo k=1 >> "$M/ck/0/data"`)
	h := startUnfinishedHolder(t, m, `exec 3>>"$M/ck/0/data" 4>>"$M/ck/0/data"
printf 'nokey' >&3
printf 'k=2' >&4`)
	remountAfterKill(t, m, h)
	wantRecords(t, m, "ck", "records", "k=1|k=2")
	wantDaemonLog(t, m, "close would have refused it", "no warning for the dropped keyless line")
	m.ok(`echo k=3 >> "$M/ck/0/data"`)
}

// A `cat` fed a few MB slowly through a pipe, the daemon killed while it
// runs: every line whose bytes write(2) acknowledged is there once, the
// cut line as its acknowledged prefix, and nothing is there twice. Round
// 0 kills when cat has written everything it was given (its wchar) and
// waits for more, round 1 while it writes.
func TestUnfinishedCatKilledMidway(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/t"`)
	var src bytes.Buffer
	for i := 0; src.Len() < 4<<20; i++ {
		fmt.Fprintf(&src, "line %07d %s\n", i, strings.Repeat("x", i%150))
	}
	all := src.Bytes()
	var have []byte // the log so far (each round appends to it)
	for round := 0; round < 2; round++ {
		data, err := os.OpenFile(m.path("t", "0", "data"), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		cat := exec.Command("cat")
		cat.Stdout = data
		in, err := cat.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cat.Start(); err != nil {
			t.Fatal(err)
		}
		data.Close()
		catDone := make(chan struct{})
		go func() { cat.Wait(); close(catDone) }()
		wchar := func() int64 {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/io", cat.Process.Pid))
			for _, l := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(l, "wchar: "); ok {
					n, _ := strconv.ParseInt(v, 10, 64)
					return n
				}
			}
			return -1
		}
		// Feed in odd-sized pieces, so that cat's writes end inside
		// lines.
		fed := 0
		stop := len(all) * 3 / 4
		if round == 0 {
			stop = len(all)/2 + 37 // inside a line
		}
		feeder := make(chan struct{})
		go func() {
			defer close(feeder)
			for fed < stop {
				n := min(7919, stop-fed)
				if _, err := in.Write(all[fed : fed+n]); err != nil {
					return
				}
				fed += n
				if round == 1 {
					time.Sleep(200 * time.Microsecond)
				}
			}
		}()
		var acked int64
		if round == 0 {
			<-feeder
			if !mntWaitFor(60*time.Second, func() bool { return wchar() == int64(stop) }) {
				t.Fatalf("cat wrote %d of %d bytes", wchar(), stop)
			}
			acked = int64(stop)
		} else {
			if !mntWaitFor(60*time.Second, func() bool { return wchar() >= int64(len(all)/3) }) {
				t.Fatalf("cat wrote %d bytes", wchar())
			}
			acked = wchar() // write(2)s that returned before the kill
		}
		m.kill9()
		in.Close()
		<-feeder
		cat.Process.Kill() // ours; it may be blocked on the dead mount
		<-catDone
		m.mount()
		got := []byte(m.ok(`cat "$M/t/0/data"`))
		if !bytes.HasPrefix(got, have) {
			t.Fatalf("round %d: the log before this round changed", round)
		}
		got = got[len(have):]
		// got must be all[:k] for some k >= acked, with a '\n' added if
		// k cuts a line (the cut line's acknowledged prefix).
		k := len(got)
		if k > 0 && (k > len(all) || !bytes.Equal(got, all[:k])) {
			if !bytes.Equal(got[:k-1], all[:k-1]) || got[k-1] != '\n' {
				i := 0
				for i < len(got) && i < len(all) && got[i] == all[i] {
					i++
				}
				t.Fatalf("round %d: the log is not a prefix of what cat wrote (the cut line as its prefix): differs at byte %d of %d: %q vs %q",
					round, i, len(got), got[max(0, i-40):min(len(got), i+40)], all[max(0, i-40):min(len(all), i+40)])
			}
			k--
		}
		if int64(k) < acked {
			t.Fatalf("round %d: %d bytes of cat's acknowledged %d are in the log: lost %q", round, k, acked, all[k:acked])
		}
		t.Logf("round %d: acknowledged %d bytes, the log holds %d (cut line recovered: %v)", round, acked, k, all[k-1] != '\n')
		have = append(have, got...)
		// The next round writes a fresh copy after what is there.
		all = append(all[:0:0], all...)
	}
}

// A clean stop while a writer holds an unfinished line (SIGTERM, the
// grace runs out): the stop stores the line (stopWrites) and clears it
// from the journal, which it removes; the next mount does not store it a
// second time. And a kill -9 after a remount with a fresh writer: only
// that writer's line is recovered.
func TestUnfinishedLineAtCleanStopOnce(t *testing.T) {
	// The grace runs out whatever its length (the holder never closes):
	// 100 ms is as good a test as 500 ms, and quicker.
	m := mntNew(t, "--unmount-grace", "100ms")
	m.ok(`mkdir "$M/t"`)
	h := startUnfinishedHolder(t, m, `exec 3>>"$M/t/0/data"; printf 'held' >&3`)
	m.ok(`kill -TERM ` + strconv.Itoa(m.pid))
	if !waitExit(m.pid, 20*time.Second) {
		t.Fatalf("daemon still running 20s after SIGTERM\n%s", m.daemonLog())
	}
	h.stop()
	journalEmpty(t, filepath.Join(m.data, "t-0"))
	m.mount("--unmount-grace", "100ms")
	wantRecords(t, m, "t", "records after the clean stop", "held")
	h = startUnfinishedHolder(t, m, `exec 3>>"$M/t/0/data"; printf 'second' >&3`)
	remountAfterKill(t, m, h)
	wantRecords(t, m, "t", "records", "held|second")
}

// journalEmpty fails t unless the partition directory pdir's journal of
// unfinished lines holds nothing: after a recovery or a clean stop no
// line is left in it. The file itself stays, empty, for the partition's
// life (creating it at a writer's first unfinished line moved the
// directory's mtime under `tar`).
func journalEmpty(t *testing.T, pdir string) {
	t.Helper()
	fi, err := os.Stat(filepath.Join(pdir, "segfs-unfinished-lines"))
	if err != nil {
		t.Fatalf("journal of unfinished lines: %v", err)
	}
	if fi.Size() != 0 {
		t.Fatalf("journal of unfinished lines holds %d bytes, want none", fi.Size())
	}
}
