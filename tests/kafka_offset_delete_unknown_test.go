package tests

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKafkaOffsetDeleteUnknownPartitions: a kcat group member commits its
// offset of a mounted partition; then an OffsetDelete (as kadm's
// DeleteOffsets and kafka-consumer-groups.sh --delete-offsets send it)
// names that partition, a partition the topic does not have and a topic
// that does not exist. Kafka answers the two that do not exist
// UNKNOWN_TOPIC_OR_PARTITION before its group coordinator sees the
// request, and deletes the one commit; segfs answered all three without
// error.
func TestKafkaOffsetDeleteUnknownPartitions(t *testing.T) {
	kafkaNeedKcat(t)
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/od" && printf 'a\nb\nc\n' >> "$M/od/0/data"`)
	const group = "od-group"
	if got := kcatGroupRead(t, addr, group, "od", "earliest", 3); len(got) != 3 {
		t.Fatalf("kcat read %q, want 3 records", got)
	}
	cl := kafkaClient(t, addr)
	if c := committed(t, cl, group, "od", 1); c[0] != 3 {
		t.Fatalf("committed %v, want [3]", c)
	}

	req := kmsg.NewPtrOffsetDeleteRequest()
	req.Group = group
	for topic, parts := range map[string][]int32{"od": {0, 4}, "ghost": {0}} {
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = topic
		for _, p := range parts {
			rp := kmsg.NewOffsetDeleteRequestTopicPartition()
			rp.Partition = p
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp := adminRequest[*kmsg.OffsetDeleteResponse](t, cl, req)
	if resp.ErrorCode != 0 {
		t.Fatalf("OffsetDelete: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	want := map[string]map[int32]int16{
		"od":    {0: 0, 4: kerr.UnknownTopicOrPartition.Code},
		"ghost": {0: kerr.UnknownTopicOrPartition.Code},
	}
	n := 0
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			n++
			if w := want[rt.Topic][rp.Partition]; rp.ErrorCode != w {
				t.Errorf("OffsetDelete %s/%d: %v, want %v", rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode), kerr.ErrorForCode(w))
			}
		}
	}
	if n != 3 {
		t.Fatalf("%d partitions answered, want 3: %+v", n, resp)
	}
	if c := committed(t, cl, group, "od", 1); c[0] != -1 {
		t.Errorf("committed after OffsetDelete %v, want [-1]", c)
	}
	if got := m.ok(`ls "$M"`); got != "od\n" {
		t.Errorf("ls of the mount: %q, want only od", got)
	}
}
