package fs

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestReadDataNodesHoldNoBuffers: a data node keeps its text view until
// the kernel forgets the node, which it does only under memory pressure,
// so a view must not keep its scan and render buffers (1 MiB each) once
// no handle reads through it. Reading data of 32 partitions once each,
// as `grep -r` over the mount does, left 64 MiB in the daemon's heap
// until unmount; now the buffers go back to the pool when the reader
// closes, and the pool is emptied by two collections.
func TestReadDataNodesHoldNoBuffers(t *testing.T) {
	m := mountForTest(t, Options{})
	const parts = 32
	text := strings.Repeat("a line of text\n", 200)
	for i := range parts {
		dir := m.path(fmt.Sprintf("t%d", i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(dir+"/0/data", os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(text); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	heap := func() int64 {
		runtime.GC()
		runtime.GC() // the second empties the pools' victim caches
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapInuse)
	}
	before := heap()
	for i := range parts {
		b, err := os.ReadFile(m.path(fmt.Sprintf("t%d", i), "0", "data"))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != text {
			t.Fatalf("t%d: read %d bytes, want %d", i, len(b), len(text))
		}
	}
	grown := heap() - before
	// Held buffers would be at least 1 MiB per partition read; what a
	// node and its view need besides is a few kilobytes.
	if grown >= parts<<20/2 {
		t.Fatalf("reading data of %d partitions once grew the heap by %d MiB: the idle data nodes hold their views' buffers", parts, grown>>20)
	}
	t.Logf("heap grew by %d KiB", grown>>10)
}
