package tests

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaLogDirSize asks DescribeLogDirs (franz-go, the version it
// negotiates) for topic/0 and returns the log directory and the
// partition's size. The answer is read per broker (RequestSharded):
// franz-go's merged answer drops the directories' error codes and space.
func kafkaLogDirSize(t *testing.T, addr, topic string) (string, int64) {
	t.Helper()
	req := kmsg.NewPtrDescribeLogDirsRequest()
	rt := kmsg.NewDescribeLogDirsRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	shards := kafkaClient(t, addr).RequestSharded(ctx, req)
	if len(shards) != 1 || shards[0].Err != nil {
		t.Fatalf("DescribeLogDirs: %d shards, %+v", len(shards), shards)
	}
	resp := shards[0].Resp.(*kmsg.DescribeLogDirsResponse)
	if resp.Version < 4 || resp.ErrorCode != 0 || len(resp.Dirs) != 1 || resp.Dirs[0].ErrorCode != 0 {
		t.Fatalf("DescribeLogDirs v%d: %+v", resp.Version, resp)
	}
	d := resp.Dirs[0]
	if len(d.Topics) != 1 || d.Topics[0].Topic != topic || len(d.Topics[0].Partitions) != 1 || d.Topics[0].Partitions[0].Partition != 0 {
		t.Fatalf("DescribeLogDirs %s/0: %+v", topic, d)
	}
	if d.TotalBytes <= 0 || d.UsableBytes < 0 || d.UsableBytes > d.TotalBytes {
		t.Errorf("DescribeLogDirs: total %d, usable %d bytes", d.TotalBytes, d.UsableBytes)
	}
	return d.Dir, d.Topics[0].Partitions[0].Size
}

// statLogBytes sums the sizes stat gives for the .log files of a partition
// directory, and returns that and the oldest one's size. A file retention
// renames between the listing and its stat is gone, not an error.
func statLogBytes(t *testing.T, partDir string) (total, oldest int64) {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(partDir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	first := true
	for _, name := range names { // sorted by name: base offset order
		fi, err := os.Stat(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if first {
			oldest, first = fi.Size(), false
		}
		total += fi.Size()
	}
	return total, oldest
}

// TestKafkaDescribeLogDirs: `segfs mount --kafka-listen` answers
// DescribeLogDirs (what kafka-log-dirs.sh --describe and admin UIs ask)
// with the data directory and each partition's size equal to what stat
// says its .log files hold: after lines appended through the mount and
// records produced with kcat, after more of both, and after retention
// (retention.bytes written to the mount's config file) deletes segments.
// Before, the broker did not serve the API: franz-go refused to send it.
func TestKafkaDescribeLogDirs(t *testing.T) {
	kafkaNeedKcat(t)
	addr := kafkaFreeAddr(t)
	m := mntNew(t, append([]string{"--kafka-listen", addr}, cleanerFlags...)...)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/ld" && printf 'segment.bytes=16384\nretention.ms=-1\nfile.delete.delay.ms=0\n' > "$M/ld/config"`)
	partDir := filepath.Join(m.data, "ld-0")
	abs, err := filepath.Abs(m.data)
	if err != nil {
		t.Fatal(err)
	}
	check := func(when string) (size, oldest int64) {
		t.Helper()
		dir, size := kafkaLogDirSize(t, addr, "ld")
		if dir != abs {
			t.Errorf("%s: log dir %q, want the data directory %q", when, dir, abs)
		}
		onDisk, oldest := statLogBytes(t, partDir)
		if size != onDisk {
			t.Fatalf("%s: DescribeLogDirs says %d bytes, stat of the .log files %d", when, size, onDisk)
		}
		return size, oldest
	}

	m.ok(`seq -f 'mount line %05g' 1 2000 >> "$M/ld/0/data"`)
	var lines []string
	for i := 1; i <= 300; i++ {
		lines = append(lines, fmt.Sprintf("kcat record %05d", i))
	}
	kcat(t, addr, strings.Join(lines, "\n")+"\n", "-P", "-t", "ld", "-p", "0")
	first, _ := check("after the first appends")
	if first <= 16384 {
		t.Fatalf("%d bytes: the test wants several segments", first)
	}

	m.ok(`for i in $(seq 1 50); do seq -f "more $i %03g" 1 40 >> "$M/ld/0/data"; done`)
	kcat(t, addr, strings.Join(lines, "\n")+"\n", "-P", "-t", "ld", "-p", "0")
	second, _ := check("after more appends")
	if second <= first {
		t.Fatalf("appends left the size at %d (was %d)", second, first)
	}

	// Retention deletes the oldest closed segments until dropping one
	// more would go below the limit; it has finished once that holds.
	const limit = 30000
	m.ok(fmt.Sprintf(`echo retention.bytes=%d > "$M/ld/config"`, limit))
	var left int64
	if !mntWaitFor(20*time.Second, func() bool {
		total, oldest := statLogBytes(t, partDir)
		left = total
		return total-oldest < limit
	}) {
		t.Fatalf("retention.bytes=%d: the .log files still hold %d bytes", limit, left)
	}
	third, _ := check("after retention")
	if third >= second {
		t.Fatalf("retention deleted segments, the size stayed %d (was %d)", third, second)
	}
	st := m.status("ld")
	if st["log.start.offset"] == 0 {
		t.Fatalf("retention moved no log start: %v", st)
	}
	t.Logf("partition sizes %d, %d, then %d after retention (log start %d)", first, second, third, st["log.start.offset"])
}
