package tests

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestMountStatusConfigMtime: status and config are rendered on demand,
// and their mtime and ctime are when their text last changed, not the time
// of the stat. They used to be "now" (status) or stuck at the mount
// time (config): `tar cf` of a quiet topic always failed with "file changed
// as we read it" (exit 1, tar compares ctime around the read), and rsync's
// size+mtime check skipped a config change of the same length.
func TestMountStatusConfigMtime(t *testing.T) {
	// It mostly sleeps past the kernel's 1 s attribute cache, on a mount
	// of its own: it runs beside the other tests that wait (t.Parallel).
	t.Parallel()
	m := mntNew(t)
	m.ok(`mkdir "$M/q" && seq 1 100 >> "$M/q/0/data" && echo retention.ms=1000 > "$M/q/config"`)
	times := func() string {
		return strings.TrimSpace(m.ok(`stat -c '%.9Y %.9Z' "$M/q/0/status" "$M/q/config" | tr '\n' ' '`))
	}
	before := times()
	// Past the 1 s entry and attribute timeouts, so that the kernel looks
	// the files up again and asks for their attributes anew.
	m.ok(`sleep 2.2`)
	if after := times(); after != before {
		t.Fatalf("status/config mtimes moved with no change:\nbefore %s\nafter  %s", before, after)
	}
	if r := m.sh(`cd "$M" && tar cf "$OLDPWD/q.tar" q && tar tf "$OLDPWD/q.tar" | sort | tr '\n' ' '`); r.code != 0 {
		t.Fatalf("tar of a quiet topic: exit %d\n%s", r.code, r.err)
	} else if !strings.Contains(r.out, "q/0/status") || !strings.Contains(r.out, "q/config") {
		t.Fatalf("tar archived %q", r.out)
	}

	// A change moves them: config of the same length, status by an append.
	m.ok(`sleep 1.1 && echo retention.ms=2000 > "$M/q/config" && echo 101 >> "$M/q/0/data"`)
	changed := times()
	// status mtime ctime, config mtime ctime
	b, c := strings.Fields(before), strings.Fields(changed)
	if len(b) != 4 || len(c) != 4 || b[0] == c[0] || b[1] == c[1] || b[2] == c[2] || b[3] == c[3] {
		t.Fatalf("a change left the mtime as it was:\nbefore %s\nafter  %s", before, changed)
	}
	if got := m.ok(`grep -c . "$M/q/0/data"; grep '^retention.ms=' "$M/q/config"`); got != "101\nretention.ms=2000\n" {
		t.Fatalf("after the change: %q", got)
	}
}

// TestMountStatusConfigMtimeRemount: after a remount, config's mtime is
// still when the topic's config last changed, and status's when the
// partition last had an append, so `find -newer` lists only what changed.
// Both used to be the moment the new mount first showed them: after every
// remount `find -newer MARK` listed every config and status file, changed
// or not. A topic written by an older segfs, whose topics file does not
// record the time, keeps one mtime across remounts too.
func TestMountStatusConfigMtimeRemount(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/q" "$M/r" && seq 1 100 >> "$M/q/0/data" && echo retention.ms=1000 > "$M/q/config" && seq 5 >> "$M/r/0/data"`)
	newer := func(mark string) string {
		return m.ok(`cd "$M" && find . -newer "` + mark + `" \( -name config -o -name status \) | sort | tr '\n' ' '`)
	}
	times := func() string {
		return m.ok(`stat -c '%n %.9Y %.9Z' "$M/q/config" "$M/q/0/status" "$M/r/config" "$M/r/0/status"`)
	}
	before := times()
	mark := filepath.Join(t.TempDir(), "mark")
	m.ok(`touch "` + mark + `"`)
	m.unmount()
	m.mount()
	if got := newer(mark); got != "" {
		t.Errorf("after a remount with no change, find -newer lists %q", got)
	}
	if after := times(); after != before {
		t.Errorf("a remount moved the mtimes:\nbefore %s\nafter  %s", before, after)
	}
	if got, seg := m.ok(`stat -c %.9Y "$M/q/0/status"`), m.ok(`stat -c %.9Y "$D/q-0/00000000000000000000.log"`); got != seg {
		t.Errorf("status mtime %s, the last append's %s", got, seg)
	}

	// A change shows, in that topic only: an append to q, a config
	// change of r, by a write to one and by a remount for the other.
	// File times tick coarsely (a jiffy): the sleep puts the changes
	// in a later tick than the mark.
	m.ok(`touch "` + mark + `" && sleep 0.1 && echo 101 >> "$M/q/0/data" && echo retention.ms=2000 > "$M/r/config"`)
	if got := newer(mark); got != "./q/0/status ./r/config " {
		t.Errorf("after an append to q and a config change of r, find -newer lists %q", got)
	}
	m.unmount()
	m.mount()
	if got := newer(mark); got != "./q/0/status ./r/config " {
		t.Errorf("after a remount, find -newer lists %q", got)
	}

	// A topics file without the times (an older segfs): the mtimes
	// stay put across remounts all the same.
	m.unmount()
	m.ok(`python3 -c '
import json, sys
p = sys.argv[1]
d = json.load(open(p))
for t in d["topics"].values():
    t.pop("config_changed_ns", None)
json.dump(d, open(p, "w"))
' "$D/segfs-topics.json"`)
	m.mount()
	old := times()
	m.ok(`touch "` + mark + `"`)
	m.unmount()
	m.mount()
	if got := newer(mark); got != "" {
		t.Errorf("a topic from an older topics file: after a remount find -newer lists %q", got)
	}
	if after := times(); after != old {
		t.Errorf("a topic from an older topics file: a remount moved the mtimes:\nbefore %s\nafter  %s", old, after)
	}
}

// TestMountAtime: every file and directory of the mount reports an atime,
// the same as its mtime (reads are not tracked, as on a noatime mount). It
// was zero: `stat` showed "Access: 1970-01-01", `ls -lu` listed every file
// as from 1970, and `find -amin -N` matched nothing.
func TestMountAtime(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/q" && seq 1 100 >> "$M/q/0/data"`)
	paths := []string{".", "q", "q/config", "q/0", "q/0/data", "q/0/status", "q/0/offset", "q/0/offset/5",
		"q/0/time", "q/0/time/0", "q/0/segments", "q/0/segments/00000000000000000000.log"}
	out := m.ok(`cd "$M" && stat -c '%n %X %Y' -- ` + strings.Join(paths, " "))
	if n := len(mntLines(out)); n != len(paths) {
		t.Fatalf("stat printed %d lines for %d paths:\n%s", n, len(paths), out)
	}
	for _, l := range mntLines(out) {
		f := strings.Fields(l)
		if len(f) != 3 || f[1] == "0" || f[1] != f[2] {
			t.Errorf("%s: want atime = mtime, not 0 (name atime mtime)", l)
		}
	}
	// The user's view of it: find -amin matches what was just written.
	if got := m.ok(`find "$M/q/0" -maxdepth 1 -name data -amin -60`); strings.TrimSpace(got) != m.path("q/0/data") {
		t.Fatalf("find -amin -60 of a file just appended to: %q", got)
	}
}

// TestMountSetattrExplicitTimes: no entry of the mount can keep a time
// set on it (every mtime is the log's own), so explicit times (touch -d,
// touch -r, utime with times) fail with EPERM everywhere, as Linux answers
// for an append-only (chattr +a) file like data, while `touch` (now),
// `touch -a` and `touch -m` go through. Only data refused them: on status,
// config, offset/N, time/T, segments/ files and every directory `touch -d
// 2020-01-01` exited 0 and `stat` still showed the old mtime.
func TestMountSetattrExplicitTimes(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/q" && seq 3 >> "$M/q/0/data"`)
	stamps := func(paths []string) string {
		t.Helper()
		return m.ok(`stat -c '%n %.9X %.9Y' ` + strings.Join(paths, " "))
	}
	var all []string
	for _, p := range []string{"q/0/data", "q/0/offset/1", "q/0/time/0", "q/0/status", "q/config",
		"q/0/segments/00000000000000000000.log", "q/0/segments/00000000000000000000.index",
		"q/0", "q/0/offset", "q/0/time", "q/0/segments", "q", ""} {
		all = append(all, `"$M/`+p+`"`)
	}
	// Every command runs on its own, as before, but all of them in one
	// shell (m.batch) and every utime(2) in one python3 (m.pyEach): a
	// shell and a python3 per command cost 5 s in all under -race load.
	var steps []mntStep
	for _, e := range all {
		steps = append(steps, okStep(`touch `+e+` && touch -a `+e+` && touch -m `+e))
	}
	m.batch(steps...)
	for i, got := range m.pyEach(`os.utime(p)`, all) {
		if got != "ok" {
			t.Fatalf("utime(%s, now): %s", all[i], got)
		}
	}
	before := stamps(all)
	steps = nil
	for _, e := range all {
		// touch reports the error of its writable open where there is
		// one (EROFS for the read-only files) and that of utimensat
		// otherwise; utime(2) itself answers EPERM everywhere.
		for _, c := range []string{`touch -d 2020-01-01 `, `touch -m -d 2020-01-01 `, `touch -a -d 2020-01-01 `, `touch -r /etc/passwd `} {
			steps = append(steps, failsStep(c+e, "Operation not permitted", "Read-only file system"))
		}
		steps = append(steps, failsStep(`touch -h -d 2020-01-01 `+e, "Operation not permitted"))
	}
	m.batch(steps...)
	for _, call := range []string{`os.utime(p, (1, 1))`, `os.utime(p, ns=(os.stat(p).st_atime_ns, 1))`} {
		for i, got := range m.pyEach(call, all) {
			if got != "Operation not permitted" {
				t.Errorf("%s with p=%s: %s, want Operation not permitted", call, all[i], got)
			}
		}
	}
	if after := stamps(all); after != before {
		t.Fatalf("refused times changed atimes or mtimes:\n%s\nthen\n%s", before, after)
	}
	if got := m.ok(`cat "$M/q/0/data"`); got != "1\n2\n3\n" {
		t.Fatalf("data reads %q", got)
	}
}

// TestMountSegmentMtime: the files of segments/ show the mtime the data
// directory has for them (when the segment was last appended to or
// rewritten), so `rsync -a` of segments/ and find -newer see a change; it
// was always the mount time, and rsync's size-and-mtime check skipped a
// compacted .index or .timeindex rewritten at the same size.
func TestMountSegmentMtime(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/q" && seq 1 1000 >> "$M/q/0/data" && seq 1 1000 >> "$M/q/0/data"`)
	for _, ext := range []string{"log", "index", "timeindex"} {
		name := "00000000000000000000." + ext
		got := m.ok(`stat -c %.9Y "$M/q/0/segments/` + name + `"; stat -c %.9Y "$D/q-0/` + name + `"`)
		if l := mntLines(got); len(l) != 2 || l[0] != l[1] {
			t.Errorf("%s: mtime through the mount, then in the data directory:\n%s", name, got)
		}
	}
}

// TestMountDataMtimeIsLastAppend: the mtime of data and offset/N is the
// time of the partition's last append, also when the kernel looks the file
// up long after it: after a remount it used to be the time of the lookup,
// so `ls -lt` and `find -newer` saw every partition as just written.
func TestMountDataMtimeIsLastAppend(t *testing.T) {
	// It mostly sleeps past the kernel's 1 s attribute cache, on a mount
	// of its own: it runs beside the other tests that wait (t.Parallel).
	t.Parallel()
	m := mntNew(t)
	m.ok(`mkdir "$M/q" && seq 1 10 >> "$M/q/0/data"`)
	seg := filepath.Join(m.data, "q-0", "00000000000000000000.log")
	appended := m.ok(`stat -c %.9Y "` + seg + `"`)
	m.ok(`sleep 1.2`)
	m.unmount()
	m.mount()
	got := m.ok(`stat -c %.9Y "$M/q/0/data" "$M/q/0/offset/3"`)
	if got != appended+appended {
		t.Fatalf("after a remount, data and offset/3 have mtimes\n%swant the last append's\n%s", got, appended)
	}
	// An append moves it.
	m.ok(`sleep 1.1 && echo 11 >> "$M/q/0/data"`)
	if after := m.ok(`stat -c %.9Y "$M/q/0/data"`); after <= appended {
		t.Fatalf("an append left data's mtime at %s (was %s)", after, appended)
	}
}

// TestMountTimeLinkSetattr: a time/T symlink answers SETATTR as the other
// read-only entries do (offset/N, status, config, segments/*, the
// directories): `touch -h` (now) is accepted and changes nothing, `touch
// -h -d` and `chown -h` are EPERM. It answered ENOTSUP: `touch -h time/T`
// failed with "Operation not supported", and `chown -h`, which ignores
// ENOTSUP on a symlink, reported success.
func TestMountTimeLinkSetattr(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/q" && seq 3 >> "$M/q/0/data"`)
	link := `"$M/q/0/time/0"`
	before := m.ok(`readlink ` + link + `; stat -c %.9Y ` + link)
	var steps []mntStep
	var all []string
	for _, p := range []string{"q/0/time/0", "q/0/offset/0", "q/0/status", "q/config",
		"q/0/segments/00000000000000000000.log", "q/0", "q/0/time"} {
		e := `"$M/` + p + `"`
		steps = append(steps,
			okStep(`touch -h `+e),
			failsStep(`touch -h -d 2020-01-01 `+e, "Operation not permitted"),
			failsStep(`chown -h 1:1 `+e, "Operation not permitted"))
		all = append(all, e)
	}
	m.batch(steps...) // each command on its own, in one shell
	// utime(2) on each, in one python3 (a python3 each cost 0.3 s here).
	for i, got := range m.pyEach(`os.utime(p, follow_symlinks=False)`, all) {
		if got != "ok" {
			t.Errorf("utime(%s, now) without following: %s", all[i], got)
		}
	}
	for i, got := range m.pyEach(`os.utime(p, (1, 1), follow_symlinks=False)`, all) {
		if got != "Operation not permitted" {
			t.Errorf("utime(%s, (1, 1)) without following: %s, want Operation not permitted", all[i], got)
		}
	}
	if after := m.ok(`readlink ` + link + `; stat -c %.9Y ` + link); after != before {
		t.Fatalf("time/0 link and mtime were\n%snow\n%s", before, after)
	}
	if got := m.ok(`cat ` + link); got != "1\n2\n3\n" {
		t.Fatalf("time/0 reads %q", got)
	}
}

// TestMountDataMtimeNoticedLate: an append that no one stats at once still
// gives data and offset/N the append's time as mtime when they are next
// looked at. They took the time of that look: `echo x >> data; sleep 2;
// stat data` showed the stat's time, two seconds after the append (and the
// segment file's), so `ls -lt` and `find -newer` took a quiet partition for
// one just written whenever it was first looked at again.
func TestMountDataMtimeNoticedLate(t *testing.T) {
	// It mostly sleeps past the kernel's 1 s attribute cache, on a mount
	// of its own: it runs beside the other tests that wait (t.Parallel).
	t.Parallel()
	m := mntNew(t)
	m.ok(`mkdir "$M/q" && stat "$M/q/0/data" "$M/q/0/offset/0" > /dev/null`)
	seg := filepath.Join(m.data, "q-0", "00000000000000000000.log")
	// The append comes a tick of the clock after the segment was created,
	// and the stat well after the append.
	m.ok(`sleep 1.1 && echo x >> "$M/q/0/data" && sleep 1.5`)
	got := m.ok(`stat -c %.9Y "$M/q/0/data" "$M/q/0/offset/0" "` + seg + `"`)
	l := mntLines(got)
	if len(l) != 3 || l[0] != l[2] || l[1] != l[2] {
		t.Fatalf("mtimes of data, offset/0, and the segment file in the data directory:\n%swant the segment's (the append's) for all three", got)
	}
}

// pyEach runs call, a Python expression of p, for each path in one
// python3 (paths as the shell quotes them, "$M/..."), and returns for
// each "ok" or the error's strerror.
func (m *mnt) pyEach(call string, paths []string) []string {
	m.t.Helper()
	out := m.ok(`python3 -c '
import os, sys
for p in sys.argv[1:]:
    try:
        ` + call + `
        print("ok")
    except OSError as e:
        print(e.strerror)
' ` + strings.Join(paths, " "))
	res := mntLines(out)
	if len(res) != len(paths) {
		m.t.Fatalf("python3 %s: %d results for %d paths:\n%s", call, len(res), len(paths), out)
	}
	return res
}
