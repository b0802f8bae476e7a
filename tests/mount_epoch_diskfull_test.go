package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/segfs/segfs/logstore/record"
)

// TestEpochCheckpointDiskFull: the first append after a remount starts a
// new leader epoch, whose entry goes to leader-epoch-checkpoint before the
// batch is written. On a full disk that write fails: the append through
// the mount fails with ENOSPC and a Produce answers KAFKA_STORAGE_ERROR
// (Kafka's retriable answer for a failed write), with nothing written: the
// records, the checkpoint and the directory are as they were, no .tmp
// left. The batch alone would fit (each segment's last page has room), so
// only the checkpoint refuses it. Once space is back both appends succeed
// with the new epoch's entry in the checkpoint, and a later remount reads
// a consistent log. No test filled the disk before an epoch's first append.
func TestEpochCheckpointDiskFull(t *testing.T) {
	mntRequireFuse(t)
	disk := faultTmpfs(t, "8m")
	data := filepath.Join(disk, "data")
	addr := kafkaFreeAddr(t)
	m := mntAt(t, data, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/f" "$M/k" && seq 1 1000 >> "$M/f/0/data" && seq 1 10 >> "$M/k/0/data"`)
	m.unmount()
	// Room in the last page of each .log for a small batch: the write
	// that must fail is the checkpoint's, in a file of its own.
	for _, d := range []string{"f-0", "k-0"} {
		logs, _ := filepath.Glob(filepath.Join(data, d, "*.log"))
		if len(logs) != 1 {
			t.Fatalf("%s: segments %v", d, logs)
		}
		fi, err := os.Stat(logs[0])
		if err != nil {
			t.Fatal(err)
		}
		if slack := 4096 - fi.Size()%4096; slack < 200 || slack == 4096 {
			t.Fatalf("%s: %d bytes free in the last page of %s, the test wants room for a batch", d, slack, logs[0])
		}
	}
	ckF := readFile(t, filepath.Join(data, "f-0", "leader-epoch-checkpoint"))
	ckK := readFile(t, filepath.Join(data, "k-0", "leader-epoch-checkpoint"))

	m.mount("--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	filler := filepath.Join(disk, "filler")
	exec.Command("dd", "if=/dev/zero", "of="+filler, "bs=4k", "status=none").Run()
	if out, _ := exec.Command("df", "--output=avail", disk).Output(); len(strings.Fields(string(out))) != 2 || strings.Fields(string(out))[1] != "0" {
		t.Fatalf("the disk is not full: %s", out)
	}

	m.fails(`echo 1001 >> "$M/f/0/data"`, "No space left on device")
	produce := func() int16 {
		t.Helper()
		var bl record.Builder
		bl.Reset(record.DefaultSpec())
		bl.Add(time.Now().UnixMilli(), nil, []byte("11"), nil)
		batch, err := bl.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = 9, -1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "k"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = 0, batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := kafkaRawRequest(t, addr, req).(*kmsg.ProduceResponse)
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if code := produce(); code != kerr.KafkaStorageError.Code {
		t.Fatalf("Produce on a full disk before the epoch's entry is written: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
	}
	if got := m.ok(`wc -l < "$M/f/0/data"; tail -n1 "$M/f/0/data"; wc -l < "$M/k/0/data"; tail -n1 "$M/k/0/data"`); got != "1000\n1000\n10\n10\n" {
		t.Fatalf("after the refused appends the logs read %q", got)
	}
	for d, want := range map[string]string{"f-0": ckF, "k-0": ckK} {
		if got := readFile(t, filepath.Join(data, d, "leader-epoch-checkpoint")); got != want {
			t.Fatalf("%s: the refused append changed the checkpoint from %q to %q", d, want, got)
		}
		if left, _ := filepath.Glob(filepath.Join(data, d, "*.tmp")); len(left) > 0 {
			t.Fatalf("%s: the refused append left %v", d, left)
		}
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	m.ok(`echo 1001 >> "$M/f/0/data"`)
	if code := produce(); code != 0 {
		t.Fatalf("Produce once space is back: %v", kerr.ErrorForCode(code))
	}
	if got := m.ok(`wc -l < "$M/f/0/data"; tail -n1 "$M/f/0/data"; wc -l < "$M/k/0/data"; tail -n1 "$M/k/0/data"`); got != "1001\n1001\n11\n11\n" {
		t.Fatalf("once space is back the logs read %q", got)
	}
	// The first mount was epoch 0, this one is 1, from the first new
	// record on.
	for d, want := range map[string]string{"f-0": "0\n2\n0 0\n1 1000\n", "k-0": "0\n2\n0 0\n1 10\n"} {
		if got := readFile(t, filepath.Join(data, d, "leader-epoch-checkpoint")); got != want {
			t.Fatalf("%s: checkpoint %q once space is back, want %q", d, got, want)
		}
	}
	m.unmount()
	m.sanityCheck()
	m.mount()
	if got := m.ok(`wc -l < "$M/f/0/data"; wc -l < "$M/k/0/data"`); got != "1001\n11\n" {
		t.Fatalf("after a remount the logs read %q", got)
	}
}
