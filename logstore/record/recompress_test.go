package record

import (
	"bytes"
	"encoding/binary"
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

// TestRenumber rebuilds, from and to every codec, a transactional batch
// whose records' offset deltas are 3, 3, 9 (header: 3 records, last delta
// 2): the result is a valid batch in the target codec with deltas 0, 1, 2,
// the same base offset, leader epoch, producer id, epoch, base sequence,
// transactional flag, record count and last offset delta, and the same
// records (timestamps, keys, values, headers); BaseTimestamp is the first
// record's and MaxTimestamp the largest. A batch whose records have no
// timestamp keeps MaxTimestamp -1, and one with the LogAppendTime
// attribute gives its records the timestamp they read as (MaxTimestamp),
// as Kafka's rebuild does.
func TestRenumber(t *testing.T) {
	type rec struct {
		ts         int64
		key, value []byte
		headers    []RecordHeader
	}
	recs := []rec{
		{1000, []byte("a"), []byte("1"), []RecordHeader{{Key: "h", Value: []byte("x")}}},
		{900, nil, []byte("22"), nil},
		{1500, []byte("c"), nil, []RecordHeader{{Key: "n"}, {Key: "m", Value: []byte{}}}},
	}
	build := func(spec BatchSpec, ts func(int64) int64) []byte {
		t.Helper()
		var bl Builder
		spec.LastOffsetDelta = 2
		bl.Reset(spec)
		for i, r := range recs {
			bl.AddAt([]int32{3, 3, 9}[i], ts(r.ts), r.key, r.value, r.headers)
		}
		b, err := bl.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		if h, _ := ParseHeader(b); h.LastOffsetDelta != 9 {
			t.Fatalf("test batch: last offset delta %d", h.LastOffsetDelta)
		}
		// The builder takes the largest delta; the header must say 2.
		binary.BigEndian.PutUint32(b[offLastOffsetDelta:], 2)
		binary.BigEndian.PutUint32(b[offCRC:], CRC(b))
		return b
	}
	var rc Recompressor
	var d Decoder
	for _, from := range allCodecs {
		spec := DefaultSpec()
		spec.Codec = from
		spec.BaseOffset, spec.LeaderEpoch = 77, 3
		spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence = 5, 1, 40
		spec.Transactional = true
		for _, kind := range []string{"create time", "no timestamps", "log append time"} {
			ts, wantTs := func(ts int64) int64 { return ts }, func(ts int64) int64 { return ts }
			s := spec
			switch kind {
			case "no timestamps":
				ts = func(int64) int64 { return -1 }
				wantTs = ts
			case "log append time":
				s.LogAppendTime, s.MaxTimestamp = true, 5000
				wantTs = func(int64) int64 { return 5000 }
			}
			src := build(s, ts)
			srcH, _ := ParseHeader(src)
			for _, to := range allCodecs {
				out, err := rc.Renumber([]byte("prefix"), src, to)
				if err != nil {
					t.Fatalf("%v to %v, %s: %v", from, to, kind, err)
				}
				if !bytes.HasPrefix(out, []byte("prefix")) {
					t.Fatalf("%v to %v: dst prefix lost", from, to)
				}
				b := out[len("prefix"):]
				if err := Validate(b); err != nil {
					t.Fatalf("%v to %v, %s: %v", from, to, kind, err)
				}
				h, _ := ParseHeader(b)
				maxTs := max(wantTs(1000), wantTs(900), wantTs(1500))
				if h.BaseOffset != 77 || h.PartitionLeaderEpoch != 3 || h.ProducerID != 5 || h.ProducerEpoch != 1 ||
					h.BaseSequence != 40 || !h.Transactional() || h.Control() || h.LogAppendTime() || h.Codec() != to ||
					h.RecordCount != 3 || h.LastOffsetDelta != srcH.LastOffsetDelta ||
					h.BaseTimestamp != wantTs(1000) || h.MaxTimestamp != maxTs {
					t.Errorf("%v to %v, %s: header %+v", from, to, kind, h)
				}
				i := 0
				err = d.Records(b, func(r *Record) error {
					w := recs[i]
					if r.OffsetDelta != int32(i) || r.Offset != 77+int64(i) || r.Timestamp != wantTs(w.ts) ||
						!nullEq(r.Key, w.key) || !nullEq(r.Value, w.value) || len(r.Headers) != len(w.headers) {
						t.Errorf("%v to %v, %s: record %d = %+v", from, to, kind, i, r)
					}
					for j := range min(len(r.Headers), len(w.headers)) {
						if r.Headers[j].Key != w.headers[j].Key || !nullEq(r.Headers[j].Value, w.headers[j].Value) {
							t.Errorf("%v to %v, %s: record %d header %d = %+v, want %+v", from, to, kind, i, j, r.Headers[j], w.headers[j])
						}
					}
					i++
					return nil
				})
				if err != nil || i != 3 {
					t.Errorf("%v to %v, %s: %d records, %v", from, to, kind, i, err)
				}
			}
		}
	}
	// A control batch is not a produced batch: refused, dst unchanged.
	ctl := DefaultSpec()
	ctl.Control, ctl.ProducerID, ctl.ProducerEpoch = true, 5, 1
	var bl Builder
	bl.Reset(ctl)
	bl.Add(1, []byte{0, 0, 0, 0}, []byte{0, 0, 0, 0, 0, 0}, nil)
	b, err := bl.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := rc.Renumber([]byte("p"), b, CodecGzip); err == nil || string(out) != "p" {
		t.Errorf("control batch: %q, %v", out, err)
	}
}
