package logstore

import (
	"errors"
	"testing"

	"github.com/segfs/segfs/logstore/record"
)

// TestAppendBatchRefusesInvalidHeaders: the batch-level checks of Kafka's
// LogValidator.validateBatch and of the request's one batch per partition
// (KAFKA-FORMAT.md §2.9) that no other test drove: a control batch from a
// client, a record count that does not match the last offset delta, an
// idempotent batch without a base sequence, and two batches in one
// partition's records are INVALID_RECORD (ErrInvalidRecord), each with
// nothing stored; the valid batch they are made from is taken.
func TestAppendBatchRefusesInvalidHeaders(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	defer s.Close()
	tp, err := s.CreateTopic("hdr", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tp.Partition(0)
	now := s.now().UnixMilli()
	build := func(edit func(*record.BatchSpec), n int) []byte {
		t.Helper()
		spec := record.DefaultSpec()
		edit(&spec)
		var bl record.Builder
		bl.Reset(spec)
		for i := 0; i < n; i++ {
			bl.Add(now, nil, []byte("v"), nil)
		}
		b, err := bl.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	good := build(func(*record.BatchSpec) {}, 2)
	for _, tc := range []struct {
		name  string
		batch []byte
	}{
		{"control batch", build(func(s *record.BatchSpec) { s.Control = true }, 1)},
		{"count 1, last offset delta 3", build(func(s *record.BatchSpec) { s.LastOffsetDelta = 3 }, 1)},
		{"producer id without a sequence", build(func(s *record.BatchSpec) { s.ProducerID, s.ProducerEpoch = 7, 0 }, 1)},
		{"two batches", append(append([]byte(nil), good...), good...)},
	} {
		if _, err := p.AppendBatch(tc.batch); !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("%s: %v, want ErrInvalidRecord", tc.name, err)
		}
		if p.LogEndOffset() != 0 {
			t.Fatalf("%s: stored, log end offset %d", tc.name, p.LogEndOffset())
		}
	}
	if res, err := p.AppendBatch(good); err != nil || res.BaseOffset != 0 || res.LastOffset != 1 {
		t.Fatalf("the valid batch: %+v, %v", res, err)
	}
}
