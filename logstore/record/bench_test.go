package record

import (
	"bytes"
	"fmt"
	"testing"
)

// line100 is a 100-byte line, '\n' included.
var line100 = []byte("2024-05-01T12:00:00Z INFO request served path=/api/v1/items status=200 bytes=5120 dur=3.2ms ok-done\n")

func init() {
	if len(line100) != 100 {
		panic(fmt.Sprintf("line100 is %d bytes", len(line100)))
	}
}

// BenchmarkAppendLines measures the mount's write path: lines in, one
// uncompressed batch out, into a reused dst.
func BenchmarkAppendLines(b *testing.B) {
	for _, lines := range []int{1, 100, 1000} {
		for _, sep := range []string{"", "="} {
			text := bytes.Repeat(line100, lines)
			b.Run(fmt.Sprintf("lines=%d/sep=%q", lines, sep), func(b *testing.B) {
				dst := make([]byte, 0, 2*len(text)+HeaderSize)
				b.SetBytes(int64(len(text)))
				b.ReportAllocs()
				for b.Loop() {
					dst, _ = AppendLines(dst[:0], text, 1700000000000, []byte(sep))
				}
				b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mlines/s")
			})
		}
	}
}

// BenchmarkAppendText measures rendering a 1000-line batch, plain and
// zstd-compressed (decompression included).
func BenchmarkAppendText(b *testing.B) {
	text := bytes.Repeat(line100, 1000)
	plain, _ := AppendLines(nil, text, 1700000000000, nil)
	for _, c := range allCodecs {
		var bl Builder
		spec := DefaultSpec()
		spec.Codec = c
		bl.Reset(spec)
		_ = (&Decoder{}).Records(plain, func(r *Record) error {
			bl.Add(r.Timestamp, r.Key, r.Value, nil)
			return nil
		})
		batch, err := bl.Build(nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.String(), func(b *testing.B) {
			var d Decoder
			dst := make([]byte, 0, len(text))
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				if dst, err = d.AppendText(dst[:0], batch, 0, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStats measures sizing a 1000-line uncompressed batch.
func BenchmarkStats(b *testing.B) {
	text := bytes.Repeat(line100, 1000)
	batch, _ := AppendLines(nil, text, 1700000000000, nil)
	var d Decoder
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Stats(batch, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidate measures CRC-32C throughput over a ~100 KiB batch.
func BenchmarkValidate(b *testing.B) {
	batch, _ := AppendLines(nil, bytes.Repeat(line100, 1000), 1700000000000, nil)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Validate(batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuild measures building a 100-record batch per codec.
func BenchmarkBuild(b *testing.B) {
	for _, c := range allCodecs {
		b.Run(c.String(), func(b *testing.B) {
			var bl Builder
			spec := DefaultSpec()
			spec.Codec = c
			dst := make([]byte, 0, 64<<10)
			b.SetBytes(100 * int64(len(line100)))
			b.ReportAllocs()
			for b.Loop() {
				bl.Reset(spec)
				for i := range 100 {
					bl.Add(int64(i), nil, line100, nil)
				}
				var err error
				if dst, err = bl.Build(dst[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWalkProduced compares the produce walk of a franz-go-sized
// batch (7598 records of 100 bytes, uncompressed and snappy: 1 MiB
// before compression) through Walk with a callback applying the produce
// rules, as AppendBatch did, and through WalkProduced.
func BenchmarkWalkProduced(b *testing.B) {
	for _, c := range []Codec{CodecNone, CodecSnappy} {
		spec := DefaultSpec()
		spec.Codec = c
		var bl Builder
		bl.Reset(spec)
		val := bytes.Repeat([]byte{'p'}, 100)
		const n = 7598
		for i := range n {
			bl.Add(1700000000000+int64(i/1000), nil, val, nil)
		}
		batch, err := bl.Build(nil)
		if err != nil {
			b.Fatal(err)
		}
		pr := &ProduceRules{CheckTimestamps: true, Now: 1700000000000, Before: 1 << 40, After: 3600000}
		var d Decoder
		b.Run(c.String()+"/Walk", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var i int32
				maxTs := int64(-1)
				_, err := d.Walk(batch, func(r *Record) error {
					if r.OffsetDelta != i || (pr.NeedKey && r.Key == nil) {
						return ErrCorrupt
					}
					if diff := pr.Now - r.Timestamp; diff > pr.Before || -diff > pr.After {
						return ErrCorrupt
					}
					maxTs = max(maxTs, r.Timestamp)
					i++
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
		})
		b.Run(c.String()+"/WalkProduced", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, ok := d.WalkProduced(batch, pr); !ok {
					b.Fatal("refused")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
		})
	}
}
