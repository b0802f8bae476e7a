package logstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/segfs/segfs/logstore/record"
)

// An idempotent producer's retries are recognised for each of its last 5
// batches (Kafka's window, the most a client keeps in flight), and still
// after the store restarts, cleanly or after a crash: a retry sent while
// the server restarted must come back as a duplicate with its original
// offsets, not be written twice or refused.
func TestProducerWindowSurvivesRestart(t *testing.T) {
	for _, clean := range []bool{true, false} {
		name := "crash"
		if clean {
			name = "clean"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s, p := idemPartition(t, dir)
			const pid = 42
			batch := func(seq int32) []byte {
				return idempotentBatch(t, pid, seq, time.Now(), []byte{'a' + byte(seq)})
			}
			// A non-idempotent record first, so offsets and sequences differ.
			if _, _, err := p.AppendLines([]byte("plain\n")); err != nil {
				t.Fatal(err)
			}
			offs := map[int32]int64{}
			for seq := int32(0); seq < 6; seq++ {
				res, err := p.AppendBatch(batch(seq))
				if err != nil || res.Duplicate {
					t.Fatalf("seq %d: %+v %v", seq, res, err)
				}
				offs[seq] = res.BaseOffset
			}
			retries := func(when string) {
				t.Helper()
				for seq := int32(1); seq < 6; seq++ {
					res, err := p.AppendBatch(batch(seq))
					if err != nil || !res.Duplicate || res.BaseOffset != offs[seq] {
						t.Fatalf("%s: retry of seq %d: %+v %v, want a duplicate at offset %d", when, seq, res, err, offs[seq])
					}
				}
				if _, err := p.AppendBatch(batch(0)); !errors.Is(err, ErrOutOfOrderSeq) {
					t.Fatalf("%s: seq 0 is out of the 5-batch window: %v", when, err)
				}
			}
			retries("before restart")
			leo := p.LogEndOffset()
			if clean {
				s.Close()
			} else {
				p.Flush()
				s.abandon()
			}
			s = openStore(t, dir, nil)
			defer s.Close()
			p = mustPartition(t, s, "idem")
			if p.LogEndOffset() != leo {
				t.Fatalf("log end %d after restart, want %d", p.LogEndOffset(), leo)
			}
			retries("after restart")
			if p.LogEndOffset() != leo {
				t.Fatalf("retries wrote records: log end %d, want %d", p.LogEndOffset(), leo)
			}
			if res, err := p.AppendBatch(batch(6)); err != nil || res.Duplicate || res.BaseOffset != leo {
				t.Fatalf("next batch after restart: %+v %v", res, err)
			}
		})
	}
}

// Idempotent producers expire a day (ProducerIDExpiration) after their
// last batch's timestamp, as in Kafka: every producer run is a new id, and
// their state used to stay in memory and in every snapshot for good. An
// expired producer's next batch starts it afresh; one still live keeps its
// retries recognised, and the snapshot of the close holds only it.
func TestProducerIDExpiration(t *testing.T) {
	s, p := idemPartition(t, t.TempDir())
	now := time.Now()
	batch := func(pid int64, seq int32, ts time.Time) []byte {
		return idempotentBatch(t, pid, seq, ts, []byte("v"))
	}
	// 100 producers whose last batch is 25 hours old, one 23 hours old.
	for pid := int64(1); pid <= 100; pid++ {
		if _, err := p.AppendBatch(batch(pid, 0, now.Add(-25*time.Hour))); err != nil {
			t.Fatal(err)
		}
	}
	live, err := p.AppendBatch(batch(1000, 0, now.Add(-23*time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	s.expireProducers(now)
	p.amu.Lock()
	left := len(p.producers.m)
	p.amu.Unlock()
	if left != 1 {
		t.Fatalf("%d producers left after expiry, want 1", left)
	}
	// The live one's retry is still a duplicate; an expired one's next
	// batch, at any sequence, starts it again.
	if res, err := p.AppendBatch(batch(1000, 0, now.Add(-23*time.Hour))); err != nil || !res.Duplicate || res.BaseOffset != live.BaseOffset {
		t.Fatalf("retry of the live producer: %+v %v", res, err)
	}
	if res, err := p.AppendBatch(batch(7, 5, now)); err != nil || res.Duplicate {
		t.Fatalf("an expired producer's next batch: %+v %v", res, err)
	}
	s.Close()
	snaps := listSnapshots(p.dir)
	if len(snaps) != 1 {
		t.Fatalf("snapshots %v", snaps)
	}
	b, err := os.ReadFile(filepath.Join(p.dir, segmentName(snaps[0])+snapshotSuffix))
	if err != nil {
		t.Fatal(err)
	}
	if want := 10 + 2*snapshotEntrySize; len(b) != want {
		t.Fatalf("snapshot of %d bytes, want %d (producers 1000 and 7)", len(b), want)
	}
}

// idemPartition opens a store in dir with a topic "idem" of one partition.
func idemPartition(t *testing.T, dir string) (*Store, *Partition) {
	t.Helper()
	s := openStore(t, dir, nil)
	tp, err := s.CreateTopic("idem", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tp.Partition(0)
	return s, p
}

// idempotentBatch is a one-record batch of producer pid (epoch 0) at
// sequence seq.
func idempotentBatch(t *testing.T, pid int64, seq int32, ts time.Time, value []byte) []byte {
	t.Helper()
	spec := record.DefaultSpec()
	spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence = pid, 0, seq
	return oneRecordBatch(t, spec, ts.UnixMilli(), nil, value)
}

// TestSnapshotAtEveryRoll: a partition without producers (what the mount
// appends) gets a producer snapshot at every roll and at close, as Kafka's
// do, so that the load after a crash scans batch headers from the newest
// one, not from the log start; and a load that had to scan from below the
// active segment (no snapshot: a directory copied from a broker, or from
// an older segfs) writes one at the log end, so the next crash does not.
func TestSnapshotAtEveryRoll(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	tp, err := s.CreateTopic("roll", 1, map[string]string{"segment.bytes": "4096"})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tp.Partition(0)
	var text strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&text, "line %d\n", i)
	}
	if _, _, err := p.AppendLines([]byte(text.String())); err != nil {
		t.Fatal(err)
	}
	active := p.active().base
	if statusOf(t, p).Segments < 3 || active == 0 {
		t.Fatalf("%d segments, active at %d: no rolls", statusOf(t, p).Segments, active)
	}
	snaps := func(want ...int64) {
		t.Helper()
		got := listSnapshots(p.dir)
		if !slices.Equal(got, want) {
			t.Fatalf("snapshots at %v, want %v", got, want)
		}
		b, err := os.ReadFile(filepath.Join(p.dir, segmentName(got[len(got)-1])+snapshotSuffix))
		if err != nil {
			t.Fatal(err)
		}
		if m, err := decodeSnapshot(b); err != nil || len(m) != 0 {
			t.Fatalf("snapshot: %d producers, %v; want an empty one", len(m), err)
		}
	}
	snaps(active)

	// A crash: the load starts from the roll's snapshot, and writes none.
	s.abandon()
	s = openStore(t, dir, nil)
	p = mustPartition(t, s, "roll")
	if p.LogEndOffset() != 1000 {
		t.Fatalf("log end %d after the crash", p.LogEndOffset())
	}
	snaps(active)

	// Without a snapshot, the load scans from the log start and leaves one
	// at the log end.
	for _, off := range listSnapshots(p.dir) {
		os.Remove(filepath.Join(p.dir, segmentName(off)+snapshotSuffix))
	}
	s.abandon()
	s = openStore(t, dir, nil)
	p = mustPartition(t, s, "roll")
	snaps(1000)

	// A clean close writes one at the log end.
	if _, _, err := p.AppendLines([]byte("one more\n")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	snaps(1001)
}
