package tests

import (
	"strings"
	"testing"
)

// TestMountSyncDir: fsync of a directory of the mount succeeds, as it does
// on any local filesystem: `sync DIR` (coreutils fsyncs the directory),
// and the fsync of the parent a careful program does after mkdir. It
// failed with "Operation not supported" for every directory, the kernel
// passing on go-fuse's ENOTSUP for FSYNCDIR. A topic made by mkdir is on
// disk when mkdir returns, so there is nothing to do; a remount after
// SIGKILL still has it.
func TestMountSyncDir(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/q" "$M/q/1" && echo x >> "$M/q/0/data"`)
	m.ok(`cd "$M" && sync . q q/0 q/1 q/0/offset q/0/time q/0/segments && sync -d q/0 && sync -f q`)
	m.ok(`python3 -c '
import os, sys
for d in sys.argv[1:]:
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    os.fsync(fd)
    os.close(fd)
' "$M" "$M/q" "$M/q/0"`)
	m.kill9()
	m.mount()
	if got := m.ok(`ls "$M/q" | tr '\n' ' '; cat "$M/q/0/data"`); got != "0 1 config x\n" {
		t.Fatalf("after SIGKILL and remount: %q", strings.TrimSpace(got))
	}
}
