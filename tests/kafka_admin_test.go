package tests

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The topic admin APIs from real admin clients: confluent-kafka-python's
// AdminClient (librdkafka) and franz-go raw requests, against `segfs
// serve` and `segfs mount --kafka-listen`, where what they create and
// change shows in the mounted view and persists across a restart.

// adminPython drives confluent-kafka-python's AdminClient: "ADDR create
// NAME PARTITIONS [k=v...] [--validate]", "partitions NAME COUNT
// [--validate]", "describe topic|broker NAME", "alter NAME [k=v...]
// [--validate]", "delete NAME...", "partcount NAME...". A result is one
// line "NAME OK" or "NAME ERROR_NAME message"; describe prints
// "key=value source=N default=B" lines, partcount "NAME N" (-1: none).
const adminPython = `
import sys
from confluent_kafka.admin import AdminClient, NewTopic, NewPartitions, ConfigResource
from confluent_kafka import KafkaException

addr, cmd, args = sys.argv[1], sys.argv[2], sys.argv[3:]
validate = "--validate" in args
args = [x for x in args if x != "--validate"]
a = AdminClient({"bootstrap.servers": addr})

def report(fs):
    for k, f in fs.items():
        name = getattr(k, "name", k)
        try:
            f.result()
            print("%s OK" % name)
        except KafkaException as e:
            print("%s %s %s" % (name, e.args[0].name(), e.args[0].str()))

def kv(items):
    return dict(x.split("=", 1) for x in items)

if cmd == "create":
    report(a.create_topics([NewTopic(args[0], int(args[1]), 1, config=kv(args[2:]))],
                           validate_only=validate, operation_timeout=20))
elif cmd == "partitions":
    report(a.create_partitions([NewPartitions(args[0], int(args[1]))], validate_only=validate, operation_timeout=20))
elif cmd == "describe":
    for r, f in a.describe_configs([ConfigResource(args[0], args[1])]).items():
        try:
            c = f.result()
        except KafkaException as e:
            print("ERROR %s" % e.args[0].name())
            continue
        for k in sorted(c):
            print("%s=%s source=%d default=%s" % (k, c[k].value, c[k].source, c[k].is_default))
elif cmd == "alter":
    report(a.alter_configs([ConfigResource("topic", args[0], set_config=kv(args[1:]))], validate_only=validate))
elif cmd == "delete":
    report(a.delete_topics(args, operation_timeout=20))
elif cmd == "partcount":
    md = a.list_topics(timeout=20)
    for t in args:
        print("%s %d" % (t, len(md.topics[t].partitions) if t in md.topics else -1))
else:
    sys.exit("unknown command " + cmd)
`

// adminPy runs one adminPython command and returns its lines.
type adminPy func(addr string, args ...string) []string

func needAdminPython(t *testing.T) adminPy {
	t.Helper()
	const python = "/usr/bin/python3" // Debian's, where the package installs
	pythonNeedKafka(t)
	script := filepath.Join(t.TempDir(), "admin.py")
	if err := os.WriteFile(script, []byte(adminPython), 0o644); err != nil {
		t.Fatal(err)
	}
	return func(addr string, args ...string) []string {
		t.Helper()
		cmd := exec.Command("timeout", append([]string{"-k", "5", "90", python, script, addr}, args...)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("admin.py %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out.String(), errb.String())
		}
		return mntLines(out.String())
	}
}

// wantResult checks a one-line result: "NAME OK" or "NAME CODE ..." with
// every extra string in the message.
func wantResult(t *testing.T, lines []string, want string, extra ...string) {
	t.Helper()
	if len(lines) != 1 || !strings.HasPrefix(lines[0]+" ", want+" ") {
		t.Errorf("got %q, want %q", lines, want)
		return
	}
	for _, e := range extra {
		if !strings.Contains(lines[0], e) {
			t.Errorf("%q does not mention %q", lines[0], e)
		}
	}
}

// describeMap runs describe and maps each key to "value source=N".
func describeMap(t *testing.T, py adminPy, addr, typ, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, l := range py(addr, "describe", typ, name) {
		k, rest, _ := strings.Cut(l, "=")
		out[k] = strings.TrimSuffix(strings.TrimSuffix(rest, " default=True"), " default=False")
	}
	return out
}

func wantConfig(t *testing.T, got map[string]string, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("describe_configs %s: %q, want %q", k, got[k], v)
		}
	}
}

// confluent-kafka-python's AdminClient against segfs serve: topics are
// created (with configs, and dry runs), grown, described and altered;
// refusals carry Kafka's codes; deletion is refused and deletes nothing;
// everything persists across a restart of the server.
func TestKafkaAdminPythonServe(t *testing.T) {
	py := needAdminPython(t)
	srv := kafkaServe(t, "")
	addr := srv.addr

	wantResult(t, py(addr, "create", "orders", "3", "retention.ms=3600000", "cleanup.policy=compact", "key.separator=:"), "orders OK")
	wantResult(t, py(addr, "create", "orders", "1"), "orders TOPIC_ALREADY_EXISTS")
	wantResult(t, py(addr, "create", "bad/name", "1"), "bad/name TOPIC_EXCEPTION", "bad/name")
	wantResult(t, py(addr, "create", "badcfg", "1", "retention.ms=soon"), "badcfg INVALID_CONFIG", "retention.ms")
	wantResult(t, py(addr, "create", "badkey", "1", "retention.hours=1"), "badkey INVALID_CONFIG", "retention.hours")
	wantResult(t, py(addr, "create", "dry", "2", "--validate"), "dry OK")
	wantResult(t, py(addr, "create", "drybad", "2", "segment.bytes=1", "--validate"), "drybad INVALID_CONFIG", "segment.bytes")
	if got := py(addr, "partcount", "orders", "dry", "badcfg"); !slices.Equal(got, []string{"orders 3", "dry -1", "badcfg -1"}) {
		t.Fatalf("topics after create: %q", got)
	}

	wantResult(t, py(addr, "partitions", "orders", "5"), "orders OK")
	wantResult(t, py(addr, "partitions", "orders", "2"), "orders INVALID_PARTITIONS", "5 partition")
	wantResult(t, py(addr, "partitions", "orders", "5"), "orders INVALID_PARTITIONS")
	wantResult(t, py(addr, "partitions", "nosuch", "2"), "nosuch UNKNOWN_TOPIC_OR_PART")
	wantResult(t, py(addr, "partitions", "orders", "9", "--validate"), "orders OK")
	if got := py(addr, "partcount", "orders"); !slices.Equal(got, []string{"orders 5"}) {
		t.Fatalf("partitions after grow: %q", got)
	}

	// DYNAMIC_TOPIC_CONFIG is 1, DEFAULT_CONFIG 5.
	cfg := describeMap(t, py, addr, "topic", "orders")
	wantConfig(t, cfg, map[string]string{
		"retention.ms": "3600000 source=1", "cleanup.policy": "compact source=1", "key.separator": ": source=1",
		"segment.bytes": "1073741824 source=5", "segment.ms": "604800000 source=5",
	})
	if len(cfg) != 39 {
		t.Errorf("describe_configs: %d settings, want 39 (every topic config Kafka defines, and key.separator): %v", len(cfg), cfg)
	}
	if got := py(addr, "describe", "topic", "nosuch"); !slices.Equal(got, []string{"ERROR UNKNOWN_TOPIC_OR_PART"}) {
		t.Errorf("describe of an unknown topic: %q", got)
	}
	wantConfig(t, describeMap(t, py, addr, "broker", "0"), map[string]string{
		"delete.topic.enable": "false source=4", "num.partitions": "1 source=5", "log.segment.bytes": "1073741824 source=5",
	})

	// AlterConfigs replaces every override.
	wantResult(t, py(addr, "alter", "orders", "segment.ms=60000", "cleanup.policy=compact", "key.separator=:"), "orders OK")
	wantResult(t, py(addr, "alter", "orders", "retention.ms=bad"), "orders INVALID_CONFIG", "retention.ms")
	wantResult(t, py(addr, "alter", "orders", "retention.ms=1", "--validate"), "orders OK")
	wantConfig(t, describeMap(t, py, addr, "topic", "orders"), map[string]string{
		"segment.ms": "60000 source=1", "retention.ms": "604800000 source=5", "cleanup.policy": "compact source=1",
	})

	// Deletion is refused as by a broker with delete.topic.enable=false:
	// librdkafka 2.0 sends DeleteTopics v1, which predates
	// TOPIC_DELETION_DISABLED, so Kafka's answer is INVALID_REQUEST.
	if got := py(addr, "delete", "orders", "nosuch"); len(got) != 2 || !strings.Contains(got[0], " INVALID_REQUEST") || !strings.Contains(got[1], " INVALID_REQUEST") {
		t.Errorf("delete_topics: %q", got)
	}
	if !strings.Contains(srv.stderr(), "topic deletion refused") {
		t.Errorf("the server log does not say why deletion was refused:\n%s", srv.stderr())
	}

	// A restart keeps the topics, partitions and overrides.
	srv.stop()
	srv2 := kafkaServe(t, srv.data)
	if got := py(srv2.addr, "partcount", "orders"); !slices.Equal(got, []string{"orders 5"}) {
		t.Fatalf("after a restart: %q", got)
	}
	wantConfig(t, describeMap(t, py, srv2.addr, "topic", "orders"), map[string]string{
		"segment.ms": "60000 source=1", "retention.ms": "604800000 source=5", "cleanup.policy": "compact source=1", "key.separator": ": source=1",
	})
	// The partition added over the wire takes records (with a key: the
	// topic is compacted).
	cl := kafkaClient(t, srv2.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 4, Key: []byte("k"), Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce to orders/4: %v", err)
	}
	if got := recordValues(kafkaConsume(t, srv2.addr, "orders", 4, 0, 1)); !slices.Equal(got, []string{"v"}) {
		t.Fatalf("partition 4: %q", got)
	}
}

// The same AdminClient against `segfs mount --kafka-listen`: a topic and
// partitions it creates are in the mounted view at once, an altered
// setting shows in `config`, a line written to `config` shows in
// describe_configs; franz-go's IncrementalAlterConfigs (APPEND to
// cleanup.policy) shows in `config` too, DescribeCluster names the one
// broker; all of it survives an unmount and a new mount.
func TestKafkaAdminMount(t *testing.T) {
	py := needAdminPython(t)
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)

	m.ok(`ls "$M" >/dev/null`) // the root has been listed before the topic exists
	wantResult(t, py(addr, "create", "orders", "2", "retention.ms=3600000"), "orders OK")
	if got := m.ok(`ls "$M"; ls "$M/orders"; grep '^retention.ms=' "$M/orders/config"`); got != "orders\n0\n1\nconfig\nretention.ms=3600000\n" {
		t.Fatalf("mount after create_topics:\n%s", got)
	}
	wantResult(t, py(addr, "partitions", "orders", "4"), "orders OK")
	if got := m.ok(`ls "$M/orders" | tr '\n' ' '; echo hello >> "$M/orders/3/data"; cat "$M/orders/3/data"`); got != "0 1 2 3 config hello\n" {
		t.Fatalf("mount after create_partitions:\n%s", got)
	}
	// A topic made with mkdir exists for the admin client too.
	m.ok(`mkdir "$M/made"`)
	wantResult(t, py(addr, "create", "made", "1"), "made TOPIC_ALREADY_EXISTS")

	wantResult(t, py(addr, "alter", "orders", "segment.ms=60000"), "orders OK")
	if got := m.ok(`grep -E '^(segment|retention)\.ms=' "$M/orders/config"`); got != "retention.ms=604800000\nsegment.ms=60000\n" {
		t.Fatalf("config after alter_configs: %q", got)
	}
	m.ok(`echo retention.bytes=5000000 >> "$M/orders/config"`)
	wantConfig(t, describeMap(t, py, addr, "topic", "orders"), map[string]string{
		"retention.bytes": "5000000 source=1", "segment.ms": "60000 source=1",
	})

	// franz-go: IncrementalAlterConfigs and DescribeCluster.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := kafkaClient(t, addr)
	inc := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "orders"
	for _, c := range []struct {
		op        kmsg.IncrementalAlterConfigOp
		key, item string
	}{{kmsg.IncrementalAlterConfigOpAppend, "cleanup.policy", "compact"}, {kmsg.IncrementalAlterConfigOpSet, "key.separator", "="}, {kmsg.IncrementalAlterConfigOpDelete, "retention.bytes", ""}} {
		rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		rc.Op, rc.Name, rc.Value = c.op, c.key, kmsg.StringPtr(c.item)
		r.Configs = append(r.Configs, rc)
	}
	inc.Resources = append(inc.Resources, r)
	iresp, err := inc.RequestWith(ctx, cl)
	if err != nil || iresp.Resources[0].ErrorCode != 0 {
		t.Fatalf("IncrementalAlterConfigs: %v %+v", err, iresp)
	}
	if got := m.ok(`grep -E '^(cleanup.policy|key.separator|retention.bytes)=' "$M/orders/config"`); got != "cleanup.policy=compact,delete\nkey.separator==\nretention.bytes=-1\n" {
		t.Fatalf("config after IncrementalAlterConfigs:\n%s", got)
	}
	// APPEND to a setting that is no list: INVALID_CONFIG, nothing changes.
	r.Configs = r.Configs[:1]
	r.Configs[0].Name = "retention.ms"
	inc.Resources[0] = r
	if iresp, err = inc.RequestWith(ctx, cl); err != nil || iresp.Resources[0].ErrorCode != kerr.InvalidConfig.Code {
		t.Fatalf("APPEND to retention.ms: %v %+v", err, iresp)
	}
	dresp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := strings.Cut(addr, ":")
	if dresp.ErrorCode != 0 || dresp.ClusterID != *md.ClusterID || dresp.ControllerID != 0 || len(dresp.Brokers) != 1 ||
		dresp.Brokers[0].NodeID != 0 || strconv.Itoa(int(dresp.Brokers[0].Port)) != port {
		t.Fatalf("DescribeCluster: %+v (metadata cluster id %v)", dresp, md.ClusterID)
	}

	wantResult(t, py(addr, "delete", "orders"), "orders INVALID_REQUEST")
	if got := m.ok(`ls "$M" | tr '\n' ' '`); got != "made orders " {
		t.Fatalf("after delete_topics: %q", got)
	}

	// Unmount and mount again: the view and the settings are the same.
	m.unmount()
	addr2 := kafkaFreeAddr(t)
	m2 := mntAt(t, m.data, "--kafka-listen", addr2)
	kafkaWaitListening(t, addr2)
	if got := m2.ok(`ls "$M/orders" | tr '\n' ' '; grep -E '^(cleanup.policy|segment.ms|key.separator)=' "$M/orders/config"`); got != "0 1 2 3 config cleanup.policy=compact,delete\nkey.separator==\nsegment.ms=60000\n" {
		t.Fatalf("after a new mount:\n%s", got)
	}
	wantConfig(t, describeMap(t, py, addr2, "topic", "orders"), map[string]string{
		"cleanup.policy": "compact,delete source=1", "segment.ms": "60000 source=1", "retention.ms": "604800000 source=5",
	})
}

// franz-go alone against segfs serve (no Python needed): CreateTopics at
// kgo's version (v7) returns the topic's persistent UUID, the one Metadata
// reports after a restart; IncrementalAlterConfigs persists.
func TestKafkaAdminFranzServe(t *testing.T) {
	srv := kafkaServe(t, "", "--partitions", "2")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := kafkaClient(t, srv.addr)

	ct := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "events", -1, -1
	ct.Topics = append(ct.Topics, rt)
	cresp, err := ct.RequestWith(ctx, cl)
	if err != nil || cresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics: %v %+v", err, cresp)
	}
	created := cresp.Topics[0]
	if created.NumPartitions != 2 || created.TopicID == [16]byte{} {
		t.Fatalf("CreateTopics with the defaults: %d partitions (want --partitions 2), id %x", created.NumPartitions, created.TopicID)
	}

	inc := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "events"
	rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	rc.Op, rc.Name, rc.Value = kmsg.IncrementalAlterConfigOpSet, "max.message.bytes", kmsg.StringPtr("65536")
	r.Configs = append(r.Configs, rc)
	inc.Resources = append(inc.Resources, r)
	if iresp, err := inc.RequestWith(ctx, cl); err != nil || iresp.Resources[0].ErrorCode != 0 {
		t.Fatalf("IncrementalAlterConfigs: %v %+v", err, iresp)
	}

	srv.stop()
	srv2 := kafkaServe(t, srv.data)
	cl2 := kafkaClient(t, srv2.addr)
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("events")
	md.Topics = append(md.Topics, mt)
	mresp, err := md.RequestWith(ctx, cl2)
	if err != nil || mresp.Topics[0].ErrorCode != 0 || mresp.Topics[0].TopicID != created.TopicID || len(mresp.Topics[0].Partitions) != 2 {
		t.Fatalf("metadata after a restart: %v %+v, created id %x", err, mresp, created.TopicID)
	}
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName, dr.ConfigNames = kmsg.ConfigResourceTypeTopic, "events", []string{"max.message.bytes"}
	dc.Resources = append(dc.Resources, dr)
	dresp, err := dc.RequestWith(ctx, cl2)
	if err != nil || len(dresp.Resources) != 1 || len(dresp.Resources[0].Configs) != 1 ||
		*dresp.Resources[0].Configs[0].Value != "65536" || dresp.Resources[0].Configs[0].Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("describe after a restart: %v %+v", err, dresp)
	}
}
