package tests

// F3-F7 against a real mount: the data dir of a mount is damaged while
// the daemon is down (after a SIGKILL, or a clean unmount where stated),
// then `segfs mount` recovers it. The unit tests in logstore cover the
// byte-level cases exhaustively (TestRecoveryTornTail: every length;
// TestRecoveryGarbageTail; TestRecoveryIndexes; TestCorruptClosedSegment;
// TestInterruptedSwap; FuzzSegmentLoad); these check the same promises
// end to end: through the mount, dump-log and verify, with the next
// append continuing at the right offset.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// faultBatch is one batch of a segment, as dump-log reports it.
type faultBatch struct {
	base, last, pos, size int64
}

var faultBatchRe = regexp.MustCompile(`^baseOffset: (\d+) lastOffset: (\d+) .* position: (\d+) .* size: (\d+) `)

func faultBatches(t testing.TB, log string) []faultBatch {
	t.Helper()
	out := faultMust(t, 60, segfsBin, "dump-log", log)
	var bs []faultBatch
	for _, l := range strings.Split(out, "\n") {
		if m := faultBatchRe.FindStringSubmatch(l); m != nil {
			var b faultBatch
			b.base, _ = strconv.ParseInt(m[1], 10, 64)
			b.last, _ = strconv.ParseInt(m[2], 10, 64)
			b.pos, _ = strconv.ParseInt(m[3], 10, 64)
			b.size, _ = strconv.ParseInt(m[4], 10, 64)
			bs = append(bs, b)
		}
	}
	return bs
}

// faultDamageSetup mounts a fresh data dir with a topic of 16 KiB
// segments holding lines 1..n written in writes of 1 to 50 lines (so
// batches of that many records), and returns the lines.
func faultDamageSetup(t *testing.T, rng *rand.Rand, n int) (*mnt, []string) {
	t.Helper()
	m := mntNew(t)
	m.ok(`mkdir "$M/dmg" && echo segment.bytes=16384 >> "$M/dmg/config"`)
	var lines []string
	var script strings.Builder
	for i := 1; i <= n; {
		k := min(1+rng.IntN(50), n-i+1)
		fmt.Fprintf(&script, "seq -f 'line %%g' %d %d >> \"$M/dmg/0/data\"\n", i, i+k-1)
		for j := i; j < i+k; j++ {
			lines = append(lines, fmt.Sprintf("line %d", j))
		}
		i += k
	}
	m.ok(script.String())
	return m, lines
}

// recoveryPoint is the recovery point of topic/part in the daemon's
// recovery-point-offset-checkpoint ("topic part offset" lines), -1 while
// it has none.
func (m *mnt) recoveryPoint(topic string, part int) int64 {
	b, _ := os.ReadFile(filepath.Join(m.data, "recovery-point-offset-checkpoint"))
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == topic && f[1] == strconv.Itoa(part) {
			n, err := strconv.ParseInt(f[2], 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// activeBase is the base offset of dmg/0's active segment (its file name).
func (m *mnt) activeBase() int64 {
	logs := m.segmentLogs()
	if len(logs) == 0 {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSuffix(filepath.Base(logs[len(logs)-1]), ".log"), 10, 64)
	return n
}

func (m *mnt) segmentLogs() []string {
	logs, _ := filepath.Glob(filepath.Join(m.data, "dmg-0", "*.log"))
	slices.Sort(logs)
	return logs
}

// checkStored checks data (and the next append) against want.
func (m *mnt) checkStored(want []string, what string) {
	t := m.t
	t.Helper()
	got := mntLines(m.ok(`cat "$M/dmg/0/data"`))
	if !slices.Equal(got, want) {
		t.Fatalf("%s: %d lines stored, want %d (first difference near %d)", what, len(got), len(want), firstDiff(got, want))
	}
	m.ok(`echo next >> "$M/dmg/0/data"`)
	if got := m.ok(`cat "$M/dmg/0/offset/` + strconv.Itoa(len(want)) + `"`); got != "next\n" {
		t.Fatalf("%s: the next append is not at offset %d: offset/%d = %q", what, len(want), len(want), got)
	}
	if out, err := faultRun(t, 60, segfsBin, "verify", m.data); err != nil {
		t.Fatalf("%s: segfs verify: %v\n%s", what, err, out)
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func faultSeed(t *testing.T) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("SEGFS_FAULT_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (SEGFS_FAULT_SEED reproduces it)", seed)
	return rand.New(rand.NewPCG(seed, 3))
}

// TestFaultTornBatch is F3: after a SIGKILL the active segment is cut
// inside its last batch (at its first byte, its last, and random lengths
// between): the log ends at the previous batch, earlier data is identical,
// the next append continues at the end.
func TestFaultTornBatch(t *testing.T) {
	rounds := faultRounds(t, "F3", 5)
	rng := faultSeed(t)
	for i := 0; i < rounds; i++ {
		m, lines := faultDamageSetup(t, rng, 2000+rng.IntN(1000))
		m.kill9()
		logs := m.segmentLogs()
		active := logs[len(logs)-1]
		bs := faultBatches(t, active)
		last := bs[len(bs)-1]
		cut := last.pos + rng.Int64N(last.size)
		switch i {
		case 0:
			cut = last.pos
		case 1:
			cut = last.pos + last.size - 1
		}
		if err := os.Truncate(active, cut); err != nil {
			t.Fatal(err)
		}
		m.mount()
		m.checkStored(lines[:last.base], fmt.Sprintf("cut at %d of batch %d-%d", cut-last.pos, last.base, last.last))
		m.unmount()
		m.sanityCheck()
	}
}

// TestFaultTornSealedSegment: a sealed segment below the recovery point
// cut short inside its last batch (by a disk or a hand, not by a crash:
// every later segment was on disk before the checkpoint said so) loses
// only that batch. The mount used to truncate it and delete every later
// segment as well, intact as they were, after a clean shutdown and after a
// kill -9 alike; Kafka's recoverSegment keeps them. The lost batch leaves
// a gap in the offsets: offset/N inside it reads from the next record.
func TestFaultTornSealedSegment(t *testing.T) {
	rng := faultSeed(t)
	for _, clean := range []bool{true, false} {
		m, lines := faultDamageSetup(t, rng, 3000)
		if clean {
			m.unmount()
		} else {
			// Past the rolls' flushes and the next checkpoint, so that
			// the recovery point is in the active segment: awaited in
			// the checkpoint file rather than slept for (1.5 s).
			m.ok(`sync`)
			if !mntWaitFor(20*time.Second, func() bool { return m.recoveryPoint("dmg", 0) >= m.activeBase() }) {
				t.Fatalf("the recovery point of dmg/0 (%d) did not reach the active segment (%d) in 20 s", m.recoveryPoint("dmg", 0), m.activeBase())
			}
			m.kill9()
		}
		logs := m.segmentLogs()
		if len(logs) < 3 {
			t.Fatalf("%d segments, want at least 3", len(logs))
		}
		bs := faultBatches(t, logs[1])
		last := bs[len(bs)-1]
		if err := os.Truncate(logs[1], last.pos+last.size/2); err != nil {
			t.Fatal(err)
		}
		m.mount()
		want := append(slices.Clone(lines[:last.base]), lines[last.last+1:]...)
		got := mntLines(m.ok(`cat "$M/dmg/0/data"`))
		if !slices.Equal(got, want) {
			t.Fatalf("clean=%v, batch %d-%d of %s torn: %d lines read, want %d (first difference near %d)\n%s",
				clean, last.base, last.last, filepath.Base(logs[1]), len(got), len(want), firstDiff(got, want), m.daemonLog())
		}
		if got := m.ok(`head -n1 "$M/dmg/0/offset/` + strconv.FormatInt(last.base, 10) + `"`); got != lines[last.last+1]+"\n" {
			t.Fatalf("offset/%d in the gap reads %q, want %q", last.base, got, lines[last.last+1])
		}
		if !strings.Contains(m.daemonLog(), "kept the segments after the damaged one") {
			t.Fatalf("the daemon did not say why it kept the later segments:\n%s", m.daemonLog())
		}
		m.ok(`echo next >> "$M/dmg/0/data"`)
		if got := m.ok(`cat "$M/dmg/0/offset/` + strconv.Itoa(len(lines)) + `"`); got != "next\n" {
			t.Fatalf("the next append is not at offset %d: %q", len(lines), got)
		}
		m.unmount()
		m.sanityCheck()
	}
}

// TestFaultGarbageTail is F4: 1 to 1024 random bytes, or zeros (a
// preallocated or torn sector), appended to the active .log and garbage
// to its .index after a SIGKILL: truncated away, nothing else changes.
func TestFaultGarbageTail(t *testing.T) {
	rounds := faultRounds(t, "F4", 5)
	rng := faultSeed(t)
	for i := 0; i < rounds; i++ {
		m, lines := faultDamageSetup(t, rng, 1500)
		m.kill9()
		logs := m.segmentLogs()
		active := logs[len(logs)-1]
		tail := make([]byte, 1+rng.IntN(1024))
		if i%2 == 0 {
			for j := range tail {
				tail[j] = byte(rng.IntN(256))
			}
		}
		for _, f := range []string{active, strings.TrimSuffix(active, ".log") + ".index"} {
			fh, err := os.OpenFile(f, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			fh.Write(tail)
			fh.Close()
		}
		m.mount()
		m.checkStored(lines, fmt.Sprintf("%d bytes of tail (zeros: %v)", len(tail), i%2 == 1))
		m.unmount()
		m.sanityCheck()
	}
}

// TestFaultBitFlipActive is F5a: one bit flipped at a random position of
// the active segment after a SIGKILL. Recovery truncates from the damaged
// batch (and logs it); a flip in the partition leader epoch, which the
// batch CRC does not cover and nothing reads, may leave everything.
func TestFaultBitFlipActive(t *testing.T) {
	rounds := faultRounds(t, "F5", 5)
	rng := faultSeed(t)
	for i := 0; i < rounds; i++ {
		m, lines := faultDamageSetup(t, rng, 1500)
		m.kill9()
		logs := m.segmentLogs()
		active := logs[len(logs)-1]
		bs := faultBatches(t, active)
		k := rng.IntN(len(bs))
		pos := bs[k].pos + rng.Int64N(bs[k].size)
		flipBit(t, active, pos, uint(rng.IntN(8)))
		m.mount()
		want := lines[:bs[k].base]
		if rel := pos - bs[k].pos; rel >= 12 && rel < 16 {
			if got := mntLines(m.ok(`cat "$M/dmg/0/data"`)); len(got) == len(lines) {
				want = lines
			}
		}
		m.checkStored(want, fmt.Sprintf("bit flip at %d (batch %d-%d at %d)", pos, bs[k].base, bs[k].last, bs[k].pos))
		if len(want) < len(lines) && !strings.Contains(m.daemonLog(), "truncated torn or corrupt tail") {
			t.Errorf("the truncation was not logged:\n%s", m.daemonLog())
		}
		m.unmount()
	}
}

func flipBit(t testing.TB, path string, pos int64, bit uint) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, pos); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 1 << bit
	if _, err := f.WriteAt(b, pos); err != nil {
		t.Fatal(err)
	}
}

// TestFaultBitFlipSealed is F5b: one bit flipped in the CRC-covered part
// of a batch of a closed segment after a clean unmount (closed segments
// are below the recovery point and not rescanned at start, as in Kafka).
// Reading data through the mount fails with EIO at that batch and never
// returns garbage (what it returned before the error is a prefix of the
// true text); offset/N past the damaged segment reads fine; `segfs
// verify` and `segfs dump-log` report the damage. Flipping the bit back
// makes everything whole again.
func TestFaultBitFlipSealed(t *testing.T) {
	rounds := faultRounds(t, "F5", 5)
	rng := faultSeed(t)
	m, lines := faultDamageSetup(t, rng, 3000)
	m.unmount()
	logs := m.segmentLogs()
	if len(logs) < 3 {
		t.Fatalf("%d segments, want at least 3", len(logs))
	}
	whole := strings.Join(lines, "\n") + "\n"
	for i := 0; i < rounds; i++ {
		seg := logs[rng.IntN(len(logs)-1)]
		bs := faultBatches(t, seg)
		b := bs[rng.IntN(len(bs))]
		if i < 2 {
			// Always cover the first and second batch of the first segment
			// (a flip there was once served silently: see the report of
			// issue 7).
			seg = logs[0]
			bs = faultBatches(t, seg)
			b = bs[i]
		}
		// CRC-32C covers the batch from its attributes (byte 21) on.
		pos := b.pos + 21 + rng.Int64N(b.size-21)
		bit := uint(rng.IntN(8))
		flipBit(t, seg, pos, bit)
		m.mount()
		res := m.sh(`cat "$M/dmg/0/data"`)
		if res.code == 0 || !strings.Contains(res.err, "Input/output error") {
			t.Fatalf("reading data over a flipped bit at %d of %s (batch %d-%d at %d): exit %d, %q, %d lines (%d stored), same text: %v; want EIO",
				pos, filepath.Base(seg), b.base, b.last, b.pos, res.code, res.err, len(mntLines(res.out)), len(lines), res.out == whole)
		}
		if !strings.HasPrefix(whole, res.out) {
			t.Fatalf("reading data over a flipped bit returned %d bytes that are not the true text", len(res.out))
		}
		next := logs[slices.Index(logs, seg)+1]
		nb := faultBatches(t, next)[0].base
		if got := m.ok(`cat "$M/dmg/0/offset/` + strconv.FormatInt(nb, 10) + `"`); got != strings.Join(lines[nb:], "\n")+"\n" {
			t.Fatalf("offset/%d after the damaged segment reads wrong (%d bytes)", nb, len(got))
		}
		out, err := faultRun(t, 60, segfsBin, "verify", m.data)
		if err == nil || !strings.Contains(out, filepath.Base(seg)) {
			t.Fatalf("segfs verify missed a flipped bit at %d of %s: %v\n%s", pos, filepath.Base(seg), err, out)
		}
		if out, err := faultRun(t, 60, segfsBin, "dump-log", seg); err == nil {
			t.Fatalf("dump-log of %s with a flipped bit exits 0:\n%.2000s", seg, out)
		}
		m.unmount()
		flipBit(t, seg, pos, bit)
		m.mount()
		if got := m.ok(`cat "$M/dmg/0/data"`); got != whole {
			t.Fatalf("after flipping the bit back, data differs")
		}
		m.unmount()
	}
	if out, err := faultRun(t, 60, segfsBin, "verify", m.data); err != nil {
		t.Fatalf("segfs verify after repair: %v\n%s", err, out)
	}
}

// TestFaultIndexDamage is F6: an index of a closed segment and the active
// one's, damaged in each way (deleted, zero length, garbage, a length not
// a multiple of the entry size, entries pointing past the end of the
// log): after the restart offset/N and time/T answer exactly as before and
// the rebuilt indexes pass the sanity check.
func TestFaultIndexDamage(t *testing.T) {
	rng := faultSeed(t)
	kinds := []string{"delete", "empty", "garbage", "odd-length", "past-eof"}
	m, lines := faultDamageSetup(t, rng, 3000)
	first := m.ok(`sed -n 's/^first.timestamp=//p' "$M/dmg/0/status"`)
	lastTs := m.ok(`sed -n 's/^last.timestamp=//p' "$M/dmg/0/status"`)
	probe := func() string {
		var s strings.Builder
		for _, n := range []int{0, 1, 777, 1500, 2222, len(lines) - 1} {
			s.WriteString(m.ok(`md5sum < "$M/dmg/0/offset/` + strconv.Itoa(n) + `"`))
		}
		for _, ts := range []string{first, lastTs} {
			s.WriteString(m.ok(`readlink "$M/dmg/0/time/` + strings.TrimSpace(ts) + `"`))
		}
		return s.String()
	}
	before := probe()
	for _, kind := range kinds {
		m.kill9()
		logs := m.segmentLogs()
		for _, log := range []string{logs[rng.IntN(len(logs)-1)], logs[len(logs)-1]} {
			for _, idx := range []string{".index", ".timeindex"} {
				path := strings.TrimSuffix(log, ".log") + idx
				damageIndex(t, rng, path, kind, idx)
			}
		}
		m.mount()
		if after := probe(); after != before {
			t.Fatalf("index damage %q changed the answers:\nbefore:\n%s\nafter:\n%s", kind, before, after)
		}
		m.unmount()
		m.sanityCheck()
		m.mount()
	}
}

func damageIndex(t *testing.T, rng *rand.Rand, path, kind, idx string) {
	t.Helper()
	entry := 8
	if idx == ".timeindex" {
		entry = 12
	}
	var err error
	switch kind {
	case "delete":
		err = os.Remove(path)
	case "empty":
		err = os.Truncate(path, 0)
	case "garbage":
		b := make([]byte, 64*entry)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		err = os.WriteFile(path, b, 0o644)
	case "odd-length":
		fi, _ := os.Stat(path)
		err = os.Truncate(path, fi.Size()+int64(1+rng.IntN(entry-1)))
	case "past-eof":
		// A last entry whose position (or offset) is far past the log.
		b := make([]byte, entry)
		for i := range b {
			b[i] = 0x7f
		}
		var f *os.File
		if f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0); err == nil {
			f.Write(b)
			f.Close()
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestFaultLeftovers is F7: files an interrupted retention or compaction
// leaves (.deleted, .cleaned, .tmp, an index-only .swap, an orphan index
// with no .log) and a complete .log.swap (a copy of a closed segment, as a
// compaction that had nothing to drop would leave it) are removed or
// completed at the next mount, 5 times; the text is unchanged.
func TestFaultLeftovers(t *testing.T) {
	rounds := faultRounds(t, "F7", 5)
	rng := faultSeed(t)
	m, lines := faultDamageSetup(t, rng, 2500)
	for i := 0; i < rounds; i++ {
		if i%2 == 0 {
			m.kill9()
		} else {
			m.unmount()
		}
		logs := m.segmentLogs()
		dir := filepath.Dir(logs[0])
		seg := logs[rng.IntN(len(logs)-1)]
		stem := strings.TrimSuffix(seg, ".log")
		data, err := os.ReadFile(seg)
		if err != nil {
			t.Fatal(err)
		}
		orphan := filepath.Join(dir, fmt.Sprintf("%020d", 99999999+i))
		files := map[string][]byte{
			seg + ".deleted":              data,
			stem + ".index.deleted":       nil,
			orphan + ".log.cleaned":       data[:len(data)/2],
			orphan + ".index":             make([]byte, 80),
			orphan + ".timeindex":         make([]byte, 120),
			stem + ".timeindex.swap":      make([]byte, 24),
			filepath.Join(dir, "x.tmp"):   []byte("partial"),
			stem + ".log.swap":            data,
			orphan + ".textindex":         []byte("junk"),
			orphan + ".index.swap":        nil,
			filepath.Join(dir, "y.tmp"):   nil,
			stem + ".textindex.deleted":   nil,
			orphan + ".timeindex.cleaned": nil,
		}
		if i%2 == 1 {
			delete(files, stem+".log.swap") // the index-only swap alone
		}
		for p, b := range files {
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		m.mount()
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			n := e.Name()
			if strings.HasSuffix(n, ".deleted") || strings.HasSuffix(n, ".cleaned") || strings.HasSuffix(n, ".swap") ||
				strings.HasSuffix(n, ".tmp") || strings.HasPrefix(n, filepath.Base(orphan)) {
				t.Errorf("round %d: leftover %s still there after the mount", i, n)
			}
		}
		if got := mntLines(m.ok(`cat "$M/dmg/0/data"`)); !slices.Equal(got, lines) {
			t.Fatalf("round %d: leftovers changed the text: %d lines, want %d", i, len(got), len(lines))
		}
	}
	m.unmount()
	m.sanityCheck()
}
