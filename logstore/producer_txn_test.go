package logstore

import (
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
