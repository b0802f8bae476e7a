package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/segfs/segfs/tests/faultwriter/faultline"
)

// faultMixedLoad sets up the mixed load of the kill and power-cut loops on
// topics named with suffix: two bash `echo >>` loops and a short-line
// writer batching up to 4 lines per write(2) share mix; a writer of 1 to
// 300,000-byte lines (up to 4 per write, so writes cross 4 KiB pages and
// the 1 MiB max_write) has big; a Kafka producer with acks=-1 has kaf.
// Small segments make rolls frequent, so faults land around them too.
// durable makes every writer acknowledge only after fsync (kaf: flush
// after every produce).
func faultMixedLoad(r *faultRig, suffix string, durable bool) {
	r.writers = nil
	flush := []string{}
	if durable {
		flush = []string{"flush.messages=1"}
	}
	r.topic("mix"+suffix, "segment.bytes=262144")
	r.topic("big"+suffix, "segment.bytes=4194304")
	r.topic("kaf"+suffix, append([]string{"segment.bytes=262144"}, flush...)...)
	r.addWriter("e1"+suffix, "echo", "mix"+suffix, durable, 1)
	r.addWriter("e2"+suffix, "echo", "mix"+suffix, durable, 1)
	r.addWriter("g1"+suffix, "lines", "mix"+suffix, durable, 4)
	b := r.addWriter("b1"+suffix, "big", "big"+suffix, durable, 4)
	// Bounded per run, so that a thousand-round soak stays within its disk.
	b.count, b.pause = 8, "5ms"
	r.addWriter("k1"+suffix, "kafka", "kaf"+suffix, false, 1)
}

// faultEpoch is how many rounds use the same topics: the oracle rereads
// every partition after every fault, so long soaks start afresh now and
// then to keep a round's cost flat.
const faultEpoch = 20

// TestFaultKill9 is F1 with F14: SIGKILL of the daemon at a random moment
// under the mixed load, with retention and compaction running on two more
// topics (faultCleanerLoad), while `tail -f`, a `grep -c` loop and a Kafka
// consumer read; then `segfs mount` straight onto the dead mount (no
// `umount -l` first: the restart must need no manual step, and no mount
// may be stacked). The oracle runs after every restart: every write()
// that returned is stored once, in order, intact; at most the write in
// flight more; what tail, grep and the consumer saw is still there.
// SEGFS_FAULT_F1 sets the count (default 5).
func TestFaultKill9(t *testing.T) {
	rounds := faultRounds(t, "F1", 5)
	disk := faultLoopDisk(t, "ext4", 256+rounds*4)
	r := faultNewRig(t, filepath.Join(disk.dir, "data"), faultCleanerFlags...)
	r.lastRound = rounds - 1
	began := time.Now()
	for i := 0; i < rounds; i++ {
		if i%faultEpoch == 0 {
			r.epochStart(i, began)
			faultMixedLoad(r, fmt.Sprintf("-%d", i/faultEpoch), false)
			faultCleanerLoad(r, fmt.Sprintf("-%d", i/faultEpoch), false)
		}
		r.rounds = i
		mix, kaf := r.writers[0].topic, r.writers[4].topic
		r.startReaders(mix, kaf)
		r.startWriters()
		r.waitProgress(3)
		time.Sleep(time.Duration(r.rng.IntN(300)) * time.Millisecond)
		r.killDaemon()
		r.faults++
		r.stopClients(time.Second)
		r.restart()
		r.oracle(true)
	}
	r.figures("F1")
	if r.ackedChecked == 0 {
		t.Fatal("nothing was acknowledged: the test proves nothing")
	}
	r.requireCleaners()
	r.m.unmount()
	r.m.sanityCheck()
}

// TestFaultWriterKilled is F12: a writer SIGKILLed in the middle of its
// write(2) calls, 5 times. (a) A writer that wrote half a line (no
// newline) and is killed: by the documented Release policy (DESIGN.md
// "data", fs/doc.go) the unfinished line becomes one record of its own at
// the close the kill implies — never glued to another writer's bytes.
// (b) A writer of multi-MiB writes (several 900,000-byte lines per
// write(2), split by the kernel at max_write) killed at a random moment:
// every stored line of it is whole except possibly its last, which is a
// prefix of the line being written; the other writer's lines are intact.
func TestFaultWriterKilled(t *testing.T) {
	rounds := faultRounds(t, "F12", 5)
	m := mntNew(t)
	m.ok(`mkdir "$M/wk"`)
	data := m.path("wk", "0", "data")
	bin := faultwriterBin(t)
	work := t.TempDir()
	for i := 0; i < rounds; i++ {
		// (a) half a line, then the kill. The writer marks a file once
		// both its writes returned: the complete line showing in data
		// does not mean the unfinished one was written too, and a kill
		// between the two (seen in CI beside a soak) leaves nothing to
		// commit at RELEASE.
		mark := filepath.Join(work, fmt.Sprintf("half%d", i))
		half := faultStart(t, "half", 60, []string{"F=" + data, "I=" + strconv.Itoa(i), "MARK=" + mark}, "bash", "-c",
			`exec 3>>"$F"; printf 'half %s complete\n' "$I" >&3; printf 'half %s unfinish' "$I" >&3; : >"$MARK"; sleep 60`)
		if !mntWaitFor(10*time.Second, func() bool {
			_, err := os.Stat(mark)
			return err == nil
		}) {
			t.Fatal("the half-line writer did not write")
		}
		if got := m.ok(`cat "$M/wk/0/data"`); !strings.Contains(got, fmt.Sprintf("half %d complete\n", i)) {
			t.Fatalf("the complete line of the half-line writer is not in data: %q", tailOf(got, 200))
		}
		half.kill()
		m.ok(`echo "other after half ` + strconv.Itoa(i) + `" >> "$M/wk/0/data"`)
		// RELEASE is asynchronous: wait for the unfinished line.
		want := fmt.Sprintf("half %d complete\nhalf %d unfinish\nother after half %d\n", i, i, i)
		if !mntWaitFor(10*time.Second, func() bool { return strings.HasSuffix(m.ok(`cat "$M/wk/0/data"`), want) }) &&
			!strings.HasSuffix(m.ok(`cat "$M/wk/0/data"`), fmt.Sprintf("half %d complete\nother after half %d\nhalf %d unfinish\n", i, i, i)) {
			t.Fatalf("after killing a writer mid-line, data ends with %q", tailOf(m.ok(`cat "$M/wk/0/data"`), 200))
		}

		// (b) multi-chunk writes killed at random.
		id := fmt.Sprintf("m%d", i)
		man := filepath.Join(work, id)
		m.ok(`mkdir "$M/` + id + `"`)
		data := m.path(id, "0", "data")
		big := faultStart(t, id, 120, nil, bin, "lines", "-id", id, "-big", "-batch", "4", "-file", data, "-manifest", man)
		other := faultStart(t, "o"+id, 120, []string{"F=" + data, "I=" + strconv.Itoa(i)}, "bash", "-c",
			`for n in $(seq 1 200); do echo "o$I $n" >> "$F" || exit 3; done`)
		time.Sleep(time.Duration(50+i*37) * time.Millisecond)
		big.kill()
		if !other.wait(60 * time.Second) {
			t.Fatal("the other writer hung")
		}
		time.Sleep(200 * time.Millisecond) // the killed writer's RELEASE
		var mine []string
		others := 0
		for _, l := range mntLines(m.ok(`cat "$M/` + id + `/0/data"`)) {
			if strings.HasPrefix(l, "o"+strconv.Itoa(i)+" ") {
				others++
				if l != fmt.Sprintf("o%d %d", i, others) {
					t.Fatalf("other writer's line %d is %q", others, l)
				}
			} else {
				mine = append(mine, l)
			}
		}
		if others != 200 {
			t.Fatalf("other writer: %d of 200 lines", others)
		}
		b, _ := os.ReadFile(man)
		acked := len(mntLines(string(b)))
		for k, l := range mine {
			want := string(faultline.Line(id, int64(k+1), true))
			if l == want {
				continue
			}
			if k == len(mine)-1 && strings.HasPrefix(want, l) {
				t.Logf("round %d: the killed writer's last line is stored cut at %d of %d bytes (Release policy)", i, len(l), len(want))
				continue
			}
			t.Fatalf("killed writer's line %d (%d acked) is %d bytes %.60q, want %d bytes", k+1, acked, len(l), l, len(want))
		}
		if len(mine) < acked {
			t.Fatalf("killed writer: %d lines acknowledged, %d stored", acked, len(mine))
		}
	}
	m.unmount()
	m.sanityCheck()
}

func tailOf(s string, n int) string { return s[max(0, len(s)-n):] }

// TestFaultSigtermBusy is F13: SIGTERM while writers append and `tail -f`
// holds data open, 5 times. The daemon unmounts lazily, keeps serving the
// open files for the grace period, exits; the next mount is clean (no
// recovery truncation) and the oracle holds.
func TestFaultSigtermBusy(t *testing.T) {
	rounds := faultRounds(t, "F13", 5)
	disk := faultLoopDisk(t, "xfs", 256)
	// The daemon serves the open files for the grace after the lazy
	// unmount (tail -f polls every 50 ms); its length is not what is
	// tested, and every round waited it out whole.
	r := faultNewRig(t, filepath.Join(disk.dir, "data"), "--unmount-grace", "200ms")
	faultMixedLoad(r, "", false)
	for i := 0; i < rounds; i++ {
		r.rounds = i
		r.startReaders("mix", "kaf")
		r.startWriters()
		r.waitProgress(3)
		syscall.Kill(r.m.pid, syscall.SIGTERM)
		r.faults++
		if !waitExit(r.m.pid, 30*time.Second) {
			t.Fatalf("daemon still running 30s after SIGTERM with busy files\n%s", r.m.daemonLog())
		}
		if mntIsMounted(r.m.dir) {
			t.Fatal("still in mountinfo after SIGTERM")
		}
		r.stopClients(time.Second)
		if !strings.Contains(r.m.daemonLog(), "store closed") {
			t.Fatalf("the store was not closed cleanly:\n%s", r.m.daemonLog())
		}
		r.restart()
		r.oracle(true)
	}
	if r.truncations != 0 {
		t.Errorf("%d recovery truncations after clean stops", r.truncations)
	}
	r.figures("F13")
}
