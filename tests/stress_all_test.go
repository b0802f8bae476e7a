package tests

// TestStressEverything runs every background and foreground path of the
// daemon at once on the same partitions, then unmounts cleanly, remounts
// and checks what every client was told against what is stored.
//
// Topics (4 KiB segments, so rolls are constant):
//   - del: 2 partitions, cleanup.policy=delete, retention.ms and
//     retention.bytes short (changed while it runs).
//   - cmp: 2 partitions, cleanup.policy=compact,delete, key.separator "=",
//     dirty ratio 0.01, delete.retention.ms short; keys are per writer.
//   - grow: starts with 1 partition; `mkdir grow/N` and CreatePartitions
//     add partitions while a writer appends to a random existing one.
//
// Load, all at once: on every del and cmp partition an `echo >>` loop, a
// `cat >>` of 1-20 lines a write, a `dd oflag=append bs=1000` (writes that
// cut lines; every other one with conv=fsync), a writer that keeps one
// descriptor and writes each line in two write(2)s, and a franz-go
// producer (idempotent, acks=all, idle now and then past
// --producer-id-expiration); `tail -f` on every partition from before the
// first write, short-lived `tail -f`s, `cat data`, `grep -c`, one open of
// data read in odd pieces then pread again, `head -n1 offset/N`,
// `readlink time/T`, `cat status` and `segfs verify` loops; a
// read_uncommitted and a read_committed consumer, a consumer group that
// commits (one member stays, one joins and leaves), and raw Fetch requests
// with small byte limits; config writes through `config` and
// IncrementalAlterConfigs (retention, segment and index sizes, codecs,
// timestamp type, flush, cleanup.policy), DeleteRecords, ListOffsets by
// time, DescribeConfigs, DescribeLogDirs. The daemon's cleaners run every
// 20 ms with a 1 KiB offset map (so passes are partial).
//
// Invariants: every write, produce and admin request succeeds (or is
// refused as Kafka refuses it); lines are whole, of a known writer, never
// NUL; per writer, a tail -f shows every line in order, a cat shows a
// contiguous run on del, an increasing one on cmp; a byte's position in an
// open data never changes; every fetched batch is whole and CRC-valid;
// offsets a consumer sees increase and every source (produce acks,
// fetches, offset/N) agrees on the record at each offset; status is sane
// and monotonic; at the end, del's offsets are dense, its writers' lines
// a contiguous run ending at their last write, cmp keeps each key's last
// write, data equals what Kafka fetches, status, st_size, offset/N and
// time/T agree with the files, Kafka and ListOffsets, the log start is at
// least every DeleteRecords offset; after a clean unmount `segfs verify`
// passes, a remount shows the same data, status and group commits, no fd,
// socket or goroutine stays behind, and the daemon logged no panic, race
// or error.
//
// SEGFS_STRESS_DURATION (default 12s) sets how long the load runs;
// SEGFS_STRESS_RACE=1 runs a daemon built with -race;
// SEGFS_STRESS_KAFKA and SEGFS_STRESS_PPROF fix the daemon's ports;
// SEGFS_STRESS_SEGMENT lists the segment.bytes values of del and cmp
// (default 4096,8192; a few hundred bytes roll at nearly every append).

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	stressPad   = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	stressKeys  = 8  // keys per writer on cmp
	stressTomb  = 13 // every 13th write of a cmp writer is a tombstone
	stressGroup = "stress-g"
)

// stressLine is the line writer id writes as its seq-th (from 1) on a
// keyed or an unkeyed topic. The bash writers compute the same.
func stressLine(id string, seq int, keyed bool) string {
	if !keyed {
		return id + " " + strconv.Itoa(seq) + " " + stressPad
	}
	key := id + ".k" + strconv.Itoa(seq%stressKeys)
	if seq%stressTomb == 0 {
		return key + "="
	}
	return key + "=" + id + " " + strconv.Itoa(seq) + " " + stressPad
}

var (
	stressPlainRE = regexp.MustCompile(`^([a-z]+[0-9]*) ([0-9]+) ` + stressPad + `$`)
	stressKeyedRE = regexp.MustCompile(`^([a-z]+[0-9]*)\.k([0-9])=(?:([a-z]+[0-9]*) ([0-9]+) ` + stressPad + `)?$`)
)

// stressParse returns the writer, seq (0 for a tombstone) and key (-1
// unkeyed) of a line, or ok false when it is not a line any writer writes.
func stressParse(l string, keyed bool) (id string, seq, key int, ok bool) {
	if !keyed {
		m := stressPlainRE.FindStringSubmatch(l)
		if m == nil {
			return "", 0, -1, false
		}
		seq, _ = strconv.Atoi(m[2])
		return m[1], seq, -1, seq > 0
	}
	m := stressKeyedRE.FindStringSubmatch(l)
	if m == nil {
		return "", 0, 0, false
	}
	key, _ = strconv.Atoi(m[2])
	if m[3] == "" {
		return m[1], 0, key, true
	}
	seq, _ = strconv.Atoi(m[4])
	if m[3] != m[1] || seq%stressKeys != key || seq%stressTomb == 0 {
		return "", 0, 0, false
	}
	return m[1], seq, key, true
}

type stressTP struct {
	topic string
	part  int32
}

func (tp stressTP) String() string { return fmt.Sprintf("%s/%d", tp.topic, tp.part) }

func (tp stressTP) keyed() bool { return tp.topic == "cmp" }

// stressWriter is one bash writer of a partition (or, for grow, of random
// partitions).
type stressWriter struct {
	id, mode string
	tp       stressTP
	proc     *stressProc
	acked    int // its last acknowledged seq, known once it exited
}

// stressProc is a process of the harness, in its own process group.
type stressProc struct {
	name string
	cmd  *exec.Cmd
	out  string // file with its stdout and stderr
	done chan struct{}
	err  error
}

type stressRig struct {
	t        *testing.T
	m        *mnt
	addr     string
	pprof    string
	work     string
	stopFile string
	bin      string

	quit chan struct{} // closed to stop the loops
	wg   sync.WaitGroup

	mu        sync.Mutex
	obs       map[stressTP]map[int64]string // the record at an offset, as any source saw it
	obsSrc    map[stressTP]map[int64]string
	acked     map[stressTP]map[int64]string // producer acks
	prodSeq   map[stressTP]int              // producer's last acked seq per partition (in order)
	drFloor   map[stressTP]int64
	failures  map[string]int
	counts    map[string]int
	growParts atomic.Int32
	// growBorn is when each grow partition was created (under mu): a
	// client's metadata may not know it for a moment after.
	growBorn map[int32]time.Time

	admin   *kgo.Client
	seg     []string // the segment.bytes of del and cmp, one at a time
	segMin  int
	writers []*stressWriter
	procs   []*stressProc
}

// fail reports a broken invariant from any goroutine, at most 5 times per
// kind so that a systematic failure stays readable.
func (r *stressRig) fail(kind, format string, args ...any) {
	r.mu.Lock()
	r.failures[kind]++
	n := r.failures[kind]
	r.mu.Unlock()
	if n <= 5 {
		r.t.Errorf("%s: %s", kind, fmt.Sprintf(format, args...))
	}
}

func (r *stressRig) count(what string, n int) {
	r.mu.Lock()
	r.counts[what] += n
	r.mu.Unlock()
}

// observe records that source saw line at offset of tp, and fails when a
// source saw something else there.
func (r *stressRig) observe(tp stressTP, off int64, line, source string) {
	r.mu.Lock()
	m := r.obs[tp]
	if m == nil {
		m = map[int64]string{}
		r.obs[tp] = m
		r.obsSrc[tp] = map[int64]string{}
	}
	prev, seen := m[off]
	prevSrc := r.obsSrc[tp][off]
	if !seen {
		m[off] = line
		r.obsSrc[tp][off] = source
	}
	r.mu.Unlock()
	if seen && prev != line {
		r.fail("offset reused", "%s offset %d: %s saw %q, %s saw %q", tp, off, prevSrc, prev, source, line)
	}
}

func stressEnvDuration(t *testing.T) time.Duration {
	v := os.Getenv("SEGFS_STRESS_DURATION")
	if v == "" {
		return 12 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("SEGFS_STRESS_DURATION=%q: %v", v, err)
	}
	return d
}

func TestStressEverything(t *testing.T) {
	mntRequireFuse(t)
	dur := stressEnvDuration(t)
	r := &stressRig{
		t: t, work: t.TempDir(), quit: make(chan struct{}),
		obs: map[stressTP]map[int64]string{}, obsSrc: map[stressTP]map[int64]string{},
		acked: map[stressTP]map[int64]string{}, prodSeq: map[stressTP]int{},
		drFloor: map[stressTP]int64{}, failures: map[string]int{}, counts: map[string]int{},
	}
	r.stopFile = filepath.Join(r.work, "stop")
	r.seg = strings.Split(cmp.Or(os.Getenv("SEGFS_STRESS_SEGMENT"), "4096,8192"), ",")
	r.segMin = math.MaxInt
	for _, v := range r.seg {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("SEGFS_STRESS_SEGMENT: %v", err)
		}
		r.segMin = min(r.segMin, n)
	}
	r.bin = segfsBin
	if os.Getenv("SEGFS_STRESS_RACE") == "1" {
		r.bin = filepath.Join(r.work, "segfs-race")
		if out, err := exec.Command("go", "build", "-race", "-o", r.bin, "..").CombinedOutput(); err != nil {
			t.Fatalf("go build -race: %v\n%s", err, out)
		}
		orig := segfsBin
		segfsBin = r.bin
		t.Cleanup(func() { segfsBin = orig })
	}
	r.addr = os.Getenv("SEGFS_STRESS_KAFKA")
	if r.addr == "" {
		r.addr = kafkaFreeAddr(t)
	}
	r.pprof = os.Getenv("SEGFS_STRESS_PPROF")
	if r.pprof == "" {
		r.pprof = kafkaFreeAddr(t)
	}
	flags := r.flags()
	r.m = mntNew(t, flags...)
	kafkaWaitListening(t, r.addr)
	r.setup()
	baseFDs := r.fds()
	baseG := r.goroutines()
	t.Logf("baseline: %d goroutine stacks, fds %v", len(baseG), stressFDSummary(baseFDs))

	r.startTails()
	r.startWriters()
	clients := r.startKafka()
	r.startMountReaders()
	r.startAdmin()

	began := time.Now()
	phase := func(what string) { t.Logf("%s at %v", what, time.Since(began).Round(time.Millisecond)) }
	deadline := time.Now().Add(dur)
	for time.Now().Before(deadline) && !t.Failed() {
		time.Sleep(200 * time.Millisecond)
		if !pidAlive(r.m.pid) {
			t.Fatalf("the daemon died:\n%s", r.m.daemonLog())
		}
	}
	// Writers first (their acks), then the loops and clients.
	os.WriteFile(r.stopFile, nil, 0o644)
	phase("stop")
	r.waitWriters()
	phase("writers stopped")
	close(r.quit)
	r.wg.Wait()
	for _, c := range clients {
		c.Close()
	}
	phase("clients stopped")
	r.checkTails()
	phase("tails checked")
	r.quiesce()
	phase("quiesced")
	final := r.checkFinal()
	r.checkViews(final)
	phase("checked")
	r.checkLeaks(baseFDs, baseG)
	phase("leaks checked")
	commits := r.commits(final)
	r.m.unmount()
	r.checkDaemonLog()
	r.verifyOffline()

	// Remount: the same data, status, offsets and commits.
	r.m = mntAt(t, r.m.data, flags...)
	kafkaWaitListening(t, r.addr)
	again := r.snapshot()
	for tp, s := range final {
		if a := again[tp]; a.text != s.text || a.start != s.start || a.end != s.end {
			t.Errorf("%s after remount: start %d end %d, %d bytes; before: start %d end %d, %d bytes (first diff at line %d)",
				tp, a.start, a.end, len(a.text), s.start, s.end, len(s.text), firstDiff(mntLines(a.text), mntLines(s.text)))
		}
	}
	if again := r.commits(final); !maps.Equal(again, commits) {
		t.Errorf("group commits before the unmount %v, after the remount %v", commits, again)
	}
	r.m.unmount()
	r.checkDaemonLog()
	r.verifyOffline()
	r.mu.Lock()
	t.Logf("counts: %v", r.counts)
	r.mu.Unlock()
}

func (r *stressRig) flags() []string {
	return []string{"--kafka-listen", r.addr, "--pprof", r.pprof,
		"--retention-check-interval", "20ms", "--cleaner-interval", "20ms",
		"--cleaner-buffer-size", "1024", "--unmount-grace", "1s", "--producer-id-expiration", "2s"}
}

func (r *stressRig) setup() {
	r.m.ok(`
set -e
SEG=` + r.seg[0] + `
mkdir "$M/del" "$M/cmp" "$M/grow"
mkdir "$M/del/1" "$M/cmp/1"
printf '%s\n' segment.bytes=$SEG segment.index.bytes=4096 retention.ms=3000 retention.bytes=65536 file.delete.delay.ms=0 segment.ms=1500 > "$M/del/config"
printf '%s\n' cleanup.policy=compact,delete key.separator== segment.bytes=$SEG segment.index.bytes=4096 \
  min.cleanable.dirty.ratio=0.01 min.compaction.lag.ms=0 delete.retention.ms=300 retention.ms=60000 file.delete.delay.ms=0 > "$M/cmp/config"
printf '%s\n' segment.bytes=8192 segment.index.bytes=4096 > "$M/grow/config"
`)
	r.growParts.Store(1)
}

// start runs a process in its own process group, output to work/name.
func (r *stressRig) start(name string, env []string, prog string, args ...string) *stressProc {
	p := &stressProc{name: name, out: filepath.Join(r.work, name), done: make(chan struct{})}
	f, err := os.Create(p.out)
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	p.cmd = exec.Command(prog, args...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.Dir = r.work
	p.cmd.Env = append(append(os.Environ(), "LC_ALL=C", "M="+r.m.dir), env...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	r.procs = append(r.procs, p)
	r.t.Cleanup(func() { p.kill() })
	return p
}

// kill ends the process group with SIGKILL and waits.
func (p *stressProc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

func (p *stressProc) output() string {
	b, _ := os.ReadFile(p.out)
	return string(b)
}
