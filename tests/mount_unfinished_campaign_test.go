package tests

// A kill -9 campaign against the journal of unfinished lines
// (logstore/unfinished.go): several writers of one partition at once,
// each of which knows exactly which bytes its write(2)s acknowledged,
// the daemon killed at a random moment, then remounted, and an oracle
// that holds each writer to what it was told: its acknowledged complete
// lines once each, in order, its acknowledged unfinished line as one
// last record, and of the write in flight at the kill at most its lines
// (and the tail it would have left), never a line's start twice.

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// campaignPy writes lines "TAG:SEQ:payload\n" (payload random bytes but
// '\n', some longer than a WRITE) in random chunks of 1 byte to 300 KiB
// cut anywhere, until a write fails or the stop file appears. After each
// write(2) it appends the bytes the call acknowledged (its return value)
// to ACKED, and before it, the whole chunk to INFLIGHT (truncated), so
// that after the kill ACKED is exactly what the writer was told and
// INFLIGHT the write that may have been cut. Mode "hold" sleeps now and
// then holding an unfinished line; "reopen" closes and reopens data now
// and then, its close ending the unfinished line (a '\n' in ACKED).
const campaignPy = `
import os, random, sys, time
path, tag, seed, mode, acked, inflight, stop, limit, maxline = sys.argv[1:10]
rnd = random.Random(int(seed))
limit = int(limit)
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
af = open(acked, "ab", buffering=0)
pending = b""
seq = 0
total = 0
partial = False
print("ready", flush=True)
while total < limit and not os.path.exists(stop):
    while len(pending) < 400 << 10:
        r = rnd.random()
        n = rnd.randint(20, 2000) if r < 0.9 else rnd.randint(2000, int(maxline))
        payload = os.urandom(n).replace(b"\n", b".")
        pending += b"%s:%d:" % (tag.encode(), seq) + payload + b"\n"
        seq += 1
    c = min(len(pending), int(2 ** rnd.uniform(0, 18.2)))
    chunk = pending[:c]
    with open(inflight, "wb") as f:
        f.write(chunk)
    try:
        w = os.write(fd, chunk)
    except OSError as e:
        print("error", e.errno, flush=True)
        sys.exit(0)
    af.write(chunk[:w])
    total += w
    pending = pending[w:]
    partial = not chunk[:w].endswith(b"\n") if w else partial
    if mode == "reopen" and rnd.random() < 0.2:
        try:
            os.close(fd)
        except OSError:
            pass
        if partial:
            # The close made the line a record: the rest of it is
            # not written.
            af.write(b"\n")
            pending = pending[pending.index(b"\n") + 1:]
            partial = False
        with open(inflight, "wb") as f:
            pass
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        except OSError as e:
            print("error", e.errno, flush=True)
            sys.exit(0)
    if mode == "hold" and partial and rnd.random() < 0.3:
        time.sleep(rnd.uniform(0.05, 0.4))
    else:
        time.sleep(rnd.uniform(0, 0.01))
with open(inflight, "wb") as f:
    pass
print("done", flush=True)
`

// campaignWriter is one writer of a round and what it was told.
type campaignWriter struct {
	tag  string
	kind string
	cmd  *exec.Cmd
	done chan struct{}
	// acked/inflight files (python), or the bash's chunks and progress.
	acked, inflight string
	chunks          [][]byte // bash: the chunks, in order
	progress        string   // bash: one line per acknowledged chunk
	// cat: everything fed, the bytes of it the pipe took, the bytes
	// cat's write(2)s returned, and cat's stderr.
	fed       []byte
	fedN      atomic.Int64
	catAcked  int64
	catStderr bytes.Buffer
}

// campaignRound runs the writers of one round against m's partition t/0,
// kills the daemon at a random moment, and returns the writers, stopped.
type campaignRound struct {
	t       *testing.T
	m       *mnt
	dir     string
	py      string
	round   int
	rnd     *rand.Rand
	maxLine int // the longest payload a python writer writes
	writers []*campaignWriter
	kafka   *campaignKafka
	feedWG  sync.WaitGroup
}

func (r *campaignRound) startPython(tag, mode string, limit int) {
	t := r.t
	w := &campaignWriter{tag: tag, kind: "py", done: make(chan struct{}),
		acked: filepath.Join(r.dir, tag+".acked"), inflight: filepath.Join(r.dir, tag+".inflight")}
	w.cmd = exec.Command("timeout", "-k", "5", "120", "python3", r.py, r.m.path("t", "0", "data"), tag,
		strconv.FormatInt(r.rnd.Int63(), 10), mode, w.acked, w.inflight, filepath.Join(r.dir, "stop"), strconv.Itoa(limit), strconv.Itoa(r.maxLine))
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	w.cmd.Stderr = &stderr
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		b := make([]byte, 64)
		out.Read(b)
		w.cmd.Wait()
		if stderr.Len() > 0 {
			t.Logf("%s stderr: %s", tag, stderr.String())
		}
		close(w.done)
	}()
	t.Cleanup(w.stop)
	r.writers = append(r.writers, w)
}

// stop kills the writer (its process group, ours) and waits for it: a
// test that failed early leaves nothing running.
func (w *campaignWriter) stop() {
	if w.kind == "cat" {
		w.cmd.Process.Kill()
	} else {
		syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-w.done
}

// startBash runs a bash that holds data open as fd 3 and printf's small
// chunks of its lines to it (each one write(2)), noting each chunk the
// write acknowledged in a progress file; it pauses now and then inside a
// line.
func (r *campaignRound) startBash(tag string) {
	t := r.t
	w := &campaignWriter{tag: tag, kind: "bash", done: make(chan struct{}), progress: filepath.Join(r.dir, tag+".progress")}
	var text []byte
	for i := 0; len(text) < 200<<10; i++ {
		text = fmt.Appendf(text, "%s:%d:%s\n", tag, i, strings.Repeat(string(rune('a'+i%26)), r.rnd.Intn(300)))
	}
	var in bytes.Buffer
	for len(text) > 0 {
		n := min(len(text), 1+r.rnd.Intn(700))
		w.chunks = append(w.chunks, text[:n])
		in.Write(text[:n])
		in.WriteByte(0)
		text = text[n:]
	}
	chunkFile := filepath.Join(r.dir, tag+".chunks")
	if err := os.WriteFile(chunkFile, in.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `exec 3>>"$D" 4>>"$P"
i=0
while IFS= read -r -d '' c; do
	printf '%s' "$c" >&3 || exit 0
	echo $i >&4
	i=$((i+1))
	case $c in *$'\n') ;; *) [ $((RANDOM % 8)) = 0 ] && sleep 0.2 ;; esac
	[ -e "$S" ] && break
done < "$F"
exec sleep 600`
	w.cmd = exec.Command("timeout", "-k", "5", "120", "bash", "-c", script)
	w.cmd.Env = append(os.Environ(), "D="+r.m.path("t", "0", "data"), "P="+w.progress, "F="+chunkFile,
		"S="+filepath.Join(r.dir, "stop"), "LC_ALL=C")
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { w.cmd.Wait(); close(w.done) }()
	t.Cleanup(w.stop)
	r.writers = append(r.writers, w)
}

// startCat runs cat with data as stdout, fed odd-sized pieces through a
// pipe; /proc/PID/io's wchar is what its write(2)s returned.
func (r *campaignRound) startCat(tag string) {
	t := r.t
	w := &campaignWriter{tag: tag, kind: "cat", done: make(chan struct{})}
	for i := 0; len(w.fed) < 2<<20; i++ {
		w.fed = fmt.Appendf(w.fed, "%s:%d:%s\n", tag, i, strings.Repeat("c", r.rnd.Intn(3000)))
	}
	data, err := os.OpenFile(r.m.path("t", "0", "data"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.cmd = exec.Command("cat")
	w.cmd.Stdout = data
	w.cmd.Stderr = &w.catStderr
	in, err := w.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	data.Close()
	go func() { w.cmd.Wait(); close(w.done) }()
	t.Cleanup(w.stop)
	seed := r.rnd.Int63()
	r.feedWG.Add(1)
	go func() {
		defer r.feedWG.Done()
		defer in.Close()
		rnd := rand.New(rand.NewSource(seed))
		for fed := 0; fed < len(w.fed); {
			n := min(len(w.fed)-fed, 1+rnd.Intn(20000))
			if _, err := in.Write(w.fed[fed : fed+n]); err != nil {
				return
			}
			fed += n
			w.fedN.Store(int64(fed))
			time.Sleep(time.Duration(rnd.Intn(3000)) * time.Microsecond)
		}
	}()
	r.writers = append(r.writers, w)
}

// campaignKafka produces "TAG:SEQ" records to t/0 through --kafka-listen
// and keeps the sequence numbers whose produce succeeded.
type campaignKafka struct {
	tag    string
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	acked  map[int]bool
}

func (r *campaignRound) startKafka(addr, tag string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordRetries(2), kgo.RecordDeliveryTimeout(3*time.Second), kgo.ProducerLinger(time.Millisecond))
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	k := &campaignKafka{tag: tag, cancel: cancel, done: make(chan struct{}), acked: map[int]bool{}}
	go func() {
		defer close(k.done)
		var wg sync.WaitGroup
		for seq := 0; ctx.Err() == nil && seq < 20000; seq++ {
			wg.Add(1)
			s := seq
			cl.Produce(ctx, &kgo.Record{Topic: "t", Partition: 0, Value: fmt.Appendf(nil, "%s:%d", tag, s)}, func(_ *kgo.Record, err error) {
				defer wg.Done()
				if err == nil {
					k.mu.Lock()
					k.acked[s] = true
					k.mu.Unlock()
				}
			})
			if seq%50 == 49 {
				time.Sleep(5 * time.Millisecond)
			}
		}
		// Close fails the records still buffered (some wait for
		// metadata from the dead daemon, which no timeout ends).
		cl.Close()
		wg.Wait()
	}()
	r.kafka = k
	r.t.Cleanup(func() { cancel(); <-k.done })
}

// ackedOf returns what the writer was told (E) and E followed by the
// write that was in flight (X). exact: X's end is the in-flight write's
// exact end (for cat it is only a bound).
func (w *campaignWriter) ackedOf(t *testing.T) (e, x []byte, exact bool) {
	switch w.kind {
	case "py":
		e, _ = os.ReadFile(w.acked)
		inf, _ := os.ReadFile(w.inflight)
		return e, append(append([]byte(nil), e...), inf...), true
	case "bash":
		b, _ := os.ReadFile(w.progress)
		n := len(mntLines(string(b)))
		for _, c := range w.chunks[:n] {
			e = append(e, c...)
		}
		x = append([]byte(nil), e...)
		if n < len(w.chunks) {
			x = append(x, w.chunks[n]...)
		}
		return e, x, true
	case "cat":
		return w.fed[:w.catAcked], w.fed[:min(len(w.fed), int(w.catAcked)+1<<20)], false
	}
	t.Fatalf("writer kind %q", w.kind)
	return
}

// campaignCheck holds the records of one writer (got: each record and
// '\n', in log order) to E and X: got is X[:k] with k >= len(E), plus a
// '\n' if k ends inside a line; a k inside a line past E must be X's end
// when that is exact (the in-flight write's own unfinished line).
func campaignCheck(got, e, x []byte, exact bool) error {
	k := len(got)
	if !bytes.Equal(got, x[:min(k, len(x))]) || k > len(x) {
		if k == 0 || got[k-1] != '\n' || !bytes.Equal(got[:k-1], x[:min(k-1, len(x))]) || k-1 > len(x) {
			i := 0
			for i < len(got) && i < len(x) && got[i] == x[i] {
				i++
			}
			return fmt.Errorf("records are not the writer's bytes (its cut line as a prefix): differ at byte %d of %d (acked %d, in flight to %d): got %q want %q",
				i, len(got), len(e), len(x), clip(got[i:]), clip(x[i:]))
		}
		k--
		if k < len(x) && x[k] == '\n' {
			return fmt.Errorf("internal: cut at a newline")
		}
		if k > len(e) && exact && k != len(x) {
			return fmt.Errorf("a line cut at byte %d, inside the write in flight (acked %d, in flight to %d): %q", k, len(e), len(x), clip(got[max(0, k-60):]))
		}
	}
	if k < len(e) {
		return fmt.Errorf("%d of the %d acknowledged bytes are records: lost %q", k, len(e), clip(e[k:]))
	}
	return nil
}

func clip(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}

// campaignTags: the first byte of each writer's lines, six a round.
// SEGFS_FAULT_UNFINISHED sets the rounds (3; at most 10); odd rounds
// also kill the remount during its recovery.
const campaignTags = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func TestUnfinishedKillCampaign(t *testing.T) {
	needProgram(t, "python3", "python3")
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr)
	m.ok(`mkdir "$M/t"`)
	// SEGFS_CAMPAIGN_MAXMSG lowers max.message.bytes, so that a write(2)
	// spans several batches (the known defect of
	// TestUnfinishedKillBetweenBatchesNoDuplicate).
	maxLine := 400 << 10
	if v := os.Getenv("SEGFS_CAMPAIGN_MAXMSG"); v != "" {
		mm, err := strconv.Atoi(v)
		if err != nil || mm < 4096 {
			t.Fatalf("SEGFS_CAMPAIGN_MAXMSG=%q", v)
		}
		m.ok(fmt.Sprintf(`echo max.message.bytes=%d > "$M/t/config"`, mm))
		maxLine = mm / 2
	}
	py := filepath.Join(t.TempDir(), "writer.py")
	if err := os.WriteFile(py, []byte(campaignPy), 0o644); err != nil {
		t.Fatal(err)
	}
	seed := time.Now().UnixNano()
	if s := os.Getenv("SEGFS_CAMPAIGN_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("seed %d (SEGFS_CAMPAIGN_SEED)", seed)
	rnd := rand.New(rand.NewSource(seed))
	rounds := min(faultRounds(t, "UNFINISHED", 3), len(campaignTags)/6)
	var all []campaignExpect
	for round := 0; round < rounds; round++ {
		r := &campaignRound{t: t, m: m, dir: t.TempDir(), py: py, round: round, rnd: rnd, maxLine: maxLine}
		// Each writer's lines begin with a byte of its own, so that
		// even a recovered line cut after one byte is attributed.
		tag := func(i int) string { return campaignTags[round*6+i : round*6+i+1] }
		r.startPython(tag(0), "hold", 3<<20)
		r.startPython(tag(1), "reopen", 3<<20)
		r.startPython(tag(2), "plain", 3<<20)
		r.startBash(tag(3))
		r.startCat(tag(4))
		r.startKafka(addr, tag(5))
		// Every python writer has had a write acknowledged, then a
		// random moment.
		if !mntWaitFor(60*time.Second, func() bool {
			for _, w := range r.writers {
				if fi, err := os.Stat(w.acked); w.kind == "py" && (err != nil || fi.Size() == 0) {
					return false
				}
			}
			return true
		}) {
			t.Fatalf("round %d: writers made no progress\n%s", round, m.daemonLog())
		}
		time.Sleep(time.Duration(rnd.Intn(1500)) * time.Millisecond)
		var catW *campaignWriter
		for _, w := range r.writers {
			if w.kind == "cat" {
				catW = w
			}
		}
		catAcked := procWchar(catW.cmd.Process.Pid)
		m.kill9()
		if catAcked < 0 {
			catAcked = catW.catEndedBeforeKill(t, m)
		}
		catW.catAcked = catAcked
		// What cat's write(2)s returned by the kill: its wchar, read
		// just before (a write returning in between is more, which
		// the oracle's in-flight bound takes); or, if cat had already
		// ended, all it was fed.
		r.kafka.cancel()
		for _, w := range r.writers {
			select {
			case <-w.done:
			case <-time.After(20 * time.Second):
				t.Logf("%s still running 20 s after the kill; killing it", w.tag)
			}
			w.stop()
		}
		<-r.kafka.done
		r.feedWG.Wait()
		for _, w := range r.writers {
			e, x, exact := w.ackedOf(t)
			all = append(all, campaignExpect{w: w, e: e, x: x, exact: exact})
			t.Logf("round %d: %s acknowledged %d bytes (%d in flight)", round, w.tag, len(e), len(x)-len(e))
		}
		r.kafka.mu.Lock()
		all = append(all, campaignExpect{k: r.kafka, kacked: r.kafka.acked})
		t.Logf("round %d: %s acknowledged %d records", round, r.kafka.tag, len(r.kafka.acked))
		r.kafka.mu.Unlock()
		if round%2 == 1 {
			// The remount itself killed while it appends the lines it
			// recovers (at its second append to the segment).
			campaignKillDuringRecovery(t, m, addr)
		}
		m.mount("--kafka-listen", addr)
		campaignOracle(t, m, all)
	}
	m.unmount()
	if fi, err := os.Stat(filepath.Join(m.data, "t-0", "segfs-unfinished-lines")); err == nil && fi.Size() > 0 {
		t.Fatalf("journal of %d bytes left after a clean unmount", fi.Size())
	}
	if out, err := exec.Command("timeout", "60", segfsBin, "verify", m.data).CombinedOutput(); err != nil {
		t.Fatalf("segfs verify: %v\n%s", err, out)
	}
}

// catEndedBeforeKill is what cat's write(2)s returned when it was
// gone before the kill (no /proc/PID/io to read: it had exited and been
// reaped; it fed 2 MiB quickly enough for some seeds): cat exits 0 only
// once it has read its input to the end and written all of it, so
// everything the pipe took from the feeder was acknowledged. cat ending
// otherwise before the kill fails the test (a write refused while the
// daemon was up).
func (w *campaignWriter) catEndedBeforeKill(t *testing.T, m *mnt) int64 {
	t.Helper()
	select {
	case <-w.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s (cat): no /proc/%d/io but still running", w.tag, w.cmd.Process.Pid)
	}
	if !w.cmd.ProcessState.Success() {
		t.Fatalf("%s (cat) ended before the kill: %v: %s\n%s", w.tag, w.cmd.ProcessState, w.catStderr.String(), m.daemonLog())
	}
	return w.fedN.Load()
}

// procWchar is /proc/PID/io's wchar: the bytes the process's write(2)s
// returned; -1 when the process is gone.
func procWchar(pid int) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "wchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return -1
}

// campaignKillDuringRecovery mounts under strace, which kills the daemon
// with SIGKILL as it enters its second pwrite to t/0's active segment:
// the recovery of the unfinished lines has appended one. The mount fails
// (or the daemon dies right after it), and what is left is unmounted.
func campaignKillDuringRecovery(t *testing.T, m *mnt, addr string) {
	straceBin, ok := optionalProgram(t, "strace", "strace", "the kill during recovery")
	if !ok {
		return
	}
	j, err := os.ReadFile(filepath.Join(m.data, "t-0", "segfs-unfinished-lines"))
	if err != nil || len(j) == 0 {
		t.Log("no journal to recover: no kill during recovery")
		return
	}
	logs, _ := filepath.Glob(filepath.Join(m.data, "t-0", "*.log"))
	if len(logs) == 0 {
		t.Fatal("no segment")
	}
	active := logs[len(logs)-1]
	for i := 0; i < 5 && mntIsMounted(m.dir); i++ {
		exec.Command("timeout", "10", "umount", "-l", m.dir).Run()
	}
	cmd := exec.Command(straceBin, "-f", "-o", "/dev/null", "-P", active,
		"-e", "trace=pwrite64", "-e", "inject=pwrite64:signal=KILL:when=2",
		segfsBin, "mount", "--foreground", "--kafka-listen", addr, m.data, m.dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	// One line to recover makes one pwrite: the daemon mounts, and is
	// killed right after its recovery instead.
	exited := mntWaitFor(30*time.Second, func() bool {
		select {
		case <-done:
			return true
		default:
			return mntIsMounted(m.dir)
		}
	})
	select {
	case <-done:
	default:
		exited = false
	}
	if !exited {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	t.Logf("mount under strace, killed during recovery: %v (exited by itself: %v)\n%s", cmd.ProcessState, exited, out.String())
	for i := 0; i < 5 && mntIsMounted(m.dir); i++ {
		exec.Command("timeout", "10", "umount", "-l", m.dir).Run()
	}
}

// campaignExpect is what one writer was told: E and X (campaignCheck),
// or for the Kafka producer, the records acknowledged.
type campaignExpect struct {
	w      *campaignWriter
	e, x   []byte
	exact  bool
	k      *campaignKafka
	kacked map[int]bool
}

// campaignOracle reads t/0 and holds each writer's records to what it was
// told; offsets are dense (the records are log end - log start).
func campaignOracle(t *testing.T, m *mnt, all []campaignExpect) {
	t.Helper()
	text := []byte(m.ok(`cat "$M/t/0/data"`))
	status := m.ok(`cat "$M/t/0/status"`)
	var start, end int64 = -1, -1
	for _, l := range mntLines(status) {
		if v, ok := strings.CutPrefix(l, "log.start.offset="); ok {
			start, _ = strconv.ParseInt(v, 10, 64)
		}
		if v, ok := strings.CutPrefix(l, "log.end.offset="); ok {
			end, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	if len(text) > 0 && text[len(text)-1] != '\n' {
		t.Fatalf("data does not end in a newline")
	}
	recs := bytes.Split(text, []byte{'\n'})
	recs = recs[:len(recs)-1]
	if int64(len(recs)) != end-start {
		t.Fatalf("%d records between offsets %d and %d", len(recs), start, end)
	}
	by := map[string][]byte{}
	for i, rec := range recs {
		if len(rec) == 0 {
			t.Fatalf("record %d is empty: no writer writes an empty line", start+int64(i))
		}
		tag := rec[:1]
		by[string(tag)] = append(append(by[string(tag)], rec...), '\n')
	}
	known := map[string]bool{}
	for _, ex := range all {
		if ex.k != nil {
			known[ex.k.tag] = true
			seen := map[int]bool{}
			last := -1
			for _, rec := range mntLines(string(by[ex.k.tag])) {
				s, err := strconv.Atoi(strings.TrimPrefix(rec, ex.k.tag+":"))
				if err != nil || seen[s] || s <= last {
					t.Fatalf("%s: record %q twice, out of order or not produced", ex.k.tag, rec)
				}
				seen[s], last = true, s
			}
			for s := range ex.kacked {
				if !seen[s] {
					t.Fatalf("%s: acknowledged record %d lost", ex.k.tag, s)
				}
			}
			continue
		}
		known[ex.w.tag] = true
		if err := campaignCheck(by[ex.w.tag], ex.e, ex.x, ex.exact); err != nil {
			if keep := os.Getenv("SEGFS_CAMPAIGN_KEEP"); keep != "" {
				os.MkdirAll(keep, 0o755)
				os.WriteFile(filepath.Join(keep, "text"), text, 0o644)
				os.WriteFile(filepath.Join(keep, ex.w.tag+".e"), ex.e, 0o644)
				os.WriteFile(filepath.Join(keep, ex.w.tag+".x"), ex.x, 0o644)
				os.WriteFile(filepath.Join(keep, ex.w.tag+".got"), by[ex.w.tag], 0o644)
				exec.Command("cp", "-a", m.data, keep).Run()
			}
			t.Fatalf("%s (%s): %v\ndaemon log:\n%s", ex.w.tag, ex.w.kind, err, m.daemonLog())
		}
	}
	for tag := range by {
		if !known[tag] {
			t.Fatalf("records of no writer: tag %q", clip([]byte(tag)))
		}
	}
}

// A WRITE that completes a writer's unfinished line and carries more
// lines than one batch holds (1 MiB of short lines at the default
// max.message.bytes: max_write is 1 MiB) is appended as several batches.
// A kill -9 after the first batch (which holds the completed line,
// "abc-def") and before the last must not bring back the line's old
// start, "abc-", as a second record: the journal says "no line" once the
// first batch is in (logstore/unfinished.go). It did, when the write's one
// journal entry counted only once the last batch was in. strace kills the
// daemon once its first pwrite of the segment has written
// (killAfterFirstPwrite).
func TestUnfinishedKillBetweenBatchesNoDuplicate(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/t"`)
	py := `
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
os.write(fd, b"abc-")
print("ready", flush=True)
sys.stdin.readline()
chunk = b"def\n" + b"".join(b"L%06d\n" % i for i in range(131000))
try:
    print("wrote", os.write(fd, chunk), flush=True)
except OSError as e:
    print("failed", e, flush=True)
`
	holder := startUnfinishedPy(t, py, m.path("t", "0", "data"))
	wait := killAfterFirstPwrite(t, m, killpointFile(m, "log"))
	holder.in.Write([]byte("go\n"))
	if !waitExit(m.pid, 30*time.Second) {
		t.Fatal("the daemon did not die at its second batch")
	}
	wait()
	t.Logf("holder: %s", strings.TrimSpace(holder.line()))
	m.mount()
	recs := recordsOf(m, "t")
	var starts []string
	for _, r := range recs {
		if strings.HasPrefix(r, "abc-") {
			starts = append(starts, r)
		}
	}
	if len(starts) != 1 {
		t.Fatalf("records beginning with the acknowledged \"abc-\": %q (of %d records), want one", starts, len(recs))
	}
}

// The campaign's oracle refuses what it must: a lost acknowledged line or
// partial, a line twice, the old start of a line recovered after the
// record that completed it, a cut inside the write in flight; and takes
// what it must.
func TestUnfinishedCampaignOracle(t *testing.T) {
	e := []byte("A:0:x\nA:1:yy\nA:2:z")                           // acknowledged: two lines and "A:2:z"
	x := append(append([]byte(nil), e...), "zz\nA:3:w\nA:4:q"...) // and the write in flight
	for _, c := range []struct {
		got string
		ok  bool
	}{
		{"A:0:x\nA:1:yy\nA:2:z\n", true},                  // the partial recovered
		{"A:0:x\nA:1:yy\nA:2:zzz\nA:3:w\n", true},         // the write in flight's lines
		{"A:0:x\nA:1:yy\nA:2:zzz\nA:3:w\nA:4:q\n", true},  // and its tail
		{"A:0:x\nA:1:yy\n", false},                        // the partial lost
		{"A:0:x\nA:1:yy\nA:2:\n", false},                  // part of it lost
		{"A:0:x\nA:1:yy\nA:1:yy\nA:2:z\n", false},         // a line twice
		{"A:0:x\nA:1:yy\nA:2:zzz\nA:3:w\nA:2:z\n", false}, // the old start again
		{"A:0:x\nA:1:yy\nA:2:zzz\nA:3:\n", false},         // cut inside the write in flight
		{"A:0:x\nA:1:yy\nA:2:z\nB\n", false},              // something else
	} {
		err := campaignCheck([]byte(c.got), e, x, true)
		if (err == nil) != c.ok {
			t.Errorf("campaignCheck(%q) = %v, want ok=%v", c.got, err, c.ok)
		}
	}
}
