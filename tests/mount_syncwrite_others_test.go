package tests

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMountSyncWriteIgnoresOthersLines: a synchronous write(2) (`dd
// oflag=dsync`) of whole lines promises its own bytes durable, as Linux's
// O_DSYNC syncs the range written, not the other writers' unfinished
// lines. The sync after such a WRITE went through Fsync, which syncs
// every writer's line (a synced mark and an fdatasync of the journal of
// unfinished lines): when that failed (here the journal's fdatasync
// fails EIO; on a full disk, the mark finding no room, ENOSPC) the write
// failed after its line was stored, and a writer that retried it stored
// it twice. It must succeed: its line is on disk.
func TestMountSyncWriteIgnoresOthersLines(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/t"`)
	data := m.path("t", "0", "data")
	// Another writer holds an unfinished line.
	other, err := os.OpenFile(data, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Write([]byte("partial")); err != nil {
		t.Fatal(err)
	}
	// Every fdatasync of the journal fails from now on.
	st := straceInject(t, m.pid, filepath.Join(m.data, "t-0", "segfs-unfinished-lines"), "fdatasync", "error=EIO")
	r := m.sh(`printf 'a\n' | dd of="$M/t/0/data" oflag=dsync,append conv=notrunc status=none`)
	st.Process.Kill()
	st.Wait()
	if r.code != 0 {
		t.Fatalf("dd oflag=dsync of a whole line failed (%s) though the line was stored: records %q",
			r.err, recordsOf(m, "t"))
	}
	wantRecords(t, m, "t", "records after the synchronous write", "a")
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	wantRecords(t, m, "t", "records after the other writer's close", "a|partial")
}
