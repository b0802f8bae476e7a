package record

import (
	"bytes"
	"errors"
	"testing"
)

// seedBatches are the fuzz seeds: the real Kafka segment's batches and
// built batches of every codec and flag.
func seedBatches(f *testing.F) [][]byte {
	f.Helper()
	seeds, _ := splitBatches(f, readTestdata(f, kafkaSegment))
	recs := sampleRecords()
	recs[6].value = recs[6].value[:300] // keep seeds small for the mutator
	for _, c := range allCodecs {
		spec := DefaultSpec()
		spec.Codec = c
		seeds = append(seeds, buildBatch(f, spec, recs))
	}
	spec := DefaultSpec()
	spec.Control, spec.Transactional, spec.LogAppendTime = true, true, true
	seeds = append(seeds, buildBatch(f, spec, recs[:2]))
	b, _ := AppendLines(nil, []byte("k=v\nx\n=\n\n"), 1700000000000, []byte("="))
	return append(seeds, b)
}

// FuzzBatch runs every batch decoder over arbitrary bytes: none may panic,
// Records, AppendText and Stats must fail together, and when they succeed
// Stats must predict AppendText's length exactly.
func FuzzBatch(f *testing.F) {
	for _, b := range seedBatches(f) {
		f.Add(b, int64(0))
		f.Add(b, int64(2))
	}
	var d Decoder
	f.Fuzz(func(t *testing.T, b []byte, from int64) {
		size, perr := PeekSize(b)
		h, herr := ParseHeader(b)
		if herr == nil && (perr != nil || size != h.Size()) {
			t.Fatalf("ParseHeader ok but PeekSize %d, %v", size, perr)
		}
		if herr == nil && h.Size() < HeaderSize {
			t.Fatalf("accepted size %d", h.Size())
		}
		verr := Validate(b)
		if verr == nil && (herr != nil || int64(len(b)) != h.Size() || CRC(b) != h.CRC) {
			t.Fatalf("Validate passed a bad batch")
		}
		n := int32(0)
		rerr := d.Records(b, func(r *Record) error {
			n++
			if len(r.Key)+len(r.Value) > MaxDecompressed {
				t.Fatalf("record larger than the bound")
			}
			return nil
		})
		if rerr == nil && n != h.RecordCount {
			t.Fatalf("Records made %d calls for count %d", n, h.RecordCount)
		}
		for _, err := range []error{herr, verr, rerr} {
			if err != nil && !errors.Is(err, ErrShort) && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrCodec) {
				t.Fatalf("error without a sentinel: %v", err)
			}
		}
		checkTextSame(t, &d, b, from)
		st, serr := d.Stats(b, from)
		for _, sep := range []string{"", "=", "->"} {
			text, terr := d.AppendText([]byte("x"), b, from, []byte(sep))
			if (terr == nil) != (serr == nil) {
				t.Fatalf("AppendText %v, Stats %v", terr, serr)
			}
			if terr != nil {
				if string(text) != "x" {
					t.Fatalf("AppendText left partial output on error")
				}
				continue
			}
			if st.Size(len(sep)) != int64(len(text)-1) {
				t.Fatalf("sep %q: Stats %+v says %d bytes, AppendText made %d", sep, st, st.Size(len(sep)), len(text)-1)
			}
		}
		// Records may accept a batch AppendText skips (control, or wholly
		// below from), never the reverse.
		if serr == nil && rerr != nil && herr == nil && !h.Control() && h.NextOffset() > from {
			t.Fatalf("Stats ok, Records %v", rerr)
		}
	})
}

// FuzzRecords wraps arbitrary bytes as the records region of an
// uncompressed batch, exercising the record decoder directly. Whatever it
// accepts must survive a rebuild: the same keys, values and headers, with
// the CRC of the rebuilt batch valid.
func FuzzRecords(f *testing.F) {
	for _, b := range seedBatches(f) {
		h, _ := ParseHeader(b)
		if h.Codec() == CodecNone {
			f.Add(h.RecordCount, b[HeaderSize:])
		}
	}
	f.Add(int32(1), unhex(f, "10 00 00 00 02 6B 02 76 00"))
	var d Decoder
	var bl Builder
	f.Fuzz(func(t *testing.T, count int32, region []byte) {
		b := rawBatch(CodecNone, count, region)
		if err := Validate(b); err != nil {
			t.Fatalf("rawBatch invalid: %v", err)
		}
		checkTextSame(t, &d, b, allOffsetsForTest, 0, 1)
		bl.Reset(DefaultSpec())
		var keys, values [][]byte
		var hdrs [][]RecordHeader
		err := d.Records(b, func(r *Record) error {
			bl.Add(r.Timestamp, r.Key, r.Value, r.Headers)
			keys = append(keys, bytes.Clone(r.Key))
			values = append(values, bytes.Clone(r.Value))
			hs := make([]RecordHeader, len(r.Headers))
			for i, h := range r.Headers {
				hs[i] = RecordHeader{Key: h.Key, Value: bytes.Clone(h.Value)}
			}
			hdrs = append(hdrs, hs)
			return nil
		})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("record error not ErrCorrupt: %v", err)
			}
			return
		}
		if len(keys) != int(count) {
			t.Fatalf("%d records for count %d", len(keys), count)
		}
		if count == 0 {
			return
		}
		rebuilt, err := bl.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := Validate(rebuilt); err != nil {
			t.Fatal(err)
		}
		i := 0
		err = d.Records(rebuilt, func(r *Record) error {
			if !nullEq(r.Key, keys[i]) || !nullEq(r.Value, values[i]) || len(r.Headers) != len(hdrs[i]) {
				t.Fatalf("record %d changed in the rebuild", i)
			}
			for j, h := range r.Headers {
				if h.Key != hdrs[i][j].Key || !nullEq(h.Value, hdrs[i][j].Value) {
					t.Fatalf("record %d header %d changed in the rebuild", i, j)
				}
			}
			i++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzAppendLines checks the round trip of the text view: lines written
// with AppendLines render back to the same text with the same separator.
// It holds for every separator: a line splits at the separator's first
// occurrence and renders as key, separator, value again; a line without it
// keeps a null key and renders as itself; lines never contain '\n', so a
// separator containing one never matches. Only a missing final '\n' is
// added back.
func FuzzAppendLines(f *testing.F) {
	f.Add([]byte("hello\n"), []byte(""))
	f.Add([]byte("k=v\nk=\n=\nnone\n\n"), []byte("="))
	f.Add([]byte("a::b::c\nno newline"), []byte("::"))
	f.Add([]byte("x\ny\n"), []byte("\n"))
	var d Decoder
	f.Fuzz(func(t *testing.T, text, sep []byte) {
		b, n := AppendLines([]byte("prefix"), text, 42, sep)
		if string(b[:6]) != "prefix" {
			t.Fatal("dst prefix overwritten")
		}
		b = b[6:]
		want := text
		if len(text) > 0 && text[len(text)-1] != '\n' {
			want = append(bytes.Clone(text), '\n')
		}
		if n != bytes.Count(want, []byte{'\n'}) {
			t.Fatalf("%d records for %d lines", n, bytes.Count(want, []byte{'\n'}))
		}
		if n == 0 {
			if len(b) != 0 {
				t.Fatal("bytes appended for empty text")
			}
			return
		}
		if err := Validate(b); err != nil {
			t.Fatal(err)
		}
		got, err := d.AppendText(nil, b, 0, sep)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("round trip:\n got %q\nwant %q", got, want)
		}
		st, err := d.Stats(b, 0)
		if err != nil || st.Size(len(sep)) != int64(len(want)) || st.Lines != int64(n) {
			t.Fatalf("Stats %+v, %v for %d bytes", st, err, len(want))
		}
		if len(sep) == 0 && !bytes.Equal(b, linesViaBuilder(t, want, 42)) {
			t.Fatal("batch differs from the Builder's")
		}
	})
}

// FuzzAppendLinesMax: whatever the lines, separator and limit, batches of
// AppendLinesMax are within the limit, full, and byte for byte the batches
// AppendLinesAfter makes of the same lines (checkAppendLinesMax).
func FuzzAppendLinesMax(f *testing.F) {
	f.Add([]byte("h\n"), []byte("hello\nworld\n"), []byte(""), uint16(80))
	f.Add([]byte(""), []byte("k=v\nk=\n=\nnone\n\n"), []byte("="), uint16(90))
	f.Add([]byte("a::b\n"), []byte("a::b::c\nno newline"), []byte("::"), uint16(0))
	f.Add([]byte(""), bytes.Repeat([]byte("\n"), 300), []byte(""), uint16(1271))
	f.Fuzz(func(t *testing.T, head, text, sep []byte, max uint16) {
		if len(head) > 0 {
			// head is one or more whole lines.
			head = append(bytes.Clone(head), '\n')
		}
		checkAppendLinesMax(t, head, text, sep, int(max))
	})
}
