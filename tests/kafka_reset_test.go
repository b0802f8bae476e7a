package tests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// pythonReset assigns partition 0 of a topic at an explicit offset with
// the given auto.offset.reset and prints "OFFSET VALUE" of the first
// record it gets. While nothing comes (a reset to latest waits for new
// records) it appends a line to the mounted data file given, so the wait
// ends whenever the reset happened: every 200 ms, for a minute.
const pythonReset = `
import sys
from confluent_kafka import Consumer, TopicPartition

bootstrap, topic, start, reset, data = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
c = Consumer({"bootstrap.servers": bootstrap, "group.id": "py-reset",
              "auto.offset.reset": reset, "enable.auto.commit": False})
c.assign([TopicPartition(topic, 0, start)])
for i in range(300):
    m = c.poll(0.2)
    if m is None:
        with open(data, "a") as f:
            f.write("new py %d\n" % i)
        continue
    if m.error():
        sys.exit("consume error: %s" % m.error())
    print("%d %s" % (m.offset(), m.value().decode()))
    c.close()
    sys.exit(0)
sys.exit("no record in 300 polls")
`

// TestKafkaOutOfRangeReset: a consumer that asks for an offset below the
// log start or past the log end gets OFFSET_OUT_OF_RANGE (with -1 for the
// high watermark, last stable offset and log start offset, as Kafka
// answers) and resets by its auto.offset.reset: earliest to the log start,
// latest to the log end. franz-go, kcat and confluent-kafka-python
// (librdkafka) each do, from both sides of the range.
func TestKafkaOutOfRangeReset(t *testing.T) {
	// It mostly waits (group timers, clients) on a server, data dir and
	// port of its own: it runs beside the other tests that do (t.Parallel).
	t.Parallel()
	kafkaNeedKcat(t)
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/oor" && for i in $(seq 1 100); do echo "line $i"; done >> "$M/oor/0/data"`)
	const start = 40 // the log start after DeleteRecords: "line 41"
	if low, code := kafkaDeleteRecords(t, addr, "oor", start); code != 0 || low != start {
		t.Fatalf("DeleteRecords to %d: low watermark %d, error %d", start, low, code)
	}
	data := m.path("oor", "0", "data")
	appendLine := func(s string) {
		t.Helper()
		f, err := os.OpenFile(data, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(s + "\n"); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// check judges the first record a consumer got: earliest gives the
	// log start, latest a line appended after the reset, at or past the
	// log end seen before the consumer started.
	check := func(who string, from int64, reset string, end int64, off int64, val string) {
		t.Helper()
		switch reset {
		case "earliest":
			if off != start || val != "line 41" {
				t.Errorf("%s from %d, reset %s: first record %d %q, want %d %q", who, from, reset, off, val, start, "line 41")
			}
		case "latest":
			if off < end || !strings.HasPrefix(val, "new ") {
				t.Errorf("%s from %d, reset %s: first record %d %q, want a new line at or past %d", who, from, reset, off, val, end)
			}
		}
	}
	const past = 100000 // past the log end, whatever was appended
	froms := []int64{start - 30, past}

	// franz-go: ConsumeResetOffset is its auto.offset.reset.
	for _, from := range froms {
		for _, reset := range []string{"earliest", "latest"} {
			end := kafkaListOffset(t, addr, "oor", -1)
			ro := kgo.NewOffset().AtStart()
			if reset == "latest" {
				ro = kgo.NewOffset().AtEnd()
			}
			cl := kafkaClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"oor": {0: kgo.NewOffset().At(from)}}),
				kgo.ConsumeResetOffset(ro))
			// A reset to latest waits for a new record: a line is
			// appended after every poll that got none, every 200 ms
			// for a minute.
			var first *kgo.Record
			for i := 0; first == nil; i++ {
				if i == 300 {
					t.Fatalf("kgo from %d, reset %s: no record in 300 polls", from, reset)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				fs := cl.PollFetches(ctx)
				cancel()
				fs.EachError(func(_ string, _ int32, err error) {
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Fatalf("kgo from %d, reset %s: %v", from, reset, err)
					}
				})
				if recs := fs.Records(); len(recs) > 0 {
					first = recs[0]
				} else {
					appendLine(fmt.Sprintf("new kgo %d", i))
				}
			}
			cl.Close()
			check("kgo", from, reset, end, first.Offset, string(first.Value))
		}
	}

	// confluent-kafka-python.
	const python = "/usr/bin/python3" // Debian's, where the package installs
	pythonNeedKafka(t)
	script := filepath.Join(t.TempDir(), "reset.py")
	if err := os.WriteFile(script, []byte(pythonReset), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, from := range froms {
		for _, reset := range []string{"earliest", "latest"} {
			end := kafkaListOffset(t, addr, "oor", -1)
			cmd := exec.Command("timeout", "-k", "5", "120", python, script, addr, "oor", strconv.FormatInt(from, 10), reset, data)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				t.Fatalf("python from %d, reset %s: %v\nstdout: %s\nstderr: %s", from, reset, err, out.String(), errb.String())
			}
			offs, val, _ := strings.Cut(strings.TrimSpace(out.String()), " ")
			off, _ := strconv.ParseInt(offs, 10, 64)
			check("python", from, reset, end, off, val)
		}
	}

	// kcat: earliest reads the log start; latest, with -e, stops at
	// once at the log end without a record.
	for _, from := range froms {
		out := kcat(t, addr, "", "-C", "-t", "oor", "-p", "0", "-o", strconv.FormatInt(from, 10),
			"-X", "auto.offset.reset=earliest", "-c", "1", "-f", "%o %s\n")
		offs, val, _ := strings.Cut(strings.TrimSpace(out), " ")
		off, _ := strconv.ParseInt(offs, 10, 64)
		check("kcat", from, "earliest", 0, off, val)

		end := kafkaListOffset(t, addr, "oor", -1)
		out, errs, code := kcatRun(t, addr, "", "-C", "-t", "oor", "-p", "0", "-o", strconv.FormatInt(from, 10),
			"-X", "auto.offset.reset=latest", "-e", "-f", "%o %s\n")
		if code != 0 || out != "" || !strings.Contains(errs, fmt.Sprintf("at offset %d", end)) {
			t.Errorf("kcat from %d, reset latest, -e: exit %d, stdout %q, stderr %q; want no record and the end at offset %d", from, code, out, errs, end)
		}
	}
}
