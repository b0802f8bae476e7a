package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// pythonConsumerAPIs drives confluent-kafka-python's consumer calls that no
// other test uses, against one partition whose records 0-5 have the
// CreateTimes BASE+1000*i (i = 0..5) and whose log starts at 2 (after
// DeleteRecords): it prints one line per check.
const pythonConsumerAPIs = `
import sys
from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING, OFFSET_END
addr, topic, base = sys.argv[1], sys.argv[2], int(sys.argv[3])
tp = TopicPartition(topic, 0)
c = Consumer({"bootstrap.servers": addr, "group.id": "py-apis", "auto.offset.reset": "earliest",
              "enable.auto.commit": False, "enable.partition.eof": True})
print("watermarks %d %d" % c.get_watermark_offsets(tp, timeout=10))
r = c.offsets_for_times([TopicPartition(topic, 0, base + 500)], timeout=10)[0]
print("time-before-start %d" % r.offset)
r = c.offsets_for_times([TopicPartition(topic, 0, base + 3500)], timeout=10)[0]
print("time-3500 %d" % r.offset)
r = c.offsets_for_times([TopicPartition(topic, 0, base + 99000)], timeout=10)[0]
print("time-after-all %d" % r.offset)

def next_record():
    while True:
        m = c.poll(30)
        if m is None:
            sys.exit("poll timed out")
        if m.error():
            if m.error().code() == -191:  # _PARTITION_EOF
                return "eof@%d" % m.offset()
            sys.exit("consume error: %s" % m.error())
        return "%d:%s" % (m.offset(), m.value().decode())

# A committed offset below the log start resets to it (earliest).
c.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
c.assign([TopicPartition(topic, 0)])
print("after-reset %s" % next_record())
print("position %d" % c.position([tp])[0].offset)
c.seek(TopicPartition(topic, 0, 5))
print("after-seek %s" % next_record())
print("at-end %s" % next_record())
c.pause([tp])
print("paused %s" % c.poll(1))
c.resume([tp])
c.seek(TopicPartition(topic, 0, OFFSET_BEGINNING))
print("from-beginning %s" % next_record())
c.commit(asynchronous=False)
print("committed %d" % c.committed([tp], timeout=10)[0].offset)
c.close()
`

// confluent-kafka-python's consumer calls against `segfs mount
// --kafka-listen`: watermarks and offsets_for_times after DeleteRecords
// (the low watermark and a time before it answer the log start), a
// committed offset below the log start reset by auto.offset.reset,
// position, seek, pause and resume, and committed after a commit.
func TestKafkaPythonConsumerAPIs(t *testing.T) {
	// It mostly waits (timers, clients) on a server, data dir and
	// port of its own: it runs beside the other tests that do (t.Parallel).
	t.Parallel()
	pythonNeedKafka(t)
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/apis"`)
	base := time.Now().Add(-time.Hour).UnixMilli()
	cl := kafkaClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 6 {
		rec := &kgo.Record{Topic: "apis", Value: []byte(fmt.Sprintf("r%d", i)), Timestamp: time.UnixMilli(base + int64(1000*i))}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatalf("produce r%d: %v", i, err)
		}
	}
	if low, code := kafkaDeleteRecords(t, addr, "apis", 2); code != 0 || low != 2 {
		t.Fatalf("DeleteRecords to 2: low watermark %d, error %d", low, code)
	}
	if got := m.ok(`cat "$M/apis/0/data"`); got != "r2\nr3\nr4\nr5\n" {
		t.Fatalf("data after DeleteRecords: %q", got)
	}

	out, errs := pythonRun(t, 120, "-c", pythonConsumerAPIs, addr, "apis", fmt.Sprint(base))
	want := []string{
		"watermarks 2 6",
		"time-before-start 2",
		"time-3500 4",
		"time-after-all -1",
		"after-reset 2:r2",
		"position 3",
		"after-seek 5:r5",
		"at-end eof@6",
		"paused None",
		"from-beginning 2:r2",
		"committed 3",
	}
	got := strings.Split(strings.TrimSpace(out), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("python consumer printed\n%s\nwant\n%s\nstderr: %s", out, strings.Join(want, "\n"), errs)
	}
}
