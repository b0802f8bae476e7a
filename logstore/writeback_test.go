package logstore

import (
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

type kickRange struct{ off, n int64 }

// hookWriteback replaces startWriteback; gate, if not nil, holds every call
// until it is closed.
func hookWriteback(t *testing.T, gate chan struct{}) func() []kickRange {
	t.Helper()
	orig := startWriteback
	var mu sync.Mutex
	var got []kickRange
	startWriteback = func(f *os.File, off, n int64) {
		if gate != nil {
			<-gate
		}
		mu.Lock()
		got = append(got, kickRange{off, n})
		mu.Unlock()
		orig(f, off, n)
	}
	t.Cleanup(func() { startWriteback = orig })
	return func() []kickRange {
		mu.Lock()
		defer mu.Unlock()
		return append([]kickRange(nil), got...)
	}
}

// appendBulk appends about n bytes of 100-byte lines, in 128 KiB appends.
func appendBulk(t *testing.T, p *Partition, n int) {
	t.Helper()
	chunk := []byte(strings.Repeat(strings.Repeat("w", 99)+"\n", 1310))
	for written := 0; written < n; written += len(chunk) {
		if _, _, err := p.AppendLines(chunk); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWritebackKickedAhead: a bulk append asks for the writeback of every
// writebackStep bytes of the active segment, in order and without gaps,
// so that the fsync of the roll finds little left to write.
func TestWritebackKickedAhead(t *testing.T) {
	got := hookWriteback(t, nil)
	s := openStore(t, t.TempDir(), newClock())
	defer s.Close()
	tp, _ := s.CreateTopic("w", 1, nil)
	p, _ := tp.Partition(0)
	appendBulk(t, p, 3*writebackStep+writebackStep/2)
	waitFor(t, "three writeback steps", func() bool { return len(got()) >= 3 })
	var next int64
	for i, r := range got() {
		if r.off != next || r.n < writebackStep {
			t.Fatalf("kick %d covers [%d, %d), want a step of at least %d from %d", i, r.off, r.off+r.n, writebackStep, next)
		}
		next = r.off + r.n
	}
	if size := p.active().size.Load(); next > size {
		t.Fatalf("writeback asked up to %d, past the end of the segment %d", next, size)
	}
	// Small appends never reach a step.
	tp2, _ := s.CreateTopic("small", 1, nil)
	p2, _ := tp2.Partition(0)
	before := len(got())
	for range 1000 {
		if _, _, err := p2.AppendLines([]byte("a line\n")); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if n := len(got()); n != before {
		t.Fatalf("%d writeback requests for 7 KB of single lines", n-before)
	}
}

// TestWritebackOffAppendPath: the appender never waits for a writeback:
// with the kicker stuck, bulk appends go on (requests beyond what the
// queue holds are dropped, left to the roll's fsync), and closing the
// store lets go of every segment a request held.
func TestWritebackOffAppendPath(t *testing.T) {
	gate := make(chan struct{})
	got := hookWriteback(t, gate)
	s := openStore(t, t.TempDir(), newClock())
	tp, _ := s.CreateTopic("w", 1, map[string]string{"segment.bytes": "20000000"})
	p, _ := tp.Partition(0)
	done := make(chan struct{})
	go func() {
		defer close(done)
		appendBulk(t, p, 80*writebackStep) // rolls several times
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		close(gate)
		t.Fatal("bulk appends waited for a stuck writeback")
	}
	close(gate)
	waitFor(t, "the queued requests", func() bool { return len(got()) > 0 })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, seg := range segsOf(p) {
		if n := seg.refs.Load(); n != 0 {
			t.Fatalf("segment %d holds %d references after close", seg.base, n)
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func segsOf(p *Partition) []*segment {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return append([]*segment(nil), p.segs...)
}
