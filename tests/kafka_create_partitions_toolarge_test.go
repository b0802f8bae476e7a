package tests

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKafkaCreatePartitionsTooLargeUnknownTopic: a CreatePartitions, sent
// by franz-go to a mounted daemon, that would add more partitions than
// Kafka's controller makes records for in one request (10000) and also
// names a topic that does not exist. Kafka's ReplicationControlManager
// answers the unknown topic UNKNOWN_TOPIC_OR_PARTITION before it makes a
// record; only the topics that would add partitions are refused for the
// size. segfs answered the unknown topic POLICY_VIOLATION too. Nothing is
// added or created: `ls` of the mounted topic still shows one partition.
func TestKafkaCreatePartitionsTooLargeUnknownTopic(t *testing.T) {
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/cp"`)
	cl := kafkaClient(t, addr)

	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = 20000
	for name, count := range map[string]int32{"nosuch": 5, "cp": 10002} {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = name, count
		req.Topics = append(req.Topics, rt)
	}
	resp := adminRequest[*kmsg.CreatePartitionsResponse](t, cl, req)
	want := map[string]int16{"nosuch": kerr.UnknownTopicOrPartition.Code, "cp": kerr.PolicyViolation.Code}
	if len(resp.Topics) != 2 {
		t.Fatalf("CreatePartitions: %+v", resp)
	}
	for _, st := range resp.Topics {
		if st.ErrorCode != want[st.Topic] {
			t.Errorf("CreatePartitions %s: %v, want %v", st.Topic, kerr.ErrorForCode(st.ErrorCode), kerr.ErrorForCode(want[st.Topic]))
		}
	}
	if got := m.ok(`ls "$M"; ls -d "$M"/cp/[0-9]*`); got != "cp\n"+m.path("cp", "0")+"\n" {
		t.Errorf("after the refused request: %q", got)
	}
}
