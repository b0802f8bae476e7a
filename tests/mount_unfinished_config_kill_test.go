package tests

// The journal of unfinished lines against a topic's config changing
// under the held lines, then kill -9: what recovery makes of each line
// is what its writer's close would have made.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// max.message.bytes lowered while three writers hold unfinished lines:
// one now too long (dropped at recovery, with a warning, as its close
// would refuse it with EMSGSIZE), one short (recovered), and one that
// grows past the new limit after the change: that write(2) fails with
// EMSGSIZE and drops the line, the next chunk without a newline is its
// refused tail (EMSGSIZE too), so nothing of it comes back.
func TestUnfinishedMaxMessageLoweredThenKill9(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/t" && echo first >> "$M/t/0/data"`)
	h := startUnfinishedHolder(t, m, `exec 3>>"$M/t/0/data" 4>>"$M/t/0/data" 5>>"$M/t/0/data"
printf '%3000s' a | tr ' ' a >&3
printf 'short' >&4
printf '%500s' d | tr ' ' d >&5
printf 'max.message.bytes=1000\n' > "$M/t/config"
printf '%600s' e | tr ' ' e >&5 2>rc-grow
printf 'tail' >&5 2>rc-tail`)
	for _, f := range []string{"rc-grow", "rc-tail"} {
		b, _ := os.ReadFile(filepath.Join(filepath.Dir(m.dir), f))
		if !strings.Contains(string(b), "Message too long") {
			t.Fatalf("%s: %q, want Message too long", f, b)
		}
	}
	remountAfterKill(t, m, h)
	wantRecords(t, m, "t", "records", "first|short")
	wantDaemonLog(t, m, "a line of 3000 bytes exceeds max.message.bytes=1000", "no warning for the dropped line")
	m.ok(`echo after >> "$M/t/0/data"`)
	m.unmount()
	journalEmpty(t, filepath.Join(m.data, "t-0"))
}

// A compacted topic (key.separator =): a key split across writes is
// recovered whole ("ke" then "y=va"); a writer whose complete keyed line
// was stored keeps it once and its keyless unfinished line after it is
// dropped; a line whose separator arrived in its last write ("nokey",
// then "=") is keyed and recovered. Then kill -9 again with a fresh
// keyed line: only that one comes back.
func TestUnfinishedCompactedSplitKeysKill9Twice(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/ck" && printf 'cleanup.policy=compact\nkey.separator==\n' > "$M/ck/config" && echo k0=first >> "$M/ck/0/data"`)
	h := startUnfinishedHolder(t, m, `exec 3>>"$M/ck/0/data" 4>>"$M/ck/0/data" 5>>"$M/ck/0/data"
printf 'ke' >&3
printf 'k2=' >&4
printf 'y=va' >&3
printf 'v2\nk3' >&4
printf 'nokey' >&5
printf '=' >&5`)
	remountAfterKill(t, m, h)
	wantRecords(t, m, "ck", "records", "k0=first|k2=v2|key=va|nokey=")
	wantDaemonLog(t, m, "line without a key on a compacted topic", "no warning for the dropped keyless line")
	h = startUnfinishedHolder(t, m, `exec 3>>"$M/ck/0/data"; printf 'k4=' >&3; printf 'x' >&3`)
	remountAfterKill(t, m, h)
	wantRecords(t, m, "ck", "records after the second kill", "k0=first|k2=v2|key=va|nokey=|k4=x")
}
