package tests

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// pythonClient is a confluent-kafka-python (librdkafka) producer and
// consumer: "produce ADDR TOPIC VALUES..." sends values to partition 0 with
// an idempotent producer; "consume ADDR TOPIC N" assigns partition 0 at the
// group's stored offset (earliest if none), reads N records, commits after
// the last synchronously, and prints the values and the committed offset
// read back with committed().
const pythonClient = `
import sys
from confluent_kafka import Producer, Consumer, TopicPartition, OFFSET_STORED

mode, bootstrap, topic = sys.argv[1], sys.argv[2], sys.argv[3]
if mode == "produce":
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all"})
    errs = []
    for v in sys.argv[4:]:
        p.produce(topic, v.encode(), partition=0, on_delivery=lambda e, m: errs.append(e) if e else None)
    if p.flush(30) != 0 or errs:
        sys.exit("delivery failed: %s" % errs)
elif mode == "consume":
    n = int(sys.argv[4])
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "py-workers",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, OFFSET_STORED)])
    got, last = [], None
    while len(got) < n:
        m = c.poll(30)
        if m is None:
            sys.exit("timed out after %d records" % len(got))
        if m.error():
            sys.exit("consume error: %s" % m.error())
        got.append(m.value().decode())
        last = m
    c.commit(message=last, asynchronous=False)
    committed = c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset
    c.close()
    print("\n".join(got))
    print("committed %d" % committed)
`

// pythonBin is Debian's python3, where python3-confluent-kafka installs.
const pythonBin = "/usr/bin/python3"

// pythonNeedKafka skips the test where confluent-kafka-python is not
// installed, or fails it under .ci/run, which installs it
// (toolsRequiredEnv).
func pythonNeedKafka(t *testing.T) {
	t.Helper()
	if err := exec.Command(pythonBin, "-c", "import confluent_kafka").Run(); err != nil {
		if os.Getenv(toolsRequiredEnv) != "" {
			t.Fatalf("confluent-kafka-python not installed (Debian package python3-confluent-kafka), which .ci/run installs: %v", err)
		}
		t.Skip("confluent-kafka-python not installed (apt-get install python3-confluent-kafka); .ci/run installs it")
	}
}

// pythonScript writes body to the file name in the test's temporary
// directory and returns its path.
func pythonScript(t *testing.T, name, body string) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return script
}

// pythonRun runs pythonBin with args under timeout(1): SIGTERM after
// secs seconds, SIGKILL 5 s later. It fails the test, showing both
// outputs, unless python exits 0, and returns its stdout and stderr.
func pythonRun(t *testing.T, secs int, args ...string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command("timeout", append([]string{"-k", "5", fmt.Sprint(secs), pythonBin}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("python %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

// confluent-kafka-python (Debian's python3-confluent-kafka over librdkafka)
// against segfs serve: an idempotent producer, a consumer with explicit
// assignment that commits and, after a restart of the server, resumes at
// the committed offset.
func TestKafkaPythonCommitResume(t *testing.T) {
	pythonNeedKafka(t)
	script := pythonScript(t, "client.py", pythonClient)
	run := func(addr string, args ...string) []string {
		t.Helper()
		out, _ := pythonRun(t, 90, append([]string{script, args[0], addr}, args[1:]...)...)
		return strings.Fields(out)
	}

	srv := kafkaServe(t, "")
	run(srv.addr, "produce", "jobs", "j1", "j2", "j3")
	if got := run(srv.addr, "consume", "jobs", "2"); !slices.Equal(got, []string{"j1", "j2", "committed", "2"}) {
		t.Fatalf("first run: %q", got)
	}
	data := srv.data
	srv.stop()
	srv = kafkaServe(t, data)
	run(srv.addr, "produce", "jobs", "j4")
	if got := run(srv.addr, "consume", "jobs", "2"); !slices.Equal(got, []string{"j3", "j4", "committed", "4"}) {
		t.Fatalf("resumed run after a restart: %q, want j3 j4 and committed 4", got)
	}
}

// pythonStaticCommit assigns partition 0 with a static group member's
// configuration (group.instance.id), commits the offset after the first
// record and prints committed() read back. librdkafka sends the instance
// id with every OffsetCommit, joined or not; Kafka accepts a commit with
// generation -1 on a group without members whatever ids come with it.
const pythonStaticCommit = `
import sys
from confluent_kafka import Consumer, TopicPartition

bootstrap, topic = sys.argv[1], sys.argv[2]
c = Consumer({"bootstrap.servers": bootstrap, "group.id": "static-workers",
              "group.instance.id": "worker-1", "auto.offset.reset": "earliest",
              "enable.auto.commit": False})
c.assign([TopicPartition(topic, 0, 0)])
m = c.poll(30)
if m is None or m.error():
    sys.exit("consume: %s" % (m and m.error()))
try:
    c.commit(message=m, asynchronous=False)
except Exception as e:
    sys.exit("commit: %s" % e)
print("committed %d" % c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset)
c.close()
`

// A confluent-kafka consumer configured as a static member
// (group.instance.id) with manual assignment commits like any other:
// segfs refused it with UNKNOWN_MEMBER_ID because the commit carried an
// instance id.
func TestKafkaPythonStaticMemberCommit(t *testing.T) {
	pythonNeedKafka(t)
	script := pythonScript(t, "static.py", pythonStaticCommit)
	srv := kafkaServe(t, "")
	kafkaProduce(t, kafkaClient(t, srv.addr, kgo.AllowAutoTopicCreation()), "orders", 0, "o1", "o2")
	out, _ := pythonRun(t, 90, script, srv.addr, "orders")
	if got := strings.TrimSpace(out); got != "committed 1" {
		t.Fatalf("got %q, want committed 1", got)
	}
}
