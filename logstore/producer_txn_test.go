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
	ps.load(data(7, 0, 10, 0, false), -1) // idempotent, not transactional
	ps.load(data(8, 0, 11, 0, true), -1)
	ps.load(data(8, 0, 12, 1, true), -1)
	ps.load(data(9, 0, 13, 0, true), -1)
	ps.load(data(8, 1, 14, 0, true), -1) // new epoch, same transaction
	if got := firstOngoing(ps.ongoing()); got != 11 {
		t.Fatalf("first unstable with two open transactions: %d, want 11", got)
	}
	if ps.m[7].txnFirst != -1 {
		t.Fatalf("an idempotent producer has transaction %d", ps.m[7].txnFirst)
	}
	ps.load(marker(8, 15), -1)
	if got := firstOngoing(ps.ongoing()); got != 13 {
		t.Fatalf("first unstable after producer 8's marker: %d, want 13", got)
	}
	// A marker of an unknown producer ends nothing but makes it known, as
	// in Kafka (DescribeProducers lists it).
	if _, ended := ps.load(marker(10, 16), 4); ended || ps.m[10] == nil || ps.m[10].txnFirst != -1 || ps.m[10].coordEpoch != 4 {
		t.Fatalf("marker of unknown producer 10: ended %v, entry %+v", ended, ps.m[10])
	}
	ps.load(data(8, 1, 17, 1, true), -1)
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

	if m[10] == nil || m[10].coordEpoch != 4 || len(m[10].batches) != 0 {
		t.Fatalf("snapshot round trip of a producer known by its marker only: %+v", m[10])
	}
	if n := ps.expire(1000+1e9, 1); n != 2 || ps.m[7] != nil || ps.m[10] != nil || ps.m[8] == nil || ps.m[9] == nil {
		t.Fatalf("expire dropped %d producers, left %v: want producers 7 and 10 gone", n, ps.m)
	}
}

// storeWithSegments creates topic with cfg in a new store at dir, appends
// line(i) until the partition has n segments, and closes the store. It
// returns the segments' base offsets, the partition directory and the
// log end offset.
func storeWithSegments(t *testing.T, dir, topic string, cfg map[string]string, n int, line func(i int) []byte) (bases []int64, pdir string, leo int64) {
	t.Helper()
	s := openStore(t, dir, newClock())
	if _, err := s.CreateTopic(topic, 1, cfg); err != nil {
		t.Fatal(err)
	}
	p := mustPartition(t, s, topic)
	for i := 0; len(p.segs) < n; i++ {
		if _, _, err := p.AppendLines(line(i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, sg := range p.segs {
		bases = append(bases, sg.base)
	}
	pdir, leo = p.dir, p.LogEndOffset()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return bases, pdir, leo
}

// compactSmallSegments is a compacted topic with 1000-byte segments that
// the cleaner cleans at once; compactLine fills it with three keys.
var compactSmallSegments = map[string]string{
	"cleanup.policy": "compact", "key.separator": "=", "segment.bytes": "1000",
	"min.cleanable.dirty.ratio": "0", "file.delete.delay.ms": "0",
}

func compactLine(i int) []byte {
	return fmt.Appendf(nil, "k%d=value %d %s\n", i%3, i, strings.Repeat("z", 20))
}

// firstOngoing is the first offset of the earliest span, -1 if none.
func firstOngoing(spans []txnSpan) int64 {
	first := int64(-1)
	for _, s := range spans {
		if first < 0 || s.first < first {
			first = s.first
		}
	}
	return first
}

// An ongoing transaction known only from a producer snapshot (as Kafka
// leaves one) bounds the last stable offset and compaction: the cleaner,
// like Kafka's, cleans nothing at or past the segment holding its first
// offset, and the state survives segfs's own snapshot at close.
func TestOngoingTxnFromSnapshotBoundsCompaction(t *testing.T) {
	dir := t.TempDir()
	bases, pdir, leo := storeWithSegments(t, dir, "c", compactSmallSegments, 4, compactLine)
	fu := bases[1] + 1
	ps := producerState{m: map[int64]*producerEntry{99: {epoch: 0, txnFirst: fu,
		batches: []producerBatch{{firstSeq: 0, lastSeq: 0, firstOff: fu, lastOff: fu, ts: 1}}}}}
	if err := WriteFileAtomic(filepath.Join(pdir, segmentName(leo)+snapshotSuffix), ps.encode()); err != nil {
		t.Fatal(err)
	}

	for round := 0; round < 2; round++ {
		s := openStore(t, dir, newClock())
		p := mustPartition(t, s, "c")
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

// Retention that passes the last batch of an ongoing transaction's
// producer ends the hold on the last stable offset, as Kafka evicts the
// producer (ProducerStateManager.truncateHead). Until then the last stable
// offset stays at the transaction's first offset, not at the log start:
// with the log start past it, read_committed consumers got nothing.
func TestOngoingTxnEvictedByRetention(t *testing.T) {
	dir := t.TempDir()
	bases, pdir, leo := storeWithSegments(t, dir, "d", map[string]string{"segment.bytes": "1000", "file.delete.delay.ms": "0"}, 5,
		func(i int) []byte { return fmt.Appendf(nil, "value %d %s\n", i, strings.Repeat("z", 20)) })
	// Producer 99's transaction starts in segment 1 and its last batch
	// is in segment 2.
	first, last := bases[1]+1, bases[2]+1
	ps := producerState{m: map[int64]*producerEntry{99: {epoch: 0, txnFirst: first,
		batches: []producerBatch{{firstSeq: 0, lastSeq: 0, firstOff: last, lastOff: last, ts: 1}}}}}
	if err := WriteFileAtomic(filepath.Join(pdir, segmentName(leo)+snapshotSuffix), ps.encode()); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, dir, newClock())
	defer s.Close()
	p := mustPartition(t, s, "d")
	retain := func(keepFrom int64) {
		t.Helper()
		var bytes int64
		for _, sg := range p.segs {
			if sg.base >= keepFrom {
				bytes += sg.size.Load()
			}
		}
		if err := p.topic.SetConfig(map[string]string{"retention.bytes": fmt.Sprint(bytes)}); err != nil {
			t.Fatal(err)
		}
		if _, err := p.ApplyRetention(); err != nil {
			t.Fatal(err)
		}
		if got := p.LogStartOffset(); got != keepFrom {
			t.Fatalf("log start %d after retention, want %d", got, keepFrom)
		}
	}
	if got := p.LastStableOffset(); got != first {
		t.Fatalf("last stable offset %d, want the transaction's first offset %d", got, first)
	}
	retain(bases[2]) // the first batch is gone, the producer's last is not
	if got := p.LastStableOffset(); got != bases[2] {
		t.Fatalf("log start %d inside the transaction: last stable offset %d, want the log start", bases[2], got)
	}
	retain(bases[3]) // past the producer's last batch
	if got, want := p.LastStableOffset(), p.LogEndOffset(); got != want {
		t.Fatalf("retention passed the producer's last batch (%d): last stable offset %d, want the log end %d", last, got, want)
	}
}
