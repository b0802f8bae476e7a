package logstore

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func journalPath(p *Partition) string { return filepath.Join(p.dir, unfinishedFile) }

func journalSize(t *testing.T, p *Partition) int64 {
	t.Helper()
	fi, err := os.Stat(journalPath(p))
	if errors.Is(err, os.ErrNotExist) {
		return 0 // as good as empty; the store keeps an empty one
	}
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// crashReopen abandons s as kill -9 would (the page cache stays) and opens
// the data directory again.
func crashReopen(t *testing.T, s *Store, dir, topic string) (*Store, *Partition) {
	t.Helper()
	s.abandon()
	s = openStore(t, dir, newClock())
	t.Cleanup(func() { s.Close() })
	return s, mustPartition(t, s, topic)
}

func mustAppend(t *testing.T, w *LineWriter, head, text, tail string) {
	t.Helper()
	var h []byte
	if head != "" {
		h = []byte(head)
	}
	if _, _, _, err := w.AppendLines(h, []byte(text), []byte(tail)); err != nil {
		t.Fatal(err)
	}
}

// A writer's unfinished line, journaled by Extend and AppendLines, is a
// record after a crash, with the time of its last write; a line a later
// append ended is not there twice; the journal is gone afterwards.
func TestUnfinishedRecoveredAfterCrash(t *testing.T) {
	dir, s, p := openUnfinished(t, nil)
	w1, w2, w3 := p.NewLineWriter(), p.NewLineWriter(), p.NewLineWriter()
	mustExtend(t, w1, "one-")
	mustExtend(t, w2, "two")
	mustAppend(t, w1, "one-done\n", "x\n", "tail-")
	mustExtend(t, w1, "more")
	// w3's line ends before the crash: nothing of it is recovered.
	mustExtend(t, w3, "three")
	mustAppend(t, w3, "three\n", "", "")
	mustExtend(t, w2, "-2")
	wantTs := s.now().UnixMilli() // the clock ticks a ms per reading
	if journalSize(t, p) <= 0 {
		t.Fatal("no journal while writers have unfinished lines")
	}
	s, p = crashReopen(t, s, dir, "a")
	// Recovered in the order of the writers' last entries: w1, then w2.
	wantText(t, p, "text after crash", "one-done\nx\nthree\ntail-more\ntwo-2\n")
	recs := linearRecords(t, p)
	if ts := recs[len(recs)-1].ts; ts >= wantTs || ts < wantTs-5 {
		t.Fatalf("recovered line's timestamp %d, want its write time just before %d", ts, wantTs)
	}
	wantJournalEmpty(t, p, "journal left after recovery")
	// A clean stop leaves none either.
	w := p.NewLineWriter()
	mustExtend(t, w, "abc")
	mustAppend(t, w, "abc\n", "", "")
	s.Close()
	wantJournalEmpty(t, p, "journal left after a clean close")
}

// An entry whose batches did not reach the log did not happen: the
// writer's line is what its earlier entries say.
func TestUnfinishedConditionalBatchMissing(t *testing.T) {
	dir, s, p := openUnfinished(t, nil)
	mustAppend(t, p.NewLineWriter(), "", "first\n", "")
	seg := p.active().path(logSuffix)
	fi, _ := os.Stat(seg)
	w := p.NewLineWriter()
	mustExtend(t, w, "ab")
	// The line "abc" is appended and "xy" becomes the unfinished line,
	// but the batch is lost (the segment cut back below it).
	mustAppend(t, w, "abc\n", "", "xy")
	s.abandon()
	if err := os.Truncate(seg, fi.Size()); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, newClock())
	defer s.Close()
	wantText(t, mustPartition(t, s, "a"), "text", "first\nab\n")
}

// A torn or damaged entry ends the journal: the entries before it count.
func TestUnfinishedTornEntry(t *testing.T) {
	for _, damage := range []string{"torn", "bitflip"} {
		t.Run(damage, func(t *testing.T) {
			dir, s, p := openUnfinished(t, nil)
			w1, w2 := p.NewLineWriter(), p.NewLineWriter()
			mustExtend(t, w1, "w1")
			mustExtend(t, w2, "w2")
			before := journalSize(t, p)
			mustExtend(t, w1, "-lost")
			path := journalPath(p)
			s.abandon()
			switch damage {
			case "torn":
				if err := os.Truncate(path, before+10); err != nil {
					t.Fatal(err)
				}
			case "bitflip":
				b, _ := os.ReadFile(path)
				b[len(b)-2] ^= 0x40
				os.WriteFile(path, b, 0o644)
			}
			s = openStore(t, dir, newClock())
			defer s.Close()
			p = mustPartition(t, s, "a")
			wantText(t, p, "text", "w1\nw2\n")
			wantJournalEmpty(t, p, "journal left")
		})
	}
}

// The journal is cut to nothing once no writer has a line, and rewritten
// when it grew past unfinishedRewriteAt.
func TestUnfinishedBounded(t *testing.T) {
	dir, s, p := openUnfinished(t, nil)
	w := p.NewLineWriter()
	// Whole lines only: nothing is journaled.
	mustAppend(t, w, "", "a\nb\n", "")
	wantJournalEmpty(t, p, "journal written for whole lines")
	mustExtend(t, w, "x")
	mustAppend(t, w, "x\n", "", "")
	wantJournalEmpty(t, p, "journal after the last line ended (want 0)")
	// A long cat: every WRITE ends inside a line.
	other := p.NewLineWriter()
	mustExtend(t, other, "kept")
	chunk := strings.Repeat("0123456789abcdef\n", 100)
	var max int64
	for i := 0; i < 3000; i++ {
		mustAppend(t, w, "", chunk, "part")
		max = maxInt(max, journalSize(t, p))
	}
	if max > unfinishedRewriteAt+1000 {
		t.Fatalf("journal grew to %d bytes", max)
	}
	if n := journalSize(t, p); n > unfinishedRewriteAt {
		t.Fatalf("journal %d bytes", n)
	}
	s, p = crashReopen(t, s, dir, "a")
	text := textOf(t, p, 0)
	if !strings.HasSuffix(text, chunk+"kept\npart\n") && !strings.HasSuffix(text, chunk+"part\nkept\n") {
		t.Fatalf("text ends %q", text[len(text)-40:])
	}
	if strings.Count(text, "kept\n") != 1 || strings.Count(text, "part\n") != 1 {
		t.Fatal("a line recovered twice")
	}
}

func maxInt(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// A failed append leaves the journal saying what the writer holds: its
// old line when nothing was stored (even after later appends move the log
// past the failed entry's condition), no line after a short write.
func TestUnfinishedFailedAppend(t *testing.T) {
	enospc := func(int) error { return syscall.ENOSPC }
	// 30 lines of 100 bytes: several batches under max.message.bytes=1000.
	batches := strings.Repeat(strings.Repeat("y", 99)+"\n", 30)
	t.Run("nothing stored", func(t *testing.T) {
		dir, s, p := openUnfinished(t, nil)
		w := p.NewLineWriter()
		mustExtend(t, w, "ab")
		if stored, err := appendFailing(w, "d\n", enospc); err == nil || stored != 0 {
			t.Fatalf("append: stored %d err %v", stored, err)
		}
		// Others append past the failed entry's condition.
		appendWholeLines(t, p, 5)
		s, p = crashReopen(t, s, dir, "a")
		wantText(t, p, "text", "q\nq\nq\nq\nq\nab\n")
	})
	t.Run("nothing stored of several batches", func(t *testing.T) {
		// The entry for the first batch (no line once it is in) is
		// undone too.
		dir, s, p := openUnfinished(t, map[string]string{"max.message.bytes": "1000"})
		w := p.NewLineWriter()
		mustExtend(t, w, "ab")
		if stored, err := appendFailing(w, batches, enospc); err == nil || stored != 0 {
			t.Fatalf("append: stored %d err %v", stored, err)
		}
		appendWholeLines(t, p, 40)
		s, p = crashReopen(t, s, dir, "a")
		wantText(t, p, "text", strings.Repeat("q\n", 40)+"ab\n")
	})
	t.Run("short write", func(t *testing.T) {
		dir, s, p := openUnfinished(t, map[string]string{"max.message.bytes": "1000"})
		w := p.NewLineWriter()
		mustExtend(t, w, "ab")
		stored, err := appendFailing(w, batches, func(stored int) error {
			if stored > 0 {
				return syscall.ENOSPC
			}
			return nil
		})
		if err == nil || stored == 0 {
			t.Fatalf("append: stored %d err %v", stored, err)
		}
		appendWholeLines(t, p, 40)
		before := textOf(t, p, 0)
		s, p = crashReopen(t, s, dir, "a")
		if got := textOf(t, p, 0); got != before {
			t.Fatalf("recovery added %q", got[len(before):])
		}
	})
	t.Run("refused", func(t *testing.T) {
		dir, s, p := openUnfinished(t, map[string]string{"cleanup.policy": "compact", "key.separator": ":"})
		w := p.NewLineWriter()
		mustExtend(t, w, "k:ab")
		if _, _, _, err := w.AppendLines(nil, []byte("k:1\nnokey\n"), []byte("k:zz")); !errors.Is(err, ErrInvalidRecord) {
			t.Fatalf("append: %v", err)
		}
		// A keyless unfinished line is dropped at recovery, with
		// the other writer's line recovered.
		o := p.NewLineWriter()
		mustExtend(t, o, "keyless")
		s, p = crashReopen(t, s, dir, "a")
		wantText(t, p, "text", "k:ab\n")
		wantJournalEmpty(t, p, "journal left")
	})
}

// A crash during recovery itself recovers each line once.
func TestUnfinishedCrashDuringRecovery(t *testing.T) {
	dir, s, p := openUnfinished(t, nil)
	w1, w2 := p.NewLineWriter(), p.NewLineWriter()
	mustExtend(t, w1, "l1")
	mustExtend(t, w2, "l2")
	// w1 ends a line with a new tail, but that batch is lost.
	seg := p.active().path(logSuffix)
	mustAppend(t, w1, "l1\n", "", "new")
	s.abandon()
	os.Truncate(seg, 0)
	// The recovery's second append fails (the crash).
	n := 0
	appendFail = func(int) error {
		n++
		if n == 2 {
			return syscall.EIO
		}
		return nil
	}
	s = openStore(t, dir, newClock())
	appendFail = nil
	wantText(t, mustPartition(t, s, "a"), "after the failed recovery", "l1\n")
	s, p = crashReopen(t, s, dir, "a")
	wantText(t, p, "text", "l1\nl2\n")
}

// openLogged opens dir with the store's log in buf.
func openLogged(t *testing.T, dir string, buf *bytes.Buffer) (*Store, *Partition) {
	t.Helper()
	s, err := Open(dir, Options{Now: newClock().now, Logger: slog.New(slog.NewTextHandler(buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, mustPartition(t, s, "a")
}

// The state a power cut leaves when the kernel wrote back the segment's
// pages of a batch that ended a writer's line but not the journal's page
// of the entry that cleared it: the journal is copied aside while the line
// is pending, the line is ended, the old journal put back. Its line's start
// must not come back after the line it began (a duplicate); the lines are
// dropped with a warning. Likewise when the journal is behind by another
// writer's batch, or a produced batch: the journal cannot tell whether the
// missing batches ended its lines.
func TestUnfinishedJournalBehindLog(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after func(t *testing.T, p *Partition, a *LineWriter)
		want  string
	}{
		{"line ended", func(t *testing.T, p *Partition, a *LineWriter) {
			mustAppend(t, a, "abc\n", "", "")
		}, "first\nabc\n"},
		{"line ended with a new tail", func(t *testing.T, p *Partition, a *LineWriter) {
			mustAppend(t, a, "abc\n", "", "de")
		}, "first\nabc\n"},
		{"another writer", func(t *testing.T, p *Partition, a *LineWriter) {
			mustAppend(t, p.NewLineWriter(), "", "x\n", "")
		}, "first\nx\n"},
		{"produced", func(t *testing.T, p *Partition, a *LineWriter) {
			if _, err := p.AppendBatch(producedBatch(t, []int64{1}, []string{"k"})); err != nil {
				t.Fatal(err)
			}
		}, "first\nk\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, s, p := openUnfinished(t, nil)
			mustAppend(t, p.NewLineWriter(), "", "first\n", "")
			a, b := p.NewLineWriter(), p.NewLineWriter()
			mustExtend(t, a, "ab")
			mustExtend(t, b, "b-line")
			old, err := os.ReadFile(journalPath(p))
			if err != nil {
				t.Fatal(err)
			}
			tc.after(t, p, a)
			s.abandon()
			if err := os.WriteFile(filepath.Join(dir, "a-0", unfinishedFile), old, 0o644); err != nil {
				t.Fatal(err)
			}
			var logged bytes.Buffer
			_, p = openLogged(t, dir, &logged)
			wantText(t, p, "text after the journal fell behind", tc.want)
			if !strings.Contains(logged.String(), "journal of unfinished lines is behind the log") ||
				!strings.Contains(logged.String(), "lines=2 bytes=8") {
				t.Fatalf("no warning naming the lines dropped:\n%s", logged.String())
			}
			wantJournalEmpty(t, p, "journal left")
		})
	}
}

// A journal consistent with the log (kill -9: both whole) or ahead of it
// (the segment's newer pages lost) recovers its lines as before, whatever
// was appended while a line was pending: other writers' lines, produced
// batches, a transaction marker.
func TestUnfinishedJournalNotBehindLog(t *testing.T) {
	for _, ahead := range []bool{false, true} {
		name := "consistent"
		if ahead {
			name = "journal ahead"
		}
		t.Run(name, func(t *testing.T) {
			dir, s, p := openUnfinished(t, nil)
			mustAppend(t, p.NewLineWriter(), "", "first\n", "")
			seg := p.active().path(logSuffix)
			fi, err := os.Stat(seg)
			if err != nil {
				t.Fatal(err)
			}
			a, b := p.NewLineWriter(), p.NewLineWriter()
			mustExtend(t, a, "ab")
			for i := 0; i < 3; i++ {
				mustAppend(t, b, "", "x\n", "")
			}
			if _, err := p.AppendBatch(producedBatch(t, []int64{1}, []string{"k"})); err != nil {
				t.Fatal(err)
			}
			if _, err := p.WriteTxnMarker(42, 0, 0, true); err != nil {
				t.Fatal(err)
			}
			mustAppend(t, a, "abc\n", "", "de")
			mustAppend(t, b, "", "y\n", "")
			want := "first\nx\nx\nx\nk\nabc\ny\nde\n"
			s.abandon()
			if ahead {
				// Every batch after "first" lost: a's line is what its
				// first entry says.
				if err := os.Truncate(seg, fi.Size()); err != nil {
					t.Fatal(err)
				}
				want = "first\nab\n"
			}
			var logged bytes.Buffer
			_, p = openLogged(t, dir, &logged)
			if got := textOf(t, p, 0); got != want {
				t.Fatalf("text %q, want %q\n%s", got, want, logged.String())
			}
			if strings.Contains(logged.String(), "behind the log") {
				t.Fatalf("lines dropped:\n%s", logged.String())
			}
		})
	}
}

// Writers of whole lines write nothing to the journal while no line is
// pending, and marks stop once the last line is ended.
func TestUnfinishedMarksOnlyWhileLinePending(t *testing.T) {
	_, s, p := openUnfinished(t, nil)
	t.Cleanup(func() { s.Close() })
	b := p.NewLineWriter()
	mustAppend(t, b, "", "x\n", "")
	wantJournalEmpty(t, p, "journal with no line pending")
	a := p.NewLineWriter()
	mustExtend(t, a, "ab")
	before := journalSize(t, p)
	mustAppend(t, b, "", "x\n", "")
	if n := journalSize(t, p); n <= before {
		t.Fatalf("journal %d bytes after an append while a line is pending, %d before: no mark", n, before)
	}
	mustAppend(t, a, "abc\n", "", "")
	wantJournalEmpty(t, p, "journal once no line is pending")
	mustAppend(t, b, "", "x\n", "")
	wantJournalEmpty(t, p, "journal after an append with no line pending")
}

// Marks do not grow the journal without bound while a line stays pending
// under a long run of whole-line appends (a shell holding a line, a
// producer's stream): it is rewritten past unfinishedRewriteAt, and the
// line is recovered once after a crash.
func TestUnfinishedMarksBounded(t *testing.T) {
	dir, s, p := openUnfinished(t, nil)
	holder, echo := p.NewLineWriter(), p.NewLineWriter()
	mustExtend(t, holder, "held")
	n := int(unfinishedRewriteAt/(unfinishedHdr+unfinishedBodyHdr)) + 1000
	var max int64
	for i := 0; i < n; i++ {
		mustAppend(t, echo, "", "x\n", "")
		if i%100 == 0 {
			max = maxInt(max, journalSize(t, p))
		}
	}
	if max > unfinishedRewriteAt+1000 {
		t.Fatalf("journal grew to %d bytes", max)
	}
	s, p = crashReopen(t, s, dir, "a")
	text := textOf(t, p, 0)
	if strings.Count(text, "x\n") != n || !strings.HasSuffix(text, "x\nheld\n") {
		t.Fatalf("%d lines x, text ends %q", strings.Count(text, "x\n"), text[max64(0, len(text)-20):])
	}
}

func max64(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// A write whose lines take several batches (more than max.message.bytes
// of records; the mount's WRITEs go up to 1 MiB) and a crash between its
// batches: the line it completed is in the first batch, so its start is
// not recovered again, the write's tail (never stored) is not either, and
// another writer's line is recovered. The state is the one kill -9 leaves:
// the journal and the segment as they were when the second batch was
// about to be appended.
func TestUnfinishedCrashBetweenBatches(t *testing.T) {
	dir, s, p := openUnfinished(t, map[string]string{"max.message.bytes": "2000"})
	a, b := p.NewLineWriter(), p.NewLineWriter()
	mustExtend(t, a, "ab")
	mustExtend(t, b, "held")
	var journal []byte
	var segSize int64
	appendFail = func(stored int) error {
		if stored > 0 && journal == nil {
			var err error
			if journal, err = os.ReadFile(journalPath(p)); err != nil {
				t.Error(err)
			}
			fi, err := os.Stat(p.active().path(logSuffix))
			if err != nil {
				t.Error(err)
			}
			segSize = fi.Size()
		}
		return nil
	}
	line := strings.Repeat("x", 99) + "\n"
	mustAppend(t, a, "abc\n", strings.Repeat(line, 50), "tail")
	appendFail = nil
	if journal == nil {
		t.Fatal("the write took one batch")
	}
	s.abandon()
	pdir := filepath.Join(dir, "a-0")
	if err := os.WriteFile(filepath.Join(pdir, unfinishedFile), journal, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(pdir, "00000000000000000000.log"), segSize); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	_, p = openLogged(t, dir, &logged)
	text := textOf(t, p, 0)
	n := strings.Count(text, line)
	if n == 0 || n == 50 || text != "abc\n"+strings.Repeat(line, n)+"held\n" {
		t.Fatalf("text after a crash between the batches of a write: %q\n%s", text, logged.String())
	}
}

// A line the recovery drops because its close would have refused it is
// logged with its own length, as a recovered line is, not counting the
// newline the recovery adds to end it.
func TestUnfinishedDroppedLineLoggedLength(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, newClock())
	s.CreateTopic("a", 1, map[string]string{"cleanup.policy": "compact", "key.separator": "="})
	p := mustPartition(t, s, "a")
	w := p.NewLineWriter()
	if err := w.Extend(nil, []byte("nokey")); err != nil { // 5 bytes, no key yet
		t.Fatal(err)
	}
	s.abandon()
	var logged bytes.Buffer
	_, p = openLogged(t, dir, &logged)
	if got := textOf(t, p, 0); got != "" {
		t.Fatalf("text after recovery %q, want none: a keyless line on a compacted topic", got)
	}
	if !strings.Contains(logged.String(), "close would have refused it") || !strings.Contains(logged.String(), " bytes=5 ") {
		t.Fatalf("want the dropped line logged with bytes=5:\n%s", logged.String())
	}
}
