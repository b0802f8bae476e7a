package tests

import (
	"strings"
	"testing"
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
