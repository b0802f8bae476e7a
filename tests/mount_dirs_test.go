package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestMountDirDots: every directory of the mount lists "." and ".." (ls
// -a, readdir(3)), with the st_ino of the directory and of its parent, and
// offset/ and time/ list nothing else. They listed no "." and "..", so
// `ls -a` showed neither and scripts that skip the first two entries of a
// listing skipped real ones. find, du and tar walk the mount as before:
// each path once, no loop, no error.
func TestMountDirDots(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/q" "$M/q/1" && seq 1 100 >> "$M/q/0/data"`)
	dirs := map[string]string{
		".":            ". .. q",
		"q":            ". .. 0 1 config",
		"q/0":          ". .. data offset segments status time",
		"q/0/offset":   ". ..",
		"q/0/time":     ". ..",
		"q/0/segments": ". .. 00000000000000000000.index 00000000000000000000.log 00000000000000000000.timeindex",
	}
	for dir, want := range dirs {
		if got := strings.Join(strings.Fields(m.ok(`ls -a "$M/`+dir+`"`)), " "); got != want {
			t.Errorf("ls -a %s = %q, want %q", dir, got, want)
		}
		// ls -A and plain ls are unchanged.
		if got := strings.Join(strings.Fields(m.ok(`ls -A "$M/`+dir+`"`)), " "); got != strings.TrimSpace(strings.TrimPrefix(want, ". ..")) {
			t.Errorf("ls -A %s = %q", dir, got)
		}
	}
	// "." is the directory and ".." its parent (d_ino, as ls -ai prints
	// it for names that are not mountpoints).
	for _, dir := range []string{"q/0", "q/0/offset", "q/0/segments"} {
		got := m.ok(`cd "$M/` + dir + `" && ls -aif | awk '$2 == "." || $2 == ".." { print $1 }' ; stat -c %i . ..`)
		if f := strings.Fields(got); len(f) != 4 || f[0] != f[2] || f[1] != f[3] {
			t.Errorf("%s: d_ino of . and .., then st_ino of . and ..: %q", dir, got)
		}
	}

	want := []string{"", "/q", "/q/0", "/q/0/data", "/q/0/offset", "/q/0/segments",
		"/q/0/segments/00000000000000000000.index", "/q/0/segments/00000000000000000000.log",
		"/q/0/segments/00000000000000000000.timeindex", "/q/0/status", "/q/0/time",
		"/q/1", "/q/1/data", "/q/1/offset", "/q/1/segments",
		"/q/1/segments/00000000000000000000.index", "/q/1/segments/00000000000000000000.log",
		"/q/1/segments/00000000000000000000.timeindex", "/q/1/status", "/q/1/time", "/q/config"}
	for i := range want {
		want[i] = m.dir + want[i]
	}
	if got := mntLines(m.ok(`find "$M" | sort`)); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("find lists\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := mntLines(m.ok(`du -a "$M" | cut -f2 | sort`)); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("du -a lists\n%s", strings.Join(got, "\n"))
	}
	if got := mntLines(m.ok(`cd "$M" && tar -cf - . | tar -tf - | sed 's|/$||; s|^\.||' | sort`)); len(got) != len(want) {
		t.Errorf("tar archived %d entries, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	// ls -la shows them as directories.
	if got := m.ok(`ls -la "$M/q/0/offset" | awk 'NR > 1 { print substr($1, 1, 1) $NF }' | tr '\n' ' '`); got != "d. d.. " {
		t.Errorf("ls -la offset: %q", got)
	}
}

// TestMountDirMtime: a directory's mtime (and ctime) moves when its
// entries change: the root's is when the last topic was created (the
// newest birth time of the data directory and of each topic's partition 0
// directory), a partition's and its offset/, time/ and segments/ are the
// partition's log directory's mtime, and a topic's is the newest of its
// partitions'. Every directory showed the mount time, so `ls -lt MOUNT`
// and `find MOUNT -newer X -type d` told nothing; then the root showed the
// data directory's mtime, which the checkpoint rewrites moved about once a
// second while appends went on.
func TestMountDirMtime(t *testing.T) {
	// It mostly waits out the kernel's 1 s attribute cache, on a mount of
	// its own: it runs beside the other tests that wait (t.Parallel).
	t.Parallel()
	m := mntNew(t)
	m.ok(`mkdir "$M/q" "$M/q/1" && echo segment.bytes=8192 > "$M/q/config" && seq 1 10 >> "$M/q/0/data"`)
	mounted := []string{".", "q", "q/0", "q/0/offset", "q/0/time", "q/0/segments", "q/1", "q/1/segments"}
	// The mount keeps directory attributes for a second, and the data
	// directory's checkpoints may be rewritten between the two stats:
	// compare until both agree.
	agree := func() (bool, string) {
		out := m.ok(`cd "$M" && stat -c '%.9Y %.9Z' ` + strings.Join(mounted, " ") + `; stat -c %.9Y "$D/q-0" "$D/q-1"; stat -c %.9W "$D" "$D/q-0" | sort -n | tail -1`)
		l := mntLines(out)
		if len(l) != len(mounted)+3 {
			return false, out
		}
		q0, q1, d := l[len(mounted)], l[len(mounted)+1], l[len(mounted)+2]
		newest := q0
		if q1 > q0 { // same width: seconds since 1970 with 9 decimals
			newest = q1
		}
		want := []string{d, newest, q0, q0, q0, q0, q1, q1}
		for i, name := range mounted {
			if f := strings.Fields(l[i]); len(f) != 2 || f[0] != want[i] || f[1] != want[i] {
				return false, fmt.Sprintf("%s: mtime ctime %q, want %s\n%s", name, l[i], want[i], out)
			}
		}
		return true, out
	}
	var why string
	if !mntWaitFor(10*time.Second, func() (ok bool) { ok, why = agree(); return ok }) {
		t.Fatalf("directory times differ from the data directory's:\n%s", why)
	}

	// A roll of partition 0 (new segment files in q-0) moves q, q/0 and
	// its subdirectories past a marker at the newest time before it, and
	// nothing of partition 1.
	m.ok(`touch -d @$(stat -c %.9Y "$D/q-0" "$D/q-1" | sort -n | tail -1) "$D/../x" && ` +
		`seq 1 2000 >> "$M/q/0/data" && test $(ls "$M/q/0/segments" | grep -c 'log$') -gt 1`)
	want := strings.Join([]string{m.path("q"), m.path("q/0"), m.path("q/0/offset"), m.path("q/0/segments"), m.path("q/0/time")}, "\n")
	var got string
	if !mntWaitFor(10*time.Second, func() bool {
		got = strings.TrimSpace(m.ok(`find "$M" -mindepth 1 -newer "$D/../x" -type d | sort`))
		return got == want
	}) {
		t.Fatalf("find -newer X -type d after a roll of q/0:\n%s\nwant\n%s", got, want)
	}
	if got := m.ok(`ls -td "$M/q/1" "$M/q/0"`); got != m.path("q/0")+"\n"+m.path("q/1")+"\n" {
		t.Fatalf("ls -td, newest first:\n%s", got)
	}
	if !mntWaitFor(10*time.Second, func() (ok bool) { ok, why = agree(); return ok }) {
		t.Fatalf("after the roll, directory times differ from the data directory's:\n%s", why)
	}

	// Appends do not move the root: the data directory's mtime does move
	// (the checkpoints are rewritten there), and once the kernel's cached
	// root attributes (1 s) have expired after it moved, the root must
	// still show the same time.
	before := strings.TrimSpace(m.ok(`stat -c %.9Y "$M"`))
	var moved time.Time
	for i := 0; ; i++ {
		m.ok(`echo more >> "$M/q/0/data"`)
		if moved.IsZero() && strings.TrimSpace(m.ok(`stat -c %.9Y "$D"`)) > before {
			moved = time.Now()
		}
		if !moved.IsZero() && time.Since(moved) > 1500*time.Millisecond {
			break
		}
		if i > 2000 {
			t.Fatal("appends never moved the data directory's mtime; the test proves nothing")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if now := strings.TrimSpace(m.ok(`stat -c %.9Y "$M"`)); now != before {
		t.Fatalf("appends moved the root's mtime from %s to %s (data directory %s)", before, now, m.ok(`stat -c %.9Y "$D"`))
	}
	if !mntWaitFor(10*time.Second, func() (ok bool) { ok, why = agree(); return ok }) {
		t.Fatalf("after appends, directory times differ:\n%s", why)
	}

	// A new topic moves the root, to the birth of its partition 0.
	m.ok(`mkdir "$M/r"`)
	if !mntWaitFor(10*time.Second, func() bool {
		now := m.ok(`stat -c %.9Y "$M"; stat -c %.9W "$D/r-0"`)
		l := mntLines(now)
		return len(l) == 2 && l[0] == l[1] && l[0] > before
	}) {
		t.Fatalf("mkdir of a topic left the root's mtime at %s", before)
	}
	// A new partition moves its topic, not the root.
	root := strings.TrimSpace(m.ok(`stat -c %.9Y "$M"`))
	m.ok(`mkdir "$M/r/1"`)
	if !mntWaitFor(10*time.Second, func() bool {
		return strings.TrimSpace(m.ok(`stat -c %.9Y "$M/r"`)) == strings.TrimSpace(m.ok(`stat -c %.9Y "$D/r-1"`))
	}) {
		t.Fatal("mkdir of a partition did not move its topic's mtime")
	}
	if now := strings.TrimSpace(m.ok(`sleep 1.1; stat -c %.9Y "$M"`)); now != root {
		t.Fatalf("mkdir of a partition moved the root's mtime from %s to %s", root, now)
	}
}

// TestMountDirLinkCount: a directory's link count is 2 plus its
// subdirectories, as on ext4, for every directory of the mount. It was 2
// everywhere, so `ls -l` showed the root and topics with no subdirectories
// and find's leaf optimisation (which trusts st_nlink) could skip them.
func TestMountDirLinkCount(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/q" "$M/r" "$M/s" "$M/q/1" "$M/q/2" && seq 1 10 >> "$M/q/0/data"`)
	out := m.ok(`cd "$M" && find . -type d | while read -r d; do
		echo "$d $(stat -c %h "$d") $(find "$d" -mindepth 1 -maxdepth 1 -type d | wc -l)"
	done`)
	lines := mntLines(out)
	if len(lines) < 1+3+5+3*5 {
		t.Fatalf("find listed %d directories:\n%s", len(lines), out)
	}
	want := map[string]int{".": 5, "./q": 5, "./r": 3, "./q/0": 5, "./q/0/offset": 2}
	for _, l := range lines {
		var d string
		var links, subdirs int
		if _, err := fmt.Sscanf(l, "%s %d %d", &d, &links, &subdirs); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		if links != 2+subdirs {
			t.Errorf("%s: st_nlink %d, but %d subdirectories (want %d)", d, links, subdirs, 2+subdirs)
		}
		if w, ok := want[d]; ok && links != w {
			t.Errorf("%s: st_nlink %d, want %d", d, links, w)
		}
	}
}
