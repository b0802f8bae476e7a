package logstore

import (
	"errors"
	"os"
	"testing"
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
	rp := statusOf(t, p).RecoveryPoint
	s.probe.f.Close()
	if _, _, err := p.AppendLines([]byte("two\n")); err != nil {
		t.Fatal(err)
	}
	err := p.Flush()
	if err == nil || !errors.Is(err, os.ErrClosed) {
		t.Fatalf("flush with a failed probe: %v, want the probe's error", err)
	}
	if got := statusOf(t, p).RecoveryPoint; got != rp {
		t.Fatalf("the recovery point moved to %d on a failed probe (was %d)", got, rp)
	}
	if _, _, err := p.AppendLines([]byte("three\n")); err == nil {
		t.Fatal("append after a failed probe succeeded: the partition is not fenced")
	}
	// A roll moves the recovery point too: it is refused the same way.
	s2 := openStore(t, t.TempDir(), newClock())
	defer s2.Close()
	tp2, _ := s2.CreateTopic("r", 1, map[string]string{"segment.bytes": "200"})
	p2, _ := tp2.Partition(0)
	s2.probe.f.Close()
	var rollErr error
	for i := 0; i < 20 && rollErr == nil; i++ {
		_, _, rollErr = p2.AppendLines([]byte("a line of forty bytes or so, to roll it\n"))
	}
	if rollErr == nil || statusOf(t, p2).Segments != 1 {
		t.Fatalf("rolls went on with a failed probe: %v, %d segments", rollErr, statusOf(t, p2).Segments)
	}
}
