package tests

import (
	"os"
	"path/filepath"
	"testing"
)

// unfinishedSyncPy writes argv[2] ("abc", no newline) to the data file at
// argv[1], through a descriptor opened O_DSYNC if argv[3] is "dsync",
// else fsyncing it afterwards, says "ready" and holds the file open.
const unfinishedSyncPy = `
import os, sys
flags = os.O_WRONLY | os.O_APPEND
if sys.argv[3] == "dsync":
    flags |= os.O_DSYNC
fd = os.open(sys.argv[1], flags)
os.write(fd, sys.argv[2].encode())
if sys.argv[3] == "fsync":
    os.fsync(fd)
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
// fsync has no new record to make durable, only the line.
func TestUnfinishedLinePowerCutSyncedLineKept(t *testing.T) {
	unfinishedNeedPython3(t)
	for _, tc := range []struct{ name, how, before string }{
		{"fsync", "fsync", ""},
		{"fsync after a flush", "fsync", `sync "$M/t/0/data"`},
		{"O_DSYNC", "dsync", ""},
		{"O_DSYNC after a flush", "dsync", `sync "$M/t/0/data"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			disk := faultLoopDisk(t, "xfs", 320)
			data := filepath.Join(disk.dir, "data")
			m := mntAt(t, data)
			m.ok(`mkdir "$M/t" && echo first >> "$M/t/0/data"`)
			if tc.before != "" {
				m.ok(tc.before)
			}
			py := startUnfinishedPy(t, unfinishedSyncPy, m.path("t", "0", "data"), "abc", tc.how)
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
			wantRecords(t, m, "t", "records after the power cut", "first|b1|b2|abc")
		})
	}
}
