package tests

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestMountTopicNameCollision: as in Kafka, a topic whose name differs from
// an existing one only by '.' against '_' cannot be created (the two would
// share Kafka's metric names): mkdir fails with EINVAL and a producer's
// auto-create with INVALID_TOPIC_EXCEPTION, and nothing is created. Both
// used to succeed, so `a.b` and `a_b` lived side by side, a pair a Kafka
// broker refuses to make.
func TestMountTopicNameCollision(t *testing.T) {
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/a.b_c-1" && echo x >> "$M/a.b_c-1/0/data"`)
	m.fails(`mkdir "$M/a_b_c-1"`, "Invalid argument")
	m.fails(`mkdir "$M/a.b.c-1"`, "Invalid argument")
	// The same name without '.' or '_' differing elsewhere is a topic of
	// its own, and the existing one is untouched.
	m.ok(`mkdir "$M/a.b_c-2"`)

	// A producer that auto-creates is refused too (through
	// kcatProduceQueued: a message produced after the Metadata answer
	// would fail with librdkafka's "Local: Unknown topic" instead).
	if stderr, code := kcatProduceQueued(t, addr, "y", "-t", "a_b.c-1"); code == 0 || !strings.Contains(stderr, "Broker: Invalid topic") {
		t.Fatalf("kcat produce to a colliding topic: exit %d, stderr %q", code, stderr)
	}

	if got := m.ok(`ls "$M"; ls "$D" | grep -c '^a.b.c-1-' || true`); got != "a.b_c-1\na.b_c-2\n1\n" {
		t.Fatalf("topics after the refused creates:\n%s", got)
	}
	if got := m.ok(`cat "$M/a.b_c-1/0/data"`); got != "x\n" {
		t.Fatalf("the existing topic reads %q", got)
	}
}

// TestMountClusterMetadataReserved: __cluster_metadata is the topic of
// KRaft's metadata log, which Kafka never creates for a client. The
// mount takes Kafka's rule: `mkdir MOUNT/__cluster_metadata` fails with
// EINVAL, as for any name Kafka refuses, and the daemon log says why;
// CreateTopics answers TOPIC_AUTHORIZATION_FAILED and a producer's
// auto-creation is refused. mkdir used to create it. A data directory
// copied from a KRaft broker holds __cluster_metadata-0: it mounts, the
// metadata log is not shown as a topic (Kafka's log manager skips it
// too) and stays byte for byte as it was, with a warning in the log; it
// used to be served as a topic and given segfs's index and metadata
// files, and retention would have deleted its old segments.
func TestMountClusterMetadataReserved(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	kraft := filepath.Join(data, "__cluster_metadata-0")
	if err := os.MkdirAll(kraft, 0o755); err != nil {
		t.Fatal(err)
	}
	seg, err := os.ReadFile(filepath.Join("testdata", "kafka", "__cluster_metadata-0", "00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(kraft, "00000000000000000000.log"), seg, 0o644); err != nil {
		t.Fatal(err)
	}
	addr := kafkaFreeAddr(t)
	m := mntAt(t, data, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)

	if got := m.ok(`ls -A "$M"`); got != "" {
		t.Errorf("the mount of a copied KRaft data directory lists %q, want nothing", got)
	}
	m.fails(`mkdir "$M/__cluster_metadata"`, "Invalid argument")
	m.ok(`mkdir "$M/__cluster_metadata2"`) // an ordinary name

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ct := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "__cluster_metadata", 1, 1
	ct.Topics = append(ct.Topics, rt)
	cresp, err := ct.RequestWith(ctx, kafkaClient(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	if code := cresp.Topics[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("CreateTopics __cluster_metadata: %v, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
	kafkaNeedKcat(t)
	if _, stderr, code := kcatRun(t, addr, "x\n", "-P", "-t", "__cluster_metadata"); code == 0 || !strings.Contains(stderr, "Topic authorization failed") {
		t.Errorf("kcat -P -t __cluster_metadata (auto-create): exit %d, stderr %q", code, stderr)
	}

	if got := m.ok(`ls -A "$M"`); got != "__cluster_metadata2\n" {
		t.Errorf("topics after the refused creations: %q", got)
	}
	log := m.daemonLog()
	if !strings.Contains(log, `mkdir refused" name=__cluster_metadata `) {
		t.Errorf("the daemon log does not say why mkdir __cluster_metadata failed:\n%s", log)
	}
	if !strings.Contains(log, "level=WARN") || !strings.Contains(log, kraft) {
		t.Errorf("the daemon log does not name the skipped %s:\n%s", kraft, log)
	}
	m.unmount()
	ents, err := os.ReadDir(kraft)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) != 1 || names[0] != "00000000000000000000.log" {
		t.Errorf("the KRaft metadata directory holds %q after the mount, want the .log alone", names)
	}
	if b, err := os.ReadFile(filepath.Join(kraft, "00000000000000000000.log")); err != nil || !bytes.Equal(b, seg) {
		t.Errorf("the KRaft metadata log changed under the mount: %v", err)
	}
}
