package tests

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMountAsUser: `segfs mount` run by an unprivileged user (nobody)
// mounts through fusermount3 (go-fuse's DirectMount falls back to it when
// mount(2) is refused), returns 0 once the mount answers, serves the user's
// tools, and `fusermount3 -u` by that user unmounts it cleanly. Many
// machines (this one too) keep /dev/fuse at mode 0600, where no user can
// mount any FUSE filesystem; the test therefore runs in a private mount
// namespace where a 0666 node of the same device is bind-mounted over
// /dev/fuse, and the machine's /dev/fuse is left as it is.
func TestMountAsUser(t *testing.T) {
	mntRequireFuse(t)
	if os.Geteuid() != 0 {
		t.Skip("switching to the user nobody needs root")
	}
	for _, tool := range [][2]string{{"unshare", "util-linux"}, {"setpriv", "util-linux"}, {"fusermount3", "fuse3"}, {"mknod", "coreutils"}} {
		needProgram(t, tool[0], tool[1])
	}
	// A directory the user can reach (t.TempDir's parents are 0700),
	// holding a copy of the binary, the mountpoint and the data dir.
	// Not below $TMPDIR: CI's is a 0700 directory the user cannot cross.
	// The mounts live in the test's own mount namespace, so nothing can
	// be left mounted here.
	base, err := os.MkdirTemp("/tmp", "segfs-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	bin := filepath.Join(base, "segfs")
	mp := filepath.Join(base, "mnt")
	data := filepath.Join(base, "data")
	src, err := os.Open(segfsBin)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := os.OpenFile(bin, os.O_WRONLY|os.O_CREATE, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(dst, src)
	src.Close()
	if cerr := dst.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	if err := os.Mkdir(mp, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{base, mp} {
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, 0o755)
	}
	// Daemons left by a failed run: ours are the ones running our copy.
	t.Cleanup(func() {
		for _, pid := range pidsRunning(bin) {
			syscall.Kill(pid, syscall.SIGKILL)
			waitExit(pid, 5*time.Second)
		}
	})

	script := `
set -u
B="$1"; M="$B/mnt"; D="$B/data"
as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups --reset-env "$@"; }
mknod -m 0666 "$B/fuse" c 10 229 && mount --bind "$B/fuse" /dev/fuse || { echo "no private /dev/fuse"; exit 2; }
trap 'umount -l "$M" 2>/dev/null' EXIT
waitclosed() { # the daemon logs "store closed" last
  for i in $(seq 1 200); do n=$(grep -sc 'msg="store closed"' "$D/segfs-mount.out"); [ "${n:-0}" -ge "$1" ] && return 0; sleep 0.1; done
  echo "daemon did not close the store"; return 1
}
cd /
as_user "$B/segfs" mount "$D" "$M"; echo "mount=$?"
grep " $M " /proc/self/mountinfo | grep -o 'fuse.segfs .*user_id=[0-9]*' | sed 's/.*user_id=/user_id=/'
as_user bash -c 'mkdir "$0/u" && seq 1 1000 >> "$0/u/0/data" && wc -l < "$0/u/0/data" && stat -c "owner=%U" "$0/u/0/data"' "$M"
as_user bash -c 'echo x > "$0/u/0/data"' "$M" 2>&1 | grep -o "Operation not permitted"
as_user fusermount3 -u "$M"; echo "umount=$?"
waitclosed 1 || exit 1
grep -q " $M " /proc/self/mountinfo && echo "still mounted"
as_user "$B/segfs" mount "$D" "$M"; echo "remount=$?"
as_user bash -c 'md5sum < "$0/u/0/data"' "$M"
as_user fusermount3 -u "$M"; echo "umount=$?"
waitclosed 2 || exit 1
seq 1 1000 | md5sum
`
	cmd := exec.Command("timeout", "-k", "5", "120", "unshare", "-m", "--propagation", "private", "bash", "-c", script, "bash", base)
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	logb, _ := os.ReadFile(filepath.Join(data, "segfs-mount.out"))
	if err != nil {
		t.Fatalf("user mount script: %v\n%s\n--- daemon log:\n%s", err, out, logb)
	}
	lines := mntLines(string(out))
	want := []string{"mount=0", "user_id=65534", "1000", "owner=nobody", "Operation not permitted", "umount=0", "remount=0"}
	if len(lines) != len(want)+3 {
		t.Fatalf("user mount script printed:\n%s\nwant:\n%s\nand the same md5 twice\n--- daemon log:\n%s", out, strings.Join(want, "\n"), logb)
	}
	for i, w := range want {
		if lines[i] != w {
			t.Fatalf("user mount script line %d = %q, want %q; output:\n%s\n--- daemon log:\n%s", i+1, lines[i], w, out, logb)
		}
	}
	if sum, stored := lines[len(want)+2], lines[len(want)]; stored != sum || lines[len(want)+1] != "umount=0" {
		t.Fatalf("after a remount as the user: md5 %q, umount %q; want md5 %q\n%s", stored, lines[len(want)+1], sum, out)
	}
	if !strings.Contains(string(logb), "level=INFO msg=mounted") {
		t.Fatalf("daemon log:\n%s", logb)
	}
}

// pidsRunning lists the processes whose executable path is bin.
func pidsRunning(bin string) []int {
	var pids []int
	for pid, args := range procArgs() {
		if len(args) > 0 && args[0] == bin {
			pids = append(pids, pid)
		}
	}
	return pids
}
