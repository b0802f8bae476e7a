package logstore

import (
	"fmt"
	"strings"
	"testing"

	"github.com/segfs/segfs/logstore/record"
)

// headerBatch builds a produced batch of n keyed records (k<i>, v<i>),
// each with two headers, stamped at now, in codec c.
func headerBatch(t *testing.T, c record.Codec, n int, now int64) []byte {
	t.Helper()
	hdrs := []record.RecordHeader{{Key: "trace-id", Value: []byte("0af7651916cd43dd")}, {Key: "content-type", Value: []byte("text/plain")}}
	var bl record.Builder
	spec := record.DefaultSpec()
	spec.Codec = c
	bl.Reset(spec)
	for i := range n {
		bl.Add(now, []byte(fmt.Sprint("k", i)), []byte(fmt.Sprint("v", i)), hdrs)
	}
	b, err := bl.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAppendBatchOneWalk: a produced batch of every codec, with headers,
// kept as it came or recompressed for compression.type, is appended with
// a number of allocations that does not grow with its records or their
// headers, and its text statistics, which the walk that validates it now
// counts, are right: the text view renders every record, no more, no
// less. AppendBatch used to copy each header key into a string, two
// allocations a record here.
func TestAppendBatchOneWalk(t *testing.T) {
	clock := newClock()
	s := openStore(t, t.TempDir(), clock)
	defer s.Close()
	codecs := []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd}
	for _, topicCodec := range []string{"producer", "zstd", "uncompressed"} {
		name := "t-" + topicCodec
		tp, err := s.CreateTopic(name, 1, map[string]string{"compression.type": topicCodec, "key.separator": "="})
		if err != nil {
			t.Fatal(err)
		}
		p, _ := tp.Partition(0)
		var want strings.Builder
		for _, c := range codecs {
			var allocs [2]float64
			for i, n := range []int{100, 1000} {
				batch := headerBatch(t, c, n, clock.ms.Load())
				buf := make([]byte, len(batch))
				allocs[i] = testing.AllocsPerRun(10, func() {
					copy(buf, batch) // AppendBatch sets the base offset in place
					if _, err := p.AppendBatch(buf); err != nil {
						t.Fatal(err)
					}
				})
				for range 11 { // AllocsPerRun's warm-up run and its 10
					for j := range n {
						fmt.Fprintf(&want, "k%d=v%d\n", j, j)
					}
				}
			}
			// 900 more records, 1800 more headers: a few more
			// allocations at most (a decompression buffer grown
			// further; under -race, sync.Pool drops a quarter of what
			// is put back, so the pooled decoder is now and then
			// made anew).
			if allocs[1] > allocs[0]+100 {
				t.Errorf("%s, %v batch with 2 headers a record: %v allocations per AppendBatch of 100 records, %v of 1000", name, c, allocs[0], allocs[1])
			}
		}
		if got := textOf(t, p, 0); got != want.String() {
			t.Errorf("%s: text view of %d bytes, want %d", name, len(got), want.Len())
		}
	}
}
