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

	m.fails(`echo x > `+d, "Operation not permitted")
	m.fails(`truncate -s 0 `+d, "Operation not permitted")
	m.fails(`truncate -s 1 `+d, "Operation not permitted")
	m.fails(`rm -f `+d, "Operation not permitted")
	m.fails(`mv `+d+` "$M/ref/0/data2"`, "Operation not permitted")
	m.fails(`chmod 600 `+d, "Operation not permitted")
	m.fails(`rmdir "$M/ref/0/offset"`, "Operation not permitted")
	m.fails(`rm -rf "$M/ref"`, "Operation not permitted")
	m.fails(`touch "$M/ref/0/newfile"`, "Operation not permitted")
	m.fails(`exec 3<> `+d, "Operation not permitted") // writable without O_APPEND
	m.fails(`dd if=/dev/zero of=`+d+` bs=1 count=1 conv=notrunc status=none`, "Operation not permitted")
	m.ok(`touch ` + d) // times are fine
	// truncate opens without O_APPEND, so even a no-op size is refused
	// at open, as on a chattr +a file.
	m.fails(`truncate -s "$(stat -c %s `+d+`)" `+d, "Operation not permitted")

	// A 2 MiB line is refused as a whole, whichever way it is written.
	m.fails(`printf '%s\n' "$(head -c 2097152 /dev/zero | tr '\0' a)" >> `+d, "Message too long")
	m.fails(`{ head -c 2097152 /dev/zero | tr '\0' b; echo; } | dd of=`+d+` oflag=append conv=notrunc bs=64k status=none`, "Message too long")
	m.fails(`head -c 3000000 /dev/zero | tr '\0' c >> `+d, "Message too long")

	// Writes to read-only files.
	m.fails(`echo x >> "$M/ref/0/status"`, "Read-only file system")
	m.fails(`echo x >> "$M/ref/0/offset/0"`, "Read-only file system")
	m.fails(`echo x >> "$M/ref/0/segments/00000000000000000000.log"`, "Read-only file system")
	// truncate(2) by path (no open) answers as the writable open does; it
	// said "Operation not permitted" while `truncate -s` said EROFS.
	for _, f := range []string{"status", "offset/0", "offset/1", "time/0", "segments/00000000000000000000.log", "segments/00000000000000000000.index"} {
		for _, size := range []string{"0", "1"} {
			m.fails(`python3 -c 'import os, sys; os.truncate(sys.argv[1], int(sys.argv[2]))' "$M/ref/0/`+f+`" `+size, "Read-only file system")
		}
		m.fails(`truncate -s 0 "$M/ref/0/`+f+`"`, "Read-only file system")
		m.fails(`chmod 600 "$M/ref/0/`+f+`"`, "Operation not permitted")
		m.ok(`touch "$M/ref/0/` + f + `"`)
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
	m.fails(`mkdir "$M/bad name"`, "Invalid argument")
	m.fails(`mkdir "$M/$(head -c 250 /dev/zero | tr '\0' x)"`, "Invalid argument")
	m.fails(`mkdir "$M/ref"`, "File exists")
	m.fails(`mkdir "$M/ref/5"`, "Invalid argument")
	m.fails(`mkdir "$M/ref/x"`, "Invalid argument")
	m.ok(`mkdir "$M/ref/1" && test -f "$M/ref/1/data"`)
	m.fails(`cat "$M/nosuchtopic/0/data"`, "No such file or directory")
	m.fails(`cat "$M/ref/7/data"`, "No such file or directory")

	cfg := m.ok(`cat "$M/ref/config"`)
	m.fails(`echo no.such.key=1 >> "$M/ref/config"`, "Invalid argument")
	m.fails(`echo segment.bytes=banana > "$M/ref/config"`, "Invalid argument")
	// One write(2) of two lines, one of them bad: neither is applied.
	// (bash's printf would write line by line; dd writes once.)
	m.fails(`printf 'retention.ms=1000\nsegment.bytes=-5\n' | dd of="$M/ref/config" bs=1k iflag=fullblock status=none`, "Invalid argument")
	// An unfinished last line is applied at close(2), which reports it
	// (dd checks close): also after data files of the mount were closed,
	// so no FLUSH answer of theirs may turn FLUSH off for the mount.
	m.fails(`printf 'segment.bytes=banana' | dd of="$M/ref/config" bs=1k status=none`, "Invalid argument")
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
