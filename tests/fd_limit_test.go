package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSmallSegmentsUnderLowFileLimit is the soak's descriptor exhaustion
// kept as a regression test (issue 7). The daemon runs with RLIMIT_NOFILE
// at 256, soft and hard. A compacted topic with 1 KiB segments takes
// about 800 KiB of keyed lines through `echo >>`, in rounds the cleaner
// runs between, beside twenty plain partitions: some 800 segments in all,
// which used to cost three descriptors each for as long as the daemon
// lived (the cleaner never merged what it had cleaned). Every write must
// succeed, the log must read back as the latest value of every key, and a
// restart (clean and after kill -9) must load it within the limit.
func TestSmallSegmentsUnderLowFileLimit(t *testing.T) {
	mntRequireFuse(t)
	base := t.TempDir()
	m := &mnt{t: t, data: filepath.Join(base, "data"), dir: filepath.Join(base, "mnt"), nofile: 256}
	if err := os.Mkdir(m.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--retention-check-interval", "100ms", "--cleaner-interval", "100ms"}
	m.mount(flags...)
	m.ok(`mkdir "$M/cmp" && printf '%s\n' cleanup.policy=compact key.separator== segment.bytes=1024 \
		min.cleanable.dirty.ratio=0.01 file.delete.delay.ms=0 >> "$M/cmp/config"
		for i in $(seq 0 19); do mkdir "$M/plain$i" && echo "plain $i" >> "$M/plain$i/0/data"; done`)
	const rounds, perRound, keys = 40, 150, 60
	value := strings.Repeat("v", 60)
	for r := 0; r < rounds; r++ {
		m.ok(fmt.Sprintf(`for i in $(seq %d %d); do echo "key$((i %% %d))=%s $i" >> "$M/cmp/0/data"; done`,
			r*perRound, (r+1)*perRound-1, keys, value), 60)
		time.Sleep(150 * time.Millisecond) // a cleaner pass or so
	}
	last := rounds*perRound - 1
	check := func(when string) {
		t.Helper()
		got := m.ok(`cat "$M/cmp/0/data"`)
		latest := map[string]string{}
		for _, l := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
			k, v, ok := strings.Cut(l, "=")
			if !ok || !strings.HasPrefix(v, value+" ") {
				t.Fatalf("%s: line %q was never written", when, l)
			}
			latest[k] = v
		}
		for i := last - keys + 1; i <= last; i++ {
			if k, want := fmt.Sprintf("key%d", i%keys), fmt.Sprintf("%s %d", value, i); latest[k] != want {
				t.Fatalf("%s: latest %s is %q, want %q", when, k, latest[k], want)
			}
		}
		for i := 0; i < 20; i++ {
			if got := m.ok(fmt.Sprintf(`cat "$M/plain%d/0/data"`, i)); got != fmt.Sprintf("plain %d\n", i) {
				t.Fatalf("%s: plain%d reads %q", when, i, got)
			}
		}
		if log := m.daemonLog(); strings.Contains(strings.ToLower(log), "too many open files") {
			t.Fatalf("%s: the daemon ran out of descriptors:\n%s", when, log)
		}
	}
	check("after the writes")
	segs, _ := filepath.Glob(filepath.Join(m.data, "cmp-0", "*.log"))
	// ~6,000 lines of ~80 bytes rolled ~800 segments; 60 keys fit in a few.
	if len(segs) > 60 {
		t.Fatalf("%d segments remain in the compacted partition: cleaned segments are not merged", len(segs))
	}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", m.pid))
	t.Logf("%d segments in the compacted partition, %d descriptors open in the daemon", len(segs), len(fds))

	m.unmount()
	m.mount(flags...)
	check("after a clean restart")
	m.kill9()
	m.mount(flags...)
	check("after kill -9 and a restart")
}

// TestMkdirTopicFailsCleanly: a `mkdir TOPIC` that fails part-way (here
// the daemon runs out of descriptors at partition 17 of 40) leaves no
// partition directory behind. The one whose creation failed used to stay
// (its .log, partition.metadata, leader-epoch-checkpoint), after the
// others were removed: the next mount refused the whole data directory,
// "topic big: partition directories are not numbered 0..0 (missing 0)".
func TestMkdirTopicFailsCleanly(t *testing.T) {
	mntRequireFuse(t)
	base := t.TempDir()
	m := &mnt{t: t, data: filepath.Join(base, "data"), dir: filepath.Join(base, "mnt"), nofile: 64}
	if err := os.Mkdir(m.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	m.mount()
	m.ok(`mkdir "$M/small" && echo kept >> "$M/small/0/data"`)
	m.unmount()
	m.mount("--partitions", "40")
	m.fails(`mkdir "$M/big"`, "Too many open files")
	m.unmount()
	ents, _ := os.ReadDir(m.data)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "big-") {
			t.Errorf("the failed mkdir left %s in the data directory", e.Name())
		}
	}
	m.nofile = 0
	m.mount()
	if got := m.ok(`ls "$M"`); got != "small\n" {
		t.Fatalf("topics after the restart: %q", got)
	}
	if got := m.ok(`cat "$M/small/0/data"`); got != "kept\n" {
		t.Fatalf("small/0 reads %q", got)
	}
}
