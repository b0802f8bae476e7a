package tests

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKafkaDescribeProducersInvalidName: DescribeProducers (as
// kafka-transactions.sh describe-producers sends it) sent to a mounted
// daemon, naming a topic no name can have. (franz-go's client looks the
// topic up with Metadata first and stops there, so the request goes on a
// connection of its own.) Kafka checks the name
// first and answers INVALID_TOPIC_EXCEPTION with what is wrong with it;
// an unknown valid name is UNKNOWN_TOPIC_OR_PARTITION and a mounted
// topic's partition is described. segfs answered the bad name
// UNKNOWN_TOPIC_OR_PARTITION, which a client retries as a topic not yet
// created.
func TestKafkaDescribeProducersInvalidName(t *testing.T) {
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/dp" && echo x >> "$M/dp/0/data"`)

	req := kmsg.NewPtrDescribeProducersRequest()
	for _, name := range []string{"bad/name", "nope", "dp"} {
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic, rt.Partitions = name, []int32{0}
		req.Topics = append(req.Topics, rt)
	}
	resp := kafkaRawRequest(t, addr, req).(*kmsg.DescribeProducersResponse)
	want := map[string]int16{"bad/name": kerr.InvalidTopicException.Code, "nope": kerr.UnknownTopicOrPartition.Code, "dp": 0}
	if len(resp.Topics) != 3 {
		t.Fatalf("DescribeProducers: %+v", resp)
	}
	for _, st := range resp.Topics {
		if len(st.Partitions) != 1 {
			t.Fatalf("%s: %+v", st.Topic, st)
		}
		p := st.Partitions[0]
		if p.ErrorCode != want[st.Topic] {
			t.Errorf("DescribeProducers %s/0: %v, want %v", st.Topic, kerr.ErrorForCode(p.ErrorCode), kerr.ErrorForCode(want[st.Topic]))
		}
		if st.Topic == "bad/name" && (p.ErrorMessage == nil || *p.ErrorMessage == "") {
			t.Errorf("bad/name: no message")
		}
	}
}
