package logstore

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkLookupText is `head -n1 offset/N` and `readlink time/T` below
// the FUSE layer, on the partition bench.sh section 4 uses: 10 M records of
// 100 bytes written in ~128 KiB batches (1300 records each) into default
// 1 GiB segments, reopened cleanly (cold view state, warm page cache). It
// reports the p50 and p99 of single operations besides the mean.
func BenchmarkLookupText(b *testing.B) {
	dir := b.TempDir()
	clock := newClock()
	s := openStore(b, dir, clock)
	tp, err := s.CreateTopic("look", 1, nil)
	if err != nil {
		b.Fatal(err)
	}
	p, _ := tp.Partition(0)
	const per, total = 1300, 10_000_000
	text := []byte(strings.Repeat(strings.Repeat("l", 99)+"\n", per))
	for n := 0; n < total; n += per {
		if _, _, err := p.AppendLines(text); err != nil {
			b.Fatal(err)
		}
	}
	s.Close()
	s = openStore(b, dir, nil)
	defer s.Close()
	p = mustPartition(b, s, "look")
	end := p.LogEndOffset()
	first := int64(1_700_000_000_001)
	last := first + end/per
	pct := func(b *testing.B, d []time.Duration) {
		slices.Sort(d)
		b.ReportMetric(float64(d[len(d)/2].Nanoseconds())/1e3, "p50-µs")
		b.ReportMetric(float64(d[len(d)*99/100].Nanoseconds())/1e3, "p99-µs")
	}
	b.Run("offset", func(b *testing.B) {
		buf := make([]byte, 8192)
		d := make([]time.Duration, 0, b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			n := rand.Int64N(end)
			t0 := time.Now()
			v, err := p.Text(n)
			if err != nil {
				b.Fatal(err)
			}
			m, err := v.ReadAt(buf, 0)
			v.Close()
			d = append(d, time.Since(t0))
			if err != nil || bytes.IndexByte(buf[:m], '\n') != 99 {
				b.Fatal(fmt.Errorf("offset %d: %d bytes, %v", n, m, err))
			}
		}
		pct(b, d)
	})
	b.Run("time", func(b *testing.B) {
		d := make([]time.Duration, 0, b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			ts := first + rand.Int64N(last-first)
			t0 := time.Now()
			_, ok, err := p.OffsetForTime(ts)
			d = append(d, time.Since(t0))
			if err != nil || !ok {
				b.Fatal(err, ok)
			}
		}
		pct(b, d)
	})
}
