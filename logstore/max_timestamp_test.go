package logstore

import (
	"testing"

	"github.com/segfs/segfs/logstore/record"
)

// TestMaxTimestampEmptyBatch: ListOffsets -3 (MAX_TIMESTAMP) after the
// cleaner emptied the batch carrying the largest timestamp but kept it as
// an active producer's last (RETAIN_EMPTY: its header keeps the max
// timestamp of the records it held). Kafka's
// UnifiedLog.fetchOffsetByTimestamp lets the first batch with the largest
// max timestamp decide, and that batch holds no record: no offset, even
// though a later record has the same timestamp. segfs looked for the
// first record at or above the timestamp anywhere in the log and answered
// that later record. A record with the largest timestamp before the empty
// batch is still found, and the answers hold after a reopen (the max
// timestamp then comes from the time index).
func TestMaxTimestampEmptyBatch(t *testing.T) {
	for _, tc := range []struct {
		name        string
		recordFirst bool // a record at the max timestamp before the empty batch
		recordAfter bool // one after it
		want        int64
	}{
		{"only the empty batch", false, false, -1},
		{"a record after it", false, true, -1},
		{"a record before it", true, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newClock()
			dir := t.TempDir()
			s := openStore(t, dir, clock)
			// One batch a segment: each is cleaned on its own.
			p := compactTopic(t, s, "mx", map[string]string{"segment.bytes": "100"})
			now := clock.ms.Load()
			maxTs := now + 3_000_000 // within message.timestamp.after.max.ms
			plain := func(ts int64, k string) {
				t.Helper()
				var bl record.Builder
				bl.Reset(record.DefaultSpec())
				bl.Add(ts, []byte(k), []byte("v"), nil)
				b, err := bl.Build(nil)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := p.AppendBatch(b); err != nil {
					t.Fatal(err)
				}
			}
			if tc.recordFirst {
				plain(maxTs, "first")
			}
			const pid = 7
			for seq, v := range []string{"a", "b"} {
				if _, err := p.AppendBatch(keyedIdempotentBatch(t, pid, int32(seq), maxTs, "k", v)); err != nil {
					t.Fatal(err)
				}
			}
			plain(now, "k") // supersedes both of the producer's records
			if tc.recordAfter {
				plain(maxTs, "after")
			}
			clock.ms.Add(60_000)
			plain(now+60_000, "z")
			plain(now+60_000, "z") // rolls: the one before is cleanable
			if _, err := p.Compact(); err != nil {
				t.Fatal(err)
			}
			empty := false
			for _, h := range batchesOf(t, p) {
				if h.RecordCount == 0 && h.ProducerID == pid && h.MaxTimestamp == maxTs {
					empty = true
				}
			}
			if !empty {
				t.Fatalf("no empty batch of producer %d at the max timestamp: %+v", pid, batchesOf(t, p))
			}
			check := func(when string) {
				t.Helper()
				ts, off, ok, err := p.MaxTimestamp()
				if err != nil {
					t.Fatal(err)
				}
				if tc.want < 0 && ok {
					t.Errorf("%s: MaxTimestamp = %d at offset %d, want none (the first batch at the max timestamp is empty)", when, ts, off)
				}
				if tc.want >= 0 && (!ok || off != tc.want || ts != maxTs) {
					t.Errorf("%s: MaxTimestamp = %d at offset %d (ok %v), want %d at %d", when, ts, off, ok, maxTs, tc.want)
				}
			}
			check("after the pass")
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = openStore(t, dir, clock)
			defer s.Close()
			p = mustPartition(t, s, "mx")
			check("after a reopen")
		})
	}
}
