package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/klauspost/compress/snappy"
)

// rawSnappyEncode is one raw snappy block, the framing franz-go writes.
func rawSnappyEncode(b []byte) []byte { return snappy.Encode(nil, b) }

// rawBatch wraps a hand-made records region in a valid header (CRC
// included), so that only the records can be at fault.
func rawBatch(codec Codec, count int32, region []byte) []byte {
	b := make([]byte, HeaderSize, HeaderSize+len(region))
	b = append(b, region...)
	spec := DefaultSpec()
	putHeader(b, &spec, int16(codec), max(count-1, 0), 1000, 1000, count)
	return b
}

// decodeAll runs every whole-batch decoder over b and returns the first
// error, checking that Records, AppendText and Stats agree on failing.
func decodeAll(t *testing.T, b []byte) (validateErr, recordsErr error) {
	t.Helper()
	var d Decoder
	validateErr = Validate(b)
	recordsErr = d.Records(b, func(*Record) error { return nil })
	_, textErr := d.AppendText(nil, b, 0, []byte("="))
	_, statsErr := d.Stats(b, 0)
	if (recordsErr == nil) != (textErr == nil) || (textErr == nil) != (statsErr == nil) {
		t.Errorf("disagreement: Records %v, AppendText %v, Stats %v", recordsErr, textErr, statsErr)
	}
	return validateErr, recordsErr
}

func TestBadInput(t *testing.T) {
	valid := func() []byte { return buildBatch(t, DefaultSpec(), sampleRecords()[:3]) }
	withLength := func(n uint32) []byte {
		b := valid()
		binary.BigEndian.PutUint32(b[offBatchLength:], n)
		return b
	}
	withCodec := func(c int16) []byte {
		b := valid()
		binary.BigEndian.PutUint16(b[offAttributes:], uint16(c))
		binary.BigEndian.PutUint32(b[offCRC:], CRC(b))
		return b
	}
	rec := func(hexes ...string) []byte { return unhex(t, strings.Join(hexes, " ")) }

	cases := []struct {
		name        string
		b           []byte
		validateErr error // nil: Validate must pass
		recordsErr  error
	}{
		{"bad magic", func() []byte { b := valid(); b[offMagic] = 1; return b }(), ErrCorrupt, ErrCorrupt},
		{"BatchLength 2 GB", withLength(math.MaxInt32), ErrShort, ErrShort},
		{"BatchLength 48", withLength(48), ErrCorrupt, ErrCorrupt},
		{"BatchLength negative", withLength(0x80000000), ErrCorrupt, ErrCorrupt},
		{"CRC mismatch", func() []byte { b := valid(); b[offMaxTimestamp+7] ^= 0x40; return b }(), ErrCorrupt, nil},
		{"trailing byte after the batch", append(valid(), 0), ErrCorrupt, ErrCorrupt},
		{"codec 5", withCodec(5), nil, ErrCodec},
		{"codec 6", withCodec(6), nil, ErrCodec},
		{"codec 7", withCodec(7), nil, ErrCodec},
		{"gzip garbage", rawBatch(CodecGzip, 1, []byte("not gzip at all")), nil, ErrCorrupt},
		{"snappy garbage", rawBatch(CodecSnappy, 1, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}), nil, ErrCorrupt},
		{"xerial truncated block", rawBatch(CodecSnappy, 1, append(append([]byte{}, xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 9, 1)), nil, ErrCorrupt},
		{"lz4 garbage", rawBatch(CodecLZ4, 1, []byte("garbage garbage garbage")), nil, ErrCorrupt},
		{"zstd garbage", rawBatch(CodecZstd, 1, []byte("garbage garbage garbage")), nil, ErrCorrupt},
		{"empty gzip", rawBatch(CodecGzip, 1, nil), nil, ErrCorrupt},

		// Record layout; the reference record is 0e 00 00 00 01 02 76 00
		// (null key, value "v").
		{"reference record", rawBatch(CodecNone, 1, rec("0e 00 00 00 01 02 76 00")), nil, nil},
		{"negative record count", rawBatch(CodecNone, -1, rec("0e 00 00 00 01 02 76 00")), nil, ErrCorrupt},
		{"huge record count", rawBatch(CodecNone, 1<<30, rec("0e 00 00 00 01 02 76 00")), nil, ErrCorrupt},
		{"count 2, one record", rawBatch(CodecNone, 2, rec("0e 00 00 00 01 02 76 00 0e 00 00 00 01 02 76")), nil, ErrCorrupt},
		{"count 0, one record", rawBatch(CodecNone, 0, rec("0e 00 00 00 01 02 76 00")), nil, ErrCorrupt},
		{"trailing bytes after the records", rawBatch(CodecNone, 1, rec("0e 00 00 00 01 02 76 00 00 00 00 00 00 00 00")), nil, ErrCorrupt},
		{"key length -2", rawBatch(CodecNone, 1, rec("0e 00 00 00 03 02 76 00")), nil, ErrCorrupt},
		{"value length -3", rawBatch(CodecNone, 1, rec("0e 00 00 00 01 05 76 00")), nil, ErrCorrupt},
		{"value length past record", rawBatch(CodecNone, 1, rec("0e 00 00 00 01 04 76 00")), nil, ErrCorrupt},
		{"record length negative", rawBatch(CodecNone, 1, rec("0d 00 00 00 01 02 76 00")), nil, ErrCorrupt},
		{"record length past batch", rawBatch(CodecNone, 1, rec("10 00 00 00 01 02 76 00")), nil, ErrCorrupt},
		{"record length short of fields", rawBatch(CodecNone, 1, rec("0c 00 00 00 01 02 76 00 00")), nil, ErrCorrupt},
		{"record length beyond fields", rawBatch(CodecNone, 1, rec("10 00 00 00 01 02 76 00 00")), nil, ErrCorrupt},
		{"header count -1", rawBatch(CodecNone, 1, rec("0e 00 00 00 01 02 76 01")), nil, ErrCorrupt},
		{"header count too big", rawBatch(CodecNone, 1, rec("10 00 00 00 01 02 76 7e 00")), nil, ErrCorrupt},
		{"null header key", rawBatch(CodecNone, 1, rec("12 00 00 00 01 02 76 02 01 01")), nil, ErrCorrupt},
		{"header value length -2", rawBatch(CodecNone, 1, rec("14 00 00 00 01 02 76 02 02 61 03")), nil, ErrCorrupt},
		{"header with null value", rawBatch(CodecNone, 1, rec("14 00 00 00 01 02 76 02 02 61 01")), nil, nil},
		{"overlong length varint", rawBatch(CodecNone, 1, rec("8e 80 80 80 80 00 00 00 00 01 02 76 00")), nil, ErrCorrupt},
		{"five-byte length varint", rawBatch(CodecNone, 1, rec("8e 80 80 80 00 00 00 00 01 02 76 00")), nil, nil},
		{"overlong timestamp varlong", rawBatch(CodecNone, 1, rec("22 00 80 80 80 80 80 80 80 80 80 80 00 00 01 02 76 00")), nil, ErrCorrupt},
		{"ten-byte timestamp varlong", rawBatch(CodecNone, 1, rec("20 00 80 80 80 80 80 80 80 80 80 00 00 01 02 76 00")), nil, nil},
		{"overlong offset delta", rawBatch(CodecNone, 1, rec("18 00 00 80 80 80 80 80 00 01 02 76 00")), nil, ErrCorrupt},
		{"varint runs off the end", rawBatch(CodecNone, 1, rec("80 80 80 80 80 80 80")), nil, ErrCorrupt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			verr, rerr := decodeAll(t, c.b)
			if !isOrNil(verr, c.validateErr) {
				t.Errorf("Validate: %v, want %v", verr, c.validateErr)
			}
			if !isOrNil(rerr, c.recordsErr) {
				t.Errorf("Records: %v, want %v", rerr, c.recordsErr)
			}
			var ce *CorruptError
			if rerr != nil && !errors.Is(rerr, ErrCodec) && !errors.As(rerr, &ce) {
				t.Errorf("Records error %T is not a *CorruptError", rerr)
			}
		})
	}
}

func isOrNil(err, want error) bool {
	if want == nil {
		return err == nil
	}
	return errors.Is(err, want)
}

func TestPeekSize(t *testing.T) {
	b := unhex(t, workedExample)
	for n := 0; n < peekSize; n++ {
		if _, err := PeekSize(b[:n]); !errors.Is(err, ErrShort) {
			t.Errorf("%d bytes: %v", n, err)
		}
	}
	if size, err := PeekSize(b[:peekSize]); err != nil || size != 73 {
		t.Errorf("PeekSize = %d, %v", size, err)
	}
	binary.BigEndian.PutUint32(b[offBatchLength:], math.MaxInt32)
	if size, err := PeekSize(b); err != nil || size != math.MaxInt32+LogOverhead {
		t.Errorf("2 GB: %d, %v", size, err)
	}
	// ParseHeader reports a bad length or magic it can see in preference
	// to truncation.
	binary.BigEndian.PutUint32(b[offBatchLength:], 3)
	if _, err := ParseHeader(b[:20]); !errors.Is(err, ErrCorrupt) {
		t.Errorf("short header with bad length: %v", err)
	}
}

// TestTruncated cuts batches at every length: every decoder must report
// ErrShort (never panic, never succeed).
func TestTruncated(t *testing.T) {
	batches, _ := splitBatches(t, readTestdata(t, kafkaSegment))
	for _, c := range allCodecs {
		spec := DefaultSpec()
		spec.Codec = c
		batches = append(batches, buildBatch(t, spec, sampleRecords()[:6]))
	}
	for _, whole := range batches {
		for n := 0; n < len(whole); n++ {
			b := whole[:n]
			verr, rerr := decodeAll(t, b)
			if !errors.Is(verr, ErrShort) || !errors.Is(rerr, ErrShort) {
				t.Fatalf("%d of %d bytes: Validate %v, Records %v", n, len(whole), verr, rerr)
			}
			if _, err := ParseHeader(b); n < HeaderSize && !errors.Is(err, ErrShort) {
				t.Fatalf("%d bytes: ParseHeader %v", n, err)
			}
		}
	}
}

// TestFlippedBytes flips each byte of several batches; decoders may fail or
// succeed but must not panic, and Stats must keep agreeing with AppendText.
func TestFlippedBytes(t *testing.T) {
	batches, _ := splitBatches(t, readTestdata(t, kafkaSegment))
	for _, c := range allCodecs {
		spec := DefaultSpec()
		spec.Codec = c
		batches = append(batches, buildBatch(t, spec, sampleRecords()[:6]))
	}
	var d Decoder
	for _, whole := range batches {
		b := bytes.Clone(whole)
		for i := range b {
			for _, x := range []byte{0x01, 0x80, 0xff} {
				b[i] ^= x
				if Validate(b) == nil && i >= crcStart {
					t.Fatalf("flip %#x at %d passes the CRC", x, i)
				}
				_ = d.Records(b, func(*Record) error { return nil })
				checkStats(t, &d, b, 0)
				b[i] ^= x
			}
		}
	}
}

// TestBombs feeds each codec a stream that decompresses past
// MaxDecompressed.
func TestBombs(t *testing.T) {
	if testing.Short() {
		t.Skip("compresses 65 MiB per codec")
	}
	zeros := make([]byte, MaxDecompressed+1024)
	var z compressor
	for _, c := range allCodecs[1:] {
		t.Run(c.String(), func(t *testing.T) {
			region, err := z.compress(nil, c, zeros)
			if err != nil {
				t.Fatal(err)
			}
			b := rawBatch(c, 1, region)
			_, rerr := decodeAll(t, b)
			if !errors.Is(rerr, ErrCorrupt) || !strings.Contains(rerr.Error(), "exceed") {
				t.Errorf("%d-byte %v bomb: %v", len(region), c, rerr)
			}
		})
	}
	t.Run("raw snappy claiming 1 GiB", func(t *testing.T) {
		region := binary.AppendUvarint(nil, 1<<30)
		region = append(region, 0, 0, 0, 0)
		_, rerr := decodeAll(t, rawBatch(CodecSnappy, 1, region))
		if !errors.Is(rerr, ErrCorrupt) || !strings.Contains(rerr.Error(), "exceed") {
			t.Errorf("%v", rerr)
		}
	})
	t.Run("xerial blocks summing past the bound", func(t *testing.T) {
		region := append([]byte{}, xerialMagic...)
		region = append(region, 0, 0, 0, 1, 0, 0, 0, 1)
		block := binary.AppendUvarint(nil, 60<<20)
		for range 2 {
			region = binary.BigEndian.AppendUint32(region, uint32(len(block)))
			region = append(region, block...)
		}
		_, rerr := decodeAll(t, rawBatch(CodecSnappy, 1, region))
		if !errors.Is(rerr, ErrCorrupt) || !strings.Contains(rerr.Error(), "exceed") {
			t.Errorf("%v", rerr)
		}
	})
}

// TestRawSnappy checks that a raw snappy block, as franz-go and librdkafka
// may send it, decodes like the xerial framing the Builder writes.
func TestRawSnappy(t *testing.T) {
	spec := DefaultSpec()
	recs := sampleRecords()
	plain := buildBatch(t, spec, recs)
	var z compressor
	region, _ := z.compress(nil, CodecSnappy, plain[HeaderSize:])
	if !bytes.HasPrefix(region, xerialMagic) {
		t.Fatalf("Builder's snappy is not xerial: %x", region[:8])
	}
	raw, err := decodeSnappy(nil, region)
	if err != nil || !bytes.Equal(raw, plain[HeaderSize:]) {
		t.Fatalf("xerial decode: %v", err)
	}
	block := rawSnappyEncode(plain[HeaderSize:])
	b := rawBatch(CodecSnappy, int32(len(recs)), block)
	var d Decoder
	want, _ := d.AppendText(nil, plain, 0, []byte("\t"))
	got, err := d.AppendText(nil, b, 0, []byte("\t"))
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("raw snappy: %v", err)
	}
}

func TestVarint(t *testing.T) {
	for _, v := range []int32{0, 1, -1, 63, -64, 64, 8191, -8192, 1 << 20, math.MaxInt32, math.MinInt32} {
		b := appendVarint(nil, v)
		if len(b) != sizeVarint(v) || len(b) > maxVarintLen32 {
			t.Errorf("%d: %d bytes, sizeVarint %d", v, len(b), sizeVarint(v))
		}
		var p [maxVarintLen32]byte
		if n := putVarint(p[:], v); !bytes.Equal(p[:n], b) {
			t.Errorf("%d: putVarint %x, appendVarint %x", v, p[:n], b)
		}
		got, n := readVarint(b)
		if got != v || n != len(b) {
			t.Errorf("%d: read %d, %d", v, got, n)
		}
		if _, n := readVarint(b[:len(b)-1]); n != 0 {
			t.Errorf("%d truncated: n %d", v, n)
		}
		got64, n := readVarlong(b)
		if got64 != int64(v) || n != len(b) {
			t.Errorf("%d as varlong: %d, %d", v, got64, n)
		}
	}
	for _, v := range []int64{0, -1, math.MaxInt64, math.MinInt64, 1 << 40, -1700000000000} {
		b := appendVarlong(nil, v)
		if len(b) != sizeVarlong(v) || len(b) > maxVarintLen64 {
			t.Errorf("%d: %d bytes", v, len(b))
		}
		got, n := readVarlong(b)
		if got != v || n != len(b) {
			t.Errorf("%d: read %d, %d", v, got, n)
		}
		if bb := binary.AppendVarint(nil, v); !bytes.Equal(bb, b) {
			t.Errorf("%d: %x, encoding/binary %x", v, b, bb)
		}
	}
	if _, n := readVarint(unhex(t, "80 80 80 80 80 00")); n >= 0 {
		t.Errorf("6-byte varint accepted")
	}
	if _, n := readVarlong(unhex(t, "80 80 80 80 80 80 80 80 80 80 00")); n >= 0 {
		t.Errorf("11-byte varlong accepted")
	}
	if v, n := readVarint(unhex(t, "80 00")); v != 0 || n != 2 {
		t.Errorf("non-minimal zero: %d, %d", v, n)
	}
	if _, n := readVarint(nil); n != 0 {
		t.Errorf("empty: %d", n)
	}
}
