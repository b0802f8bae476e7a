package tests

// Helpers for the retention and compaction tests: the daemon flags that
// make the cleaners run every few milliseconds, the figures the daemon
// logs for each cleaner pass, and partition status.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cleanerFlags run retention and compaction every 50 ms instead of every
// 5 minutes and 15 seconds.
var cleanerFlags = []string{"--retention-check-interval", "50ms", "--cleaner-interval", "50ms"}

// cleanerTotals sums what the daemon logged for its cleaner passes of one
// partition ("retention pass" / "compaction pass" lines).
type cleanerTotals struct {
	passes, segmentsDeleted, segmentsCleaned int
	bytesFreed, recordsRemoved               int64
	timed                                    int // passes that logged their duration
}

var logField = regexp.MustCompile(`(\w+)=(\S+)`)

// cleanerTotals sums the passes of partition ("TOPIC-N", as its directory
// is named; the log says topic=TOPIC partition=N).
func (m *mnt) cleanerTotals(kind, partition string) cleanerTotals {
	b, _ := os.ReadFile(filepath.Join(m.data, "segfs-mount.out"))
	i := strings.LastIndexByte(partition, '-')
	attrs := "topic=" + partition[:i] + " partition=" + partition[i+1:] + " "
	var c cleanerTotals
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.Contains(line, `msg="`+kind+` pass"`) || !strings.Contains(line, attrs) {
			continue
		}
		c.passes++
		for _, f := range logField.FindAllStringSubmatch(line, -1) {
			n, _ := strconv.ParseInt(f[2], 10, 64)
			switch f[1] {
			case "segments_deleted":
				c.segmentsDeleted += int(n)
			case "segments_cleaned":
				c.segmentsCleaned += int(n)
			case "bytes_freed":
				c.bytesFreed += n
			case "records_removed":
				c.recordsRemoved += n
			case "duration":
				c.timed++
			}
		}
	}
	return c
}

// status reads TOPIC/0/status into a map of integers.
func (m *mnt) status(topic string) map[string]int64 {
	m.t.Helper()
	st := map[string]int64{}
	for _, l := range mntLines(m.ok(`cat "$M/` + topic + `/0/status"`)) {
		k, v, _ := strings.Cut(l, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			m.t.Fatalf("status line %q", l)
		}
		st[k] = n
	}
	return st
}

// bgProc is a client running in the background.
type bgProc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// bgCmd starts a client in the background, under timeout, with stdout and
// stderr going to the file out. It is stopped by its PID in t.Cleanup at
// the latest.
func bgCmd(t *testing.T, out string, name string, args ...string) *bgProc {
	t.Helper()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command("timeout", append([]string{"-k", "5", "170", name}, args...)...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Dir = filepath.Dir(out)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &bgProc{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	t.Cleanup(p.stop)
	return p
}

// stop signals the process (timeout passes SIGTERM on to its child) and
// waits for it.
func (p *bgProc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// kafkaFetchCode sends one Fetch for topic/0 at offset and returns the
// partition's error code and the log start offset the broker reports.
func kafkaFetchCode(t *testing.T, addr, topic string, offset int64) (int16, int64) {
	t.Helper()
	cl := kafkaClient(t, addr)
	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.ReplicaID = -1
	req.MaxWaitMillis = 100
	req.MaxBytes = 1 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = 0
	rp.FetchOffset = offset
	rp.LogStartOffset = -1
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := adminRequest[*kmsg.FetchResponse](t, cl, req)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch response %+v", resp)
	}
	p := resp.Topics[0].Partitions[0]
	return p.ErrorCode, p.LogStartOffset
}

// kafkaConsumeAll reads topic/0 from offset up to the record at last.
func kafkaConsumeAll(t *testing.T, addr, topic string, offset, last int64) []*kgo.Record {
	t.Helper()
	cl := kafkaClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {0: kgo.NewOffset().At(offset)},
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out []*kgo.Record
	for lastOffset(out) < last {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d records of %s up to offset %d; want up to %d", len(out), topic, lastOffset(out), last)
		}
		fs.EachError(func(tp string, p int32, err error) {
			t.Fatalf("fetch %s/%d: %v", tp, p, err)
		})
		out = append(out, fs.Records()...)
	}
	return out
}

func lastOffset(recs []*kgo.Record) int64 {
	if len(recs) == 0 {
		return -1
	}
	return recs[len(recs)-1].Offset
}

// duBytes is the disk space the files under dir use.
func duBytes(t *testing.T, dir string) int64 {
	t.Helper()
	out, err := exec.Command("timeout", "20", "du", "-s", "-B1", dir).Output()
	if err != nil {
		t.Fatalf("du %s: %v", dir, err)
	}
	n, err := strconv.ParseInt(strings.Fields(string(out))[0], 10, 64)
	if err != nil {
		t.Fatalf("du output %q", out)
	}
	return n
}

// countFiles counts the files of dir whose name ends with suffix.
func countFiles(dir, suffix string) int {
	ents, _ := os.ReadDir(dir)
	n := 0
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), suffix) {
			n++
		}
	}
	return n
}

// kafkaListOffset sends one ListOffsets for topic/0 at timestamp (-2 the
// earliest, -1 the latest) and returns the offset the broker answers; an
// error code fails the test.
func kafkaListOffset(t *testing.T, addr, topic string, timestamp int64) int64 {
	t.Helper()
	p := kafkaListOffsetAnswer(t, addr, topic, timestamp)
	if p.ErrorCode != 0 {
		t.Fatalf("ListOffsets %s at %d: %+v", topic, timestamp, p)
	}
	return p.Offset
}

// kafkaListOffsetAnswer sends one ListOffsets for topic/0 at timestamp ts with
// franz-go, at the highest version both sides know (as kadm's
// ListLocalLogStartOffsets and ListLatestRemoteOffsets do), and returns the
// partition's answer.
func kafkaListOffsetAnswer(t *testing.T, addr, topic string, ts int64) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	return kafkaListOffsetWith(t, kafkaClient(t, addr), topic, ts, nil)
}

// kafkaListOffsetWith is kafkaListOffsetAnswer through cl, set (if not
// nil) adjusting the request first (a pinned version, an isolation
// level).
func kafkaListOffsetWith(t *testing.T, cl *kgo.Client, topic string, ts int64, set func(*kmsg.ListOffsetsRequest)) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	if set != nil {
		set(req)
	}
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := adminRequest[*kmsg.ListOffsetsResponse](t, cl, req)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("ListOffsets response %+v", resp)
	}
	return resp.Topics[0].Partitions[0]
}
