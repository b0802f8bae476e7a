package logstore

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// tmpfsForTests points TMPDIR, and so every t.TempDir of this package's
// tests, at a new directory on a tmpfs with room (SEGFS_TEST_TMPFS, or
// /dev/shm), and returns what removes it; where there is none, or
// SEGFS_TEST_TMPFS=off, TMPDIR stays as it is.
//
// Why: under -race on CI's 2-core VM the package spent about half its
// time waiting in fsync (TestCompactionCrashAtEveryStep took 27 s on ext4
// and 7 s on tmpfs, with the same CPU time). These tests run the store in
// their own process and cannot see whether an fsync made anything durable
// (a "crash" here is an abandoned Store, whose writes stay in the page
// cache); on tmpfs every fsync is still made and succeeds, so the tests
// run the same code and check the same results. What durability needs of
// a real filesystem is tested by the end-to-end fault tests in tests/, on
// ext4 and XFS loop disks (power cuts, kill -9, full disks, failed
// fsyncs), which this does not touch.
//
// Benchmarks keep TMPDIR: their figures are those of its disk.
func tmpfsForTests() (cleanup func()) {
	cleanup = func() {}
	if b := flag.Lookup("test.bench"); b != nil && b.Value.String() != "" {
		return
	}
	root := os.Getenv("SEGFS_TEST_TMPFS")
	switch root {
	case "off":
		return
	case "":
		root = "/dev/shm"
	}
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil || st.Type != unix.TMPFS_MAGIC {
		fmt.Fprintf(os.Stderr, "logstore tests: %s is not a tmpfs; temporary files stay in %s\n", root, os.TempDir())
		return
	}
	// The largest test (TestMillionRecords) writes about 150 MB.
	if free := st.Bavail * uint64(st.Bsize); free < 1<<30 {
		fmt.Fprintf(os.Stderr, "logstore tests: %s has %d MiB free; temporary files stay in %s\n", root, free>>20, os.TempDir())
		return
	}
	removeDeadTmpfsDirs(root)
	dir, err := os.MkdirTemp(root, fmt.Sprintf("segfs-logstore-%d-", os.Getpid()))
	if err != nil {
		fmt.Fprintf(os.Stderr, "logstore tests: %v; temporary files stay in %s\n", err, os.TempDir())
		return
	}
	os.Setenv("TMPDIR", dir)
	return func() { os.RemoveAll(dir) }
}

// removeDeadTmpfsDirs removes what tmpfsForTests left in root for a test
// process that is gone (killed by go test's -timeout, say): on a tmpfs it
// holds memory until removed.
func removeDeadTmpfsDirs(root string) {
	dirs, _ := filepath.Glob(filepath.Join(root, "segfs-logstore-*-*"))
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
