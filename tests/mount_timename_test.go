package tests

import (
	"testing"
)

// TestMountTimeLowerCase: RFC 3339 (§5.6) allows a lower-case 't' and
// 'z', so time/T takes them like their upper-case forms; time.Parse alone
// refused them, and `ls time/2026-11-29t10:00:00z` was ENOENT.
func TestMountTimeLowerCase(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/tl" && seq 1 3 >> "$M/tl/0/data"`)
	got := m.ok(`cd "$M/tl/0/time" && for T in 1970-01-01T00:00:00Z 1970-01-01t00:00:00z 1970-01-01t01:00:00.5+01:00 9999-12-31t23:59:59z; do readlink "$T"; done; head -n1 1970-01-01t00:00:00z`)
	if want := "../offset/0\n../offset/0\n../offset/0\n../offset/3\n1\n"; got != want {
		t.Fatalf("time/ with lower-case t and z: %q, want %q", got, want)
	}
	m.fails(`ls "$M/tl/0/time/1970-01-01x00:00:00Z"`, "No such file or directory")
}
