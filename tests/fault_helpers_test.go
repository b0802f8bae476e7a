package tests

// The fault suite's harness (FUSE-NOTES.md §7.7): backing filesystems on
// loop devices and tmpfs, writers and readers in separate processes with
// manifests of what was acknowledged (kept on /tmp, never on the
// filesystem under test), and the oracle that judges the log after every
// fault, through the mount and with `segfs dump-log` and `segfs verify`.
//
// Counts: every fault runs faultRounds(name, 5) times; the env var
// SEGFS_FAULT_<NAME> (e.g. SEGFS_FAULT_F1=1000) raises it, which is how
// scripts/soak.sh runs the long loops. Each looping test logs one line
//
//	FAULT-FIGURES <name> faults=N acked=N lost=N truncations=N dropped_bytes=N manual=N retention_deleted=N compaction_removed=N
//
// that soak.sh adds up (the last two: records below the log start of the
// retention topics, and records missing from the compacted topics' offset
// ranges, at the last check of each; see fault_cleaners_test.go).

import (
	"bytes"
	"fmt"
	"hash/crc64"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/segfs/segfs/tests/faultwriter/faultline"
)

// faultRounds is how many times a fault is injected: def, or the value of
// SEGFS_FAULT_<name>.
func faultRounds(t testing.TB, name string, def int) int {
	if v := os.Getenv("SEGFS_FAULT_" + name); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SEGFS_FAULT_%s=%q is not a positive count", name, v)
		}
		return n
	}
	return def
}

func faultNeedRoot(t testing.TB) {
	t.Helper()
	mntRequireFuse(t)
	if os.Geteuid() != 0 {
		t.Skip("the fault suite mounts loop devices and tmpfs: it needs root")
	}
}

var (
	faultwriterOnce sync.Once
	faultwriterPath string
	faultwriterErr  error
)

// faultwriterBin builds tests/faultwriter once, beside the segfs binary.
func faultwriterBin(t testing.TB) string {
	t.Helper()
	faultwriterOnce.Do(func() {
		faultwriterPath = filepath.Join(filepath.Dir(segfsBin), "faultwriter")
		out, err := exec.Command("go", "build", "-o", faultwriterPath, "./faultwriter").CombinedOutput()
		if err != nil {
			faultwriterErr = fmt.Errorf("building faultwriter: %v\n%s", err, out)
		}
	})
	if faultwriterErr != nil {
		t.Fatal(faultwriterErr)
	}
	return faultwriterPath
}

// run runs a command under timeout and returns its combined output.
func faultRun(t testing.TB, limit int, name string, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command("timeout", append([]string{"-k", "5", strconv.Itoa(limit), name}, args...)...).CombinedOutput()
	return string(out), err
}

func faultMust(t testing.TB, limit int, name string, args ...string) string {
	t.Helper()
	out, err := faultRun(t, limit, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

// faultDisk is a filesystem on a loop device made for one test.
type faultDisk struct {
	t      testing.TB
	fstype string
	img    string
	dev    string
	dir    string // where it is mounted
}

// faultLoopDisk makes a sizeMB image, attaches it to a loop device,
// formats it with fstype (xfs or ext4) and mounts it. Cleanup unmounts
// (lazily if it must) and detaches the loop device, even after a failure.
func faultLoopDisk(t testing.TB, fstype string, sizeMB int) *faultDisk {
	t.Helper()
	faultNeedRoot(t)
	mkfs := "mkfs." + fstype
	needProgram(t, mkfs, map[string]string{"xfs": "xfsprogs", "ext4": "e2fsprogs"}[fstype])
	if fstype == "xfs" {
		sizeMB = max(sizeMB, 320) // mkfs.xfs refuses anything under 300 MB
	}
	base := t.TempDir()
	d := &faultDisk{t: t, fstype: fstype, img: filepath.Join(base, "disk.img"), dir: filepath.Join(base, "disk")}
	if err := os.Mkdir(d.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(d.img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(int64(sizeMB) << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, err := faultRun(t, 30, "losetup", "--find", "--show", d.img)
	if err != nil {
		t.Fatalf("losetup: %v\n%s", err, out)
	}
	d.dev = strings.TrimSpace(out)
	t.Cleanup(d.destroy)
	args := []string{"-q", d.dev}
	if fstype == "ext4" {
		args = []string{"-q", "-F", d.dev}
	}
	faultMust(t, 60, mkfs, args...)
	d.mount()
	return d
}

func (d *faultDisk) mount(opts ...string) {
	d.t.Helper()
	args := []string{d.dev, d.dir}
	if len(opts) > 0 {
		args = append([]string{"-o", strings.Join(opts, ",")}, args...)
	}
	faultMust(d.t, 60, "mount", args...)
}

// destroy unmounts and detaches; it is the registered cleanup.
func (d *faultDisk) destroy() {
	for i := 0; i < 3 && mntIsMounted(d.dir); i++ {
		if exec.Command("timeout", "20", "umount", d.dir).Run() != nil {
			time.Sleep(200 * time.Millisecond)
		}
	}
	if mntIsMounted(d.dir) {
		exec.Command("timeout", "20", "umount", "-l", d.dir).Run()
	}
	if d.dev != "" {
		for i := 0; i < 10; i++ {
			if exec.Command("timeout", "20", "losetup", "-d", d.dev).Run() == nil {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// shutdown is the power cut: the filesystem stops at once, without
// flushing its log, so whatever was not fsynced is gone after the next
// mount (FUSE-NOTES.md §7.5).
func (d *faultDisk) shutdown() {
	d.t.Helper()
	faultMust(d.t, 30, "xfs_io", "-x", "-c", "shutdown", d.dir)
}

// cycle is the reboot after a power cut: unmount and mount again, which
// replays the journal.
func (d *faultDisk) cycle() {
	d.t.Helper()
	var out string
	var err error
	for i := 0; i < 50; i++ {
		if out, err = faultRun(d.t, 30, "umount", d.dir); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		d.t.Fatalf("umount %s after the power cut: %v\n%s", d.dir, err, out)
	}
	d.mount()
}

// faultTmpfs mounts a tmpfs of the given size (e.g. "2m") for disk-full
// cases and unmounts it in Cleanup.
func faultTmpfs(t testing.TB, size string) string {
	t.Helper()
	faultNeedRoot(t)
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	faultMust(t, 30, "mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir)
	t.Cleanup(func() {
		if exec.Command("timeout", "20", "umount", dir).Run() != nil {
			exec.Command("timeout", "20", "umount", "-l", dir).Run()
		}
	})
	return dir
}

// faultFusectl returns the fusectl connections directory, mounting fusectl
// if needed (and unmounting it in Cleanup if this test mounted it).
func faultFusectl(t testing.TB) string {
	t.Helper()
	const dir = "/sys/fs/fuse/connections"
	if !mntIsMounted(dir) {
		faultMust(t, 10, "mount", "-t", "fusectl", "none", dir)
		t.Cleanup(func() { exec.Command("timeout", "10", "umount", dir).Run() })
	}
	return dir
}

// faultConnID is the fusectl connection of a mount: the minor device
// number in mountinfo.
func faultConnID(t testing.TB, mnt string) string {
	t.Helper()
	f := strings.Fields(mountinfoLines(mnt))
	if len(f) < 3 {
		t.Fatalf("%s is not in mountinfo", mnt)
	}
	_, minor, _ := strings.Cut(f[2], ":")
	return minor
}

// faultProc is one client process: its process group is killed on stop
// and in Cleanup (a group this test created, never anything else).
type faultProc struct {
	name string
	cmd  *exec.Cmd
	errb *bytes.Buffer
	done chan struct{}
	err  error
}

func faultStart(t testing.TB, name string, limit int, env []string, prog string, args ...string) *faultProc {
	t.Helper()
	cmd := exec.Command("timeout", append([]string{"-k", "5", strconv.Itoa(limit), prog}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = os.TempDir()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &faultProc{name: name, cmd: cmd, errb: new(bytes.Buffer), done: make(chan struct{})}
	cmd.Stderr = p.errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.kill() })
	return p
}

func (p *faultProc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
}

// wait waits up to d for the process to exit and kills it after that.
// It reports whether it exited by itself.
func (p *faultProc) wait(d time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		p.kill()
		return false
	}
}

func (p *faultProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// faultWriter is one writer: what it writes, where, and how much of it
// was acknowledged.
type faultWriter struct {
	id      string
	kind    string // "echo" (bash), "lines", "big" (faultwriter lines), "kafka"
	topic   string // partition 0 of it
	keys    int    // keyed lines with this many keys (compacted topics; "echo" and "lines")
	durable bool   // ack after fsync (echo: after `sync data`)
	batch   int    // lines per write(2), at most
	count   int64  // lines per run (0 = until the fault)
	pause   string // faultwriter -pause between writes
	man     string // manifest path
	next    int64  // first seq of the next run
	start   int64  // first seq of the current run
	proc    *faultProc
	sums    []uint64 // sums[i] = checksum of line(i+1), generated once
	keyc    []int32  // keyed writers: keyc[i] = key of write i+1, -key-1 for a tombstone
}

var faultCRC = crc64.MakeTable(crc64.ECMA)

// matches reports whether l is line(seq), generating each expected line
// only once per test (under -race, generating 300,000-byte lines again
// after every fault dominated the suite's time).
func (w *faultWriter) matches(seq int64, l string) bool {
	for int64(len(w.sums)) < seq {
		w.sums = append(w.sums, crc64.Checksum([]byte(w.line(int64(len(w.sums))+1)), faultCRC))
	}
	return crc64.Checksum([]byte(l), faultCRC) == w.sums[seq-1]
}

// maxExtra is how many unacknowledged lines of this writer may be stored:
// the lines of the one write in flight.
func (w *faultWriter) maxExtra() int64 { return int64(max(w.batch, 1)) }

func (w *faultWriter) line(seq int64) string {
	switch {
	case w.kind == "echo" && w.keys > 0:
		k, tomb := w.key(seq)
		if tomb {
			return fmt.Sprintf("%s.k%d=", w.id, k)
		}
		return fmt.Sprintf("%s.k%d=%s %d x%d", w.id, k, w.id, seq, seq)
	case w.kind == "echo":
		return fmt.Sprintf("%s %d x%d", w.id, seq, seq)
	case w.kind == "big":
		return string(faultline.Line(w.id, seq, true))
	case w.keys > 0:
		return string(faultline.Keyed(w.id, seq, w.keys))
	default:
		return string(faultline.Line(w.id, seq, false))
	}
}

// key is the key of keyed write seq and whether it is a tombstone. The
// echo loop computes it in bash arithmetic (faultEchoKeyed), the line
// writer with faultline.Key; each is computed once per seq.
func (w *faultWriter) key(seq int64) (int, bool) {
	for int64(len(w.keyc)) < seq {
		s := int64(len(w.keyc)) + 1
		var k int
		var tomb bool
		if w.kind == "echo" {
			k, tomb = int((s*2654435761>>8)%int64(w.keys)), (s*40503>>4)%8 == 0
		} else {
			k, tomb = faultline.Key(w.id, s, w.keys)
		}
		if tomb {
			k = -k - 1
		}
		w.keyc = append(w.keyc, int32(k))
	}
	if k := int(w.keyc[seq-1]); k < 0 {
		return -k - 1, true
	}
	return int(w.keyc[seq-1]), false
}

// faultEchoKeyed is the body of the keyed echo loop: write i to key
// (i*2654435761>>8)%K, a tombstone when (i*40503>>4)%8 is 0 (as key()).
const faultEchoKeyed = `k=$(( (i*2654435761>>8) %% %d )); if (( (i*40503>>4) %% 8 == 0 )); then l="%s.k$k="; else l="%s.k$k=%s $i x$i"; fi; echo "$l" >> "$F"`

// acked reads the manifest: the seqs must be next-1 consecutive ones;
// it returns the last.
func (w *faultWriter) acked(t testing.TB) int64 {
	t.Helper()
	b, err := os.ReadFile(w.man)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var last int64
	for i, l := range mntLines(string(b)) {
		n, err := strconv.ParseInt(l, 10, 64)
		if err != nil || n != int64(i)+1 {
			t.Fatalf("manifest %s line %d is %q, want %d", w.man, i+1, l, i+1)
		}
		last = n
	}
	return last
}

// adopt records in the manifest that seqs (acked, upto] are stored: the
// lines in flight at the fault that made it count as acknowledged from
// now on, so the next run does not write those seqs again.
func (w *faultWriter) adopt(t testing.TB, acked, upto int64) {
	t.Helper()
	f, err := os.OpenFile(w.man, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for s := acked + 1; s <= upto; s++ {
		fmt.Fprintf(f, "%d\n", s)
	}
	w.next = upto + 1
}

// faultRig is a mounted data dir with its writers and readers.
type faultRig struct {
	t       testing.TB
	m       *mnt
	data    string
	addr    string // --kafka-listen
	workDir string // manifests and reader output (on /tmp)
	writers []*faultWriter
	readers []*faultProc
	rounds  int
	// lastRound, if set, is the last round of a loop whose data grows
	// round after round (F1, F2): see oracle.
	lastRound int
	// restartTime is how long the last restart took, for the soak's
	// progress lines.
	restartTime time.Duration
	rng         *rand.Rand
	readTopic   string   // of tail -f and grep -c
	mountArgs   []string // options of segfs mount
	// toolBin, if set, is the segfs binary the oracle runs dump-log and
	// verify with; otherwise segfsBin. F11 mounts a race-enabled daemon
	// and reads with the plain binary: the offline tools run in one
	// goroutine, so the race detector has nothing to find in them, and
	// under it they were a third of F11's time.
	toolBin string
	seed    uint64
	cleaned map[string]*faultCleaned // topics with retention or compaction (fault_cleaners_test.go)

	// figures
	faults, ackedChecked, lost, truncations, droppedBytes, manual int64
	cutLines                                                      int64 // prefixes of lines cut by a fault, recovered (oracle)
	logSeen                                                       int   // bytes of the daemon log already scanned
}

// faultNewRig mounts data (a directory on the backing filesystem) with a
// Kafka listener.
func faultNewRig(t testing.TB, data string, extra ...string) *faultRig {
	t.Helper()
	faultwriterBin(t)
	r := &faultRig{t: t, data: data, workDir: t.TempDir(), seed: uint64(time.Now().UnixNano()), cleaned: map[string]*faultCleaned{}}
	r.rng = rand.New(rand.NewPCG(r.seed, 1))
	t.Logf("fault rig seed %d (the fault timing and the offset/N probes)", r.seed)
	r.addr = kafkaFreeAddr(t)
	r.mountArgs = append([]string{"--kafka-listen", r.addr}, extra...)
	r.m = mntAt(t, data, r.mountArgs...)
	kafkaWaitListening(t, r.addr)
	return r
}

// tools is the segfs binary for the oracle's offline tools.
func (r *faultRig) tools() string {
	if r.toolBin != "" {
		return r.toolBin
	}
	return segfsBin
}

// topic creates a topic (partition 0) with config lines.
func (r *faultRig) topic(name string, config ...string) {
	r.t.Helper()
	s := `mkdir "$M/` + name + `"`
	for _, c := range config {
		s += ` && echo ` + c + ` >> "$M/` + name + `/config"`
	}
	r.m.ok(s)
}

func (r *faultRig) addWriter(id, kind, topic string, durable bool, batch int) *faultWriter {
	w := &faultWriter{id: id, kind: kind, topic: topic, durable: durable, batch: batch,
		man: filepath.Join(r.workDir, id+".manifest"), next: 1}
	r.writers = append(r.writers, w)
	return w
}

// startWriters starts every writer from its next seq.
func (r *faultRig) startWriters() {
	t := r.t
	t.Helper()
	bin := faultwriterBin(t)
	for _, w := range r.writers {
		data := r.m.path(w.topic, "0", "data")
		w.start = w.next
		switch w.kind {
		case "echo":
			sync := ""
			if w.durable {
				sync = ` && sync "$F"`
			}
			write := fmt.Sprintf(`echo "%s $i x$i" >> "$F"`, w.id)
			if w.keys > 0 {
				write = "{ " + fmt.Sprintf(faultEchoKeyed, w.keys, w.id, w.id, w.id) + "; }"
			}
			loop := fmt.Sprintf(`i=%d; while :; do %s%s || exit 3; echo $i >> "$MAN" || exit 4; i=$((i+1)); done`,
				w.next, write, sync)
			w.proc = faultStart(t, w.id, 600, []string{"F=" + data, "MAN=" + w.man}, "bash", "-c", loop)
		case "lines", "big":
			args := []string{"lines", "-id", w.id, "-file", data, "-manifest", w.man,
				"-start", strconv.FormatInt(w.next, 10), "-batch", strconv.Itoa(max(w.batch, 1))}
			if w.kind == "big" {
				args = append(args, "-big")
			}
			if w.keys > 0 {
				args = append(args, "-keys", strconv.Itoa(w.keys))
			}
			if w.durable {
				args = append(args, "-fsync")
			}
			if w.count > 0 {
				args = append(args, "-count", strconv.FormatInt(w.count, 10))
			}
			if w.pause != "" {
				args = append(args, "-pause", w.pause)
			}
			w.proc = faultStart(t, w.id, 600, nil, bin, args...)
		case "kafka":
			w.proc = faultStart(t, w.id, 600, nil, bin, "kafka", "-id", w.id, "-addr", r.addr, "-topic", w.topic,
				"-manifest", w.man, "-start", strconv.FormatInt(w.next, 10))
		}
	}
}

// readerOut is where reader i of this round writes.
func (r *faultRig) readerOut(name string) string {
	return filepath.Join(r.workDir, fmt.Sprintf("r%d-%s", r.rounds, name))
}

// startReaders starts `tail -f` from the first line of topic, a `grep -c`
// loop over it, and a Kafka consumer of kafkaTopic (if not "").
func (r *faultRig) startReaders(topic, kafkaTopic string) {
	t := r.t
	r.readTopic = topic
	data := r.m.path(topic, "0", "data")
	r.readers = append(r.readers,
		faultStart(t, "tail", 600, nil, "bash", "-c", `exec tail -s 0.05 -n +1 -f "$0" > "$1" 2>/dev/null`, data, r.readerOut("tail")),
		faultStart(t, "grep", 600, nil, "bash", "-c", `while :; do n=$(grep -c '' "$0"); [ $? -le 1 ] || exit 0; echo "$n"; sleep 0.05; done > "$1" 2>/dev/null`,
			data, r.readerOut("grep")))
	if kafkaTopic != "" {
		r.readers = append(r.readers, faultStart(t, "consume", 600, nil, faultwriterBin(t), "consume",
			"-addr", r.addr, "-topic", kafkaTopic, "-out", r.readerOut("consume")))
	}
	r.startCleanedReaders()
}

// waitProgress waits until every writer has acknowledged at least n more
// lines than at its start (or one of them stopped).
func (r *faultRig) waitProgress(n int64) {
	t := r.t
	t.Helper()
	start := map[*faultWriter]int64{}
	for _, w := range r.writers {
		start[w] = w.next - 1
	}
	ok := mntWaitFor(60*time.Second, func() bool {
		for _, w := range r.writers {
			if w.proc.exited() {
				if w.proc.err != nil {
					return true
				}
				continue
			}
			if w.acked(t) < start[w]+n {
				return false
			}
		}
		return true
	})
	for _, w := range r.writers {
		if w.proc.exited() && w.proc.err != nil {
			t.Fatalf("writer %s stopped before the fault: %v\n%s\n%s--- daemon log:\n%s", w.id, w.proc.err, w.proc.errb, r.m.walkDiag(w.proc.errb.String()), r.m.daemonLog())
		}
	}
	if !ok {
		t.Fatalf("writers made no progress in 60s\n%s", r.m.daemonLog())
	}
}

// stopClients waits briefly for every writer to stop by itself (they do
// when the mount dies), then kills whatever is left, readers first. No
// client may outlive the daemon it wrote to: a Kafka retry must never
// reach the next one. A Kafka writer is killed at once, with the
// readers: it gives up only after its 3 s delivery timeout, so it never
// stopped by itself within any grace given here, and waiting for it cost
// every round the whole grace.
func (r *faultRig) stopClients(grace time.Duration) {
	for _, p := range r.readers {
		p.kill()
	}
	r.readers = nil
	for _, w := range r.writers {
		if w.proc != nil && w.kind == "kafka" {
			w.proc.kill()
		}
	}
	deadline := time.Now().Add(grace)
	for _, w := range r.writers {
		if w.proc != nil {
			w.proc.wait(max(time.Until(deadline), time.Millisecond))
		}
	}
}

// restart mounts again after the daemon died, without any manual step:
// `segfs mount` must clear the dead mount itself (F14). A restart that
// needs `umount -l` first is counted as manual, and the test fails.
func (r *faultRig) restart() {
	t := r.t
	t.Helper()
	args := append(append([]string{"mount"}, r.mountArgs...), r.m.data, r.m.dir)
	began := time.Now()
	defer func() { r.restartTime = time.Since(began) }()
	out, err := faultRun(t, 60, segfsBin, args...)
	if err != nil {
		r.manual++
		t.Errorf("restart on the dead mount needed a manual step: %v\n%s\n%s", err, out, r.m.daemonLog())
		exec.Command("umount", "-l", r.m.dir).Run()
		r.m.mount(r.mountArgs...)
	} else {
		r.m.pid = r.m.findDaemon()
		pid := r.m.pid
		t.Cleanup(func() { r.m.teardown(pid) })
	}
	if n := strings.Count(mountinfoLines(r.m.dir), "\n"); n != 1 {
		t.Fatalf("%d mounts stacked on %s after the restart", n, r.m.dir)
	}
	kafkaWaitListening(t, r.addr)
}

// scanLog counts the recovery truncations the daemon logged since the last
// scan.
var faultDroppedRe = regexp.MustCompile(`msg="truncated torn or corrupt tail".*dropped_bytes=(\d+)`)

func (r *faultRig) scanLog() {
	b, _ := os.ReadFile(filepath.Join(r.m.data, "segfs-mount.out"))
	if len(b) < r.logSeen {
		r.logSeen = 0 // a power cut took the log's unsynced tail
	}
	for _, m := range faultDroppedRe.FindAllSubmatch(b[r.logSeen:], -1) {
		n, _ := strconv.ParseInt(string(m[1]), 10, 64)
		r.truncations++
		r.droppedBytes += n
	}
	r.logSeen = len(b)
}

// figures logs the FAULT-FIGURES line.
func (r *faultRig) figures(name string) {
	deleted, removed := r.cleanedFigures()
	r.t.Logf("FAULT-FIGURES %s faults=%d acked=%d lost=%d truncations=%d dropped_bytes=%d manual=%d retention_deleted=%d compaction_removed=%d cut_lines=%d",
		name, r.faults, r.ackedChecked, r.lost, r.truncations, r.droppedBytes, r.manual, deleted, removed, r.cutLines)
}

// quiesce waits (up to 10 s) until topic's log end offset has not moved
// for 300 ms. Killing a writer does not stop its last request: a Kafka
// produce the daemon already received, or a WRITE in flight, is appended
// after the kill, and an oracle reading meanwhile saw data one record
// short of what status and a `tail -f` saw (F15, about 1 run in 30).
func (r *faultRig) quiesce(topic string) {
	status := r.m.path(topic, "0", "status")
	end := func() string {
		b, _ := os.ReadFile(status)
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "log.end.offset="); ok {
				return v
			}
		}
		return ""
	}
	last, since := end(), time.Now()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		if e := end(); e != last {
			last, since = e, time.Now()
		} else if time.Since(since) >= 300*time.Millisecond {
			return
		}
	}
}

// faultPartition is a partition as read back for the oracle.
type faultPartition struct {
	text    []byte   // cat data
	lines   []string // its lines
	start   int64    // log start offset
	end     int64    // log end offset (cleaned topics)
	offsets []int64  // offset of each line (cleaned topics; compaction leaves gaps)
}

// readPartition reads data through the mount (cat, stat) and checks what
// any reader may rely on: no NUL, ends with a newline, st_size equals the
// bytes read, wc -l agrees, offset/N is the suffix of data from N.
func (r *faultRig) readPartition(topic string) *faultPartition {
	t := r.t
	t.Helper()
	dir := r.m.path(topic, "0")
	tmp := filepath.Join(r.workDir, "read-"+topic)
	f := mntLines(r.m.ok(fmt.Sprintf(`d=%q; cat "$d/data" > %q && stat -c %%s "$d/data" && wc -l < "$d/data" &&
sed -n 's/^log.start.offset=//p;s/^log.end.offset=//p' "$d/status"`, dir, tmp)))
	text, err := os.ReadFile(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(f) != 4 {
		t.Fatalf("%s: stat/wc/status gave %q", topic, f)
	}
	if f[0] != strconv.Itoa(len(text)) {
		t.Errorf("%s: st_size %s, but %d bytes read", topic, f[0], len(text))
	}
	if i := bytes.IndexByte(text, 0); i >= 0 {
		t.Fatalf("%s: NUL byte at %d of data", topic, i)
	}
	if len(text) > 0 && text[len(text)-1] != '\n' {
		t.Fatalf("%s: data does not end with a newline: %q", topic, text[max(0, len(text)-80):])
	}
	p := &faultPartition{text: text, lines: mntLines(string(text))}
	if f[1] != strconv.Itoa(len(p.lines)) {
		t.Errorf("%s: wc -l %s, %d lines read", topic, f[1], len(p.lines))
	}
	p.start, _ = strconv.ParseInt(f[2], 10, 64)
	end, _ := strconv.ParseInt(f[3], 10, 64)
	if end-p.start != int64(len(p.lines)) {
		t.Errorf("%s: status says offsets [%d, %d), data has %d lines (offsets not dense)", topic, p.start, end, len(p.lines))
	}
	// offset/N for the start, a random N, the last record and the end.
	ns := []int64{p.start, end}
	if end > p.start {
		ns = append(ns, end-1, p.start+r.rng.Int64N(end-p.start))
	}
	for _, n := range ns {
		got := r.m.ok(fmt.Sprintf(`cat %q`, filepath.Join(dir, "offset", strconv.FormatInt(n, 10))))
		want := ""
		if k := int(n - p.start); k < len(p.lines) {
			want = strings.Join(p.lines[k:], "\n") + "\n"
		}
		if got != want {
			t.Errorf("%s: offset/%d (%d bytes) is not the suffix of data from %d (%d bytes)", topic, n, len(got), n, len(want))
		}
	}
	return p
}

// dumpLog reads the partition's segments with `segfs dump-log
// --print-data-log`: every batch must be valid (exit status 0, no
// "invalid bytes"), offsets dense, and the payloads equal the lines read
// through the mount.
func (r *faultRig) dumpLog(topic string, p *faultPartition) {
	t := r.t
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(r.data, topic+"-0", "*.log"))
	slices.Sort(logs)
	if len(logs) == 0 {
		t.Fatalf("%s: no segments in %s", topic, r.data)
	}
	out, err := faultRun(t, 120, r.tools(), append([]string{"dump-log", "--print-data-log"}, logs...)...)
	if err != nil || strings.Contains(out, "invalid bytes") {
		t.Fatalf("dump-log of %s: %v\n%.3000s", topic, err, out)
	}
	next := p.start
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "| offset:") {
			continue
		}
		// "| offset: N ... payload: VALUE" (no regexp: values are up to
		// 300,000 bytes and this runs after every fault).
		head, payload, ok := strings.Cut(l, " payload: ")
		o, _, _ := strings.Cut(strings.TrimPrefix(head, "| offset: "), " ")
		off, err := strconv.ParseInt(o, 10, 64)
		if !ok || err != nil {
			t.Fatalf("%s: dump-log record line without offset or payload: %.200s", topic, l)
		}
		if off != next {
			t.Fatalf("%s: dump-log offset %d after %d: offsets not dense", topic, off, next-1)
		}
		k := int(off - p.start)
		if k >= len(p.lines) || p.lines[k] != payload {
			t.Fatalf("%s: dump-log payload at offset %d differs from line %d read through the mount", topic, off, k+1)
		}
		next++
	}
	if int(next-p.start) != len(p.lines) {
		t.Fatalf("%s: dump-log shows %d records, the mount %d lines", topic, next-p.start, len(p.lines))
	}
}

// verify runs `segfs verify DATA` and fails on errors. verify runs beside
// the mount, whose cleaners may delete or replace a segment file between
// verify's listing and its open: a run whose every error is such a
// vanished file is repeated (up to 10 times), any other error fails at once.
func (r *faultRig) verify() {
	t := r.t
	t.Helper()
	for attempt := 0; ; attempt++ {
		out, err := faultRun(t, 120, r.tools(), "verify", r.data)
		if err == nil {
			return
		}
		vanished := len(r.cleaned) > 0 && attempt < 10
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "error: ") && !strings.HasSuffix(l, ": no such file or directory") {
				vanished = false
			}
		}
		if !vanished {
			t.Fatalf("segfs verify %s: %v\n%.3000s", r.data, err, out)
		}
		t.Logf("segfs verify %s: a file went away under it (the cleaners), again:\n%.1000s", r.data, out)
		time.Sleep(200 * time.Millisecond)
	}
}

// oracle judges the log after a fault: for every writer, the stored lines
// of that writer are exactly line(1), line(2), ... line(n), in order, no
// line foreign to every writer; acknowledged ≤ n ≤ acknowledged + the
// write in flight. Lost lines are counted (and fail the test). Readers'
// output must agree with what is stored (what a reader saw is never taken
// back: only after faults that keep the page cache, seenKept). Then the
// in-flight lines that made it are adopted and every writer's next seq
// set.
func (r *faultRig) oracle(seenKept bool) {
	t := r.t
	t.Helper()
	parts := map[string]*faultPartition{}
	byTopic := map[string][]*faultWriter{}
	for _, w := range r.writers {
		byTopic[w.topic] = append(byTopic[w.topic], w)
	}
	for topic, ws := range byTopic {
		if c := r.cleaned[topic]; c != nil {
			parts[topic] = r.oracleCleaned(topic, c, ws)
			continue
		}
		p := r.readPartition(topic)
		parts[topic] = p
		r.dumpLog(topic, p)
		stored := map[*faultWriter][]string{}
		if len(ws) == 1 {
			stored[ws[0]] = p.lines
		} else {
			for i, l := range p.lines {
				id, _, _ := strings.Cut(l, " ")
				var owner *faultWriter
				for _, w := range ws {
					if w.id == id {
						owner = w
					}
				}
				if owner == nil {
					t.Fatalf("%s: line %d belongs to no writer (partial or garbage): %.200q", topic, i+1, l)
				}
				stored[owner] = append(stored[owner], l)
			}
		}
		for _, w := range ws {
			acked := w.acked(t)
			got := stored[w]
			// n counts the intact lines, in order.
			n := int64(0)
			for i, l := range got {
				seq := n + 1
				if w.matches(seq, l) {
					n++
					continue
				}
				want := w.line(seq)
				if len(l) > 0 && len(l) < len(want) && strings.HasPrefix(want, l) && (i == len(got)-1 || w.matches(seq, got[i+1])) {
					// The cut line of a write(2) the daemon's death
					// interrupted between two of its WRITEs (a big
					// writer's, past max_write): the start the first
					// WRITEs acknowledged is kept in the journal of
					// unfinished lines, and the next mount made it a
					// record (logstore doc, "Unfinished lines"). The
					// writer's next run sends the whole line again.
					// Not a torn line: a prefix, followed by the line
					// itself or last.
					r.cutLines++
					continue
				}
				if seq <= acked {
					t.Errorf("%s: writer %s line %d (record %d of %d) is %.120q, want %.120q (torn, lost or reordered)", topic, w.id, seq, i+1, len(got), l, want)
				} else {
					t.Errorf("%s: writer %s unacknowledged line %d is %.120q, want %.120q", topic, w.id, seq, l, want)
				}
				break
			}
			r.ackedChecked += acked
			if n < acked {
				r.lost += acked - n
				t.Errorf("%s: writer %s: %d lines acknowledged, only %d stored intact: %d LOST", topic, w.id, acked, n, acked-n)
			}
			if n > acked+w.maxExtra() {
				t.Errorf("%s: writer %s: %d lines stored, %d acknowledged: more than the write in flight", topic, w.id, n, acked)
			}
			if t.Failed() {
				t.FailNow()
			}
			w.adopt(t, acked, n)
		}
	}
	if seenKept {
		r.checkReaders(parts)
	}
	r.checkCleanedReaders(parts, seenKept)
	// segfs verify reads the whole data directory, which F1 and F2 grow
	// by new topics every epoch: at 280 rounds it took 3.5 s, half of a
	// round, and it keeps growing. The partitions a round can change
	// (this epoch's) are read and dump-logged above after every fault,
	// and verify reads everything in the first epoch, at the end of
	// every epoch and after the last round.
	if r.lastRound == 0 || r.rounds < faultEpoch || r.rounds%faultEpoch == faultEpoch-1 || r.rounds == r.lastRound {
		r.verify()
	}
	r.scanLog()
}

// checkReaders compares this round's reader output with what is stored.
func (r *faultRig) checkReaders(parts map[string]*faultPartition) {
	t := r.t
	t.Helper()
	if p := parts[r.readTopic]; p != nil {
		if b, err := os.ReadFile(r.readerOut("tail")); err == nil {
			seen := mntLines(string(b[:bytes.LastIndexByte(b, '\n')+1]))
			if len(seen) > len(p.lines) || !slices.Equal(seen, p.lines[:len(seen)]) {
				t.Fatalf("tail -f printed %d lines that are not a prefix of the %d stored", len(seen), len(p.lines))
			}
		}
		if b, err := os.ReadFile(r.readerOut("grep")); err == nil {
			prev := 0
			for _, l := range mntLines(string(b)) {
				n, err := strconv.Atoi(l)
				if err != nil {
					continue // cut by the kill
				}
				if n < prev || n > len(p.lines) {
					t.Fatalf("grep -c counted %d after %d; %d lines stored", n, prev, len(p.lines))
				}
				prev = n
			}
		}
	}
	for _, w := range r.writers {
		if w.kind != "kafka" {
			continue
		}
		p := parts[w.topic]
		b, err := os.ReadFile(r.readerOut("consume"))
		if err != nil || p == nil {
			continue
		}
		for _, l := range mntLines(string(b[:bytes.LastIndexByte(b, '\n')+1])) {
			o, v, _ := strings.Cut(l, " ")
			off, err := strconv.ParseInt(o, 10, 64)
			if err != nil {
				t.Fatalf("consumer output %q", l)
			}
			if k := off - p.start; k < 0 || k >= int64(len(p.lines)) || p.lines[k] != v {
				t.Fatalf("the consumer saw offset %d = %.80q, which is not what is stored", off, v)
			}
		}
	}
}

// killDaemon is F1: SIGKILL of the daemon, exactly its pid.
func (r *faultRig) killDaemon() {
	r.m.kill9()
}

// epochStart logs the soak's progress at the start of every epoch after
// the first: a long run shows how far it got, and how its rounds and
// restarts slow as its data grows.
func (r *faultRig) epochStart(round int, began time.Time) {
	if round > 0 {
		r.t.Logf("soak progress: round %d, %s since the start, the last restart took %s",
			round, time.Since(began).Round(time.Second), r.restartTime.Round(time.Millisecond))
	}
}
