package record

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// checkBelow asserts that TextStatsSplit(b, below) is what the decoder
// says: Stats of those >= below, and of every record minus those, failing
// on exactly the batches Stats fails on.
func checkBelow(t testing.TB, d *Decoder, b []byte, below int64) {
	t.Helper()
	all, aerr := d.Stats(b, math.MinInt64)
	tail, terr := d.Stats(b, below)
	got, rest, err := d.TextStatsSplit(b, below)
	if (err == nil) != (aerr == nil) {
		t.Fatalf("below %d: TextStatsSplit err %v, Stats err %v", below, err, aerr)
	}
	if err != nil {
		if err.Error() != aerr.Error() {
			t.Fatalf("below %d: error %q, Stats says %q", below, err, aerr)
		}
		return
	}
	if terr != nil {
		t.Fatalf("Stats(all) ok but Stats(%d): %v", below, terr)
	}
	want := TextStats{all.Lines - tail.Lines, all.ValueBytes - tail.ValueBytes, all.Keyed - tail.Keyed, all.KeyBytes - tail.KeyBytes}
	if got != want || rest != tail {
		t.Fatalf("below %d: %+v %+v, want %+v %+v", below, got, rest, want, tail)
	}
	// Rendering from the split is rendering from below.
	sp, err := d.SplitText(b, below)
	if err != nil || sp.Below != got || sp.Rest != rest {
		t.Fatalf("SplitText %+v, %v; TextStatsSplit %+v %+v", sp, err, got, rest)
	}
	for _, sep := range [][]byte{nil, []byte("=")} {
		wantText, werr := d.AppendText([]byte("x"), b, below, sep)
		gotText, gerr := d.AppendTextSplit([]byte("x"), b, &sp, sep)
		if (werr == nil) != (gerr == nil) || !bytes.Equal(gotText, wantText) {
			t.Fatalf("below %d sep %q: AppendTextSplit %q, %v; AppendText %q, %v", below, sep, gotText, gerr, wantText, werr)
		}
		if werr == nil && int64(len(wantText)-1) != rest.Size(len(sep)) {
			t.Fatalf("below %d: rendered %d bytes, rest %d", below, len(wantText)-1, rest.Size(len(sep)))
		}
		// The one-pass render, where it takes the batch, renders the
		// same text and counts the same records below.
		oneText, oneBelow, ok := d.AppendTextBelow([]byte("x"), b, below, sep)
		if !ok {
			if string(oneText) != "x" {
				t.Fatalf("below %d sep %q: AppendTextBelow declined but returned %q", below, sep, oneText)
			}
			continue
		}
		if werr != nil || !bytes.Equal(oneText, wantText) || oneBelow != got {
			t.Fatalf("below %d sep %q: AppendTextBelow %q below %+v; AppendText %q, %v, below %+v", below, sep, oneText, oneBelow, wantText, werr, got)
		}
	}
}

func randBytes(r *rand.Rand, maxLen int) []byte {
	switch r.IntN(5) {
	case 0:
		return nil
	case 1:
		return []byte{}
	}
	b := make([]byte, r.IntN(maxLen+1))
	for i := range b {
		b[i] = byte('a' + r.IntN(26))
	}
	return b
}

// randomBatch builds a batch of every codec and flag mix, with null and
// empty keys and values, headers, and values long enough for multi-byte
// length varints.
func randomBatch(t testing.TB, r *rand.Rand) []byte {
	spec := DefaultSpec()
	spec.Codec = allCodecs[r.IntN(len(allCodecs))]
	spec.BaseOffset = r.Int64N(1 << 40)
	spec.Control = r.IntN(10) == 0
	spec.LogAppendTime = r.IntN(4) == 0
	var recs []testRecord
	for n := r.IntN(300); n >= 0; n-- {
		rec := testRecord{ts: r.Int64N(1 << 42), key: randBytes(r, 20), value: randBytes(r, 300)}
		for h := r.IntN(4) - 2; h > 0; h-- {
			rec.headers = append(rec.headers, RecordHeader{Key: string(randBytes(r, 5)), Value: randBytes(r, 5)})
		}
		recs = append(recs, rec)
	}
	return buildBatch(t, spec, recs)
}

// TestTextStatsSplit compares the one-pass walk with the decoder over
// random batches, every below from before the batch to after it, and
// random damage to uncompressed record regions (a CRC-valid batch can
// still hold bad records).
func TestTextStatsSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var d Decoder
	for i := 0; i < 300; i++ {
		b := randomBatch(t, r)
		h, _ := ParseHeader(b)
		for _, below := range []int64{math.MinInt64, 0, h.BaseOffset, h.BaseOffset + 1,
			h.BaseOffset + r.Int64N(int64(h.RecordCount)+1), h.LastOffset(), h.NextOffset(), math.MaxInt64} {
			checkBelow(t, &d, b, below)
		}
		if h.Codec() != CodecNone || h.Control() {
			continue
		}
		for j := 0; j < 20; j++ {
			bad := bytes.Clone(b)
			for k := r.IntN(3); k >= 0; k-- {
				p := HeaderSize + r.IntN(len(bad)-HeaderSize)
				bad[p] = byte(r.IntN(256))
			}
			checkBelow(t, &d, bad, h.BaseOffset+r.Int64N(int64(h.RecordCount)+1))
		}
		// Truncated and overlong regions.
		region := b[HeaderSize:]
		checkBelow(t, &d, rawBatch(CodecNone, h.RecordCount, region[:r.IntN(len(region))]), math.MaxInt64)
		checkBelow(t, &d, rawBatch(CodecNone, h.RecordCount, append(bytes.Clone(region), 0)), math.MaxInt64)
		checkBelow(t, &d, rawBatch(CodecNone, h.RecordCount+1, region), math.MaxInt64)
		checkBelow(t, &d, rawBatch(CodecNone, max(h.RecordCount-1, 0), region), math.MaxInt64)
	}
	// The seeds of the fuzzers: the real Kafka segment and AppendLines text.
	seeds, _ := splitBatches(t, readTestdata(t, kafkaSegment))
	lines, _ := AppendLines(nil, []byte("k=v\nx\n=\n\n=v\nk=\n"), 1700000000000, []byte("="))
	// The batches `cat` makes are rendered from the mark.
	if sp, err := d.SplitText(lines, 2); err != nil || !sp.mark || sp.index != 2 {
		t.Fatalf("AppendLines batch split at 2: %+v, %v", sp, err)
	}
	// and in one pass, as a lookup of offset/N does.
	if out, below, ok := d.AppendTextBelow(nil, lines, 2, []byte("=")); !ok || string(out) != "=\n\n=v\nk=\n" || below.Lines != 2 {
		t.Fatalf("AppendLines batch rendered from 2: %q below %+v ok %v", out, below, ok)
	}
	for _, b := range append(seeds, lines) {
		for below := int64(-1); below < 10; below++ {
			checkBelow(t, &d, b, below)
		}
	}
}

// FuzzTextStatsSplit runs the comparison over arbitrary record regions.
func FuzzTextStatsSplit(f *testing.F) {
	for _, b := range seedBatches(f) {
		h, _ := ParseHeader(b)
		if h.Codec() == CodecNone {
			f.Add(h.RecordCount, b[HeaderSize:], int64(2))
		}
	}
	var d Decoder
	f.Fuzz(func(t *testing.T, count int32, region []byte, below int64) {
		checkBelow(t, &d, rawBatch(CodecNone, count, region), below)
	})
}

// BenchmarkTextStatsSplit compares the one-pass walk with the two Stats
// calls it replaces, on a batch of 1300 100-byte lines as `cat` writes.
func BenchmarkTextStatsSplit(b *testing.B) {
	batch, n := AppendLines(nil, bytes.Repeat([]byte(strings.Repeat("s", 99)+"\n"), 1300), 1, nil)
	var d Decoder
	b.Run("split", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			d.TextStatsSplit(batch, int64(i%n))
		}
	})
	b.Run("stats2", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			d.Stats(batch, 0)
			d.Stats(batch, int64(i%n))
		}
	})
}

// BenchmarkAppendTextSplit renders a 1300-line batch from a random offset
// from its split, and with AppendText.
func BenchmarkAppendTextSplit(b *testing.B) {
	batch, n := AppendLines(nil, bytes.Repeat([]byte(strings.Repeat("s", 99)+"\n"), 1300), 1, nil)
	var d Decoder
	var dst []byte
	b.Run("split", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			sp, _ := d.SplitText(batch, int64(i%n))
			dst, _ = d.AppendTextSplit(dst[:0], batch, &sp, nil)
		}
	})
	b.Run("appendtext", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			d.TextStatsSplit(batch, int64(i%n))
			dst, _ = d.AppendText(dst[:0], batch, int64(i%n), nil)
		}
	})
}

// TestAppendTextBelowRandomBatches compares the one-pass render of a
// lookup (AppendTextBelow) with the two-pass one it replaced (SplitText,
// AppendTextSplit) on random batches of every codec, which
// FuzzTextStatsSplit (uncompressed only) does not reach: offset gaps as
// compaction leaves them, keys and values null, empty, holding the
// separator or a newline, values long enough for two-byte varints, some
// records with headers, from below, at and past every record.
func TestAppendTextBelowRandomBatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var d Decoder
	pick := func() []byte {
		switch rng.IntN(6) {
		case 0:
			return nil
		case 1:
			return []byte{}
		case 2:
			return []byte("a=b")
		case 3:
			return bytes.Repeat([]byte("x"), 70+rng.IntN(300))
		case 4:
			return []byte("=")
		}
		return []byte("v\n=")
	}
	taken := map[Codec]int{}
	for iter := 0; iter < 600; iter++ {
		spec := DefaultSpec()
		spec.Codec = allCodecs[rng.IntN(len(allCodecs))]
		spec.BaseOffset = int64(rng.IntN(5))
		var bl Builder
		bl.Reset(spec)
		delta := int32(0)
		for i := 0; i < 1+rng.IntN(12); i++ {
			var hs []RecordHeader
			if rng.IntN(10) == 0 {
				hs = []RecordHeader{{Key: "h", Value: []byte("1")}}
			}
			bl.AddAt(delta, int64(rng.IntN(1<<20)), pick(), pick(), hs)
			delta += int32(1 + rng.IntN(3)*rng.IntN(2))
		}
		b, err := bl.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := ParseHeader(b)
		for from := h.BaseOffset - 1; from <= h.NextOffset()+1; from++ {
			for _, sep := range [][]byte{nil, []byte("="), []byte("->")} {
				sp, err := d.SplitText(b, from)
				if err != nil {
					t.Fatal(err)
				}
				want, werr := d.AppendTextSplit([]byte("p"), b, &sp, sep)
				got, below, ok := d.AppendTextBelow([]byte("p"), b, from, sep)
				if !ok {
					if string(got) != "p" {
						t.Fatalf("declined, but returned %q", got)
					}
					continue
				}
				taken[spec.Codec]++
				if werr != nil || !bytes.Equal(got, want) || below != sp.Below {
					t.Fatalf("codec %v from %d sep %q: one pass %q below %+v; two passes %q, %v, below %+v",
						spec.Codec, from, sep, got, below, want, werr, sp.Below)
				}
			}
		}
	}
	for _, c := range allCodecs {
		if taken[c] == 0 {
			t.Fatalf("no batch of codec %v taken by the one pass", c)
		}
	}
}
