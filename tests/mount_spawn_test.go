package tests

import "testing"

// TestMountUnfinishedLineSpawnsDoNotStall checks that a writer holding an
// unfinished line while it runs programs does not hold up the partition's
// other writers. Each program Python's subprocess spawns closes its
// inherited copy of the descriptor at exec (close-on-exec), a FLUSH that
// finds the line unfinished; the server can tell it came from another
// process than the opener, which still holds the file, so no RELEASE is
// coming. Such a FLUSH registered the handle with closers, and the next
// write of another process waited closeOrderWait (200 ms) for a RELEASE
// that never came, once per spawn: the daemon's debug log says so ("no
// RELEASE after a close ..."), which is what this test looks for rather
// than timing the writes, before the writer's own close.
//
// A close by another process after the opener closed its own copy may be
// the last one (a child that was handed the file outlives the opener's
// close), and still orders the line it ends before what follows.
func TestMountUnfinishedLineSpawnsDoNotStall(t *testing.T) {
	m := mntNew(t, "--debug")
	m.ok(`mkdir "$M/sp"`)
	m.ok(`python3 -c '
import os, subprocess, sys
path, log = sys.argv[1], sys.argv[2]
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
os.write(fd, b"partial")
for i in range(5):
    subprocess.run(["true"], check=True)
    subprocess.run(["sh", "-c", "echo other$0 >> \"$1\"", str(i), path], check=True)
# Checked here, before the closes below, after which a slow RELEASE
# may rightly be waited for.
with open(log) as f:
    for l in f:
        if "no RELEASE after a close" in l:
            sys.exit("another writer waited for a RELEASE after a spawned program closed the file:\n" + l)
os.write(fd, b" end\n")
os.close(fd)

# The parent hands the file to a child and closes its copy first; the
# child ends a line of its own as it exits, and a line appended after
# that exit comes after it.
with open(path, "ab", buffering=0) as f:
    p = subprocess.Popen(["sh", "-c", "read x; printf theirs"], stdin=subprocess.PIPE, stdout=f)
p.communicate(b"go\n")
if p.returncode != 0:
    sys.exit("child failed")
subprocess.run(["sh", "-c", "echo after >> \"$0\"", path], check=True)
' "$M/sp/0/data" "$D/segfs-mount.out"`)
	want := "other0\nother1\nother2\nother3\nother4\npartial end\ntheirs\nafter\n"
	if got := m.ok(`cat "$M/sp/0/data"`); got != want {
		t.Fatalf("data = %q, want %q", got, want)
	}
}
