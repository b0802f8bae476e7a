package tests

import (
	"strings"
	"testing"
)

// mmapProbe maps each file named on its command line read-only, shared and
// private, and prints per mapping "PATH KIND ok" when the mapping holds
// exactly what read(2) returns, or "PATH KIND errno NAME" when mmap fails.
const mmapProbe = `
import errno, mmap, os, sys
for p in sys.argv[1:]:
    want = open(p, "rb").read()
    for kind, flags in (("shared", mmap.MAP_SHARED), ("private", mmap.MAP_PRIVATE)):
        fd = os.open(p, os.O_RDONLY)
        try:
            m = mmap.mmap(fd, 0, flags=flags, prot=mmap.PROT_READ)
        except OSError as e:
            print(p, kind, "errno", errno.errorcode[e.errno])
        else:
            print(p, kind, "ok" if m[:] == want else "WRONG %r" % m[:80])
            m.close()
        finally:
            os.close(fd)
`

// mmapWriteProbe opens data for appending (O_RDWR|O_APPEND, the only
// writable open data allows) and tries a writable shared mapping; if one
// is granted it writes through it and msyncs, as a program would.
const mmapWriteProbe = `
import errno, mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_APPEND)
try:
    m = mmap.mmap(fd, 0, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
except OSError as e:
    print("errno", errno.errorcode[e.errno])
else:
    m[0:3] = b"XYZ"
    m.flush()
    m.close()
    print("mapped")
os.close(fd)
`

// TestMountMmap: what mmap(2) does with the files of the mount. data, read
// through the page cache, maps shared and private with its exact bytes.
// offset/N, status and config use direct I/O, as does data opened
// read-only while a writer has it open: a private read-only mapping
// holds their bytes, and a shared one fails with ENODEV (never wrong
// bytes), because the kernel maps direct-I/O files shared only with
// FUSE_DIRECT_IO_ALLOW_MMAP, which segfs does not negotiate: it would also
// grant a writable shared mapping of data opened for appending, whose dirty
// pages the kernel writes back as WRITEs at page offsets, and data appends
// every WRITE (a trial appended a page of data again as new lines). So a
// writable shared mapping of data must fail, and data stay as it was.
func TestMountMmap(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/q" && seq 1 1000 >> "$M/q/0/data"`)
	files := []string{"q/0/data", "q/0/offset/500", "q/0/status", "q/config", "q/0/segments/00000000000000000000.log"}
	probe := func(script string, dataDirect bool) {
		t.Helper()
		out := m.ok(script)
		for _, l := range mntLines(out) {
			f := strings.Fields(l)
			switch {
			case len(f) == 3 && f[2] == "ok":
			case len(f) == 4 && f[1] == "shared" && f[2] == "errno" && f[3] == "ENODEV" && (f[0] != "q/0/data" || dataDirect):
			default:
				t.Errorf("mmap: %s", l)
			}
		}
		if n := len(mntLines(out)); n != 2*len(files) {
			t.Fatalf("probe printed %d lines for %d files:\n%s", n, len(files), out)
		}
	}
	probe(`cd "$M" && python3 -c '`+mmapProbe+`' `+strings.Join(files, " "), false)
	// While a writer has data open, its read-only opens use direct I/O
	// too (doc.go, "Caching"): a private mapping still reads right.
	probe(`cd "$M" && exec 3>>q/0/data && python3 -c '`+mmapProbe+`' `+strings.Join(files, " "), true)

	before := m.ok(`md5sum < "$M/q/0/data"; grep log.end.offset "$M/q/0/status"`)
	if got := strings.TrimSpace(m.ok(`python3 -c '` + mmapWriteProbe + `' "$M/q/0/data"`)); got != "errno ENODEV" {
		t.Errorf("a writable shared mapping of data: %q, want errno ENODEV", got)
	}
	if after := m.ok(`md5sum < "$M/q/0/data"; grep log.end.offset "$M/q/0/status"`); after != before {
		t.Fatalf("data changed by a writable mapping:\nbefore %safter  %s", before, after)
	}
}
