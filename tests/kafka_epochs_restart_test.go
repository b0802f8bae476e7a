package tests

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Every restart of segfs serve is a new leader epoch. A kgo consumer that
// keeps running across restarts that lose nothing (SIGKILL: the records
// are in the page cache; SIGTERM: flushed) validates its position against
// the new epoch (OffsetForLeaderEpoch) and must go on reading exactly the
// new records: no ErrDataLoss, no record read twice or skipped, no loop.
// A consumer group resuming from its commit after the restarts reads on
// from there, and a full read finds every record once; segfs verify
// accepts the directory after each restart. (kgo is fenced by the new
// epoch after each restart and validates with OffsetForLeaderEpoch.)
func TestKafkaConsumerAcrossRestarts(t *testing.T) {
	// It mostly waits (group timers, clients) on a server, data dir and
	// port of its own: it runs beside the other tests that do (t.Parallel).
	t.Parallel()
	addr := kafkaFreeAddr(t)
	data := filepath.Join(t.TempDir(), "data")
	const topic, group = "live", "live-readers"
	// The group consumer joins alone, three times: no initial
	// rebalance delay to wait out.
	flags := []string{"--listen", addr, "--group-initial-rebalance-delay", "0"}
	srv := kafkaServe(t, data, flags...)
	// The clients retry soon (kgoQuickRetry): cut off by each restart,
	// they are back within half a second of the server.
	prod := kafkaClient(t, addr, append(kgoQuickRetry(), kgo.AllowAutoTopicCreation(), kgo.RecordRetries(1000))...)
	kafkaProduce(t, prod, topic, 0, "r0", "r1", "r2")
	live := kafkaClient(t, addr, append(kgoQuickRetry(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))...)
	groupRun := func(want []string) {
		t.Helper()
		cl, err := kgo.NewClient(append(kgoQuickRetry(), kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		var got []string
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for len(got) < len(want) {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				break
			}
			fs.EachError(func(_ string, _ int32, err error) {
				var loss *kgo.ErrDataLoss
				if errors.As(err, &loss) {
					t.Errorf("group: %v", err)
				}
			})
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		if !slices.Equal(got, want) {
			t.Fatalf("the group read %q, want %q", got, want)
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var all []string
	// read has the live consumer read want, and nothing else.
	read := func(want []string) {
		t.Helper()
		var got []string
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for len(got) < len(want) {
			fs := live.PollFetches(ctx)
			if ctx.Err() != nil {
				break
			}
			fs.EachError(func(_ string, _ int32, err error) {
				var loss *kgo.ErrDataLoss
				if errors.As(err, &loss) {
					t.Errorf("live consumer: %v", err)
				}
			})
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		if !slices.Equal(got, want) {
			t.Fatalf("the live consumer read %q, want %q", got, want)
		}
		all = append(all, want...)
	}
	read([]string{"r0", "r1", "r2"})
	groupRun([]string{"r0", "r1", "r2"})
	for i, how := range []string{"SIGKILL", "SIGTERM", "SIGKILL", "SIGKILL", "SIGTERM"} {
		if how == "SIGKILL" {
			srv.cmd.Process.Kill()
			<-srv.done
		} else {
			srv.stop()
		}
		if r := cliRun(t, "verify", data); r.Code != 0 || !strings.Contains(r.Stdout, " 0 errors, 0 warnings") {
			t.Fatalf("verify after restart %d (%s): exit %d\n%s%s", i, how, r.Code, r.Stdout, r.Stderr)
		}
		srv = kafkaServe(t, data, flags...)
		batch := []string{fmt.Sprintf("s%d-a", i), fmt.Sprintf("s%d-b", i)}
		kafkaProduce(t, prod, topic, 0, batch...)
		read(batch)
		if i%2 == 1 {
			groupRun(all[len(all)-4:])
		}
	}
	if got := recordValues(kafkaConsume(t, addr, topic, 0, 0, len(all))); !slices.Equal(got, all) {
		t.Fatalf("a full read got %q, want %q", got, all)
	}
}
