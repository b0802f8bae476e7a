package tests

import (
	"strings"
	"testing"
)

// TestFaultHostileInput is the hostile-input table of FUSE-NOTES.md §8,
// one row per check, each with its errno. Rows already covered elsewhere:
// non-canonical and huge offset/N, N past the end, malformed time/T
// (TestMountOffsetAndTime); `> data`, truncate, rm, mv, rmdir, touch new,
// chmod, writable opens without O_APPEND, writes to status/offset/segments,
// over-long lines (TestMountRefusals); a corrupt batch (TestFaultBitFlipSealed);
// disk full, read-only and broken backing filesystems (TestFaultDiskFull,
// TestFaultBackingReadOnly, TestFaultBackingShutdown).
func TestFaultHostileInput(t *testing.T) {
	faultNeedRoot(t)
	m := mntNew(t, "--allow-other")
	m.ok(`mkdir "$M/h" && seq 1 10 >> "$M/h/0/data"`)
	p := `"$M/h/0"`
	before := m.ok(`md5sum < ` + p + `/data`)

	rows := []struct {
		name, script, errText string
	}{
		// Names the kernel resolves itself: Lookup never sees "..".
		{"offset/../data resolves in the VFS", `cmp ` + p + `/offset/../data ` + p + `/data`, ""},
		{"time/../data resolves in the VFS", `cmp ` + p + `/time/../data ` + p + `/data`, ""},
		{"offset/N with a trailing newline", `cat ` + p + `/offset/$'1\n'`, "No such file or directory"},
		{"offset/N with a NUL-free control byte", `cat ` + p + `/offset/"$(printf '1\t')"`, "No such file or directory"},
		{"offset name over 255 bytes", `cat ` + p + `/offset/$(head -c 300 /dev/zero | tr '\0' 1)`, "File name too long"},
		{"time name over 255 bytes", `stat ` + p + `/time/$(head -c 1100 /dev/zero | tr '\0' 1)`, "File name too long"},
		{"topic name over 255 bytes", `ls "$M/$(head -c 1100 /dev/zero | tr '\0' x)"`, "File name too long"},
		// Symlinks: relative targets inside the partition, never absolute.
		{"time/T target is relative", `t=$(readlink ` + p + `/time/0); case "$t" in ../offset/[0-9]*) ;; *) echo "target $t" >&2; exit 1;; esac`, ""},
		// Writes to read-only views.
		{"append to time/T", `echo x >> ` + p + `/time/0`, "Read-only file system"},
		{"open offset/N O_RDWR", `exec 3<>` + p + `/offset/0`, "Read-only file system"},
		// What the view refuses to create or link.
		{"ln data", `ln ` + p + `/data ` + p + `/data2`, "Operation not permitted"},
		{"ln -s in a partition", `ln -s data ` + p + `/link`, "Operation not permitted"},
		{"mkdir in a partition", `mkdir ` + p + `/sub`, "Operation not permitted"},
		{"mkfifo in a partition", `mkfifo ` + p + `/fifo`, "Operation not permitted"},
		{"mkdir in offset/", `mkdir ` + p + `/offset/500`, "Operation not permitted"},
		{"rm offset/N", `rm -f ` + p + `/offset/0`, "Operation not permitted"},
		{"rm time/T", `rm -f ` + p + `/time/0`, "Operation not permitted"},
		{"mv a partition", `mv ` + p + ` "$M/h/1"`, "Operation not permitted"},
		{"rmdir segments", `rmdir ` + p + `/segments`, "Operation not permitted"},
		{"topic name with a newline", `mkdir "$M/$(printf 'a\nb')"`, "Invalid argument"},
		{"topic name ..", `mkdir "$M/h/../.."`, "File exists"},
		// Other users: allow_other comes with default_permissions.
		{"another user appends to root's data", `setpriv --reuid=65534 --regid=65534 --clear-groups bash -c 'echo x >> "$0"' ` + p + `/data`, "Permission denied"},
		{"another user rmdirs", `setpriv --reuid=65534 --regid=65534 --clear-groups rmdir "$M/h/0/offset"`, "ermission denied"},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			r := m.sh(row.script)
			if row.errText == "" {
				if r.code != 0 {
					t.Fatalf("failed (exit %d): %s\n%s", r.code, row.script, r.err)
				}
				return
			}
			if r.code == 0 || !strings.Contains(r.err, row.errText) {
				t.Fatalf("exit %d, stderr %q; want %q", r.code, r.err, row.errText)
			}
		})
	}
	// Another user may read (0644 data, allow_other).
	if out := m.ok(`setpriv --reuid=65534 --regid=65534 --clear-groups wc -l < ` + p + `/data`); out != "10\n" {
		t.Errorf("another user reads %q lines", out)
	}
	if after := m.ok(`md5sum < ` + p + `/data`); after != before {
		t.Fatal("refused operations changed data")
	}
	// Log injection: a name with a newline and control bytes is quoted
	// in the daemon log, never written raw.
	m.sh(`cat "$M/$(printf 'evil\nlevel=ERROR msg=forged\x1b[31m')" 2>/dev/null; true`)
	if strings.Contains(m.daemonLog(), "\nlevel=ERROR msg=forged") || strings.Contains(m.daemonLog(), "\x1b[31m") {
		t.Errorf("a user-supplied name reached the log unquoted:\n%s", m.daemonLog())
	}
	// Many lookups of distinct offset/N stay bounded and answer. bash's
	// own test -e makes the stat(2) each time; a stat(1) process per
	// lookup was 3000 fork-execs, most of the test's time.
	m.ok(`for i in $(seq 1 3000); do [ -e ` + p + `/offset/$((i % 11)) ] || { echo "offset/$((i % 11)) is gone at lookup $i" >&2; exit 1; }; done`)
}
