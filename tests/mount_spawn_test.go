package tests

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

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

// TestMountUnfinishedLineShellDupsDoNotStall is the shell's form of
// TestMountUnfinishedLineSpawnsDoNotStall: a script holds `exec 3>>data`
// with an unfinished line and runs programs. bash runs `printf x >&3` by
// moving fd 1 onto fd 3 and back, and the move back closes a dup of the
// file in the opener's own process. That close counted as the opener's,
// so every program the script ran then closed its inherited fd 3 at exit
// as possibly the last close, and the partition's other writers waited
// closeOrderWait (200 ms) each time for a RELEASE that was not coming: the
// daemon's debug log says so ("no RELEASE after a close ..."), which is
// what this counts rather than timing the writes, before the script's own
// close. The same goes for a line a program started (/usr/bin/printf),
// after a builtin's move back closed a dup with no line pending.
func TestMountUnfinishedLineShellDupsDoNotStall(t *testing.T) {
	m := mntNew(t, "--debug")
	m.ok(`mkdir "$M/sh"`)
	out := m.ok(`d="$M/sh/0/data"
exec 3>>"$d"
printf partial >&3
for i in 1 2 3; do
	/bin/true
	sh -c 'echo other$0 >> "$1"' "a$i" "$d"
	printf . >&3
done
echo " mid" >&3
/usr/bin/printf more >&3
for i in 1 2 3; do
	/bin/true
	sh -c 'echo other$0 >> "$1"' "b$i" "$d"
done
echo "waits: $(grep -c 'no RELEASE after a close' "$D/segfs-mount.out")"
echo " end" >&3
exec 3>&-`)
	if out != "waits: 0\n" {
		t.Errorf("the other writers waited for a RELEASE while the script held the file: %q\n%s", out, m.daemonLog())
	}
	want := "othera1\nothera2\nothera3\npartial... mid\notherb1\notherb2\notherb3\nmore end\n"
	if got := m.ok(`cat "$M/sh/0/data"`); got != want {
		t.Fatalf("data = %q, want %q", got, want)
	}
}

// TestMountUnfinishedLineOrderedBesideHeldFile checks that the unfinished
// line `printf a >> data` ends is still stored before what `echo b >>
// data` appends next when the shell holds another open of the same file
// (exec 4>>data): the server looks in the shell's descriptors for one of
// the open file being closed, to tell a dup's close from the last one, and
// must not take fd 4, another open of data, for it. Two loops at once, as
// in TestMountUnfinishedLineOrderedByClose, where a b landed before its a
// dozens of times per thousand pairs when a close was not waited for.
func TestMountUnfinishedLineOrderedBesideHeldFile(t *testing.T) {
	m := mntNew(t)
	wantPairsOrdered(t, m, []string{"h1", "h2"}, 400, `exec 4>>"$d"; echo held >&4`, `exec 4>&-`)
	for _, tp := range []string{"h1", "h2"} {
		if got := m.ok(`head -n1 "$M/` + tp + `/0/data"`); got != "held\n" {
			t.Errorf("%s: first line %q, want held", tp, got)
		}
	}
}

// TestMountUnfinishedLineDupClosedAfterOpenerThreadEnded: the server
// looks for the opener's descriptors by the thread that opened the file,
// which may have ended while its process goes on (a Python thread opened
// it). A dup the process then closes with the line unfinished is found
// still held through the closing thread: without that, each such close
// made the partition's other writer wait closeOrderWait for a RELEASE
// that was not coming (counted from the daemon's debug log, before the
// writer's own close).
func TestMountUnfinishedLineDupClosedAfterOpenerThreadEnded(t *testing.T) {
	m := mntNew(t, "--debug")
	m.ok(`mkdir "$M/th"`)
	m.ok(`python3 -c '
import os, subprocess, sys, threading
path, log = sys.argv[1], sys.argv[2]
# Started first, so that it inherits nothing of the file.
other = subprocess.Popen(["sh", "-c", "while read i; do echo other$i >> \"$0\"; echo done; done", path],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
box = {}
t = threading.Thread(target=lambda: box.update(fd=os.open(path, os.O_WRONLY | os.O_APPEND)))
t.start()
t.join()
fd = box["fd"]
os.write(fd, b"partial")
for i in range(3):
    os.close(os.dup(fd))
    other.stdin.write(f"{i}\n")
    if other.stdout.readline() != "done\n":
        sys.exit("other writer failed")
with open(log) as f:
    for l in f:
        if "no RELEASE after a close" in l:
            sys.exit("another writer waited for a RELEASE after a dup was closed:\n" + l)
os.write(fd, b" end\n")
os.close(fd)
other.stdin.close()
if other.wait() != 0:
    sys.exit("other writer failed")
' "$M/th/0/data" "$D/segfs-mount.out"`)
	want := "other0\nother1\nother2\npartial end\n"
	if got := m.ok(`cat "$M/th/0/data"`); got != want {
		t.Fatalf("data = %q, want %q", got, want)
	}
}

// TestMountUnfinishedLineSamePositionStillOrdered: the server tells a
// dup's close from the last one by finding a descriptor of the open file
// in the closer's process, known only by its position. Two opens of data
// can stand at the same position: the size data reports leaves out
// unfinished lines, so after `exec 4>>data; printf xxxxxxx >&4; stat
// data` the next append starts where fd 4's did, and `printf yyyyyyy >>
// data` leaves its open where fd 4 is. The close of that open, which a
// child still holds, must count as possibly the last, as any close the
// server cannot tell apart does: the next writer waits for its RELEASE
// (closeOrderWait here, once, since the child keeps it: the daemon's
// debug log counts it). Taking fd 4 for it, the server let the next
// writer go at once, so a line such a close ended could land after what
// was appended after it.
func TestMountUnfinishedLineSamePositionStillOrdered(t *testing.T) {
	m := mntNew(t, "--debug")
	m.ok(`mkdir "$M/po"`)
	fifo := filepath.Join(t.TempDir(), "go")
	out := m.ok(`d="$M/po/0/data"
echo first >> "$d"
exec 4>>"$d"
printf xxxxxxx >&4
size=$(stat -c %s "$d")
pos4=$(sed -n 's/^pos:[[:space:]]*//p' /proc/$$/fdinfo/4)
mkfifo "` + fifo + `"
{ printf yyyyyyy; ( read x < "` + fifo + `" ) & } >> "$d"
echo b >> "$d"
echo "$((size + 7)) $pos4 $(grep -c 'no RELEASE after a close' "$D/segfs-mount.out")"
echo go > "` + fifo + `"
wait
echo " end" >&4
exec 4>&-`)
	var next, pos4, waits int
	if _, err := fmt.Sscan(out, &next, &pos4, &waits); err != nil {
		t.Fatalf("script printed %q: %v", out, err)
	}
	if next != pos4 {
		t.Fatalf("the second open ended at %d, fd 4 stands at %d: the kernel no longer takes back a size past an unfinished line, and this test no longer sets up two opens at one position", next, pos4)
	}
	if waits != 1 {
		t.Errorf("the next writer waited %d times for the RELEASE of the open a child still held, want once (the server cannot tell that close from the last)\n%s", waits, m.daemonLog())
	}
	want := "first\nb\nyyyyyyy\nxxxxxxx end\n"
	if got := m.ok(`cat "$M/po/0/data"`); got != want {
		t.Fatalf("data = %q, want %q", got, want)
	}
}

// TestMountUnfinishedLineChildDupCloseKeepsOpenerClosed: a child that was
// handed the file, after the opener closed its own copy, closes a dup it
// made and later its last copy. The dup's close is told apart (the child
// still holds the file), but it must not make the server forget that the
// opener has closed: the child's last close, at its exit, may be the
// file's last (here a grandchild still holds a copy, so the server cannot
// know), and the next writer must wait for its RELEASE, once (the
// daemon's debug log counts it), as it waited for the opener's. The dup's
// close reset what the opener's close had recorded, so the child's exit
// registered nothing, and when it was the last close, its line could land
// after what the next writer appended.
func TestMountUnfinishedLineChildDupCloseKeepsOpenerClosed(t *testing.T) {
	m := mntNew(t, "--debug")
	m.ok(`mkdir "$M/cd"`)
	dir := t.TempDir()
	f1, f2 := filepath.Join(dir, "f1"), filepath.Join(dir, "f2")
	out := m.ok(`d="$M/cd/0/data"
echo first >> "$d"
mkfifo "` + f1 + `" "` + f2 + `"
waits() { grep -c 'no RELEASE after a close' "$D/segfs-mount.out"; }
{ printf a; ( read x < "` + f1 + `"; exec 3>&1; exec 3>&-; ( read y < "` + f2 + `" ) & ) & } >> "$d"
child=$!
cat "$d" > /dev/null
w1=$(waits)
echo go > "` + f1 + `"
wait $child
echo b >> "$d"
echo "$w1 $(waits)"
echo go > "` + f2 + `"`)
	var w1, w2 int
	if _, err := fmt.Sscan(out, &w1, &w2); err != nil {
		t.Fatalf("script printed %q: %v", out, err)
	}
	if w1 != 1 || w2 != 2 {
		t.Errorf("the next writer waited %d times after the opener's close, %d after the child's exit; want 1 and 2 (each close may be the last)\n%s", w1, w2, m.daemonLog())
	}
	if !mntWaitFor(10*time.Second, func() bool { return m.ok(`cat "$M/cd/0/data"`) == "first\nb\na\n" }) {
		t.Fatalf("data = %q, want %q", m.ok(`cat "$M/cd/0/data"`), "first\nb\na\n")
	}
}

// TestMountUnfinishedLineSeekedOpenNotTakenForDup: an open of data that
// has written nothing yet may still stand where another open's appends
// ended: Python's open(p, "a"), as glibc's fopen(p, "a"), seeks to the
// end, and the size data reports leaves out unfinished lines, so once
// another writer's complete line has made up for an unfinished line's
// length, the new open stands where the unfinished line's open does. The
// server knows a descriptor by its position only, so it must not take
// that open's descriptor for a dup of the one being closed: here a child
// still holds the closed open (the server cannot know), and the next
// write waits once for its RELEASE (the daemon's debug log counts it).
// Taking the new open's descriptor for a dup, the server let the next
// write go at once, so when that close was the last, the line it ended
// could land after what was appended after it.
func TestMountUnfinishedLineSeekedOpenNotTakenForDup(t *testing.T) {
	m := mntNew(t, "--debug")
	m.ok(`mkdir "$M/sk"`)
	out := m.ok(`python3 -c '
import os, subprocess, sys
path, log = sys.argv[1], sys.argv[2]
def fdpos(fd):
    with open("/proc/self/fdinfo/%d" % fd) as f:
        return int(f.readline().split()[1])
with open(path, "a") as f:
    f.write("first\n")
a = os.open(path, os.O_WRONLY | os.O_APPEND)
os.write(a, b"xxx")
subprocess.run(["sh", "-c", "echo yy >> \"$0\"", path], check=True)
b = open(path, "ab", buffering=0)
holder = subprocess.Popen(["sh", "-c", "read x"], stdin=subprocess.PIPE, pass_fds=(a,))
if fdpos(a) != fdpos(b.fileno()):
    sys.exit("the opens stand at %d and %d: this test no longer sets up two opens at one position" % (fdpos(a), fdpos(b.fileno())))
os.close(a)
b.write(b"zz\n")
with open(log) as f:
    print(sum("no RELEASE after a close" in l for l in f))
holder.communicate(b"go\n")
b.close()
' "$M/sk/0/data" "$D/segfs-mount.out"`)
	if out != "1\n" {
		t.Errorf("the next write waited %q times for the RELEASE of the open a child still held, want once (the server cannot tell that close from the last)\n%s", out, m.daemonLog())
	}
	want := "first\nyy\nzz\nxxx\n"
	if !mntWaitFor(10*time.Second, func() bool { return m.ok(`cat "$M/sk/0/data"`) == want }) {
		t.Fatalf("data = %q, want %q", m.ok(`cat "$M/sk/0/data"`), want)
	}
}
