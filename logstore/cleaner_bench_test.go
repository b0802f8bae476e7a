package logstore

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkCompact times one compaction pass over a partition of about
// 32 MiB: eight closed 4 MiB segments of 100-record batches and the active
// one, with values of 100 bytes, then of 1000 bytes. Every other batch
// holds 20 records of keys that later batches write again, so the cleaner
// rebuilds it without them; the others it copies byte for byte. Each
// iteration compacts a fresh copy of the same directory, and only Compact
// is timed; MB/s counts the closed segments' bytes.
func BenchmarkCompact(b *testing.B) {
	for _, size := range []int{100, 1000} {
		b.Run(fmt.Sprintf("value=%d", size), func(b *testing.B) { benchCompact(b, size) })
	}
}

func benchCompact(b *testing.B, valueSize int) {
	tmpl := b.TempDir()
	opts := Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), CleanerInterval: time.Hour}
	s, err := Open(tmpl, opts)
	if err != nil {
		b.Fatal(err)
	}
	tp, err := s.CreateTopic("c", 1, map[string]string{
		"cleanup.policy": "compact", "key.separator": "=", "segment.bytes": strconv.Itoa(4 << 20),
		"min.cleanable.dirty.ratio": "0", "file.delete.delay.ms": "0",
	})
	if err != nil {
		b.Fatal(err)
	}
	p, _ := tp.Partition(0)
	value := strings.Repeat("v", valueSize-10)
	for batch := 0; statusOf(b, p).Segments < 9; batch++ {
		var sb strings.Builder
		for i := 0; i < 100; i++ {
			n := batch*100 + i
			if batch%2 == 0 && i%5 == 0 {
				fmt.Fprintf(&sb, "hot%d=%s %d\n", n/5%1000, value, n)
			} else {
				fmt.Fprintf(&sb, "u%d=%s\n", n, value)
			}
		}
		if _, _, err := p.AppendLines([]byte(sb.String())); err != nil {
			b.Fatal(err)
		}
	}
	var closed int64
	segs := p.acquireSegments(0)
	for _, sg := range segs[:len(segs)-1] {
		closed += sg.size.Load()
	}
	releaseAll(segs)
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(closed)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir, err := os.MkdirTemp("", "segfs-compact-bench-")
		if err != nil {
			b.Fatal(err)
		}
		copyDir(b, tmpl, dir)
		s, err := Open(dir, opts)
		if err != nil {
			b.Fatal(err)
		}
		p, _ := s.Partition("c", 0)
		b.StartTimer()
		st, err := p.Compact()
		b.StopTimer()
		if err != nil || st.SegmentsCleaned == 0 || st.RecordsRemoved == 0 {
			b.Fatalf("compaction: %+v, %v", st, err)
		}
		s.Close()
		os.RemoveAll(dir)
		b.StartTimer()
	}
}
