package logstore

import (
	"errors"
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
			s := openStore(t, dir, nil)
			tp, err := s.CreateTopic("idem", 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			p, _ := tp.Partition(0)
			const pid = 42
			batch := func(seq int32) []byte {
				var bl record.Builder
				spec := record.DefaultSpec()
				spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence = pid, 0, seq
				bl.Reset(spec)
				bl.Add(time.Now().UnixMilli(), nil, []byte{'a' + byte(seq)}, nil)
				b, err := bl.Build(nil)
				if err != nil {
					t.Fatal(err)
				}
				return b
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
