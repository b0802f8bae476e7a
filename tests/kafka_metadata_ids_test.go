package tests

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestKafkaMetadataByIDBeforeV12: franz-go, held to Metadata v11, asks a
// mounted topic's metadata by its topic ID. Kafka serves lookups by ID
// from v12 only and refuses a v10/v11 request naming a topic by ID as a
// whole: the topic comes back INVALID_REQUEST with no partitions, and the
// answer lists no brokers. segfs served it as at v12. At v12 the same
// lookup is served, and at v11 a lookup by name is.
func TestKafkaMetadataByIDBeforeV12(t *testing.T) {
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/ids" && echo hello >> "$M/ids/0/data"`)

	metadata := func(maxVersion int16, byID [16]byte, name string) (*kmsg.MetadataResponse, int16) {
		t.Helper()
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(3, maxVersion)
		cl := kafkaClient(t, addr, kgo.MaxVersions(vs))
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		if name != "" {
			rt.Topic = kmsg.StringPtr(name)
		}
		rt.TopicID = byID
		req.Topics = append(req.Topics, rt)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("Metadata v%d: %v", maxVersion, err)
		}
		if len(resp.Topics) != 1 {
			t.Fatalf("Metadata v%d: %d topics, want 1: %+v", maxVersion, len(resp.Topics), resp)
		}
		return resp, resp.Version
	}

	r, v := metadata(12, [16]byte{}, "ids")
	if v != 12 || r.Topics[0].ErrorCode != 0 || r.Topics[0].TopicID == ([16]byte{}) {
		t.Fatalf("Metadata v%d by name: %+v", v, r.Topics[0])
	}
	id := r.Topics[0].TopicID
	parts := len(r.Topics[0].Partitions)

	r, v = metadata(12, id, "")
	if mt := r.Topics[0]; v != 12 || mt.ErrorCode != 0 || mt.Topic == nil || *mt.Topic != "ids" || len(mt.Partitions) != parts {
		t.Errorf("Metadata v%d by ID: %v, topic %v, %d partitions; want ids with %d", v, kerr.ErrorForCode(mt.ErrorCode), mt.Topic, len(mt.Partitions), parts)
	}

	r, v = metadata(11, id, "")
	if mt := r.Topics[0]; v != 11 || mt.ErrorCode != kerr.InvalidRequest.Code || len(mt.Partitions) != 0 || mt.TopicID != id || len(r.Brokers) != 0 {
		t.Errorf("Metadata v%d by ID: %v, %d partitions, %d brokers; want INVALID_REQUEST, none, none", v, kerr.ErrorForCode(mt.ErrorCode), len(mt.Partitions), len(r.Brokers))
	}

	r, v = metadata(11, [16]byte{}, "ids")
	if mt := r.Topics[0]; v != 11 || mt.ErrorCode != 0 || mt.TopicID != id || len(mt.Partitions) != parts || len(r.Brokers) != 1 {
		t.Errorf("Metadata v%d by name: %v, %d partitions, %d brokers", v, kerr.ErrorForCode(mt.ErrorCode), len(mt.Partitions), len(r.Brokers))
	}
	// The topic is untouched.
	if got := m.ok(`cat "$M/ids/0/data"`); got != "hello\n" {
		t.Errorf("data = %q", got)
	}
}
