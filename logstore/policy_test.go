package logstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/segfs/segfs/logstore/record"
)

func TestFlushMessagesMovesRecoveryPoint(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	defer s.Close()
	tp, _ := s.CreateTopic("f", 1, map[string]string{"flush.messages": "3"})
	p, _ := tp.Partition(0)
	p.AppendLines([]byte("a\nb\n"))
	if statusOf(t, p).RecoveryPoint != 0 {
		t.Fatal("flushed before flush.messages was reached")
	}
	p.AppendLines([]byte("c\n"))
	if got := statusOf(t, p).RecoveryPoint; got != 3 {
		t.Fatalf("recovery point %d after 3 messages", got)
	}
	p.AppendLines([]byte("d\n"))
	if err := p.Flush(); err != nil || statusOf(t, p).RecoveryPoint != 4 {
		t.Fatalf("explicit flush: %v %d", err, statusOf(t, p).RecoveryPoint)
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
	if n := statusOf(t, p).Segments; n < 3 {
		t.Fatalf("segment.ms=10 gave %d segments", n)
	}
	// A full offset index rolls: 16 bytes hold two entries.
	tp2, _ := s.CreateTopic("idx", 1, map[string]string{"segment.index.bytes": "16", "index.interval.bytes": "0"})
	p2, _ := tp2.Partition(0)
	for i := 0; i < 20; i++ {
		p2.AppendLines([]byte(fmt.Sprintf("%d\n", i)))
	}
	if n := statusOf(t, p2).Segments; n < 5 {
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
	// DeleteRecords moves nothing on a fenced partition (no test tried):
	// its log start and checkpoint stay.
	if start, err := p.DeleteRecords(1); !errors.Is(err, ErrFenced) || p.LogStartOffset() != 0 {
		t.Fatalf("DeleteRecords after fence: start %d %v, log start %d; want ErrFenced and 0", start, err, p.LogStartOffset())
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

// TestFsyncFailureFencesRetry: an idempotent producer's batch is appended
// but its flush (flush.messages=1) fails; the client retries the same
// batch. The retry must fail like the first attempt, not be answered as a
// duplicate of records that may never reach the disk (the fault suite's F9
// lost an acks=-1 record this way when the backing filesystem went
// read-only).
func TestFsyncFailureFencesRetry(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	tp, _ := s.CreateTopic("fence", 1, map[string]string{"flush.messages": "1"})
	p, _ := tp.Partition(0)
	var bl record.Builder
	spec := record.DefaultSpec()
	spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence = 9, 0, 0
	bl.Reset(spec)
	bl.Add(time.Now().UnixMilli(), nil, []byte("acked only if durable"), nil)
	b, err := bl.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	orig := syncFile
	syncFile = func(*os.File) error { return syscall.EIO }
	_, err = p.AppendBatch(append([]byte(nil), b...))
	syncFile = orig
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("append whose flush failed: %v", err)
	}
	res, err := p.AppendBatch(append([]byte(nil), b...))
	if err == nil || res.Duplicate {
		t.Fatalf("the retry was acknowledged (%+v, %v): its records were never flushed", res, err)
	}
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("retry: %v, want the fence", err)
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

// TestCorruptBaseOffset damages the one batch field outside the CRC, the
// base offset, in a sealed segment: reads report corruption instead of
// silently dropping or misnumbering records (found by the fault suite).
func TestCorruptBaseOffset(t *testing.T) {
	for _, flip := range []struct {
		name string
		at   int
		mask byte
	}{{"sign bit", 0, 0x80}, {"high bit", 2, 0x01}, {"low bit", 7, 0x04}} {
		t.Run(flip.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, newClock())
			tp, _ := s.CreateTopic("bo", 1, map[string]string{"segment.bytes": "3000"})
			p, _ := tp.Partition(0)
			for i := 0; i < 200; i++ {
				p.AppendLines([]byte(fmt.Sprintf("value %d\n", i)))
			}
			s.Close()
			path := filepath.Join(dir, "bo-0", "00000000000000000000.log")
			b, _ := os.ReadFile(path)
			b[flip.at] ^= flip.mask
			os.WriteFile(path, b, 0o644)
			s = openStore(t, dir, newClock())
			defer s.Close()
			p, _ = s.Partition("bo", 0)
			v, err := p.Text(0)
			if err != nil {
				return // refusing to open the view is an error report too
			}
			defer v.Close()
			buf := make([]byte, v.Size())
			if _, err := v.ReadAt(buf, 0); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("read over a damaged base offset: %v", err)
			}
		})
	}
}

// TestAppendSplitsAtSegmentBytes writes more short lines at once than fit
// in one segment: the write is split into batches that each fit.
func TestAppendSplitsAtSegmentBytes(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	defer s.Close()
	tp, _ := s.CreateTopic("split", 1, map[string]string{"segment.bytes": "4096"})
	p, _ := tp.Partition(0)
	var text strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&text, "line %d\n", i)
	}
	if _, last, err := p.AppendLines([]byte(text.String())); err != nil || last != 999 {
		t.Fatalf("append: %d %v", last, err)
	}
	if got := textOf(t, p, 0); got != text.String() {
		t.Fatal("text differs")
	}
	if n := statusOf(t, p).Segments; n < 3 {
		t.Fatalf("%d segments", n)
	}
	if _, _, err := p.AppendLines([]byte(strings.Repeat("x", 5000) + "\n")); !errors.Is(err, ErrBatchTooLarge) {
		t.Fatalf("a line larger than a segment: %v", err)
	}
}

// TestCorruptBatchRereadStillFails reads a damaged batch twice: the second
// read must fail too, not resume after the damage (found by the fault
// suite: the sequential-read cursor had moved past the bad batch).
func TestCorruptBatchRereadStillFails(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, newClock())
	tp, _ := s.CreateTopic("rr", 1, map[string]string{"segment.bytes": "4096"})
	p, _ := tp.Partition(0)
	for i := 0; i < 100; i++ {
		p.AppendLines([]byte(fmt.Sprintf("line %d\nline %d b\n", i, i)))
	}
	s.Close()
	path := filepath.Join(dir, "rr-0", "00000000000000000000.log")
	b, _ := os.ReadFile(path)
	b[70] ^= 4
	os.WriteFile(path, b, 0o644)
	s = openStore(t, dir, newClock())
	defer s.Close()
	p, _ = s.Partition("rr", 0)
	v, err := p.Text(0)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	buf := make([]byte, 4096)
	for i := 0; i < 3; i++ {
		if n, err := v.ReadAt(buf, 0); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("read %d at 0: %d bytes, %v", i, n, err)
		}
	}
}
