package tests

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// cliDirSnapshot describes every file and directory under dir (type,
// mode, size, mtime, content hash), except the daemon's log, which a
// refused `segfs mount` appends its reason to.
func cliDirSnapshot(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if rel == "segfs-mount.out" {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %v size=%d mtime=%d", rel, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" sha=%x", sha256.Sum256(b))
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// cliRefused runs segfs (under timeout), expects it to fail saying want,
// and leaves nothing mounted on mp if it did not.
func cliRefused(t *testing.T, mp, want string, args ...string) {
	t.Helper()
	out, err := exec.Command("timeout", append([]string{"-k", "5", "60", segfsBin}, args...)...).CombinedOutput()
	if mp != "" && mntIsMounted(mp) {
		daemon := (&mnt{t: t, dir: mp}).findDaemon()
		exec.Command("umount", "-l", mp).Run()
		waitExit(daemon, 10*time.Second) // before TempDir's cleanup removes its data
		t.Fatalf("segfs %q mounted %s; want it refused saying %q", args, mp, want)
	}
	if err == nil || !strings.Contains(string(out), want) {
		t.Fatalf("segfs %q: %v %q; want it refused saying %q", args, err, out, want)
	}
}

// TestRefusedMountLeavesDataDir: a `segfs mount` or `segfs serve` that
// refuses a data directory leaves it as it was. A topic with a gap in its
// partition directories was found only after the topics before it had
// been loaded: an empty partition directory had been given its first
// segment, the clean-shutdown marker deleted (so the next mount recovered
// every segment) and the lock file rewritten; a topics file that did not
// parse, likewise after the marker was gone. Flags the daemon refused
// came after the data directory and its log had been created.
func TestRefusedMountLeavesDataDir(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/u" && seq 3 >> "$M/u/0/data"`)
	m.unmount()
	data := m.data
	if _, err := os.Stat(filepath.Join(data, ".kafka_cleanshutdown")); err != nil {
		t.Fatalf("no clean-shutdown marker after umount: %v", err)
	}
	// A new, empty partition directory that sorts first, and no lock
	// file (a Kafka log directory segfs never opened has none).
	if err := os.Mkdir(filepath.Join(data, "a-0"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(data, ".lock"))
	mp := filepath.Join(t.TempDir(), "mnt")
	os.Mkdir(mp, 0o755)
	t.Cleanup(func() {
		if mntIsMounted(mp) {
			exec.Command("umount", "-l", mp).Run()
		}
	})
	refusedAll := func(want string) {
		t.Helper()
		before := cliDirSnapshot(t, data)
		for _, args := range [][]string{
			{"mount", data, mp},
			{"mount", "--foreground", data, mp},
			{"serve", "--listen", "127.0.0.1:0", data},
		} {
			cliRefused(t, mp, want, args...)
			if after := cliDirSnapshot(t, data); after != before {
				t.Fatalf("segfs %q refused the data directory but changed it:\n--- before\n%s\n--- after\n%s", args, before, after)
			}
		}
	}

	// Partition directories u-0 and u-2: u-1 is missing.
	gap := filepath.Join(data, "u-2")
	if err := os.Mkdir(gap, 0o755); err != nil {
		t.Fatal(err)
	}
	refusedAll("partition directory u-1 is missing")
	os.Remove(gap)

	topics := filepath.Join(data, "segfs-topics.json")
	good, err := os.ReadFile(topics)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(topics, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	refusedAll("segfs-topics.json")
	if err := os.WriteFile(topics, good, 0o644); err != nil {
		t.Fatal(err)
	}

	// A machine without FUSE (a container without /dev/fuse): the store
	// was opened, recovered and closed before mount(2) failed. /dev is an
	// empty tmpfs in a mount namespace of the command's own.
	if _, ok := optionalProgram(t, "unshare", "util-linux", "the mount without /dev/fuse"); ok {
		before := cliDirSnapshot(t, data)
		for _, args := range [][]string{{"mount", data, mp}, {"mount", "--foreground", data, mp}} {
			out, err := exec.Command("timeout", append([]string{"-k", "5", "60", "unshare", "-m", "sh", "-c",
				`mount -t tmpfs none /dev && exec "$0" "$@"`, segfsBin}, args...)...).CombinedOutput()
			if err == nil || !strings.Contains(string(out), "FUSE is not available") {
				t.Errorf("segfs %q without /dev/fuse: %v %q; want it refused saying FUSE is not available", args, err, out)
			}
			if after := cliDirSnapshot(t, data); after != before {
				t.Fatalf("segfs %q without /dev/fuse changed the data directory:\n--- before\n%s\n--- after\n%s", args, before, after)
			}
		}
	}

	// Refused flags: a data directory that does not exist is not created.
	missing := filepath.Join(t.TempDir(), "missing")
	for _, args := range [][]string{
		{"mount", "--cleaner-buffer-size", "10", missing, mp},
		{"mount", "--retention-check-interval", "0s", missing, mp},
		{"mount", missing, filepath.Join(mp, "nonexistent")},
	} {
		cliRefused(t, mp, "", args...)
		if _, err := os.Stat(missing); err == nil {
			t.Fatalf("segfs %q was refused but created %s", args, missing)
		}
	}

	// Once fixed, the directory mounts.
	again := mntAt(t, data)
	if got := again.ok(`cat "$M/u/0/data"; ls "$M"`); got != "1\n2\n3\na\nu\n" {
		t.Fatalf("after the refusals: %q", got)
	}
}

// TestLockedDataDirMessage: `segfs mount` and `segfs serve` of a data
// directory another segfs holds say so in one sentence naming the
// directory, the holder's pid and what it is. mount said it twice: "data
// directory D is in use by another process: data directory is locked: D
// is held by process P". The daemon's refusal, relayed by the mount
// command, lacked the "mount: " the --foreground mount gives.
func TestLockedDataDirMessage(t *testing.T) {
	// It mostly waits (three refused starts of segfs) on a mount of its
	// own: it runs beside the other tests that wait (t.Parallel).
	t.Parallel()
	m := mntNew(t)
	other := filepath.Join(t.TempDir(), "mnt")
	os.Mkdir(other, 0o755)
	t.Cleanup(func() {
		if mntIsMounted(other) {
			exec.Command("umount", "-l", other).Run()
		}
	})
	sentence := fmt.Sprintf("data directory %s is in use by process %d (segfs mount)\n", m.data, m.pid)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mount", m.data, other}, "segfs: mount: " + sentence},
		{[]string{"mount", "--foreground", m.data, other}, "segfs: mount: " + sentence},
		{[]string{"serve", "--listen", "127.0.0.1:0", m.data}, "segfs: serve: " + sentence},
	} {
		var stderr strings.Builder
		cmd := exec.Command("timeout", append([]string{"-k", "5", "60", segfsBin}, tc.args...)...)
		cmd.Stderr = &stderr
		err := cmd.Run()
		if err == nil || stderr.String() != tc.want {
			t.Errorf("segfs %q: %v, stderr %q; want %q", tc.args, err, stderr.String(), tc.want)
		}
	}
}

// TestMountNestedDirs: a mountpoint inside the data directory (D/x-0 was
// taken for a partition and given a segment, D/sub scanned by the daemon,
// which then looked at its own mount) or a data directory inside the
// mountpoint (hidden by the mount, reached through it) is refused before
// anything is created or mounted, also when a symbolic link leads there.
func TestMountNestedDirs(t *testing.T) {
	mntRequireFuse(t)
	base := t.TempDir()
	data, mp := filepath.Join(base, "data"), filepath.Join(base, "mnt")
	for _, d := range []string{filepath.Join(data, "x-0"), filepath.Join(data, "sub"), mp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	toMnt, toData := filepath.Join(base, "to-mnt"), filepath.Join(base, "to-data")
	os.Symlink(mp, toMnt)
	os.Symlink(data, toData)
	before := cliDirSnapshot(t, base)
	for _, tc := range []struct {
		args    []string
		mounted string // the directory a mount would cover
		want    string
	}{
		{[]string{"mount", data, filepath.Join(data, "x-0")}, filepath.Join(data, "x-0"), "must not be inside the data directory"},
		{[]string{"mount", data, filepath.Join(data, "sub")}, filepath.Join(data, "sub"), "must not be inside the data directory"},
		{[]string{"mount", "--foreground", data, filepath.Join(data, "sub")}, filepath.Join(data, "sub"), "must not be inside the data directory"},
		{[]string{"mount", data, filepath.Join(toData, "x-0")}, filepath.Join(data, "x-0"), "must not be inside the data directory"},
		{[]string{"mount", toData, filepath.Join(data, "sub")}, filepath.Join(data, "sub"), "must not be inside the data directory"},
		{[]string{"mount", data, data}, data, "the same directory"},
		{[]string{"mount", filepath.Join(mp, "d"), mp}, mp, "must not be inside the mountpoint"},
		{[]string{"mount", filepath.Join(toMnt, "d"), mp}, mp, "must not be inside the mountpoint"},
		{[]string{"mount", filepath.Join(toMnt, "a", "b"), toMnt}, mp, "must not be inside the mountpoint"},
	} {
		cliRefused(t, tc.mounted, tc.want, tc.args...)
		if after := cliDirSnapshot(t, base); after != before {
			t.Fatalf("segfs %q was refused but changed the directories:\n--- before\n%s\n--- after\n%s", tc.args, before, after)
		}
	}
}
