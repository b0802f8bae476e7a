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
	disk := faultLoopDisk(t, "ext4", 256)
	r := faultNewRig(t, filepath.Join(disk.dir, "data"), "--unmount-grace", "500ms")
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
