package tests

import "testing"

// TestMountTooLongLineSparesNextWrite: a write(2) whose first chunk starts
// a line longer than max.message.bytes fails whole with EMSGSIZE, and the
// next write through the same open file (here another process sharing the
// descriptor, as a logger's children do) is a line of its own. It was
// refused as the long line's tail, so `echo after` failed with "Message
// too long" and the line was lost.
func TestMountTooLongLineSparesNextWrite(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/ll"`)
	out := m.ok(`exec 3>>"$M/ll/0/data"
echo before >&3
python3 -c '
import errno, os
try:
    os.write(3, b"x" * 1100000 + b"\n")
    print("accepted")
except OSError as e:
    print(errno.errorcode[e.errno])
'
echo after >&3
echo after2 >&3
exec 3>&-
cat "$M/ll/0/data"`)
	if want := "EMSGSIZE\nbefore\nafter\nafter2\n"; out != want {
		t.Fatalf("got %q, want %q", out, want)
	}
}
