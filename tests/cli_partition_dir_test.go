package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIPartitionDirRefused: a directory holding segment files itself (a
// partition directory, or a copy of a mount's segments/ made with `rsync -a
// MOUNT/T/0/segments/ copy/`) given where a data directory belongs is
// refused with a message naming it and where the data directory is.
// verify, get-offsets and log-dirs found no partition in it and exited 0
// ("verified 0 partitions ... 0 errors"), so a copy was "verified"
// without a byte read, and mount served an empty filesystem and wrote the
// data directory's checkpoints among the segments.
func TestCLIPartitionDirRefused(t *testing.T) {
	needProgram(t, "rsync", "rsync")
	m := mntNew(t)
	m.ok(`mkdir "$M/orders" && seq 1 100 >> "$M/orders/0/data"`)
	base := t.TempDir()
	seg := filepath.Join(base, "copy")      // what rsync of segments/ makes
	data := filepath.Join(base, "data")     // the same, placed as Kafka lays it out
	part := filepath.Join(data, "orders-0") // a partition directory
	m.ok(`rsync -a "$M/orders/0/segments/" "` + seg + `/" && mkdir "` + data + `" && rsync -a "$M/orders/0/segments/" "` + part + `/"`)

	for _, dir := range []string{seg, part} {
		for _, cmd := range []string{"verify", "get-offsets", "log-dirs"} {
			r := cliRun(t, cmd, dir)
			if r.Code == 0 || !strings.Contains(r.Stderr, dir+" holds segment files (00000000000000000000.log)") {
				t.Errorf("segfs %s %s: exit %d, want a refusal naming the segment files\nstdout: %s\nstderr: %s", cmd, dir, r.Code, r.Stdout, r.Stderr)
			}
		}
	}
	if r := cliRun(t, "verify", part); !strings.Contains(r.Stderr, "its data directory is "+data) {
		t.Errorf("segfs verify %s does not name the data directory: %s", part, r.Stderr)
	}
	r := cliRun(t, "verify", data)
	if r.Code != 0 || !strings.Contains(r.Stdout, "orders-0: ok (1 segment, ") || !strings.Contains(r.Stdout, "log end 100,") {
		t.Fatalf("segfs verify %s: exit %d\n%s%s", data, r.Code, r.Stdout, r.Stderr)
	}

	// mount and serve refuse it before writing anything there.
	before, _ := os.ReadDir(part)
	mp := filepath.Join(base, "mnt")
	if err := os.Mkdir(mp, 0o755); err != nil {
		t.Fatal(err)
	}
	r = cliRun(t, "mount", part, mp)
	if r.Code == 0 {
		m2 := &mnt{t: t, data: part, dir: mp}
		if pid := m2.findDaemon(); pid != 0 {
			m2.pid = pid
			t.Cleanup(func() { m2.teardown(pid) })
		}
		t.Fatalf("segfs mount %s: exit 0, want a refusal\n%s%s", part, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "holds segment files") {
		t.Errorf("segfs mount %s: %s", part, r.Stderr)
	}
	// Bounded: a serve that takes the directory serves until stopped.
	out, err := exec.Command("timeout", "10", segfsBin, "serve", "--listen", "127.0.0.1:0", seg).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "holds segment files") {
		t.Errorf("segfs serve %s: %v, want a refusal\n%s", seg, err, out)
	}
	after, _ := os.ReadDir(part)
	if len(after) != len(before) {
		var names []string
		for _, e := range after {
			names = append(names, e.Name())
		}
		t.Errorf("the refused partition directory changed: %d entries before, now %v", len(before), names)
	}
}
