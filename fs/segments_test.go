package fs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"
)

// TestSegmentFileAcrossRetention: a segments/ file opened before retention
// deletes its segment reads whole afterwards, as an unlinked file does (a
// backup copying segments/ while retention runs gets every byte of what it
// opened), while an open after the deletion, through the dentry the kernel
// still holds, is ENOENT, as is a stat of it, and the name leaves the
// listing.
func TestSegmentFileAcrossRetention(t *testing.T) {
	// No attribute caching: each stat below asks the daemon.
	m := mountForTest(t, Options{attrTimeout: time.Nanosecond})
	if _, err := m.store.CreateTopic("sg", 1, map[string]string{"segment.bytes": "4096", "file.delete.delay.ms": "0"}); err != nil {
		t.Fatal(err)
	}
	p, err := m.store.Partition("sg", 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 400 {
		if _, _, err := p.AppendLines(fmt.Appendf(nil, "line %d of the first segments\n", i)); err != nil {
			t.Fatal(err)
		}
	}
	files := p.SegmentFiles()
	if len(files) < 6 {
		t.Fatalf("%d segment files with segment.bytes=4096, want several segments", len(files))
	}
	const first = "00000000000000000000.log"
	name := m.path("sg", "0", "segments", first)
	// What the mount must serve: the file as it is on disk now (the first
	// segment is rolled, so it does not change).
	h, err := p.OpenSegmentFile(first)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, h.Size())
	_, err = h.File().ReadAt(want, 0)
	h.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 {
		t.Fatal("the first segment is empty")
	}
	// Opened, but not read: no page of it is in the page cache, every
	// byte read below comes from the daemon after the deletion.
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// A second lookup, kept by the kernel (cacheTimeout), for the open
	// after the deletion.
	if _, err := os.Stat(name); err != nil {
		t.Fatal(err)
	}

	if _, err := p.DeleteRecords(p.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.SegmentFileSize(first); ok {
		t.Fatalf("retention left %s", first)
	}

	// The open file keeps its size, as an unlinked file does.
	if st, err := f.Stat(); err != nil || st.Size() != int64(len(want)) {
		t.Fatalf("fstat of %s opened before retention: %v, %v; want size %d", first, st, err, len(want))
	}
	got, err := io.ReadAll(f)
	if err != nil {
		t.Fatalf("read of %s opened before retention: %v", first, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes of %s opened before retention, want the %d it had", len(got), first, len(want))
	}
	if g, err := os.Open(name); !errors.Is(err, os.ErrNotExist) {
		if err == nil {
			g.Close()
		}
		t.Fatalf("open of %s after retention: %v, want ENOENT", first, err)
	}
	ents, err := os.ReadDir(m.path("sg", "0", "segments"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() == first {
			t.Fatalf("segments/ still lists %s", first)
		}
	}
	// The kernel still has the name's dentry (cacheTimeout): the
	// GETATTR of the gone file is ESTALE, and the VFS's retry looks the
	// name up again: ENOENT, not an error of the file's. (While a
	// description of it is open, go-fuse answers the GETATTR from that
	// handle: closed first. The kernel sends the RELEASE after close(2)
	// returns, so a stat may still meet the handle for a moment: it is
	// asked again until the handle is gone, and must then be ENOENT,
	// never another error.)
	f.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		_, err := os.Stat(name)
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("stat of %s after retention: %v, want ENOENT", first, err)
		}
	}
}
