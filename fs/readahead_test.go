package fs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/segfs/segfs/logstore"
)

// readChunks reads f sequentially in chunks of size until it has want bytes
// or a read fails, the way cat and grep do (one read(2) = one READ).
func readChunks(f *os.File, size, want int) ([]byte, error) {
	var got []byte
	buf := make([]byte, size)
	deadline := time.Now().Add(20 * time.Second)
	for len(got) < want {
		n, err := f.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			if time.Now().After(deadline) {
				return got, fmt.Errorf("EOF after %d of %d bytes", len(got), want)
			}
			time.Sleep(time.Millisecond)
			continue // growing: the rest is still being appended
		}
		if err != nil {
			return got, err
		}
	}
	return got, nil
}

func appendBatches(t *testing.T, p *logstore.Partition, from, n int, want *bytes.Buffer) {
	t.Helper()
	for i := from; i < from+n; i++ {
		var b bytes.Buffer
		for j := range 50 {
			fmt.Fprintf(&b, "batch %d line %d %s\n", i, j, strings.Repeat("v", (i*7+j)%90))
		}
		if _, _, err := p.AppendLines(b.Bytes()); err != nil {
			t.Fatal(err)
		}
		want.Write(b.Bytes())
	}
}

// TestReadAheadSequential reads data sequentially with the chunk sizes of
// cat and grep (and odd ones) while lines are appended: the read-ahead
// renders past what the last READ asked for, sometimes past the end of the
// text at the time, and every byte must still be the text's.
func TestReadAheadSequential(t *testing.T) {
	m := mountForTest(t, Options{})
	p := m.topic(t, "s")
	var want bytes.Buffer
	appendBatches(t, p, 0, 600, &want)
	var more bytes.Buffer
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		appendBatches(t, p, 600, 600, &more)
	}()
	sizes := []int{128 << 10, 96 << 10, 4096, 1 << 20, 1000}
	got := make([][]byte, len(sizes))
	errs := make([]error, len(sizes))
	total := 0
	for i := range 1200 {
		for j := range 50 {
			total += len(fmt.Sprintf("batch %d line %d %s\n", i, j, strings.Repeat("v", (i*7+j)%90)))
		}
	}
	var rg sync.WaitGroup
	for k, size := range sizes {
		rg.Add(1)
		go func() {
			defer rg.Done()
			f, err := os.Open(m.path("s", "0", "data"))
			if err != nil {
				errs[k] = err
				return
			}
			defer f.Close()
			got[k], errs[k] = readChunks(f, size, total)
		}()
	}
	rg.Wait()
	wg.Wait()
	want.Write(more.Bytes())
	for k, size := range sizes {
		if errs[k] != nil {
			t.Fatalf("chunk %d: %v", size, errs[k])
		}
		if !bytes.Equal(got[k], want.Bytes()) {
			t.Fatalf("chunk %d: read %d bytes that differ from the %d written", size, len(got[k]), want.Len())
		}
	}
	// RELEASE follows close(2) asynchronously.
	waitFor(t, func() bool { return readAheadBytes.Load() == 0 })
}

// TestReadAheadJumps mixes sequential reads with reads elsewhere (the
// read-ahead is then for the wrong place and must not be served), and
// closes handles right after a read started one.
func TestReadAheadJumps(t *testing.T) {
	m := mountForTest(t, Options{})
	p := m.topic(t, "j")
	var want bytes.Buffer
	appendBatches(t, p, 0, 1200, &want)
	w := want.Bytes()
	for round := range 20 {
		f, err := os.Open(m.path("j", "0", "data"))
		if err != nil {
			t.Fatal(err)
		}
		size := 4096 + round*1000
		buf := make([]byte, size)
		off := int64(round * 777)
		for step := range 300 {
			if step%50 == 49 {
				off = int64((round*31 + step*977) % len(w)) // jump
			}
			n, err := f.ReadAt(buf, off)
			if err != nil && err != io.EOF {
				t.Fatalf("round %d step %d: %v", round, step, err)
			}
			if !bytes.Equal(buf[:n], w[off:min(int(off)+size, len(w))]) {
				t.Fatalf("round %d step %d: bytes at %d differ", round, step, off)
			}
			off += int64(n)
			if n == 0 {
				off = 0
			}
		}
		f.Close() // a read-ahead may still be rendering
	}
	waitFor(t, func() bool { return readAheadBytes.Load() == 0 })
}

// TestReadAheadDamage: a batch that fails its CRC ends every sequential
// reader at the same byte, whatever its chunk size (so whether or not a
// read-ahead met the damage first), with EIO from the read that reaches
// it, and nothing but good text before it. offset/0 bypasses the page
// cache and returns every good byte before the damaged batch. data is
// read through the page cache, where a short READ would read as the end
// of the file: its READs fail whole, and the reader gets EIO at the start
// of the page holding the damage.
func TestReadAheadDamage(t *testing.T) {
	m := mountForTest(t, Options{})
	p := m.topic(t, "d")
	var want bytes.Buffer
	appendBatches(t, p, 0, 1200, &want)
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	logs, _ := filepath.Glob(filepath.Join(m.store.Dir(), "d-0", "*.log"))
	if len(logs) != 1 {
		t.Fatalf("segments: %v", logs)
	}
	seg, err := os.OpenFile(logs[0], os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := seg.Stat()
	pos := st.Size() * 3 / 5
	b := []byte{0}
	seg.ReadAt(b, pos)
	b[0] ^= 0x10
	if _, err := seg.WriteAt(b, pos); err != nil {
		t.Fatal(err)
	}
	seg.Close()

	exact := -1
	for _, file := range []string{"offset/0", "data"} {
		prefix := -1
		for _, size := range []int{128 << 10, 96 << 10, 4096, 1 << 20, 333} {
			f, err := os.Open(m.path("d", "0", file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := readChunks(f, size, want.Len())
			f.Close()
			if !errors.Is(err, syscall.EIO) {
				t.Fatalf("%s, chunk %d: read %d bytes, err %v; want EIO", file, size, len(got), err)
			}
			if !bytes.HasPrefix(want.Bytes(), got) {
				t.Fatalf("%s, chunk %d: %d bytes before the damage are not the text's", file, size, len(got))
			}
			if prefix < 0 {
				prefix = len(got)
			} else if len(got) != prefix {
				t.Fatalf("%s, chunk %d: EIO after %d bytes, other sizes after %d", file, size, len(got), prefix)
			}
		}
		if exact < 0 {
			// offset/0: every line before the damaged batch.
			exact = prefix
			if prefix == 0 || prefix >= want.Len()*9/10 || want.Bytes()[prefix-1] != '\n' {
				t.Fatalf("offset/0: damage at %d of %d text bytes: not in the middle, or not after a line", prefix, want.Len())
			}
		} else if prefix > exact || exact-prefix >= 4096 || prefix%4096 != 0 {
			t.Fatalf("data: EIO after %d bytes; want the start of the page holding byte %d", prefix, exact)
		}
	}
	waitFor(t, func() bool { return readAheadBytes.Load() == 0 })
}

// TestReadAheadGrowth: a window rendered at the end of the text is short;
// the text then grows, and the reads past the window's end must return
// the new text (and read ahead again).
func TestReadAheadGrowth(t *testing.T) {
	m := mountForTest(t, Options{})
	p := m.topic(t, "g")
	var want bytes.Buffer
	appendBatches(t, p, 0, 200, &want)
	f, err := os.Open(m.path("g", "0", "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const size = 8192
	// Stop a little before the end: the window holds the rest, short.
	got, err := readChunks(f, size, want.Len()-3*size)
	if err != nil {
		t.Fatal(err)
	}
	for round := 1; round <= 3; round++ {
		appendBatches(t, p, round*200, 200, &want)
		more, err := readChunks(f, size, want.Len()-len(got)-3*size)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, more...)
	}
	rest, err := readChunks(f, size, want.Len()-len(got))
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, rest...)
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("read %d bytes that differ from the %d written", len(got), want.Len())
	}
}

// TestWaitReleasesUnreleasedReaders: the kernel sends RELEASE after
// close(2) has returned, in the background, and an unmount that comes
// first ends the connection with the RELEASE still queued, so the daemon
// never hears of the close. When the mount ends, such a handle's
// read-ahead windows must still go back to the budget (readAheadBytes,
// shared by the whole process) and its reference to the view be dropped.
// They stayed charged, and a later mount in the process found them there:
// TestReadAheadSequential, run after TestDataPageCache under load, waited
// in vain for the budget to drain. The handle here is opened and read as
// the kernel would, and never released.
func TestWaitReleasesUnreleasedReaders(t *testing.T) {
	m := mountForTest(t, Options{})
	p := m.topic(t, "u")
	var want bytes.Buffer
	appendBatches(t, p, 0, 1200, &want)
	if _, err := os.Stat(m.path("u", "0", "data")); err != nil {
		t.Fatal(err)
	}
	n := m.srv.root.GetChild("u").GetChild("0").GetChild("data").Operations().(*textNode)
	base := readAheadBytes.Load()
	ctx := &fuse.Context{Caller: fuse.Caller{Pid: 1 << 30}}
	fh, _, errno := n.Open(ctx, syscall.O_RDONLY)
	if errno != 0 {
		t.Fatalf("OPEN: %v", errno)
	}
	h := fh.(*readHandle)
	buf := make([]byte, 128<<10)
	for off := 0; off < 3*len(buf); off += len(buf) {
		res, errno := h.Read(ctx, buf, int64(off))
		if errno != 0 {
			t.Fatalf("READ at %d: %v", off, errno)
		}
		got, _ := res.Bytes(buf)
		if !bytes.Equal(got, want.Bytes()[off:off+len(buf)]) {
			t.Fatalf("READ at %d: %d bytes that are not the text's", off, len(got))
		}
		res.(*sliceResult).Done() // as go-fuse does once the reply is written
	}
	if readAheadBytes.Load() == base {
		t.Fatal("sequential reads started no read-ahead: the test tests nothing")
	}
	n.mu.Lock()
	refs := n.refs
	n.mu.Unlock()
	if err := m.srv.Unmount(time.Second); err != nil {
		t.Fatal(err)
	}
	m.srv.Wait()
	if got := readAheadBytes.Load(); got != base {
		t.Errorf("after the mount ended, read-ahead holds %d bytes more than before the open", got-base)
	}
	n.mu.Lock()
	after := n.refs
	n.mu.Unlock()
	if after != refs-1 {
		t.Errorf("the view has %d references after the mount ended, %d with the handle open; want the handle's dropped", after, refs)
	}
}
