package tests

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
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
