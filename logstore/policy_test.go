package logstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestFlushMessagesMovesRecoveryPoint(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	defer s.Close()
	tp, _ := s.CreateTopic("f", 1, map[string]string{"flush.messages": "3"})
	p, _ := tp.Partition(0)
	p.AppendLines([]byte("a\nb\n"))
	if p.Status().RecoveryPoint != 0 {
		t.Fatal("flushed before flush.messages was reached")
	}
	p.AppendLines([]byte("c\n"))
	if got := p.Status().RecoveryPoint; got != 3 {
		t.Fatalf("recovery point %d after 3 messages", got)
	}
	p.AppendLines([]byte("d\n"))
	if err := p.Flush(); err != nil || p.Status().RecoveryPoint != 4 {
		t.Fatalf("explicit flush: %v %d", err, p.Status().RecoveryPoint)
	}
}

func TestRollRules(t *testing.T) {
	clock := newClock()
	s := openStore(t, t.TempDir(), clock)
	defer s.Close()
	// segment.ms: record time since the first batch (the clock moves 1 ms
	// per reading, so 50 appends span more than 10 ms).
	tp, _ := s.CreateTopic("ms", 1, map[string]string{"segment.ms": "10"})
	p, _ := tp.Partition(0)
	for i := 0; i < 50; i++ {
		p.AppendLines([]byte("x\n"))
	}
	if n := p.Status().Segments; n < 3 {
		t.Fatalf("segment.ms=10 gave %d segments", n)
	}
	// A full offset index rolls: 16 bytes hold two entries.
	tp2, _ := s.CreateTopic("idx", 1, map[string]string{"segment.index.bytes": "16", "index.interval.bytes": "0"})
	p2, _ := tp2.Partition(0)
	for i := 0; i < 20; i++ {
		p2.AppendLines([]byte(fmt.Sprintf("%d\n", i)))
	}
	if n := p2.Status().Segments; n < 5 {
		t.Fatalf("index-full roll gave %d segments", n)
	}
	if got := textOf(t, p2, 0); len(got) != 50 {
		t.Fatalf("text across index-full rolls: %q", got)
	}
}

// TestFsyncFailureFences injects a failed fsync: the partition refuses
// appends from then on, and Flush never reports a later success.
func TestFsyncFailureFences(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	tp, _ := s.CreateTopic("fence", 1, nil)
	p, _ := tp.Partition(0)
	p.AppendLines([]byte("before\n"))
	orig := syncFile
	syncFile = func(*os.File) error { return syscall.EIO }
	err := p.Flush()
	syncFile = orig
	if !errors.Is(err, ErrFenced) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("flush: %v", err)
	}
	if err := p.Flush(); !errors.Is(err, ErrFenced) {
		t.Fatalf("a later flush reported %v", err)
	}
	if _, _, err := p.AppendLines([]byte("after\n")); !errors.Is(err, ErrFenced) {
		t.Fatalf("append after fence: %v", err)
	}
	if got := textOf(t, p, 0); got != "before\n" {
		t.Fatalf("reads go on: %q", got)
	}
	if err := s.Close(); err == nil {
		t.Fatal("Close must report the fenced partition and skip the clean marker")
	}
	if _, err := os.Stat(s.dir + "/" + cleanShutdownFile); !os.IsNotExist(err) {
		t.Fatal("clean-shutdown marker written despite a fenced partition")
	}
}

// TestRecoveryAcrossChunks recovers a segment larger than the recovery
// pipeline's read chunks, with batches straddling chunk boundaries, one
// batch larger than a chunk, and a torn tail.
func TestRecoveryAcrossChunks(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, newClock())
	tp, _ := s.CreateTopic("big", 1, map[string]string{"max.message.bytes": "20000000"})
	p, _ := tp.Partition(0)
	var want []byte
	add := func(text string) {
		if _, _, err := p.AppendLines([]byte(text)); err != nil {
			t.Fatal(err)
		}
		want = append(want, text...)
	}
	for i := 0; i < 300; i++ {
		add(fmt.Sprintf("%d %s\n", i, strings.Repeat("a", 1000+i*37)))
		if i == 150 {
			add(strings.Repeat("B", 6<<20) + "\n") // larger than a chunk
		}
	}
	complete := p.active().size.Load()
	add("torn away\n")
	s.abandon()
	logPath := filepath.Join(dir, "big-0", "00000000000000000000.log")
	if err := os.Truncate(logPath, complete+30); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, newClock())
	defer s.Close()
	p, _ = s.Partition("big", 0)
	got := textOf(t, p, 0)
	if got != string(want[:len(want)-len("torn away\n")]) {
		t.Fatalf("recovered %d bytes of text, want %d", len(got), len(want)-10)
	}
	if fi, _ := os.Stat(logPath); fi.Size() != complete {
		t.Fatalf("log truncated to %d, want %d", fi.Size(), complete)
	}
}
