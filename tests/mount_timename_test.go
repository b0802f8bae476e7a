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

// TestMountTimeLeapSecond: RFC 3339 (§5.7) allows second 60 for a leap
// second, which time.Parse refuses, so `readlink time/2016-12-31T23:59:60Z`
// was ENOENT. It is the start of the next second; second 60 that is not
// 23:59:60 UTC at a month's end stays ENOENT, and fractions and offsets
// work as for any other time.
func TestMountTimeLeapSecond(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/ls" && seq 1 3 >> "$M/ls/0/data"`)
	got := m.ok(`cd "$M/ls/0/time" && for T in 2016-12-31T23:59:60Z 2016-12-31T23:59:60.750Z 2017-01-01T05:29:60+05:30 2099-12-31T23:59:60Z 2099-12-31T18:29:60.5-05:30; do readlink "$T"; done; head -n1 2016-12-31T23:59:60Z`)
	if want := "../offset/0\n../offset/0\n../offset/0\n../offset/3\n../offset/3\n1\n"; got != want {
		t.Fatalf("time/ with leap seconds: %q, want %q", got, want)
	}
	for _, name := range []string{"2016-12-31T23:59:61Z", "2016-12-31T22:59:60Z", "2016-12-30T23:59:60Z", "2016-12-31T23:59:60+05:30"} {
		m.fails(`readlink "$M/ls/0/time/`+name+`"`, "")
		m.fails(`cat "$M/ls/0/time/`+name+`"`, "No such file or directory")
	}
}
