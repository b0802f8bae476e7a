package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMountDiskFull fills a data dir on an 8 MiB tmpfs through data: the
// writer gets ENOSPC, the log stays consistent, and appends work again once
// space is freed.
func TestMountDiskFull(t *testing.T) {
	mntRequireFuse(t)
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	disk := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(disk, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", disk).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if exec.Command("umount", disk).Run() != nil {
			exec.Command("umount", "-l", disk).Run()
		}
	})
	filler := filepath.Join(disk, "filler")
	if err := os.WriteFile(filler, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}

	m := mntAt(t, filepath.Join(disk, "data"))
	m.ok(`mkdir "$M/full" && echo segment.bytes=1048576 > "$M/full/config"`)
	d := `"$M/full/0/data"`
	const line = "0123456789abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopq"
	m.fails(`yes `+line+` | dd of=`+d+` oflag=append conv=notrunc bs=4096 iflag=fullblock status=none`, "No space left on device")

	check := func() string {
		t.Helper()
		// Every stored line is whole, and st_size is what a read returns.
		out := m.ok(`grep -cvx '` + line + `' ` + d + ` || true; cat ` + d + ` | wc -c; stat -c %s ` + d + `; wc -l < ` + d)
		f := mntLines(out)
		if len(f) != 4 || f[0] != "0" || f[1] != f[2] {
			t.Fatalf("inconsistent log after ENOSPC (bad lines, bytes read, st_size, lines): %q", f)
		}
		return f[3]
	}
	n := check()
	t.Logf("%s lines stored before the disk filled", n)

	// Still full: another append of many lines fails with ENOSPC and
	// leaves nothing behind. (A single short line may still fit in the
	// slack of the segment's last page.)
	m.fails(`yes `+line+` | head -n 20000 | dd of=`+d+` oflag=append conv=notrunc bs=64k iflag=fullblock status=none`, "No space left on device")
	if again := check(); again != n {
		t.Fatalf("failed appends on a full disk changed the log from %s to %s lines", n, again)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	m.ok(`echo after-free >> ` + d)
	if got := m.ok(`tail -n1 ` + d); got != "after-free\n" {
		t.Fatalf("after freeing space, the last line is %q", got)
	}
	if got := m.ok(`grep -c -x after-free ` + d); strings.TrimSpace(got) != "1" {
		t.Fatalf("after-free stored %s times", got)
	}
	m.unmount()
	m.sanityCheck()
}
