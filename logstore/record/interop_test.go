package record

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// These tests check the package against an independent implementation of
// the format, franz-go's kmsg, in both directions.

// TestKmsgDecodesOurs parses batches built here with kmsg.
func TestKmsgDecodesOurs(t *testing.T) {
	spec := BatchSpec{BaseOffset: 5, LeaderEpoch: 2, ProducerID: 9, ProducerEpoch: 4, BaseSequence: 11, LogAppendTime: true}
	recs := sampleRecords()
	b := buildBatch(t, spec, recs)
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	if kb.FirstOffset != 5 || int(kb.Length) != len(b)-LogOverhead || kb.PartitionLeaderEpoch != 2 || kb.Magic != 2 ||
		uint32(kb.CRC) != CRC(b) || kb.Attributes != attrLogAppendTime || kb.LastOffsetDelta != int32(len(recs)-1) ||
		kb.FirstTimestamp != 1000 || kb.MaxTimestamp != 1<<40 || kb.ProducerID != 9 || kb.ProducerEpoch != 4 ||
		kb.FirstSequence != 11 || kb.NumRecords != int32(len(recs)) {
		t.Errorf("kmsg header %+v", kb)
	}
	src := kb.Records
	for i, w := range recs {
		var kr kmsg.Record
		if err := kr.ReadFrom(src); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if kr.OffsetDelta != int32(i) || kr.TimestampDelta64 != w.ts-1000 || !nullEq(kr.Key, w.key) ||
			!nullEq(kr.Value, w.value) || len(kr.Headers) != len(w.headers) {
			t.Errorf("record %d: kmsg %+v", i, kr)
		}
		for j, h := range kr.Headers {
			if h.Key != w.headers[j].Key || !nullEq(h.Value, w.headers[j].Value) {
				t.Errorf("record %d header %d: %+v", i, j, h)
			}
		}
		src = src[sizeVarint(kr.Length)+int(kr.Length):]
	}
	if len(src) != 0 {
		t.Errorf("%d bytes left", len(src))
	}
}

// TestWeDecodeKmsg decodes a batch encoded by kmsg.
func TestWeDecodeKmsg(t *testing.T) {
	recs := sampleRecords()
	var region []byte
	for i, w := range recs {
		kr := kmsg.Record{TimestampDelta64: w.ts - 1000, OffsetDelta: int32(i), Key: w.key, Value: w.value}
		for _, h := range w.headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		body := kr.AppendTo(nil)[1:] // Length 0 encodes as one byte; measure the rest
		kr.Length = int32(len(body))
		region = kr.AppendTo(region)
	}
	kb := kmsg.RecordBatch{
		FirstOffset: 40, PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(len(recs) - 1),
		FirstTimestamp: 1000, MaxTimestamp: 1 << 40, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(len(recs)), Records: region,
	}
	kb.Length = int32(HeaderSize - LogOverhead + len(region))
	b := kb.AppendTo(nil)
	SetLeaderEpoch(b, 0) // any field outside the CRC
	copy(b[offCRC:], []byte{byte(CRC(b) >> 24), byte(CRC(b) >> 16), byte(CRC(b) >> 8), byte(CRC(b))})
	if err := Validate(b); err != nil {
		t.Fatal(err)
	}
	var d Decoder
	i := 0
	err := d.Records(b, func(r *Record) error {
		w := recs[i]
		if r.Offset != 40+int64(i) || r.Timestamp != w.ts || !nullEq(r.Key, w.key) || !nullEq(r.Value, w.value) || len(r.Headers) != len(w.headers) {
			t.Errorf("record %d: %+v", i, r)
		}
		i++
		return nil
	})
	if err != nil || i != len(recs) {
		t.Fatalf("%v after %d records", err, i)
	}
	// And the batch is byte for byte what the Builder makes.
	spec := DefaultSpec()
	spec.BaseOffset = 40
	if ours := buildBatch(t, spec, recs); !bytes.Equal(ours, b) {
		t.Errorf("Builder and kmsg differ:\n%x\n%x", ours, b)
	}
}
