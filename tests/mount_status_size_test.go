package tests

import (
	"strings"
	"testing"
)

// TestMountStatusSizeFollowsText: the size stat and fstat report for
// status is the length of the text a read returns, as for config and data.
// status's size was cached for a second and taken from the text at each
// GETATTR: right after an append changed the text's length, `tar` (which
// reads st_size bytes) archived status cut in the middle of a line, and an
// open status file's fstat disagreed with what its reads returned.
func TestMountStatusSizeFollowsText(t *testing.T) {
	m := mntNew(t)
	// The first append turns first.timestamp and last.timestamp from -1
	// into 13 digits: the text grows by 24 bytes. The kernel keeps even a
	// 1 ns attribute timeout for the rest of its clock tick (at most 10
	// ms), so tar runs a tick after the stat; the size used to be cached
	// for a second.
	m.ok(`mkdir "$M/q" "$M/r"`)
	got := m.ok(`cd "$M/q/0" && stat -c %s status >/dev/null && echo x >> data && sleep 0.05 && tar cf - status | tar xOf - 2>/dev/null; echo ---; cat status`)
	archived, now, _ := strings.Cut(got, "---\n")
	if archived != now {
		t.Errorf("tar archived status as\n%s\nwhile it reads\n%s", archived, now)
	}

	// An open status file keeps the text it was opened with, and its
	// fstat reports that text's length.
	out := m.ok(`cd "$M/r/0" && python3 -c '
import os, time
fd = os.open("status", os.O_RDONLY)
with open("data", "a") as f:
    f.write("x\n")
time.sleep(0.05)
size = os.fstat(fd).st_size
text = os.pread(fd, 1 << 16, 0)
print(size, len(text))
'`)
	if f := strings.Fields(out); len(f) != 2 || f[0] != f[1] {
		t.Errorf("fstat of an open status vs the bytes it reads: %q", out)
	}
}
