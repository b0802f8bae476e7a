package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer a logger can write from any goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestLoadLogEndBelowCheckpointedLogStart: DeleteRecords(20) wrote the
// log-start checkpoint, then a power cut lost the unflushed records 10-19,
// so the segments end at 10, below the log start 20. As Kafka's LogLoader
// does, the load deletes every segment and the producer state and starts
// the log afresh at 20, with a warning naming the partition and both
// offsets. It used to move the log start back to 10, so the next record
// got offset 10 again and a consumer that had committed 15 skipped it or
// read it as another; an idempotent producer's retry of a lost batch was
// answered as a duplicate at an offset below the log start.
func TestLoadLogEndBelowCheckpointedLogStart(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	tp, err := s.CreateTopic("lost", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tp.Partition(0)
	const pid = 42
	batch := func(seq int32) []byte {
		return idempotentBatch(t, pid, seq, time.Now(), []byte{'a' + byte(seq)})
	}
	for seq := int32(0); seq < 10; seq++ {
		if _, err := p.AppendBatch(batch(seq)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close() // durable, with a producer snapshot at 10
	segLog := filepath.Join(dir, "lost-0", segmentName(0)+logSuffix)
	fi, err := os.Stat(segLog)
	if err != nil {
		t.Fatal(err)
	}
	durable := fi.Size()

	s = openStore(t, dir, nil)
	p = mustPartition(t, s, "lost")
	for i := 10; i < 20; i++ {
		if _, _, err := p.AppendLines([]byte(fmt.Sprintf("line %d\n", i))); err != nil {
			t.Fatal(err)
		}
	}
	if start, err := p.DeleteRecords(20); err != nil || start != 20 {
		t.Fatalf("DeleteRecords(20): %d %v", start, err)
	}
	// The power cut: the checkpoint is on disk, records 10-19 are not.
	s.abandon()
	if err := os.Truncate(segLog, durable); err != nil {
		t.Fatal(err)
	}

	var logs lockedBuffer
	s, err = Open(dir, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	p = mustPartition(t, s, "lost")
	st := statusOf(t, p)
	if st.LogStartOffset != 20 || st.LogEndOffset != 20 || st.Segments != 1 || st.ActiveSegmentBaseOffset != 20 || st.SizeBytes != 0 {
		t.Fatalf("after the load: %+v, want the log restarted empty at 20", st)
	}
	warn := ""
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "level=WARN") && strings.Contains(l, "checkpointed log start") {
			warn = l
		}
	}
	for _, want := range []string{"topic=lost", "partition=0", "log_end_offset=10", "log_start_offset=20"} {
		if !strings.Contains(warn, want) {
			t.Errorf("the load's warning %q does not say %s", warn, want)
		}
	}
	if _, err := os.Stat(segLog); err == nil {
		t.Error("the segment below the log start is still on disk")
	}
	if snaps := listSnapshots(filepath.Join(dir, "lost-0")); len(snaps) > 0 && snaps[0] < 20 {
		t.Errorf("producer snapshots below the log start remain: %v", snaps)
	}
	if _, err := p.Text(10); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Errorf("Text(10) below the log start: %v", err)
	}
	if got := textOf(t, p, 20); got != "" {
		t.Errorf("the log reads %q, want nothing", got)
	}
	// The producer's state went with the records: its retry of seq 9 is a
	// new batch at the log end, not a duplicate below the log start.
	if res, err := p.AppendBatch(batch(9)); err != nil || res.Duplicate || res.BaseOffset != 20 {
		t.Fatalf("retry of seq 9 after the load: %+v %v, want a new batch at 20", res, err)
	}
	if base, _, err := p.AppendLines([]byte("next\n")); err != nil || base != 21 {
		t.Fatalf("next line at %d (%v), want 21", base, err)
	}
	s.Close()
	s = openStore(t, dir, nil)
	p = mustPartition(t, s, "lost")
	if p.LogStartOffset() != 20 || p.LogEndOffset() != 22 || textOf(t, p, 20) != "j\nnext\n" {
		t.Fatalf("after reopening: start %d end %d", p.LogStartOffset(), p.LogEndOffset())
	}
}
