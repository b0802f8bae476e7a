package tests

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// produceReadHook signals every Produce response a kgo client reads, once
// armed.
type produceReadHook struct {
	armed atomic.Bool
	read  chan struct{}
}

func (h *produceReadHook) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, _ error) {
	if key == 0 && h.armed.Load() {
		select {
		case h.read <- struct{}{}:
		default:
		}
	}
}

// TestKafkaProduceDiskFull: a franz-go producer appends to a mount whose
// disk is full. Its record is refused, but with Kafka's retriable
// KAFKA_STORAGE_ERROR, so the client keeps retrying and the record lands,
// once, when space returns — as it does through the mount (ENOSPC, then
// success). An UNKNOWN_SERVER_ERROR made every producer drop its records
// at once.
func TestKafkaProduceDiskFull(t *testing.T) {
	mntRequireFuse(t)
	disk := faultTmpfs(t, "8m")
	filler := filepath.Join(disk, "filler")
	if err := os.WriteFile(filler, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := kafkaFreeAddr(t)
	m := mntAt(t, filepath.Join(disk, "data"), "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/full" && echo segment.bytes=1048576 > "$M/full/config"`)

	hook := &produceReadHook{read: make(chan struct{}, 1)}
	// franz-go retries a produce refused with KAFKA_STORAGE_ERROR after
	// a metadata refresh, at most every 5 s by default
	// (metadata.min.age): 200 ms here, or the retry once space is back
	// waits out most of those 5 s.
	cl := kafkaClient(t, addr, kgo.WithHooks(hook), kgo.RetryTimeout(90*time.Second), kgo.MetadataMinAge(200*time.Millisecond))
	// Before the disk fills: the producer id is allocated and the topic
	// known, so what follows is only about appending.
	kafkaProduce(t, cl, "full", 0, "before")

	const line = "0123456789abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopq"
	m.fails(`yes `+line+` | dd of="$M/full/0/data" oflag=append conv=notrunc bs=4000 iflag=fullblock status=none`, "No space left on device")

	// 64 KB cannot fit in what a refused 4000-byte write left.
	big := "after-" + strings.Repeat("x", 64<<10)
	hook.armed.Store(true)
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		done <- cl.ProduceSync(ctx, &kgo.Record{Topic: "full", Partition: 0, Value: []byte(big)}).FirstErr()
	}()
	// The server has answered the produce on the full disk: free space.
	select {
	case <-hook.read:
	case err := <-done:
		t.Fatalf("produce on a full disk returned before any Produce response was read: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("no Produce response within 60s")
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("produce failed for good on a disk that was full for a moment (want a retriable error, then success): %v", err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("produce did not finish within 90s of freeing space")
	}
	if got := m.ok(`tail -n1 "$M/full/0/data" | cut -c1-6; grep -c '^after-' "$M/full/0/data"`); got != "after-\n1\n" {
		t.Fatalf("after freeing space: last record and count of it %q, want it once at the end", got)
	}
}
