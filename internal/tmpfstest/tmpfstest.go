// Package tmpfstest puts a test binary's temporary files on a tmpfs. Only
// tests import it (from TestMain).
//
// Under -race on CI's 2-core VM the logstore tests spent about half their
// time waiting in fsync (TestCompactionCrashAtEveryStep took 27 s on ext4
// and 7 s on tmpfs, with the same CPU time), the fetch tests a third.
// Those tests run the store in their own process and cannot see whether
// an fsync made anything durable (a "crash" there is an abandoned Store,
// whose writes stay in the page cache); on tmpfs every fsync is still
// made and succeeds, so they run the same code and check the same
// results. What durability needs of a real filesystem is tested by the
// end-to-end fault tests in tests/, on ext4 and XFS loop disks (power
// cuts, kill -9, full disks, failed fsyncs), which do not use this.
package tmpfstest

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Use points TMPDIR, and so every t.TempDir of the calling test binary,
// at a new directory on a tmpfs with room (SEGFS_TEST_TMPFS, or
// /dev/shm), and returns what removes it. Where there is none, or with
// SEGFS_TEST_TMPFS=off, TMPDIR stays as it is, and it says so on stderr.
// Benchmarks (-test.bench) keep TMPDIR: their figures are those of its
// disk. pkg names the package in messages and in the directory's name.
// Call it after flag.Parse.
func Use(pkg string) (cleanup func()) {
	cleanup = func() {}
	if b := flag.Lookup("test.bench"); b != nil && b.Value.String() != "" {
		return
	}
	root, why := tmpfs()
	if root == "" {
		if why != "" {
			fmt.Fprintf(os.Stderr, "%s tests: %s; temporary files stay in %s\n", pkg, why, os.TempDir())
		}
		return
	}
	removeDead(root)
	dir, err := os.MkdirTemp(root, fmt.Sprintf("segfs-test-%d-%s-", os.Getpid(), pkg))
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s tests: %v; temporary files stay in %s\n", pkg, err, os.TempDir())
		return
	}
	os.Setenv("TMPDIR", dir)
	return func() { os.RemoveAll(dir) }
}

// Dir is a new directory for t alone on the tmpfs Use would choose,
// removed when t ends (after the cleanups t registers later, such as an
// unmount); where there is none, t.TempDir().
func Dir(t testing.TB) string {
	t.Helper()
	if root, _ := tmpfs(); root != "" {
		removeDead(root)
		if dir, err := os.MkdirTemp(root, fmt.Sprintf("segfs-test-%d-dir-", os.Getpid())); err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

// tmpfs is the tmpfs to use, or "" and why not ("" when turned off).
func tmpfs() (root, why string) {
	root = os.Getenv("SEGFS_TEST_TMPFS")
	switch root {
	case "off":
		return "", ""
	case "":
		root = "/dev/shm"
	}
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil || st.Type != unix.TMPFS_MAGIC {
		return "", root + " is not a tmpfs"
	}
	// The largest test (logstore's TestMillionRecords) writes about 150 MB.
	if free := st.Bavail * uint64(st.Bsize); free < 1<<30 {
		return "", fmt.Sprintf("%s has %d MiB free", root, free>>20)
	}
	return root, ""
}

// removeDead removes what Use left in root for a test process that is
// gone (killed by go test's -timeout, say): on a tmpfs it holds memory
// until removed.
func removeDead(root string) {
	dirs, _ := filepath.Glob(filepath.Join(root, "segfs-test-*-*"))
	for _, d := range dirs {
		f := strings.Split(filepath.Base(d), "-")
		pid, err := strconv.Atoi(f[2])
		if err != nil || pid <= 0 {
			continue
		}
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			os.RemoveAll(d)
		}
	}
}
