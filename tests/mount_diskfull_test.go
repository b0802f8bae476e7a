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
	// 4000-byte writes are 40 whole lines each, so nothing is pending in
	// dd's open when it stops: the start of a line acknowledged before an
	// ENOSPC is kept and becomes a record at close, which
	// TestMountDiskFullPartialLine covers.
	m.fails(`yes `+line+` | dd of=`+d+` oflag=append conv=notrunc bs=4000 iflag=fullblock status=none`, "No space left on device")

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

// TestMountDiskFullPartialLine: a writer holds one descriptor of data, has
// written the start of a line, and the WRITE that completes it fails with
// ENOSPC. When it resends that chunk after space is freed, the record is
// the whole line: the start it wrote before the failure is not lost.
func TestMountDiskFullPartialLine(t *testing.T) {
	mntRequireFuse(t)
	disk := faultTmpfs(t, "8m")
	filler := filepath.Join(disk, "filler")
	if err := os.WriteFile(filler, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	const line = "0123456789abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopq"
	// The chunk that completes the line carries 60 KB more lines, so its
	// batch cannot fit in the slack of the segment's last page.
	chunk := filepath.Join(t.TempDir(), "chunk")
	if err := os.WriteFile(chunk, []byte("rest\n"+strings.Repeat(line+"\n", 600)), 0o644); err != nil {
		t.Fatal(err)
	}
	m := mntAt(t, filepath.Join(disk, "data"))
	m.ok(`mkdir "$M/full" && echo segment.bytes=1048576 > "$M/full/config"`)
	d := `"$M/full/0/data"`
	// One shell holds fd 3 across the steps; dd writes the chunk through
	// a dup of it (>&3), so every write reaches the same open of data.
	out := m.ok(`exec 3>>` + d + `
printf 'start-' >&3
if yes ` + line + ` | dd of=` + d + ` oflag=append conv=notrunc bs=4096 iflag=fullblock status=none 2>/dev/null; then echo filled-without-enospc; fi
if dd if=` + chunk + ` bs=65536 status=none >&3 2>/dev/null; then echo chunk-without-enospc; fi
rm ` + filler + `
dd if=` + chunk + ` bs=65536 status=none >&3 || echo resend-failed
exec 3>&-
grep -c -x start-rest ` + d + ` || true
grep -c -x rest ` + d + ` || true`)
	if f := mntLines(out); len(f) != 2 || f[0] != "1" || f[1] != "0" {
		t.Fatalf("want one record \"start-rest\" and none \"rest\" after the resent chunk; the script said %q", out)
	}
	m.unmount()
	m.sanityCheck()
}

// TestMountOpensOnFullDisk: a data directory whose disk filled up while
// it was mounted mounts again, reads, and loses nothing once space is
// back. Every open rewrote the topics file and the checkpoints; after a
// close that could not write its checkpoints (so no clean-shutdown marker
// either, and no file left to free), `segfs mount` exited 1 with "no space
// left on device" and the log could not even be read, nor retention
// lowered to free space. An unchanged metadata file is now only synced,
// and the open keeps the previous checkpoints when the disk is full.
func TestMountOpensOnFullDisk(t *testing.T) {
	mntRequireFuse(t)
	disk := faultTmpfs(t, "8m")
	m := mntAt(t, filepath.Join(disk, "data"))
	m.ok(`mkdir "$M/f" && seq 1 1000 >> "$M/f/0/data"`)
	// The disk fills to the last block while mounted; one more line
	// still fits the segment's reserved blocks.
	exec.Command("dd", "if=/dev/zero", "of="+filepath.Join(disk, "filler"), "bs=64k", "status=none").Run()
	out, _ := exec.Command("df", "--output=avail", disk).Output()
	if f := strings.Fields(string(out)); len(f) != 2 || f[1] != "0" {
		t.Fatalf("the disk is not full: %s", out)
	}
	m.ok(`echo 1001 >> "$M/f/0/data"`)
	m.unmount()
	m.mount()
	if got := m.ok(`wc -l < "$M/f/0/data"; tail -n1 "$M/f/0/data"`); got != "1001\n1001\n" {
		t.Fatalf("on a full disk, data reads %q", got)
	}
	m.unmount()
	if err := os.Remove(filepath.Join(disk, "filler")); err != nil {
		t.Fatal(err)
	}
	m.mount()
	m.ok(`echo 1002 >> "$M/f/0/data"`)
	if got := m.ok(`wc -l < "$M/f/0/data"; tail -n1 "$M/f/0/data"`); got != "1002\n1002\n" {
		t.Fatalf("after space came back, data reads %q", got)
	}
}
