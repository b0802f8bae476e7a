package fs

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

func TestParseFdinfo(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     fdinfo
		ok       bool
	}{
		{"fuse file", "pos:\t96\nflags:\t0102001\nmnt_id:\t44\nino:\t4760079152382528647\n",
			fdinfo{pos: 96, flags: 0o102001, mntID: "44", ino: 4760079152382528647}, true},
		{"extra lines", "pos:\t0\nflags:\t02\nmnt_id:\t7\nino:\t12\ntfd:  0\n", fdinfo{flags: syscall.O_RDWR, mntID: "7", ino: 12}, true},
		{"kernel without ino", "pos:\t5\nflags:\t0102001\nmnt_id:\t44\n", fdinfo{}, false},
		{"bad number", "pos:\tx\nflags:\t01\nmnt_id:\t4\nino:\t1\n", fdinfo{}, false},
		{"empty", "", fdinfo{}, false},
	} {
		got, ok := parseFdinfo([]byte(tc.in))
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("%s: parseFdinfo = %+v, %v; want %+v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// TestHolds looks for this process's own descriptors: a writable one of
// the file at the position its writes reached is found; another position,
// another device, a read-only descriptor or a closed one is not.
func TestHolds(t *testing.T) {
	pid := uint32(os.Getpid())
	path := filepath.Join(t.TempDir(), "f")
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(w.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	fi, ok := fdinfoOf(t, w)
	if !ok {
		t.Skip("this kernel's fdinfo has no ino: line")
	}
	dev := ""
	mounts, err := readMountInfo()
	if err != nil {
		t.Fatal(err)
	}
	for _, mi := range mounts {
		if mi.id == fi.mntID {
			dev = mi.dev
		}
	}
	if dev == "" {
		t.Fatalf("mount %s of %s not in mountinfo", fi.mntID, path)
	}
	if !holds(pid, st.Ino, 5, dev) {
		t.Fatalf("holds(own pid, %s at 5) = false with %s open for writing there", path, path)
	}
	if holds(pid, st.Ino, 4, dev) {
		t.Errorf("holds at another position = true")
	}
	if holds(pid, st.Ino, 5, "0:0") {
		t.Errorf("holds on another device = true")
	}
	if holds(pid, st.Ino+1, 5, dev) {
		t.Errorf("holds of another inode = true")
	}
	if holds(1<<30, st.Ino, 5, dev) {
		t.Errorf("holds of a thread that does not exist = true")
	}
	r, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Seek(5, 0); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if holds(pid, st.Ino, 5, dev) {
		t.Errorf("holds = true with only a read-only descriptor there left open")
	}
}

func fdinfoOf(t *testing.T, f *os.File) (fdinfo, bool) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	return parseFdinfo(b)
}
