package tests

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKafkaMetadataV12NullName: a Metadata v12 request naming a topic
// with neither a name (null) nor an ID (the zero UUID), and no topic by a
// non-zero ID, is refused as a whole, as Kafka refuses it (its
// handleTopicMetadataRequest cannot look up a null name and answers with
// MetadataRequest.getErrorResponse): every topic of the request answered
// with the error, the null name as "", no partitions, no brokers, and
// nothing auto-created by the other names. segfs answered that entry alone
// UNKNOWN_TOPIC_ID and served (and auto-created) the rest.
func TestKafkaMetadataV12NullName(t *testing.T) {
	srv := kafkaServe(t, "")
	cl := kafkaClient(t, srv.addr, kgo.AllowAutoTopicCreation())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kafkaProduce(t, cl, "known", 0, "x")

	req := kmsg.NewPtrMetadataRequest()
	req.Version, req.AllowAutoTopicCreation = 12, true
	for _, name := range []*string{nil, kmsg.StringPtr("known"), kmsg.StringPtr("fresh")} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = name
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Brokers) != 0 || len(resp.Topics) != 3 {
		t.Fatalf("brokers %+v, %d topics; want a refusal of the 3 topics", resp.Brokers, len(resp.Topics))
	}
	for i, want := range []string{"", "known", "fresh"} {
		mt := resp.Topics[i]
		if mt.ErrorCode != kerr.InvalidRequest.Code || mt.Topic == nil || *mt.Topic != want || len(mt.Partitions) != 0 {
			t.Errorf("topic %d: error %v name %v, %d partitions; want INVALID_REQUEST for %q",
				i, kerr.ErrorForCode(mt.ErrorCode), mt.Topic, len(mt.Partitions), want)
		}
	}
	// The refused request created nothing: "fresh" is still unknown.
	req = kmsg.NewPtrMetadataRequest()
	req.Version, req.AllowAutoTopicCreation = 12, false
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("fresh")
	req.Topics = append(req.Topics, rt)
	if resp, err = req.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("fresh after the refused request: %v, want UNKNOWN_TOPIC_OR_PARTITION (not created)", kerr.ErrorForCode(code))
	}
}
