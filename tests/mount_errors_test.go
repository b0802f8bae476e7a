package tests

import (
	"testing"
)

// TestMountRefusals checks the errnos of DESIGN.md §3 for what the view
// refuses, and that a refused operation changes nothing.
func TestMountRefusals(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/ref" && printf 'one\ntwo\n' >> "$M/ref/0/data"`)
	d := `"$M/ref/0/data"`
	snapshot := func() string { return m.ok(`cat ` + d + `; stat -c '%s %i' ` + d + `; cat "$M/ref/0/status"`) }
	before := snapshot()

	// Each refusal on its own, in one shell (m.batch).
	steps := []mntStep{
		failsStep(`echo x > `+d, "Operation not permitted"),
		failsStep(`truncate -s 0 `+d, "Operation not permitted"),
		failsStep(`truncate -s 1 `+d, "Operation not permitted"),
		failsStep(`rm -f `+d, "Operation not permitted"),
		failsStep(`mv `+d+` "$M/ref/0/data2"`, "Operation not permitted"),
		failsStep(`chmod 600 `+d, "Operation not permitted"),
		failsStep(`rmdir "$M/ref/0/offset"`, "Operation not permitted"),
		failsStep(`rm -rf "$M/ref"`, "Operation not permitted"),
		failsStep(`touch "$M/ref/0/newfile"`, "Operation not permitted"),
		failsStep(`exec 3<> `+d, "Operation not permitted"), // writable without O_APPEND
		failsStep(`dd if=/dev/zero of=`+d+` bs=1 count=1 conv=notrunc status=none`, "Operation not permitted"),
		okStep(`touch ` + d), // times are fine
		// truncate opens without O_APPEND, so even a no-op size is refused
		// at open, as on a chattr +a file.
		failsStep(`truncate -s "$(stat -c %s `+d+`)" `+d, "Operation not permitted"),

		// A 2 MiB line is refused as a whole, whichever way it is written.
		failsStep(`printf '%s\n' "$(head -c 2097152 /dev/zero | tr '\0' a)" >> `+d, "Message too long"),
		failsStep(`{ head -c 2097152 /dev/zero | tr '\0' b; echo; } | dd of=`+d+` oflag=append conv=notrunc bs=64k status=none`, "Message too long"),
		failsStep(`head -c 3000000 /dev/zero | tr '\0' c >> `+d, "Message too long"),

		// Writes to read-only files.
		failsStep(`echo x >> "$M/ref/0/status"`, "Read-only file system"),
		failsStep(`echo x >> "$M/ref/0/offset/0"`, "Read-only file system"),
		failsStep(`echo x >> "$M/ref/0/segments/00000000000000000000.log"`, "Read-only file system"),
	}
	// truncate(2) by path (no open) answers as the writable open does; it
	// said "Operation not permitted" while `truncate -s` said EROFS.
	var ro []string
	for _, f := range []string{"status", "offset/0", "offset/1", "time/0", "segments/00000000000000000000.log", "segments/00000000000000000000.index"} {
		ro = append(ro, `"$M/ref/0/`+f+`"`)
		steps = append(steps,
			failsStep(`truncate -s 0 "$M/ref/0/`+f+`"`, "Read-only file system"),
			failsStep(`chmod 600 "$M/ref/0/`+f+`"`, "Operation not permitted"),
			okStep(`touch "$M/ref/0/`+f+`"`))
	}
	m.batch(steps...)
	for _, size := range []string{"0", "1"} {
		for i, got := range m.pyEach(`os.truncate(p, `+size+`)`, ro) {
			if got != "Read-only file system" {
				t.Errorf("truncate(%s, %s): %s, want Read-only file system", ro[i], size, got)
			}
		}
	}

	if after := snapshot(); after != before {
		t.Fatalf("refused operations changed the log:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	// The next line after refusals is whole and alone.
	m.ok(`echo three >> ` + d)
	if got := m.ok(`cat ` + d); got != "one\ntwo\nthree\n" {
		t.Fatalf("data after refusals = %q", got)
	}

	// Names and config.
	m.batch(
		failsStep(`mkdir "$M/bad name"`, "Invalid argument"),
		failsStep(`mkdir "$M/$(head -c 250 /dev/zero | tr '\0' x)"`, "Invalid argument"),
		failsStep(`mkdir "$M/ref"`, "File exists"),
		failsStep(`mkdir "$M/ref/5"`, "Invalid argument"),
		failsStep(`mkdir "$M/ref/x"`, "Invalid argument"),
		okStep(`mkdir "$M/ref/1" && test -f "$M/ref/1/data"`),
		failsStep(`cat "$M/nosuchtopic/0/data"`, "No such file or directory"),
		failsStep(`cat "$M/ref/7/data"`, "No such file or directory"))

	cfg := m.ok(`cat "$M/ref/config"`)
	m.batch(
		failsStep(`echo no.such.key=1 >> "$M/ref/config"`, "Invalid argument"),
		failsStep(`echo segment.bytes=banana > "$M/ref/config"`, "Invalid argument"),
		// One write(2) of two lines, one of them bad: neither is applied.
		// (bash's printf would write line by line; dd writes once.)
		failsStep(`printf 'retention.ms=1000\nsegment.bytes=-5\n' | dd of="$M/ref/config" bs=1k iflag=fullblock status=none`, "Invalid argument"),
		// An unfinished last line is applied at close(2), which reports it
		// (dd checks close): also after data files of the mount were closed,
		// so no FLUSH answer of theirs may turn FLUSH off for the mount.
		failsStep(`printf 'segment.bytes=banana' | dd of="$M/ref/config" bs=1k status=none`, "Invalid argument"),
	)
	if got := m.ok(`cat "$M/ref/config"`); got != cfg {
		t.Fatalf("refused config writes changed the config:\n%s", got)
	}
	m.ok(`echo key.separator=: > "$M/ref/config" && grep -x key.separator=: "$M/ref/config"`)
	m.ok(`echo 'k1:v1' >> "$M/ref/1/data"`)
	if got := m.ok(`cat "$M/ref/1/data"`); got != "k1:v1\n" {
		t.Fatalf("keyed line read back as %q", got)
	}
	// Overrides persist across a remount.
	m.unmount()
	m.mount()
	m.ok(`grep -x key.separator=: "$M/ref/config"`)
	if got := m.ok(`cat ` + d); got != "one\ntwo\nthree\n" {
		t.Fatalf("data after remount = %q", got)
	}
}
