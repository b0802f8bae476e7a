package logstore

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/segfs/segfs/logstore/record"
)

// The producer state rebuilt at load keeps ongoing transactions as
// Kafka's does: a transactional batch opens its producer's transaction at
// its base offset (a later one of the same transaction, or of a new epoch,
// leaves it there), a COMMIT/ABORT marker ends it, snapshots keep it, and
// expiration never drops a producer whose transaction is open.
func TestProducerStateOngoingTxn(t *testing.T) {
	data := func(pid int64, epoch int16, base int64, seq int32, txn bool) *record.Header {
		var attrs int16
		if txn {
			attrs = 0x10
		}
		return &record.Header{BaseOffset: base, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, Attributes: attrs, MaxTimestamp: 1000}
	}
	marker := func(pid int64, base int64) *record.Header {
		return &record.Header{BaseOffset: base, ProducerID: pid, BaseSequence: -1, Attributes: 0x30, MaxTimestamp: 1000}
	}
	var ps producerState
	ps.load(data(7, 0, 10, 0, false)) // idempotent, not transactional
	ps.load(data(8, 0, 11, 0, true))
	ps.load(data(8, 0, 12, 1, true))
	ps.load(data(9, 0, 13, 0, true))
	ps.load(data(8, 1, 14, 0, true)) // new epoch, same transaction
	if got := ps.firstUnstable(); got != 11 {
		t.Fatalf("first unstable with two open transactions: %d, want 11", got)
	}
	if ps.m[7].txnFirst != -1 {
		t.Fatalf("an idempotent producer has transaction %d", ps.m[7].txnFirst)
	}
	ps.load(marker(8, 15))
	if got := ps.firstUnstable(); got != 13 {
		t.Fatalf("first unstable after producer 8's marker: %d, want 13", got)
	}
	ps.load(marker(10, 16)) // a marker of an unknown producer changes nothing
	ps.load(data(8, 1, 17, 1, true))
	if ps.m[8].txnFirst != 17 {
		t.Fatalf("producer 8's next transaction starts at %d, want 17", ps.m[8].txnFirst)
	}

	m, err := decodeSnapshot(ps.encode())
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[int64]int64{7: -1, 8: 17, 9: 13} {
		if m[id] == nil || m[id].txnFirst != want {
			t.Fatalf("snapshot round trip: producer %d: %+v, want transaction %d", id, m[id], want)
		}
	}

	if n := ps.expire(1000+1e9, 1); n != 1 || ps.m[7] != nil || ps.m[8] == nil || ps.m[9] == nil {
		t.Fatalf("expire dropped %d producers, left %v: want only producer 7 gone", n, ps.m)
	}
}

// An ongoing transaction known only from a producer snapshot (as Kafka
// leaves one) bounds the last stable offset and compaction: the cleaner,
// like Kafka's, cleans nothing at or past the segment holding its first
// offset, and the state survives segfs's own snapshot at close.
func TestOngoingTxnFromSnapshotBoundsCompaction(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, newClock())
	if _, err := s.CreateTopic("c", 1, map[string]string{
		"cleanup.policy": "compact", "key.separator": "=", "segment.bytes": "1000",
		"min.cleanable.dirty.ratio": "0", "file.delete.delay.ms": "0",
	}); err != nil {
		t.Fatal(err)
	}
	p := mustPartition(t, s, "c")
	for i := 0; len(p.segs) < 4; i++ {
		if _, _, err := p.AppendLines(fmt.Appendf(nil, "k%d=value %d %s\n", i%3, i, strings.Repeat("z", 20))); err != nil {
			t.Fatal(err)
		}
	}
	var bases []int64
	for _, sg := range p.segs {
		bases = append(bases, sg.base)
	}
	pdir, leo := p.dir, p.LogEndOffset()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	fu := bases[1] + 1
	ps := producerState{m: map[int64]*producerEntry{99: {epoch: 0, txnFirst: fu,
		batches: []producerBatch{{firstSeq: 0, lastSeq: 0, firstOff: fu, lastOff: fu, ts: 1}}}}}
	if err := WriteFileAtomic(filepath.Join(pdir, segmentName(leo)+snapshotSuffix), ps.encode()); err != nil {
		t.Fatal(err)
	}

	for round := 0; round < 2; round++ {
		s = openStore(t, dir, newClock())
		p = mustPartition(t, s, "c")
		if got := p.LastStableOffset(); got != fu {
			t.Fatalf("round %d: last stable offset %d, want %d (log end %d)", round, got, fu, p.LogEndOffset())
		}
		if _, err := p.Compact(); err != nil {
			t.Fatal(err)
		}
		if got := p.firstDirty.Load(); got > bases[1] {
			t.Fatalf("round %d: compaction cleaned up to %d, past the segment at %d holding the open transaction's first offset %d", round, got, bases[1], fu)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
