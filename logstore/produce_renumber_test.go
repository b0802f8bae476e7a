package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/segfs/segfs/logstore/record"
)

// misnumberedBatch builds an idempotent batch (producer 42, epoch 3, base
// sequence seq) of three records whose offset deltas are 0, 0, 0, as some
// clients number the records of a compressed batch, with the header's
// record count 3 and last offset delta 2, in codec c. Record i has key
// k<i> (record 1 none), value v<i> (record 2 null), a header h<i>=x<i>
// (record 1 also a second, with a null value) and timestamp now+i*10.
func misnumberedBatch(t *testing.T, c record.Codec, seq int32, now int64) []byte {
	t.Helper()
	var bl record.Builder
	spec := record.DefaultSpec()
	spec.Codec = c
	spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence = 42, 3, seq
	spec.LastOffsetDelta = 2
	bl.Reset(spec)
	for i := range 3 {
		key, value := []byte(fmt.Sprint("k", i)), []byte(fmt.Sprint("v", i))
		hdrs := []record.RecordHeader{{Key: fmt.Sprint("h", i), Value: []byte(fmt.Sprint("x", i))}}
		switch i {
		case 1:
			key = nil
			hdrs = append(hdrs, record.RecordHeader{Key: "null"})
		case 2:
			value = nil
		}
		bl.AddAt(0, now+int64(i)*10, key, value, hdrs)
	}
	b, err := bl.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// storedBatches returns a copy of every batch of p's segments.
func storedBatches(t *testing.T, p *Partition) [][]byte {
	t.Helper()
	var out [][]byte
	var dec record.Decoder
	segs := p.acquireSegments(p.logStart.Load())
	defer releaseAll(segs)
	for _, s := range segs {
		if err := scanSegment(s, &dec, func(_ int64, b []byte, _ *record.Header) error {
			out = append(out, bytes.Clone(b))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// checkRenumbered checks that b is misnumberedBatch's batch (sequence seq)
// stored at base offset base in codec c: the records at offsets base,
// base+1, base+2 with their keys, values, headers and timestamps, the
// producer fields and the record count kept, and a valid CRC.
func checkRenumbered(t *testing.T, b []byte, base int64, c record.Codec, seq int32, now int64) {
	t.Helper()
	if err := record.Validate(b); err != nil {
		t.Fatalf("stored batch: %v", err)
	}
	h, err := record.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.BaseOffset != base || h.LastOffsetDelta != 2 || h.RecordCount != 3 || h.Codec() != c ||
		h.ProducerID != 42 || h.ProducerEpoch != 3 || h.BaseSequence != seq || h.LogAppendTime() ||
		h.BaseTimestamp != now || h.MaxTimestamp != now+20 {
		t.Fatalf("stored batch header %+v, want base offset %d, 3 records, last delta 2, %v, producer 42/3/%d, timestamps %d..%d",
			h, base, c, seq, now, now+20)
	}
	var dec record.Decoder
	i := 0
	if err := dec.Records(b, func(r *record.Record) error {
		key, value := []byte(fmt.Sprint("k", i)), []byte(fmt.Sprint("v", i))
		hdrs := fmt.Sprintf("[h%d=x%d]", i, i)
		switch i {
		case 1:
			key = nil
			hdrs = "[h1=x1 null=<nil>]"
		case 2:
			value = nil
		}
		var got bytes.Buffer
		got.WriteString("[")
		for j, hd := range r.Headers {
			if j > 0 {
				got.WriteString(" ")
			}
			if hd.Value == nil {
				fmt.Fprintf(&got, "%s=<nil>", hd.Key)
			} else {
				fmt.Fprintf(&got, "%s=%s", hd.Key, hd.Value)
			}
		}
		got.WriteString("]")
		if r.Offset != base+int64(i) || r.OffsetDelta != int32(i) || !bytes.Equal(r.Key, key) || (r.Key == nil) != (key == nil) ||
			!bytes.Equal(r.Value, value) || (r.Value == nil) != (value == nil) || got.String() != hdrs || r.Timestamp != now+int64(i)*10 {
			t.Errorf("record %d: offset %d delta %d key %q value %q headers %s ts %d; want offset %d key %q value %q headers %s ts %d",
				i, r.Offset, r.OffsetDelta, r.Key, r.Value, got.String(), r.Timestamp, base+int64(i), key, value, hdrs, now+int64(i)*10)
		}
		i++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if i != 3 {
		t.Fatalf("stored batch has %d records, want 3", i)
	}
}

// TestAppendBatchRenumbersCompressed: a produced batch of each codec whose
// records' offset deltas are 0, 0, 0 rather than 0, 1, 2 is taken, as
// Kafka's LogValidator takes it (it gives up assigning offsets in place
// and rebuilds the batch, KAFKA-FORMAT.md §2.9): stored renumbered in its
// codec (or the topic's compression.type), the producer id, epoch and base
// sequence, record count, keys, values, headers and timestamps kept, and
// its idempotent retry answered as a duplicate with the same offsets.
// segfs refused it as INVALID_RECORD.
func TestAppendBatchRenumbersCompressed(t *testing.T) {
	clock := newClock()
	s := openStore(t, t.TempDir(), clock)
	defer s.Close()
	for _, c := range []record.Codec{record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd} {
		for _, topicCodec := range []string{"producer", "zstd", "uncompressed"} {
			t.Run(fmt.Sprintf("%v to %s", c, topicCodec), func(t *testing.T) {
				tp, err := s.CreateTopic(fmt.Sprintf("r-%v-%s", c, topicCodec), 1, map[string]string{"compression.type": topicCodec})
				if err != nil {
					t.Fatal(err)
				}
				p, _ := tp.Partition(0)
				stored := c
				if topicCodec != "producer" {
					if stored, err = record.ParseCodec(topicCodec); err != nil {
						t.Fatal(err)
					}
				}
				now := clock.ms.Load()
				// A well-formed batch first, so that the renumbered one
				// does not start at offset 0.
				if _, err := p.AppendBatch(headerBatch(t, c, 2, now)); err != nil {
					t.Fatal(err)
				}
				batch := misnumberedBatch(t, c, 0, now)
				res, err := p.AppendBatch(bytes.Clone(batch))
				if err != nil {
					t.Fatalf("misnumbered %v batch refused: %v", c, err)
				}
				if res.BaseOffset != 2 || res.LastOffset != 4 || res.Duplicate || p.LogEndOffset() != 5 {
					t.Fatalf("appended at %d..%d (duplicate %v), log end %d; want 2..4, log end 5", res.BaseOffset, res.LastOffset, res.Duplicate, p.LogEndOffset())
				}
				bs := storedBatches(t, p)
				if len(bs) != 2 {
					t.Fatalf("%d batches stored, want 2", len(bs))
				}
				checkRenumbered(t, bs[1], 2, stored, 0, now)
				// The retry is the producer's last batch: a duplicate.
				if res, err := p.AppendBatch(bytes.Clone(batch)); err != nil || !res.Duplicate || res.BaseOffset != 2 || res.LastOffset != 4 {
					t.Fatalf("retry: %+v, %v; want a duplicate at 2..4", res, err)
				}
				// The next sequence follows the batch's three records.
				if _, err := p.AppendBatch(misnumberedBatch(t, c, 3, now)); err != nil {
					t.Fatalf("next batch of the producer: %v", err)
				}
				if bs = storedBatches(t, p); len(bs) != 3 {
					t.Fatalf("%d batches stored, want 3", len(bs))
				}
				checkRenumbered(t, bs[2], 5, stored, 3, now)
			})
		}
	}
}

// TestAppendBatchMisnumberedUncompressed: an uncompressed batch with
// offset deltas 0, 0, 0 is renumbered when the topic's compression.type
// compresses it (Kafka's compressed path, which rebuilds it), and refused
// as INVALID_RECORD, with nothing stored, when it stays uncompressed:
// Kafka's uncompressed path stores the deltas as they came, which segfs
// does not.
func TestAppendBatchMisnumberedUncompressed(t *testing.T) {
	clock := newClock()
	s := openStore(t, t.TempDir(), clock)
	defer s.Close()
	now := clock.ms.Load()
	for _, topicCodec := range []string{"producer", "uncompressed"} {
		tp, err := s.CreateTopic("u-"+topicCodec, 1, map[string]string{"compression.type": topicCodec})
		if err != nil {
			t.Fatal(err)
		}
		p, _ := tp.Partition(0)
		if _, err := p.AppendBatch(misnumberedBatch(t, record.CodecNone, 0, now)); !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("%s: %v, want ErrInvalidRecord", topicCodec, err)
		}
		if p.LogEndOffset() != 0 {
			t.Errorf("%s: stored, log end offset %d", topicCodec, p.LogEndOffset())
		}
	}
	tp, err := s.CreateTopic("u-gzip", 1, map[string]string{"compression.type": "gzip"})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tp.Partition(0)
	if res, err := p.AppendBatch(misnumberedBatch(t, record.CodecNone, 0, now)); err != nil || res.BaseOffset != 0 || res.LastOffset != 2 {
		t.Fatalf("uncompressed batch to a gzip topic: %+v, %v", res, err)
	}
	bs := storedBatches(t, p)
	if len(bs) != 1 {
		t.Fatalf("%d batches stored, want 1", len(bs))
	}
	checkRenumbered(t, bs[0], 0, record.CodecGzip, 0, now)
}
