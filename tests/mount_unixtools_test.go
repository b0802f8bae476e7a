package tests

import (
	"testing"
)

// TestMountConfigRewriteInPlace: the in-place rewrite idiom, read config,
// write the edited text back from offset 0, then ftruncate to where the
// write ended (Python's `f.seek(0); f.write(new); f.truncate()`, Go's
// f.Truncate(n) after its writes). The writes applied the edit, but the
// truncate to a size other than the text's failed with EPERM whenever the
// edit changed the text's length, so the program died with an error for a
// change already made. A truncate to where the writer's own writes ended
// now succeeds; one to any other size still fails and changes nothing.
func TestMountConfigRewriteInPlace(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/c"`)
	// A shorter value: the rewritten text is 5 bytes shorter than it was.
	// Then a rewrite of one line only, through an O_RDWR descriptor.
	m.ok(`python3 -c '
import os, sys
with open(sys.argv[1], "r+") as f:
    s = f.read()
    f.seek(0)
    f.write(s.replace("retention.ms=604800000", "retention.ms=1000"))
    f.truncate()
fd = os.open(sys.argv[1], os.O_RDWR)
n = os.write(fd, b"segment.ms=70000\n")
os.ftruncate(fd, n)
os.close(fd)' "$M/c/config"`)
	got := m.ok(`grep -E '^(retention|segment)\.ms=|^cleanup\.policy=' "$M/c/config"`)
	if got != "cleanup.policy=delete\nretention.ms=1000\nsegment.ms=70000\n" {
		t.Fatalf("after the rewrites in place:\n%s", got)
	}
	// Any other size still cannot be honoured.
	m.fails(`truncate -s 5 "$M/c/config"`, "Operation not permitted")
	m.fails(`python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
os.write(fd, b"segment.ms=80000\n")
os.ftruncate(fd, 3)' "$M/c/config"`, "Operation not permitted")
	if got := m.ok(`grep -c . "$M/c/config" && grep '^segment\.ms=' "$M/c/config"`); got != "22\nsegment.ms=80000\n" {
		t.Fatalf("after the refused truncates:\n%s", got)
	}
}
