package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// franz-go produces (idempotent by default, and with every codec) into the
// binary, and consumes it back by direct partition assignment, from the
// start and from the middle of a batch.
func TestKafkaKgoProduceConsume(t *testing.T) {
	srv := kafkaServe(t, "", "--partitions", "2")
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
	}{
		{"none", kgo.NoCompression()},
		{"gzip", kgo.GzipCompression()},
		{"snappy", kgo.SnappyCompression()},
		{"lz4", kgo.Lz4Compression()},
		{"zstd", kgo.ZstdCompression()},
	}
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			topic := "kgo-" + c.name
			// Default options: idempotent producer (InitProducerId), acks=all.
			cl := kafkaClient(t, srv.addr,
				kgo.AllowAutoTopicCreation(),
				kgo.ProducerBatchCompression(c.codec),
				kgo.ProducerLinger(50*time.Millisecond))
			var want []string
			for i := range 500 {
				want = append(want, fmt.Sprintf("%s record %d %s", c.name, i, "padding padding padding padding"))
			}
			offs := kafkaProduce(t, cl, topic, 1, want...)
			for i, o := range offs {
				if o != int64(i) {
					t.Fatalf("record %d got offset %d", i, o)
				}
			}
			got := kafkaConsume(t, srv.addr, topic, 1, 0, len(want))
			if vals := recordValues(got); !slices.Equal(vals, want) {
				t.Fatalf("consumed %d records, first %q; want %d records", len(vals), vals[:min(3, len(vals))], len(want))
			}
			for i, r := range got {
				if r.Offset != int64(i) || r.Partition != 1 {
					t.Fatalf("record %d: offset %d partition %d", i, r.Offset, r.Partition)
				}
			}
			// From the middle: records below 123 are dropped by the client
			// even though the batch holding 123 starts earlier.
			mid := kafkaConsume(t, srv.addr, topic, 1, 123, len(want)-123)
			if mid[0].Offset != 123 || string(mid[0].Value) != want[123] {
				t.Fatalf("consume from 123 started at %d %q", mid[0].Offset, mid[0].Value)
			}
		})
	}
}

// Committed offsets: commit through OffsetCommit (simple commit, as a
// manually assigned consumer does), restart the server, read them back
// with OffsetFetch and resume from there.
func TestKafkaKgoCommitResume(t *testing.T) {
	srv := kafkaServe(t, "")
	data := srv.data
	cl := kafkaClient(t, srv.addr, kgo.AllowAutoTopicCreation())
	var all []string
	for i := range 20 {
		all = append(all, fmt.Sprint("msg-", i))
	}
	kafkaProduce(t, cl, "orders", 0, all...)
	first := kafkaConsume(t, srv.addr, "orders", 0, 0, 12)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// FindCoordinator, as a client does before committing.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "billing"
	fcr, err := fc.RequestWith(ctx, cl)
	if err != nil || fcr.ErrorCode != 0 || fmt.Sprintf("%s:%d", fcr.Host, fcr.Port) != srv.addr {
		t.Fatalf("FindCoordinator: %v %+v", err, fcr)
	}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "billing", -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "orders"
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset = 0, first[11].Offset+1 // consumed 12 records
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	cr, err := commit.RequestWith(ctx, cl)
	if err != nil || cr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("OffsetCommit: %v %+v", err, cr)
	}
	cl.Close()
	srv.stop()

	srv = kafkaServe(t, data)
	cl = kafkaClient(t, srv.addr)
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Group = "billing"
	ft := kmsg.NewOffsetFetchRequestTopic()
	ft.Topic, ft.Partitions = "orders", []int32{0}
	fetch.Topics = append(fetch.Topics, ft)
	fr, err := fetch.RequestWith(ctx, cl)
	if err != nil || fr.ErrorCode != 0 {
		t.Fatalf("OffsetFetch: %v %+v", err, fr)
	}
	committed := fr.Topics[0].Partitions[0].Offset
	if committed != 12 {
		t.Fatalf("committed offset after restart: %d, want 12", committed)
	}
	rest := kafkaConsume(t, srv.addr, "orders", 0, committed, 8)
	if vals := recordValues(rest); !slices.Equal(vals, all[12:]) {
		t.Fatalf("resumed at %q, want %q", vals, all[12:])
	}
}

// A consumer parked at the end receives a record produced afterwards
// (long poll woken by the append) and ListOffsets answers by time.
func TestKafkaKgoTailAndListOffsets(t *testing.T) {
	srv := kafkaServe(t, "")
	prod := kafkaClient(t, srv.addr, kgo.AllowAutoTopicCreation())
	kafkaProduce(t, prod, "tail", 0, "one")
	before := time.Now().UnixMilli()
	time.Sleep(20 * time.Millisecond)

	cons := kafkaClient(t, srv.addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		"tail": {0: kgo.NewOffset().AtEnd()},
	}), kgo.FetchMaxWait(30*time.Second))
	got := make(chan []*kgo.Record, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for {
			fs := cons.PollFetches(ctx)
			if recs := fs.Records(); len(recs) > 0 || ctx.Err() != nil {
				got <- recs
				return
			}
		}
	}()
	time.Sleep(300 * time.Millisecond) // let the consumer park (no assertion depends on it)
	kafkaProduce(t, prod, "tail", 0, "two")
	recs := <-got
	if len(recs) != 1 || string(recs[0].Value) != "two" || recs[0].Offset != 1 {
		t.Fatalf("tail got %v", recordValues(recs))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.ReplicaID = -1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "tail"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = before
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	lr, err := lo.RequestWith(ctx, prod)
	if err != nil || lr.Topics[0].Partitions[0].ErrorCode != 0 || lr.Topics[0].Partitions[0].Offset != 1 {
		t.Fatalf("ListOffsets by time: %v %+v", err, lr)
	}
}

// TestKafkaProducerIDExpiration: every franz-go producer run is a new
// idempotent producer id, and the state of each was kept in memory and in
// every .snapshot for good (13,810 bytes after 300 producers). With
// --producer-id-expiration (Kafka's producer.id.expiration.ms, default a
// day) the daemon drops producers whose last batch is that old, and the
// snapshot of the close holds none of them.
func TestKafkaProducerIDExpiration(t *testing.T) {
	// It mostly waits (timers, clients) on a server, data dir and
	// port of its own: it runs beside the other tests that do (t.Parallel).
	t.Parallel()
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr, "--producer-id-expiration", "1s")
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/pids"`)
	for i := 0; i < 20; i++ {
		cl := kafkaClient(t, addr) // idempotent by default: a new producer id
		kafkaProduce(t, cl, "pids", 0, fmt.Sprint("run ", i))
		cl.Close()
	}
	if !mntWaitFor(20*time.Second, func() bool {
		return strings.Contains(m.daemonLog(), `msg="expired idempotent producers" topic=pids partition=0 expired=20 left=0`)
	}) {
		t.Fatalf("the daemon did not expire the 20 producers:\n%s", m.daemonLog())
	}
	m.unmount()
	snaps, _ := filepath.Glob(filepath.Join(m.data, "pids-0", "*.snapshot"))
	if len(snaps) != 1 {
		t.Fatalf("snapshots: %v", snaps)
	}
	if st, err := os.Stat(snaps[0]); err != nil || st.Size() != 10 {
		t.Fatalf("the snapshot after expiry: %v %v, want 10 bytes (no producer)", st.Size(), err)
	}
}
