package logstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// allocated is the space the file's blocks take (st_blocks), and its size.
func allocated(t *testing.T, path string) (blocks, size int64) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512, st.Size
}

// needKeepSize skips the test where the filesystem of dir has no
// fallocate(KEEP_SIZE) that frees its blocks at a same-size ftruncate.
func needKeepSize(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, "probe")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(path)
	defer f.Close()
	if err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, 4<<20); err != nil {
		t.Skipf("fallocate(KEEP_SIZE) here: %v", err)
	}
	if b, _ := allocated(t, path); b < 4<<20 {
		t.Skipf("fallocate(KEEP_SIZE) allocated %d bytes", b)
	}
	f.Truncate(0)
	if b, _ := allocated(t, path); b != 0 {
		t.Skipf("ftruncate to the same size kept %d bytes", b)
	}
}

func activeLog(t *testing.T, p *Partition) string {
	t.Helper()
	return p.active().path(logSuffix)
}

// bulkLines is n 100-byte lines (a batch of about n*100 bytes).
func bulkLines(n int) []byte {
	return []byte(strings.Repeat(strings.Repeat("r", 99)+"\n", n))
}

// TestReserveBulkAppend: a large append reserves blocks past the end of
// the active segment, invisible in its size; reads return exactly what was
// written; sealing (clean close) gives the reservation back without
// touching the size or the mtime; and a reopen finds everything.
func TestReserveBulkAppend(t *testing.T) {
	dir := t.TempDir()
	needKeepSize(t, dir)
	s := openStore(t, dir, newClock())
	s.CreateTopic("b", 1, nil)
	p := mustPartition(t, s, "b")
	text := bulkLines(1000)
	var want strings.Builder
	for i := 0; i < 3; i++ {
		if _, _, err := p.AppendLines(text); err != nil {
			t.Fatal(err)
		}
		want.Write(text)
	}
	path := activeLog(t, p)
	blocks, size := allocated(t, path)
	if size != p.active().size.Load() {
		t.Fatalf("file size %d, segment size %d", size, p.active().size.Load())
	}
	if blocks < size+reserveStep-(1<<20) {
		t.Fatalf("%d bytes allocated for %d written: no reservation", blocks, size)
	}
	if got := textOf(t, p, 0); got != want.String() {
		t.Fatal("text differs from what was appended")
	}
	fi, _ := os.Stat(path)
	time.Sleep(20 * time.Millisecond) // a changed mtime would show
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	blocks2, size2 := allocated(t, path)
	if size2 != size {
		t.Fatalf("size %d after close, was %d", size2, size)
	}
	if blocks2 >= size+1<<20 {
		t.Fatalf("%d bytes still allocated for %d after close", blocks2, size)
	}
	if fi2, _ := os.Stat(path); !fi2.ModTime().Equal(fi.ModTime()) {
		t.Fatalf("mtime %v after close, was %v", fi2.ModTime(), fi.ModTime())
	}
	s = openStore(t, dir, newClock())
	defer s.Close()
	if got := textOf(t, mustPartition(t, s, "b"), 0); got != want.String() {
		t.Fatal("text differs after reopen")
	}
}

// TestReserveSmallAppends: line-at-a-time appends reserve nothing.
func TestReserveSmallAppends(t *testing.T) {
	dir := t.TempDir()
	needKeepSize(t, dir)
	s := openStore(t, dir, newClock())
	defer s.Close()
	s.CreateTopic("s", 1, nil)
	p := mustPartition(t, s, "s")
	for i := 0; i < 200; i++ {
		if _, _, err := p.AppendLines(bulkLines(1)); err != nil {
			t.Fatal(err)
		}
	}
	if blocks, size := allocated(t, activeLog(t, p)); blocks >= size+1<<20 {
		t.Fatalf("%d bytes allocated for %d written by small appends", blocks, size)
	}
}

// TestReserveRoll: the reservation never passes segment.bytes and a roll
// gives the old segment's back.
func TestReserveRoll(t *testing.T) {
	dir := t.TempDir()
	needKeepSize(t, dir)
	s := openStore(t, dir, newClock())
	defer s.Close()
	s.CreateTopic("r", 1, map[string]string{"segment.bytes": "2097152"})
	p := mustPartition(t, s, "r")
	first := activeLog(t, p)
	var want strings.Builder
	for p.active().base == 0 {
		text := bulkLines(1000)
		if _, _, err := p.AppendLines(text); err != nil {
			t.Fatal(err)
		}
		want.Write(text)
		if blocks, _ := allocated(t, activeLog(t, p)); blocks > 2097152+1<<20 {
			t.Fatalf("%d bytes allocated in a segment of at most 2 MiB", blocks)
		}
	}
	if blocks, size := allocated(t, first); blocks >= size+1<<20 {
		t.Fatalf("rolled segment keeps %d bytes allocated for %d", blocks, size)
	}
	if got := textOf(t, p, 0); got != want.String() {
		t.Fatal("text differs across the roll")
	}
}

// TestReserveFailure: when fallocate fails (no support, ENOSPC) appends
// work as without reservations, and the segment stops trying.
func TestReserveFailure(t *testing.T) {
	calls := 0
	old := fallocateKeepSize
	fallocateKeepSize = func(*os.File, int64, int64) error { calls++; return unix.ENOSPC }
	defer func() { fallocateKeepSize = old }()
	dir := t.TempDir()
	s := openStore(t, dir, newClock())
	defer s.Close()
	s.CreateTopic("f", 1, nil)
	p := mustPartition(t, s, "f")
	var want strings.Builder
	for i := 0; i < 5; i++ {
		text := bulkLines(1000)
		if _, _, err := p.AppendLines(text); err != nil {
			t.Fatal(err)
		}
		want.Write(text)
	}
	if calls != 1 {
		t.Fatalf("fallocate called %d times after failing, want 1", calls)
	}
	if got := textOf(t, p, 0); got != want.String() {
		t.Fatal("text differs")
	}
}

// TestReserveLeftover: blocks left past the end by a process killed while
// the segment was active are freed when it is sealed after restart.
func TestReserveLeftover(t *testing.T) {
	dir := t.TempDir()
	needKeepSize(t, dir)
	s := openStore(t, dir, newClock())
	s.CreateTopic("k", 1, nil)
	p := mustPartition(t, s, "k")
	text := bulkLines(1000)
	if _, _, err := p.AppendLines(text); err != nil {
		t.Fatal(err)
	}
	path := activeLog(t, p)
	s.abandon() // as kill -9: the reservation stays
	blocks, size := allocated(t, path)
	if blocks < size+1<<20 {
		t.Fatalf("no reservation left to test: %d for %d", blocks, size)
	}
	s = openStore(t, dir, newClock())
	p = mustPartition(t, s, "k")
	if got := textOf(t, p, 0); got != string(text) {
		t.Fatal("text differs after the crash")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if blocks, size := allocated(t, path); blocks >= size+1<<20 {
		t.Fatalf("%d bytes still allocated for %d", blocks, size)
	}
}
