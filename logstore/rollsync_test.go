package logstore

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// blockSyncs makes the fsync of segment data wait until the returned
// release function is called, and records which files were synced.
func blockSyncs(t *testing.T) (release func(), synced func() []string) {
	t.Helper()
	orig := syncFile
	gate := make(chan struct{})
	var mu sync.Mutex
	var names []string
	syncFile = func(f *os.File) error {
		<-gate
		mu.Lock()
		names = append(names, filepath.Base(f.Name()))
		mu.Unlock()
		return orig(f)
	}
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(func() { release(); syncFile = orig })
	return release, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), names...)
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

// TestRollSyncOffAppendPath: the append that rolls a segment does not wait
// for the fsync of the segment it sealed (Kafka schedules that flush
// asynchronously too; here it stalled the writer ~0.6 s per GiB rolled).
// The recovery point moves past the rolled segments only once the roll
// syncer has synced them.
func TestRollSyncOffAppendPath(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	defer s.Close()
	tp, _ := s.CreateTopic("r", 1, map[string]string{"segment.bytes": "1000"})
	p, _ := tp.Partition(0)
	release, synced := blockSyncs(t)

	appendUntilSegments(t, p, 3, release)
	st := p.Status()
	if st.RecoveryPoint != 0 {
		t.Fatalf("recovery point %d before any rolled segment was synced", st.RecoveryPoint)
	}
	activeBase := p.active().base
	release()
	waitFor(t, "the roll syncer to move the recovery point", func() bool {
		return p.Status().RecoveryPoint == activeBase
	})
	got := strings.Join(synced(), " ")
	for _, seg := range segsOf(p)[:2] {
		name := filepath.Base(seg.path(logSuffix))
		if !strings.Contains(got, name) {
			t.Errorf("rolled segment %s not synced (synced: %s)", name, got)
		}
	}
	if strings.Contains(got, filepath.Base(p.active().path(logSuffix))) {
		t.Errorf("the active segment was synced by the roll syncer: %s", got)
	}
}

// TestFlushWaitsForRolledSegments: a flush (fsync of data, flush.ms,
// flush.messages) claims everything before the log end durable, so it
// syncs rolled segments the roll syncer has not reached yet, or waits for
// it to finish them.
func TestFlushWaitsForRolledSegments(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	defer s.Close()
	tp, _ := s.CreateTopic("r", 1, map[string]string{"segment.bytes": "1000"})
	p, _ := tp.Partition(0)
	release, synced := blockSyncs(t)
	appendUntilSegments(t, p, 2, release)
	flushed := make(chan error, 1)
	go func() { flushed <- p.Flush() }()
	select {
	case err := <-flushed:
		t.Fatalf("flush returned (%v) before the rolled segment was synced", err)
	case <-time.After(200 * time.Millisecond):
	}
	release()
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if st := p.Status(); st.RecoveryPoint != p.LogEndOffset() {
		t.Fatalf("recovery point %d after a flush, log end %d", st.RecoveryPoint, p.LogEndOffset())
	}
	rolled := filepath.Base(segsOf(p)[0].path(logSuffix))
	if !strings.Contains(strings.Join(synced(), " "), rolled) {
		t.Fatalf("flush returned without %s synced", rolled)
	}
}

// TestCrashBeforeRollSync: after a crash that came before a rolled segment
// was synced, the next open rescans that segment (the recovery point was
// never moved past it), so a tail the crash tore is truncated and the
// segments after it, which cannot follow a hole, are deleted, as Kafka does.
// The failed fsync also fences the partition.
func TestCrashBeforeRollSync(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, newClock())
	tp, _ := s.CreateTopic("c", 1, map[string]string{"segment.bytes": "1000"})
	p, _ := tp.Partition(0)
	orig := syncFile
	syncFile = func(*os.File) error { return syscall.EIO }
	defer func() { syncFile = orig }()
	line := []byte(strings.Repeat("z", 99) + "\n")
	var fenced error
	for i := 0; i < 200 && fenced == nil; i++ {
		_, _, fenced = p.AppendLines(line)
		time.Sleep(time.Millisecond)
	}
	if fenced == nil {
		t.Fatal("a failed fsync of a rolled segment did not fence the partition")
	}
	first := segsOf(p)[0]
	firstEnd, firstNext := first.size.Load(), first.next.Load()
	if n := len(segsOf(p)); n < 2 {
		t.Fatalf("%d segments, want a rolled one", n)
	}
	if err := s.writeCheckpoints(); err != nil {
		t.Fatal(err)
	}
	s.abandon()
	syncFile = orig

	// The crash tore the last batch of the rolled segment.
	if err := os.Truncate(first.path(logSuffix), firstEnd-10); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, newClock())
	defer s.Close()
	p = mustPartition(t, s, "c")
	if n := len(segsOf(p)); n != 1 {
		t.Fatalf("%d segments after recovery, want the truncated one only", n)
	}
	if got, want := p.LogEndOffset(), firstNext-1; got != want {
		t.Fatalf("log end %d after recovery, want %d (the rolled segment without its torn batch)", got, want)
	}
}

func segsOf(p *Partition) []*segment {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return append([]*segment(nil), p.segs...)
}

// appendUntilSegments appends lines until p has n segments; it fails if the
// appends wait for blocked fsyncs (release unblocks them on the way out).
func appendUntilSegments(t *testing.T, p *Partition, n int, release func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		line := []byte(strings.Repeat("x", 99) + "\n")
		for p.Status().Segments < n {
			if _, _, err := p.AppendLines(line); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		release()
		t.Fatal("appends that rolled waited for the fsync of the rolled segment")
	}
}
