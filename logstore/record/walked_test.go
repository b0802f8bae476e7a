package record

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
)

// checkWalk asserts that Walk fails on b exactly where Records does (same
// error), hands fn the same records but for their headers, and that its
// Stats are Stats(b, MinInt64) (every record counted), its Region is the
// records region decompressed, and RecompressRegion with it builds,
// byte for byte, what Recompress builds, into every codec.
func checkWalk(t testing.TB, d *Decoder, b []byte) {
	t.Helper()
	type rec struct {
		off, ts      int64
		key, value   []byte
		attrs, nhdrs int
	}
	var want, got []rec
	werr := d.Records(b, func(r *Record) error {
		want = append(want, rec{r.Offset, r.Timestamp, bytes.Clone(r.Key), bytes.Clone(r.Value), int(r.Attributes), len(r.Headers)})
		return nil
	})
	var st TextStats
	w, gerr := d.Walk(b, func(r *Record) error {
		if r.Headers != nil {
			t.Fatalf("record %d: Walk stored %d headers", r.Offset, len(r.Headers))
		}
		got = append(got, rec{r.Offset, r.Timestamp, bytes.Clone(r.Key), bytes.Clone(r.Value), int(r.Attributes), 0})
		st.count(lenOrNull(r.Key), lenOrNull(r.Value))
		return nil
	})
	if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
		t.Fatalf("Walk: %v; Records: %v", gerr, werr)
	}
	if len(got) != len(want) {
		t.Fatalf("Walk handed %d records, Records %d", len(got), len(want))
	}
	for i := range got {
		g, x := got[i], want[i]
		if g.off != x.off || g.ts != x.ts || !nullEq(g.key, x.key) || !nullEq(g.value, x.value) || g.attrs != x.attrs {
			t.Fatalf("record %d: Walk %+v, Records %+v", i, g, x)
		}
	}
	if werr != nil {
		if w.Region != nil || w.Stats != (TextStats{}) {
			t.Fatalf("failed Walk returned %+v", w)
		}
		return
	}
	if w.Stats != st {
		t.Fatalf("Walk stats %+v, counted %+v", w.Stats, st)
	}
	if h, _ := ParseHeader(b); !h.Control() {
		if s, err := d.Stats(b, math.MinInt64); err != nil || s != w.Stats {
			t.Fatalf("Walk stats %+v; Stats %+v, %v", w.Stats, s, err)
		}
	}
	// Region: Walk's, copied before the decoder is used again.
	region := bytes.Clone(w.Region)
	h, _ := ParseHeader(b)
	var d2 Decoder
	dec, err := d2.decompress(h.Codec(), b[HeaderSize:])
	if err != nil || !bytes.Equal(dec, region) {
		t.Fatalf("Region %d bytes differs from the decompressed %d bytes (%v)", len(region), len(dec), err)
	}
	var rc1, rc2 Recompressor
	for _, c := range allCodecs {
		w1, e1 := rc1.Recompress([]byte("pre"), b, c)
		w2, e2 := rc2.RecompressRegion([]byte("pre"), b, region, c)
		if (e1 == nil) != (e2 == nil) || !bytes.Equal(w1, w2) {
			t.Fatalf("to %v: RecompressRegion %d bytes, %v; Recompress %d bytes, %v", c, len(w2), e2, len(w1), e1)
		}
	}
}

func lenOrNull(b []byte) int32 {
	if b == nil {
		return -1
	}
	return int32(len(b))
}

// TestWalkDifferential compares Walk and RecompressRegion with Records,
// Stats and Recompress over random batches of every codec (records with
// and without headers, control and LogAppendTime ones), whole and with
// damaged records (the CRC made valid again), and over a real Kafka
// segment's batches.
func TestWalkDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var d Decoder
	for i := range 400 {
		b := randBatch(r, allCodecs[i%len(allCodecs)])
		checkWalk(t, &d, b)
		bad := bytes.Clone(b)
		for range 1 + r.IntN(3) {
			bad[HeaderSize+r.IntN(len(bad)-HeaderSize)] ^= byte(1 + r.IntN(255))
		}
		if r.IntN(4) == 0 {
			bad[offRecordCount+3] ^= byte(1 + r.IntN(3))
		}
		refreshCRC(bad)
		checkWalk(t, &d, bad)
	}
	seeds, _ := splitBatches(t, readTestdata(t, kafkaSegment))
	for _, b := range seeds {
		checkWalk(t, &d, b)
	}
}

// TestWalkNoAlloc: walking a batch whose records have headers allocates
// nothing once the decoder's buffer has grown (Records copies each
// header key into a string), compressed or not. Under the race detector
// zstd's pooled decoders are remade at random, so only uncompressed
// batches are counted there.
func TestWalkNoAlloc(t *testing.T) {
	hdrs := []RecordHeader{{Key: "trace-id", Value: []byte("0af7651916cd43dd")}, {Key: "content-type", Value: []byte("text/plain")}}
	for _, c := range allCodecs {
		if raceEnabled && c != CodecNone {
			continue
		}
		var allocs [2]float64
		for i, n := range []int{100, 1000} {
			spec := DefaultSpec()
			spec.Codec = c
			var bl Builder
			bl.Reset(spec)
			for j := range n {
				bl.Add(int64(j), nil, line100, hdrs)
			}
			b, err := bl.Build(nil)
			if err != nil {
				t.Fatal(err)
			}
			var d Decoder
			fn := func(r *Record) error { return nil }
			allocs[i] = testing.AllocsPerRun(20, func() {
				if _, err := d.Walk(b, fn); err != nil {
					t.Fatal(err)
				}
			})
		}
		if allocs != [2]float64{} {
			t.Errorf("%v: Walk: %v allocs for a batch of 100 records with 2 headers each, %v for 1000", c, allocs[0], allocs[1])
		}
	}
}

// checkWalkProduced asserts that WalkProduced passes b under pr exactly
// when Walk does with pr applied to each record (offset delta = index, a
// key if pr.NeedKey, the timestamp bounds) and b is a data batch without
// the LogAppendTime attribute, and that it then returns Walk's Stats and
// Region and the largest record timestamp.
func checkWalkProduced(t testing.TB, d *Decoder, b []byte, pr *ProduceRules) {
	t.Helper()
	var n int32
	maxTs := int64(-1)
	refused := false
	w, err := d.Walk(b, func(r *Record) error {
		if r.OffsetDelta != n {
			refused = true
		}
		if pr.NeedKey && r.Key == nil {
			refused = true
		}
		if pr.CheckTimestamps && r.Timestamp != -1 {
			if diff := pr.Now - r.Timestamp; diff > pr.Before || -diff > pr.After {
				refused = true
			}
		}
		maxTs = max(maxTs, r.Timestamp)
		n++
		return nil
	})
	h, herr := ParseHeader(b)
	want := err == nil && !refused && herr == nil && !h.Control() && !h.LogAppendTime()
	wantSt, wantRegion := w.Stats, bytes.Clone(w.Region)
	var d2 Decoder // not d: its buffer holds nothing Walk's result needs now, but keep them apart
	gw, gmax, ok := d2.WalkProduced(b, pr)
	if ok != want {
		t.Fatalf("WalkProduced ok=%v, Walk with the rules: err %v, refused %v (control %v, LogAppendTime %v)", ok, err, refused, h.Control(), h.LogAppendTime())
	}
	if !ok {
		return
	}
	if gw.Stats != wantSt || gmax != maxTs || !bytes.Equal(gw.Region, wantRegion) {
		t.Fatalf("WalkProduced stats %+v max %d region %d bytes; Walk %+v max %d region %d bytes", gw.Stats, gmax, len(gw.Region), wantSt, maxTs, len(wantRegion))
	}
}

// TestWalkProducedDifferential compares WalkProduced with Walk and the
// produce rules applied record by record, over random batches of every
// codec, whole and damaged, under random rules: keys required or not,
// timestamp bounds that take all, some or none of the records, the
// wrapping extremes (a bound of MaxInt64) included.
func TestWalkProducedDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var d Decoder
	bounds := []int64{math.MaxInt64, 0, 1 << 40, 1 << 41}
	rules := func(b []byte) *ProduceRules {
		pr := &ProduceRules{NeedKey: r.IntN(3) == 0, CheckTimestamps: r.IntN(4) != 0}
		pr.Before, pr.After = bounds[r.IntN(len(bounds))], bounds[r.IntN(len(bounds))]
		if r.IntN(3) == 0 {
			pr.Before, pr.After = r.Int64N(1<<42), r.Int64N(1<<42)
		}
		pr.Now = r.Int64N(1<<42) - 1<<41
		if h, err := ParseHeader(b); err == nil && r.IntN(2) == 0 {
			pr.Now = h.BaseTimestamp
		}
		if r.IntN(8) == 0 {
			pr.Now = math.MinInt64 + r.Int64N(1<<20)
		}
		return pr
	}
	for i := range 1000 {
		b := randBatch(r, allCodecs[i%len(allCodecs)])
		if r.IntN(2) == 0 {
			// A producer's batch: base offset 0, no LogAppendTime.
			b = rebase(t, b)
		}
		checkWalkProduced(t, &d, b, rules(b))
		checkWalkProduced(t, &d, b, &ProduceRules{})
		bad := bytes.Clone(b)
		for range 1 + r.IntN(3) {
			bad[HeaderSize+r.IntN(len(bad)-HeaderSize)] ^= byte(1 + r.IntN(255))
		}
		if r.IntN(4) == 0 {
			bad[offRecordCount+3] ^= byte(1 + r.IntN(3))
		}
		refreshCRC(bad)
		checkWalkProduced(t, &d, bad, rules(bad))
		checkWalkProduced(t, &d, bad, &ProduceRules{})
	}
	seeds, _ := splitBatches(t, readTestdata(t, kafkaSegment))
	for _, b := range seeds {
		checkWalkProduced(t, &d, b, &ProduceRules{})
		checkWalkProduced(t, &d, b, rules(b))
	}
}

// rebase rebuilds b as a producer sends it: its records at base offset 0,
// CreateTime, as a data batch.
func rebase(t testing.TB, b []byte) []byte {
	t.Helper()
	h, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	spec := DefaultSpec()
	spec.Codec = h.Codec()
	var bl Builder
	bl.Reset(spec)
	var d Decoder
	if err := d.Records(b, func(r *Record) error {
		bl.Add(r.Timestamp, r.Key, r.Value, r.Headers)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	out, err := bl.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWalkProducedNoAlloc: WalkProduced allocates nothing once the
// decoder's buffer has grown.
func TestWalkProducedNoAlloc(t *testing.T) {
	for _, c := range allCodecs {
		if raceEnabled && c != CodecNone {
			continue
		}
		spec := DefaultSpec()
		spec.Codec = c
		var bl Builder
		bl.Reset(spec)
		for j := range 1000 {
			bl.Add(int64(j), nil, line100, nil)
		}
		b, err := bl.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		var d Decoder
		pr := &ProduceRules{CheckTimestamps: true, Now: 500, Before: 1000, After: 1000}
		if allocs := testing.AllocsPerRun(20, func() {
			if _, _, ok := d.WalkProduced(b, pr); !ok {
				t.Fatal("refused")
			}
		}); allocs != 0 {
			t.Errorf("%v: WalkProduced: %v allocs for a batch of 1000 records", c, allocs)
		}
	}
}
