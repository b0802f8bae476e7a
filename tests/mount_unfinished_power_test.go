package tests

import (
	"os"
	"path/filepath"
	"testing"
)

// A power cut after the kernel wrote back the segment's page of the batch
// that completed a writer's line but not the journal's page of the entry
// that cleared it: the journal still says the writer's line is "ab". That
// start must not come back as a record after "abc" (a duplicate): the
// journal is behind the log, so its lines are dropped, with a warning.
// The writeback order is made certain: syncfs while "ab" is pending (the
// journal and the segment durable as they are), then "c\nde" (the entry
// ending the line and keeping "de", and the batch "abc", in the page
// cache), then an fsync of the segment alone, then the cut. ("c\nde" is
// one write(2): coreutils printf buffers it, where bash's builtin would
// write "c\n" and "de" apart, and the first would cut the journal to
// nothing.)
func TestUnfinishedLinePowerCutSegmentAhead(t *testing.T) {
	disk := faultLoopDisk(t, "xfs", 320)
	data := filepath.Join(disk.dir, "data")
	m := mntAt(t, data)
	m.ok(`mkdir "$M/t" && echo first >> "$M/t/0/data"`)
	h := startUnfinishedHolder(t, m, `exec 3>>"$M/t/0/data"
printf ab >&3
sync -f "`+data+`"
/usr/bin/printf 'c\nde' >&3`)
	pdir := filepath.Join(data, "t-0")
	journal, err := os.ReadFile(filepath.Join(pdir, "segfs-unfinished-lines"))
	if err != nil || len(journal) == 0 {
		t.Fatalf("no journal while a line is pending: %v", err)
	}
	seg, err := os.Open(filepath.Join(pdir, "00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}
	if err := seg.Sync(); err != nil {
		t.Fatal(err)
	}
	seg.Close()
	disk.shutdown()
	m.kill9()
	h.stop()
	disk.cycle()
	m.mount()
	if got, want := m.ok(`cat "$M/t/0/data"`), "first\nabc\n"; got != want {
		t.Fatalf("data after the power cut = %q, want %q (the start of a line stored once, the unfinished lines dropped)", got, want)
	}
	wantDaemonLog(t, m, "journal of unfinished lines is behind the log", "no warning that the unfinished lines were dropped")
}
