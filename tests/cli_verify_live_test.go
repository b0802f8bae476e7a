package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOfflineToolsBesideSteadyWriter: README.md says the offline tools work on
// the data directory of a running mount, and that verify exits 0 when
// everything it checked is sound. Beside a mount with a steady writer (a
// bash loop appending through one open descriptor, as `tail -F app.log >>
// data` does), verify read the active segment's .log and then its
// indexes, found entries for the batches appended in between ("index
// pointing past its log"), retried a few times, every time racing again,
// and reported that error with exit status 1 in about one run in five.
// `dump-log --index-sanity-check` of the active segment's indexes read the
// index again after the .log, and failed the same way every time. Every
// run must find nothing wrong.
func TestOfflineToolsBesideSteadyWriter(t *testing.T) {
	m := mntNew(t)
	// An index entry for every batch: every append between the two
	// reads would show.
	m.ok(`mkdir "$M/live" && echo index.interval.bytes=0 >> "$M/live/config" && seq 1 1000 >> "$M/live/0/data"`)
	writer := exec.Command("bash", "-c", `i=0; while :; do echo "line $i"; i=$((i+1)); done >> "$1"`, "bash", m.path("live", "0", "data"))
	writer.Stderr = os.Stderr
	writer.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := writer.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = syscall.Kill(-writer.Process.Pid, syscall.SIGKILL)
			_ = writer.Wait()
		}
	}
	t.Cleanup(stop) // before the unmount, registered earlier, runs
	for run := 1; run <= 8; run++ {
		r := cliRun(t, "verify", m.data)
		if r.Code != 0 {
			t.Fatalf("verify run %d beside a writer: exit %d\n%s%s", run, r.Code, r.Stdout, r.Stderr)
		}
		if !strings.Contains(r.Stderr, "in use by") {
			t.Fatalf("verify run %d did not note the running mount:\n%s", run, r.Stderr)
		}
		idx := filepath.Join(m.data, "live-0", "00000000000000000000.index")
		tidx := filepath.Join(m.data, "live-0", "00000000000000000000.timeindex")
		if r := cliRun(t, "dump-log", "--index-sanity-check", idx, tidx); r.Code != 0 {
			t.Fatalf("dump-log --index-sanity-check run %d beside a writer: exit %d\n%s%s", run, r.Code, r.Stdout, r.Stderr)
		}
	}
	stop()
	if r := cliRun(t, "verify", m.data); r.Code != 0 {
		t.Fatalf("verify after the writer stopped: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}
