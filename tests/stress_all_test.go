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
// `cat >>` of 1-20 lines a write and a `dd oflag=append bs=1000` (writes
// that cut lines), and a franz-go producer (idempotent, acks=all); `tail
// -f` on every partition from before the first write, `cat data`, `head
// -n1 offset/N`, `readlink time/T`, `cat status` and `segfs verify`
// loops; a read_uncommitted and a read_committed consumer and a consumer
// group that commits (one member stays, one joins and leaves); config
// writes through `config` and IncrementalAlterConfigs, DeleteRecords. The
// daemon's cleaners run every 20 ms with a 1 KiB offset map (so passes
// are partial).
//
// Invariants: every write and produce succeeds; lines are whole, of a
// known writer, never NUL; per writer, a tail -f shows every line in
// order, a cat shows a contiguous run on del, an increasing one on cmp;
// offsets a consumer sees increase and every source (produce acks,
// fetches, offset/N) agrees on the record at each offset; status is sane
// and monotonic; at the end, del's offsets are dense, its writers' lines
// a contiguous run ending at their last write, cmp keeps each key's last
// write, data equals what Kafka fetches, the log start is at least every
// DeleteRecords offset; after a clean unmount `segfs verify` passes, a
// remount shows the same data, status and group commits, no fd, socket
// or goroutine stays behind, and the daemon logged no panic, race or
// error.
//
// SEGFS_STRESS_DURATION (default 12s) sets how long the load runs;
// SEGFS_STRESS_RACE=1 runs a daemon built with -race;
// SEGFS_STRESS_KAFKA and SEGFS_STRESS_PPROF fix the daemon's ports;
// SEGFS_STRESS_SEGMENT lists the segment.bytes values of del and cmp
// (default 4096,8192; a few hundred bytes roll at nearly every append).

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
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

// stressWriterScript is a bash writer: until $STOP exists, it appends its
// lines (stressLine) to $F with echo (one line a write), cat (1-20 lines)
// or dd (bs=1000: writes cut lines anywhere). It prints "acked N" when it
// stops. For grow, $F is empty and each append goes to a random existing
// partition.
const stressWriterScript = `
gen() { awk -v id="$ID" -v a="$1" -v b="$2" -v keyed="$KEYED" -v pad="$PAD" -v nk=` + "8" + ` -v tb=` + "13" + ` 'BEGIN{
  for (k = a; k <= b; k++) {
    if (keyed) { key = id ".k" (k % nk); if (k % tb == 0) print key "="; else print key "=" id " " k " " pad }
    else print id " " k " " pad
  } }'; }
line() {
  if [ "$KEYED" = 1 ]; then
    if (($1 % 13 == 0)); then l="$ID.k$(($1 % 8))="; else l="$ID.k$(($1 % 8))=$ID $1 $PAD"; fi
  else l="$ID $1 $PAD"; fi
}
fail() { echo "$1 failed"; echo "acked $i"; exit 1; }
[ "$MODE" = hold ] && { exec 3>>"$F" || fail "open"; }
i=0 f=$F n=0
while [ ! -e "$STOP" ]; do
  if [ -z "$F" ]; then parts=("$M"/grow/[0-9]*); f=${parts[RANDOM % ${#parts[@]}]}/data; fi
  n=$((n+1))
  case $MODE in
  echo)
    j=$((i+1)); line $j
    echo "$l" >> "$f" || fail "write of $j to $f" ;;
  hold)
    # One descriptor for the whole run, each line in two write(2)s.
    j=$((i+1)); line $j
    printf '%s' "${l:0:7}" >&3 && printf '%s\n' "${l:7}" >&3 || fail "write of $j" ;;
  cat)
    j=$((i + RANDOM % 20 + 1))
    gen $((i+1)) $j | cat >> "$f" || fail "cat of $((i+1))..$j to $f" ;;
  dd)
    j=$((i + RANDOM % 40 + 1)) conv=notrunc
    ((n % 2)) && conv=notrunc,fsync
    gen $((i+1)) $j | dd of="$f" oflag=append conv=$conv bs=1000 status=none || fail "dd of $((i+1))..$j to $f" ;;
  esac
  i=$j
done
[ "$MODE" = hold ] && { exec 3>&- || fail "close"; }
echo "acked $i"
`

func (r *stressRig) startWriters() {
	for _, tp := range []stressTP{{"del", 0}, {"del", 1}, {"cmp", 0}, {"cmp", 1}} {
		for _, mode := range []string{"echo", "cat", "dd", "hold"} {
			id := fmt.Sprintf("%s%d", mode[:1], tp.part)
			r.addWriter(id, mode, tp, r.m.path(tp.topic, strconv.Itoa(int(tp.part)), "data"))
		}
	}
	r.addWriter("g", "echo", stressTP{"grow", -1}, "")
	r.addWriter("h", "cat", stressTP{"grow", -1}, "")
}

func (r *stressRig) addWriter(id, mode string, tp stressTP, file string) {
	keyed := "0"
	if tp.keyed() {
		keyed = "1"
	}
	w := &stressWriter{id: id, mode: mode, tp: tp}
	w.proc = r.start("writer-"+tp.topic+"-"+id, []string{"ID=" + id, "MODE=" + mode, "KEYED=" + keyed,
		"F=" + file, "STOP=" + r.stopFile, "PAD=" + stressPad}, "bash", "-c", stressWriterScript)
	r.writers = append(r.writers, w)
}

func (r *stressRig) waitWriters() {
	for _, w := range r.writers {
		select {
		case <-w.proc.done:
		case <-time.After(60 * time.Second):
			r.t.Fatalf("writer %s did not stop 60s after the stop file: a write hangs\n%s", w.id, mntHolders(r.m.dir))
		}
		out := w.proc.output()
		i := strings.LastIndex(out, "acked ")
		if i < 0 {
			r.t.Fatalf("writer %s %s printed no ack: %s", w.tp, w.id, out)
		}
		w.acked, _ = strconv.Atoi(strings.TrimSpace(out[i+6:]))
		if w.proc.err != nil {
			r.fail("write failed", "writer %s %s: %v: %s", w.tp, w.id, w.proc.err, tailOf(out, 500))
		}
		r.count("mount lines", w.acked)
	}
}

// startTails starts `tail -f` on every del and cmp partition, open before
// any writer writes: each must print every line written, in order.
func (r *stressRig) startTails() {
	for _, tp := range []stressTP{{"del", 0}, {"del", 1}, {"cmp", 0}, {"cmp", 1}} {
		name := fmt.Sprintf("tail-%s-%d", tp.topic, tp.part)
		ready := filepath.Join(r.work, name+".ready")
		p := r.start(name, nil, "bash", "-c", `exec < "$0" || exit 1; : > "$1"; exec tail -s 0.05 -n +1 -f`,
			r.m.path(tp.topic, strconv.Itoa(int(tp.part)), "data"), ready)
		if !mntWaitFor(20*time.Second, func() bool { _, err := os.Stat(ready); return err == nil }) {
			r.t.Fatalf("%s did not open data: %s", name, p.output())
		}
	}
}

// checkTails waits for every tail to print each writer's last line, then
// checks that it printed each writer's lines 1..acked once, in order.
func (r *stressRig) checkTails() {
	for _, tp := range []stressTP{{"del", 0}, {"del", 1}, {"cmp", 0}, {"cmp", 1}} {
		name := fmt.Sprintf("tail-%s-%d", tp.topic, tp.part)
		var p *stressProc
		for _, q := range r.procs {
			if q.name == name {
				p = q
			}
		}
		var ws []*stressWriter
		for _, w := range r.writers {
			if w.tp == tp {
				ws = append(ws, w)
			}
		}
		complete := func() bool {
			next := r.perWriter(p.output(), tp.keyed())
			for _, w := range ws {
				if next[w.id] < w.acked {
					return false
				}
			}
			return true
		}
		if !mntWaitFor(30*time.Second, complete) {
			r.t.Logf("%s did not catch up within 30s", name)
		}
		p.kill()
		out := p.output()
		if strings.IndexByte(out, 0) >= 0 {
			r.fail("NUL", "%s printed a NUL byte", name)
		}
		next := map[string]int{}
		for i, l := range mntLines(out) {
			id, seq, key, ok := stressParse(l, tp.keyed())
			if !ok {
				r.fail("tail line", "%s line %d: %q is no writer's line", name, i+1, l)
				continue
			}
			if strings.HasPrefix(id, "p") {
				continue // the producer's lines are checked by offset
			}
			want := next[id] + 1
			if seq == 0 { // tombstone: the next write of id must be it
				if want%stressTomb != 0 || want%stressKeys != key {
					r.fail("tail order", "%s line %d: tombstone %q after %s %d", name, i+1, l, id, next[id])
				}
				next[id] = want
				continue
			}
			if seq != want {
				r.fail("tail order", "%s line %d: %q after %s %d: a line lost, repeated or reordered", name, i+1, l, id, next[id])
			}
			next[id] = seq
		}
		for _, w := range ws {
			if next[w.id] != w.acked {
				r.fail("tail incomplete", "%s: writer %s at %d, acked %d", name, w.id, next[w.id], w.acked)
			}
		}
		r.count("tail lines", len(mntLines(out)))
	}
}

// perWriter returns, for text, each writer's highest seq (tombstones
// count as their seq by position: only used for progress).
func (r *stressRig) perWriter(text string, keyed bool) map[string]int {
	last := map[string]int{}
	for _, l := range mntLines(text) {
		id, seq, _, ok := stressParse(l, keyed)
		if !ok {
			continue
		}
		if seq == 0 {
			seq = last[id] + 1
		}
		if seq > last[id] {
			last[id] = seq
		}
	}
	return last
}

// --- Kafka clients ---------------------------------------------------------

func (r *stressRig) client(opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(r.addr),
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.RetryTimeout(30 * time.Second),
		kgo.MetadataMinAge(100 * time.Millisecond),
		kgo.MetadataMaxAge(time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}, opts...)...)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(cl.Close)
	return cl
}

func (r *stressRig) startKafka() []*kgo.Client {
	// Batches well under segment.bytes (4096): a batch the broker
	// stores larger than a segment is refused (RECORD_LIST_TOO_LARGE, as
	// Kafka), and with compression.type=uncompressed it stores them
	// decompressed.
	prod := r.client(kgo.ProducerLinger(2*time.Millisecond), kgo.ProducerBatchMaxBytes(int32(max(512, min(2000, r.segMin*2/3)))))
	for _, tp := range []stressTP{{"del", 0}, {"del", 1}, {"cmp", 0}, {"cmp", 1}} {
		r.goLoop(func() { r.produceLoop(prod, tp) })
	}
	growProd := r.client(kgo.ProducerLinger(2 * time.Millisecond))
	r.goLoop(func() { r.produceGrow(growProd) })

	uncommitted := r.client(kgo.ConsumeTopics("del", "cmp", "grow"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	committed := r.client(kgo.ConsumeTopics("del", "cmp", "grow"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	r.goLoop(func() { r.consumeLoop(uncommitted, "read_uncommitted", true) })
	r.goLoop(func() { r.consumeLoop(committed, "read_committed", true) })

	group := r.client(kgo.ConsumeTopics("del", "cmp"), kgo.ConsumerGroup(stressGroup),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { r.count("group assignments", 1) }),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AutoCommitInterval(200*time.Millisecond),
		kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(500*time.Millisecond))
	r.goLoop(func() { r.consumeLoop(group, "group", false) })
	// A second member joins and leaves, so the group rebalances under load.
	r.goLoop(func() {
		for i := 0; ; i++ {
			cl, err := kgo.NewClient(kgo.SeedBrokers(r.addr), kgo.ConsumeTopics("del", "cmp"), kgo.ConsumerGroup(stressGroup),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AutoCommitInterval(200*time.Millisecond),
				kgo.FetchMaxWait(200*time.Millisecond), kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(500*time.Millisecond))
			if err != nil {
				r.fail("client", "%v", err)
				return
			}
			stop := time.After(time.Duration(1000+rand.IntN(2000)) * time.Millisecond)
		poll:
			for {
				select {
				case <-r.quit:
					cl.Close()
					return
				case <-stop:
					break poll
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				fs := cl.PollFetches(ctx)
				cancel()
				r.fetchChecks(fs, "group-2", nil)
			}
			cl.Close()
			r.count("group-2 rounds", 1)
			select {
			case <-r.quit:
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	})
	r.admin = r.client()
	return []*kgo.Client{prod, growProd, uncommitted, committed, group, r.admin}
}

func (r *stressRig) goLoop(f func()) {
	r.wg.Add(1)
	go func() { defer r.wg.Done(); f() }()
}

func (r *stressRig) stopping() bool {
	select {
	case <-r.quit:
		return true
	default:
		return false
	}
}

// produceLoop produces "pN SEQ" records (keyed as a cmp writer on cmp) to
// tp, up to 64 in flight, and records every ack.
func (r *stressRig) produceLoop(cl *kgo.Client, tp stressTP) {
	id := fmt.Sprintf("p%d", tp.part)
	sem := make(chan struct{}, 64)
	var inflight sync.WaitGroup
	for seq := 1; !r.stopping() && os.Getenv("SEGFS_STRESS_NOPRODUCE") == ""; seq++ {
		sem <- struct{}{}
		line := stressLine(id, seq, tp.keyed())
		rec := &kgo.Record{Topic: tp.topic, Partition: tp.part, Value: []byte(line)}
		if tp.keyed() {
			k, v, _ := strings.Cut(line, "=")
			rec.Key = []byte(k)
			rec.Value = []byte(v)
			if v == "" {
				rec.Value = nil
			}
		}
		inflight.Add(1)
		cl.Produce(context.Background(), rec, func(rec *kgo.Record, err error) {
			defer inflight.Done()
			defer func() { <-sem }()
			if err != nil {
				r.fail("produce failed", "%s seq %d: %v", tp, seq, err)
				return
			}
			r.mu.Lock()
			if r.acked[tp] == nil {
				r.acked[tp] = map[int64]string{}
			}
			r.acked[tp][rec.Offset] = line
			if seq > r.prodSeq[tp] {
				r.prodSeq[tp] = seq
			}
			r.mu.Unlock()
			r.observe(tp, rec.Offset, line, "produce ack")
			r.count("produced", 1)
		})
		if seq%50 == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		if seq%3000 == 0 {
			// Idle past --producer-id-expiration: the daemon drops
			// this producer's state, and it goes on.
			r.sleep(2500 * time.Millisecond)
		}
	}
	inflight.Wait()
}

// produceGrow produces to the grow partitions created so far.
func (r *stressRig) produceGrow(cl *kgo.Client) {
	for seq := 1; !r.stopping(); seq++ {
		p := rand.Int32N(r.growParts.Load())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		line := stressLine("q", seq, false)
		res := cl.ProduceSync(ctx, &kgo.Record{Topic: "grow", Partition: p, Value: []byte(line)})
		cancel()
		if err := res.FirstErr(); err != nil {
			// The client's metadata may not know a new partition yet:
			// kgo refuses on its own side, nothing was sent.
			if strings.Contains(err.Error(), "invalid record partitioning choice") {
				r.count("grow produce before metadata", 1)
				time.Sleep(50 * time.Millisecond)
				continue
			}
			r.fail("produce failed", "grow/%d seq %d: %v", p, seq, err)
			continue
		}
		r.observe(stressTP{"grow", p}, res[0].Record.Offset, line, "produce ack")
		r.mu.Lock()
		tp := stressTP{"grow", p}
		if r.acked[tp] == nil {
			r.acked[tp] = map[int64]string{}
		}
		r.acked[tp][res[0].Record.Offset] = line
		r.mu.Unlock()
		time.Sleep(2 * time.Millisecond)
	}
}

// stressRender is a record as its line in data.
func stressRender(topic string, rec *kgo.Record) string {
	if topic == "cmp" {
		return string(rec.Key) + "=" + string(rec.Value)
	}
	return string(rec.Value)
}

// consumeLoop polls cl and checks what it gets; ordered: offsets of a
// partition must increase (a group consumer may re-read after a
// rebalance).
func (r *stressRig) consumeLoop(cl *kgo.Client, name string, ordered bool) {
	last := map[stressTP]int64{}
	if !ordered {
		last = nil
	}
	for !r.stopping() {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		r.fetchChecks(fs, name, last)
	}
}

func (r *stressRig) fetchChecks(fs kgo.Fetches, name string, last map[stressTP]int64) {
	fs.EachError(func(topic string, p int32, err error) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed) {
			return
		}
		// A consumer behind the log start is moved there silently;
		// ErrDataLoss means the log ended below what it had consumed.
		r.fail("fetch error", "%s %s/%d: %v", name, topic, p, err)
	})
	fs.EachRecord(func(rec *kgo.Record) {
		tp := stressTP{rec.Topic, rec.Partition}
		line := stressRender(rec.Topic, rec)
		if _, _, _, ok := stressParse(line, tp.keyed()); !ok {
			r.fail("fetched record", "%s %s offset %d: %q is no writer's line", name, tp, rec.Offset, line)
		}
		if last != nil {
			if prev, ok := last[tp]; ok && rec.Offset <= prev {
				r.fail("fetch order", "%s %s: offset %d after %d", name, tp, rec.Offset, prev)
			}
			last[tp] = rec.Offset
		}
		r.observe(tp, rec.Offset, line, name)
		r.count(name+" records", 1)
	})
}

// --- mount readers --------------------------------------------------------

// run runs a short command and returns its stdout, stderr and exit code.
func (r *stressRig) run(limit int, prog string, args ...string) (string, string, int) {
	cmd := exec.Command("timeout", append([]string{"-k", "5", strconv.Itoa(limit), prog}, args...)...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.Dir = r.work
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		r.fail("exec", "%s: %v", prog, err)
		code = -1
	}
	if code == 124 || code == 137 {
		r.fail("hang", "%s %v did not finish in %ds: %s", prog, args, limit, errb.String())
	}
	return out.String(), errb.String(), code
}

func (r *stressRig) partPath(tp stressTP, names ...string) string {
	return r.m.path(append([]string{tp.topic, strconv.Itoa(int(tp.part))}, names...)...)
}

func (r *stressRig) randTP() stressTP {
	switch rand.IntN(3) {
	case 0:
		return stressTP{"del", rand.Int32N(2)}
	case 1:
		return stressTP{"cmp", rand.Int32N(2)}
	}
	return stressTP{"grow", rand.Int32N(r.growParts.Load())}
}

// stressStatus is a parsed status file.
type stressStatus map[string]int64

func (r *stressRig) readStatus(tp stressTP) (stressStatus, bool) {
	out, errs, code := r.run(30, "cat", r.partPath(tp, "status"))
	if code != 0 {
		r.fail("status", "cat %s/status: exit %d: %s", tp, code, errs)
		return nil, false
	}
	st := stressStatus{}
	if !strings.HasSuffix(out, "\n") {
		r.fail("status", "%s status does not end in a newline: %q", tp, out)
	}
	for _, l := range mntLines(out) {
		k, v, ok := strings.Cut(l, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil {
			r.fail("status", "%s status line %q", tp, l)
			return nil, false
		}
		st[k] = n
	}
	for _, k := range []string{"log.start.offset", "log.end.offset", "segments", "size.bytes", "first.timestamp",
		"last.timestamp", "active.segment.base.offset", "recovery.point"} {
		if _, ok := st[k]; !ok {
			r.fail("status", "%s status has no %s: %q", tp, k, out)
			return nil, false
		}
	}
	if st["log.start.offset"] > st["log.end.offset"] || st["recovery.point"] > st["log.end.offset"] ||
		st["active.segment.base.offset"] > st["log.end.offset"] || st["segments"] < 1 {
		r.fail("status", "%s status inconsistent: %q", tp, out)
	}
	return st, true
}

func (r *stressRig) startMountReaders() {
	// cat status: sane and monotonic.
	r.goLoop(func() {
		prev := map[stressTP]stressStatus{}
		for !r.stopping() {
			tp := r.randTP()
			st, ok := r.readStatus(tp)
			if ok {
				if p := prev[tp]; p != nil {
					if st["log.start.offset"] < p["log.start.offset"] || st["log.end.offset"] < p["log.end.offset"] {
						r.fail("status", "%s went back: start %d->%d end %d->%d", tp, p["log.start.offset"], st["log.start.offset"],
							p["log.end.offset"], st["log.end.offset"])
					}
				}
				prev[tp] = st
				r.count("status reads", 1)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	// cat data: whole lines of known writers; del: each writer contiguous.
	for range 2 {
		r.goLoop(func() {
			for !r.stopping() {
				tp := r.randTP()
				if rand.IntN(4) == 0 {
					if _, errs, code := r.run(60, "grep", "-c", "x", r.partPath(tp, "data")); code > 1 {
						r.fail("grep data", "%s: exit %d: %s", tp, code, errs)
					}
				}
				out, errs, code := r.run(60, "cat", r.partPath(tp, "data"))
				if code != 0 {
					r.fail("cat data", "%s: exit %d: %s", tp, code, errs)
					continue
				}
				r.checkText(tp, out, "cat", tp.topic != "cmp")
				r.count("cat reads", 1)
				time.Sleep(30 * time.Millisecond)
			}
		})
	}
	// One open of data read in odd-sized pieces, then read again at
	// random positions while the writers and cleaners go on: a byte's
	// position in an open data file never changes.
	r.goLoop(func() {
		for !r.stopping() {
			tp := r.randTP()
			f, err := os.Open(r.partPath(tp, "data"))
			if err != nil {
				r.fail("open data", "%s: %v", tp, err)
				continue
			}
			var text []byte
			buf := make([]byte, 70000)
			for {
				n, err := f.Read(buf[:1+rand.IntN(len(buf))])
				text = append(text, buf[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil {
					r.fail("read data", "%s at %d: %v", tp, len(text), err)
					break
				}
			}
			r.checkText(tp, string(text), "read(2)", tp.topic == "del")
			r.sleep(time.Duration(rand.IntN(500)) * time.Millisecond)
			for k := 0; k < 20 && len(text) > 0; k++ {
				off := rand.IntN(len(text))
				b := buf[:min(1+rand.IntN(8192), len(text)-off)]
				n, err := f.ReadAt(b, int64(off))
				if err != nil && err != io.EOF || n != len(b) {
					r.fail("pread data", "%s at %d: %d of %d bytes: %v", tp, off, n, len(b), err)
					break
				}
				if !bytes.Equal(b, text[off:off+n]) {
					r.fail("pread data", "%s at %d: %q, first read %q", tp, off, tailOf(string(b), 80), tailOf(string(text[off:off+n]), 80))
					break
				}
			}
			f.Close()
			r.count("pread opens", 1)
		}
	})
	// head -n1 offset/N: the record at N (del, grow: dense offsets).
	r.goLoop(func() {
		for !r.stopping() {
			tp := r.randTP()
			st, ok := r.readStatus(tp)
			if !ok {
				continue
			}
			lo, hi := st["log.start.offset"], st["log.end.offset"]
			if hi == lo {
				continue
			}
			n := lo + rand.Int64N(hi-lo)
			out, errs, code := r.run(30, "head", "-n1", r.partPath(tp, "offset", strconv.FormatInt(n, 10)))
			if code != 0 {
				if strings.Contains(errs, "No such file") {
					r.count("offset/N below the moved start", 1) // retention or DeleteRecords since
					continue
				}
				r.fail("offset/N", "head -n1 %s offset/%d: exit %d: %s", tp, n, code, errs)
				continue
			}
			if !strings.HasSuffix(out, "\n") {
				r.fail("offset/N", "%s offset/%d: %q is not a whole line", tp, n, out)
				continue
			}
			line := strings.TrimSuffix(out, "\n")
			if _, _, _, ok := stressParse(line, tp.keyed()); !ok {
				r.fail("offset/N", "%s offset/%d: %q is no writer's line", tp, n, line)
				continue
			}
			if !tp.keyed() {
				r.observe(tp, n, line, "head -n1 offset/N")
			}
			r.count("offset reads", 1)
			time.Sleep(10 * time.Millisecond)
		}
	})
	// readlink time/T: ../offset/N with N in [start, end].
	r.goLoop(func() {
		for !r.stopping() {
			tp := r.randTP()
			before, ok := r.readStatus(tp)
			if !ok {
				continue
			}
			ts := time.Now().Add(-time.Duration(rand.IntN(4000)) * time.Millisecond).UnixMilli()
			out, errs, code := r.run(30, "readlink", r.partPath(tp, "time", strconv.FormatInt(ts, 10)))
			after, ok2 := r.readStatus(tp)
			if code != 0 {
				r.fail("time/T", "readlink %s time/%d: exit %d: %s", tp, ts, code, errs)
				continue
			}
			s, found := strings.CutPrefix(strings.TrimSpace(out), "../offset/")
			n, err := strconv.ParseInt(s, 10, 64)
			if !found || err != nil {
				r.fail("time/T", "%s time/%d -> %q", tp, ts, out)
				continue
			}
			if ok2 && (n < before["log.start.offset"] || n > after["log.end.offset"]) {
				r.fail("time/T", "%s time/%d -> %d, outside [%d, %d]", tp, ts, n, before["log.start.offset"], after["log.end.offset"])
			}
			r.count("time reads", 1)
			time.Sleep(10 * time.Millisecond)
		}
	})
	// tail -f started mid-run for a second: del lines per writer contiguous.
	r.goLoop(func() {
		for i := 0; !r.stopping(); i++ {
			tp := stressTP{"del", int32(i % 2)}
			name := fmt.Sprintf("latetail-%d", i)
			p := r.start(name, nil, "tail", "-s", "0.05", "-n", "+1", "-f", r.partPath(tp, "data"))
			select {
			case <-r.quit:
			case <-time.After(time.Second):
			}
			p.kill()
			out := p.output()
			// The last line may be cut by the kill.
			if i := strings.LastIndexByte(out, '\n'); i >= 0 {
				out = out[:i+1]
			}
			r.checkText(tp, out, name, true)
			os.Remove(p.out)
			r.count("late tails", 1)
		}
	})
	// segfs verify beside the running mount: no corrupt batch or index.
	r.goLoop(func() {
		for !r.stopping() {
			out, errs, code := r.run(120, r.bin, "verify", r.m.data)
			if code != 0 {
				r.fail("live verify", "segfs verify exit %d:\n%.3000s\n%.2000s", code, errs, out)
			}
			r.count("live verifies", 1)
			time.Sleep(500 * time.Millisecond)
		}
	})
}

// checkText checks text read from tp's data: no NUL, whole lines of
// known writers, each writer's seqs increasing, and contiguous when dense.
func (r *stressRig) checkText(tp stressTP, text, what string, dense bool) {
	if strings.IndexByte(text, 0) >= 0 {
		r.fail("NUL", "%s of %s: a NUL byte at %d", what, tp, strings.IndexByte(text, 0))
	}
	if text != "" && !strings.HasSuffix(text, "\n") {
		r.fail("torn", "%s of %s: ends without a newline: %q", what, tp, tailOf(text, 100))
	}
	last := map[string]int{}
	for i, l := range mntLines(text) {
		id, seq, _, ok := stressParse(l, tp.keyed())
		if !ok {
			r.fail("bad line", "%s of %s line %d: %q", what, tp, i+1, l)
			continue
		}
		if seq == 0 || tp.topic == "grow" {
			continue
		}
		if p, ok := last[id]; ok && (seq <= p || (dense && seq != p+1)) {
			r.fail("order", "%s of %s line %d: %s %d after %d", what, tp, i+1, id, seq, p)
		}
		last[id] = seq
	}
}

// --- admin -------------------------------------------------------------------

func (r *stressRig) startAdmin() {
	admin := r.admin
	// Config through the mount.
	r.goLoop(func() {
		for i := 0; !r.stopping(); i++ {
			pick := func(vs ...string) string { return vs[rand.IntN(len(vs))] }
			script := fmt.Sprintf(`
echo retention.ms=%s >> "$M/del/config" &&
printf 'segment.bytes=%s\nindex.interval.bytes=%s\nsegment.index.bytes=%s\n' >> "$M/del/config" &&
printf 'compression.type=%s\nmessage.timestamp.type=%s\nflush.messages=%s\n' >> "$M/del/config" &&
printf 'min.cleanable.dirty.ratio=%s\ndelete.retention.ms=%s\n' >> "$M/cmp/config" &&
printf 'segment.ms=%s\ncleanup.policy=%s\ncompression.type=%s\n' >> "$M/cmp/config"`,
				pick("1500", "3000", "6000"), pick(r.seg...), pick("0", "100", "4096"), pick("64", "4096", "10485760"),
				pick("producer", "gzip", "lz4", "zstd", "snappy", "uncompressed"), pick("CreateTime", "LogAppendTime"),
				pick("1", "100", "9223372036854775807"),
				pick("0.01", "0.2", "0"), pick("0", "300", "1000"),
				pick("500", "2000"), pick("compact,delete", "compact"), pick("producer", "zstd", "uncompressed"))
			out, errs, code := r.run(30, "bash", "-c", strings.ReplaceAll(script, "$M", r.m.dir))
			if code != 0 {
				r.fail("config write", "exit %d: %s %s", code, out, errs)
			}
			r.count("config writes", 1)
			r.sleep(300 * time.Millisecond)
		}
	})
	// Config through IncrementalAlterConfigs.
	r.goLoop(func() {
		for i := 0; !r.stopping(); i++ {
			r.alterConfigs(admin, "del", map[string]string{
				"retention.bytes":      []string{"32768", "65536", "-1"}[i%3],
				"file.delete.delay.ms": []string{"0", "50"}[i%2],
			})
			r.alterConfigs(admin, "cmp", map[string]string{
				"segment.bytes":         r.seg[i%len(r.seg)],
				"min.compaction.lag.ms": []string{"0", "100"}[i%2],
			})
			r.count("alter configs", 1)
			r.sleep(400 * time.Millisecond)
		}
	})
	// DeleteRecords a quarter of the way into what is retained.
	r.goLoop(func() {
		for i := 0; !r.stopping(); i++ {
			tp := []stressTP{{"del", 0}, {"del", 1}, {"cmp", 0}, {"cmp", 1}}[i%4]
			lo, hi := r.listOffset(admin, tp, -2), r.listOffset(admin, tp, -1)
			if lo < 0 || hi < 0 {
				continue
			}
			target := lo + (hi-lo)/4
			req := kmsg.NewPtrDeleteRecordsRequest()
			req.TimeoutMillis = 10000
			rt := kmsg.NewDeleteRecordsRequestTopic()
			rt.Topic = tp.topic
			rp := kmsg.NewDeleteRecordsRequestTopicPartition()
			rp.Partition, rp.Offset = tp.part, target
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			resp, err := req.RequestWith(ctx, admin)
			cancel()
			if err != nil {
				r.fail("DeleteRecords", "%s to %d: %v", tp, target, err)
				continue
			}
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode == kerr.PolicyViolation.Code && tp.topic == "cmp" {
				// cleanup.policy=compact (the config loop sets it now
				// and then): Kafka refuses DeleteRecords there.
				r.count("DeleteRecords on compact", 1)
				r.sleep(700 * time.Millisecond)
				continue
			}
			if p.ErrorCode != 0 {
				r.fail("DeleteRecords", "%s to %d: %v", tp, target, kerr.ErrorForCode(p.ErrorCode))
				continue
			}
			if p.LowWatermark < target {
				r.fail("DeleteRecords", "%s to %d: low watermark %d", tp, target, p.LowWatermark)
			}
			r.mu.Lock()
			r.drFloor[tp] = max(r.drFloor[tp], target)
			r.mu.Unlock()
			r.count("delete records", 1)
			r.sleep(700 * time.Millisecond)
		}
	})
	// The describe paths: ListOffsets by time, DescribeConfigs,
	// DescribeLogDirs.
	r.goLoop(func() {
		for !r.stopping() {
			tp := r.randTP()
			r.listOffset(admin, tp, time.Now().Add(-time.Duration(rand.IntN(4000))*time.Millisecond).UnixMilli())
			dc := kmsg.NewPtrDescribeConfigsRequest()
			for _, topic := range []string{"del", "cmp", "grow"} {
				res := kmsg.NewDescribeConfigsRequestResource()
				res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
				dc.Resources = append(dc.Resources, res)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			dresp, err := dc.RequestWith(ctx, admin)
			if err != nil {
				r.fail("DescribeConfigs", "%v", err)
			} else {
				for _, res := range dresp.Resources {
					if res.ErrorCode != 0 || len(res.Configs) < 10 {
						r.fail("DescribeConfigs", "%s: %v, %d configs", res.ResourceName, kerr.ErrorForCode(res.ErrorCode), len(res.Configs))
					}
				}
			}
			lresp, err := kmsg.NewPtrDescribeLogDirsRequest().RequestWith(ctx, admin)
			cancel()
			if err != nil {
				r.fail("DescribeLogDirs", "%v", err)
			} else {
				for _, d := range lresp.Dirs {
					if d.ErrorCode != 0 {
						r.fail("DescribeLogDirs", "%s: %v", d.Dir, kerr.ErrorForCode(d.ErrorCode))
					}
					for _, t := range d.Topics {
						for _, p := range t.Partitions {
							if p.Size < 0 {
								r.fail("DescribeLogDirs", "%s/%d: size %d", t.Topic, p.Partition, p.Size)
							}
						}
					}
				}
			}
			r.count("describes", 1)
			r.sleep(100 * time.Millisecond)
		}
	})
	// Partitions of grow: mkdir and CreatePartitions race for the next one.
	r.goLoop(func() {
		for !r.stopping() && r.growParts.Load() < 8 {
			n := r.growParts.Load()
			out, errs, code := r.run(30, "mkdir", r.m.path("grow", strconv.Itoa(int(n))))
			switch {
			case code == 0:
				r.growCreated(n + 1)
			case strings.Contains(errs, "File exists") || strings.Contains(errs, "Invalid argument"):
				r.count("mkdir lost the race", 1)
			default:
				r.fail("mkdir", "grow/%d: exit %d: %s %s", n, code, out, errs)
			}
			r.sleep(time.Duration(500+rand.IntN(1500)) * time.Millisecond)
		}
	})
	r.goLoop(func() {
		for !r.stopping() && r.growParts.Load() < 8 {
			n := r.growParts.Load()
			req := kmsg.NewPtrCreatePartitionsRequest()
			req.TimeoutMillis = 10000
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = "grow", n+1
			req.Topics = append(req.Topics, rt)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			resp, err := req.RequestWith(ctx, admin)
			cancel()
			switch {
			case err != nil:
				r.fail("CreatePartitions", "%v", err)
			case resp.Topics[0].ErrorCode == 0:
				r.growCreated(n + 1)
			case resp.Topics[0].ErrorCode == kerr.InvalidPartitions.Code:
				r.count("CreatePartitions lost the race", 1)
			default:
				r.fail("CreatePartitions", "to %d: %v", n+1, kerr.ErrorForCode(resp.Topics[0].ErrorCode))
			}
			r.sleep(time.Duration(500+rand.IntN(1500)) * time.Millisecond)
		}
	})
}

func (r *stressRig) growCreated(n int32) {
	for {
		cur := r.growParts.Load()
		if n <= cur || r.growParts.CompareAndSwap(cur, n) {
			break
		}
	}
	r.count("partitions created", 1)
}

func (r *stressRig) sleep(d time.Duration) {
	select {
	case <-r.quit:
	case <-time.After(d):
	}
}

func (r *stressRig) alterConfigs(cl *kgo.Client, topic string, set map[string]string) {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	for k, v := range set {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Op, c.Name, c.Value = kmsg.IncrementalAlterConfigOpSet, k, kmsg.StringPtr(v)
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		r.fail("IncrementalAlterConfigs", "%s: %v", topic, err)
		return
	}
	if c := resp.Resources[0].ErrorCode; c != 0 {
		r.fail("IncrementalAlterConfigs", "%s %v: %v", topic, set, kerr.ErrorForCode(c))
	}
}

// listOffset answers ListOffsets for tp at ts (-2 earliest, -1 latest), -1
// on failure.
func (r *stressRig) listOffset(cl *kgo.Client, tp stressTP, ts int64) int64 {
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = tp.topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = tp.part, ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		r.fail("ListOffsets", "%s: %v", tp, err)
		return -1
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		r.fail("ListOffsets", "%s: %v", tp, kerr.ErrorForCode(p.ErrorCode))
		return -1
	}
	return p.Offset
}

// --- the end ---------------------------------------------------------------

// quiesce stops the cleaners (retention off, compaction off), waits until
// two snapshots a few cleaner intervals apart agree.
func (r *stressRig) quiesce() {
	r.m.ok(`
printf 'retention.ms=-1\nretention.bytes=-1\nsegment.ms=604800000\n' >> "$M/del/config" &&
printf 'cleanup.policy=delete\nretention.ms=-1\nretention.bytes=-1\nsegment.ms=604800000\n' >> "$M/cmp/config"`)
	prev := r.snapshot()
	for i := 0; ; i++ {
		time.Sleep(300 * time.Millisecond)
		cur := r.snapshot()
		same := len(cur) == len(prev)
		for tp, s := range cur {
			if p := prev[tp]; p.text != s.text || p.start != s.start || p.end != s.end {
				same = false
			}
		}
		if same {
			return
		}
		if i == 100 {
			r.t.Fatalf("the log did not settle after the cleaners were turned off")
		}
		prev = cur
	}
}

type stressSnap struct {
	text       string
	start, end int64
	recs       []*kgo.Record
}

// snapshot reads every partition through the mount and Kafka.
func (r *stressRig) snapshot() map[stressTP]stressSnap {
	n := r.growPartsNow()
	tps := []stressTP{{"del", 0}, {"del", 1}, {"cmp", 0}, {"cmp", 1}}
	for p := range n {
		tps = append(tps, stressTP{"grow", p})
	}
	cl := r.client()
	defer cl.Close()
	snaps := map[stressTP]stressSnap{}
	for _, tp := range tps {
		st, ok := r.readStatus(tp)
		if !ok {
			r.t.FailNow()
		}
		text := r.m.ok(`cat "` + r.partPath(tp, "data") + `"`)
		s := stressSnap{text: text, start: st["log.start.offset"], end: st["log.end.offset"]}
		if s.end > s.start {
			s.recs = r.fetchAll(cl, tp, s.start, s.end)
		}
		snaps[tp] = s
	}
	return snaps
}

func (r *stressRig) growPartsNow() int32 {
	ents, err := os.ReadDir(r.m.path("grow"))
	if err != nil {
		r.t.Fatal(err)
	}
	var n int32
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			n++
		}
	}
	return n
}

// fetchAll fetches tp from start to end with a fresh direct consumer.
func (r *stressRig) fetchAll(cl *kgo.Client, tp stressTP, start, end int64) []*kgo.Record {
	c := r.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{tp.topic: {tp.part: kgo.NewOffset().At(start)}}))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) == 0 || out[len(out)-1].Offset < end-1 {
		fs := c.PollFetches(ctx)
		if ctx.Err() != nil {
			r.t.Fatalf("fetching %s [%d, %d): timed out at %d records", tp, start, end, len(out))
		}
		fs.EachError(func(_ string, _ int32, err error) { r.t.Fatalf("fetch %s: %v", tp, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// checkFinal checks the settled log against everything the clients were
// told, and returns the snapshot.
func (r *stressRig) checkFinal() map[stressTP]stressSnap {
	t := r.t
	snaps := r.snapshot()
	r.mu.Lock()
	defer r.mu.Unlock()
	for tp, s := range snaps {
		var lines []string
		for _, rec := range s.recs {
			lines = append(lines, stressRender(tp.topic, rec))
			if prev, ok := r.obs[tp][rec.Offset]; ok && prev != stressRender(tp.topic, rec) {
				t.Errorf("%s offset %d: stored %q, %s saw %q", tp, rec.Offset, stressRender(tp.topic, rec), r.obsSrc[tp][rec.Offset], prev)
			}
		}
		if got := mntLines(s.text); !slices.Equal(got, lines) {
			t.Errorf("%s: data (%d lines) differs from what Kafka fetches (%d records) at line %d", tp, len(got), len(lines), firstDiff(got, lines))
		}
		if len(s.recs) > 0 && (s.recs[0].Offset < s.start || s.recs[len(s.recs)-1].Offset >= s.end) {
			t.Errorf("%s: records [%d, %d] outside status [%d, %d)", tp, s.recs[0].Offset, s.recs[len(s.recs)-1].Offset, s.start, s.end)
		}
		if s.start < r.drFloor[tp] {
			t.Errorf("%s: log start %d below a DeleteRecords to %d", tp, s.start, r.drFloor[tp])
		}
		at := map[int64]string{}
		for i, rec := range s.recs {
			at[rec.Offset] = lines[i]
			if tp.topic != "cmp" && rec.Offset != s.start+int64(i) {
				t.Errorf("%s: record %d has offset %d, want %d (dense)", tp, i, rec.Offset, s.start+int64(i))
				break
			}
		}
		// Produce acks: present at their offset unless below the start
		// (or, on cmp, compacted by a later write of the key).
		lastOfKey := map[string]int64{}
		for off, line := range r.acked[tp] {
			k, _, _ := strings.Cut(line, "=")
			if o, ok := lastOfKey[k]; !ok || off > o {
				lastOfKey[k] = off
			}
		}
		for off, line := range r.acked[tp] {
			if off < s.start {
				continue
			}
			got, ok := at[off]
			if ok && got != line {
				t.Errorf("%s offset %d: acked %q, stored %q", tp, off, line, got)
			}
			if !ok {
				k, v, _ := strings.Cut(line, "=")
				if tp.keyed() && (lastOfKey[k] != off || v == "") {
					continue
				}
				t.Errorf("%s offset %d: acked %q is lost (log start %d)", tp, off, line, s.start)
			}
		}
		r.counts["final records"] += len(s.recs)
	}
	// Mount writers.
	for _, w := range r.writers {
		if w.tp.topic == "grow" {
			continue
		}
		s := snaps[w.tp]
		var seqs []int
		var tombs []int // positions in seqs of tombstones, matched later
		for _, rec := range s.recs {
			id, seq, key, ok := stressParse(stressRender(w.tp.topic, rec), w.tp.keyed())
			if !ok || id != w.id {
				continue
			}
			if seq == 0 { // the earliest tombstone of key after the last seq
				prev := 0
				if len(seqs) > 0 {
					prev = seqs[len(seqs)-1]
				}
				seq = prev + 1
				for seq%stressTomb != 0 || seq%stressKeys != key {
					seq++
				}
				tombs = append(tombs, len(seqs))
			}
			seqs = append(seqs, seq)
		}
		_ = tombs
		for i := 1; i < len(seqs); i++ {
			if seqs[i] <= seqs[i-1] {
				t.Errorf("%s writer %s: seq %d after %d", w.tp, w.id, seqs[i], seqs[i-1])
			}
		}
		if len(seqs) > 0 && seqs[len(seqs)-1] > w.acked {
			t.Errorf("%s writer %s: seq %d stored, only %d written", w.tp, w.id, seqs[len(seqs)-1], w.acked)
		}
		if !w.tp.keyed() {
			// A contiguous run ending at its last write.
			if len(seqs) > 0 && (seqs[len(seqs)-1] != w.acked || seqs[len(seqs)-1]-seqs[0] != len(seqs)-1) {
				t.Errorf("%s writer %s: stored seqs %d..%d (%d lines), wrote 1..%d", w.tp, w.id, seqs[0], seqs[len(seqs)-1], len(seqs), w.acked)
			}
			continue
		}
		// cmp: every key's last write after the first line kept is kept.
		if len(seqs) == 0 {
			continue
		}
		present := map[int]bool{}
		for _, s := range seqs {
			present[s] = true
		}
		for k := 0; k < stressKeys; k++ {
			last := w.acked - ((w.acked-k)%stressKeys+stressKeys)%stressKeys
			if last <= seqs[0] || present[last] || last%stressTomb == 0 {
				continue
			}
			t.Errorf("%s writer %s: key %d's last write %d is gone, the log keeps its seqs %v", w.tp, w.id, k, last, tailInts(seqs, 20))
		}
	}
	// grow: every line of g, h once, across partitions.
	seen := map[string]int{}
	for tp, s := range snaps {
		if tp.topic != "grow" {
			continue
		}
		for _, l := range mntLines(s.text) {
			seen[l]++
		}
	}
	for _, w := range r.writers {
		if w.tp.topic != "grow" {
			continue
		}
		for i := 1; i <= w.acked; i++ {
			if n := seen[stressLine(w.id, i, false)]; n != 1 {
				t.Errorf("grow writer %s line %d stored %d times", w.id, i, n)
				break
			}
		}
	}
	if md := r.metadataPartitions("grow"); md != r.growPartsNow() {
		t.Errorf("grow: %d partitions in Metadata, %d in the mount", md, r.growPartsNow())
	}
	return snaps
}

// checkViews checks the mount's views of the settled log against it and
// against Kafka: status against the files, st_size against the bytes
// read, offset/N against the records fetched, time/T against ListOffsets.
func (r *stressRig) checkViews(snaps map[stressTP]stressSnap) {
	t := r.t
	cl := r.client()
	defer cl.Close()
	for tp, s := range snaps {
		st, ok := r.readStatus(tp)
		if !ok {
			continue
		}
		logs, _ := filepath.Glob(filepath.Join(r.m.data, fmt.Sprintf("%s-%d", tp.topic, tp.part), "*.log"))
		var size int64
		for _, l := range logs {
			if fi, err := os.Stat(l); err == nil {
				size += fi.Size()
			}
		}
		if st["segments"] != int64(len(logs)) || st["size.bytes"] != size {
			t.Errorf("%s status: segments=%d size.bytes=%d; on disk %d .log files of %d bytes", tp, st["segments"], st["size.bytes"], len(logs), size)
		}
		if fi, err := os.Stat(r.partPath(tp, "data")); err != nil || fi.Size() != int64(len(s.text)) {
			t.Errorf("%s: stat data %v %v, a read returns %d bytes", tp, fi.Size(), err, len(s.text))
		}
		for k := 0; k < 10; k++ {
			n := s.start + rand.Int64N(s.end-s.start+1)
			want := ""
			for _, rec := range s.recs {
				if rec.Offset >= n {
					want = stressRender(tp.topic, rec) + "\n"
					break
				}
			}
			out, errs, code := r.run(30, "head", "-n1", r.partPath(tp, "offset", strconv.FormatInt(n, 10)))
			if code != 0 || out != want {
				t.Errorf("%s: head -n1 offset/%d = %q (exit %d %s), want %q", tp, n, out, code, errs, want)
				break
			}
		}
		for k := 0; k < 10 && len(s.recs) > 0; k++ {
			ts := s.recs[rand.IntN(len(s.recs))].Timestamp.UnixMilli() + int64(rand.IntN(2))
			want := r.listOffset(cl, tp, ts)
			if want < 0 {
				want = s.end
			}
			out, errs, code := r.run(30, "readlink", r.partPath(tp, "time", strconv.FormatInt(ts, 10)))
			if code != 0 || strings.TrimSpace(out) != "../offset/"+strconv.FormatInt(want, 10) {
				t.Errorf("%s: readlink time/%d = %q (exit %d %s), ListOffsets says %d", tp, ts, out, code, errs, want)
				break
			}
		}
	}
}

func tailInts(s []int, n int) []int { return s[max(0, len(s)-n):] }

func (r *stressRig) metadataPartitions(topic string) int32 {
	cl := r.client()
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, mt)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		r.t.Fatal(err)
	}
	return int32(len(resp.Topics[0].Partitions))
}

// commits returns the group's committed offsets of del and cmp, and fails
// on one beyond the end of its partition.
func (r *stressRig) commits(final map[stressTP]stressSnap) map[stressTP]int64 {
	cl := r.client()
	defer cl.Close()
	out := map[stressTP]int64{}
	for _, topic := range []string{"del", "cmp"} {
		for p, o := range committed(r.t, cl, stressGroup, topic, 2) {
			tp := stressTP{topic, int32(p)}
			if o > final[tp].end {
				r.t.Errorf("group commit %s at %d, beyond the end %d", tp, o, final[tp].end)
			}
			out[tp] = o
		}
	}
	return out
}

// fds lists the daemon's open files.
func (r *stressRig) fds() []string {
	dir := fmt.Sprintf("/proc/%d/fd", r.m.pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

func stressFDSummary(fds []string) map[string]int {
	sum := map[string]int{}
	for _, f := range fds {
		switch {
		case strings.HasSuffix(f, "(deleted)") || strings.HasSuffix(f, ".deleted"):
			sum["deleted"]++
		case strings.HasPrefix(f, "socket:"):
			sum["socket"]++
		case strings.HasSuffix(f, ".log"):
			sum["log"]++
		case strings.HasSuffix(f, ".index"), strings.HasSuffix(f, ".timeindex"):
			sum["index"]++
		default:
			sum["other"]++
		}
	}
	return sum
}

// goroutines counts the daemon's goroutines by stack (the functions of
// each frame), leaving out go-fuse's request readers (bounded by
// GOMAXPROCS), the notifier's one per watched partition, and the --pprof
// HTTP server's, whose connections are ours.
func (r *stressRig) goroutines() map[string]int {
	dump := r.goroutineDump()
	if !strings.HasPrefix(dump, "goroutine profile: total ") {
		r.t.Fatalf("goroutine profile: %.300s", dump)
	}
	_, dump, _ = strings.Cut(dump, "\n")
	out := map[string]int{}
	for _, g := range strings.Split(dump, "\n\n") {
		first, _, _ := strings.Cut(g, " @ ")
		c, err := strconv.Atoi(strings.TrimSpace(first))
		if err != nil || strings.Contains(g, "fuse.(*Server).loop") || strings.Contains(g, "fs.(*notifier).run") ||
			strings.Contains(g, "net/http.") {
			continue
		}
		var fns []string
		for _, l := range strings.Split(g, "\n") {
			if f := strings.Fields(l); len(f) >= 3 && f[0] == "#" {
				fn, _, _ := strings.Cut(f[2], "+0x")
				fns = append(fns, fn)
			}
		}
		out[strings.Join(fns, " < ")] += c
	}
	return out
}

// goroutineGrowth lists the stacks with more goroutines now than before,
// leaving out those with one: background goroutines that start on first
// use (a writeback kicker, a timer's) are singletons, a leak per
// connection or per request is not.
func goroutineGrowth(before, now map[string]int) []string {
	var grew []string
	for sig, n := range now {
		if n > max(before[sig], 1) {
			grew = append(grew, fmt.Sprintf("%d (before %d): %s", n, before[sig], sig))
		}
	}
	return grew
}

func (r *stressRig) goroutineDump() string {
	// No keep-alive: an idle connection would count as the daemon's.
	cl := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 20 * time.Second}
	resp, err := cl.Get("http://" + r.pprof + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// checkLeaks: with every client gone, the daemon holds no deleted file, no
// more sockets than before the load, one .log per segment, and no more
// goroutines than before the load.
func (r *stressRig) checkLeaks(baseFDs []string, baseG map[string]int) {
	base := stressFDSummary(baseFDs)
	var sum map[string]int
	var fds []string
	var segs int
	ok := mntWaitFor(20*time.Second, func() bool {
		fds = r.fds()
		sum = stressFDSummary(fds)
		logs, _ := filepath.Glob(filepath.Join(r.m.data, "*", "*.log"))
		segs = len(logs)
		return sum["deleted"] == 0 && sum["socket"] <= base["socket"] && sum["log"] <= segs
	})
	r.t.Logf("after the load: fds %v (%d segments on disk)", sum, segs)
	if !ok {
		var bad []string
		for _, f := range fds {
			if strings.HasSuffix(f, "(deleted)") || strings.HasSuffix(f, ".deleted") || strings.HasPrefix(f, "socket:") {
				bad = append(bad, f)
			}
		}
		r.t.Errorf("fd leak: %v before, %v after (%d .log files on disk): %v", base, sum, segs, bad)
	}
	var grew []string
	ok = mntWaitFor(20*time.Second, func() bool { grew = goroutineGrowth(baseG, r.goroutines()); return len(grew) == 0 })
	if !ok {
		r.t.Errorf("goroutine leak: %s\n%.20000s", strings.Join(grew, "\n"), r.goroutineDump())
	}
}

func (r *stressRig) checkDaemonLog() {
	log, _ := os.ReadFile(filepath.Join(r.m.data, "segfs-mount.out"))
	for _, bad := range []string{"DATA RACE", "panic", "level=ERROR", "fatal error"} {
		if i := bytes.Index(log, []byte(bad)); i >= 0 {
			r.t.Errorf("the daemon log has %q:\n%.5000s", bad, log[max(0, i-500):])
		}
	}
}

func (r *stressRig) verifyOffline() {
	out, err := exec.Command(r.bin, "verify", r.m.data).CombinedOutput()
	if err != nil {
		r.t.Errorf("segfs verify after unmount: %v\n%.5000s", err, out)
	}
}
