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

// TestMountConfigWriteBackChangesNothing: editors, sponge, cp and scripts
// rewrite config whole, writing back every line they read. Each line used
// to become an override, so a one-line edit pinned every default: the
// topics file listed all 22 keys as set, and a later
// message.timestamp.difference.max.ms no longer applied, since Kafka's
// fallback to it needs message.timestamp.after.max.ms unset. A line that
// repeats what config shows for a key without an override now changes
// nothing; `>>` of such a line too; a changed line and `key=` still do.
func TestMountConfigWriteBackChangesNothing(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/c"`)
	tmp := t.TempDir()
	overrides := func() string {
		return m.ok(`python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))["topics"]["c"].get("overrides", {})
print(" ".join(f"{k}={v}" for k, v in sorted(o.items())))' "$D/segfs-topics.json"`)
	}
	// As vi, sponge or `cp` would: the whole text back, one line changed.
	m.ok(`T=` + tmp + `
sed 's/^retention\.ms=.*/retention.ms=1000/' "$M/c/config" > "$T/c.new"
cat "$T/c.new" > "$M/c/config"
cat "$M/c/config" > "$T/c.same"
cat "$T/c.same" > "$M/c/config"
line=$(grep '^segment.bytes=' "$M/c/config") && echo "$line" >> "$M/c/config"`)
	if got := overrides(); got != "retention.ms=1000\n" {
		t.Fatalf("overrides after writing config back with one line changed: %q, want only retention.ms=1000", got)
	}
	if got := m.ok(`cmp "` + tmp + `/c.new" "$M/c/config" && echo same`); got != "same\n" {
		t.Fatalf("config after the rewrite differs from the text written: %q", got)
	}
	// An override is kept when written back, changed by a line, reset by key=.
	m.ok(`echo retention.ms=1000 >> "$M/c/config"
echo segment.bytes=1048576 >> "$M/c/config"
echo message.timestamp.after.max.ms=3600000 >> "$M/c/config"`)
	if got := overrides(); got != "retention.ms=1000 segment.bytes=1048576\n" {
		t.Fatalf("overrides after more lines: %q", got)
	}
	m.ok(`echo retention.ms= >> "$M/c/config"`)
	if got := overrides(); got != "segment.bytes=1048576\n" {
		t.Fatalf("overrides after retention.ms= : %q", got)
	}
}
