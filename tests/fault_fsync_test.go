package tests

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestFaultFsyncFailure is F10 on a real mount, through the seam in
// logstore/fault.go: the daemon runs with SEGFS_FAULT_FSYNC_AFTER=N (a
// random N each round), so its N+1st fsync of segment data fails with EIO
// as a failing disk's would. Durable writers (fsync after every line) get
// EIO; the partition is fenced: later appends and fsyncs fail too — never
// a later "success" for data whose fsync failed — while reads go on. After
// a restart without the fault, every fsync-acked line is there. 5 rounds
// (SEGFS_FAULT_F10).
func TestFaultFsyncFailure(t *testing.T) {
	rounds := faultRounds(t, "F10", 5)
	disk := faultLoopDisk(t, "ext4", 256)
	r := faultNewRig(t, filepath.Join(disk.dir, "data"))
	r.topic("mix", "segment.bytes=65536")
	r.addWriter("e1", "echo", "mix", true, 1)
	r.addWriter("g1", "lines", "mix", true, 4)
	for i := 0; i < rounds; i++ {
		r.rounds = i
		n := 20 + r.rng.IntN(200)
		t.Setenv("SEGFS_FAULT_FSYNC_AFTER", strconv.Itoa(n))
		r.m.unmount()
		r.m.mount(r.mountArgs...)
		os.Unsetenv("SEGFS_FAULT_FSYNC_AFTER")
		r.startWriters()
		for _, w := range r.writers {
			if !w.proc.wait(60 * time.Second) {
				t.Fatalf("writer %s still running 60s after fsync %d should have failed", w.id, n+1)
			}
			if e := w.proc.errb.String(); !strings.Contains(e, "Input/output error") && !strings.Contains(e, "EIO") {
				t.Errorf("writer %s stopped with %q, want EIO", w.id, e)
			}
		}
		r.faults++
		// Fenced: appends and fsyncs keep failing, reads go on.
		for _, cmd := range []string{`echo late >> "$M/mix/0/data"`, `sync "$M/mix/0/data"`, `sync "$M/mix/0/data"`} {
			if res := r.m.sh(cmd); res.code == 0 || !strings.Contains(res.err, "Input/output error") {
				t.Fatalf("%s after a failed fsync: exit %d, %q; want EIO", cmd, res.code, res.err)
			}
		}
		r.oracleReadOnly()
		if !strings.Contains(r.m.daemonLog(), "partition fenced") {
			t.Errorf("the daemon did not log the fence:\n%s", r.m.daemonLog())
		}
		// Restart without the fault (the SIGKILL keeps it from flushing
		// anything at close): recovery from disk, then the oracle.
		r.killDaemon()
		r.restart()
		r.oracle(false)
	}
	r.figures("F10")
}

// TestFaultFencedReadUpToDamage: on a fenced partition (an fsync failed)
// whose log ends in a damaged batch (pages the failing filesystem lost,
// F9), a new `cat data` returns every line before that batch, then EIO.
// data used to open through the page cache there too, where a READ that
// meets damage fails whole: the page holding the last good lines and the
// start of the damage read as EIO, and F9 caught a fsync-acked line that
// could not be read until a remount (1 run in ~40).
func TestFaultFencedReadUpToDamage(t *testing.T) {
	faultNeedRoot(t)
	t.Setenv("SEGFS_FAULT_FSYNC_AFTER", "0")
	m := mntNew(t)
	os.Unsetenv("SEGFS_FAULT_FSYNC_AFTER")
	m.ok(`mkdir "$M/t" && seq 1 100 >> "$M/t/0/data" && seq 101 200 >> "$M/t/0/data"`)
	if res := m.sh(`sync "$M/t/0/data"`); res.code == 0 || !strings.Contains(res.err, "Input/output error") {
		t.Fatalf("fsync with the fault seam: exit %d, %q; want EIO", res.code, res.err)
	}
	// Damage the last batch (seq 101 200) in the page cache the daemon
	// reads, as lost pages read back.
	seg := filepath.Join(m.data, "t-0", "00000000000000000000.log")
	f, err := os.OpenFile(seg, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, 8), st.Size()-8); err != nil {
		t.Fatal(err)
	}
	f.Close()
	res := m.sh(`cat "$M/t/0/data"`)
	if res.code == 0 || !strings.Contains(res.err, "Input/output error") {
		t.Fatalf("cat of a log ending in a damaged batch: exit %d, %q; want EIO", res.code, res.err)
	}
	want := m.ok(`seq 1 100`)
	if res.out != want {
		t.Fatalf("cat returned %d bytes before EIO (%q...), want the %d bytes of lines 1-100", len(res.out), strings.SplitN(res.out, "\n", 2)[0], len(want))
	}
}
