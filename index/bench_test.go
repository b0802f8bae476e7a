package index

import (
	"math/rand/v2"
	"path/filepath"
	"testing"
)

const benchIndexBytes = 10 << 20 // segment.index.bytes default

// fullOffsetIndex returns a full 10 MiB offset index (1,310,720 entries).
func fullOffsetIndex(b *testing.B) *OffsetIndex {
	b.Helper()
	x := openOffset(b, filepath.Join(b.TempDir(), "b.index"), 0, benchIndexBytes, true)
	for i := 0; !x.Full(); i++ {
		if err := x.Append(int64(i)*3+1, int32(i)*1024); err != nil {
			b.Fatal(err)
		}
	}
	return x
}

// fullTimeIndex returns a 10 MiB time index filled up to its reserved slot
// (873,812 entries).
func fullTimeIndex(b *testing.B) *TimeIndex {
	b.Helper()
	x := openTime(b, filepath.Join(b.TempDir(), "b.timeindex"), 0, benchIndexBytes, true)
	for i := int64(0); !x.Full(); i++ {
		if err := x.MaybeAppend(1_700_000_000_000+i*10, i*3, false); err != nil {
			b.Fatal(err)
		}
	}
	return x
}

// BenchmarkOffsetLookup measures Lookup on a full index: uniformly random
// targets (mostly the cold binary search) and targets in the warm tail
// (the common case of consumers near the end of the log).
func BenchmarkOffsetLookup(b *testing.B) {
	x := fullOffsetIndex(b)
	last := x.LastOffset()
	for _, c := range []struct {
		name string
		lo   int64
	}{{"random", 0}, {"tail", last - 3*1000}} {
		b.Run(c.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 1))
			targets := make([]int64, 4096)
			for i := range targets {
				targets[i] = c.lo + rng.Int64N(last-c.lo+1)
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				x.Lookup(targets[i%len(targets)])
			}
		})
	}
	b.Run("parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
			for pb.Next() {
				x.Lookup(rng.Int64N(last + 1))
			}
		})
	})
}

func BenchmarkTimeLookup(b *testing.B) {
	x := fullTimeIndex(b)
	first, last := x.Entry(0).Timestamp, x.Last().Timestamp
	rng := rand.New(rand.NewPCG(1, 1))
	targets := make([]int64, 4096)
	for i := range targets {
		targets[i] = first + rng.Int64N(last-first+1)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		x.Lookup(targets[i%len(targets)])
	}
}

// BenchmarkOffsetAppend measures Append throughput; the index is reset
// (outside the timer) whenever it fills.
func BenchmarkOffsetAppend(b *testing.B) {
	x := openOffset(b, filepath.Join(b.TempDir(), "b.index"), 0, benchIndexBytes, true)
	off := int64(0)
	for b.Loop() {
		off++
		if err := x.Append(off, int32(off)); err != nil {
			b.StopTimer()
			x.Reset()
			off = 0
			b.StartTimer()
		}
	}
}

func BenchmarkTimeAppend(b *testing.B) {
	x := openTime(b, filepath.Join(b.TempDir(), "b.timeindex"), 0, benchIndexBytes, true)
	off := int64(0)
	for b.Loop() {
		off++
		if err := x.MaybeAppend(off, off, false); err != nil {
			b.StopTimer()
			x.Reset()
			off = 0
			b.StartTimer()
		}
	}
}

// BenchmarkSanityCheck measures the full scan the log store runs on open.
func BenchmarkSanityCheck(b *testing.B) {
	x := fullOffsetIndex(b)
	for b.Loop() {
		if err := x.SanityCheck(); err != nil {
			b.Fatal(err)
		}
	}
}
