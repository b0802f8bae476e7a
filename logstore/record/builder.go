package record

import (
	"fmt"
	"math"
	"slices"
)

// BatchSpec holds the header fields of a batch to build.
type BatchSpec struct {
	BaseOffset    int64
	LeaderEpoch   int32
	ProducerID    int64 // -1 if none
	ProducerEpoch int16 // -1 if none
	BaseSequence  int32 // -1 if none
	Codec         Codec
	Transactional bool
	Control       bool
	LogAppendTime bool
	// The fields below serve the log cleaner, which rebuilds batches
	// without renumbering them (KAFKA-FORMAT.md §9.5); zero values keep
	// the defaults.
	//
	// LastOffsetDelta, when larger than the last record's delta, is kept so
	// that a compacted batch still ends at its original last offset.
	LastOffsetDelta int32
	// MaxTimestamp, when larger than every record's, is kept (LogAppendTime
	// batches carry the broker's time there).
	MaxTimestamp int64
	// DeleteHorizon, when positive, sets attribute bit 6 and becomes the
	// BaseTimestamp; record deltas are taken against it.
	DeleteHorizon int64
}

// DefaultSpec is a non-idempotent, uncompressed batch at base offset 0,
// leader epoch 0.
func DefaultSpec() BatchSpec {
	return BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
}

// attributes returns the attribute bits of a batch built from s.
func (s *BatchSpec) attributes() int16 {
	a := int16(s.Codec) & attrCodecMask
	if s.LogAppendTime {
		a |= attrLogAppendTime
	}
	if s.Transactional {
		a |= attrTransactional
	}
	if s.Control {
		a |= attrControl
	}
	if s.DeleteHorizon > 0 {
		a |= attrDeleteHorizon
	}
	return a
}

// Builder accumulates records and produces one batch. Reusable after Reset;
// appends allocate nothing per record once its buffers have grown. A
// Builder used without Reset builds with DefaultSpec.
type Builder struct {
	spec    BatchSpec
	started bool   // Reset was called; otherwise the first Add applies DefaultSpec
	recs    []byte // encoded records, uncompressed
	n       int32  // records in recs
	lastDel int32  // offset delta of the last record
	firstTS int64
	maxTS   int64
	z       compressor
}

// Reset starts a new batch with spec.
func (bl *Builder) Reset(spec BatchSpec) {
	bl.spec = spec
	bl.started = true
	bl.recs = bl.recs[:0]
	bl.n = 0
}

// Add appends a record with absolute timestamp ts (deltas computed against
// the first record's timestamp). key/value nil = null.
func (bl *Builder) Add(ts int64, key, value []byte, headers []RecordHeader) {
	bl.AddAt(bl.n, ts, key, value, headers)
}

// AddAt appends a record with an explicit offset delta, which must exceed
// the previous record's (the cleaner keeps original offsets, leaving gaps).
func (bl *Builder) AddAt(offsetDelta int32, ts int64, key, value []byte, headers []RecordHeader) {
	if !bl.started {
		bl.Reset(DefaultSpec())
	}
	if bl.n == 0 {
		bl.firstTS, bl.maxTS = ts, ts
		if bl.spec.DeleteHorizon > 0 {
			bl.firstTS = bl.spec.DeleteHorizon
		}
	}
	bl.maxTS = max(bl.maxTS, ts)
	tsDelta := ts - bl.firstTS
	body := 1 + sizeVarlong(tsDelta) + sizeVarint(offsetDelta) + sizeBytes(key) + sizeBytes(value) + sizeVarint(int32(len(headers)))
	for i := range headers {
		body += sizeVarint(int32(len(headers[i].Key))) + len(headers[i].Key) + sizeBytes(headers[i].Value)
	}
	b := slices.Grow(bl.recs, maxVarintLen32+body)
	b = appendVarint(b, int32(body))
	b = append(b, 0) // attributes
	b = appendVarlong(b, tsDelta)
	b = appendVarint(b, offsetDelta)
	b = appendBytes(b, key)
	b = appendBytes(b, value)
	b = appendVarint(b, int32(len(headers)))
	for i := range headers {
		b = appendVarint(b, int32(len(headers[i].Key)))
		b = append(b, headers[i].Key...)
		b = appendBytes(b, headers[i].Value)
	}
	bl.recs = b
	bl.n++
	bl.lastDel = offsetDelta
}

// Len is the number of records added since Reset.
func (bl *Builder) Len() int { return int(bl.n) }

// Build appends the finished batch to dst (compressing per spec.Codec) and
// returns it. OffsetDeltas are 0..n-1, LastOffsetDelta = n-1, BaseTimestamp =
// first ts, MaxTimestamp = max ts, CRC computed. It fails with ErrEmptyBatch
// when no record was added and ErrCodec for an unknown codec, returning dst
// unchanged.
func (bl *Builder) Build(dst []byte) ([]byte, error) {
	if bl.n == 0 {
		return dst, ErrEmptyBatch
	}
	if bl.spec.Codec < CodecNone || bl.spec.Codec > CodecZstd {
		return dst, fmt.Errorf("%w %d", ErrCodec, int8(bl.spec.Codec))
	}
	start := len(dst)
	out := slices.Grow(dst, HeaderSize)[:start+HeaderSize]
	out, err := bl.z.compress(out, bl.spec.Codec, bl.recs)
	if err != nil {
		return dst[:start], fmt.Errorf("record: %v compression: %w", bl.spec.Codec, err)
	}
	if len(out)-start-LogOverhead > math.MaxInt32 {
		return dst[:start], fmt.Errorf("record: batch of %d bytes exceeds the int32 batch length", len(out)-start)
	}
	putHeader(out[start:], &bl.spec, bl.spec.attributes(), max(bl.lastDel, bl.spec.LastOffsetDelta), bl.firstTS, max(bl.maxTS, bl.spec.MaxTimestamp), bl.n)
	return out, nil
}

// sizeBytes is the encoded size of a nullable byte string.
func sizeBytes(b []byte) int {
	if b == nil {
		return 1
	}
	return sizeVarint(int32(len(b))) + len(b)
}

// appendBytes appends a nullable byte string: its varint length (-1 for
// nil) and its bytes.
func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return append(dst, 1) // varint -1
	}
	dst = appendVarint(dst, int32(len(b)))
	return append(dst, b...)
}

// sizeVarlong is the encoded length of v as a varlong.
func sizeVarlong(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// AppendEmpty appends to dst the batch the log cleaner writes in place of
// a batch whose records it all removed but must keep (KAFKA-FORMAT.md
// §9.5, Kafka's DefaultRecordBatch.writeEmptyHeader): h's header with no
// records, uncompressed, BaseTimestamp -1 and no delete horizon, keeping
// its offsets (LastOffsetDelta), leader epoch, producer id, epoch and base
// sequence, timestamp type, transactional and control flags and
// MaxTimestamp. The producer state a reload rebuilds from the log rests on
// these fields.
func AppendEmpty(dst []byte, h *Header) []byte {
	spec := BatchSpec{
		BaseOffset: h.BaseOffset, LeaderEpoch: h.PartitionLeaderEpoch,
		ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, BaseSequence: h.BaseSequence,
		Transactional: h.Transactional(), Control: h.Control(), LogAppendTime: h.LogAppendTime(),
	}
	start := len(dst)
	out := slices.Grow(dst, HeaderSize)[:start+HeaderSize]
	putHeader(out[start:], &spec, spec.attributes(), h.LastOffsetDelta, -1, h.MaxTimestamp, 0)
	return out
}
