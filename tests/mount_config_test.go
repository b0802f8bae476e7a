package tests

import (
	"strings"
	"testing"
	"time"
)

// TestMountConfigUnfinishedUnknownKey: `printf 'KEY=VALUE' > config`
// writes a line without its newline, which used to wait for close(2); a
// shell ignores close's error, so a misspelt key exited 0 and changed
// nothing. An unfinished line whose key is complete (the '=' came) and
// unknown, or whose value can no longer become valid, now fails the
// write(2) that brings it with EINVAL, and nothing of that write is
// applied; so does one without '=' that no key starts with. A key or a line split over several writes
// still works, and a valid unfinished line is still applied at close.
func TestMountConfigUnfinishedUnknownKey(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/c"`)
	m.fails(`printf 'retension.ms=1000' > "$M/c/config"`, "Invalid argument")
	// A known key whose value cannot become valid, however it goes on.
	m.fails(`printf 'retention.ms=abc' > "$M/c/config"`, "Invalid argument")
	m.fails(`printf 'compression.type=brotli' > "$M/c/config"`, "Invalid argument")
	// No '=' yet, and no key starts with what came: the close(2) alone
	// refused it, and the shell exited 0.
	m.fails(`printf bogus > "$M/c/config"`, "Invalid argument")
	m.fails(`printf 'retention.ms x' >> "$M/c/config"`, "Invalid argument")
	// One write(2) of several lines: all or nothing.
	m.fails(`python3 -c 'import os,sys; fd=os.open(sys.argv[1], os.O_WRONLY); os.write(fd, b"segment.ms=70000\nbogus=1")' "$M/c/config"`, "Invalid argument")
	got := m.ok(`grep -E '^(retention|segment)\.ms=|^compression\.type=' "$M/c/config"`)
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

// TestMountRetentionBytesNegative: Kafka takes any negative
// retention.bytes (it has no validator) and reads it as no size limit;
// `echo retention.bytes=-5 >> config` used to fail with EINVAL. The value
// reads back, and retention passes leave the partition whole. Kafka's
// cross-key rule, min.compaction.lag.ms <= max.compaction.lag.ms, is
// refused with EINVAL.
func TestMountRetentionBytesNegative(t *testing.T) {
	m := mntNew(t, cleanerFlags...)
	m.ok(`mkdir "$M/rn" "$M/rc"
printf 'segment.bytes=1024\nretention.ms=-1\nfile.delete.delay.ms=0\n' > "$M/rn/config"
printf 'segment.bytes=1024\nretention.ms=-1\nretention.bytes=1\nfile.delete.delay.ms=0\n' > "$M/rc/config"
echo retention.bytes=-5 >> "$M/rn/config"
seq -f 'line %05g' 1 300 >> "$M/rn/0/data"`)
	if got := m.ok(`grep '^retention.bytes=' "$M/rn/config"`); got != "retention.bytes=-5\n" {
		t.Fatalf("config after echo retention.bytes=-5: %q", got)
	}
	m.fails(`printf 'min.compaction.lag.ms=10\nmax.compaction.lag.ms=5\n' >> "$M/rn/config"`, "Invalid argument")
	// Every retention pass visits every partition: once the control topic
	// rc has had two passes that deleted something, each after its own
	// write, rn has been through a whole pass with retention.bytes=-5.
	for i := 1; i <= 2; i++ {
		m.ok(`seq -f 'c %05g' 1 300 >> "$M/rc/0/data"`)
		if !mntWaitFor(20*time.Second, func() bool { return m.cleanerTotals("retention", "rc-0").passes >= i }) {
			t.Fatalf("no retention pass %d of the control topic", i)
		}
	}
	st := m.status("rn")
	if st["log.start.offset"] != 0 || st["log.end.offset"] != 300 {
		t.Errorf("retention.bytes=-5 deleted records: status %v", st)
	}
	if tot := m.cleanerTotals("retention", "rn-0"); tot.segmentsDeleted != 0 {
		t.Errorf("retention.bytes=-5: %d segments deleted", tot.segmentsDeleted)
	}
}

// TestMountKeySeparatorOpenReader: an open data file keeps the rendering
// it was opened with when key.separator changes, for the records it has
// and for those appended later, so that a byte's position in it never
// changes (DESIGN.md "Stable positions"): a `tail -f` started before the
// change goes on printing KEY<old>VALUE, while a new open renders every
// record with the new separator. Writers split lines with the separator in
// force at each write.
func TestMountKeySeparatorOpenReader(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/ks" && echo key.separator=: > "$M/ks/config" && printf 'a:1\nb:2\n' >> "$M/ks/0/data"`)
	got := m.ok(`exec 3< "$M/ks/0/data"; cat <&3; echo --;` +
		`echo key.separator=== > "$M/ks/config" && printf 'c==3\nd:4\n' >> "$M/ks/0/data";` +
		`cat <&3; echo --; cat "$M/ks/0/data"`)
	want := "a:1\nb:2\n--\nc:3\nd:4\n--\na==1\nb==2\nc==3\nd:4\n"
	if got != want {
		t.Fatalf("a reader open across a key.separator change:\n%s\nwant\n%s", got, want)
	}
}

// TestMountReadAfterAppendThroughOtherInode: a descriptor opened for
// reading, then lines appended by another process, whose open got the
// file as another kernel inode (a writer never shares one with cached
// readers, fs/doc.go "Caching"). Once the append's write(2) returned, the
// reader's next `cat <&3` must print the line. The kernel kept the
// reader's inode's 1 ns attributes until its next clock tick, and the
// notifier's invalidation came up to 50 ms later, so the cat printed
// nothing about a third of the time; each round here had that chance.
func TestMountReadAfterAppendThroughOtherInode(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/ro" && echo first >> "$M/ro/0/data"`)
	m.ok(`exec 3< "$M/ro/0/data"; cat <&3 > /dev/null
		for i in $(seq 1 40); do
			echo "line $i" >> "$M/ro/0/data"
			got=$(cat <&3)
			if [ "$got" != "line $i" ]; then
				echo "round $i: the reader read '$got' after the append of 'line $i' returned" >&2
				exit 1
			fi
		done`)
}
