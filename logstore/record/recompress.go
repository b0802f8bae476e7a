package record

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Recompressor re-encodes the records region of whole batches with another
// codec, as a broker does when a topic's compression.type names a codec
// (KAFKA-FORMAT.md §2.9). Reusable; not safe for concurrent use.
type Recompressor struct {
	d  Decoder
	z  compressor
	bl Builder // for Renumber
}

// Recompress appends to dst batch b with its records compressed with c
// and returns it. Every header field is kept but the codec bits, the batch
// length and the CRC. b must be a whole batch whose CRC the caller has
// checked; a control batch, or one already in c, is appended unchanged.
func (rc *Recompressor) Recompress(dst, b []byte, c Codec) ([]byte, error) {
	return rc.recompress(dst, b, nil, false, c)
}

// RecompressRegion is Recompress for a batch whose records region the
// caller has decompressed already (Decoder.Walk's Region): it compresses
// recs, which must be b's records, rather than decompress them again. dst
// must not overlap b or recs.
func (rc *Recompressor) RecompressRegion(dst, b, recs []byte, c Codec) ([]byte, error) {
	return rc.recompress(dst, b, recs, true, c)
}

// recompress is Recompress, with b's records decompressed already in recs
// if have.
func (rc *Recompressor) recompress(dst, b, recs []byte, have bool, c Codec) ([]byte, error) {
	if c < CodecNone || c > CodecZstd {
		return dst, fmt.Errorf("%w %d", ErrCodec, int8(c))
	}
	h, err := parseWhole(b)
	if err != nil {
		return dst, err
	}
	if h.Codec() == c || h.Control() {
		return append(dst, b...), nil
	}
	if !have {
		if recs, err = rc.d.decompress(h.Codec(), b[HeaderSize:]); err != nil {
			return dst, err
		}
		defer rc.d.release()
	}
	start := len(dst)
	out := append(dst, b[:HeaderSize]...)
	out, err = rc.z.compress(out, c, recs)
	if err != nil {
		return dst[:start], fmt.Errorf("record: %v compression: %w", c, err)
	}
	nb := out[start:]
	if len(nb)-LogOverhead > math.MaxInt32 {
		return dst[:start], fmt.Errorf("record: batch of %d bytes exceeds the int32 batch length", len(nb))
	}
	be := binary.BigEndian
	be.PutUint32(nb[offBatchLength:], uint32(len(nb)-LogOverhead))
	be.PutUint16(nb[offAttributes:], be.Uint16(nb[offAttributes:])&^attrCodecMask|uint16(c))
	be.PutUint32(nb[offCRC:], CRC(nb))
	return out, nil
}

// Renumber appends to dst batch b rebuilt with its records' offset deltas
// 0, 1, 2, ... and compressed with c, and returns it. It is what Kafka's
// LogValidator does with a produced compressed batch whose inner offsets
// are not consecutive (KAFKA-FORMAT.md §2.9): it gives up assigning
// offsets in place and builds the batch anew from the records it decoded.
// Kept are the base offset, leader epoch, producer id, epoch, base
// sequence and transactional flag, and each record's timestamp (as the
// decoder reads it: MaxTimestamp for a LogAppendTime batch), key, value
// and headers, so the record count too; BaseTimestamp becomes the first
// record's timestamp, MaxTimestamp the largest, the timestamp type
// CreateTime (the caller stamps a LogAppendTime topic's batches), and the
// records' attributes 0, as Kafka's MemoryRecordsBuilder writes them. b
// must be a whole data batch whose CRC the caller has checked.
func (rc *Recompressor) Renumber(dst, b []byte, c Codec) ([]byte, error) {
	if c < CodecNone || c > CodecZstd {
		return dst, fmt.Errorf("%w %d", ErrCodec, int8(c))
	}
	h, err := parseWhole(b)
	if err != nil {
		return dst, err
	}
	if h.Control() {
		// A control batch's record is its marker, at its only offset.
		return dst, fmt.Errorf("%w: a control batch is not renumbered", ErrCorrupt)
	}
	rc.bl.Reset(BatchSpec{
		BaseOffset: h.BaseOffset, LeaderEpoch: h.PartitionLeaderEpoch,
		ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, BaseSequence: h.BaseSequence,
		Codec: c, Transactional: h.Transactional(),
		// The records' largest timestamp, even if every one is -1 (none):
		// Build keeps the larger of this and theirs.
		MaxTimestamp: math.MinInt64,
	})
	if err := rc.d.Records(b, func(r *Record) error {
		rc.bl.Add(r.Timestamp, r.Key, r.Value, r.Headers)
		return nil
	}); err != nil {
		return dst, err
	}
	return rc.bl.Build(dst)
}
