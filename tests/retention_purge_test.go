package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestRetentionPurgeQuietTopic is the well-known purge: retention.ms=1000
// on a topic that gets no more writes empties it within a retention pass
// or two, as on Kafka (the active segment is deleted too, after an empty
// one is rolled at the log end); it used to keep the last segment for
// segment.ms, a week. Then retention.bytes=0 empties it again. Through
// the mount: a `tail -f` and a `tail -F` opened before keep following and
// print each line once, the lines appended after the purge too; a new
// open of data reads nothing; status shows the log start at the log end;
// offset/N below it is ENOENT and offset/END empty; time/0 points at the
// log end; Kafka's ListOffsets answers the log end as earliest and
// latest, a Fetch below it is OFFSET_OUT_OF_RANGE and a consumer at it
// reads the later records. The next record keeps its offset.
func TestRetentionPurgeQuietTopic(t *testing.T) {
	// It mostly waits (retention passes, tail's polls) on a mount and
	// Kafka port of its own: it runs beside the other tests that wait
	// (t.Parallel).
	t.Parallel()
	addr := kafkaFreeAddr(t)
	m := mntNew(t, append([]string{"--kafka-listen", addr}, cleanerFlags...)...)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/q" && printf 'a\nb\nc\n' >> "$M/q/0/data"`)
	data := m.path("q", "0", "data")
	outDir := t.TempDir()
	modes := []string{"-f", "-F"}
	for _, mode := range modes {
		bgCmd(t, filepath.Join(outDir, "tail"+mode), "tail", mode, "-s", "0.1", "-n", "+1", data)
	}
	waitTails := func(want string) {
		t.Helper()
		for _, mode := range modes {
			path := filepath.Join(outDir, "tail"+mode)
			mntWaitFor(30*time.Second, func() bool {
				b, _ := os.ReadFile(path)
				return len(b) >= len(want)
			})
			time.Sleep(300 * time.Millisecond) // a repeat would show up now
			if b, _ := os.ReadFile(path); string(b) != want {
				t.Fatalf("tail %s printed %q, want %q", mode, b, want)
			}
		}
	}
	waitTails("a\nb\nc\n")

	purged := func(end int64, why string) {
		t.Helper()
		if !mntWaitFor(30*time.Second, func() bool { return m.status("q")["log.start.offset"] == end }) {
			t.Fatalf("%s: the log was not purged: %v", why, m.status("q"))
		}
		st := m.status("q")
		if st["log.end.offset"] != end || st["segments"] != 1 || st["size.bytes"] != 0 || st["active.segment.base.offset"] != end {
			t.Fatalf("%s: status %v, want start and end %d, one empty segment", why, st, end)
		}
		if got := m.ok(`cat "$M/q/0/data"; wc -c < "$M/q/0/data"; stat -c %s "$M/q/0/data"`); got != "0\n0\n" {
			t.Errorf("%s: a new open of data reads %q, want nothing", why, got)
		}
		for _, n := range []int64{0, end - 1} {
			m.fails(fmt.Sprintf(`cat "$M/q/0/offset/%d"`, n), "No such file or directory")
		}
		if got := m.ok(fmt.Sprintf(`wc -c < "$M/q/0/offset/%d"; readlink "$M/q/0/time/0"`, end)); got != fmt.Sprintf("0\n../offset/%d\n", end) {
			t.Errorf("%s: offset/%d and time/0: %q", why, end, got)
		}
		if e, l := kafkaListOffset(t, addr, "q", -2), kafkaListOffset(t, addr, "q", -1); e != end || l != end {
			t.Errorf("%s: ListOffsets earliest %d latest %d, want %d both", why, e, l, end)
		}
		if code, _ := kafkaFetchCode(t, addr, "q", end-1); code != kerr.OffsetOutOfRange.Code {
			t.Errorf("%s: Fetch at %d: error code %d, want OFFSET_OUT_OF_RANGE", why, end-1, code)
		}
		if code, _ := kafkaFetchCode(t, addr, "q", end); code != 0 {
			t.Errorf("%s: Fetch at the log end %d: error code %d", why, end, code)
		}
	}

	m.ok(`printf 'retention.ms=1000\nfile.delete.delay.ms=0\n' >> "$M/q/config"`)
	purged(3, "retention.ms=1000")
	// Retention lifted, the next records keep their offsets and reach the
	// open tails.
	m.ok(`printf 'retention.ms=-1\n' >> "$M/q/config" && printf 'd\ne\n' >> "$M/q/0/data"`)
	waitTails("a\nb\nc\nd\ne\n")
	if got := m.ok(`cat "$M/q/0/data"; head -n1 "$M/q/0/offset/4"`); got != "d\ne\ne\n" {
		t.Errorf("data and offset/4 after the purge: %q", got)
	}
	if got := recordValues(kafkaConsumeAll(t, addr, "q", 3, 4)); !slices.Equal(got, []string{"d", "e"}) || kafkaListOffset(t, addr, "q", -2) != 3 {
		t.Errorf("a Kafka consumer at the log start 3 read %q", got)
	}

	m.ok(`printf 'retention.bytes=0\n' >> "$M/q/config"`)
	purged(5, "retention.bytes=0")
	m.ok(`printf 'retention.bytes=-1\n' >> "$M/q/config" && echo f >> "$M/q/0/data"`)
	waitTails("a\nb\nc\nd\ne\nf\n")
	if got := m.ok(`cat "$M/q/0/data"`); got != "f\n" {
		t.Errorf("data after the second purge and an append: %q", got)
	}
	if e, l := kafkaListOffset(t, addr, "q", -2), kafkaListOffset(t, addr, "q", -1); e != 5 || l != 6 {
		t.Errorf("the record after the second purge: ListOffsets earliest %d latest %d, want 5 6", e, l)
	}
}
