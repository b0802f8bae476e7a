package fetch

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Metadata v12 naming one topic by ID and another by name, auto-creation
// allowed: Kafka's handleTopicMetadataRequest answers by the IDs alone
// (useTopicId) and ignores every name, so "b" is neither answered nor
// created. segfs answered both and created "b". A name given with the ID
// of another topic is ignored as well, and a repeated ID is answered once.
func TestMetadataIDsIgnoreNames(t *testing.T) {
	ts := startServer(t, Config{AutoCreateTopics: true})
	createTopic(t, ts, "a", 2)
	a, _ := ts.store.Topic("a")
	c := dial(t, ts.addr)

	req := kmsg.NewPtrMetadataRequest()
	req.Version, req.AllowAutoTopicCreation = 12, true
	byID := kmsg.NewMetadataRequestTopic()
	byID.TopicID = a.ID()
	byName := kmsg.NewMetadataRequestTopic()
	byName.Topic = kmsg.StringPtr("b")
	again := kmsg.NewMetadataRequestTopic()
	again.Topic, again.TopicID = kmsg.StringPtr("c"), a.ID()
	req.Topics = []kmsg.MetadataRequestTopic{byID, byName, again}
	r := c.roundTrip(req).(*kmsg.MetadataResponse)
	if len(r.Topics) != 1 {
		t.Fatalf("%d topics answered, want 1 (a, by its ID): %+v", len(r.Topics), r.Topics)
	}
	if mt := r.Topics[0]; mt.ErrorCode != 0 || mt.Topic == nil || *mt.Topic != "a" || mt.TopicID != a.ID() || len(mt.Partitions) != 2 {
		t.Errorf("by id: %v, name %v, %d partitions; want a with 2", kerr.ErrorForCode(mt.ErrorCode), mt.Topic, len(mt.Partitions))
	}
	for _, name := range []string{"b", "c"} {
		if _, err := ts.store.Topic(name); err == nil {
			t.Errorf("topic %q was auto-created by a request naming topics by ID", name)
		}
	}

	// An unknown ID beside a name: UNKNOWN_TOPIC_ID for the ID, the name
	// still ignored.
	unknown := [16]byte{9, 9, 9}
	req.Topics[0].TopicID = unknown
	req.Topics = req.Topics[:2]
	r = c.roundTrip(req).(*kmsg.MetadataResponse)
	if len(r.Topics) != 1 || r.Topics[0].ErrorCode != kerr.UnknownTopicID.Code || r.Topics[0].TopicID != unknown || r.Topics[0].Topic != nil {
		t.Fatalf("unknown id beside a name: %+v; want only UNKNOWN_TOPIC_ID for the id", r.Topics)
	}
	if _, err := ts.store.Topic("b"); err == nil {
		t.Error(`topic "b" was auto-created beside an unknown ID`)
	}

	// All IDs zero: the names are served (and created) as usual.
	req.Topics[0].TopicID = [16]byte{}
	req.Topics[0].Topic = kmsg.StringPtr("a")
	r = c.roundTrip(req).(*kmsg.MetadataResponse)
	if len(r.Topics) != 2 || r.Topics[0].ErrorCode != 0 || r.Topics[1].ErrorCode != 0 {
		t.Fatalf("zero ids, names a and b: %+v", r.Topics)
	}
	if _, err := ts.store.Topic("b"); err != nil {
		t.Errorf(`topic "b" not auto-created by name: %v`, err)
	}
}
