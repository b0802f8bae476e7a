package record

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// checkLengthStats asserts that LengthStats agrees with Stats on b (result
// and error), and for an uncompressed batch that the length walk itself
// accepts exactly what the decoder accepts and computes the same stats:
// the fallback to Stats must not be what makes them agree.
func checkLengthStats(t testing.TB, d *Decoder, b []byte, from int64) {
	t.Helper()
	want, werr := d.Stats(b, from)
	got, gerr := d.LengthStats(b, from)
	if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) || got != want {
		t.Fatalf("from %d: LengthStats %+v, %v; Stats %+v, %v", from, got, gerr, want, werr)
	}
	h, err := parseWhole(b)
	if err != nil || h.Codec() != CodecNone || h.Control() || h.NextOffset() <= from {
		return
	}
	st, ok := walkStats(b[HeaderSize:], h.RecordCount, h.BaseOffset, from)
	if ok != (werr == nil) || (ok && st != want) {
		t.Fatalf("from %d: walk %+v ok=%v; Stats %+v, %v", from, st, ok, want, werr)
	}
}

// randFieldBytes is nil, empty or random bytes of a length that needs one, two
// or three varint bytes.
func randFieldBytes(r *rand.Rand) []byte {
	switch r.IntN(6) {
	case 0:
		return nil
	case 1:
		return []byte{}
	case 2:
		return bytes.Repeat([]byte{byte(r.IntN(256))}, 64+r.IntN(8192)) // 2-3 byte lengths
	}
	b := make([]byte, r.IntN(70))
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	return b
}

func randBatch(r *rand.Rand, c Codec) []byte {
	spec := DefaultSpec()
	spec.Codec = c
	spec.BaseOffset = r.Int64N(1 << 40)
	spec.Control = r.IntN(20) == 0
	spec.LogAppendTime = r.IntN(4) == 0
	var bl Builder
	bl.Reset(spec)
	for range 1 + r.IntN(40) {
		var hdrs []RecordHeader
		for range r.IntN(3) {
			hdrs = append(hdrs, RecordHeader{Key: string(randFieldBytes(r)), Value: randFieldBytes(r)})
		}
		bl.Add(r.Int64N(1<<42)-1<<41, randFieldBytes(r), randFieldBytes(r), hdrs)
	}
	b, err := bl.Build(nil)
	if err != nil {
		panic(err)
	}
	return b
}

// TestLengthStatsDifferential compares the length walk with the decoder
// over random batches of every codec, whole and with damaged records
// (bytes flipped, the CRC made valid again so that only the records are
// at fault), for several from offsets. The batches are drawn in order
// from one stream and checked on every CPU (checkParallel).
func TestLengthStatsDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	checkParallel(t, func(emit func(func(testing.TB, *Decoder))) {
		for i := range 3000 {
			c := allCodecs[i%len(allCodecs)]
			b := randBatch(r, c)
			h, _ := ParseHeader(b)
			froms := []int64{0, h.BaseOffset, h.BaseOffset + int64(r.IntN(int(h.RecordCount)+1)), h.NextOffset(), -1 << 62}
			// Damage: flip a few bytes of the records region, fix the CRC.
			bad := bytes.Clone(b)
			for range 1 + r.IntN(3) {
				bad[HeaderSize+r.IntN(len(bad)-HeaderSize)] ^= byte(1 + r.IntN(255))
			}
			if r.IntN(4) == 0 { // or the record count
				bad[offRecordCount+3] ^= byte(1 + r.IntN(3))
			}
			refreshCRC(bad)
			// Truncate the records region (the batch length follows).
			var cut []byte
			if c == CodecNone && len(b) > HeaderSize {
				cut = bytes.Clone(b[:HeaderSize+r.IntN(len(b)-HeaderSize)])
				putBatchLength(cut)
				refreshCRC(cut)
			}
			emit(func(t testing.TB, d *Decoder) {
				for _, from := range froms {
					checkLengthStats(t, d, b, from)
				}
				for _, from := range froms {
					checkLengthStats(t, d, bad, from)
				}
				if cut != nil {
					checkLengthStats(t, d, cut, 0)
				}
			})
		}
	})
}

// TestLengthStatsSeeds runs the comparison over the fuzz seeds (a real
// Kafka segment's batches and built batches of every codec and flag) and
// over every prefix and one-byte change of an AppendLines batch.
func TestLengthStatsSeeds(t *testing.T) {
	var d Decoder
	seeds, _ := splitBatches(t, readTestdata(t, kafkaSegment))
	for _, c := range allCodecs {
		spec := DefaultSpec()
		spec.Codec = c
		seeds = append(seeds, buildBatch(t, spec, sampleRecords()))
	}
	lines, _ := AppendLines(nil, []byte("k=v\nx\n=\n\n"+string(bytes.Repeat([]byte("y"), 200))+"\n"), 1700000000000, []byte("="))
	seeds = append(seeds, lines)
	for _, b := range seeds {
		for _, from := range []int64{0, 1, 3, 1 << 40} {
			checkLengthStats(t, &d, b, from)
		}
	}
	for n := HeaderSize; n <= len(lines); n++ {
		cut := bytes.Clone(lines[:n])
		putBatchLength(cut)
		refreshCRC(cut)
		checkLengthStats(t, &d, cut, 0)
	}
	for i := HeaderSize; i < len(lines); i++ {
		for _, v := range []byte{0x00, 0x01, 0x7f, 0x80, 0xff, lines[i] ^ 1, lines[i] + 2} {
			bad := bytes.Clone(lines)
			bad[i] = v
			refreshCRC(bad)
			checkLengthStats(t, &d, bad, 0)
		}
	}
}

// FuzzLengthStats wraps arbitrary bytes as the records region of an
// uncompressed batch: the walk must agree with the decoder exactly.
func FuzzLengthStats(f *testing.F) {
	for _, b := range seedBatches(f) {
		h, _ := ParseHeader(b)
		if h.Codec() == CodecNone {
			f.Add(h.RecordCount, b[HeaderSize:], int64(0))
		}
	}
	f.Add(int32(1), unhex(f, "10 00 00 00 02 6B 02 76 00"), int64(0))
	var d Decoder
	f.Fuzz(func(t *testing.T, count int32, region []byte, from int64) {
		b := rawBatch(CodecNone, count, region)
		checkLengthStats(t, &d, b, from)
	})
}

func refreshCRC(b []byte) {
	if len(b) >= HeaderSize {
		putUint32(b[offCRC:], CRC(b))
	}
}

func putBatchLength(b []byte) { putUint32(b[offBatchLength:], uint32(len(b)-LogOverhead)) }

func putUint32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
}

// BenchmarkLengthStats is BenchmarkStats for the length walk.
func BenchmarkLengthStats(b *testing.B) {
	text := bytes.Repeat(line100, 1000)
	batch, _ := AppendLines(nil, text, 1700000000000, nil)
	var d Decoder
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.LengthStats(batch, 0); err != nil {
			b.Fatal(err)
		}
	}
}
