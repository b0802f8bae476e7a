package tests

import (
	"bufio"
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// One log, two doors: `segfs mount --kafka-listen` serves the mounted data
// directory over the Kafka protocol. What a producer sends shows in `cat
// data` and in a running `tail -f data`; a line appended with `echo >>` is
// fetchable by the very next Fetch; compressed batches read as text.
func TestKafkaMountTwoDoors(t *testing.T) {
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/orders"`)

	// tail -f runs before anything is produced.
	tail := exec.Command("timeout", "60", "tail", "-n", "+1", "-f", m.path("orders", "0", "data"))
	stdout, err := tail.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := tail.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tail.Process.Kill(); tail.Wait() })
	tailLines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			tailLines <- sc.Text()
		}
		close(tailLines)
	}()

	// Produce over the wire, uncompressed and compressed.
	plain := kafkaClient(t, addr)
	kafkaProduce(t, plain, "orders", 0, "wire 1", "wire 2")
	zstd := kafkaClient(t, addr, kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	kafkaProduce(t, zstd, "orders", 0, "zstd 3", "zstd 4")
	gzip := kafkaClient(t, addr, kgo.ProducerBatchCompression(kgo.GzipCompression()))
	kafkaProduce(t, gzip, "orders", 0, "gzip 5")
	produced := time.Now()
	want := []string{"wire 1", "wire 2", "zstd 3", "zstd 4", "gzip 5"}

	// cat data on the mount shows them (the design allows up to a second;
	// the bound here is generous so a loaded CI box does not flake, and
	// the time taken is logged).
	var got []string
	if !mntWaitFor(10*time.Second, func() bool {
		got = mntLines(m.ok(`cat "$M/orders/0/data"`))
		return slices.Equal(got, want)
	}) {
		t.Fatalf("cat data: %q, want %q", got, want)
	}
	t.Logf("produced records visible to cat after %v", time.Since(produced))

	// The running tail -f sees them too.
	var tailed []string
	deadline := time.After(20 * time.Second)
	for len(tailed) < len(want) {
		select {
		case l, ok := <-tailLines:
			if !ok {
				t.Fatalf("tail -f ended after %q", tailed)
			}
			tailed = append(tailed, l)
		case <-deadline:
			t.Fatalf("tail -f printed %q, want %q", tailed, want)
		}
	}
	if !slices.Equal(tailed, want) {
		t.Fatalf("tail -f printed %q, want %q", tailed, want)
	}
	t.Logf("produced records seen by tail -f after %v", time.Since(produced))

	// A line appended through the mount is in the very next Fetch
	// (max_wait 0: no long poll to hide a delay).
	m.ok(`echo "from the shell" >> "$M/orders/0/data"`)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, 1<<20, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "orders"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 5, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	resp, err := req.RequestWith(ctx, plain)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.HighWatermark != 6 {
		t.Fatalf("fetch after echo: error %d, high watermark %d, want 6", p.ErrorCode, p.HighWatermark)
	}
	part, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: "orders", Partition: 0, Offset: 5}, &p, kgo.DefaultDecompressor(), nil)
	var fetched []string
	for _, r := range part.Records {
		fetched = append(fetched, string(r.Value))
	}
	if !slices.Equal(fetched, []string{"from the shell"}) {
		t.Fatalf("consumed %q after echo >> data", fetched)
	}
	if got := mntLines(m.ok(`cat "$M/orders/0/data"`)); !slices.Equal(got, append(want, "from the shell")) {
		t.Fatalf("cat data: %q", got)
	}
}
