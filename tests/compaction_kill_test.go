package tests

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCompactionKill9 kills the daemon with SIGKILL at random moments
// while a writer updates 300 keys of a compacted topic and the cleaner
// rewrites its segments every 10 ms, ten times. After each kill the
// directory passes `segfs verify` (recovery's leftovers are warnings at
// most), and after each remount the log is consistent: values in offset
// order, no record twice, and for every key the latest acknowledged value
// (or the one in flight at the kill) is there. At the end the indexes pass
// `dump-log --index-sanity-check`.
func TestCompactionKill9(t *testing.T) {
	const keys, kills = 300, 10
	flags := []string{"--cleaner-interval", "10ms", "--retention-check-interval", "50ms"}
	m := mntNew(t, flags...)
	m.ok(`mkdir "$M/ck" && printf 'cleanup.policy=compact\nkey.separator==\nsegment.bytes=16384\nmin.cleanable.dirty.ratio=0.01\nfile.delete.delay.ms=0\n' > "$M/ck/config"`)
	partDir := filepath.Join(m.data, "ck-0")
	work := t.TempDir()
	acked := filepath.Join(work, "acked") // the value of every echo that returned
	if err := os.WriteFile(acked, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Value i goes to key i%300; values only grow, so offset order is
	// value order.
	loop := `last=$(tail -n1 acked); i=$(( ${last:--1} + 1 ))
while :; do echo "k$((i % ` + strconv.Itoa(keys) + `))=$i" >> "$M/ck/0/data" || exit 0; echo $i >> acked; i=$((i+1)); done`
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d", seed)
	var midSwap, withLeftovers int
	for k := 0; k < kills; k++ {
		writer := exec.Command("timeout", "60", "bash", "-c", loop)
		writer.Env = append(os.Environ(), "M="+m.dir)
		writer.Dir = work
		if err := writer.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- writer.Wait() }()
		passes := m.cleanerTotals("compaction", "ck-0").passes
		// Let the cleaner run at least once, then kill at a random moment.
		if !mntWaitFor(30*time.Second, func() bool { return m.cleanerTotals("compaction", "ck-0").passes > passes }) {
			t.Fatalf("kill %d: no compaction pass in 30 s\n%s", k, m.daemonLog())
		}
		time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
		m.kill9()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			writer.Process.Kill()
			t.Fatal("the writer did not stop after the kill")
		}
		leftovers := countFiles(partDir, ".cleaned") + countFiles(partDir, ".swap")
		if leftovers > 0 {
			midSwap++
		}
		if leftovers+countFiles(partDir, ".deleted") > 0 {
			withLeftovers++
		}
		// Offline, before recovery: no error, at most warnings.
		if out, err := exec.Command("timeout", "60", segfsBin, "verify", m.data).CombinedOutput(); err != nil {
			t.Fatalf("kill %d: segfs verify before remount: %v\n%s", k, err, out)
		}
		m.mount(flags...)
		inFlight := checkCompactedLog(t, k, mntLines(m.ok(`cat "$M/ck/0/data"`)), readFile(t, acked), keys)
		if inFlight >= 0 {
			// The value in flight at the kill is stored: it counts as
			// acknowledged from now on.
			f, err := os.OpenFile(acked, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(f, inFlight)
			f.Close()
		}
	}
	tot := m.cleanerTotals("compaction", "ck-0")
	t.Logf("%d kills: %d during a swap (.cleaned/.swap on disk), %d with cleaner leftovers; %d compaction passes logged, %d records removed",
		kills, midSwap, withLeftovers, tot.passes, tot.recordsRemoved)
	m.unmount()
	if out, err := exec.Command("timeout", "60", segfsBin, "verify", m.data).CombinedOutput(); err != nil {
		t.Fatalf("segfs verify after a clean unmount: %v\n%s", err, out)
	}
	m.sanityCheck()
}

// checkCompactedLog checks the lines "kK=V" of a compacted log against the
// values acknowledged so far: values grow in offset order (no record twice,
// none out of place), every value belongs to its key, and each key's last
// value is its latest acknowledged one or the one in flight at the kill.
// It returns the value in flight if the log holds it, else -1.
func checkCompactedLog(t *testing.T, round int, lines []string, ackedText string, keys int) int {
	t.Helper()
	acks := mntLines(ackedText)
	if len(acks) == 0 {
		t.Fatalf("round %d: nothing acknowledged", round)
	}
	lastAck, _ := strconv.Atoi(acks[len(acks)-1])
	latest := map[int]int{} // key → latest acknowledged value
	for _, a := range acks {
		v, err := strconv.Atoi(a)
		if err != nil {
			t.Fatalf("manifest line %q", a)
		}
		latest[v%keys] = v
	}
	last := -1
	got := map[int]int{}
	for i, l := range lines {
		k, v, ok := strings.Cut(l, "=")
		key, err1 := strconv.Atoi(strings.TrimPrefix(k, "k"))
		val, err2 := strconv.Atoi(v)
		if !ok || err1 != nil || err2 != nil || val%keys != key {
			t.Fatalf("round %d: line %d is %q", round, i, l)
		}
		if val <= last {
			t.Fatalf("round %d: line %d: value %d after %d: repeated or out of order", round, i, val, last)
		}
		last = val
		got[key] = val
	}
	if last > lastAck+1 {
		t.Fatalf("round %d: value %d in the log, but only %d was acknowledged", round, last, lastAck)
	}
	for key, want := range latest {
		if g := got[key]; g != want && !(g == lastAck+1 && g%keys == key) {
			t.Fatalf("round %d: key k%d holds %d, want its latest acknowledged value %d", round, key, g, want)
		}
	}
	if len(got) < len(latest) {
		t.Fatalf("round %d: %d keys in the log, %d written", round, len(got), len(latest))
	}
	if last == lastAck+1 {
		return last
	}
	return -1
}
