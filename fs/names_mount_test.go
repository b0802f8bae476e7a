package fs

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
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
