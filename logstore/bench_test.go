package logstore

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segfs/segfs/internal/tmpfstest"
	"github.com/segfs/segfs/logstore/record"
)

// Benchmarks for the hot paths of the log store. Figures go in the closing
// notes and docs; nothing here asserts a timing.

func benchStore(b *testing.B, dir string) *Store {
	s, err := Open(dir, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkAppendLines appends 100-byte records in batches of 1, 100 and
// 1000 lines; records/s and MB/s of record values.
func BenchmarkAppendLines(b *testing.B) {
	for _, per := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("batch=%d", per), func(b *testing.B) {
			s := benchStore(b, b.TempDir())
			defer s.Close()
			tp, _ := s.CreateTopic("bench", 1, nil)
			p, _ := tp.Partition(0)
			text := []byte(strings.Repeat(strings.Repeat("v", 99)+"\n", per))
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, _, err := p.AppendLines(text); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*per)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

var (
	bigOnce sync.Once
	bigDir  string
	bigRecs int64
)

// TestMain puts the tests' temporary files on a tmpfs (tmpfstest.Use),
// and removes the shared benchmark partitions (about 1 GB, and the 1,000
// segments of BenchmarkReadManySegments) once every benchmark that used
// them has run: each is built once per process, so no single benchmark's
// cleanup can own it.
func TestMain(m *testing.M) {
	flag.Parse()
	removeTmpfs := tmpfstest.Use("logstore")
	code := m.Run()
	removeTmpfs()
	for _, dir := range []string{bigDir, manySegDir} {
		if dir != "" {
			os.RemoveAll(dir)
		}
	}
	os.Exit(code)
}

// bigPartition builds (once per process) a 10-million-record partition of
// 100-byte records with one-millisecond-apart batches of 100 records, in
// one segment of about 1 GiB, and closes it cleanly.
func bigPartition(b *testing.B) string {
	bigOnce.Do(func() {
		dir, err := os.MkdirTemp("", "segfs-bench-")
		if err != nil {
			b.Fatal(err)
		}
		bigDir = dir
		clock := newClock()
		s, err := Open(dir, Options{Now: clock.now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			b.Fatal(err)
		}
		tp, _ := s.CreateTopic("big", 1, map[string]string{"segment.bytes": "2147483647"})
		p, _ := tp.Partition(0)
		text := []byte(strings.Repeat(strings.Repeat("v", 99)+"\n", 1000))
		for i := 0; i < 10_000; i++ {
			if _, _, err := p.AppendLines(text); err != nil {
				b.Fatal(err)
			}
		}
		bigRecs = p.LogEndOffset()
		s.Close()
	})
	return bigDir
}

// BenchmarkLookupOffset is the latency of finding the batch that holds a
// random offset in a 10M-record partition (index floor + header scan).
func BenchmarkLookupOffset(b *testing.B) {
	s := benchStore(b, bigPartition(b))
	defer s.Close()
	p := mustPartition(b, s, "big")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := p.Read(rand.Int64N(bigRecs), 1)
		if err != nil {
			b.Fatal(err)
		}
		r.Release()
	}
}

// BenchmarkLookupTime is the latency of OffsetForTime for a random time.
func BenchmarkLookupTime(b *testing.B) {
	s := benchStore(b, bigPartition(b))
	defer s.Close()
	p := mustPartition(b, s, "big")
	first := int64(1_700_000_000_001)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok, err := p.OffsetForTime(first + rand.Int64N(10_000)); err != nil || !ok {
			b.Fatal(err, ok)
		}
	}
}

// BenchmarkTextViewOpen is the latency of opening offset/N as text and
// reading its first line, the work behind `head -n1 offset/N`.
func BenchmarkTextViewOpen(b *testing.B) {
	s := benchStore(b, bigPartition(b))
	defer s.Close()
	p := mustPartition(b, s, "big")
	buf := make([]byte, 4096)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v, err := p.Text(rand.Int64N(bigRecs))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := v.ReadAt(buf, 0); err != nil {
			b.Fatal(err)
		}
		v.Close()
	}
}

// BenchmarkRecovery1GiB times the open of a data dir whose 1 GiB active
// segment must be validated batch by batch (no clean-shutdown marker).
func BenchmarkRecovery1GiB(b *testing.B) {
	src := bigPartition(b)
	marker := filepath.Join(src, cleanShutdownFile)
	b.SetBytes(1 << 30)
	for i := 0; i < b.N; i++ {
		os.Remove(marker)
		start := time.Now()
		s := benchStore(b, src)
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/open")
		s.Close()
	}
}

// BenchmarkCleanOpen times the open of the same dir after a clean close.
func BenchmarkCleanOpen(b *testing.B) {
	src := bigPartition(b)
	for i := 0; i < b.N; i++ {
		s := benchStore(b, src)
		s.Close()
	}
}

// BenchmarkTextSequential reads a 52 MB partition of 130 KB batches (what
// `cat >> data` appends) as text in 128 KiB pieces (cat's reads) and in
// 1 MiB pieces (the fs read-ahead windows, which hold whole batches).
func BenchmarkTextSequential(b *testing.B) {
	s := benchStore(b, b.TempDir())
	defer s.Close()
	tp, _ := s.CreateTopic("seq", 1, nil)
	p, _ := tp.Partition(0)
	text := []byte(strings.Repeat(strings.Repeat("s", 99)+"\n", 1300))
	for i := 0; i < 400; i++ {
		p.AppendLines(text)
	}
	for _, piece := range []int{128 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dKiB", piece>>10), func(b *testing.B) {
			buf := make([]byte, piece)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				v, _ := p.Text(0)
				size := v.Size()
				b.SetBytes(size)
				for off := int64(0); off < size; {
					n, err := v.ReadAt(buf, off)
					if err != nil && err != io.EOF {
						b.Fatal(err)
					}
					off += int64(n)
				}
				v.Close()
			}
		})
	}
}

// benchBatch builds a batch of n 100-byte records as franz-go sends
// one: keyless, no headers unless hdrs, timestamps a few ms apart from
// now, base offset 0, in codec c.
func benchBatch(b *testing.B, c record.Codec, n int, hdrs []record.RecordHeader) []byte {
	b.Helper()
	var bl record.Builder
	spec := record.DefaultSpec()
	spec.Codec = c
	bl.Reset(spec)
	now := time.Now().UnixMilli()
	for i := range n {
		v := fmt.Appendf(nil, "2024-05-01T12:00:%02d.%03dZ INFO request served path=/api/v1/items/%06d status=200 bytes=%05d ok",
			i/1000%60, i%1000, i*7919%1000000, i*31%100000)
		v = append(v, strings.Repeat("-", 100-len(v))...)
		bl.Add(now+int64(i/100), nil, v, hdrs)
	}
	batch, err := bl.Build(nil)
	if err != nil {
		b.Fatal(err)
	}
	return batch
}

// BenchmarkAppendBatch is a producer's batch of 1000 100-byte records
// through AppendBatch (validation, statistics, recompression, the
// write), per codec; lz4>zstd is an lz4 batch on a topic with
// compression.type=zstd, and none+headers one with two headers a record.
// Run it with a fixed -benchtime (e.g. 2000x): every op writes the batch.
func BenchmarkAppendBatch(b *testing.B) {
	hdrs := []record.RecordHeader{{Key: "trace-id", Value: []byte("4bf92f3577b34da6a3ce929d0e0e4736")}, {Key: "content-type", Value: []byte("text/plain")}}
	for _, tc := range []struct {
		name  string
		codec record.Codec
		topic string // compression.type
		hdrs  []record.RecordHeader
	}{
		{"none", record.CodecNone, "producer", nil},
		{"snappy", record.CodecSnappy, "producer", nil}, // franz-go's default codec
		{"zstd", record.CodecZstd, "producer", nil},
		{"lz4", record.CodecLZ4, "producer", nil},
		{"gzip", record.CodecGzip, "producer", nil},
		{"lz4>zstd", record.CodecLZ4, "zstd", nil},
		{"none+headers", record.CodecNone, "producer", hdrs},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := benchStore(b, b.TempDir())
			defer s.Close()
			tp, err := s.CreateTopic("bench", 1, map[string]string{"compression.type": tc.topic})
			if err != nil {
				b.Fatal(err)
			}
			p, _ := tp.Partition(0)
			batch := benchBatch(b, tc.codec, 1000, tc.hdrs)
			buf := make([]byte, len(batch))
			b.SetBytes(1000 * 100)
			b.ReportAllocs()
			for b.Loop() {
				copy(buf, batch) // AppendBatch sets the base offset in place
				if _, err := p.AppendBatch(buf); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
