package logstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAddPartitionsMarkedInTopicsFile: while AddPartitions makes a topic's
// new partitions, the topics file records the count the topic had
// (adding_from), so that a crash part way is rolled back at the next open
// (TestAddPartitionsInterruptedRolledBackAtOpen); the new partitions are
// published, and the mark removed, only once all of them are made. A
// failed addition removes the mark with the partitions.
func TestAddPartitionsMarkedInTopicsFile(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	defer func() { s.Close() }()
	tp, err := s.CreateTopic("ev", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if doc := readTopicsDoc(t, dir); doc.Topics["ev"].AddingFrom != 0 {
		t.Fatalf("a new topic is marked adding_from %d", doc.Topics["ev"].AddingFrom)
	}

	// Partition 3's metadata is written through a FIFO whose buffer is
	// full: the addition blocks there, after partitions 1 and 2, until
	// the test drains it, and then fails (fsync of a FIFO is EINVAL).
	if err := os.Mkdir(filepath.Join(dir, "ev-3"), 0o755); err != nil {
		t.Fatal(err)
	}
	pipe := fullFIFO(t, filepath.Join(dir, "ev-3", "partition.metadata.tmp"))
	added := make(chan error, 1)
	go func() { added <- tp.AddPartitions(5) }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "ev-2", segmentName(0)+logSuffix)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("partition ev-2 never appeared")
		}
	}
	if got := readTopicsDoc(t, dir).Topics["ev"].AddingFrom; got != 1 {
		t.Errorf("topics file during the addition: ev adding_from %d, want 1", got)
	}
	if n := tp.PartitionCount(); n != 1 {
		t.Errorf("during the addition ev has %d partitions, want 1 until all are made", n)
	}
	drainFIFO(pipe)
	if err := <-added; err == nil {
		t.Fatal("an addition through a FIFO succeeded")
	}
	if n := tp.PartitionCount(); n != 1 {
		t.Errorf("after the failed addition ev has %d partitions, want 1", n)
	}
	if got := readTopicsDoc(t, dir).Topics["ev"].AddingFrom; got != 0 {
		t.Errorf("topics file after the failed addition: ev adding_from %d, want none", got)
	}

	if err := tp.AddPartitions(3); err != nil {
		t.Fatal(err)
	}
	if _, err := tp.AddPartition(3); err != nil {
		t.Fatal(err)
	}
	if n := tp.PartitionCount(); n != 4 {
		t.Fatalf("ev has %d partitions, want 4", n)
	}
	if got := readTopicsDoc(t, dir).Topics["ev"].AddingFrom; got != 0 {
		t.Errorf("topics file after the additions: ev adding_from %d, want none", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, nil)
	if tp, err := s.Topic("ev"); err != nil || tp.PartitionCount() != 4 {
		t.Fatalf("after reopening: %v", err)
	}
}

// TestAddPartitionsInterruptedRolledBackAtOpen: an addition of partitions
// that a crash interrupted (kill -9 during a CreatePartitions, whose client
// got no answer) is undone at the next open: the partition directories
// from the recorded count on are removed, whatever they hold (whole, half
// made, or with a gap a crash during a rollback left), the topic keeps its
// records and its count, and the addition can be made again. The next open
// used to adopt the partitions made so far: the topic had a partition
// count nobody asked for. A recorded count whose partitions are not all
// there refuses the directory, naming the missing one.
func TestAddPartitionsInterruptedRolledBackAtOpen(t *testing.T) {
	for _, tc := range []struct {
		name   string
		remove []string // what the crash had not made (or had removed) yet
	}{
		{"half made", []string{"ev-3/" + segmentName(0) + logSuffix, "ev-3/" + segmentName(0) + indexSuffix}},
		{"all made", nil},
		{"gap", []string{"ev-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, nil)
			tp, err := s.CreateTopic("ev", 1, map[string]string{"cleanup.policy": "compact", "key.separator": "="})
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := mustPartition(t, s, "ev").AppendLines([]byte("k=kept\n")); err != nil {
				t.Fatal(err)
			}
			if err := tp.AddPartitions(4); err != nil {
				t.Fatal(err)
			}
			s.abandon()
			// What a crash leaves: the topics file marks the addition
			// from 1, partitions 1 to 3 are there, or some of them.
			setAddingFrom(t, dir, "ev", 1)
			for _, r := range tc.remove {
				if err := os.RemoveAll(filepath.Join(dir, r)); err != nil {
					t.Fatal(err)
				}
			}

			s = openStore(t, dir, nil)
			defer func() { s.Close() }()
			tp, err = s.Topic("ev")
			if err != nil {
				t.Fatal(err)
			}
			if n := tp.PartitionCount(); n != 1 {
				t.Errorf("after the open ev has %d partitions, want the 1 it had before the interrupted addition", n)
			}
			for n := 1; n <= 3; n++ {
				if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("ev-%d", n))); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("ev-%d after the open: %v, want it removed", n, err)
				}
			}
			if got := readTopicsDoc(t, dir).Topics["ev"]; got.AddingFrom != 0 || got.Overrides["cleanup.policy"] != "compact" {
				t.Errorf("topics file after the open: %+v, want ev without adding_from, with its config", got)
			}
			if end := mustPartition(t, s, "ev").LogEndOffset(); end != 1 {
				t.Errorf("ev-0 ends at %d after the open, want 1", end)
			}
			if err := tp.AddPartitions(4); err != nil {
				t.Fatalf("adding the partitions again: %v", err)
			}
			if n := tp.PartitionCount(); n != 4 {
				t.Fatalf("after adding again ev has %d partitions", n)
			}
		})
	}

	// The partitions before the recorded count must all be there.
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	if _, err := s.CreateTopic("ev", 2, nil); err != nil {
		t.Fatal(err)
	}
	s.abandon()
	setAddingFrom(t, dir, "ev", 3)
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), "ev-2 is missing") {
		t.Fatalf("opening with adding_from 3 and partitions ev-0, ev-1: %v, want an error naming ev-2", err)
	}
}

// setAddingFrom rewrites dir's topics file with topic marked as being
// grown from n partitions.
func setAddingFrom(t *testing.T, dir, topic string, n int32) {
	t.Helper()
	doc := readTopicsDoc(t, dir)
	e := doc.Topics[topic]
	e.AddingFrom = n
	doc.Topics[topic] = e
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, topicsFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// fullFIFO makes a FIFO at path and fills its buffer: a write to it blocks
// until drainFIFO. It returns the test's end of it, closed at cleanup.
func fullFIFO(t *testing.T, path string) int {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	// Raw system calls: an *os.File would wait in Go's poller instead of
	// answering EAGAIN.
	pipe, err := syscall.Open(path, syscall.O_RDWR|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(pipe) })
	chunk := make([]byte, 4096)
	for {
		if _, err := syscall.Write(pipe, chunk); err != nil {
			if !errors.Is(err, syscall.EAGAIN) {
				t.Fatal(err)
			}
			return pipe
		}
	}
}

// drainFIFO empties a FIFO fullFIFO filled, which lets its writer go on.
func drainFIFO(pipe int) {
	chunk := make([]byte, 4096)
	for {
		if _, err := syscall.Read(pipe, chunk); err != nil {
			return
		}
	}
}
