package logstore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// powerCutRig keeps, as a power cut would, each journal's content as of
// its last fdatasync (the segments are kept whole: the worst case, a
// segment ahead of its journal).
//
// failSyncs makes fdatasyncs of journals fail as a disk's writeback error
// does on Linux: the file's pages written so far never reach the disk,
// and later fdatasyncs of the same file succeed all the same (fsyncgate),
// so its content as a power cut keeps it stays as of its last sync before
// the failure, until a rewrite replaces the file. (A rewritten file keeps
// its temp name, the rewrite's own: a test fails one sync at most.)
type powerCutRig struct {
	mu      sync.Mutex
	durable map[string][]byte // journal path: content at its last sync
	fail    int               // fdatasyncs of journals still to fail
	lost    map[string]bool   // journal files whose sync failed
}

// failSyncs makes the next n fdatasyncs of a journal fail with EIO.
func (r *powerCutRig) failSyncs(t *testing.T, n int) {
	r.mu.Lock()
	r.fail = n
	r.mu.Unlock()
	fdatasyncFail = func(name string) error {
		if filepath.Base(strings.TrimSuffix(name, ".tmp")) != unfinishedFile {
			return nil
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.fail == 0 {
			return nil
		}
		r.fail--
		r.lost[name] = true
		return syscall.EIO
	}
	t.Cleanup(func() { fdatasyncFail = nil })
}

func newPowerCutRig(t *testing.T) *powerCutRig {
	r := &powerCutRig{durable: map[string][]byte{}, lost: map[string]bool{}}
	fdatasyncDone = func(name string) {
		if filepath.Base(strings.TrimSuffix(name, ".tmp")) != unfinishedFile {
			return
		}
		r.mu.Lock()
		lost := r.lost[name]
		if strings.HasSuffix(name, ".tmp") {
			// A rewrite: a new file, renamed over the one that failed.
			delete(r.lost, strings.TrimSuffix(name, ".tmp"))
		}
		r.mu.Unlock()
		if lost {
			return
		}
		b, err := os.ReadFile(name)
		if errors.Is(err, os.ErrNotExist) && strings.HasSuffix(name, ".tmp") {
			// A rewritten journal's file, open under the name it
			// had before its rename.
			b, err = os.ReadFile(strings.TrimSuffix(name, ".tmp"))
		}
		if err != nil {
			t.Error(err)
		}
		r.mu.Lock()
		// A rewrite's temp file is synced, then renamed and the
		// directory synced: its content is the journal's.
		r.durable[strings.TrimSuffix(name, ".tmp")] = b
		r.mu.Unlock()
	}
	t.Cleanup(func() { fdatasyncDone = nil })
	return r
}

// cut abandons s and puts back every journal as of its last sync (empty
// if never synced), then reopens dir with the log in logged.
func (r *powerCutRig) cut(t *testing.T, s *Store, dir string, logged *bytes.Buffer) *Partition {
	t.Helper()
	// The power is cut now: what abandon's close of the partitions
	// syncs (a rewrite of a broken journal) does not count.
	fdatasyncDone = nil
	s.abandon()
	path := filepath.Join(dir, "a-0", unfinishedFile)
	r.mu.Lock()
	b := r.durable[path]
	r.mu.Unlock()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, p := openLogged(t, dir, logged)
	return p
}

// A line its writer synced (fsync(2) of its descriptor through the mount)
// survives a power cut that leaves the journal behind the log because of
// another writer's later appends, whose marks were not synced: it is a
// record after theirs, once. The other writer's unsynced line is dropped
// as before. Whatever ends or replaces the synced line is made durable
// before the batch that ends it, so a power cut never keeps that batch
// with the synced line's older entries: the line's start is not stored
// twice, nor a line the mount dropped stored.
func TestUnfinishedSyncedLineKeptWhenBehind(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   map[string]string
		after func(t *testing.T, p *Partition, a *LineWriter) string // want
	}{
		{"pending", nil, func(t *testing.T, p *Partition, a *LineWriter) string {
			return "first\nx\nab\n"
		}},
		{"extended after its sync", nil, func(t *testing.T, p *Partition, a *LineWriter) string {
			// The extension was not synced: the line as synced, or
			// longer, is kept; here the journal as synced.
			mustExtend(t, a, "cd")
			return "first\nx\nab\n"
		}},
		{"synced again after an extension", nil, func(t *testing.T, p *Partition, a *LineWriter) string {
			mustExtend(t, a, "cd")
			if err := a.Sync([]byte("abcd")); err != nil {
				t.Fatal(err)
			}
			return "first\nx\nabcd\n"
		}},
		{"ended", nil, func(t *testing.T, p *Partition, a *LineWriter) string {
			mustAppend(t, a, "abc\n", "", "")
			return "first\nabc\nx\n"
		}},
		{"ended with a new tail", nil, func(t *testing.T, p *Partition, a *LineWriter) string {
			// "de" was not synced: dropped with the journal behind.
			mustAppend(t, a, "abc\n", "", "de")
			return "first\nabc\nx\n"
		}},
		{"ended by a write of several batches", map[string]string{"max.message.bytes": "2000"}, func(t *testing.T, p *Partition, a *LineWriter) string {
			line := strings.Repeat("y", 99) + "\n"
			mustAppend(t, a, "abc\n", strings.Repeat(line, 50), "tail")
			return "first\nabc\n" + strings.Repeat(line, 50) + "x\n"
		}},
		{"dropped", nil, func(t *testing.T, p *Partition, a *LineWriter) string {
			if err := a.Drop(); err != nil {
				t.Fatal(err)
			}
			return "first\nx\n"
		}},
		{"its end failed to append", nil, func(t *testing.T, p *Partition, a *LineWriter) string {
			// The entry ending the line was synced, then undone in
			// place: the undoing is synced too, or the log reaching
			// the entry's condition (x) would end the line.
			if _, err := appendFailing(a, "", func(int) error { return errors.New("injected") }); err == nil {
				t.Fatal("the append did not fail")
			}
			return "first\nx\nab\n"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rig := newPowerCutRig(t)
			dir, s, p := openUnfinished(t, tc.cfg)
			mustAppend(t, p.NewLineWriter(), "", "first\n", "")
			a, b := p.NewLineWriter(), p.NewLineWriter()
			mustExtend(t, a, "ab")
			mustExtend(t, b, "b-line") // unsynced: dropped
			if err := a.Sync([]byte("ab")); err != nil {
				t.Fatal(err)
			}
			want := tc.after(t, p, a)
			mustAppend(t, p.NewLineWriter(), "", "x\n", "")
			var logged bytes.Buffer
			p = rig.cut(t, s, dir, &logged)
			if got := textOf(t, p, 0); got != want {
				t.Fatalf("text after the power cut %q, want %q\n%s", got, want, logged.String())
			}
			if !strings.Contains(logged.String(), "journal of unfinished lines is behind the log") {
				t.Fatalf("no warning that the unsynced line was dropped:\n%s", logged.String())
			}
			wantJournalEmpty(t, p, "journal left")
		})
	}
}

// A synced line survives the rewrite of the journal that the marks of a
// long run of other writers' appends cause, and a power cut after it
// (the rewrite is synced, as is its rename, when it holds a synced line).
func TestUnfinishedSyncedLineKeptAcrossRewrite(t *testing.T) {
	rig := newPowerCutRig(t)
	dir, s, p := openUnfinished(t, nil)
	holder, echo := p.NewLineWriter(), p.NewLineWriter()
	mustExtend(t, holder, "held")
	if err := holder.Sync([]byte("held")); err != nil {
		t.Fatal(err)
	}
	n := int(unfinishedRewriteAt/(unfinishedHdr+unfinishedBodyHdr)) + 1000
	for i := 0; i < n; i++ {
		mustAppend(t, echo, "", "x\n", "")
	}
	var logged bytes.Buffer
	p = rig.cut(t, s, dir, &logged)
	text := textOf(t, p, 0)
	if strings.Count(text, "x\n") != n || !strings.HasSuffix(text, "x\nheld\n") {
		t.Fatalf("%d lines x, text ends %q\n%s", strings.Count(text, "x\n"), text[max64(0, len(text)-20):], logged.String())
	}
}

// Sync costs nothing to writers that do not sync mid-line: no synced
// mark, and marks stop as before once the synced line is ended.
func TestUnfinishedSyncOnlyForSyncedLines(t *testing.T) {
	_, s, p := openUnfinished(t, nil)
	t.Cleanup(func() { s.Close() })
	a := p.NewLineWriter()
	if err := a.Sync(nil); err != nil {
		t.Fatal(err)
	}
	wantJournalEmpty(t, p, "journal after the Sync of a writer with no line")
	mustExtend(t, a, "ab")
	if err := a.Sync([]byte("ab")); err != nil {
		t.Fatal(err)
	}
	size := journalSize(t, p)
	if err := a.Sync([]byte("ab")); err != nil {
		t.Fatal(err)
	}
	if n := journalSize(t, p); n != size {
		t.Fatalf("journal %d bytes after a second Sync of the same line, %d before: a second synced mark", n, size)
	}
	mustAppend(t, a, "abc\n", "", "")
	wantJournalEmpty(t, p, "journal once the synced line is ended")
	if a.synced {
		t.Fatal("the writer's next line starts synced")
	}
}

// A writer whose writes are synced (O_SYNC, O_DSYNC) journals each line's
// synced mark with the entry that begins it, in the same pwrite: the Sync
// after the write writes nothing, so it cannot fail for want of room
// after the write's bytes were taken. Its lines are kept by a power cut
// that leaves the journal behind, however they began (an extend, a write
// whose lines leave a tail).
func TestUnfinishedSyncWritesMarkWithEntry(t *testing.T) {
	rig := newPowerCutRig(t)
	dir, s, p := openUnfinished(t, nil)
	mustAppend(t, p.NewLineWriter(), "", "first\n", "")
	a, c := p.NewLineWriter(), p.NewLineWriter()
	a.SyncWrites()
	c.SyncWrites()
	mustExtend(t, a, "ab")
	size := journalSize(t, p)
	if size != 2*(unfinishedHdr+unfinishedBodyHdr)+2 {
		t.Fatalf("journal %d bytes after the first write of a synced writer's line: not its entry and mark", size)
	}
	if err := a.Sync([]byte("ab")); err != nil {
		t.Fatal(err)
	}
	if n := journalSize(t, p); n != size {
		t.Fatalf("journal %d bytes after the Sync of a synced writer's line, %d before", n, size)
	}
	mustAppend(t, c, "", "c1\n", "cd")
	if err := c.Sync([]byte("cd")); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, p.NewLineWriter(), "", "x\n", "")
	var logged bytes.Buffer
	p = rig.cut(t, s, dir, &logged)
	if got, want := textOf(t, p, 0), "first\nc1\nx\nab\ncd\n"; got != want {
		t.Fatalf("text after the power cut %q, want %q\n%s", got, want, logged.String())
	}
}

// A synced writer's write of several batches that fails after its first
// (a short write): the tail it journaled, with its synced mark, was not
// stored, and its undoing is synced, so that other writers' appends
// reaching the entry's condition do not make that tail a record after a
// power cut, even when the kernel wrote the entry back before its undoing
// (the journal as it is when the batch fails is taken as on disk).
func TestUnfinishedSyncWritesShortWriteTailNotKept(t *testing.T) {
	rig := newPowerCutRig(t)
	dir, s, p := openUnfinished(t, map[string]string{"max.message.bytes": "2000"})
	mustAppend(t, p.NewLineWriter(), "", "first\n", "")
	a := p.NewLineWriter()
	a.SyncWrites()
	line := strings.Repeat("y", 99) + "\n"
	stored, err := appendFailing(a, strings.Repeat(line, 50), func(stored int) error {
		if stored > 0 {
			b, err := os.ReadFile(journalPath(p))
			if err != nil {
				t.Error(err)
			}
			rig.mu.Lock()
			rig.durable[journalPath(p)] = b
			rig.mu.Unlock()
			return errors.New("injected")
		}
		return nil
	})
	if err == nil || stored == 0 {
		t.Fatalf("the write was not short: stored %d, %v", stored, err)
	}
	n := strings.Count(textOf(t, p, 0), line)
	mustExtend(t, p.NewLineWriter(), "held") // a line pending: the x below write marks
	for i := 0; i < 60; i++ {
		mustAppend(t, p.NewLineWriter(), "", "x\n", "")
	}
	var logged bytes.Buffer
	p = rig.cut(t, s, dir, &logged)
	want := "first\nabc\n" + strings.Repeat(line, n) + strings.Repeat("x\n", 60)
	if got := textOf(t, p, 0); got != want {
		t.Fatalf("text after the power cut ends %q, want it to end %q\n%s", got[max64(0, len(got)-30):], want[len(want)-30:], logged.String())
	}
}

// A failed fdatasync of the journal fails the fsync that syncs a line,
// and a retried fsync must not report the line durable unless it is: on
// Linux a second fdatasync of the file succeeds although the pages the
// first one failed to write may never reach the disk (powerCutRig's
// failSyncs). The journal is
// rewritten (durably, as it holds a synced line) before a sync succeeds
// again. "first sync": the synced mark's own sync fails. "flush": the
// journal's sync in a flush fails after the line grew (extends keep it
// synced), and an fsync then syncs the longer line. The retried Sync used
// to succeed and the power cut then lost the line ("first\n"), or its
// growth ("first\nab\n").
func TestUnfinishedSyncRetryAfterFailedSync(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail func(t *testing.T, rig *powerCutRig, p *Partition, a *LineWriter) string // the line to sync
	}{
		{"first sync", func(t *testing.T, rig *powerCutRig, p *Partition, a *LineWriter) string {
			rig.failSyncs(t, 1)
			if err := a.Sync([]byte("ab")); err == nil {
				t.Fatal("the Sync with a failing fdatasync succeeded")
			}
			return "ab"
		}},
		{"flush", func(t *testing.T, rig *powerCutRig, p *Partition, a *LineWriter) string {
			if err := a.Sync([]byte("ab")); err != nil {
				t.Fatal(err)
			}
			mustExtend(t, a, "cd")
			rig.failSyncs(t, 1)
			if err := p.Flush(); err != nil {
				t.Fatal(err) // the segments are synced all the same
			}
			return "abcd"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rig := newPowerCutRig(t)
			dir, s, p := openUnfinished(t, nil)
			mustAppend(t, p.NewLineWriter(), "", "first\n", "")
			a := p.NewLineWriter()
			mustExtend(t, a, "ab")
			line := tc.fail(t, rig, p, a)
			if err := a.Sync([]byte(line)); err != nil {
				t.Fatalf("the retried Sync failed (the journal is rewritten first): %v", err)
			}
			// The power is cut before any other entry, whose write
			// would rewrite the broken file (appendEntry).
			var logged bytes.Buffer
			p = rig.cut(t, s, dir, &logged)
			if got, want := textOf(t, p, 0), "first\n"+line+"\n"; got != want {
				t.Fatalf("text after the power cut %q, want %q\n%s", got, want, logged.String())
			}
		})
	}
}
