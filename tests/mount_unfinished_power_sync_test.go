package tests

import (
	"os"
	"path/filepath"
	"testing"
)

// unfinishedSyncPy writes argv[2] ("abc", no newline) to the data file at
// argv[1], through a descriptor opened O_DSYNC if argv[3] is "dsync",
// else fsyncing it afterwards, then argv[4] if given (unsynced), says
// "ready" and holds the file open.
const unfinishedSyncPy = `
import os, sys
flags = os.O_WRONLY | os.O_APPEND
if sys.argv[3] == "dsync":
    flags |= os.O_DSYNC
fd = os.open(sys.argv[1], flags)
os.write(fd, sys.argv[2].encode())
if sys.argv[3] == "fsync":
    os.fsync(fd)
if len(sys.argv) > 4:
    os.write(fd, sys.argv[4].encode())
print("ready", flush=True)
sys.stdin.readline()
`

// A line its writer made durable while unfinished (fsync(2) of its
// descriptor, or a write through an O_DSYNC one) survives a power cut
// even when the journal is behind the log because of other writers'
// later appends: fsync returned success, so "abc" must come back as a
// record, once, after the other writer's lines. The writeback order is
// made certain: after the writer's sync, another writer appends whole
// lines (their marks in the journal's page cache), the segment alone is
// fsynced, and the power is cut. "after a flush": everything appended
// before the line was already durable (`sync data`), so the writer's
// fsync has no new record to make durable, only the line. "ended": the
// writer ends its synced line before the other writer's appends (not
// synced itself): its start must not come back as a second record.
func TestUnfinishedLinePowerCutSyncedLineKept(t *testing.T) {
	unfinishedNeedPython3(t)
	for _, tc := range []struct{ name, how, before, then, want string }{
		{"fsync", "fsync", "", "", "first|b1|b2|abc"},
		{"fsync after a flush", "fsync", `sync "$M/t/0/data"`, "", "first|b1|b2|abc"},
		{"O_DSYNC", "dsync", "", "", "first|b1|b2|abc"},
		{"O_DSYNC after a flush", "dsync", `sync "$M/t/0/data"`, "", "first|b1|b2|abc"},
		{"fsync, ended", "fsync", "", "def\n", "first|abcdef|b1|b2"},
		{"fsync, ended with a new line", "fsync", "", "def\ngh", "first|abcdef|b1|b2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			disk := faultLoopDisk(t, "xfs", 320)
			data := filepath.Join(disk.dir, "data")
			m := mntAt(t, data)
			m.ok(`mkdir "$M/t" && echo first >> "$M/t/0/data"`)
			if tc.before != "" {
				m.ok(tc.before)
			}
			args := []string{"abc", tc.how}
			if tc.then != "" {
				args = append(args, tc.then)
			}
			py := startUnfinishedPy(t, unfinishedSyncPy, m.path("t", "0", "data"), args...)
			powerCutAfterOtherWriter(t, m, disk, data, py, tc.want)
		})
	}
}

// powerCutAfterOtherWriter is the end of the synced-line power-cut tests:
// another writer appends b1 and b2, the segment (not the journal) is
// synced, the disk is cut off under the daemon, which is killed with the
// python writer, and after a power cycle and a remount the partition's
// records must be want.
func powerCutAfterOtherWriter(t *testing.T, m *mnt, disk *faultDisk, data string, py *unfinishedPy, want string) {
	t.Helper()
	m.ok(`echo b1 >> "$M/t/0/data" && echo b2 >> "$M/t/0/data"`)
	seg, err := os.Open(filepath.Join(data, "t-0", "00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}
	if err := seg.Sync(); err != nil {
		t.Fatal(err)
	}
	seg.Close()
	disk.shutdown()
	m.kill9()
	py.stop()
	disk.cycle()
	m.mount()
	wantRecords(t, m, "t", "records after the power cut", want)
}
