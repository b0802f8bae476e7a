package logstore

import (
	"errors"
	"os"
	"testing"
	"time"
)

// TestSyncProbeFailureFences: when the filesystem cannot change metadata
// right after an fsync (the probe fails, as on an ext4 whose journal
// aborted under the fsync), the flush fails and the partition is fenced,
// so nothing is acknowledged as durable and nothing more is appended. The
// real case is F9-ro in tests/ (ext4 errors=remount-ro); here the probe's
// descriptor is closed under it.
func TestSyncProbeFailureFences(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	defer s.Close()
	tp, _ := s.CreateTopic("p", 1, map[string]string{"segment.bytes": "1000"})
	p, _ := tp.Partition(0)
	if _, _, err := p.AppendLines([]byte("one\n")); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(); err != nil {
		t.Fatalf("flush with a working probe: %v", err)
	}
	rp := p.Status().RecoveryPoint
	s.probe.f.Close()
	if _, _, err := p.AppendLines([]byte("two\n")); err != nil {
		t.Fatal(err)
	}
	err := p.Flush()
	if err == nil || !errors.Is(err, os.ErrClosed) {
		t.Fatalf("flush with a failed probe: %v, want the probe's error", err)
	}
	if got := p.Status().RecoveryPoint; got != rp {
		t.Fatalf("the recovery point moved to %d on a failed probe (was %d)", got, rp)
	}
	if _, _, err := p.AppendLines([]byte("three\n")); err == nil {
		t.Fatal("append after a failed probe succeeded: the partition is not fenced")
	}
	// The roll syncer moves the recovery point past rolled segments (it
	// fsyncs them off the appender's path): with a failed probe it fences
	// the partition instead, and the recovery point stays put.
	s2 := openStore(t, t.TempDir(), newClock())
	defer s2.Close()
	tp2, _ := s2.CreateTopic("r", 1, map[string]string{"segment.bytes": "200"})
	p2, _ := tp2.Partition(0)
	s2.probe.f.Close()
	var appendErr error
	deadline := time.Now().Add(10 * time.Second)
	for appendErr == nil && time.Now().Before(deadline) {
		_, _, appendErr = p2.AppendLines([]byte("a line of forty bytes or so, to roll it\n"))
		time.Sleep(time.Millisecond)
	}
	if appendErr == nil || !errors.Is(appendErr, os.ErrClosed) {
		t.Fatalf("appends went on after the roll syncer's probe failed: %v", appendErr)
	}
	if st := p2.Status(); st.RecoveryPoint != 0 {
		t.Fatalf("the recovery point moved to %d past unsynced segments (%d segments)", st.RecoveryPoint, st.Segments)
	}
	if err := p2.Flush(); err == nil {
		t.Fatal("flush of a fenced partition succeeded")
	}
}
