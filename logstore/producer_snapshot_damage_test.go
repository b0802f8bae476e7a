package logstore

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestProducerSnapshotDamaged: a producer snapshot whose bytes no longer
// match its checksum (a flipped bit) or that is cut short is not loaded;
// the producer state is rebuilt from the log instead, so that an
// idempotent producer's retries are still duplicates at their original
// offsets, a sequence out of the window is still refused and its next
// batch goes on at the log end, after a clean close and after a crash.
// Loading the flipped snapshot would have lost the batch of sequence 1
// from the window, and refused or written again its retry. Only a
// missing snapshot was tested (TestCompactionKeepsProducerState).
func TestProducerSnapshotDamaged(t *testing.T) {
	damages := map[string]func(b []byte) []byte{
		// The low byte of the first entry's last sequence (entries,
		// one per batch of the window, start at 10: id 8 bytes, epoch
		// 2, last sequence 4): the batch of sequence 1 becomes 0's.
		"flipped bit": func(b []byte) []byte { b[10+8+2+3] ^= 1; return b },
		"cut short":   func(b []byte) []byte { return b[:len(b)-7] },
		"header only": func(b []byte) []byte { return b[:6] },
	}
	for name, damage := range damages {
		for _, clean := range []bool{true, false} {
			t.Run(name+map[bool]string{true: "/clean", false: "/crash"}[clean], func(t *testing.T) {
				dir := t.TempDir()
				s, p := idemPartition(t, dir)
				const pid = 42
				batch := func(seq int32) []byte {
					return idempotentBatch(t, pid, seq, time.Now(), []byte{'a' + byte(seq)})
				}
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
				leo := p.LogEndOffset()
				if clean {
					s.Close()
				} else {
					// A snapshot the crash left, as a roll writes one.
					p.amu.Lock()
					p.producers.snapshot(p.dir, leo)
					p.amu.Unlock()
					p.Flush()
					s.abandon()
				}
				snaps := listSnapshots(p.dir)
				if len(snaps) != 1 {
					t.Fatalf("snapshots %v, want one", snaps)
				}
				path := filepath.Join(p.dir, segmentName(snaps[0])+snapshotSuffix)
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if len(b) != 10+5*snapshotEntrySize {
					t.Fatalf("snapshot of %d bytes, want the %d of one producer's 5 batches", len(b), 10+5*snapshotEntrySize)
				}
				if err := os.WriteFile(path, damage(b), 0o644); err != nil {
					t.Fatal(err)
				}

				s = openStore(t, dir, nil)
				defer s.Close()
				p = mustPartition(t, s, "idem")
				for seq := int32(1); seq < 6; seq++ {
					res, err := p.AppendBatch(batch(seq))
					if err != nil || !res.Duplicate || res.BaseOffset != offs[seq] {
						t.Fatalf("retry of seq %d after loading a damaged snapshot: %+v %v, want a duplicate at offset %d", seq, res, err, offs[seq])
					}
				}
				if _, err := p.AppendBatch(batch(0)); !errors.Is(err, ErrOutOfOrderSeq) {
					t.Fatalf("seq 0, out of the 5-batch window: %v, want ErrOutOfOrderSeq", err)
				}
				if res, err := p.AppendBatch(batch(6)); err != nil || res.Duplicate || res.BaseOffset != leo {
					t.Fatalf("next batch: %+v %v, want it at the log end %d", res, err, leo)
				}
			})
		}
	}
}
