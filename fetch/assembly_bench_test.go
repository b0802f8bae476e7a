package fetch

import (
	"fmt"
	"strings"
	"testing"

	"github.com/segfs/segfs/logstore"
)

// BenchmarkSplicedFetch is the CPU cost of answering one Fetch without the
// socket: reading the partitions' file ranges (index lookup, no bytes
// copied), encoding the response with kmsg and splicing the ranges in, at
// the oldest non-flexible (v11) and a flexible (v12) version, for one and
// for 16 partitions, reading 1 MiB from each. The bytes themselves go out by
// sendfile, so allocations here are per request, never per record.
func BenchmarkSplicedFetch(b *testing.B) {
	store, err := logstore.Open(b.TempDir(), logstore.Options{Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	const parts = 16
	if _, err := store.CreateTopic("asm", parts, nil); err != nil {
		b.Fatal(err)
	}
	text := []byte(strings.Repeat(strings.Repeat("a", 99)+"\n", 1000))
	for i := range int32(parts) {
		p, _ := store.Partition("asm", i)
		for range 20 { // 20,000 records, ~2 MB
			if _, _, err := p.AppendLines(text); err != nil {
				b.Fatal(err)
			}
		}
	}
	srv := New(store, Config{Logger: quietLogger()})
	for _, n := range []int{1, parts} {
		for _, v := range []int16{11, 12} {
			b.Run(fmt.Sprintf("partitions=%d/v%d", n, v), func(b *testing.B) {
				req := fetchReq(v, "asm", 0, 5000, 0, 0, 64<<20, 1<<20)
				for i := 1; i < n; i++ {
					rp := req.Topics[0].Partitions[0]
					rp.Partition = int32(i)
					req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
				}
				b.ReportAllocs()
				var bytes int64
				for b.Loop() {
					fr := srv.readFetch(req)
					if fr.failed {
						b.Fatal("fetch failed")
					}
					pieces, err := splicedFetch(1, fr.resp, fr.data)
					if err != nil || len(pieces) < 2*n+1 {
						b.Fatal(err, len(pieces))
					}
					bytes = fr.bytes
					fr.release()
				}
				b.ReportMetric(float64(bytes)/float64(n), "bytes/partition")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/partition")
			})
		}
	}
}
