package fetch

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestDescribeProducersInvalidName: a name no topic can have is
// INVALID_TOPIC_EXCEPTION for every partition asked, with a message
// naming what is wrong, before the topic is looked up, as Kafka's
// handleDescribeProducersRequest (checkValidTopic) answers it; an unknown
// but valid name stays UNKNOWN_TOPIC_OR_PARTITION with Kafka's message.
// segfs answered the invalid names UNKNOWN_TOPIC_OR_PARTITION.
func TestDescribeProducersInvalidName(t *testing.T) {
	ts := startServer(t, Config{})
	createTopic(t, ts, "t", 1)
	c := dial(t, ts.addr)
	for _, name := range []string{"bad/name", "", "..", strings.Repeat("x", 250)} {
		for _, p := range describeProducers(t, c, name, 0, 3).Partitions {
			if p.ErrorCode != kerr.InvalidTopicException.Code || p.ErrorMessage == nil || !strings.Contains(*p.ErrorMessage, "invalid topic name") || len(p.ActiveProducers) != 0 {
				t.Errorf("%q partition %d: %v %v, want INVALID_TOPIC_EXCEPTION with a message", name, p.Partition, kerr.ErrorForCode(p.ErrorCode), p.ErrorMessage)
			}
		}
	}
	for _, p := range describeProducers(t, c, "nope", 0).Partitions {
		if p.ErrorCode != kerr.UnknownTopicOrPartition.Code || p.ErrorMessage == nil || *p.ErrorMessage != "This server does not host this topic-partition." {
			t.Errorf("unknown topic: %v %v", kerr.ErrorForCode(p.ErrorCode), p.ErrorMessage)
		}
	}
	if p := describeProducers(t, c, "t", 0).Partitions[0]; p.ErrorCode != 0 {
		t.Errorf("t/0: %v", kerr.ErrorForCode(p.ErrorCode))
	}
}
