package tests

import (
	"strings"
	"testing"
)

// TestMountSeekDataHole: lseek's SEEK_DATA and SEEK_HOLE (cp, tar --sparse,
// grep's hole check) answer from the open file's own text, as on ext4: a
// text has no holes, so SEEK_DATA returns the offset and SEEK_HOLE the
// file's end, and both fail with ENXIO at or past the end. They were left
// to go-fuse, which asked for the node's attributes without the handle: on
// a data file held open across a new generation (here a key.separator
// change) both failed with "Stale file handle", and SEEK_HOLE at the end
// returned the end instead of ENXIO.
func TestMountSeekDataHole(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/q" && seq 1 3 >> "$M/q/0/data"`)
	out := m.ok(`cd "$M/q" && python3 -c '
import os, time
def seeks(fd):
    size = os.fstat(fd).st_size
    res = []
    for whence, off in ((os.SEEK_DATA, 0), (os.SEEK_DATA, 2), (os.SEEK_HOLE, 0), (os.SEEK_HOLE, 2),
                        (os.SEEK_DATA, size), (os.SEEK_HOLE, size), (os.SEEK_HOLE, size + 1)):
        try:
            got = os.lseek(fd, off, whence)
            res.append("end" if got == size else str(got))
        except OSError as e:
            res.append(os.strerror(e.errno))
    return " ".join(f"[{r}]" for r in res)
old = os.open("0/data", os.O_RDONLY)
os.read(old, 100)
status = os.open("0/status", os.O_RDONLY)
print("data", seeks(old))
print("status", seeks(status))
with open("config", "w") as f:
    f.write("key.separator=:\n")
with open("0/data", "a") as f:
    f.write("k:v\n")
time.sleep(0.05)  # past the clock tick the kernel keeps the old size for
print("old data", seeks(old))
'`)
	const want = "[0] [2] [end] [end] [No such device or address] [No such device or address] [No such device or address]"
	for _, name := range []string{"data", "status", "old data"} {
		found := false
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if rest, ok := strings.CutPrefix(line, name+" "); ok {
				found = true
				if rest != want {
					t.Errorf("lseek SEEK_DATA/SEEK_HOLE on %s: %s, want %s", name, rest, want)
				}
			}
		}
		if !found {
			t.Errorf("no results for %s in %q", name, out)
		}
	}
}
