package logstore

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/segfs/segfs/logstore/record"
)

// storeFiles describes every directory and file under dir (mode, inode,
// size, mtime, content) except the data directory itself and the
// bookkeeping at its top that every open and clean close must change:
// the lock file, the clean-shutdown marker and the sync probe.
func storeFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		switch rel {
		case ".", lockFile, cleanShutdownFile, syncProbeFile:
			return nil
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("%v ino %d size %d mtime %d", fi.Mode().Type(), fi.Sys().(*syscall.Stat_t).Ino, fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %q", b)
		}
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReopenIdleChangesNothing: an Open and a clean Close with nothing
// appended in between leave every partition directory and every file as
// they were: same inode, size, mtime and bytes. Close rewrote the
// producer snapshot of every partition (temp+rename: a new inode and the
// directory's mtime moved), and the active segment's indexes, grown at
// open and trimmed at close, took new mtimes. The clean-shutdown marker
// still comes and goes: removed at open, written at close, and a crash
// after an idle open recovers.
func TestReopenIdleChangesNothing(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, newClock())
	if _, err := s.CreateTopic("lines", 2, map[string]string{"segment.bytes": "2048", "index.interval.bytes": "100"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTopic("idle", 1, nil); err != nil {
		t.Fatal(err)
	}
	p := mustPartition(t, s, "lines")
	for i := range 300 {
		if _, _, err := p.AppendLines(fmt.Appendf(nil, "line %d\n", i)); err != nil {
			t.Fatal(err)
		}
	}
	// An idempotent producer: a snapshot with an entry, written durably.
	prod, _ := s.CreateTopic("prod", 1, nil)
	pp, _ := prod.Partition(0)
	var bl record.Builder
	spec := record.DefaultSpec()
	spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence = 7, 0, 0
	bl.Reset(spec)
	// Stamped by the store's clock: Kafka's timestamp check refuses a
	// record an hour past it.
	bl.Add(s.now().UnixMilli(), nil, []byte("produced"), nil)
	b, err := bl.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pp.AppendBatch(b); err != nil {
		t.Fatal(err)
	}
	want := textOf(t, p, 0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if len(listSnapshots(filepath.Join(dir, "prod-0"))) == 0 || len(listSnapshots(filepath.Join(dir, "lines-0"))) == 0 {
		t.Fatal("no producer snapshots written at close")
	}

	before := storeFiles(t, dir)
	s = openStore(t, dir, newClock())
	if _, err := os.Stat(filepath.Join(dir, cleanShutdownFile)); !os.IsNotExist(err) {
		t.Fatalf("the clean-shutdown marker is still there while open (%v)", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, cleanShutdownFile)); err != nil {
		t.Fatalf("no clean-shutdown marker after Close: %v", err)
	}
	after := storeFiles(t, dir)
	var diff []string
	for k, v := range before {
		if after[k] != v {
			diff = append(diff, fmt.Sprintf("%s:\n  before %.200s\n  after  %.200s", k, v, after[k]))
		}
	}
	for k, v := range after {
		if _, ok := before[k]; !ok {
			diff = append(diff, fmt.Sprintf("new %s: %.200s", k, v))
		}
	}
	sort.Strings(diff)
	if len(diff) > 0 {
		t.Fatalf("an idle open and close changed:\n%s", strings.Join(diff, "\n"))
	}

	// A crash after an idle open: recovery finds everything, and a clean
	// close after it writes what changed (the recovered partitions).
	s = openStore(t, dir, newClock())
	s.abandon()
	s = openStore(t, dir, newClock())
	if got := textOf(t, mustPartition(t, s, "lines"), 0); got != want {
		t.Fatalf("after a crash following an idle open: %d bytes of text, want %d", len(got), len(want))
	}
	if _, _, err := mustPartition(t, s, "idle").AppendLines([]byte("x\n")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := storeFiles(t, dir)["idle-0/00000000000000000001.snapshot"]; got == "" {
		t.Errorf("no producer snapshot at the new log end 1 of a partition appended to after the idle cycles")
	}
}
