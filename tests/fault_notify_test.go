package tests

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestFaultNotifyTail is F15: notify safety under sustained `tail -f`.
// Four `tail -f` (on data, twice, and on offset/0) follow a partition
// that grows through the Kafka port (appends the kernel learns of only by
// the daemon's NotifyContent) and through the mount at once, in 5 bursts.
// Sampled every 100 ms: no task of the daemon or of a tail stays in D
// state (the notify deadlock of FUSE-NOTES §2.3 leaves them there for
// good); after each burst every tail catches up with every line and the
// fusectl `waiting` count of the connection returns to 0.
func TestFaultNotifyTail(t *testing.T) {
	rounds := faultRounds(t, "F15", 5)
	ctl := faultFusectl(t)
	disk := faultLoopDisk(t, "ext4", 256)
	r := faultNewRig(t, filepath.Join(disk.dir, "data"))
	r.topic("nt", "segment.bytes=65536")
	r.addWriter("k1", "kafka", "nt", false, 1)
	r.addWriter("e1", "echo", "nt", false, 1)
	waiting := filepath.Join(ctl, faultConnID(t, r.m.dir), "waiting")
	out := t.TempDir()
	var tails []*faultProc
	var outs []string
	for i, f := range []string{"data", "data", "offset/0", "data"} {
		o := filepath.Join(out, "tail"+string(rune('0'+i)))
		outs = append(outs, o)
		tails = append(tails, faultStart(t, "tail", 600, nil, "bash", "-c", `exec tail -s 0.05 -n +1 -f "$0" > "$1" 2>&1`,
			r.m.path("nt", "0", f), o))
	}
	stuck := map[string]int{}
	sample := func() {
		pids := []int{r.m.pid}
		for _, p := range tails {
			pids = append(pids, p.cmd.Process.Pid)
		}
		for _, pid := range pids {
			tasks, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "stat"))
			// timeout's child (tail) is one level down.
			kids, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "children"))
			for _, k := range kids {
				b, _ := os.ReadFile(k)
				for _, c := range strings.Fields(string(b)) {
					more, _ := filepath.Glob(filepath.Join("/proc", c, "task", "*", "stat"))
					tasks = append(tasks, more...)
				}
			}
			for _, s := range tasks {
				b, _ := os.ReadFile(s)
				st := string(b)
				if i := strings.LastIndexByte(st, ')'); i >= 0 && i+2 < len(st) && st[i+2] == 'D' {
					stuck[s]++
					if stuck[s] > 50 {
						stack, _ := os.ReadFile(strings.TrimSuffix(s, "stat") + "stack")
						t.Fatalf("%s in D state for 5 s:\n%s", s, stack)
					}
				} else {
					delete(stuck, s)
				}
			}
		}
	}
	for i := 0; i < rounds; i++ {
		r.rounds = i
		r.startWriters()
		end := time.Now().Add(1500 * time.Millisecond)
		for time.Now().Before(end) {
			sample()
			time.Sleep(100 * time.Millisecond)
		}
		for _, w := range r.writers {
			w.proc.kill()
		}
		r.faults++
		r.quiesce("nt")
		p := r.readPartition("nt")
		for k, o := range outs {
			want := string(p.text)
			if !mntWaitFor(20*time.Second, func() bool {
				sample()
				b, _ := os.ReadFile(o)
				return len(b) >= len(want)
			}) {
				b, _ := os.ReadFile(o)
				t.Fatalf("tail %d printed %d of %d bytes 20 s after the burst", k, len(b), len(want))
			}
			if b, _ := os.ReadFile(o); string(b) != want {
				d := firstDiffByte(b, []byte(want))
				t.Fatalf("tail %d printed %d bytes that differ from the %d stored at byte %d:\ntail:   %q\nstored: %q",
					k, len(b), len(want), d, b[max(0, d-100):min(len(b), d+100)], want[max(0, d-100):min(len(want), d+100)])
			}
		}
		if !mntWaitFor(10*time.Second, func() bool {
			b, err := os.ReadFile(waiting)
			return err == nil && strings.TrimSpace(string(b)) == "0"
		}) {
			b, _ := os.ReadFile(waiting)
			t.Fatalf("fusectl waiting is %q 10 s after the burst", b)
		}
		r.oracle(false)
	}
	for _, p := range tails {
		p.kill()
	}
	r.figures("F15")
	r.m.unmount()
}

func firstDiffByte(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
