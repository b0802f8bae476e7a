package logstore

import "testing"

// TestTombstoneHorizonBoundary: a tombstone goes in the first pass at or
// after its batch's delete horizon (the pass that first kept it, plus
// delete.retention.ms), as Kafka's Cleaner.shouldRetainRecord keeps it
// only while currentTime < deleteHorizonMs. segfs kept it one millisecond
// longer (removal when now > horizon), and did not schedule the pass at
// the horizon itself.
func TestTombstoneHorizonBoundary(t *testing.T) {
	clock := newClock()
	s := openStore(t, t.TempDir(), clock)
	defer s.Close()
	tp, err := s.CreateTopic("hz", 1, map[string]string{
		"cleanup.policy": "compact", "key.separator": "=", "segment.ms": "100",
		"min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "1000", "file.delete.delay.ms": "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tp.Partition(0)
	if _, _, err := p.AppendLines([]byte("a=1\nb=1\na=2\nb=\n")); err != nil {
		t.Fatal(err)
	}
	clock.ms.Add(200)
	if _, err := p.ApplyRetention(); err != nil { // rolls the idle active segment
		t.Fatal(err)
	}
	if st, err := p.Compact(); err != nil || st.RecordsRemoved != 2 {
		t.Fatalf("first clean: %+v %v", st, err)
	}
	horizon := clock.ms.Load() + 1000
	var stamped bool
	for _, h := range batchesOf(t, p) {
		if h.HasDeleteHorizon() && h.BaseTimestamp == horizon {
			stamped = true
		}
	}
	if !stamped {
		t.Fatalf("no batch carries the delete horizon %d: %+v", horizon, batchesOf(t, p))
	}
	// One millisecond before the horizon the tombstone stays. (The fake
	// clock advances a millisecond per reading: a pass reads it once.)
	clock.ms.Store(horizon - 2)
	if _, err := p.Compact(); err != nil {
		t.Fatal(err)
	}
	if got := textOf(t, p, 0); got != "a=2\nb=\n" {
		t.Fatalf("1 ms before the horizon: %q, want the tombstone kept", got)
	}
	// At the horizon it goes.
	clock.ms.Store(horizon - 1)
	st, err := p.Compact()
	if err != nil || st.RecordsRemoved != 1 {
		t.Fatalf("clean at the horizon: %+v %v, want the tombstone removed", st, err)
	}
	if got := textOf(t, p, 0); got != "a=2\n" {
		t.Fatalf("at the horizon: %q, want the tombstone gone", got)
	}
}
