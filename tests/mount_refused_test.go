package tests

import (
	"strings"
	"testing"
	"time"
)

// TestMountRefusedLineKeepsPartial: on a compacted topic a write whose
// later line has no key is refused (EINVAL) and stores nothing, but the
// unfinished line an earlier write() was told was taken stays: the writer
// resends the good part and the record is whole, and a following write is
// not refused for the refused one.
func TestMountRefusedLineKeepsPartial(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/cmp" && printf 'cleanup.policy=compact\nkey.separator==\n' > "$M/cmp/config"`)
	d := `"$M/cmp/0/data"`
	out := m.ok(`exec 3>>` + d + `
printf 'user1=al' >&3
# /usr/bin/printf: each write reports its own status (bash's builtin keeps
# reporting a failure after one).
/usr/bin/printf 'ice\nbroken\n' >&3 2>/dev/null && echo refused-line-accepted
/usr/bin/printf 'ice\n' >&3 || echo resend-failed
/usr/bin/printf 'user2=bob\n' >&3 || echo next-write-failed
exec 3>&-
cat ` + d)
	if out != "user1=alice\nuser2=bob\n" {
		t.Fatalf("want the records user1=alice and user2=bob; got %q", out)
	}
}

// TestMountLineLimitAtWrite: a line that could not fit a batch of its own
// under max.message.bytes is refused by the write(2) that brings it, also
// when it is still unfinished (no error could reach the writer at close),
// and nothing of it is stored; a line just short enough is stored.
func TestMountLineLimitAtWrite(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/small" && echo max.message.bytes=1271 > "$M/small/config"`)
	d := `"$M/small/0/data"`
	// 1271 - 61 (batch header) - 23 (most record framing) = 1187.
	m.fails(`printf '%s' "$(head -c 1200 /dev/zero | tr '\0' a)" >> `+d, "Message too long")
	m.ok(`printf '%s\n' "$(head -c 1187 /dev/zero | tr '\0' b)" >> ` + d)
	if got := m.ok(`cat ` + d); got != strings.Repeat("b", 1187)+"\n" {
		t.Fatalf("want one line of 1187 b; got %d bytes", len(got))
	}
}

// TestMountKeylessUnfinishedLineFailsClose: on a compacted topic an
// unfinished last line without a key cannot become a record at RELEASE,
// which comes after close(2) returned; close(2) now fails with EINVAL
// (from FLUSH), so a program that checks it learns the line was not
// stored. It used to succeed, the line vanishing with only a warning in
// the daemon's log. A keyed unfinished line is stored as before, and an
// unfinished line whose key comes through the same open file after a dup
// of it was closed (bash runs /bin/true with fd 3 inherited) is whole.
func TestMountKeylessUnfinishedLineFailsClose(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/cmp" && printf 'cleanup.policy=compact\nkey.separator==\n' > "$M/cmp/config"`)
	d := m.path("cmp", "0", "data")
	out := m.ok(`python3 - "` + d + `" <<'PY'
import errno, sys
f = open(sys.argv[1], "a")
f.write("no key")
try:
    f.close()
    print("close succeeded")
except OSError as e:
    print("close failed:", errno.errorcode[e.errno])
f = open(sys.argv[1], "a")
f.write("k1=v1")
f.close()
print("keyed closed")
PY
exec 3>>"` + d + `"
printf 'k2' >&3
/bin/true
printf '=v2\n' >&3
exec 3>&-
`)
	if out != "close failed: EINVAL\nkeyed closed\n" {
		t.Fatalf("python: %q", out)
	}
	// The keyed unfinished line becomes a record at RELEASE, just after
	// close(2) returned (FUSE-NOTES §1.1).
	want := "k1=v1\nk2=v2\n"
	var got string
	if !mntWaitFor(10*time.Second, func() bool { got = m.ok(`cat "` + d + `"`); return got == want }) {
		t.Fatalf("records: %q, want %q", got, want)
	}
}

// TestMountUnfinishedLineTooLongAtClose: an unfinished line taken under
// one max.message.bytes and too long for a lower one set before the close
// cannot become a record at RELEASE; close(2) fails with EMSGSIZE, as the
// write(2) would have, and nothing is stored.
func TestMountUnfinishedLineTooLongAtClose(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/q"`)
	out := m.ok(`python3 - "$M/q" <<'PY'
import errno, sys
d = sys.argv[1]
f = open(d + "/0/data", "a")
f.write("x" * 2000)
f.flush()
with open(d + "/config", "w") as c:
    c.write("max.message.bytes=1000\n")
try:
    f.close()
    print("close succeeded")
except OSError as e:
    print("close failed:", errno.errorcode[e.errno])
PY
`)
	if out != "close failed: EMSGSIZE\n" {
		t.Fatalf("python: %q", out)
	}
	if got := m.ok(`grep -c . "$M/q/0/data" || true`); got != "0\n" {
		t.Fatalf("%s lines stored", got)
	}
}
