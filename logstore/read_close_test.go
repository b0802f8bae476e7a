package logstore

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

// closeRaceLog makes a partition of several closed segments and returns
// it with its first segment.
func closeRaceLog(t *testing.T, s *Store, name string) (*Partition, *segment) {
	t.Helper()
	tp, err := s.CreateTopic(name, 1, map[string]string{"segment.bytes": "200"})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tp.Partition(0)
	for i := 0; i < 20; i++ {
		if _, _, err := p.AppendLines([]byte(fmt.Sprintf("line %04d\n", i))); err != nil {
			t.Fatal(err)
		}
	}
	p.mu.RLock()
	n, first := len(p.segs), p.segs[0]
	p.mu.RUnlock()
	if n < 3 {
		t.Fatalf("%d segments, want 3 or more", n)
	}
	return p, first
}

// TestLookupTimeRacingStoreClose: a time lookup (ListOffsets, time/T) that
// goes on past a segment while the store closes (the unmount of a daemon
// that still serves files after a lazy detach whose grace ran out) must
// answer ErrClosed, which the mount answers as EIO and the fetch server as
// NOT_LEADER_OR_FOLLOWER: it went on into the next segment, whose file the
// close had closed, and failed with "read ...: file already closed".
func TestLookupTimeRacingStoreClose(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	p, first := closeRaceLog(t, s, "closing")
	ts := first.maxTs.Load() + 1 // past the first segment's records
	called := hookOnce(t, first, func() {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	})
	off, _, ok, err := p.LookupTime(ts)
	if !*called {
		t.Fatal("the hook did not run")
	}
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("lookup racing the close: %d, %v, %v; want ErrClosed", off, ok, err)
	}
}

// TestReadRacingStoreClose: a read that has bytes from one segment when
// the store closes ends with them; the reads that start afterwards (a
// fetch, offset/N, a raw segment file, the max timestamp, a new text view)
// answer ErrClosed, not "file already closed" from a segment whose file
// the close closed.
func TestReadRacingStoreClose(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	p, first := closeRaceLog(t, s, "closing")
	firstEnd := first.next.Load()
	hookOnce(t, first, func() {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	})
	res, err := p.ReadBelow(p.LogStartOffset(), 1<<20, 1<<62)
	if err != nil || res.Next != firstEnd {
		t.Fatalf("read racing the close: %+v, %v; want the first segment's batches, to %d", res, err, firstEnd)
	}
	res.Release()
	testHookSegmentRead = nil

	name := segmentName(first.base) + logSuffix
	for what, f := range map[string]func() error{
		"read": func() error { _, err := p.ReadBelow(firstEnd, 1<<20, 1<<62); return err },
		"text": func() error { _, err := p.Text(p.LogStartOffset()); return err },
		"time": func() error { _, _, err := p.OffsetForTime(0); return err },
		"max":  func() error { _, _, _, err := p.MaxTimestamp(); return err },
		"raw":  func() error { _, err := p.OpenSegmentFile(name); return err },
	} {
		if err := f(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s after the close: %v, want ErrClosed", what, err)
		}
	}
}

// TestTextViewAcrossStoreClose: a text view (an open `data`) that the close
// finds open reads on through the segments it holds, as an unlinked file
// is read, and takes none of those that rolled since it last looked: their
// files are closed, and reading them failed with "file already closed"
// before the view had given what it held. At the end of what it holds it
// answers ErrClosed, not io.EOF: the log goes on.
func TestTextViewAcrossStoreClose(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	p, _ := closeRaceLog(t, s, "closing")
	v, err := p.Text(p.LogStartOffset())
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	held := v.Size()
	// Rolls that v has not seen yet.
	for i := 0; i < 10; i++ {
		if _, _, err := p.AppendLines([]byte(fmt.Sprintf("more %04d\n", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1<<16)
	n, err := v.ReadAt(b, 0)
	if (err != nil && err != io.EOF) || int64(n) < held {
		t.Fatalf("view read after the close: %d bytes, %v; it held %d", n, err, held)
	}
	if n, err := v.ReadAt(b, int64(n)); !errors.Is(err, ErrClosed) {
		t.Fatalf("view read past what it holds after the close: %d bytes, %v; want ErrClosed", n, err)
	}
}

// TestStatusAfterStoreClose: the status of a partition whose store closed
// (the status file of a mount whose store closed under it) answers
// ErrClosed, as the reads do: it answered first.timestamp=-1 and
// last.timestamp=-1, as if the log were empty. An empty partition too.
func TestStatusAfterStoreClose(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	p, _ := closeRaceLog(t, s, "closing")
	tp, err := s.CreateTopic("empty", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	empty, _ := tp.Partition(0)
	if st := statusOf(t, p); st.FirstTimestamp < 0 || st.LastTimestamp < st.FirstTimestamp {
		t.Fatalf("status before the close: %+v", st)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for what, q := range map[string]*Partition{"closing": p, "empty": empty} {
		if st, err := q.Status(); !errors.Is(err, ErrClosed) {
			t.Errorf("status of %s after the close: %+v, %v; want ErrClosed", what, st, err)
		}
	}
}
