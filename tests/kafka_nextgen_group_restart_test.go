package tests

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKafkaNextGenGroupTypeSurvivesRestart: a KIP-848 consumer group whose
// member committed offsets and left is still a consumer group after the
// daemon restarts, as in Kafka, which keeps the group's type and epochs
// in __consumer_offsets: ListGroups type "consumer", ConsumerGroupDescribe
// the group Empty at the epochs it had, DescribeGroups protocol type
// "consumer". It used to come back as a classic group with protocol type
// "", and ConsumerGroupDescribe answered "Group g is not a consumer
// group." until a member heartbeated again. A member joining afterwards
// starts the next group epoch; a classic JoinGroup converts the empty
// group, which then stays classic across a restart.
func TestKafkaNextGenGroupTypeSurvivesRestart(t *testing.T) {
	data := t.TempDir() + "/data"
	// The classic member joins alone: no initial rebalance delay to wait
	// out.
	flags := []string{"--partitions", "2", "--group-consumer-heartbeat-interval", "200ms", "--group-consumer-session-timeout", "4s",
		"--group-initial-rebalance-delay", "0"}
	srv := kafkaServe(t, data, flags...)
	const topic, group = "events", "kept"
	prod := kafkaClient(t, srv.addr, kgo.AllowAutoTopicCreation())

	log := newNextGenLog()
	want := nextGenRound(t, prod, topic, 2, "r1", 3)
	a := startNextGenMember(t, srv.addr, group, topic, "a", log)
	log.waitFor(t, "member a", want)
	nextGenCheckType(t, srv.addr, group)
	a.close() // commits, then leaves: the group is empty
	a.check(t)
	before := nextGenEmptyBefore(t, srv.addr, group)

	srv.stop()
	srv = kafkaServe(t, data, flags...)
	prod = kafkaClient(t, srv.addr) // the new server listens elsewhere
	nextGenCheckKept(t, srv.addr, group, before)
	if t.Failed() {
		return
	}

	// A member joins at the next group epoch and resumes from the
	// committed offsets.
	fresh := newNextGenLog()
	next := nextGenRound(t, prod, topic, 2, "r2", 2)
	b := startNextGenMember(t, srv.addr, group, topic, "b", fresh)
	fresh.waitFor(t, "member b after the restart", next)
	if d := nextGenDescribe(t, srv.addr, group); d.Epoch <= before.Epoch {
		t.Errorf("with member b the group is at epoch %d, want past the %d it had", d.Epoch, before.Epoch)
	}
	nextGenCheckResumed(t, b, fresh, next)

	// A classic member converts the empty consumer group; it stays
	// classic across a restart.
	srv.stop()
	srv = kafkaServe(t, data, flags...)
	prod = kafkaClient(t, srv.addr) // the new server listens elsewhere
	classic := kafkaClient(t, srv.addr, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	last := nextGenRound(t, prod, topic, 2, "r3", 1)
	var got []string
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for len(got) < len(last) && ctx.Err() == nil {
		fs := classic.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		if err := classic.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("classic member's commit: %v", err)
		}
	}
	if len(got) != len(last) {
		t.Fatalf("the classic member read %q, want the %d records of round r3", got, len(last))
	}
	if got := nextGenListed(t, srv.addr, group); got != "classic consumer Stable" {
		t.Errorf("with a classic member ListGroups shows %s as %q, want a classic group", group, got)
	}
	classic.Close()
	srv.stop()
	srv = kafkaServe(t, data, flags...)
	prod = kafkaClient(t, srv.addr) // the new server listens elsewhere
	if got := nextGenListed(t, srv.addr, group); got != "classic  Empty" {
		t.Errorf("after the classic member and a restart ListGroups shows %s as %q, want type classic, Empty", group, got)
	}
	if d := nextGenDescribe(t, srv.addr, group); d.ErrorCode == 0 {
		t.Errorf("after the classic member and a restart ConsumerGroupDescribe %s answers the group (state %q): it is classic", group, d.State)
	}
}

// nextGenDescribe is ConsumerGroupDescribe of one group.
func nextGenDescribe(t *testing.T, addr, group string) kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp := freshRequest[*kmsg.ConsumerGroupDescribeResponse](t, addr, req)
	if len(resp.Groups) != 1 {
		t.Fatalf("ConsumerGroupDescribe %s: %+v", group, resp)
	}
	return resp.Groups[0]
}

// nextGenEmptyBefore is ConsumerGroupDescribe of group, whose member
// left before a restart: it fails the test at once unless the group is
// Empty past epoch 1.
func nextGenEmptyBefore(t *testing.T, addr, group string) kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	before := nextGenDescribe(t, addr, group)
	if before.ErrorCode != 0 || before.State != "Empty" || before.Epoch < 2 {
		t.Fatalf("before the restart: ConsumerGroupDescribe %s: error %d %v, state %q, epoch %d, want an Empty group past epoch 1", group, before.ErrorCode, before.ErrorMessage, before.State, before.Epoch)
	}
	return before
}

// nextGenCheckKept checks that after a restart group is still the Empty
// consumer group it was before it: in ListGroups, in DescribeGroups, and
// in ConsumerGroupDescribe, at the epochs it had, without members. It
// returns ConsumerGroupDescribe's answer.
func nextGenCheckKept(t *testing.T, addr, group string, before kmsg.ConsumerGroupDescribeResponseGroup) kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	if got := nextGenListed(t, addr, group); got != "consumer consumer Empty" {
		t.Errorf("after the restart ListGroups shows %s as %q, want type consumer, protocol type consumer, state Empty", group, got)
	}
	after := nextGenDescribe(t, addr, group)
	if after.ErrorCode != 0 || after.State != "Empty" || after.Epoch != before.Epoch || after.AssignmentEpoch != before.AssignmentEpoch || len(after.Members) != 0 {
		msg := ""
		if after.ErrorMessage != nil {
			msg = *after.ErrorMessage
		}
		t.Errorf("after the restart ConsumerGroupDescribe %s: error %d %q, state %q, epoch %d, assignment epoch %d, %d members; want Empty at epoch %d, assignment epoch %d, as before it",
			group, after.ErrorCode, msg, after.State, after.Epoch, after.AssignmentEpoch, len(after.Members), before.Epoch, before.AssignmentEpoch)
	}
	// DescribeGroups answers a KIP-848 group Dead, as Kafka does (it is
	// not a classic group), restart or not: the restart must not turn it
	// into a classic one.
	if got := nextGenDescribeGroups(t, addr, group); got != "Dead " {
		t.Errorf("after the restart DescribeGroups %s: %q, want Dead (not a classic group)", group, got)
	}
	return after
}

// nextGenListed is ListGroups' "type protocol-type state" of group, "" if
// it is not listed.
func nextGenListed(t *testing.T, addr, group string) string {
	t.Helper()
	resp := freshRequest[*kmsg.ListGroupsResponse](t, addr, kmsg.NewPtrListGroupsRequest())
	i := slices.IndexFunc(resp.Groups, func(g kmsg.ListGroupsResponseGroup) bool { return g.Group == group })
	if i < 0 {
		return ""
	}
	g := resp.Groups[i]
	return g.GroupType + " " + g.ProtocolType + " " + g.GroupState
}

// nextGenDescribeGroups is DescribeGroups' "state protocol-type" of group.
func nextGenDescribeGroups(t *testing.T, addr, group string) string {
	t.Helper()
	d := describeClassic(t, addr, group)
	return d.State + " " + d.ProtocolType
}

// TestKafkaNextGenGroupNeverCommittedSurvivesRestart: a KIP-848 consumer
// group whose member joined and left without committing an offset is
// still there after the daemon restarts, as in Kafka, which writes a
// group's metadata record (its epoch) when the group is created and at
// each new epoch: ListGroups and DescribeGroups show it, Empty, and
// ConsumerGroupDescribe at the epochs and with the assignor it had
// before the restart (the default, "uniform", for an Empty group, as in
// Kafka: the "range" its member asked for goes with the member). It used
// to be forgotten at the restart, as only a group with committed offsets
// was recorded: ListGroups no longer listed it and ConsumerGroupDescribe
// answered GROUP_ID_NOT_FOUND. DeleteGroups deletes it for good: it is
// gone after the next restart too.
func TestKafkaNextGenGroupNeverCommittedSurvivesRestart(t *testing.T) {
	data := t.TempDir() + "/data"
	flags := []string{"--partitions", "2", "--group-consumer-heartbeat-interval", "200ms", "--group-consumer-session-timeout", "4s"}
	srv := kafkaServe(t, data, flags...)
	const topic, group = "quiet", "idle"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := kafkaClient(t, srv.addr)
	ct := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 2, 1
	ct.Topics = append(ct.Topics, rt)
	if resp, err := ct.RequestWith(ctx, cl); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics %s: %v %+v", topic, err, resp)
	}

	// The topic stays empty: the member consumes nothing and so commits
	// nothing.
	a := startNextGenMember(t, srv.addr, group, topic, "a", newNextGenLog(), kgo.Balancers(kgo.RangeBalancer()))
	deadline := time.Now().Add(60 * time.Second)
	for {
		d := nextGenDescribe(t, srv.addr, group)
		if d.ErrorCode == 0 && d.State == "Stable" && len(d.Members) == 1 && len(d.Members[0].Assignment.TopicPartitions) == 1 {
			if d.AssignorName != "range" {
				t.Errorf("with its member, whose client asks for range, ConsumerGroupDescribe %s names assignor %q", group, d.AssignorName)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("member a never held the partitions of %s: %+v", topic, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
	nextGenCheckType(t, srv.addr, group)
	a.close()
	a.check(t)
	before := nextGenEmptyBefore(t, srv.addr, group)
	if before.AssignorName != "uniform" {
		t.Errorf("before the restart the Empty group names assignor %q, want Kafka's default, uniform", before.AssignorName)
	}
	if b, err := os.ReadFile(filepath.Join(data, "segfs-consumer-offsets.json")); err == nil {
		var doc struct {
			Groups map[string]json.RawMessage `json:"groups"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		if _, ok := doc.Groups[group]; ok {
			t.Fatalf("the offsets file has offsets of %s: the test needs a group that never committed\n%s", group, b)
		}
	}

	srv.stop()
	srv = kafkaServe(t, data, flags...)
	if after := nextGenCheckKept(t, srv.addr, group, before); after.AssignorName != before.AssignorName {
		t.Errorf("after the restart ConsumerGroupDescribe %s names assignor %q, want %q, as before it", group, after.AssignorName, before.AssignorName)
	}

	// DeleteGroups deletes it, across a restart too.
	cl = kafkaClient(t, srv.addr)
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{group}
	if resp, err := dg.RequestWith(ctx, cl); err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		t.Fatalf("DeleteGroups %s: %v %+v", group, err, resp)
	}
	if got := nextGenListed(t, srv.addr, group); got != "" {
		t.Errorf("after DeleteGroups ListGroups shows %s as %q", group, got)
	}
	srv.stop()
	srv = kafkaServe(t, data, flags...)
	if got := nextGenListed(t, srv.addr, group); got != "" {
		t.Errorf("after DeleteGroups and a restart ListGroups shows %s as %q, want it gone", group, got)
	}
	if d := nextGenDescribe(t, srv.addr, group); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("after DeleteGroups and a restart ConsumerGroupDescribe %s: error %d, state %q, want GROUP_ID_NOT_FOUND", group, d.ErrorCode, d.State)
	}
}
