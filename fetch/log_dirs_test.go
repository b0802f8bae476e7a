package fetch

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"
)

// logDirBytes is what stat says the .log files of the partition directory
// TOPIC-N hold.
func logDirBytes(t *testing.T, dir, topic string, part int32) int64 {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, fmt.Sprintf("%s-%d", topic, part), "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, name := range names {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// describeLogDirs sends DescribeLogDirs at version for topics (nil: all)
// and returns the one log directory answered, with its partitions as
// "topic-N" => size.
func describeLogDirs(t *testing.T, c *client, version int16, topics []kmsg.DescribeLogDirsRequestTopic) (kmsg.DescribeLogDirsResponseDir, map[string]int64, []string) {
	t.Helper()
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Version, req.Topics = version, topics
	resp := c.roundTrip(req).(*kmsg.DescribeLogDirsResponse)
	if resp.ErrorCode != 0 || len(resp.Dirs) != 1 {
		t.Fatalf("DescribeLogDirs v%d: error %d, %d dirs: %+v", version, resp.ErrorCode, len(resp.Dirs), resp)
	}
	d := resp.Dirs[0]
	sizes := map[string]int64{}
	var order []string
	for _, dt := range d.Topics {
		for _, dp := range dt.Partitions {
			k := fmt.Sprintf("%s-%d", dt.Topic, dp.Partition)
			if _, dup := sizes[k]; dup {
				t.Errorf("v%d: %s listed twice", version, k)
			}
			if dp.OffsetLag != 0 || dp.IsFuture {
				t.Errorf("v%d: %s: offset lag %d, future %v; want 0, false", version, k, dp.OffsetLag, dp.IsFuture)
			}
			sizes[k] = dp.Size
			order = append(order, k)
		}
	}
	return d, sizes, order
}

func logDirTopic(topic string, parts ...int32) kmsg.DescribeLogDirsRequestTopic {
	rt := kmsg.NewDescribeLogDirsRequestTopic()
	rt.Topic, rt.Partitions = topic, parts
	return rt
}

// TestDescribeLogDirs: at every version, the data directory is the one
// log directory, by its absolute path, with every partition (null topics)
// or those named that exist (each once; unknown topics and partitions,
// and topics left with none, omitted), sized as the .log files on disk
// are; v4 adds the file system's total and usable bytes. The sizes follow
// appends, DeleteRecords plus the retention pass, and compaction. Before
// this API was served, every request got UNSUPPORTED_VERSION.
func TestDescribeLogDirs(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	if _, err := ts.store.CreateTopic("logs", 2, map[string]string{"segment.bytes": "2000", "retention.ms": "-1", "file.delete.delay.ms": "0"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.store.CreateTopic("empty", 1, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if r := c.produce(9, "logs", 0, produceBatch(t, strings.Repeat(fmt.Sprint(i), 300))); r.ErrorCode != 0 {
			t.Fatalf("produce: error %d", r.ErrorCode)
		}
	}
	if r := c.produce(9, "logs", 1, produceBatch(t, "one")); r.ErrorCode != 0 {
		t.Fatalf("produce: error %d", r.ErrorCode)
	}
	abs, err := filepath.Abs(ts.dir)
	if err != nil {
		t.Fatal(err)
	}
	onDisk := func() map[string]int64 {
		return map[string]int64{
			"empty-0": logDirBytes(t, ts.dir, "empty", 0),
			"logs-0":  logDirBytes(t, ts.dir, "logs", 0),
			"logs-1":  logDirBytes(t, ts.dir, "logs", 1),
		}
	}
	want := onDisk()
	if want["logs-0"] <= 2000 || want["logs-1"] == 0 || want["empty-0"] != 0 {
		t.Fatalf("setup: .log bytes %v, want several segments in logs-0", want)
	}
	for v := int16(0); v <= 4; v++ {
		d, sizes, order := describeLogDirs(t, c, v, nil)
		if d.ErrorCode != 0 || d.Dir != abs {
			t.Errorf("v%d: dir %q error %d, want %q, 0", v, d.Dir, d.ErrorCode, abs)
		}
		if !reflect.DeepEqual(sizes, want) {
			t.Errorf("v%d: sizes %v, the .log files hold %v", v, sizes, want)
		}
		if wantOrder := []string{"empty-0", "logs-0", "logs-1"}; !reflect.DeepEqual(order, wantOrder) {
			t.Errorf("v%d: order %v, want %v", v, order, wantOrder)
		}
		if v >= 4 {
			var st unix.Statfs_t
			if err := unix.Statfs(ts.dir, &st); err != nil {
				t.Fatal(err)
			}
			if total := int64(st.Blocks) * st.Frsize; d.TotalBytes != total {
				t.Errorf("v%d: total bytes %d, statfs says %d", v, d.TotalBytes, total)
			}
			if d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes {
				t.Errorf("v%d: usable bytes %d of %d", v, d.UsableBytes, d.TotalBytes)
			}
		}

		// Named partitions: each once, only those that exist.
		_, sizes, order = describeLogDirs(t, c, v, []kmsg.DescribeLogDirsRequestTopic{
			logDirTopic("logs", 1, 1, 7), logDirTopic("nope", 0), logDirTopic("empty"), logDirTopic("logs", 0, -1),
		})
		if wantOrder := []string{"logs-0", "logs-1"}; !reflect.DeepEqual(order, wantOrder) {
			t.Errorf("v%d: named partitions answered %v, want %v", v, order, wantOrder)
		}
		if sizes["logs-0"] != want["logs-0"] || sizes["logs-1"] != want["logs-1"] {
			t.Errorf("v%d: named sizes %v, want %v", v, sizes, want)
		}
		if d, _, order := describeLogDirs(t, c, v, []kmsg.DescribeLogDirsRequestTopic{}); len(order) != 0 || len(d.Topics) != 0 {
			t.Errorf("v%d: an empty topic list answered %+v", v, d.Topics)
		}
		if d, _, _ := describeLogDirs(t, c, v, []kmsg.DescribeLogDirsRequestTopic{logDirTopic("nope", 0)}); len(d.Topics) != 0 || d.Dir != abs {
			t.Errorf("v%d: only unknown topics: %+v, want the directory without topics", v, d)
		}
	}

	current := func(when string) int64 {
		t.Helper()
		_, sizes, _ := describeLogDirs(t, c, 4, nil)
		if want := onDisk(); !reflect.DeepEqual(sizes, want) {
			t.Fatalf("%s: sizes %v, the .log files hold %v", when, sizes, want)
		}
		return sizes["logs-0"]
	}
	before := current("before")
	c.produce(9, "logs", 0, produceBatch(t, "more"))
	grown := current("after an append")
	if grown <= before {
		t.Fatalf("an append left the size at %d (was %d)", grown, before)
	}
	p, err := ts.store.Partition("logs", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DeleteRecords(p.LogEndOffset() - 1); err != nil {
		t.Fatal(err)
	}
	if got := current("after DeleteRecords"); got != grown {
		t.Fatalf("DeleteRecords alone changed the size from %d to %d; its segments stay until retention", grown, got)
	}
	if st, err := p.ApplyRetention(); err != nil || st.SegmentsDeleted == 0 {
		t.Fatalf("retention: %+v %v", st, err)
	}
	if got := current("after retention"); got >= grown {
		t.Fatalf("retention deleted segments, the size stayed %d (was %d)", got, grown)
	}

	tc, err := ts.store.CreateTopic("compacted", 1, map[string]string{"segment.bytes": "2000", "cleanup.policy": "compact",
		"min.cleanable.dirty.ratio": "0.01", "file.delete.delay.ms": "0", "key.separator": "="})
	if err != nil {
		t.Fatal(err)
	}
	pc, _ := tc.Partition(0)
	for u := 0; u < 20; u++ {
		var b strings.Builder
		for k := 0; k < 10; k++ {
			fmt.Fprintf(&b, "key%d=update %03d\n", k, u)
		}
		if _, _, err := pc.AppendLines([]byte(b.String())); err != nil {
			t.Fatal(err)
		}
	}
	sizeOf := func(when string) int64 {
		t.Helper()
		_, sizes, _ := describeLogDirs(t, c, 4, []kmsg.DescribeLogDirsRequestTopic{logDirTopic("compacted", 0)})
		if want := logDirBytes(t, ts.dir, "compacted", 0); sizes["compacted-0"] != want {
			t.Fatalf("%s: size %d, the .log files hold %d", when, sizes["compacted-0"], want)
		}
		return sizes["compacted-0"]
	}
	before = sizeOf("before compaction")
	if st, err := pc.Compact(); err != nil || st.RecordsRemoved == 0 {
		t.Fatalf("compact: %+v %v", st, err)
	}
	if got := sizeOf("after compaction"); got >= before {
		t.Fatalf("compaction removed records, the size stayed %d (was %d)", got, before)
	}
}
