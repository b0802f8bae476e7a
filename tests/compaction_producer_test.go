package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// compactionProducers asks DescribeProducers for topic's partition 0 and
// returns each producer's last sequence.
func compactionProducers(t *testing.T, addr, topic string) map[int64]int32 {
	t.Helper()
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kafkaClient(t, addr).Request(ctx, req)
	if err != nil {
		t.Fatalf("DescribeProducers: %v", err)
	}
	sp := resp.(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0]
	if sp.ErrorCode != 0 {
		t.Fatalf("DescribeProducers %s-0: error %d", topic, sp.ErrorCode)
	}
	out := map[int64]int32{}
	for _, p := range sp.ActiveProducers {
		out[p.ProducerID] = p.LastSequence
	}
	return out
}

// TestCompactionKeepsProducerState: a franz-go idempotent producer writes
// k=a and k=b to a compacted topic, `echo k=plain >> data` supersedes
// both, and the cleaner removes their records. It keeps the producer's
// last batch as an empty batch (no records; its offsets, producer id,
// epoch and sequence), as Kafka's cleaner does for every producer whose
// state the partition keeps, so that a load that rebuilds the producer
// state from the log still knows the producer: here after kill -9 and the
// loss of the producer snapshot (a torn or missing .snapshot; a snapshot
// past a log end that lost its tail). segfs removed the batch: after the
// crash DescribeProducers no longer listed the producer, and a retry of
// its last batch would have been written a second time. The empty batch
// reads as nothing through `cat data` and a Kafka consumer, the producer
// goes on producing, and `segfs verify` accepts the directory.
func TestCompactionKeepsProducerState(t *testing.T) {
	addr := kafkaFreeAddr(t)
	flags := append([]string{"--kafka-listen", addr}, cleanerFlags...)
	m := mntNew(t, flags...)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/ip" && printf 'cleanup.policy=compact\nkey.separator==\nsegment.ms=1000\nmin.cleanable.dirty.ratio=0.01\nfile.delete.delay.ms=0\n' > "$M/ip/config"`)
	cl := kafkaClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	produce := func(v string) int64 {
		t.Helper()
		r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: "ip", Partition: 0, Key: []byte("k"), Value: []byte(v)}).First()
		if err != nil {
			t.Fatalf("produce k=%s: %v", v, err)
		}
		return r.Offset
	}
	if produce("a") != 0 || produce("b") != 1 {
		t.Fatal("the producer's records are not at offsets 0 and 1")
	}
	m.ok(`echo k=plain >> "$M/ip/0/data"`)
	// The idle segment rolls after segment.ms and is cleaned.
	var got string
	if !mntWaitFor(30*time.Second, func() bool {
		got = m.ok(`cat "$M/ip/0/data"`)
		return got == "k=plain\n"
	}) {
		t.Fatalf("k=a and k=b not compacted away in 30 s: data reads %q", got)
	}
	prods := compactionProducers(t, addr, "ip")
	if len(prods) != 1 {
		t.Fatalf("DescribeProducers before the crash: %v, want the one producer", prods)
	}
	var pid int64
	for id, seq := range prods {
		if seq != 1 {
			t.Fatalf("DescribeProducers before the crash: producer %d at sequence %d, want 1", id, seq)
		}
		pid = id
	}
	m.kill9()
	snaps, _ := filepath.Glob(filepath.Join(m.data, "ip-0", "*.snapshot"))
	for _, f := range snaps {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("timeout", "60", segfsBin, "verify", m.data).CombinedOutput(); err != nil {
		t.Fatalf("segfs verify after the crash: %v\n%s", err, out)
	}
	m.mount(flags...)
	kafkaWaitListening(t, addr)
	if prods := compactionProducers(t, addr, "ip"); prods[pid] != 1 {
		t.Fatalf("DescribeProducers after the crash: %v, want producer %d at sequence 1", prods, pid)
	}
	if got := m.ok(`cat "$M/ip/0/data"; cat "$M/ip/0/offset/1"; head -n1 "$M/ip/0/offset/0"`); got != "k=plain\nk=plain\nk=plain\n" {
		t.Fatalf("after the crash data, offset/1 and offset/0 read %q", got)
	}
	// The same client goes on (sequence 2), and a consumer from offset 0
	// reads past the empty batch.
	if off := produce("c"); off != 3 {
		t.Fatalf("k=c produced at offset %d, want 3", off)
	}
	recs := kafkaConsume(t, addr, "ip", 0, 0, 2)
	if len(recs) != 2 || recs[0].Offset != 2 || string(recs[0].Value) != "plain" || recs[1].Offset != 3 || string(recs[1].Value) != "c" {
		t.Fatalf("consumed %d records: %+v", len(recs), recs)
	}
	if prods := compactionProducers(t, addr, "ip"); prods[pid] != 2 {
		t.Fatalf("DescribeProducers after producing again: %v, want producer %d at sequence 2", prods, pid)
	}
	m.unmount()
	if out, err := exec.Command("timeout", "60", segfsBin, "verify", m.data).CombinedOutput(); err != nil {
		t.Fatalf("segfs verify: %v\n%s", err, out)
	}
}
