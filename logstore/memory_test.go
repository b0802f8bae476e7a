package logstore

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
)

// TestMemoryIndependentOfLogSize: nothing holds a partition's records in
// memory and the per-segment text maps are sparse (issue 3). The log grows
// from 4 MiB to 48 MiB of text, read in full through a TextView at both
// sizes: the live heap grows by far less than the log (a bound of 1/16 of
// the growth leaves room for the per-segment structures, ~40 bytes of map
// per 64 KiB of text), and no segment's map has more entries than one per
// textInterval of its text, plus one.
func TestMemoryIndependentOfLogSize(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	defer s.Close()
	if _, err := s.CreateTopic("mem", 1, map[string]string{"segment.bytes": "1048576"}); err != nil {
		t.Fatal(err)
	}
	p := mustPartition(t, s, "mem")
	var text int64
	next := 0
	grow := func(to int64) {
		var chunk strings.Builder
		for text < to {
			chunk.Reset()
			for chunk.Len() < 64<<10 {
				fmt.Fprintf(&chunk, "line %09d %s\n", next, strings.Repeat("y", 80))
				next++
			}
			if _, _, err := p.AppendLines([]byte(chunk.String())); err != nil {
				t.Fatal(err)
			}
			text += int64(chunk.Len())
		}
	}
	readAll := func() {
		v, err := p.Text(p.LogStartOffset())
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		if v.Size() != text {
			t.Fatalf("view size %d, want %d", v.Size(), text)
		}
		buf := make([]byte, 1<<20)
		var n int64
		for {
			k, err := v.ReadAt(buf, n)
			n += int64(k)
			if err == io.EOF || (err == nil && k == 0) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if n != text {
			t.Fatalf("read %d bytes, want %d", n, text)
		}
	}
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}

	grow(4 << 20)
	readAll()
	small, smallText := heap(), text
	grow(48 << 20)
	readAll()
	big := heap()
	growth := int64(big) - int64(small)
	t.Logf("live heap %d KiB at %d MiB of text, %d KiB at %d MiB", small>>10, smallText>>20, big>>10, text>>20)
	if limit := (text - smallText) / 16; growth > limit {
		t.Errorf("the live heap grew by %d bytes while the log grew by %d: more than %d", growth, text-smallText, limit)
	}

	p.mu.RLock()
	segs := append([]*segment(nil), p.segs...)
	p.mu.RUnlock()
	if len(segs) < 40 {
		t.Fatalf("%d segments, want about 48", len(segs))
	}
	for _, sg := range segs {
		sg.text.mu.RLock()
		entries, st := len(sg.text.entries), sg.text.total
		sg.text.mu.RUnlock()
		if max := metric(st)/textInterval + 1; int64(entries) > max {
			t.Errorf("segment %d: %d text map entries for %d bytes of text, want at most %d", sg.base, entries, metric(st), max)
		}
	}
}
