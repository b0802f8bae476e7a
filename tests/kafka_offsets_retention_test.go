package tests

// Expiry of committed offsets and groups (Kafka's offsets.retention.minutes,
// KIP-211) on a mount started with a retention of seconds: a kcat -G group
// that committed and left, and a group of commits without membership, go
// from ListGroups and from the offsets file; a franz-go member keeps the
// offset of the topic it subscribes to; a restart does not restart the
// clocks.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// retentionFile is what the test reads of the offsets file.
type retentionFile struct {
	Groups map[string]map[string]map[string]struct {
		Offset       int64 `json:"offset"`
		CommitTimeMs int64 `json:"commit_time_ms"`
	} `json:"groups"`
	ClassicGroups map[string]struct {
		EmptySinceMs int64 `json:"empty_since_ms"`
	} `json:"classic_groups"`
}

func readRetentionFile(t *testing.T, data string) (retentionFile, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(data, "segfs-consumer-offsets.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f retentionFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("offsets file: %v\n%s", err, b)
	}
	return f, string(b)
}

// retentionGroups is ListGroups (kmsg, as kadm sends it): group → state.
func retentionGroups(t *testing.T, cl *kgo.Client) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, g := range resp.Groups {
		out[g.Group] = g.GroupState
	}
	return out
}

// retentionSimpleCommit commits offset 1 of topic/0 for group without
// membership (generation -1), as kafka-consumer-groups.sh
// --reset-offsets does.
func retentionSimpleCommit(t *testing.T, cl *kgo.Client, group, topic string) {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, 1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("OffsetCommit %s: error %d", group, code)
	}
}

// retentionWait polls ListGroups until cond holds of it (bounded).
func retentionWait(t *testing.T, cl *kgo.Client, what string, cond func(map[string]string) bool) map[string]string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		gs := retentionGroups(t, cl)
		if cond(gs) {
			return gs
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60s still not %s: ListGroups %v", what, gs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A kcat -G group that committed and left disappears from ListGroups and
// from the offsets file a retention after it left; a franz-go group whose
// member stays keeps the offset of the topic it subscribes to, committed
// once and long older than the retention; a restart in between does not
// reset the clocks: the offsets file keeps the commit times and the time
// the group became empty, and the group expires a retention after it
// left, before a group of commits made after it left but before the
// restart. Before, every group and offset stayed forever (and mount had
// no --offsets-retention).
func TestKafkaOffsetsRetention(t *testing.T) {
	// It mostly waits (group timers, clients) on a server, data dir and
	// port of its own: it runs beside the other tests that do (t.Parallel).
	t.Parallel()
	kafkaNeedKcat(t)
	addr := kafkaFreeAddr(t)
	// The test waits out the retention twice (late, then probe). It is
	// longer than what must happen before gone's and late's times are
	// read back from the file after the restart (gone leaves, late
	// commits, the unmount, the second below, the mount: about 1.2 s)
	// and leaves the member that stays time to be back after the
	// restart.
	const retention = 4 * time.Second
	// Each group here joins alone: no initial rebalance delay to wait out.
	flags := []string{"--kafka-listen", addr, "--partitions", "1", "--group-initial-rebalance-delay", "0",
		"--offsets-retention", retention.String(), "--offsets-retention-check-interval", "200ms"}
	m := mntNew(t, flags...)
	m.ok("mkdir $M/events && printf 'e0\\ne1\\ne2\\n' >> $M/events/0/data")
	const topic = "events"
	adm := kafkaClient(t, addr)

	// kept: a franz-go member that reads the topic, commits once and
	// stays, polling in the background.
	kept, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumerGroup("kept"), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.HeartbeatInterval(300 * time.Millisecond), kgo.FetchMaxWait(500 * time.Millisecond)}, kgoQuickRetry()...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait(); kept.Close() })
	read := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		n, committed := 0, false
		for ctx.Err() == nil {
			fs := kept.PollFetches(ctx)
			fs.EachRecord(func(*kgo.Record) { n++ })
			if n == 3 && !committed {
				if err := kept.CommitUncommittedOffsets(ctx); err != nil {
					t.Errorf("kept's commit: %v", err)
				}
				committed = true
				close(read)
			}
		}
	}()
	select {
	case <-read:
	case <-time.After(60 * time.Second):
		t.Fatal("the kept member did not read the 3 records in 60s")
	}

	// gone: kcat -G reads, commits and leaves.
	if got := kcatGroupRead(t, addr, "gone", topic, "earliest", 3); strings.Join(got, ",") != "0 e0,0 e1,0 e2" {
		t.Fatalf("kcat -G gone read %q", got)
	}
	before, raw := readRetentionFile(t, m.data)
	goneCommit := before.Groups["gone"][topic]["0"].CommitTimeMs
	goneEmpty := before.ClassicGroups["gone"].EmptySinceMs
	if before.Groups["gone"][topic]["0"].Offset != 3 || goneCommit == 0 || goneEmpty == 0 || before.Groups["kept"][topic]["0"].Offset != 3 {
		t.Fatalf("offsets file after gone left and kept committed, want both at offset 3 and gone's commit and empty times:\n%s", raw)
	}
	// late: commits after gone left, just before the restart.
	retentionSimpleCommit(t, adm, "late", topic)

	m.unmount()
	// Time passes while nothing runs: had the restart reset gone's
	// clock, gone would expire this much after late, five retention
	// checks (200 ms) later.
	time.Sleep(time.Second)
	m = mntAt(t, m.data, flags...)

	after, raw := readRetentionFile(t, m.data)
	if c, e := after.Groups["gone"][topic]["0"].CommitTimeMs, after.ClassicGroups["gone"].EmptySinceMs; c != goneCommit || e != goneEmpty {
		t.Errorf("after the restart gone's commit time %d and empty time %d, want %d and %d as before:\n%s", c, e, goneCommit, goneEmpty, raw)
	}
	// late goes a retention after its commit; gone, which left before
	// it, must be gone by then.
	gs := retentionWait(t, adm, "without late", func(gs map[string]string) bool { _, ok := gs["late"]; return !ok })
	if s, ok := gs["gone"]; ok {
		t.Errorf("late expired, but gone (%s), which left before late's commit, is still listed: the restart reset its clock", s)
	}
	if f, raw := readRetentionFile(t, m.data); f.Groups["gone"] != nil || f.Groups["late"] != nil {
		t.Errorf("gone and late expired, but the offsets file still has them:\n%s", raw)
	} else if _, ok := f.ClassicGroups["gone"]; ok {
		t.Errorf("gone expired, but the offsets file still records it:\n%s", raw)
	}

	// kept's member has rejoined since the restart; a group of commits
	// made now expires a retention later, when kept's offset, committed
	// long before, would too if kept did not subscribe to its topic.
	retentionWait(t, adm, "kept Stable", func(gs map[string]string) bool { return gs["kept"] == "Stable" })
	retentionSimpleCommit(t, adm, "probe", topic)
	gs = retentionWait(t, adm, "without probe", func(gs map[string]string) bool { _, ok := gs["probe"]; return !ok })
	if gs["kept"] != "Stable" {
		t.Errorf("ListGroups after probe expired: kept %q, want Stable", gs["kept"])
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = "kept"
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{0}}}
	resp, err := req.RequestWith(ctx2, adm)
	if err != nil {
		t.Fatal(err)
	}
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != 3 {
		t.Errorf("kept's committed offset of %s/0 after probe expired: %d (error %d), want 3", topic, p.Offset, p.ErrorCode)
	}
	if f, raw := readRetentionFile(t, m.data); f.Groups["kept"][topic]["0"].Offset != 3 {
		t.Errorf("the offsets file lost kept's offset:\n%s", raw)
	}
}

// mount and serve take --offsets-retention and
// --offsets-retention-check-interval as Go durations (Kafka's 7 days and
// 10 minutes by default) and refuse one that is not positive before
// mounting or serving anything.
func TestCLIOffsetsRetentionFlags(t *testing.T) {
	for _, cmd := range []string{"mount", "serve"} {
		r := cliRun(t, cmd, "--help")
		for _, want := range []string{"--offsets-retention DURATION", "(default: 168h0m0s)", "--offsets-retention-check-interval DURATION", "(default: 10m0s)"} {
			if !strings.Contains(r.Stdout, want) {
				t.Errorf("%s --help lacks %q:\n%s", cmd, want, r.Stdout)
			}
		}
	}
	data, mnt := t.TempDir(), t.TempDir()
	for _, tc := range []struct{ flag, value string }{
		{"--offsets-retention", "0"}, {"--offsets-retention", "-1h"},
		{"--offsets-retention-check-interval", "0s"}, {"--offsets-retention-check-interval", "-1m"},
	} {
		for _, args := range [][]string{{"mount", tc.flag, tc.value, data, mnt}, {"serve", tc.flag, tc.value, "--listen", "127.0.0.1:0", data}} {
			r := cliRun(t, args...)
			if want := tc.flag + " must be positive"; r.Code == 0 || !strings.Contains(r.Stderr, want) {
				t.Errorf("segfs %s: exit %d, stderr %q; want %q", strings.Join(args, " "), r.Code, r.Stderr, want)
			}
		}
	}
}
