package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestRetentionTailFollow runs `tail -f` and `tail -F` on data while two
// writers fill 2 KiB segments and millisecond retention deletes them
// behind the readers, at least 50 times, the active segment too (Kafka's
// rule: every pass that finds the last record older than retention.ms
// purges the whole log, rolling an empty segment at its end first, while
// the writers append): both print every line exactly once, in order, and
// no append is lost. Once the writers stop, the log is empty, its start
// at its end: a new open reads nothing, status, ListOffsets and Fetch say
// so. With retention lifted, the lines appended next reach the tails and
// are exactly what a new open, offset/N and a Kafka consumer read;
// offset/N below the log start is ENOENT, a Fetch below it
// OFFSET_OUT_OF_RANGE, and the deleted files' space returns once the
// readers close.
func TestRetentionTailFollow(t *testing.T) {
	// It mostly waits (paced writers, tail's 0.1 s polls, retention
	// passes, idle periods) on a mount and Kafka port of its own: it runs
	// beside the other tests that wait (t.Parallel).
	t.Parallel()
	const writers, lines = 2, 2500
	addr := kafkaFreeAddr(t)
	m := mntNew(t, append([]string{"--kafka-listen", addr}, cleanerFlags...)...)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/ret" && printf 'segment.bytes=2048\nretention.ms=1\nfile.delete.delay.ms=0\n' > "$M/ret/config"`)
	data := m.path("ret", "0", "data")
	ino := m.ok(`stat -c %i "$M/ret/0/data"`)
	partDir := filepath.Join(m.data, "ret-0")
	outDir := t.TempDir()

	modes := []string{"-f", "-F"}
	var tails []*bgProc
	for _, mode := range modes {
		tails = append(tails, bgCmd(t, filepath.Join(outDir, "tail"+mode), "tail", mode, "-s", "0.1", "-n", "+1", data))
	}
	mntWaitOpen(t, data, len(modes), 30*time.Second) // both tails opened the file

	// Each writer paces itself a little so the run spans many retention
	// checks while the segments roll every ~25 lines.
	m.ok(fmt.Sprintf(`
for w in $(seq 1 %d); do
  ( for i in $(seq 1 %d); do echo "w$w $i" >> "$M/ret/0/data" || exit 1; [ $((i %% 100)) = 0 ] && sleep 0.05; done ) &
done
fail=0
for j in $(jobs -p); do wait $j || fail=1; done
exit $fail`, writers, lines), 150)

	waitTails := func(n int) [2]string {
		var out [2]string
		for i, mode := range modes {
			path := filepath.Join(outDir, "tail"+mode)
			mntWaitFor(60*time.Second, func() bool {
				b, _ := os.ReadFile(path)
				return strings.Count(string(b), "\n") >= n
			})
			b, _ := os.ReadFile(path)
			out[i] = string(b)
		}
		return out
	}
	waitTails(writers * lines)
	// Idle for more than 5 polls: tail -F reopens data by name, finds the
	// same st_ino in a newer generation, and must keep following.
	time.Sleep(1500 * time.Millisecond)
	m.ok(`for i in $(seq 1 100); do echo "w3 $i" >> "$M/ret/0/data"; done`)
	waitTails(writers*lines + 100)
	time.Sleep(300 * time.Millisecond) // a repeat would show up now
	tailed := waitTails(writers*lines + 100)
	// Retention deletes every segment, the active one included, 1 ms
	// after its last record: the log is empty, its start at its end.
	end := int64(writers*lines + 100)
	if !mntWaitFor(30*time.Second, func() bool {
		st := m.status("ret")
		return st["log.start.offset"] == end && st["segments"] == 1 && st["size.bytes"] == 0
	}) {
		t.Fatalf("the segments outlive retention.ms: %v", m.status("ret"))
	}
	tot := m.cleanerTotals("retention", "ret-0")
	t.Logf("retention: %d passes, %d segments deleted, %d bytes freed", tot.passes, tot.segmentsDeleted, tot.bytesFreed)
	if tot.timed != tot.passes {
		t.Errorf("%d of %d retention passes logged no duration", tot.passes-tot.timed, tot.passes)
	}
	if tot.segmentsDeleted < 50 {
		t.Fatalf("only %d segments deleted while the tails ran; want at least 50", tot.segmentsDeleted)
	}
	for i, mode := range modes {
		t.Run("tail"+mode, func(t *testing.T) {
			if strings.Contains(tailed[i], "tail:") {
				t.Errorf("tail %s complained: %.500s", mode, tailed[i])
			}
			checkWriterLines(t, tailed[i], writers, lines)
			if n := strings.Count(tailed[i], "\nw3 "); n != 100 {
				t.Errorf("tail %s printed %d of the 100 lines written after it reopened", mode, n)
			}
		})
	}
	if t.Failed() {
		return
	}

	// The purged log through every door: a new open reads nothing.
	if st := m.status("ret"); st["log.start.offset"] != end || st["log.end.offset"] != end {
		t.Fatalf("status after the purge: %v", st)
	}
	if got := m.ok(`cat "$M/ret/0/data"; wc -c < "$M/ret/0/data"; stat -c %s "$M/ret/0/data"`); got != "0\n0\n" {
		t.Errorf("data of the purged log: %q, want it empty", got)
	}
	if got := m.ok(fmt.Sprintf(`wc -c < "$M/ret/0/offset/%d"; readlink "$M/ret/0/time/0"`, end)); got != fmt.Sprintf("0\n../offset/%d\n", end) {
		t.Errorf("offset/%d and time/0 of the purged log: %q", end, got)
	}
	m.fails(fmt.Sprintf(`cat "$M/ret/0/offset/%d"`, end-1), "No such file or directory")
	if code, _ := kafkaFetchCode(t, addr, "ret", end-1); code != kerr.OffsetOutOfRange.Code {
		t.Errorf("Fetch at %d below the purged log's start: error code %d, want OFFSET_OUT_OF_RANGE", end-1, code)
	}
	if e, l := kafkaListOffset(t, addr, "ret", -2), kafkaListOffset(t, addr, "ret", -1); e != end || l != end {
		t.Errorf("ListOffsets of the purged log: earliest %d latest %d, want %d both", e, l, end)
	}

	// Lift retention and append: the tails follow on, and the new lines
	// are exactly what is retained.
	m.ok(`echo retention.ms=-1 >> "$M/ret/config" && for i in $(seq 1 100); do echo "w4 $i" >> "$M/ret/0/data"; done`)
	tailed = waitTails(writers*lines + 200)
	time.Sleep(300 * time.Millisecond) // a repeat would show up now
	tailed = waitTails(writers*lines + 200)
	for i, mode := range modes {
		checkWriterLines(t, tailed[i], writers, lines)
		if n := strings.Count(tailed[i], "\nw4 "); n != 100 {
			t.Errorf("tail %s printed %d of the 100 lines written after the purge", mode, n)
		}
		if got := len(mntLines(tailed[i])); got != writers*lines+200 {
			t.Errorf("tail %s printed %d lines, want %d", mode, got, writers*lines+200)
		}
	}

	// The readers still hold the deleted segments (like unlinked files).
	held := duBytes(t, partDir)
	heldDeleted := countFiles(partDir, ".deleted")
	st := m.status("ret")
	t.Logf("with the tails open: du %d bytes, %d .deleted files; status %v", held, heldDeleted, st)
	if heldDeleted == 0 {
		t.Errorf("no .deleted files while tails hold the deleted segments")
	}
	// A new open sees exactly the retained records: those from the log
	// start on, which are the last end-start lines the tails printed.
	start, end := st["log.start.offset"], st["log.end.offset"]
	if start != writers*lines+100 || end != writers*lines+200 {
		t.Fatalf("log start %d, end %d after retention", start, end)
	}
	// Every generation of data reports the same st_ino.
	if got := m.ok(`stat -c %i "$M/ret/0/data"`); got != ino {
		t.Errorf("st_ino of data went from %s to %s across retention", strings.TrimSpace(ino), strings.TrimSpace(got))
	}
	all := mntLines(tailed[0])
	want := all[start:]
	if got := mntLines(m.ok(`cat "$M/ret/0/data"`)); !slices.Equal(got, want) {
		t.Errorf("cat data: %d lines, want the %d retained ones (first %q)", len(got), len(want), want[0])
	}
	if got := strings.TrimSpace(m.ok(`wc -l < "$M/ret/0/data"`)); got != strconv.Itoa(len(want)) {
		t.Errorf("wc -l data = %s, want %d", got, len(want))
	}
	if got := m.ok(fmt.Sprintf(`head -n1 "$M/ret/0/offset/%d"`, start)); got != want[0]+"\n" {
		t.Errorf("offset/%d starts with %q, want %q", start, got, want[0])
	}
	for _, n := range []int64{0, start / 2, start - 1} {
		m.fails(fmt.Sprintf(`cat "$M/ret/0/offset/%d"`, n), "No such file or directory")
	}
	// Through Kafka: the log start moved, and a Fetch below it is out of range.
	code, logStart := kafkaFetchCode(t, addr, "ret", 0)
	if code != kerr.OffsetOutOfRange.Code {
		t.Errorf("Fetch at 0 below log start %d: error code %d, want OFFSET_OUT_OF_RANGE", start, code)
	}
	if code, _ := kafkaFetchCode(t, addr, "ret", start); code != 0 {
		t.Errorf("Fetch at the log start %d: error code %d", start, code)
	} else if logStart != -1 && logStart != start {
		t.Logf("out-of-range Fetch reported log start %d", logStart)
	}
	// ListOffsets answers the new log start as the earliest offset.
	if got := kafkaListOffset(t, addr, "ret", -2); got != start {
		t.Errorf("ListOffsets earliest = %d, want the log start %d", got, start)
	}
	if got := kafkaListOffset(t, addr, "ret", -1); got != end {
		t.Errorf("ListOffsets latest = %d, want the log end %d", got, end)
	}
	recs := kafkaConsumeAll(t, addr, "ret", start, end-1)
	if got := recordValues(recs); !slices.Equal(got, want) {
		t.Errorf("Kafka consumer from the log start: %d records, want %d", len(got), len(want))
	}

	// Once the readers close, the space returns.
	for _, p := range tails {
		p.stop()
	}
	if !mntWaitFor(20*time.Second, func() bool { return countFiles(partDir, ".deleted") == 0 }) {
		t.Errorf("%d .deleted files remain after the readers closed", countFiles(partDir, ".deleted"))
	}
	freed := duBytes(t, partDir)
	t.Logf("du of the partition: %d bytes with the tails open, %d after they closed", held, freed)
	if freed >= held {
		t.Errorf("du did not drop after the readers closed: %d → %d", held, freed)
	}
}

// TestRetentionWriterBesideCachedReaders appends 6,000 lines with `echo >>`
// while retention moves the generation of data every ~50 ms and a loop of
// `head -n1 data` keeps opening it through the page cache. A writable open
// that finds cached readers answers ESTALE so that the VFS's retry reaches
// a node of their own (fs/data.go, startWriter); the kernel sometimes sent
// that retry's OPEN to the same node without a LOOKUP, and the second
// ESTALE failed the echo with "Stale file handle" (about one run in ten
// or two, 1-3 lines each). Every echo must succeed and every line count.
func TestRetentionWriterBesideCachedReaders(t *testing.T) {
	const lines = 6000
	m := mntNew(t, cleanerFlags...)
	m.ok(`mkdir "$M/rw" && printf 'segment.bytes=1024\nretention.ms=1\nfile.delete.delay.ms=0\n' > "$M/rw/config"`)
	r := m.sh(fmt.Sprintf(`
( for i in $(seq 1 %d); do echo "r $i" >> "$M/rw/0/data" || echo "echo $i failed" >&2; done ) &
w=$!
while kill -0 $w 2>/dev/null; do head -n1 "$M/rw/0/data" >/dev/null 2>&1; done
wait $w`, lines), 300)
	if r.code != 0 || strings.Contains(r.err, "failed") {
		t.Fatalf("appends beside cached readers failed (exit %d):\n%.2000s", r.code, r.err)
	}
	if got := m.ok(`grep '^log.end.offset=' "$M/rw/0/status"`); strings.TrimSpace(got) != fmt.Sprintf("log.end.offset=%d", lines) {
		t.Fatalf("status: %q, want log.end.offset=%d", got, lines)
	}
}
