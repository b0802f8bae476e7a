package tests

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/segfs/segfs/logstore/record"
)

// rawProduce sends batch to topic/0 as a Produce at the client's highest
// version (franz-go's, which segfs serves to v12) and returns the
// partition's answer.
func rawProduce(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
	if resp.Version < 8 {
		t.Fatalf("produce answered at v%d, want 8+ (record errors)", resp.Version)
	}
	return resp.Topics[0].Partitions[0]
}

// endOffset is topic/0's log end offset as ListOffsets (latest) answers it.
func endOffset(t *testing.T, ctx context.Context, cl *kgo.Client, topic string) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("ListOffsets %s: %v %+v", topic, err, resp)
	}
	return resp.Topics[0].Partitions[0].Offset
}

var kafkaOutOfRange = regexp.MustCompile(`^Timestamp (\d+) of message with offset (\d+) is out of range\. The timestamp should be within \[(-?\d+), (-?\d+)\]$`)

// A Kafka producer could stamp a record years ahead of the clock: segfs
// took message.timestamp.before.max.ms / after.max.ms (and Kafka 4.0's 1 h
// default for after) but applied neither, so time/T lookups and
// time-based retention went by whatever a producer claimed. Now, as in
// Kafka's LogValidator, a record outside the bounds fails its batch with
// INVALID_TIMESTAMP and Kafka's per-record message, and nothing is
// appended (ListOffsets, `status` and `data` through the mount agree);
// raising after.max.ms with IncrementalAlterConfigs lets the same record
// in; before.max.ms set through `config` refuses a record 2 h old; a
// LogAppendTime topic restamps any CreateTime and refuses batches that
// come with the LogAppendTime attribute; the mount's own lines, stamped
// by the daemon's clock, pass even with both bounds 0.
func TestKafkaProduceTimestampBounds(t *testing.T) {
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/ahead" "$M/behind" "$M/lat" "$M/lines"`)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cl := kafkaClient(t, addr)
	produce := func(topic string, ts time.Time, v string) error {
		return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(v), Timestamp: ts}).FirstErr()
	}

	// Kafka 4.0's defaults, in `config` and DescribeConfigs.
	if got := m.ok(`grep '^message.timestamp' "$M/ahead/config"`); got != "message.timestamp.after.max.ms=3600000\n"+
		"message.timestamp.before.max.ms=9223372036854775807\nmessage.timestamp.type=CreateTime\n" {
		t.Fatalf("default config:\n%s", got)
	}
	dreq := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeTopic, "ahead"
	dr.ConfigNames = []string{"message.timestamp.after.max.ms"}
	dreq.Resources = append(dreq.Resources, dr)
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil || len(dresp.Resources) != 1 || len(dresp.Resources[0].Configs) != 1 ||
		*dresp.Resources[0].Configs[0].Value != "3600000" || dresp.Resources[0].Configs[0].Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("DescribeConfigs message.timestamp.after.max.ms: %v %+v", err, dresp)
	}
	// Broker 0 lists the defaults it applies, as a Kafka 4.0 broker does,
	// and no log.message.timestamp.difference.max.ms, which 4.0 removed.
	dreq = kmsg.NewPtrDescribeConfigsRequest()
	dr = kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeBroker, "0"
	dreq.Resources = append(dreq.Resources, dr)
	if dresp, err = dreq.RequestWith(ctx, cl); err != nil || len(dresp.Resources) != 1 || dresp.Resources[0].ErrorCode != 0 {
		t.Fatalf("DescribeConfigs broker 0: %v %+v", err, dresp)
	}
	broker := map[string]string{}
	for _, c := range dresp.Resources[0].Configs {
		if strings.HasPrefix(c.Name, "log.message.timestamp.") {
			broker[c.Name] = *c.Value
		}
	}
	if len(broker) != 3 || broker["log.message.timestamp.after.max.ms"] != "3600000" ||
		broker["log.message.timestamp.before.max.ms"] != "9223372036854775807" || broker["log.message.timestamp.type"] != "CreateTime" {
		t.Fatalf("broker 0's log.message.timestamp settings: %v", broker)
	}

	// 2 h ahead: INVALID_TIMESTAMP, nothing appended.
	if err := produce("ahead", time.Now().Add(2*time.Hour), "future"); !errors.Is(err, kerr.InvalidTimestamp) {
		t.Fatalf("a record 2 h ahead: %v, want INVALID_TIMESTAMP", err)
	}
	if end := endOffset(t, ctx, cl, "ahead"); end != 0 {
		t.Fatalf("log end %d after a refused record", end)
	}
	if got := m.ok(`grep log.end.offset "$M/ahead/0/status"; wc -c < "$M/ahead/0/data"`); got != "log.end.offset=0\n0\n" {
		t.Fatalf("status and data after a refused record:\n%s", got)
	}

	// The per-record answer (Produce v8+): the index of each bad record
	// and Kafka's message, with bounds taken from the server's clock.
	var bl record.Builder
	bl.Reset(record.DefaultSpec())
	t0 := time.Now().UnixMilli()
	bl.Add(t0, nil, []byte("now"), nil)
	bl.Add(t0+2*3600000, nil, []byte("ahead"), nil)
	bl.Add(t0, nil, []byte("now again"), nil)
	batch, err := bl.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	sp := rawProduce(t, ctx, cl, "ahead", batch)
	t1 := time.Now().UnixMilli()
	if sp.ErrorCode != kerr.InvalidTimestamp.Code || sp.ErrorMessage == nil ||
		*sp.ErrorMessage != "One or more records have been rejected due to invalid timestamp" || len(sp.ErrorRecords) != 1 ||
		sp.ErrorRecords[0].RelativeOffset != 1 || sp.ErrorRecords[0].ErrorMessage == nil {
		t.Fatalf("raw batch with a record 2 h ahead: %v, message %v, records %+v", kerr.ErrorForCode(sp.ErrorCode), sp.ErrorMessage, sp.ErrorRecords)
	}
	msg := *sp.ErrorRecords[0].ErrorMessage
	mm := kafkaOutOfRange.FindStringSubmatch(msg)
	if mm == nil || mm[1] != strconv.FormatInt(t0+2*3600000, 10) || mm[2] != "1" {
		t.Fatalf("record error message %q", msg)
	}
	if hi, _ := strconv.ParseInt(mm[4], 10, 64); hi-3600000 < t0 || hi-3600000 > t1 {
		t.Fatalf("upper bound in %q is not the server's clock (between %d and %d) + 1 h", msg, t0, t1)
	}

	// A record in bounds is appended; raised after.max.ms lets the one 2 h
	// ahead in.
	if err := produce("ahead", time.Now(), "present"); err != nil {
		t.Fatalf("a record stamped now: %v", err)
	}
	inc := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ir := kmsg.NewIncrementalAlterConfigsRequestResource()
	ir.ResourceType, ir.ResourceName = kmsg.ConfigResourceTypeTopic, "ahead"
	ic := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	ic.Op, ic.Name, ic.Value = kmsg.IncrementalAlterConfigOpSet, "message.timestamp.after.max.ms", kmsg.StringPtr("10800000")
	ir.Configs = append(ir.Configs, ic)
	inc.Resources = append(inc.Resources, ir)
	if iresp, err := inc.RequestWith(ctx, cl); err != nil || iresp.Resources[0].ErrorCode != 0 {
		t.Fatalf("IncrementalAlterConfigs after.max.ms=3h: %v %+v", err, iresp)
	}
	if err := produce("ahead", time.Now().Add(2*time.Hour), "future"); err != nil {
		t.Fatalf("a record 2 h ahead with after.max.ms=3h: %v", err)
	}
	if got := mntReadsSoon(m, `cat "$M/ahead/0/data"; grep after.max "$M/ahead/config"`, "present\nfuture\nmessage.timestamp.after.max.ms=10800000\n"); got != "present\nfuture\nmessage.timestamp.after.max.ms=10800000\n" {
		t.Fatalf("data and config after raising after.max.ms:\n%s", got)
	}

	// before.max.ms=1h through the config file: 2 h old is refused, 30 min
	// old is not.
	m.ok(`echo message.timestamp.before.max.ms=3600000 >> "$M/behind/config"`)
	if err := produce("behind", time.Now().Add(-2*time.Hour), "old"); !errors.Is(err, kerr.InvalidTimestamp) {
		t.Fatalf("a record 2 h old with before.max.ms=1h: %v, want INVALID_TIMESTAMP", err)
	}
	if err := produce("behind", time.Now().Add(-30*time.Minute), "recent"); err != nil {
		t.Fatalf("a record 30 min old with before.max.ms=1h: %v", err)
	}
	if got := mntReadsSoon(m, `cat "$M/behind/0/data"`, "recent\n"); got != "recent\n" {
		t.Fatalf("behind data: %q", got)
	}

	// A LogAppendTime topic takes any CreateTime and stamps the record
	// with the server's clock...
	m.ok(`echo message.timestamp.type=LogAppendTime >> "$M/lat/config"`)
	before := time.Now().Truncate(time.Millisecond)
	if err := produce("lat", time.Now().Add(48*time.Hour), "stamped"); err != nil {
		t.Fatalf("a record 48 h ahead to a LogAppendTime topic: %v", err)
	}
	after := time.Now()
	got := kafkaConsume(t, addr, "lat", 0, 0, 1)
	if got[0].Attrs.TimestampType() != 1 || got[0].Timestamp.Before(before) || got[0].Timestamp.After(after) {
		t.Fatalf("LogAppendTime record: type %d, timestamp %v; want 1 and the server's time of the produce (%v to %v)",
			got[0].Attrs.TimestampType(), got[0].Timestamp, before, after)
	}
	// ...but refuses a batch that comes with the LogAppendTime attribute,
	// as Kafka does.
	spec := record.DefaultSpec()
	spec.LogAppendTime = true
	bl.Reset(spec)
	now := time.Now().UnixMilli()
	bl.Add(now, nil, []byte("claims"), nil)
	if batch, err = bl.Build(nil); err != nil {
		t.Fatal(err)
	}
	sp = rawProduce(t, ctx, cl, "lat", batch)
	wantMsg := "Invalid timestamp type in message DefaultRecord(offset=0, timestamp=" + strconv.FormatInt(now, 10) +
		", key=0 bytes, value=6 bytes). Producer should not set timestamp type to LogAppendTime."
	if sp.ErrorCode != kerr.InvalidTimestamp.Code || len(sp.ErrorRecords) != 1 || sp.ErrorRecords[0].ErrorMessage == nil ||
		*sp.ErrorRecords[0].ErrorMessage != wantMsg {
		t.Fatalf("LogAppendTime attribute on a LogAppendTime topic: %v, records %+v; want INVALID_TIMESTAMP, %q",
			kerr.ErrorForCode(sp.ErrorCode), sp.ErrorRecords, wantMsg)
	}
	if end := endOffset(t, ctx, cl, "lat"); end != 1 {
		t.Fatalf("lat log end %d, want 1", end)
	}

	// The mount's lines are stamped by the daemon: they pass any bounds.
	m.ok(`printf 'message.timestamp.before.max.ms=0\nmessage.timestamp.after.max.ms=0\n' >> "$M/lines/config"; echo line >> "$M/lines/0/data"`)
	if got := m.ok(`cat "$M/lines/0/data"`); got != "line\n" {
		t.Fatalf("a line appended with both bounds 0: %q", got)
	}
}

// pythonTimestampProducer produces one record with a given CreateTime
// through confluent-kafka (librdkafka) and prints the delivery error's
// name and text, or OK.
const pythonTimestampProducer = `
import sys
from confluent_kafka import Producer

bootstrap, topic, ts = sys.argv[1], sys.argv[2], int(sys.argv[3])
reports = []
p = Producer({"bootstrap.servers": bootstrap})
p.produce(topic, value=b"py", partition=0, timestamp=ts, on_delivery=lambda err, msg: reports.append(err))
p.flush(60)
if not reports:
    sys.exit("no delivery report")
err = reports[0]
print("OK" if err is None else "%s: %s" % (err.name(), err.str()))
`

// confluent-kafka-python (librdkafka) producing a record stamped 2 h
// ahead gets INVALID_TIMESTAMP with its text in the delivery report, and
// the record is not stored; stamped now, it is. (kcat sets no timestamp
// on what it produces, so it cannot send one out of bounds.)
func TestKafkaProduceTimestampPython(t *testing.T) {
	const python = "/usr/bin/python3" // Debian's, where the package installs
	pythonNeedKafka(t)
	script := filepath.Join(t.TempDir(), "ts.py")
	if err := os.WriteFile(script, []byte(pythonTimestampProducer), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(addr string, ts time.Time) string {
		t.Helper()
		cmd := exec.Command("timeout", "-k", "5", "90", python, script, addr, "py", strconv.FormatInt(ts.UnixMilli(), 10))
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("ts.py: %v\nstdout: %s\nstderr: %s", err, out.String(), errb.String())
		}
		return strings.TrimSpace(out.String())
	}
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/py"`)
	if got := run(addr, time.Now().Add(2*time.Hour)); !strings.HasPrefix(got, "INVALID_TIMESTAMP: ") || !strings.Contains(got, "timestamp") {
		t.Fatalf("confluent-kafka, a record 2 h ahead: %q, want INVALID_TIMESTAMP with its text", got)
	} else {
		t.Logf("confluent-kafka's delivery error: %s", got)
	}
	if got := run(addr, time.Now()); got != "OK" {
		t.Fatalf("confluent-kafka, a record stamped now: %q", got)
	}
	if got := mntReadsSoon(m, `cat "$M/py/0/data"`, "py\n"); got != "py\n" {
		t.Fatalf("py data: %q, want only the record stamped now", got)
	}
}

// A batch whose records are stamped now but whose header claims a
// MaxTimestamp 10 h ahead passes the timestamp check, which reads each
// record; segfs then kept the producer's header, so `status` showed
// last.timestamp 10 h ahead, ListOffsets' max timestamp (-3) answered it
// too, and time-based retention would have kept the segment 10 h too long.
// Kafka's LogValidator sets MaxTimestamp to the largest record timestamp
// it checked, and so does segfs now.
func TestKafkaProduceMaxTimestampHeader(t *testing.T) {
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/claims"`)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := kafkaClient(t, addr)

	now := time.Now().UnixMilli()
	spec := record.DefaultSpec()
	spec.MaxTimestamp = now + 10*3600000
	var bl record.Builder
	bl.Reset(spec)
	bl.Add(now-5, nil, []byte("a"), nil)
	bl.Add(now, nil, []byte("b"), nil)
	batch, err := bl.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	if sp := rawProduce(t, ctx, cl, "claims", batch); sp.ErrorCode != 0 {
		t.Fatalf("records stamped now under a header 10 h ahead: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
	if got := m.ok(`grep last.timestamp "$M/claims/0/status"`); got != "last.timestamp="+strconv.FormatInt(now, 10)+"\n" {
		t.Fatalf("status: %q, want last.timestamp=%d, the newest record's", got, now)
	}
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "claims"
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -3 // the record with the largest timestamp
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if lp := resp.Topics[0].Partitions[0]; lp.ErrorCode != 0 || lp.Timestamp != now || lp.Offset != 1 {
		t.Fatalf("ListOffsets max timestamp: %v, timestamp %d at %d; want %d at 1", kerr.ErrorForCode(lp.ErrorCode), lp.Timestamp, lp.Offset, now)
	}
}

// mntReadsSoon runs script on m until it prints want, for up to 5 s, and
// returns what it printed last: a record the Kafka door appended reaches
// the mount's readers within a second (DESIGN.md, "Stable positions"), not
// at once, so a read right after the produce's answer may not show it
// yet (seen under load).
func mntReadsSoon(m *mnt, script, want string) string {
	m.t.Helper()
	var got string
	mntWaitFor(5*time.Second, func() bool {
		got = m.ok(script)
		return got == want
	})
	return got
}
