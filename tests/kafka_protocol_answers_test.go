package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKafkaMetadataIDsIgnoreNames: franz-go asks Metadata v12 for a
// mounted topic by its ID and for "b" by name, auto-creation allowed (on
// by default in segfs). Kafka answers such a request by its topic IDs
// alone and ignores every name; segfs answered "b" too and created it, a
// directory nobody asked for in the mount.
func TestKafkaMetadataIDsIgnoreNames(t *testing.T) {
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/a" && echo hello >> "$M/a/0/data"`)
	cl := kafkaClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	metadata := func(topics ...kmsg.MetadataRequestTopic) *kmsg.MetadataResponse {
		t.Helper()
		req := kmsg.NewPtrMetadataRequest()
		req.Version, req.AllowAutoTopicCreation, req.Topics = 12, true, topics
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	byName := kmsg.NewMetadataRequestTopic()
	byName.Topic = kmsg.StringPtr("a")
	r := metadata(byName)
	if len(r.Topics) != 1 || r.Topics[0].ErrorCode != 0 {
		t.Fatalf("a by name: %+v", r.Topics)
	}
	byID := kmsg.NewMetadataRequestTopic()
	byID.TopicID = r.Topics[0].TopicID
	b := kmsg.NewMetadataRequestTopic()
	b.Topic = kmsg.StringPtr("b")

	r = metadata(byID, b)
	if len(r.Topics) != 1 {
		t.Errorf("%d topics answered, want 1 (a, by ID)", len(r.Topics))
	}
	for _, mt := range r.Topics {
		name := "<null>"
		if mt.Topic != nil {
			name = *mt.Topic
		}
		if mt.ErrorCode != 0 || name != "a" {
			t.Errorf("answered %s: %v", name, kerr.ErrorForCode(mt.ErrorCode))
		}
	}
	if got := m.ok(`ls "$M"`); got != "a\n" {
		t.Errorf("ls $M = %q, want only a (b must not be auto-created)", got)
	}
}

// TestKafkaEmptyGroupIDCommit: franz-go commits an offset for the empty
// group id with generation -1 (a simple commit, as an admin client's
// alter-offsets sends), which Kafka 4 stores: it refuses only a null
// group id. segfs answered INVALID_GROUP_ID. The commit survives a
// restart of `segfs serve` (the offsets file keeps "" as a group name),
// ListGroups shows the group "", and DeleteGroups removes it.
func TestKafkaEmptyGroupIDCommit(t *testing.T) {
	srv := kafkaServe(t, "")
	cl := kafkaClient(t, srv.addr, kgo.AllowAutoTopicCreation())
	kafkaProduce(t, cl, "t", 0, "a", "b", "c")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "", -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "t"
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset = 0, 2
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	cr, err := commit.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := cr.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf(`commit for group "": %v`, kerr.ErrorForCode(code))
	}

	srv.stop()
	srv = kafkaServe(t, srv.data)
	cl = kafkaClient(t, srv.addr)

	fetch := func() int64 {
		t.Helper()
		req := kmsg.NewPtrOffsetFetchRequest()
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = ""
		rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}
		req.Groups = append(req.Groups, rg)
		req.Group, req.Topics = "", []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0}}}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Groups) == 1 {
			return resp.Groups[0].Topics[0].Partitions[0].Offset
		}
		return resp.Topics[0].Partitions[0].Offset
	}
	if got := fetch(); got != 2 {
		t.Errorf(`OffsetFetch group "" after a restart: %d, want 2`, got)
	}
	lr, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(lr.Groups) != 1 || lr.Groups[0].Group != "" {
		t.Errorf(`ListGroups after a restart: %+v, want the group ""`, lr.Groups)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{""}
	dr, err := del.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(dr.Groups) != 1 || dr.Groups[0].ErrorCode != 0 {
		t.Errorf(`DeleteGroups "": %+v`, dr.Groups)
	}
	if got := fetch(); got != -1 {
		t.Errorf(`OffsetFetch group "" after DeleteGroups: %d, want -1`, got)
	}
}

// pythonCreatePartitions asks CreatePartitions for topic argv[2] and prints
// the error librdkafka reports for it, or "ok".
const pythonCreatePartitions = `
import sys
from confluent_kafka.admin import AdminClient, NewPartitions
a = AdminClient({"bootstrap.servers": sys.argv[1]})
for t, f in a.create_partitions([NewPartitions(sys.argv[2], 3)], request_timeout=20).items():
    try:
        f.result()
        print("ok")
    except Exception as e:
        print(e)
`

// TestKafkaPythonCreatePartitionsUnknownTopic: confluent-kafka's
// AdminClient grows a topic that does not exist. Kafka's controller
// answers UNKNOWN_TOPIC_OR_PARTITION without a message, so librdkafka
// prints the code's own text, "Broker: Unknown topic or partition"; segfs
// sent "Topic nosuch does not exist.", which librdkafka printed instead.
func TestKafkaPythonCreatePartitionsUnknownTopic(t *testing.T) {
	const python = "/usr/bin/python3"
	pythonNeedKafka(t)
	script := filepath.Join(t.TempDir(), "cp.py")
	if err := os.WriteFile(script, []byte(pythonCreatePartitions), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := kafkaServe(t, "")
	out, err := exec.Command("timeout", "-k", "5", "60", python, script, srv.addr, "nosuch").CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); !strings.Contains(got, `str="Broker: Unknown topic or partition"`) {
		t.Errorf("create_partitions nosuch: %s; want librdkafka's own text for UNKNOWN_TOPIC_OR_PARTITION", got)
	}
	if _, err := os.Stat(filepath.Join(srv.data, "nosuch-0")); err == nil {
		t.Error("nosuch-0 was created")
	}
}

// TestKafkaListOffsetsV10: franz-go lists a mounted partition's offsets
// at the highest ListOffsets version both sides know. Kafka 4.0 serves
// v10 (KIP-1075: a timeout for remote-storage lookups, which a topic
// without remote storage never makes); segfs now does too and answers as
// at v9: latest = the number of lines written, earliest 0, and the first
// record at or after timestamp 0 is offset 0.
func TestKafkaListOffsetsV10(t *testing.T) {
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/lo" && printf 'a\nb\nc\n' >> "$M/lo/0/data"`)
	cl := kafkaClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for ts, want := range map[int64]int64{-1: 3, -2: 0, 0: 0} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID, req.TimeoutMillis = -1, 15000
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "lo"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = ts
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("ListOffsets at %d: %v", ts, err)
		}
		if resp.Version != 10 {
			t.Errorf("ListOffsets at %d went at v%d, want v10", ts, resp.Version)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("ListOffsets at %d: %+v", ts, resp)
		}
		if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != want {
			t.Errorf("ListOffsets at %d: %v offset %d, want %d", ts, kerr.ErrorForCode(p.ErrorCode), p.Offset, want)
		}
	}
}
