package logstore

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

var (
	manySegOnce sync.Once
	manySegDir  string
)

// manySegmentsDir builds (once per process) a partition of 1,000 segments
// of one 10 KB batch each (100 records of 100 bytes), closed cleanly;
// TestMain removes it. Each roll costs
// a few fsyncs: the build takes some seconds.
func manySegmentsDir(b *testing.B) string {
	manySegOnce.Do(func() {
		dir, err := os.MkdirTemp("", "segfs-bench-manyseg-")
		if err != nil {
			b.Fatal(err)
		}
		manySegDir = dir
		s := benchStore(b, dir)
		tp, err := s.CreateTopic("manyseg", 1, map[string]string{"segment.bytes": "16384"})
		if err != nil {
			b.Fatal(err)
		}
		p, _ := tp.Partition(0)
		text := []byte(strings.Repeat(strings.Repeat("m", 99)+"\n", 100))
		for i := 0; i < 1000; i++ {
			if _, _, err := p.AppendLines(text); err != nil {
				b.Fatal(err)
			}
		}
		s.Close()
	})
	return manySegDir
}

// BenchmarkReadManySegments is a 1 MiB Read (a Kafka fetch's partition
// read, about 100 segments here) and a Read of one batch at the head and
// at the tail of a partition of 1,000 segments, and a time lookup that the
// first segment answers. Read took a reference on every segment from the offset to the
// log end: 1,000 at the head.
func BenchmarkReadManySegments(b *testing.B) {
	s := benchStore(b, manySegmentsDir(b))
	defer s.Close()
	p := mustPartition(b, s, "manyseg")
	p.mu.RLock()
	n := len(p.segs)
	p.mu.RUnlock()
	if n < 1000 {
		b.Fatalf("%d segments, want 1000", n)
	}
	leo := p.LogEndOffset()
	for _, tc := range []struct {
		name     string
		offset   int64
		maxBytes int64
	}{
		{"head", 0, 1 << 20},
		{"tail", leo - 100*100, 1 << 20}, // the last 100 batches, about 1 MiB
		// One batch: the fetch of a consumer that keeps up, or of a log
		// of large segments, reads one segment.
		{"head-batch", 0, 1},
		{"tail-batch", leo - 100, 1},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			var bytes int64
			for b.Loop() {
				r, err := p.Read(tc.offset, tc.maxBytes)
				if err != nil {
					b.Fatal(err)
				}
				bytes = r.Bytes
				r.Release()
			}
			b.ReportMetric(float64(bytes), "bytes/read")
		})
	}
	b.Run("time-head", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok, err := p.OffsetForTime(0); err != nil || !ok {
				b.Fatal(fmt.Sprint(ok, err))
			}
		}
	})
}
