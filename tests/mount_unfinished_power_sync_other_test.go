package tests

import (
	"path/filepath"
	"testing"
)

// unfinishedOtherSyncPy writes "abc" (no newline) to the data file at
// argv[1] through one descriptor, then, if argv[2] is not "none", fsyncs
// another descriptor of the file opened argv[2] ("rdonly" or "wronly":
// O_WRONLY|O_APPEND, with nothing written through it), says "ready" and
// holds both open.
const unfinishedOtherSyncPy = `
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
os.write(fd, b"abc")
if sys.argv[2] != "none":
    flags = os.O_RDONLY if sys.argv[2] == "rdonly" else os.O_WRONLY | os.O_APPEND
    other = os.open(sys.argv[1], flags)
    os.fsync(other)
print("ready", flush=True)
sys.stdin.readline()
`

// An fsync of data through any descriptor, not only the writer's own,
// makes the writer's unfinished line durable: on a local filesystem an
// fsync covers every byte written to the file, and DESIGN.md promises
// that fsync(data) makes everything appended so far durable. The power
// cut is staged as in TestUnfinishedLinePowerCutSyncedLineKept: after
// the fsync another writer appends whole lines, the segment alone is
// fsynced, and the power is cut, so the journal is behind the log; a
// line that no fsync covered is dropped then, one that an fsync covered
// must come back. It used to be dropped when the fsync came through
// another descriptor ("first|b1|b2").
func TestUnfinishedLinePowerCutOtherDescriptorSynced(t *testing.T) {
	unfinishedNeedPython3(t)
	for _, tc := range []struct{ name, other, sync string }{
		{"fsync of a read-only descriptor", "rdonly", ""},
		{"fsync of another writer's descriptor", "wronly", ""},
		{"sync FILE", "none", `sync "$M/t/0/data"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			disk := faultLoopDisk(t, "xfs", 320)
			data := filepath.Join(disk.dir, "data")
			m := mntAt(t, data)
			m.ok(`mkdir "$M/t" && echo first >> "$M/t/0/data"`)
			py := startUnfinishedPy(t, unfinishedOtherSyncPy, m.path("t", "0", "data"), tc.other)
			if tc.sync != "" {
				m.ok(tc.sync)
			}
			powerCutAfterOtherWriter(t, m, disk, data, py, "first|b1|b2|abc")
		})
	}
}
