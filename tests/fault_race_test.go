package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFaultRaceDaemon is F11: the daemon itself built with -race (the
// package tests run in-process under -race already; this covers the
// binary with FUSE, the notifier and the Kafka server together) under
// the mixed load — bash loops, batched and 300,000-byte-line writers, a
// producer, tail -f, grep -c and a consumer — then a clean stop, 5 times.
// The race detector's reports go to the daemon log, which must have none;
// the oracle holds after every stop.
func TestFaultRaceDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds a race-enabled daemon")
	}
	rounds := faultRounds(t, "F11", 5)
	raceBin := filepath.Join(t.TempDir(), "segfs")
	if out, err := exec.Command("go", "build", "-race", "-o", raceBin, "..").CombinedOutput(); err != nil {
		t.Fatalf("go build -race: %v\n%s", err, out)
	}
	orig := segfsBin
	segfsBin = raceBin
	t.Cleanup(func() { segfsBin = orig })
	// A race-enabled program sleeps atexit_sleep_ms (1 s by default) at
	// exit to let its other threads run on and race: the `segfs mount`
	// that starts the daemon paid it at every mount, and the daemon at
	// every stop, 11 s of the test's 33. 200 ms still lets the daemon's
	// FUSE goroutines serve a few of tail -f's 50 ms polls of the
	// lazily detached mount after the store closed.
	t.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=200"))
	disk := faultLoopDisk(t, "ext4", 256)
	// The grace (the detached mount serving tail -f, four of its polls)
	// is not what is timed here: a shorter one only shortens each stop.
	r := faultNewRig(t, filepath.Join(disk.dir, "data"), "--unmount-grace", "200ms")
	r.toolBin = orig // dump-log and verify: see faultRig.toolBin
	faultMixedLoad(r, "", false)
	for i := 0; i < rounds; i++ {
		r.rounds = i
		r.startReaders("mix", "kaf")
		r.startWriters()
		r.waitProgress(5)
		time.Sleep(300 * time.Millisecond)
		syscall.Kill(r.m.pid, syscall.SIGTERM)
		r.faults++
		if !waitExit(r.m.pid, 60*time.Second) {
			t.Fatalf("race daemon still running 60s after SIGTERM")
		}
		r.stopClients(time.Second)
		if log, _ := os.ReadFile(filepath.Join(r.data, "segfs-mount.out")); strings.Contains(string(log), "DATA RACE") {
			t.Fatalf("the race detector reported:\n%s", log)
		}
		r.restart()
		r.oracle(true)
	}
	r.figures("F11")
}
