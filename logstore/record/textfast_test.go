package record

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// appendTextReference is AppendText as it was before appendTextFast: the
// general record loop only. The fast path must not change a byte of the
// text nor any error.
func appendTextReference(d *Decoder, dst, b []byte, from int64, keySep []byte) ([]byte, error) {
	h, err := parseWhole(b)
	if err != nil {
		return dst, err
	}
	if h.Control() || h.NextOffset() <= from {
		return dst, nil
	}
	defer d.release()
	var it recordIter
	if err := d.openParsed(b, &it, &h); err != nil {
		return dst, err
	}
	return appendTextRecords(dst, &it, from, keySep)
}

// checkTextSame fails t unless AppendText and appendTextReference agree on
// b for a few starting offsets and separators.
//
// Both render after an "x" already in dst. Every call renders once into a
// fresh one-byte dst, so that AppendText grows it (the first offset, with
// each separator in turn from call to call); the other renders reuse
// buffers with room to spare. Growing a fresh dst for every render was
// most of the differential test's time under -race, which tracks every
// allocation.
var (
	textSameCalls int
	textSame      textSameBufs
)

// textSameBufs are the buffers the renders that are not fresh reuse.
type textSameBufs struct{ got, ref []byte }

func checkTextSame(t testing.TB, d *Decoder, b []byte, froms ...int64) {
	t.Helper()
	fresh := textSameCalls % 3
	textSameCalls++
	checkTextSameInto(t, d, &textSame, fresh, b, froms...)
}

// checkTextSameInto is checkTextSame with the buffers and the separator
// of the fresh render given.
func checkTextSameInto(t testing.TB, d *Decoder, bufs *textSameBufs, fresh int, b []byte, froms ...int64) {
	t.Helper()
	for i, from := range froms {
		for j, sep := range []string{"", "=", "->"} {
			dst, ref := append(bufs.got[:0], 'x'), append(bufs.ref[:0], 'x')
			if i == 0 && j == fresh {
				dst, ref = []byte("x"), []byte("x")
			}
			got, gerr := d.AppendText(dst, b, from, []byte(sep))
			want, werr := appendTextReference(d, ref, b, from, []byte(sep))
			if i != 0 || j != fresh {
				bufs.got, bufs.ref = got[:0], want[:0]
			}
			if fmt.Sprint(gerr) != fmt.Sprint(werr) {
				t.Fatalf("from %d sep %q: error %v, reference %v", from, sep, gerr, werr)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("from %d sep %q: text\n%q\nreference\n%q", from, sep, got, want)
			}
		}
	}
}

// randField is nil (null), empty, or 1..max random bytes.
func randField(r *rand.Rand, max int) []byte {
	switch r.IntN(8) {
	case 0:
		return nil
	case 1:
		return []byte{}
	}
	b := make([]byte, 1+r.IntN(max))
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	return b
}

// TestAppendTextFastMatchesReference renders random batches (null and
// empty keys and values, lengths whose varints take one to three bytes,
// headers, large timestamp deltas, every codec, control and
// log-append-time batches), then damaged copies of them, with the fast
// path and the general loop, and requires the same text and errors. The
// batches are drawn in order from one stream, each call given the fresh
// render checkTextSame would have given it, and checked on every CPU
// (checkParallel), each worker with its own buffers.
func TestAppendTextFastMatchesReference(t *testing.T) {
	type worker struct {
		d    Decoder
		bufs textSameBufs
	}
	checkParallel(t, func(emit func(func(testing.TB, *worker))) {
		appendTextFastCases(t, func(fresh int, b []byte, froms []int64) {
			emit(func(t testing.TB, w *worker) { checkTextSameInto(t, &w.d, &w.bufs, fresh, b, froms...) })
		})
	})
}

// appendTextFastCases draws TestAppendTextFastMatchesReference's batches
// and hands each to check with the fresh render that checkTextSame gives
// it.
func appendTextFastCases(t *testing.T, check func(fresh int, b []byte, froms []int64)) {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	var bl Builder
	emit := func(b []byte, froms []int64) {
		fresh := textSameCalls % 3
		textSameCalls++
		check(fresh, b, froms)
	}
	iters := 800
	if testing.Short() {
		iters = 300
	}
	for i := 0; i < iters; i++ {
		spec := DefaultSpec()
		spec.BaseOffset = r.Int64N(1 << 40)
		spec.Codec = allCodecs[r.IntN(len(allCodecs))]
		spec.Control = r.IntN(20) == 0
		spec.LogAppendTime = r.IntN(10) == 0
		bl.Reset(spec)
		n := 1 + r.IntN(40)
		ts := int64(1700000000000)
		maxLen := []int{10, 100, 300, 20000}[r.IntN(4)]
		for j := 0; j < n; j++ {
			switch r.IntN(3) {
			case 0:
				ts += r.Int64N(1 << 40)
			case 1:
				ts -= r.Int64N(100)
			}
			var hdrs []RecordHeader
			if r.IntN(6) == 0 {
				for k := r.IntN(3); k >= 0; k-- {
					hdrs = append(hdrs, RecordHeader{Key: fmt.Sprint("h", k), Value: randField(r, 20)})
				}
			}
			bl.Add(ts, randField(r, 30), randField(r, maxLen), hdrs)
		}
		b, err := bl.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := ParseHeader(b)
		froms := []int64{allOffsetsForTest, 0, h.BaseOffset + int64(r.IntN(n+1))}
		emit(b, froms)
		// Damage: flip, set or cut bytes of the records region (the CRC is
		// not checked by AppendText; Validate is the caller's business).
		for k := 0; k < 4; k++ {
			c := bytes.Clone(b)
			switch r.IntN(3) {
			case 0:
				p := HeaderSize + r.IntN(len(c)-HeaderSize)
				c[p] ^= byte(1 << r.IntN(8))
			case 1:
				p := HeaderSize + r.IntN(len(c)-HeaderSize)
				c[p] = []byte{0, 1, 0x7f, 0x80, 0xff}[r.IntN(5)]
			case 2:
				c = c[:HeaderSize+r.IntN(len(c)-HeaderSize)]
			}
			emit(c, froms)
		}
	}
}

const allOffsetsForTest = -1 << 63

// TestAppendTextFastShapes pins the record shapes the fast path must hand
// to the general loop or render the same: a non-canonical (two-byte) zero
// header count, a ten-byte timestamp delta, records whose declared length
// is one byte short or long, and trailing bytes after the last record.
func TestAppendTextFastShapes(t *testing.T) {
	var d Decoder
	rec := func(body ...byte) []byte { return append(appendVarint(nil, int32(len(body))), body...) }
	ten := []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}
	eleven := append([]byte{0x80}, ten...)
	cases := map[string]struct {
		count  int32
		region []byte
	}{
		"plain":            {1, rec(0, 0, 0, 1, 2, 'v', 0)},
		"keyed":            {1, rec(0, 0, 0, 2, 'k', 2, 'v', 0)},
		"empty key":        {1, rec(0, 0, 0, 0, 2, 'v', 0)},
		"null value":       {1, rec(0, 0, 0, 1, 1, 0)},
		"two-byte zero hc": {1, rec(0, 0, 0, 1, 2, 'v', 0x80, 0x00)},
		"ten-byte ts":      {1, rec(append(append([]byte{0}, ten...), 0, 1, 2, 'v', 0)...)},
		"eleven-byte ts":   {1, rec(append(append([]byte{0}, eleven...), 0, 1, 2, 'v', 0)...)},
		"length short":     {1, append(appendVarint(nil, 6), 0, 0, 0, 1, 2, 'v', 0)},
		"length long":      {1, append(appendVarint(nil, 8), 0, 0, 0, 1, 2, 'v', 0)},
		"trailing":         {1, append(rec(0, 0, 0, 1, 2, 'v', 0), 0)},
		"key -2":           {1, rec(0, 0, 0, 3, 2, 'v', 0)},
		"value past end":   {1, rec(0, 0, 0, 1, 8, 'v', 0)},
		"zero length":      {2, append(rec(0, 0, 0, 1, 2, 'v', 0), 0)},
		"header":           {1, rec(0, 0, 0, 1, 2, 'v', 2, 2, 'h', 2, 'x')},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			// The shapes AppendLines writes take the fast path.
			fast := map[string]bool{"plain": true, "keyed": true, "empty key": true, "null value": true, "ten-byte ts": true}[name]
			_, ok := appendTextFast(nil, c.region, c.count, 0, allOffsetsForTest, []byte("="), nil)
			if ok != fast {
				t.Fatalf("fast path took it: %v, want %v", ok, fast)
			}
			checkTextSame(t, &d, rawBatch(CodecNone, c.count, c.region), allOffsetsForTest, 0, 1)
		})
	}
}

// BenchmarkAppendTextPaths compares the fast path with the general loop
// on a 1000-line uncompressed batch of 100-byte lines.
func BenchmarkAppendTextPaths(b *testing.B) {
	text := bytes.Repeat(line100, 1000)
	batch, _ := AppendLines(nil, text, 1700000000000, nil)
	for _, name := range []string{"fast", "general"} {
		b.Run(name, func(b *testing.B) {
			var d Decoder
			dst := make([]byte, 0, len(text))
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			var err error
			for b.Loop() {
				if name == "fast" {
					dst, err = d.AppendText(dst[:0], batch, 0, nil)
				} else {
					dst, err = appendTextReference(&d, dst[:0], batch, 0, nil)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
