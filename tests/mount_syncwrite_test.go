package tests

import (
	"path/filepath"
	"strconv"
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

// TestMountSyncWriteUnfinishedLine: an unfinished last line, which becomes a
// record only when its descriptor is closed, is on disk when close(2)
// returns if its writer asked for durability: the file was opened O_DSYNC
// or O_SYNC, or was fsynced while the line was unfinished (also by a
// pwritev2 with RWF_DSYNC). The kernel
// sends RELEASE, which stored the line, after close(2) returned, and
// nothing synced it: a power cut right after `os.write(fd, b"no newline");
// os.close(fd)` on an O_DSYNC descriptor lost the line.
//
// fsync(2) itself does not make an unfinished line a record: it is not
// one yet, and ending it there would split a line the writer is still
// writing into two records (Kafka's consumers would see two messages).
// The fsync owes it, though, and the close pays: "fsync mid-line" below is
// one record, and the close that ends "fsynced tail" syncs it.
//
// FLUSH, where the line is stored, comes for every close of every dup of
// the open file, and the server cannot tell the last close from the
// others: for such a descriptor a close(2) by the process that opened it
// ends the line. So the dup's close below stores "dup" as a record of its
// own, and the bytes written after it start a new line. Closes by other
// processes (a spawned program's close-on-exec) do not end it.
func TestMountSyncWriteUnfinishedLine(t *testing.T) {
	disk := faultLoopDisk(t, "xfs", 320)
	m := mntAt(t, filepath.Join(disk.dir, "data"))
	m.ok(`mkdir "$M/s"`)
	want := ""
	// Each case is followed by a power cut: a later synced write would
	// sync the line of an earlier case too.
	for _, c := range []struct{ name, py, adds string }{
		{"O_DSYNC", `
fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_DSYNC)
os.write(fd, b"no newline")
os.close(fd)
`, "no newline\n"},
		{"O_SYNC", `
fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_SYNC)
os.write(fd, b"sync line\nsync tail")
os.close(fd)
`, "sync line\nsync tail\n"},
		{"fsync", `
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
os.write(fd, b"fsync ")
os.fsync(fd)
if text().endswith(b"fsync \n"):
    sys.exit("fsync made the unfinished line a record: %r" % text())
os.write(fd, b"mid-line\nfsynced tail")
os.fsync(fd)
os.close(fd)
`, "fsync mid-line\nfsynced tail\n"},
		// A pwritev2 with RWF_DSYNC is synced as an fsync would be
		// (syncwrite.go), and owes its unfinished line as one does.
		{"RWF_DSYNC", `
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
os.pwritev(fd, [b"rwf ", b"partial"], 0, os.RWF_DSYNC)
os.close(fd)
`, "rwf partial\n"},
	} {
		m.ok(`python3 -c '
import os, sys
path = sys.argv[1]
def text():
    with open(path, "rb") as f:
        return f.read()
` + c.py + `' "$M/s/0/data"`)
		want += c.adds
		if got := m.ok(`cat "$M/s/0/data"`); got != want {
			t.Fatalf("%s: data = %q, want %q", c.name, got, want)
		}
		// The power cut, at once.
		disk.shutdown()
		m.kill9()
		disk.cycle()
		m.mount()
		if got := m.ok(`cat "$M/s/0/data"`); got != want {
			t.Fatalf("%s: after the power cut data = %q, want %q (close(2) returned before it)", c.name, got, want)
		}
	}

	// A close by the writer ends the line, also a dup's, and syncs it.
	// A close by another process does not: here Python's subprocess
	// spawns programs, which close their inherited copy of the
	// descriptor at exec (close-on-exec), and one of them appends and
	// closes a line of its own, which is stored first (its close came
	// first).
	m.ok(`python3 -c '
import os, subprocess, sys
path, status, end = sys.argv[1], sys.argv[2], int(sys.argv[3])
def durable(n):
    with open(status) as f:
        st = dict(l.strip().split("=", 1) for l in f if "=" in l)
    if st["recovery.point"] != st["log.end.offset"] or st["log.end.offset"] != str(n):
        sys.exit("status says %r, want the log synced up to %d" % (st, n))
fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_DSYNC)
os.write(fd, b"dup")
os.close(os.dup(fd))
durable(end + 1)
os.write(fd, b"after dup\n")
os.write(fd, b"spawn ")
subprocess.run(["true"], check=True)
os.write(fd, b"kept\n")
os.write(fd, b"mine")
subprocess.run(["sh", "-c", "printf theirs >> \"$0\"", path], check=True)
os.close(fd)
durable(end + 5)
' "$M/s/0/data" "$M/s/0/status" ` + strconv.Itoa(len(mntLines(want))))
	want += "dup\nafter dup\nspawn kept\ntheirs\nmine\n"
	if got := m.ok(`cat "$M/s/0/data"`); got != want {
		t.Fatalf("data = %q, want %q", got, want)
	}
	disk.shutdown()
	m.kill9()
	disk.cycle()
	m.mount()
	if got := m.ok(`cat "$M/s/0/data"`); got != want {
		t.Fatalf("after the power cut data = %q, want %q", got, want)
	}
}
