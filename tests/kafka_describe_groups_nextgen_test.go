package tests

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKafkaDescribeGroupsNextGenGroupIsDead: DescribeGroups (the classic
// describe, which librdkafka's list_groups and older admin tools use) of
// a KIP-848 consumer group with a live member. Kafka 4's describeGroups
// looks the name up as a classic group, finds none, and answers Dead with
// no protocol and no members (before v6, no error); ConsumerGroupDescribe
// is what describes it. segfs described it as a classic group: Stable,
// protocol type "consumer", the assignor as protocol, the members. A
// classic group beside it is still described.
func TestKafkaDescribeGroupsNextGenGroupIsDead(t *testing.T) {
	// The classic group's member joins alone: no initial rebalance delay
	// to wait out.
	srv := kafkaServe(t, "", "--group-initial-rebalance-delay", "0")
	cl := kafkaClient(t, srv.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ct := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "dg", 1, 1
	ct.Topics = append(ct.Topics, rt)
	if resp, err := ct.RequestWith(ctx, cl); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create topic dg: %v %+v", err, resp)
	}
	kafkaProduce(t, cl, "dg", 0, "a", "b")

	consume := func(group string, opts ...kgo.Opt) {
		t.Helper()
		m, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(srv.addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics("dg"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit()}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		n := 0
		for n < 2 && ctx.Err() == nil {
			fs := m.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatalf("%s: %v", group, err)
			}
			n += fs.NumRecords()
		}
	}
	consume("nextgen", kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()))
	consume("classic")

	cd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cd.Groups = []string{"nextgen"}
	cdr, err := cd.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if g := cdr.Groups[0]; g.ErrorCode != 0 || g.State != "Stable" || len(g.Members) != 1 {
		t.Fatalf("ConsumerGroupDescribe nextgen: %v %q, %d members; want a Stable consumer group with its member", kerr.ErrorForCode(g.ErrorCode), g.State, len(g.Members))
	}
	for _, v := range []int16{0, 5} {
		dg := kmsg.NewPtrDescribeGroupsRequest()
		dg.Version, dg.Groups = v, []string{"nextgen", "classic"}
		resp, err := dg.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if g := resp.Groups[0]; g.ErrorCode != 0 || g.State != "Dead" || g.ProtocolType != "" || g.Protocol != "" || len(g.Members) != 0 {
			t.Errorf("DescribeGroups v%d nextgen: %v %q type %q protocol %q, %d members; want Dead and nothing else, as Kafka for a group that is not classic",
				v, kerr.ErrorForCode(g.ErrorCode), g.State, g.ProtocolType, g.Protocol, len(g.Members))
		}
		if g := resp.Groups[1]; g.ErrorCode != 0 || g.State != "Stable" || g.ProtocolType != "consumer" || len(g.Members) != 1 {
			t.Errorf("DescribeGroups v%d classic: %v %q type %q, %d members; want Stable with its member", v, kerr.ErrorForCode(g.ErrorCode), g.State, g.ProtocolType, len(g.Members))
		}
	}
}
