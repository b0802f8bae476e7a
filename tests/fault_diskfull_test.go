package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// faultFill leaves about keep bytes free on the filesystem of dir by
// writing a filler file there, and returns its path.
func faultFill(t testing.TB, dir string, keep int64, n int) string {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * st.Bsize
	path := filepath.Join(dir, fmt.Sprintf("filler-%d", n))
	if free > keep {
		if err := os.WriteFile(path, make([]byte, free-keep), 0o644); err != nil {
			t.Fatalf("filler: %v", err)
		}
	}
	return path
}

// TestFaultDiskFull is F8 on a 4 MiB tmpfs, 5 rounds for each place the
// disk can fill up: a data append, a segment roll (16 KiB segments, so the
// sealing of one segment and the creation of the next meet a full disk),
// and an index write (index.interval.bytes=0: an index entry per batch,
// and the mmap'd index needs a new page now and then). Each round leaves a
// random 8-200 KiB free, runs the writers into ENOSPC and checks: writers
// got ENOSPC, the daemon is alive, the oracle holds (no torn batch, st_size
// equals the bytes read, reads work), and after the filler is deleted,
// appends work again without a restart. A clean remount at the end finds
// everything.
func TestFaultDiskFull(t *testing.T) {
	rounds := faultRounds(t, "F8", 5)
	cases := []struct {
		name   string
		config []string
	}{
		{"append", []string{"segment.bytes=1048576"}},
		{"roll", []string{"segment.bytes=16384"}},
		{"index", []string{"segment.bytes=65536", "index.interval.bytes=0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			disk := faultTmpfs(t, "4m")
			r := faultNewRig(t, filepath.Join(disk, "data"))
			r.topic("full", c.config...)
			r.addWriter("e1", "echo", "full", false, 1)
			r.addWriter("g1", "lines", "full", false, 4)
			for i := 0; i < rounds; i++ {
				r.rounds = i
				filler := faultFill(t, disk, int64(8<<10+r.rng.IntN(192<<10)), i)
				r.startWriters()
				for _, w := range r.writers {
					if !w.proc.wait(60 * time.Second) {
						t.Fatalf("writer %s still running 60s after the disk filled", w.id)
					}
					if !strings.Contains(w.proc.errb.String(), "No space left on device") && !strings.Contains(w.proc.errb.String(), "ENOSPC") {
						t.Errorf("writer %s stopped with %v: %s, want ENOSPC", w.id, w.proc.err, w.proc.errb)
					}
				}
				r.faults++
				if !pidAlive(r.m.pid) {
					t.Fatalf("the daemon died on a full disk:\n%s", r.m.daemonLog())
				}
				r.oracle(false)
				if err := os.Remove(filler); err != nil {
					t.Fatal(err)
				}
				// Space is back: appends work again, no restart (the
				// probe is e1's next line).
				e1 := r.writers[0]
				probe := e1.line(e1.next)
				r.m.ok(fmt.Sprintf(`echo %q >> "$M/full/0/data" && echo %d >> %q`, probe, e1.next, e1.man))
				p := r.readPartition("full")
				if p.lines[len(p.lines)-1] != probe {
					t.Fatalf("after freeing space the last line is %q, want %q", p.lines[len(p.lines)-1], probe)
				}
				e1.next++
			}
			r.figures("F8-" + c.name)
			r.m.unmount()
			r.m.mount(r.mountArgs...)
			r.oracle(false)
		})
	}
}
