package fs

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestStatusLookupFailsAsGetattr: a status not looked up yet whose status
// cannot be made answers its lookup as its getattr does: with the store
// closed under the mount, EIO; with the first batch of the log unreadable,
// the attributes of an empty file (ls -l, du and rsync of the partition go
// on, as data's stat does then) and EIO from the open. The lookup ignored
// the error and answered a zeroed attribute: stat and `ls -l` showed
// "---------- 0 root root 0 Jan 1 1970 status", which the kernel then kept
// for the attribute timeout. The mount's log says why, as it does for data.
func TestStatusLookupFailsAsGetattr(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spoil  func(m *testMount)
		log    string // what the mount's log says of it
		statOK bool   // stat answers (size 0) and the open fails
	}{
		{"store closed", func(m *testMount) {
			if err := m.store.Close(); err != nil {
				t.Fatal(err)
			}
		}, "store closed", false},
		{"first batch damaged", func(m *testMount) {
			seg := filepath.Join(filepath.Dir(m.dir), "data", "t-0", "00000000000000000000.log")
			f, err := os.OpenFile(seg, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt([]byte{0x7f}, 16); err != nil { // its magic
				t.Fatal(err)
			}
		}, "00000000000000000000.log", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log lockedBuffer
			m := mountForTest(t, Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
			if err := os.Mkdir(m.path("t"), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, l := range []string{"a\n", "b\n"} { // two batches
				w, err := os.OpenFile(m.path("t", "0", "data"), os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := w.WriteString(l); err != nil {
					t.Fatal(err)
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
			}
			tc.spoil(m)
			// A listing (READDIRPLUS looks each entry up) still names it.
			if es, err := os.ReadDir(m.path("t", "0")); err != nil || len(es) != len(partEntries) {
				t.Errorf("listing the partition: %v, %v", es, err)
			}
			fi, err := os.Stat(m.path("t", "0", "status"))
			if tc.statOK {
				// A damaged log: stat answers (ls -l, du, rsync go on,
				// as for data), the open says EIO.
				if err != nil || fi.Size() != 0 {
					t.Errorf("stat of status: %v, %v; want size 0", fi, err)
				}
				if b, err := os.ReadFile(m.path("t", "0", "status")); !errors.Is(err, syscall.EIO) {
					t.Errorf("read of status: %q, %v; want EIO", b, err)
				}
			} else if !errors.Is(err, syscall.EIO) {
				t.Errorf("stat of status: %v, %v; want EIO", fi, err)
			}
			// The mount's log says why, naming the file: the EIO of
			// status was logged nowhere.
			if out := log.String(); !strings.Contains(out, `msg="stat of status failed" topic=t partition=0`) || !strings.Contains(out, tc.log) {
				t.Errorf("the mount's log does not say why status failed (%s):\n%s", tc.log, out)
			}
		})
	}
}
