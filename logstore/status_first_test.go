package logstore

import (
	"testing"

	"github.com/segfs/segfs/logstore/record"
)

// TestStatusFirstTimestampPastEmptyBatch: the first batch of a compacted
// log may be the empty batch the cleaner keeps as an idempotent
// producer's last (RETAIN_EMPTY); status's first timestamp is that of the
// first record after it. Status stopped at that batch and said -1, as for
// an empty log.
func TestStatusFirstTimestampPastEmptyBatch(t *testing.T) {
	clock := newClock()
	s := openStore(t, t.TempDir(), clock)
	defer s.Close()
	p := compactTopic(t, s, "first", map[string]string{"segment.bytes": "100"})
	now := clock.ms.Load()
	const pid = 7
	if _, err := p.AppendBatch(keyedIdempotentBatch(t, pid, 0, now-2000, "k", "a")); err != nil {
		t.Fatal(err)
	}
	var plain record.Builder
	for i, k := range []string{"k", "z", "z"} { // k supersedes the producer's record; z rolls
		plain.Reset(record.DefaultSpec())
		plain.Add(now-1000+int64(i), []byte(k), []byte("v"), nil)
		b, err := plain.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.AppendBatch(b); err != nil {
			t.Fatal(err)
		}
	}
	clock.ms.Add(60_000)
	if _, err := p.Compact(); err != nil {
		t.Fatal(err)
	}
	if hs := batchesOf(t, p); len(hs) == 0 || hs[0].RecordCount != 0 || hs[0].ProducerID != pid {
		t.Fatalf("the log does not start with the producer's empty batch: %+v", hs)
	}
	if st := statusOf(t, p); st.LogStartOffset != 0 || st.FirstTimestamp != now-1000 {
		t.Errorf("status %+v; want first.timestamp %d, of offset 1 past the empty batch", st, now-1000)
	}
}
