package tests

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestMountSyncWrites: a write(2) to data opened O_DSYNC or O_SYNC (`dd
// oflag=dsync`), or a pwritev2 with RWF_DSYNC, returns only once its lines
// are on disk, as fsync(data) would make them. Every writer of data is
// direct I/O, where the kernel leaves the sync to the server; segfs
// ignored it, so status showed recovery.point behind the lines just
// written, and a power cut right after the writes returned lost them.
// The data dir is on a loop xfs that `xfs_io -x -c shutdown` stops
// without flushing (faultDisk.shutdown), then the daemon is SIGKILLed and
// the disk mounted again.
func TestMountSyncWrites(t *testing.T) {
	disk := faultLoopDisk(t, "xfs", 320)
	m := mntAt(t, filepath.Join(disk.dir, "data"))
	m.ok(`mkdir "$M/s"`)
	durable := func(what string) {
		t.Helper()
		st := m.ok(`cat "$M/s/0/status"`)
		var end, rp string
		for _, l := range strings.Split(st, "\n") {
			if v, ok := strings.CutPrefix(l, "log.end.offset="); ok {
				end = v
			}
			if v, ok := strings.CutPrefix(l, "recovery.point="); ok {
				rp = v
			}
		}
		if end == "" || rp != end {
			t.Fatalf("after %s returned, status says recovery.point=%s, log.end.offset=%s: the lines are not on disk\n%s", what, rp, end, st)
		}
	}
	m.ok(`printf 'dsync 1\ndsync 2\n' | dd of="$M/s/0/data" oflag=dsync,append conv=notrunc status=none`)
	durable("dd oflag=dsync")
	m.ok(`echo sync | dd of="$M/s/0/data" oflag=sync,append conv=notrunc status=none`)
	durable("dd oflag=sync")
	// Per write, on a descriptor opened without O_DSYNC: an earlier
	// plain write of the same descriptor goes to disk with it.
	m.ok(`python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
os.write(fd, b"plain\n")
os.pwritev(fd, [b"rwf ", b"dsync\n"], 0, os.RWF_DSYNC)
' "$M/s/0/data"`)
	durable("pwritev2 RWF_DSYNC")

	// The power cut, at once.
	disk.shutdown()
	m.kill9()
	disk.cycle()
	m.mount()
	want := "dsync 1\ndsync 2\nsync\nplain\nrwf dsync\n"
	if got := m.ok(`cat "$M/s/0/data"`); got != want {
		t.Fatalf("after the power cut data = %q, want %q (every synchronous write returned before it)", got, want)
	}
}
