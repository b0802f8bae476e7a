package tests

import (
	"strings"
	"testing"
)

// TestMountConfigUnfinishedUnknownKey: `printf 'KEY=VALUE' > config`
// writes a line without its newline, which used to wait for close(2); a
// shell ignores close's error, so a misspelt key exited 0 and changed
// nothing. An unfinished line whose key is complete (the '=' came) and
// unknown, or whose value can no longer become valid, now fails the
// write(2) that brings it with EINVAL, and nothing of that write is
// applied. A key or a line split over several writes
// still works, and a valid unfinished line is still applied at close.
func TestMountConfigUnfinishedUnknownKey(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/c"`)
	m.fails(`printf 'retension.ms=1000' > "$M/c/config"`, "Invalid argument")
	// A known key whose value cannot become valid, however it goes on.
	m.fails(`printf 'retention.ms=abc' > "$M/c/config"`, "Invalid argument")
	m.fails(`printf 'compression.type=brotli' > "$M/c/config"`, "Invalid argument")
	// One write(2) of several lines: all or nothing.
	m.fails(`python3 -c 'import os,sys; fd=os.open(sys.argv[1], os.O_WRONLY); os.write(fd, b"segment.ms=70000\nbogus=1")' "$M/c/config"`, "Invalid argument")
	got := m.ok(`grep -E '^(retention|segment)\.ms=|^compression' "$M/c/config"`)
	if got != "compression.type=producer\nretention.ms=604800000\nsegment.ms=604800000\n" {
		t.Fatalf("a refused write changed the config:\n%s", got)
	}
	// Split keys and values across writes; the last line unfinished.
	m.ok(`python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
for c in [b"reten", b"tion.ms", b"=5", b"000\nsegment.", b"ms=7", b"0000"]:
    os.write(fd, c)
os.close(fd)' "$M/c/config"`)
	m.ok(`printf '# a comment = not a key' > "$M/c/config"`)
	got = m.ok(`grep -E '^(retention|segment)\.ms=' "$M/c/config"`)
	if got != "retention.ms=5000\nsegment.ms=70000\n" {
		t.Fatalf("split writes:\n%s", got)
	}
	if log := m.daemonLog(); !strings.Contains(log, `unknown key \"retension.ms\"`) {
		t.Errorf("the daemon log does not name the refused key:\n%s", log)
	}
}

// TestMountKeySeparatorChangeSeenAtOnce: a read of data opened after the
// write(2) that changes key.separator returned renders with the new
// separator. A lookup that retried an ESTALE gave its node a pass for one
// stale request; a fresh open left it unspent, and the next separator
// change then let that node serve its old text from the page cache (7 of
// 80 `tail -n1` in a row of changes showed the old separator).
func TestMountKeySeparatorChangeSeenAtOnce(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/ks" && echo key.separator=: > "$M/ks/config" && printf 'a1:b1\na2:b2\n' >> "$M/ks/0/data"`)
	out := m.ok(`cat "$M/ks/0/data" > /dev/null
bad=0
for i in $(seq 1 100); do
	if [ $((i % 2)) = 0 ]; then s=':'; else s='|'; fi
	echo "key.separator=$s" >> "$M/ks/config"
	got=$(tail -n1 "$M/ks/0/data")
	[ "$got" = "a2${s}b2" ] || { bad=$((bad + 1)); echo "change $i: tail -n1 printed $got"; }
	got=$(cat "$M/ks/0/data" | head -n1)
	[ "$got" = "a1${s}b1" ] || { bad=$((bad + 1)); echo "change $i: cat printed $got"; }
done
echo "stale=$bad"`)
	if !strings.HasSuffix(out, "stale=0\n") {
		t.Fatalf("reads opened after a key.separator change showed the old separator:\n%s", out)
	}
}
