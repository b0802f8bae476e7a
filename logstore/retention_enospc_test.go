package logstore

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// smallTmpfs mounts a tmpfs of opts (size=, nr_inodes=) on a fresh
// directory, unmounted at cleanup. It needs root.
func smallTmpfs(t *testing.T, opts string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounts a tmpfs: needs root")
	}
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if exec.Command("umount", dir).Run() != nil {
			exec.Command("umount", "-l", dir).Run()
		}
	})
	return dir
}

// exhaustInodes creates empty files under dir until the filesystem
// refuses another (ENOSPC), and returns them: removing one gives back
// exactly one inode.
func exhaustInodes(t *testing.T, dir string) []string {
	t.Helper()
	fill := filepath.Join(dir, "fill")
	if err := os.MkdirAll(fill, 0o755); err != nil {
		t.Fatal(err)
	}
	var made []string
	for i := 0; ; i++ {
		name := filepath.Join(fill, fmt.Sprint(i))
		f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if errors.Is(err, syscall.ENOSPC) {
			return made
		}
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		made = append(made, name)
		if i > 1_000_000 {
			t.Fatal("the filesystem never ran out of inodes")
		}
	}
}

// TestRetentionPurgeRollENOSPC: when every segment is past retention.ms,
// the pass rolls a new segment at the log end before it deletes them
// (the purge); on a disk that cannot create the new segment's files (a
// tmpfs out of inodes: ENOSPC from open(O_CREAT), as on any filesystem
// out of inodes) the pass fails with ENOSPC, is logged, deletes nothing
// and leaves the partition unfenced: every record stays readable, and
// once space is back the next pass purges and the next append lands at
// the log end. A crash meanwhile loses nothing either. With one inode
// free the roll fails after creating the new .log, when its index cannot
// be created.
func TestRetentionPurgeRollENOSPC(t *testing.T) {
	for _, crash := range []bool{false, true} {
		for _, free := range []int{0, 1} {
			t.Run(fmt.Sprintf("crash=%v/free_inodes=%d", crash, free), func(t *testing.T) {
				testRetentionPurgeRollENOSPC(t, crash, free)
			})
		}
	}
}

func testRetentionPurgeRollENOSPC(t *testing.T, crash bool, free int) {
	fs := smallTmpfs(t, "size=64m,nr_inodes=400")
	dir := filepath.Join(fs, "data")
	clock := newClock()
	logBuf := &lockedBuffer{}
	s, err := Open(dir, Options{Now: clock.now, Logger: slog.New(slog.NewTextHandler(logBuf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.abandon() }()
	tp, err := s.CreateTopic("q", 1, map[string]string{"retention.ms": "1000", "file.delete.delay.ms": "0"})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tp.Partition(0)
	if _, _, err := p.AppendLines([]byte("a\nb\nc\n")); err != nil {
		t.Fatal(err)
	}
	view, err := p.Text(0)
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	fillers := exhaustInodes(t, fs)
	for _, f := range fillers[len(fillers)-free:] {
		os.Remove(f)
	}
	fillers = fillers[:len(fillers)-free]
	clock.ms.Add(5000)
	s.runCleanup("retention", (*Partition).ApplyRetention)
	logged := logBuf.String()
	if !strings.Contains(logged, "retention failed") || !strings.Contains(logged, "no space left on device") {
		t.Fatalf("the failed pass was not logged with its ENOSPC:\n%s", logged)
	}
	if _, err := p.ApplyRetention(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a pass whose roll cannot create the new segment: %v, want ENOSPC", err)
	}
	if p.Fenced() {
		t.Fatal("the failed roll fenced the partition")
	}
	if st := statusOf(t, p); st.LogStartOffset != 0 || st.LogEndOffset != 3 {
		t.Fatalf("after the failed purge: %+v, want start 0 end 3", st)
	}
	if got := textOf(t, p, 0); got != "a\nb\nc\n" {
		t.Fatalf("after the failed purge the log reads %q", got)
	}
	if got := readAll(t, view); got != "a\nb\nc\n" {
		t.Fatalf("a view opened before reads %q", got)
	}
	if crash {
		s.abandon()
	}
	for _, f := range fillers {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	if crash {
		s = openStore(t, dir, clock)
		p, _ = s.Partition("q", 0)
		if st := statusOf(t, p); st.LogStartOffset != 0 || st.LogEndOffset != 3 {
			t.Fatalf("after a crash and restart: %+v, want start 0 end 3", st)
		}
		if got := textOf(t, p, 0); got != "a\nb\nc\n" {
			t.Fatalf("after a crash and restart the log reads %q", got)
		}
	}
	// Room again: the next pass purges, and the next record keeps its
	// offset.
	st, err := p.ApplyRetention()
	if err != nil || st.SegmentsDeleted == 0 || st.NewLogStart != 3 {
		t.Fatalf("the pass after space came back: %+v %v", st, err)
	}
	if base, _, err := p.AppendLines([]byte("d\n")); err != nil || base != 3 {
		t.Fatalf("the append after space came back: offset %d (%v), want 3", base, err)
	}
	if got := textOf(t, p, 3); got != "d\n" {
		t.Fatalf("after the purge the log reads %q", got)
	}
	if !crash {
		if got := readAll(t, view); got != "a\nb\nc\nd\n" {
			t.Fatalf("the view opened before the purge reads %q", got)
		}
	}
	s.Close()
	s = openStore(t, dir, clock)
	p, _ = s.Partition("q", 0)
	if st := statusOf(t, p); st.LogStartOffset != 3 || st.LogEndOffset != 4 || textOf(t, p, 3) != "d\n" {
		t.Fatalf("after a restart: %+v", st)
	}
}

// TestRetentionDeleteRenameFails: retention deletes the oldest segment but
// cannot rename its .log to .deleted (cleanerFault: EIO). The pass logs it
// and the log start moves on; the file left under its name lies below the
// log start, so a restart serves nothing of it, and the next pass deletes
// it, after a clean restart or a crash. The log-start checkpoint named no
// log start equal to the first segment's base in memory, so the restart
// served the deleted records again from offset 0.
func TestRetentionDeleteRenameFails(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(fmt.Sprintf("crash=%v", crash), func(t *testing.T) { testRetentionDeleteRenameFails(t, crash) })
	}
}

func testRetentionDeleteRenameFails(t *testing.T, crash bool) {
	dir := t.TempDir()
	logBuf := &lockedBuffer{}
	s, err := Open(dir, Options{Now: newClock().now, Logger: slog.New(slog.NewTextHandler(logBuf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	tp, _ := s.CreateTopic("r", 1, map[string]string{"segment.bytes": "1000", "file.delete.delay.ms": "0"})
	p, _ := tp.Partition(0)
	for i := 0; i < 60; i++ {
		if _, _, err := p.AppendLines([]byte(fmt.Sprintf("line %02d %s\n", i, strings.Repeat("x", 30)))); err != nil {
			t.Fatal(err)
		}
	}
	p.mu.RLock()
	first, second := p.segs[0], p.segs[1]
	p.mu.RUnlock()
	tp.SetConfig(map[string]string{"retention.bytes": fmt.Sprint(p.Size() - first.size.Load())})
	cleanerFault = func(op, name string) error {
		if name == first.path(logSuffix)+deletedSuffix {
			return syscall.EIO
		}
		return nil
	}
	st, err := p.ApplyRetention()
	cleanerFault = nil
	if err != nil || st.SegmentsDeleted != 1 || st.NewLogStart != second.base {
		t.Fatalf("the pass: %+v %v, want the first segment deleted, the log start at %d", st, err, second.base)
	}
	if !strings.Contains(logBuf.String(), "deleted segment not renamed") {
		t.Fatalf("the failed rename was not logged:\n%s", logBuf.String())
	}
	want := textOf(t, p, second.base)
	if crash {
		s.abandon()
	} else if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, nil)
	p = mustPartition(t, s, "r")
	if p.LogStartOffset() != second.base || textOf(t, p, second.base) != want {
		t.Fatalf("after a restart: log start %d, want %d", p.LogStartOffset(), second.base)
	}
	if _, err := p.Text(0); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("Text(0) below the log start after a restart: %v", err)
	}
	if _, err := p.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(first.path(logSuffix)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the next pass left the deleted segment's .log: %v", err)
	}
}

// TestLoadWipeRenameFails: a load that finds the log ending below the
// checkpointed log start deletes every segment and starts the log afresh
// there (TestLoadLogEndBelowCheckpointedLogStart); when it cannot rename
// the old segment's .log to .deleted (cleanerFault: EIO), the file stays
// under its name below the new log start, and the log-start checkpoint
// must go on naming that start, or the next open serves the deleted
// records again from offset 0.
func TestLoadWipeRenameFails(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	tp, err := s.CreateTopic("lost", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tp.Partition(0)
	if _, _, err := p.AppendLines([]byte("0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	segLog := filepath.Join(dir, "lost-0", segmentName(0)+logSuffix)
	fi, err := os.Stat(segLog)
	if err != nil {
		t.Fatal(err)
	}
	durable := fi.Size()
	s = openStore(t, dir, nil)
	p = mustPartition(t, s, "lost")
	if _, _, err := p.AppendLines([]byte("10\n11\n")); err != nil {
		t.Fatal(err)
	}
	if start, err := p.DeleteRecords(12); err != nil || start != 12 {
		t.Fatalf("DeleteRecords(12): %d %v", start, err)
	}
	s.abandon()
	if err := os.Truncate(segLog, durable); err != nil { // the power cut took 10-11
		t.Fatal(err)
	}
	cleanerFault = func(op, name string) error {
		if name == segLog+deletedSuffix {
			return syscall.EIO
		}
		return nil
	}
	s, err = Open(dir, Options{Logger: discardLogger()})
	cleanerFault = nil
	if err != nil {
		t.Fatal(err)
	}
	p = mustPartition(t, s, "lost")
	if p.LogStartOffset() != 12 || p.LogEndOffset() != 12 {
		t.Fatalf("after the load: start %d end %d, want 12 12", p.LogStartOffset(), p.LogEndOffset())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, nil)
	defer s.Close()
	p = mustPartition(t, s, "lost")
	if p.LogStartOffset() != 12 || p.LogEndOffset() != 12 {
		t.Fatalf("after the next open: start %d end %d, want 12 12", p.LogStartOffset(), p.LogEndOffset())
	}
	if _, err := p.Text(0); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("Text(0) below the log start: %v", err)
	}
}
