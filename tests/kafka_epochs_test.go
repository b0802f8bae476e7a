package tests

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A power cut loses records a consumer group had already read and
// committed past, and the offsets are handed out again to new records. The
// group's next run must not skip them: franz-go, resuming at its committed
// offset with the leader epoch of the last record it read, asks
// OffsetForLeaderEpoch for the end of that epoch (KIP-320), learns that
// the log diverged below its offset, reports ErrDataLoss and reads on from
// where the log diverged. Before, segfs stamped every batch with epoch 0
// and did not serve OffsetForLeaderEpoch: the consumer resumed at its
// offset and silently skipped the new records below it.
//
// The power cut is simulated as the fault tests do: the server is killed
// (SIGKILL: no flush, no clean-shutdown marker) and the active segment cut
// back to the end of the records the disk had, the second produce's batch
// being the unflushed tail.
func TestKafkaTruncationDetectedAfterPowerCut(t *testing.T) {
	// The group consumer joins alone, twice: no initial rebalance delay
	// to wait out.
	srv := kafkaServe(t, "", "--group-initial-rebalance-delay", "0")
	const topic, group = "ledger", "epoch-readers"
	prod := kafkaClient(t, srv.addr, kgo.AllowAutoTopicCreation())
	kafkaProduce(t, prod, topic, 0, "a0", "a1", "a2", "a3", "a4")
	log := filepath.Join(srv.data, topic+"-0", "00000000000000000000.log")
	fi, err := os.Stat(log)
	if err != nil {
		t.Fatal(err)
	}
	durable := fi.Size()
	kafkaProduce(t, prod, topic, 0, "a5", "a6", "a7", "a8", "a9")
	prod.Close()

	// consume runs the group until it has read the record last (or 60 s
	// passed), then leaves it, committing what it read. It returns the
	// records and the errors its fetches reported.
	consume := func(addr, last string) (got []string, errs []error) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond),
			kgo.GreedyAutoCommit())
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for !slices.Contains(got, last) {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("the group read %q (errors %v), never %q", got, errs, last)
			}
			fs.EachError(func(_ string, _ int32, err error) { errs = append(errs, err) })
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		return got, errs
	}
	got, errs := consume(srv.addr, "a9")
	if want := []string{"a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9"}; !slices.Equal(got, want) || len(errs) > 0 {
		t.Fatalf("first run read %q (errors %v), want %q", got, errs, want)
	}

	srv.cmd.Process.Kill()
	<-srv.done
	if err := os.Truncate(log, durable); err != nil {
		t.Fatal(err)
	}
	srv = kafkaServe(t, srv.data, "--group-initial-rebalance-delay", "0")
	prod = kafkaClient(t, srv.addr)
	if offs := kafkaProduce(t, prod, topic, 0, "b5", "b6", "b7", "b8", "b9", "b10"); offs[0] != 5 {
		t.Fatalf("after the power cut the log continued at %d, want 5", offs[0])
	}

	got, errs = consume(srv.addr, "b10")
	if want := []string{"b5", "b6", "b7", "b8", "b9", "b10"}; !slices.Equal(got, want) {
		t.Fatalf("the group resumed with %q, want %q: it skipped the records written at the offsets the power cut freed (errors %v)", got, want, errs)
	}
	var loss *kgo.ErrDataLoss
	for _, err := range errs {
		if errors.As(err, &loss) {
			break
		}
	}
	if loss == nil || loss.ConsumedTo != 10 || loss.ResetTo != 5 {
		t.Fatalf("no data loss reported from 10 back to 5: errors %v", errs)
	}
}

// kcat (librdkafka) keeps consuming across a remount of the mount whose
// server it uses, although the remount is a new leader epoch (Metadata
// shows it): a group's stored offset resumes, a full read gets every
// line.
func TestKafkaKcatAcrossRemount(t *testing.T) {
	// It mostly waits (timers, clients) on a server, data dir and
	// port of its own: it runs beside the other tests that do (t.Parallel).
	t.Parallel()
	kafkaNeedKcat(t)
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/jobs" && printf 'j1\nj2\nj3\n' >> "$M/jobs/0/data"`)
	epoch := func() int32 {
		t.Helper()
		cl := kafkaClient(t, addr)
		defer cl.Close()
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("jobs")
		req.Topics = append(req.Topics, rt)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("Metadata: %v %+v", err, resp)
		}
		return resp.Topics[0].Partitions[0].LeaderEpoch
	}
	consume := func(args ...string) []string {
		t.Helper()
		return strings.Fields(kcat(t, addr, "", append([]string{"-C", "-t", "jobs", "-p", "0", "-e", "-q"}, args...)...))
	}
	stored := []string{"-o", "stored", "-X", "group.id=workers", "-X", "auto.offset.reset=earliest"}
	if got := consume(stored...); !slices.Equal(got, []string{"j1", "j2", "j3"}) {
		t.Fatalf("first run read %q", got)
	}
	before := epoch()
	m.unmount()
	m.mount("--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	if after := epoch(); after != before+1 {
		t.Errorf("leader epoch %d after a remount, was %d: want one more", after, before)
	}
	m.ok(`echo j4 >> "$M/jobs/0/data"`)
	if got := consume(stored...); !slices.Equal(got, []string{"j4"}) {
		t.Fatalf("resumed run read %q, want only j4", got)
	}
	if got := consume("-o", "beginning"); !slices.Equal(got, []string{"j1", "j2", "j3", "j4"}) {
		t.Fatalf("a full read after the remount got %q", got)
	}
}

// kafkaEpochsDir writes DATA_DIR/orders-0 as a Kafka broker leaves it
// after leaderships 5 and 6: offsets 0-4 in epoch 5, 5 in epoch 6 (the
// epoch stamped into each batch, outside its CRC), no partition.metadata
// (as before Kafka 2.8), and the given leader-epoch-checkpoint ("" for
// none).
func kafkaEpochsDir(t *testing.T, checkpoint string) (dataDir, ckPath string) {
	t.Helper()
	dataDir = t.TempDir()
	pdir := filepath.Join(dataDir, "orders-0")
	seg := cliWriteSegment(t, pdir, 0, cliThreeBatches())
	b, err := os.ReadFile(seg.Log)
	if err != nil {
		t.Fatal(err)
	}
	for i, pos := range seg.Positions {
		epoch := uint32(5)
		if i == 2 {
			epoch = 6
		}
		binary.BigEndian.PutUint32(b[pos+12:], epoch)
	}
	if err := os.WriteFile(seg.Log, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ckPath = filepath.Join(pdir, "leader-epoch-checkpoint")
	if checkpoint != "" {
		cliWriteFile(t, ckPath, checkpoint)
	}
	return dataDir, ckPath
}

// A Kafka data directory keeps its leader epochs: segfs leads the next
// one (7), answers OffsetForLeaderEpoch from them, and a kgo consumer
// that resumes in epoch 5 past where epoch 5 ended is told of the
// divergence. A missing checkpoint is rebuilt from the batches. Before,
// segfs answered epoch 0 everywhere and, finding no partition.metadata,
// overwrote the checkpoint with "0 0".
func TestKafkaDirectoryEpochsKept(t *testing.T) {
	const want = "0\n2\n5 0\n6 5\n"
	for _, ck := range []string{want, ""} {
		dataDir, ckPath := kafkaEpochsDir(t, ck)
		srv := kafkaServe(t, dataDir)
		cl := kafkaClient(t, srv.addr)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()

		meta := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr("orders")
		meta.Topics = append(meta.Topics, mt)
		mresp, err := meta.RequestWith(ctx, cl)
		if err != nil || len(mresp.Topics) != 1 || len(mresp.Topics[0].Partitions) != 1 {
			t.Fatalf("Metadata: %v %+v", err, mresp)
		}
		if got := mresp.Topics[0].Partitions[0].LeaderEpoch; got != 7 {
			t.Errorf("checkpoint %q: leader epoch %d, want 7", ck, got)
		}
		for epoch, end := range map[int32]int64{5: 5, 6: 6} {
			req := kmsg.NewPtrOffsetForLeaderEpochRequest()
			req.ReplicaID = -1
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = "orders"
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.CurrentLeaderEpoch, rp.LeaderEpoch = 7, epoch
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				t.Fatalf("OffsetForLeaderEpoch: %v %+v", err, resp)
			}
			if got := resp.Topics[0].Partitions[0]; got.ErrorCode != 0 || got.LeaderEpoch != epoch || got.EndOffset != end {
				t.Errorf("checkpoint %q: end of epoch %d: error %d, epoch %d at %d; want %d", ck, epoch, got.ErrorCode, got.LeaderEpoch, got.EndOffset, end)
			}
		}

		// A consumer that read epoch 5 up to offset 6: the log it read
		// ended epoch 5 at 5 here, so it diverged there.
		cons := kafkaClient(t, srv.addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
			"orders": {0: kgo.NewOffset().At(6).WithEpoch(5)},
		}))
		var loss *kgo.ErrDataLoss
		for loss == nil {
			fs := cons.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("checkpoint %q: no data loss reported for offset 6 of epoch 5", ck)
			}
			fs.EachError(func(_ string, _ int32, err error) {
				if !errors.As(err, &loss) {
					t.Fatalf("fetch: %v", err)
				}
			})
		}
		if loss.ConsumedTo != 6 || loss.ResetTo != 5 {
			t.Errorf("checkpoint %q: data loss %v, want from 6 back to 5", ck, loss)
		}
		cons.Close()

		kafkaProduce(t, cl, "orders", 0, "new")
		cl.Close()
		srv.stop()
		b, err := os.ReadFile(ckPath)
		if err != nil || string(b) != "0\n3\n5 0\n6 5\n7 6\n" {
			t.Errorf("checkpoint %q: after a produce: %q %v", ck, b, err)
		}
		logs, _ := filepath.Glob(filepath.Join(dataDir, "orders-0", "*.log"))
		if out := cliRun(t, append([]string{"dump-log"}, logs...)...).Stdout; !regexp.MustCompile(`(?m)^baseOffset: 6 lastOffset: 6 .* partitionLeaderEpoch: 7 `).MatchString(out) {
			t.Errorf("checkpoint %q: the produced batch is not in epoch 7:\n%s", ck, out)
		}
	}
}
