package tests

import (
	"strconv"
	"strings"
	"testing"
)

// TestMountBackupToolsCopyText checks that the backup tools copy the text
// files of a topic (data, status, config) byte for byte out of the mount:
// tar with --sparse, cp -a, rsync -a, cp --sparse=always.
//
// It is why data, status and config report st_blocks from their size,
// although they take no disk space of their own (`du` of a topic counts
// data on top of segments/): GNU tar --sparse archives a file that has a
// size and no blocks as one hole, so a topic backed up with `tar -cS`
// (as sysfs files, size 4096 and 0 blocks, are) came back as zeros; cp
// --sparse=always reads such a file through SEEK_DATA.
func TestMountBackupToolsCopyText(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/b" "$M/b/1" && seq 1 3000 >> "$M/b/0/data" && printf 'x=1\ny=2\n' >> "$M/b/1/data"`)
	files := []string{"b/config", "b/0/data", "b/0/status", "b/1/data", "b/1/status"}
	for _, f := range files {
		st := strings.Fields(m.ok(`stat -c '%s %b %B' "$M/` + f + `"`))
		size, _ := strconv.ParseInt(st[0], 10, 64)
		blocks, _ := strconv.ParseInt(st[1], 10, 64)
		unit, _ := strconv.ParseInt(st[2], 10, 64)
		if size == 0 || blocks*unit < size {
			t.Errorf("%s: size %d in %d blocks of %d bytes: tar --sparse takes it for holes", f, size, blocks, unit)
		}
	}
	for _, c := range []struct{ name, copy string }{
		{"tar -S", `tar -cSf - -C "$M" b | tar -xf - -C "$OUT"`},
		{"cp -a", `cp -a "$M/b" "$OUT/"`},
		{"rsync -a", `rsync -a "$M/b" "$OUT/"`},
	} {
		if c.name == "rsync -a" {
			if _, ok := optionalProgram(t, "rsync", "rsync", "the rsync copy"); !ok {
				continue
			}
		}
		out := t.TempDir()
		m.ok(`OUT=` + out + `; ` + c.copy)
		for _, f := range files {
			if r := m.sh(`cmp "$M/` + f + `" ` + out + `/` + f); r.code != 0 {
				t.Errorf("%s: %s differs from the mount's: %s%s", c.name, f, r.out, r.err)
			}
		}
	}
	out := t.TempDir()
	m.ok(`cp --sparse=always "$M/b/0/data" ` + out + `/data && cmp "$M/b/0/data" ` + out + `/data`)
}
