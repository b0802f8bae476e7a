package tests

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaBrokerConfig is the value broker 0 reports for name in
// DescribeConfigs ("" if it lists no such entry).
func kafkaBrokerConfig(t *testing.T, cl *kgo.Client, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeBroker, "0", []string{name}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range resp.Resources[0].Configs {
		if c.Name == name && c.Value != nil {
			return *c.Value
		}
	}
	return ""
}

// kafkaJoinRaw sends JoinGroup for one member of group (subscribed to
// topic), answering MEMBER_ID_REQUIRED as a client does, and returns the
// answer to the join proper. The member's rebalance timeout (30 s) is what
// bounds an initial rebalance delay, so it is longer than any delay used.
func kafkaJoinRaw(ctx context.Context, cl *kgo.Client, group, memberID, topic string) (*kmsg.JoinGroupResponse, error) {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{topic}
	for {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = group, memberID, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 30000
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", meta.AppendTo(nil)
		req.Protocols = append(req.Protocols, p)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil, err
		}
		if resp.ErrorCode == kerr.MemberIDRequired.Code && memberID == "" {
			memberID = resp.MemberID
			continue
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return nil, err
		}
		return resp, nil
	}
}

// kafkaAwaitGroupState polls DescribeGroups until group is in one of
// states and returns its members' ids.
func kafkaAwaitGroupState(t *testing.T, ctx context.Context, cl *kgo.Client, group string, states ...string) []string {
	t.Helper()
	for {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{group}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("DescribeGroups %s, awaiting %v: %v", group, states, err)
		}
		if g := resp.Groups[0]; slices.Contains(states, g.State) {
			var ids []string
			for _, m := range g.Members {
				ids = append(ids, m.MemberID)
			}
			return ids
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group %s never reached state %v", group, states)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

type joinResult struct {
	resp *kmsg.JoinGroupResponse
	err  error
}

func kafkaJoinAsync(ctx context.Context, cl *kgo.Client, group, memberID, topic string) <-chan joinResult {
	c := make(chan joinResult, 1)
	go func() {
		resp, err := kafkaJoinRaw(ctx, cl, group, memberID, topic)
		c <- joinResult{resp, err}
	}()
	return c
}

func awaitJoin(t *testing.T, who string, c <-chan joinResult) *kmsg.JoinGroupResponse {
	t.Helper()
	r := <-c // bounded by the request's context
	if r.err != nil {
		t.Fatalf("JoinGroup of %s: %v", who, r.err)
	}
	return r.resp
}

// delayedGroupServer serves with --group-initial-rebalance-delay delay,
// checks that DescribeConfigs reports it as wantMs, and returns an admin
// client and one client per member: a broker answers a connection's
// requests in order, and each member has its own, as it would have.
func delayedGroupServer(t *testing.T, delay, wantMs string) (cl, ca, cb *kgo.Client) {
	t.Helper()
	srv := kafkaServe(t, "", "--group-initial-rebalance-delay", delay)
	cl, ca, cb = kafkaClient(t, srv.addr), kafkaClient(t, srv.addr), kafkaClient(t, srv.addr)
	if v := kafkaBrokerConfig(t, cl, "group.initial.rebalance.delay.ms"); v != wantMs {
		t.Errorf("group.initial.rebalance.delay.ms = %q, want %s", v, wantMs)
	}
	return cl, ca, cb
}

// --group-initial-rebalance-delay is Kafka's
// group.initial.rebalance.delay.ms, which single-node setups commonly set
// to 0. With 0, a lone member's join completes generation 1 at once: a
// second member that joins once the first one's join reached the server
// starts generation 2. With a delay (2 s) the same two joins land in
// generation 1 together. Before, segfs had no such flag (and its 1 s
// delay put both members in generation 1 either way). No timing
// threshold: the second join is sent once DescribeGroups shows the first
// one arrived, which with a delay is long before the delay ends.
func TestKafkaGroupInitialRebalanceDelayFlag(t *testing.T) {
	t.Parallel()
	const topic, group = "orders", "delayed"

	t.Run("zero", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cl, ca, cb := delayedGroupServer(t, "0", "0")
		a := kafkaJoinAsync(ctx, ca, group, "", topic)
		// a's join reached the server: the group rebalances, or (no
		// delay) has already completed the join.
		kafkaAwaitGroupState(t, ctx, cl, group, "PreparingRebalance", "CompletingRebalance")
		b := kafkaJoinAsync(ctx, cb, group, "", topic)
		ra := awaitJoin(t, "a", a)
		if ra.Generation != 1 || len(ra.Members) != 1 {
			t.Fatalf("a's first join: generation %d with %d members, want generation 1 with a alone (no delay)", ra.Generation, len(ra.Members))
		}
		// b's join rebalances the group; a rejoins as a client does on
		// REBALANCE_IN_PROGRESS.
		kafkaAwaitGroupState(t, ctx, cl, group, "PreparingRebalance")
		a = kafkaJoinAsync(ctx, ca, group, ra.MemberID, topic)
		ra, rb := awaitJoin(t, "a", a), awaitJoin(t, "b", b)
		if ra.Generation != 2 || rb.Generation != 2 {
			t.Errorf("after b joined: a in generation %d, b in %d; want both in 2", ra.Generation, rb.Generation)
		}
	})

	t.Run("2s", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cl, ca, cb := delayedGroupServer(t, "2s", "2000")
		a := kafkaJoinAsync(ctx, ca, group, "", topic)
		kafkaAwaitGroupState(t, ctx, cl, group, "PreparingRebalance")
		b := kafkaJoinAsync(ctx, cb, group, "", topic)
		ra, rb := awaitJoin(t, "a", a), awaitJoin(t, "b", b)
		if ra.Generation != 1 || rb.Generation != 1 {
			t.Errorf("a in generation %d, b in %d; want both in 1 (the delay gathers them)", ra.Generation, rb.Generation)
		}
		leader := ra
		if rb.LeaderID == rb.MemberID {
			leader = rb
		}
		if len(leader.Members) != 2 {
			t.Errorf("the leader's join lists %d members, want 2", len(leader.Members))
		}
	})
}

// A classic group member whose session timeout is below
// --group-min-session-timeout (Kafka's group.min.session.timeout.ms, 6 s)
// is refused with INVALID_SESSION_TIMEOUT, as Kafka refuses it; with the
// minimum lowered to 1 s the same franz-go consumer (2 s session) joins
// and reads. Before, the 6 s minimum could not be changed.
func TestKafkaGroupMinSessionTimeoutFlag(t *testing.T) {
	t.Parallel()
	const topic, group = "orders", "short-sessions"
	consume := func(t *testing.T, addr string) (got []string, joinErr error) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.SessionTimeout(2*time.Second),
			kgo.HeartbeatInterval(500*time.Millisecond), kgo.FetchMaxWait(500*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for len(got) == 0 {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("the group consumer neither read nor failed to join")
			}
			for _, e := range fs.Errors() {
				var gs *kgo.ErrGroupSession
				if errors.As(e.Err, &gs) {
					return nil, gs.Err
				}
				t.Fatalf("fetch %s/%d: %v", e.Topic, e.Partition, e.Err)
			}
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		return got, nil
	}
	for _, tc := range []struct {
		name, min string
		mount     bool
		extra     []string
	}{
		{"default", "6000", false, nil},
		{"1s", "1000", false, []string{"--group-min-session-timeout", "1s"}},
		// mount hands the flags on to its daemon.
		{"mount 1s", "1000", true, []string{"--group-min-session-timeout", "1s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// No initial rebalance delay: a lone consumer, nothing to wait for.
			flags := append([]string{"--group-initial-rebalance-delay", "0"}, tc.extra...)
			var addr string
			if tc.mount {
				mntRequireFuse(t)
				addr = kafkaFreeAddr(t)
				mntNew(t, append([]string{"--kafka-listen", addr}, flags...)...)
				kafkaWaitListening(t, addr)
			} else {
				addr = kafkaServe(t, "", flags...).addr
			}
			cl := kafkaClient(t, addr, kgo.AllowAutoTopicCreation())
			if v := kafkaBrokerConfig(t, cl, "group.min.session.timeout.ms"); v != tc.min {
				t.Errorf("group.min.session.timeout.ms = %q, want %s", v, tc.min)
			}
			if v := kafkaBrokerConfig(t, cl, "group.initial.rebalance.delay.ms"); v != "0" {
				t.Errorf("group.initial.rebalance.delay.ms = %q, want 0", v)
			}
			kafkaProduce(t, cl, topic, 0, "hello")
			got, err := consume(t, addr)
			switch {
			case tc.extra == nil && !errors.Is(err, kerr.InvalidSessionTimeout):
				t.Errorf("a 2s session against the 6s minimum: join error %v, read %q; want INVALID_SESSION_TIMEOUT", err, got)
			case tc.extra != nil && (err != nil || len(got) != 1 || got[0] != "hello"):
				t.Errorf("a 2s session against a 1s minimum: join error %v, read %q; want hello", err, got)
			}
		})
	}
}

// mount and serve list the classic group flags with Kafka's defaults
// (the initial delay: segfs's 1 s) and refuse, before mounting or serving
// anything, a negative delay, a minimum or maximum session timeout that is
// not positive and a minimum above the maximum, naming the flag.
func TestCLIGroupFlags(t *testing.T) {
	for _, cmd := range []string{"mount", "serve"} {
		r := cliRun(t, cmd, "--help")
		for _, want := range []string{"--group-initial-rebalance-delay DURATION", "(default: 1s)",
			"--group-min-session-timeout DURATION", "(default: 6s)", "--group-max-session-timeout DURATION", "(default: 30m0s)"} {
			if !strings.Contains(r.Stdout, want) {
				t.Errorf("%s --help lacks %q:\n%s", cmd, want, r.Stdout)
			}
		}
	}
	data, mnt := t.TempDir(), t.TempDir()
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--group-initial-rebalance-delay", "-1s"}, "--group-initial-rebalance-delay must not be negative"},
		{[]string{"--group-min-session-timeout", "0"}, "--group-min-session-timeout must be positive"},
		{[]string{"--group-min-session-timeout", "-6s"}, "--group-min-session-timeout must be positive"},
		{[]string{"--group-max-session-timeout", "0s"}, "--group-max-session-timeout must be positive"},
		{[]string{"--group-min-session-timeout", "10s", "--group-max-session-timeout", "5s"},
			"--group-min-session-timeout (10s) must not be longer than --group-max-session-timeout (5s)"},
		// Against the other's default.
		{[]string{"--group-max-session-timeout", "1s"},
			"--group-min-session-timeout (6s) must not be longer than --group-max-session-timeout (1s)"},
	} {
		for _, args := range [][]string{
			append(append([]string{"mount"}, tc.flags...), data, mnt),
			append(append([]string{"serve"}, tc.flags...), "--listen", "127.0.0.1:0", data),
		} {
			r := cliRun(t, args...)
			if r.Code == 0 || !strings.Contains(r.Stderr, tc.want) {
				t.Errorf("segfs %s: exit %d, stderr %q; want %q", strings.Join(args, " "), r.Code, r.Stderr, tc.want)
			}
		}
	}
}
