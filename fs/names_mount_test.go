package fs

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLookupNameTooLong: the kernel passes FUSE names of up to 1024 bytes;
// nothing in the view is longer than NAME_MAX (255), and a longer name is
// ENAMETOOLONG, as on a local filesystem, in the root (a topic), offset/
// and time/; a name of 255 bytes is an ordinary miss (ENOENT). mkdir of a
// topic with a longer name fails the same way.
func TestLookupNameTooLong(t *testing.T) {
	m := mountForTest(t, Options{})
	m.topic(t, "nt")
	for _, dir := range []string{"", "nt/0/offset", "nt/0/time"} {
		for _, c := range []struct {
			n    int
			want error
		}{{255, syscall.ENOENT}, {256, syscall.ENAMETOOLONG}, {1000, syscall.ENAMETOOLONG}} {
			name := m.path(dir, strings.Repeat("1", c.n))
			if _, err := os.Lstat(name); !errors.Is(err, c.want) {
				t.Errorf("stat %s/<%d digits>: %v, want %v", dir, c.n, err, c.want)
			}
		}
	}
	if err := os.Mkdir(m.path(strings.Repeat("t", 256)), 0o755); !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Errorf("mkdir of a 256-byte topic name: %v, want ENAMETOOLONG", err)
	}
}

// TestDirModeOwnerRefused: chmod and chown of every directory of the
// mount are EPERM, as for its files: a directory's mode and owner are the
// mount's, and a change that succeeded would change nothing. Times set to
// now (`touch DIR`) are accepted and the mode stays.
func TestDirModeOwnerRefused(t *testing.T) {
	m := mountForTest(t, Options{})
	m.topic(t, "dm")
	for _, dir := range []string{"", "dm", "dm/0", "dm/0/offset", "dm/0/time", "dm/0/segments"} {
		p := m.path(dir)
		before, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o700); !errors.Is(err, syscall.EPERM) {
			t.Errorf("chmod 700 /%s: %v, want EPERM", dir, err)
		}
		if err := os.Chown(p, 1, 1); !errors.Is(err, syscall.EPERM) {
			t.Errorf("chown 1:1 /%s: %v, want EPERM", dir, err)
		}
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, p, []unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_NOW}}, 0); err != nil {
			t.Errorf("touch /%s: %v", dir, err)
		}
		if after, err := os.Stat(p); err != nil || after.Mode() != before.Mode() {
			t.Errorf("/%s: mode %v, %v after chmod, was %v", dir, after.Mode(), err, before.Mode())
		}
	}
}
