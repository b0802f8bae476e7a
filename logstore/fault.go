package logstore

import (
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
)

// faultFsyncAfterEnv is the fault-injection seam of the fault suite
// (tests/fault_fsync_test.go, FUSE-NOTES.md F10) for a real mount, where
// the syncFile variable cannot be reached: SEGFS_FAULT_FSYNC_AFTER=N lets
// the first N fsyncs of segment data succeed and fails every later one
// with EIO, as a disk does after a write error. It is read once at start;
// unset (always, outside the tests) it changes nothing.
const faultFsyncAfterEnv = "SEGFS_FAULT_FSYNC_AFTER"

func init() {
	v := os.Getenv(faultFsyncAfterEnv)
	if v == "" {
		return
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return
	}
	var calls atomic.Int64
	orig := syncFile
	syncFile = func(f *os.File) error {
		if calls.Add(1) > n {
			return &os.PathError{Op: "fsync", Path: f.Name(), Err: syscall.EIO}
		}
		return orig(f)
	}
}
