package tests

import (
	"testing"
)

// TestMountDataReadWriteOpen: data opened for reading and appending
// (O_RDWR|O_APPEND: fopen "a+", Python's open(path, "a+")) appends what
// it writes and reads the partition's text through the same descriptor:
// the lines before the open, its own line, and a line another writer
// appended meanwhile; fstat, SEEK_END, SEEK_DATA and SEEK_HOLE answer the
// text's size. No test read through such a descriptor (the mmap and lock
// tests open one and never read): a READ of it failing with EBADF went
// unseen.
func TestMountDataReadWriteOpen(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/rw" && printf 'one\ntwo\n' >> "$M/rw/0/data"`)
	out := m.ok(`python3 - "$M/rw/0/data" <<'PY'
import os, subprocess, sys
d = sys.argv[1]
fd = os.open(d, os.O_RDWR | os.O_APPEND)
os.write(fd, b"three\n")
os.lseek(fd, 0, os.SEEK_SET)
print(repr(os.read(fd, 100)))
print(os.fstat(fd).st_size, os.lseek(fd, 0, os.SEEK_END))
print(os.lseek(fd, 3, os.SEEK_DATA), os.lseek(fd, 3, os.SEEK_HOLE))
subprocess.run(["sh", "-c", 'echo four >> "$0"', d], check=True)
print(repr(os.pread(fd, 100, 8)))
print(os.fstat(fd).st_size)
os.close(fd)
PY
`)
	want := "b'one\\ntwo\\nthree\\n'\n14 14\n3 14\nb'three\\nfour\\n'\n19\n"
	if out != want {
		t.Fatalf("reads through an O_RDWR|O_APPEND descriptor:\n%s\nwant:\n%s", out, want)
	}
	if got := m.ok(`cat "$M/rw/0/data"`); got != "one\ntwo\nthree\nfour\n" {
		t.Fatalf("data after: %q", got)
	}
}
