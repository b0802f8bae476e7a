package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// compactionProducers asks DescribeProducers for topic's partition 0 and
// returns each producer's last sequence.
func compactionProducers(t *testing.T, addr, topic string) map[int64]int32 {
	t.Helper()
	out := map[int64]int32{}
	for _, p := range kafkaActiveProducers(t, addr, topic) {
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
	m.ok(`mkdir "$M/ip" && printf 'cleanup.policy=compact\nkey.separator==\nsegment.ms=300\nmin.cleanable.dirty.ratio=0.01\nfile.delete.delay.ms=0\n' > "$M/ip/config"`)
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

// TestCompactionRemovesTxnMarkersMounted: the COMMIT and ABORT markers of
// a data directory copied from Kafka go once their transactions' data is
// gone and delete.retention.ms has passed since a pass found them alone
// (KIP-534's delete horizon), with the ABORT's .txnindex entry, while
// lines are appended through the mount; the directory then passes `segfs
// verify`. segfs kept every marker and .txnindex entry for good.
func TestCompactionRemovesTxnMarkersMounted(t *testing.T) {
	data := t.TempDir()
	pdir := filepath.Join(data, "tm-0")
	txnWriteSegment(t, pdir, 0, []txnBatch{
		{base: 0, pid: 100, seq: 0, values: []string{"committed-1"}, control: -1},
		{base: 1, pid: 200, seq: 0, values: []string{"aborted-1"}, control: -1},
		{base: 2, pid: 100, control: 1},
		{base: 3, pid: 200, control: 0},
	}, [][4]int64{{200, 1, 3, 4}})
	// The producers' state expires (it would keep their last batches).
	m := mntAt(t, data, append([]string{"--producer-id-expiration", "1s"}, cleanerFlags...)...)
	m.ok(`printf 'cleanup.policy=compact\nkey.separator==\nsegment.ms=500\nmin.cleanable.dirty.ratio=0.01\ndelete.retention.ms=500\nfile.delete.delay.ms=0\n' > "$M/tm/config"`)
	markersLeft := func() string {
		logs, _ := filepath.Glob(filepath.Join(pdir, "*.log"))
		out, err := exec.Command("timeout", append([]string{"60", segfsBin, "dump-log"}, logs...)...).CombinedOutput()
		if err != nil {
			return "dump-log: " + err.Error() // a segment swapped away meanwhile
		}
		var left []string
		for _, l := range mntLines(string(out)) {
			if strings.Contains(l, "isControl: true") {
				left = append(left, l)
			}
		}
		if txn, _ := filepath.Glob(filepath.Join(pdir, "*.txnindex")); len(txn) > 0 {
			left = append(left, txn...)
		}
		return strings.Join(left, "\n")
	}
	if left := markersLeft(); strings.Count(left, "isControl: true") != 2 {
		t.Fatalf("before: markers %s", left)
	}
	// Each line written makes the log dirty for the next pass; the
	// segment rolls after segment.ms.
	i := 0
	var left string
	if !mntWaitFor(60*time.Second, func() bool {
		i++
		m.ok(fmt.Sprintf(`echo k=%d >> "$M/tm/0/data"`, i))
		left = markersLeft()
		return left == ""
	}) {
		t.Fatalf("after %d lines and 60 s, still there:\n%s\n%s", i, left, m.daemonLog())
	}
	m.unmount()
	if out, err := exec.Command("timeout", "60", segfsBin, "verify", data).CombinedOutput(); err != nil {
		t.Fatalf("segfs verify: %v\n%s", err, out)
	}
	m = mntAt(t, data, cleanerFlags...)
	if got := mntLines(m.ok(`cat "$M/tm/0/data"`)); len(got) == 0 || got[len(got)-1] != fmt.Sprintf("k=%d", i) || strings.Contains(strings.Join(got, "\n"), "committed-1") || strings.Contains(strings.Join(got, "\n"), "aborted-1") {
		t.Fatalf("after a remount data reads %q", got)
	}
}
