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
	"github.com/twmb/franz-go/pkg/kmsg"
)

// drWant is lines "line K" for K in from..to.
func drWant(from, to int) []string {
	var out []string
	for k := from; k <= to; k++ {
		out = append(out, "line "+strconv.Itoa(k))
	}
	return out
}

// kafkaDeleteRecords sends one DeleteRecords for topic/0 with franz-go and
// returns the low watermark and error code the broker answers.
func kafkaDeleteRecords(t *testing.T, addr, topic string, offset int64) (int64, int16) {
	t.Helper()
	cl := kafkaClient(t, addr)
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = 0, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := adminRequest[*kmsg.DeleteRecordsResponse](t, cl, req)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("DeleteRecords response %+v", resp)
	}
	p := resp.Topics[0].Partitions[0]
	return p.LowWatermark, p.ErrorCode
}

// TestKafkaDeleteRecords deletes records with franz-go's DeleteRecords
// against `segfs mount --kafka-listen`, to an offset inside a batch
// inside a segment. At once, through the mount, a new cat/wc -l of data,
// head -n1 offset/N and status see only what is left, offset/N below it
// is ENOENT, and kcat -o beginning consumes only what is left; a `tail -f
// data` started before keeps following, printing every line once. The
// retention pass then deletes the whole segments below the new log start
// (retention.ms=-1: nothing else deletes), and all of it holds after kill
// -9 of the daemon and a remount. DeleteRecords was not served before.
func TestKafkaDeleteRecords(t *testing.T) {
	kafkaNeedKcat(t)
	addr := kafkaFreeAddr(t)
	flags := []string{"--kafka-listen", addr, "--retention-check-interval", "50ms"}
	m := mntNew(t, flags...)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/dr" && printf 'segment.bytes=2048\nretention.ms=-1\nfile.delete.delay.ms=0\n' > "$M/dr/config"`)
	partDir := filepath.Join(m.data, "dr-0")
	// 300 lines, three to a write, so three records to a batch: offset
	// K-1 holds "line K", and offset 137 is the last record of a batch.
	m.ok(`for i in $(seq 1 3 300); do printf 'line %d\nline %d\nline %d\n' $i $((i+1)) $((i+2)); done >> "$M/dr/0/data"`)
	segsBefore := countFiles(partDir, ".log")
	if segsBefore < 5 {
		t.Fatalf("%d segments; the test wants the cut in a later one", segsBefore)
	}

	tailOut := filepath.Join(t.TempDir(), "tail")
	tail := bgCmd(t, tailOut, "tail", "-f", "-s", "0.1", "-n", "+1", m.path("dr", "0", "data"))
	waitTail := func(n int) []string {
		t.Helper()
		mntWaitFor(30*time.Second, func() bool {
			b, _ := os.ReadFile(tailOut)
			return strings.Count(string(b), "\n") >= n
		})
		b, _ := os.ReadFile(tailOut)
		return mntLines(string(b))
	}
	if got := waitTail(300); len(got) != 300 {
		t.Fatalf("tail -f printed %d lines before DeleteRecords, want 300", len(got))
	}

	const cut = 137
	if low, code := kafkaDeleteRecords(t, addr, "dr", cut); code != 0 || low != cut {
		t.Fatalf("DeleteRecords to %d: low watermark %d, error %v", cut, low, kerr.ErrorForCode(code))
	}
	// Beyond the high watermark: refused, nothing moves.
	if low, code := kafkaDeleteRecords(t, addr, "dr", 301); code != kerr.OffsetOutOfRange.Code || low != -1 {
		t.Errorf("DeleteRecords to 301 past the end 300: low watermark %d, error %v; want OFFSET_OUT_OF_RANGE", low, kerr.ErrorForCode(code))
	}

	// checkLeft checks every view of what is left: lines cut+1..last.
	checkLeft := func(when string, last int) {
		t.Helper()
		want := drWant(cut+1, last)
		if got := mntLines(m.ok(`cat "$M/dr/0/data"`)); !slices.Equal(got, want) {
			t.Errorf("%s: cat data: %d lines from %q, want %d from %q", when, len(got), drFirst(got), len(want), want[0])
		}
		if got := strings.TrimSpace(m.ok(`wc -l < "$M/dr/0/data"`)); got != strconv.Itoa(len(want)) {
			t.Errorf("%s: wc -l data = %s, want %d", when, got, len(want))
		}
		if got := m.ok(fmt.Sprintf(`head -n1 "$M/dr/0/offset/%d"`, cut)); got != want[0]+"\n" {
			t.Errorf("%s: head -n1 offset/%d = %q, want %q", when, cut, got, want[0])
		}
		for _, n := range []int{0, cut - 2, cut - 1} {
			m.fails(fmt.Sprintf(`head -n1 "$M/dr/0/offset/%d"`, n), "No such file or directory")
		}
		st := m.status("dr")
		if st["log.start.offset"] != cut || st["log.end.offset"] != int64(last) {
			t.Errorf("%s: status log.start.offset=%d log.end.offset=%d, want %d, %d", when, st["log.start.offset"], st["log.end.offset"], cut, last)
		}
		kc := mntLines(kcat(t, addr, "", "-C", "-t", "dr", "-p", "0", "-o", "beginning", "-e", "-q"))
		if !slices.Equal(kc, want) {
			t.Errorf("%s: kcat -o beginning: %d records from %q, want %d from %q", when, len(kc), drFirst(kc), len(want), want[0])
		}
		if code, _ := kafkaFetchCode(t, addr, "dr", cut-1); code != kerr.OffsetOutOfRange.Code {
			t.Errorf("%s: Fetch at %d below the log start: error %v, want OFFSET_OUT_OF_RANGE", when, cut-1, kerr.ErrorForCode(code))
		}
		if got := kafkaListOffset(t, addr, "dr", -2); got != cut {
			t.Errorf("%s: ListOffsets earliest = %d, want %d", when, got, cut)
		}
	}
	checkLeft("right after DeleteRecords", 300)

	// The tail started before keeps following across the change, and
	// across the retention pass that deletes the segments below the cut.
	m.ok(`for i in $(seq 301 320); do echo "line $i" >> "$M/dr/0/data"; done`)
	if got := waitTail(320); !slices.Equal(got, drWant(1, 320)) {
		t.Fatalf("tail -f across DeleteRecords printed %d lines, want lines 1..320 once each", len(got))
	}
	if !mntWaitFor(30*time.Second, func() bool { return m.cleanerTotals("retention", "dr-0").segmentsDeleted > 0 }) {
		t.Fatalf("no retention pass deleted the segments below the log start in 30 s:\n%s", m.daemonLog())
	}
	if n := countFiles(partDir, ".log"); n >= segsBefore {
		t.Errorf("%d segments after retention, %d before", n, segsBefore)
	}
	bases := drSegmentBases(t, partDir)
	if len(bases) < 2 || bases[0] > cut || bases[1] <= cut {
		t.Errorf("segments left start at %v: want the first to hold offset %d and none wholly below it", bases, cut)
	}
	m.ok(`for i in $(seq 321 330); do echo "line $i" >> "$M/dr/0/data"; done`)
	if got := waitTail(330); !slices.Equal(got, drWant(1, 330)) {
		t.Fatalf("tail -f across retention printed %d lines, want lines 1..330 once each", len(got))
	}
	checkLeft("after retention", 330)
	tail.stop()

	// kill -9 and remount: everything holds.
	m.kill9()
	m.mount(flags...)
	kafkaWaitListening(t, addr)
	checkLeft("after kill -9 and a remount", 330)
}

func drFirst(l []string) string {
	if len(l) == 0 {
		return ""
	}
	return l[0]
}

// drSegmentBases lists the base offsets of dir's .log files, in order.
func drSegmentBases(t *testing.T, dir string) []int64 {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	var out []int64
	for _, n := range names {
		b, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(n), ".log"), 10, 64)
		if err == nil {
			out = append(out, b)
		}
	}
	slices.Sort(out)
	return out
}

// TestKafkaDeleteRecordsStatusCountsFiles: after DeleteRecords, and before
// the retention pass that deletes the segments wholly below the new log
// start, those segments are still on disk, and status's segments and
// size.bytes count them, as DescribeLogDirs (Kafka's log.size) and `ls
// segments/` do and as the .log files in the data directory say. status
// left them out: it showed fewer segments and bytes than
// kafka-log-dirs.sh and du until the next retention check (5 minutes by
// default) deleted them.
func TestKafkaDeleteRecordsStatusCountsFiles(t *testing.T) {
	addr := kafkaFreeAddr(t)
	// No retention pass runs during the test: the segments below the
	// log start stay.
	m := mntNew(t, "--kafka-listen", addr, "--retention-check-interval", "1h")
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/drs" && printf 'segment.bytes=2048\nretention.ms=-1\n' > "$M/drs/config"`)
	m.ok(`for i in $(seq 1 3 300); do printf 'line %d\nline %d\nline %d\n' $i $((i+1)) $((i+2)); done >> "$M/drs/0/data"`)
	partDir := filepath.Join(m.data, "drs-0")
	segsBefore := countFiles(partDir, ".log")
	const cut = 137
	if low, code := kafkaDeleteRecords(t, addr, "drs", cut); code != 0 || low != cut {
		t.Fatalf("DeleteRecords to %d: low watermark %d, error %v", cut, low, kerr.ErrorForCode(code))
	}
	bases := drSegmentBases(t, partDir)
	if len(bases) != segsBefore || bases[1] > cut {
		t.Fatalf("segments on disk %v (%d before DeleteRecords): want them all still there, some wholly below %d", bases, segsBefore, cut)
	}
	st := m.status("drs")
	onDisk, _ := statLogBytes(t, partDir)
	_, described := kafkaLogDirSize(t, addr, "drs")
	listed := strings.Count(m.ok(`ls "$M/drs/0/segments"`), ".log\n")
	if st["log.start.offset"] != cut || st["segments"] != int64(len(bases)) || listed != len(bases) ||
		st["size.bytes"] != onDisk || described != onDisk {
		t.Fatalf("after DeleteRecords to %d: status log.start.offset=%d segments=%d size.bytes=%d, ls segments/ %d .log files, DescribeLogDirs %d bytes; the data directory has %d .log files of %d bytes",
			cut, st["log.start.offset"], st["segments"], st["size.bytes"], listed, described, len(bases), onDisk)
	}
	// What is below the log start stays unreadable through the text
	// files, though its segments are listed.
	if got := m.ok(`head -n1 "$M/drs/0/data"`); got != fmt.Sprintf("line %d\n", cut+1) {
		t.Fatalf("head -n1 data = %q, want line %d", got, cut+1)
	}
	m.fails(`head -n1 "$M/drs/0/offset/0"`, "No such file or directory")
}
