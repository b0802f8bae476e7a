package logstore

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/segfs/segfs/logstore/record"
)

// writeHangingTxn writes partition txo-0 in dir as Kafka leaves it with a
// transaction open: plain-a (0), then open-1, open-2 (1, 2) of producer
// 500 at epoch 0, transactional, with no marker.
func writeHangingTxn(t *testing.T, dir string) {
	t.Helper()
	pdir := filepath.Join(dir, "txo-0")
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	var log []byte
	for _, b := range []struct {
		base   int64
		pid    int64
		values []string
	}{{0, -1, []string{"plain-a"}}, {1, 500, []string{"open-1", "open-2"}}} {
		spec := record.DefaultSpec()
		spec.BaseOffset = b.base
		if b.pid >= 0 {
			spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence, spec.Transactional = b.pid, 0, 0, true
		}
		var bl record.Builder
		bl.Reset(spec)
		for _, v := range b.values {
			bl.Add(1_700_000_000_000, nil, []byte(v), nil)
		}
		raw, err := bl.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		log = append(log, raw...)
	}
	if err := os.WriteFile(filepath.Join(pdir, segmentName(0)+logSuffix), log, 0o644); err != nil {
		t.Fatal(err)
	}
}

// An ABORT written by WriteTxnMarker is a control batch in the log that
// the text view does not render, ends the transaction (the LSO reaches
// the log end) and lists it as aborted; after a restart the same holds,
// also when the process died between the marker and its .txnindex entry
// (no .txnindex, no snapshot after the marker): the load writes the entry
// from the marker, with the marker's coordinator epoch.
func TestWriteTxnMarkerAbortDurable(t *testing.T) {
	dir := t.TempDir()
	writeHangingTxn(t, dir)
	want := AbortedTxn{ProducerID: 500, FirstOffset: 1, LastOffset: 3, LastStableOffset: 4}
	check := func(s *Store, when string) {
		t.Helper()
		p := mustPartition(t, s, "txo")
		if p.LogEndOffset() != 4 || p.LastStableOffset() != 4 {
			t.Fatalf("%s: LEO %d LSO %d, want 4 and 4", when, p.LogEndOffset(), p.LastStableOffset())
		}
		if got := p.AbortedTxns(0, 4); len(got) != 1 || got[0] != want {
			t.Fatalf("%s: aborted transactions %+v, want %+v", when, got, want)
		}
		if got := p.ActiveProducers(); len(got) != 1 || got[0].TxnStartOffset != -1 || got[0].CoordinatorEpoch != 3 || got[0].LastSequence != 1 {
			t.Fatalf("%s: producers %+v", when, got)
		}
		v, err := p.Text(0)
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, v); got != "plain-a\nopen-1\nopen-2\n" {
			t.Fatalf("%s: text view %q: a marker rendered?", when, got)
		}
		v.Close()
	}

	s := openStore(t, dir, newClock())
	p := mustPartition(t, s, "txo")
	if p.LastStableOffset() != 1 {
		t.Fatalf("LSO before the marker: %d, want 1", p.LastStableOffset())
	}
	off, err := p.WriteTxnMarker(500, 0, 3, false)
	if err != nil || off != 3 {
		t.Fatalf("WriteTxnMarker: offset %d, %v", off, err)
	}
	check(s, "after the marker")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, newClock())
	check(s, "after a restart")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// A crash between the marker and its index entry, before any snapshot.
	pdir := filepath.Join(dir, "txo-0")
	os.Remove(filepath.Join(pdir, segmentName(0)+txnIndexSuffix))
	for _, off := range listSnapshots(pdir) {
		os.Remove(filepath.Join(pdir, segmentName(off)+snapshotSuffix))
	}
	s = openStore(t, dir, newClock())
	check(s, "after a crash before the index entry")
	s.Close()
	b, err := os.ReadFile(filepath.Join(pdir, segmentName(0)+txnIndexSuffix))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ParseTxnIndex(b, 0); err != nil || len(got) != 1 || got[0] != want {
		t.Fatalf("rebuilt .txnindex: %+v, %v", got, err)
	}
}

// A COMMIT ends the transaction without an index entry; a fenced epoch or
// coordinator epoch, a closed store and a negative producer id append
// nothing.
func TestWriteTxnMarkerCommitAndRefusals(t *testing.T) {
	dir := t.TempDir()
	writeHangingTxn(t, dir)
	s := openStore(t, dir, newClock())
	p := mustPartition(t, s, "txo")
	if _, err := p.WriteTxnMarker(-1, 0, 0, true); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("negative producer id: %v", err)
	}
	if _, err := p.WriteTxnMarker(500, 0, 2, true); err != nil {
		t.Fatal(err)
	}
	if p.LastStableOffset() != 4 || len(p.AbortedTxns(0, 4)) != 0 {
		t.Fatalf("after COMMIT: LSO %d aborted %+v", p.LastStableOffset(), p.AbortedTxns(0, 4))
	}
	if _, err := p.WriteTxnMarker(500, 0, 1, false); !errors.Is(err, ErrCoordinatorFenced) {
		t.Fatalf("older coordinator epoch: %v", err)
	}
	if _, err := p.WriteTxnMarker(500, 1, 2, false); err != nil {
		t.Fatalf("newer epoch: %v", err)
	}
	if _, err := p.WriteTxnMarker(500, 0, 2, false); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("older epoch: %v", err)
	}
	leo := p.LogEndOffset()
	s.Close()
	if _, err := p.WriteTxnMarker(500, 1, 2, false); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed store: %v", err)
	}
	s = openStore(t, dir, newClock())
	defer s.Close()
	p = mustPartition(t, s, "txo")
	if p.LogEndOffset() != leo || p.LastStableOffset() != leo {
		t.Fatalf("after reopen: LEO %d LSO %d, want %d", p.LogEndOffset(), p.LastStableOffset(), leo)
	}
	if got := p.ActiveProducers(); len(got) != 1 || got[0].Epoch != 1 || got[0].CoordinatorEpoch != 2 || got[0].LastSequence != -1 {
		t.Fatalf("producer after reopen: %+v", got)
	}
}
