package record

import (
	"bytes"
	"errors"
	"testing"
)

// TestRecompress re-encodes batches between every pair of codecs: the
// result is a valid batch in the target codec with the same header fields
// and the same records.
func TestRecompress(t *testing.T) {
	recs := sampleRecords()
	var rc Recompressor
	var d Decoder
	for _, from := range allCodecs {
		spec := DefaultSpec()
		spec.Codec = from
		spec.BaseOffset, spec.LeaderEpoch = 77, 3
		spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence = 5, 1, 40
		src := buildBatch(t, spec, recs)
		srcH, _ := ParseHeader(src)
		wantText, err := d.AppendText(nil, src, 0, []byte("="))
		if err != nil {
			t.Fatal(err)
		}
		for _, to := range allCodecs {
			prefix := []byte("prefix")
			out, err := rc.Recompress(prefix, src, to)
			if err != nil {
				t.Fatalf("%v to %v: %v", from, to, err)
			}
			if !bytes.HasPrefix(out, []byte("prefix")) {
				t.Fatalf("%v to %v: dst prefix lost", from, to)
			}
			b := out[len("prefix"):]
			if err := Validate(b); err != nil {
				t.Fatalf("%v to %v: %v", from, to, err)
			}
			h, _ := ParseHeader(b)
			want := srcH
			want.Attributes = srcH.Attributes&^attrCodecMask | int16(to)
			want.BatchLength, want.CRC = h.BatchLength, h.CRC
			if h != want || h.Codec() != to {
				t.Errorf("%v to %v: header %+v, want %+v", from, to, h, want)
			}
			if from == to && !bytes.Equal(b, src) {
				t.Errorf("%v to itself changed the batch", from)
			}
			text, err := d.AppendText(nil, b, 0, []byte("="))
			if err != nil || !bytes.Equal(text, wantText) {
				t.Errorf("%v to %v: text %.80q, %v", from, to, text, err)
			}
			i := 0
			err = d.Records(b, func(r *Record) error {
				w := recs[i]
				if r.Offset != 77+int64(i) || r.Timestamp != w.ts || !nullEq(r.Key, w.key) || !nullEq(r.Value, w.value) || len(r.Headers) != len(w.headers) {
					t.Errorf("%v to %v: record %d = %+v", from, to, i, r)
				}
				i++
				return nil
			})
			if err != nil || i != len(recs) {
				t.Fatalf("%v to %v: Records: %v after %d", from, to, err, i)
			}
		}
	}

	// A control batch stays as it is; a bad codec or batch is an error
	// that leaves dst alone.
	spec := DefaultSpec()
	spec.Control, spec.Transactional = true, true
	ctl := buildBatch(t, spec, recs[:1])
	if out, err := rc.Recompress(nil, ctl, CodecZstd); err != nil || !bytes.Equal(out, ctl) {
		t.Errorf("control batch: %v", err)
	}
	plain := buildBatch(t, DefaultSpec(), recs)
	if out, err := rc.Recompress([]byte("x"), plain, 5); !errors.Is(err, ErrCodec) || string(out) != "x" {
		t.Errorf("codec 5: %q %v", out, err)
	}
	if out, err := rc.Recompress([]byte("x"), plain[:len(plain)-1], CodecGzip); !errors.Is(err, ErrShort) || string(out) != "x" {
		t.Errorf("truncated: %q %v", out, err)
	}
	bad := rawBatch(CodecGzip, 1, []byte("not gzip at all"))
	if out, err := rc.Recompress([]byte("x"), bad, CodecNone); !errors.Is(err, ErrCorrupt) || string(out) != "x" {
		t.Errorf("undecodable gzip: %q %v", out, err)
	}
}
