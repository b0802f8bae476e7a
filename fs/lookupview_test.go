package fs

import (
	"fmt"
	"io"
	"os"
	"testing"
	"time"
)

// TestOffsetLookupViewAfterCompaction: the view a LOOKUP of offset/N opens
// and keeps for the open that follows (lookupViews) holds N's batch read,
// checked and rendered from N on (logstore's Text). When compaction
// replaces the segments between the LOOKUP and the open, neither a stat
// nor the open may serve that view: `stat` gives the size of the
// compacted log's text from N and `cat offset/N` reads that text, as a
// fresh open would, not the text the lookup rendered.
func TestOffsetLookupViewAfterCompaction(t *testing.T) {
	m := mountForTest(t, Options{})
	lv := keepLookupViews(m)
	if _, err := m.store.CreateTopic("c", 1, map[string]string{"cleanup.policy": "compact",
		"key.separator": "=", "segment.bytes": "2048", "min.cleanable.dirty.ratio": "0"}); err != nil {
		t.Fatal(err)
	}
	p, err := m.store.Partition("c", 0)
	if err != nil {
		t.Fatal(err)
	}
	text := func(from int64) string {
		t.Helper()
		v, err := p.Text(from)
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		b, err := io.ReadAll(io.NewSectionReader(v, 0, v.Size()))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// The open must come to the node the lookup kept its view for, through
	// the dentry the lookup left (cacheTimeout); a compaction slower than
	// that makes the open look the name up again, which proves nothing,
	// and the round is tried again with new batches.
	for round := 0; ; round++ {
		// Two records a batch, the first of a key every batch repeats:
		// compaction drops all but the last of those.
		base := p.LogEndOffset()
		for i := range 40 {
			if _, _, err := p.AppendLines(fmt.Appendf(nil, "dup=v %d.%d\nu%d.%d=value\n", round, i, round, i)); err != nil {
				t.Fatal(err)
			}
		}
		// The second record of the round's fourth batch: the lookup
		// renders that batch from it.
		n := base + 7
		name := m.path("c", "0", "offset", fmt.Sprint(n))
		old := text(n)
		start := time.Now()
		if _, err := os.Stat(name); err != nil {
			t.Fatal(err)
		}
		if lv.kept() != 1 {
			t.Fatalf("the lookup of offset/%d kept %d views, want 1", n, lv.kept())
		}
		if st, err := p.Compact(); err != nil || st.RecordsRemoved == 0 {
			t.Fatalf("compaction: %+v, %v", st, err)
		}
		want := text(n)
		if want == old {
			t.Fatalf("compaction left the text from offset %d as it was", n)
		}
		// The stat (a GETATTR once the attributes the lookup gave, valid
		// for a nanosecond counted in jiffies, are two jiffies old)
		// sizes the compacted log, not the lookup's view.
		time.Sleep(25 * time.Millisecond)
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() != int64(len(want)) {
			t.Fatalf("round %d: offset/%d has size %d after compaction, want the compacted log's %d (the lookup's view: %d)",
				round, n, fi.Size(), len(want), len(old))
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Fatalf("round %d: offset/%d read %d bytes after compaction, want the compacted log's %d (the lookup's text had %d):\n%q\nwant\n%q",
				round, n, len(got), len(want), len(old), got, want)
		}
		if lv.kept() == 0 {
			return // the open came to the lookup's node and set its view aside
		}
		if time.Since(start) < cacheTimeout {
			t.Fatalf("round %d: the open left the lookup's view kept", round)
		}
		if round == 4 {
			t.Fatalf("each of %d rounds outlasted the %v entry timeout", round+1, cacheTimeout)
		}
		t.Logf("round %d took %v, past the entry timeout: again", round, time.Since(start))
		lv.closeAll()
	}
}

// keepLookupViews makes m's lookups keep their views for the open however
// long the test takes.
func keepLookupViews(m *testMount) *lookupViews {
	lv := &m.srv.fs.lookupViews
	lv.mu.Lock()
	lv.ttl = time.Hour
	lv.mu.Unlock()
	return lv
}

func (l *lookupViews) kept() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ents)
}

// TestOffsetGetattrKeepsLookupView: a GETATTR of offset/N between its
// LOOKUP and its OPEN (`stat` then `cat`, or the permission check of an
// open(2) delayed past a jiffy) answers from the view the lookup kept for
// the open and leaves it there; the open then takes it. It used to take
// the view, size it and close it, and the open built it again.
func TestOffsetGetattrKeepsLookupView(t *testing.T) {
	m := mountForTest(t, Options{})
	lv := keepLookupViews(m)
	p := m.topic(t, "g")
	var all []byte
	for i := range 300 {
		all = fmt.Appendf(all, "line %d\n", i)
	}
	if _, _, err := p.AppendLines(all); err != nil {
		t.Fatal(err)
	}
	name := m.path("g", "0", "offset", "100")
	want := string(all[len("line 0\n")*10+len("line 10\n")*90:])
	if _, err := os.Stat(name); err != nil {
		t.Fatal(err)
	}
	if lv.kept() != 1 {
		t.Fatalf("the lookup kept %d views, want 1", lv.kept())
	}
	// The attributes time out after a nanosecond, in jiffies: past two
	// (HZ 100 at the least), the next stat is a GETATTR.
	time.Sleep(25 * time.Millisecond)
	fi, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != int64(len(want)) {
		t.Fatalf("stat: size %d, want %d", fi.Size(), len(want))
	}
	if lv.kept() != 1 {
		t.Fatalf("after a GETATTR %d views are kept for the open, want 1", lv.kept())
	}
	got, err := os.ReadFile(name)
	if err != nil || string(got) != want {
		t.Fatalf("read %q, %v; want %q", got, err, want)
	}
	if lv.kept() != 0 {
		t.Fatalf("the open left %d views kept", lv.kept())
	}
}
