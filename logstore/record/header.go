package record

import (
	"encoding/binary"
	"hash/crc32"
)

// Batch layout constants (KAFKA-FORMAT.md §2.1); layout.go draws the bytes.
const (
	HeaderSize  = 61 // RECORD_BATCH_OVERHEAD
	LogOverhead = 12 // BaseOffset + BatchLength
	MagicV2     = 2
)

// castagnoli is the CRC-32C table; crc32 uses the SSE4.2/ARMv8 instruction
// for it where the CPU has one.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header is the 61-byte batch header, decoded.
type Header struct {
	BaseOffset           int64
	BatchLength          int32
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	RecordCount          int32
}

// Size is the whole batch size: LogOverhead + BatchLength.
func (h *Header) Size() int64 { return LogOverhead + int64(h.BatchLength) }

// LastOffset is BaseOffset + LastOffsetDelta.
func (h *Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is LastOffset + 1, the base offset of the batch that follows.
func (h *Header) NextOffset() int64 { return h.LastOffset() + 1 }

// Codec is the compression codec in attribute bits 0-2 (possibly one of the
// invalid values 5-7).
func (h *Header) Codec() Codec { return Codec(h.Attributes & attrCodecMask) }

// LogAppendTime reports attribute bit 3: MaxTimestamp is every record's
// timestamp.
func (h *Header) LogAppendTime() bool { return h.Attributes&attrLogAppendTime != 0 }

// Transactional reports attribute bit 4.
func (h *Header) Transactional() bool { return h.Attributes&attrTransactional != 0 }

// Control reports attribute bit 5: the batch holds transaction or KRaft
// markers, not user records.
func (h *Header) Control() bool { return h.Attributes&attrControl != 0 }

// HasDeleteHorizon reports attribute bit 6: BaseTimestamp is the delete
// horizon set by compaction.
func (h *Header) HasDeleteHorizon() bool { return h.Attributes&attrDeleteHorizon != 0 }

// PeekSize reads BaseOffset and BatchLength from the first 12 bytes (17 with
// magic) and returns the total batch size. It fails with ErrShort if b has
// fewer than 17 bytes and ErrCorrupt if BatchLength < 49 or magic != 2 (so
// a 2 GB length is reported, never allocated).
func PeekSize(b []byte) (size int64, err error) {
	if len(b) < peekSize {
		return 0, errorf(ErrShort, len(b), "truncated: need %d bytes to read the batch length and magic, have %d", peekSize, len(b))
	}
	n := int32(binary.BigEndian.Uint32(b[offBatchLength:]))
	if n < minBatchLength {
		return 0, errorf(ErrCorrupt, offBatchLength, "batch length %d below minimum %d", n, minBatchLength)
	}
	if m := int8(b[offMagic]); m != MagicV2 {
		return 0, errorf(ErrCorrupt, offMagic, "magic %d, want %d", m, MagicV2)
	}
	return LogOverhead + int64(n), nil
}

// ParseHeader decodes the 61-byte header of b (len(b) >= 61) with the same
// length and magic checks as PeekSize. It does not check the CRC.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		if _, err := PeekSize(b); err != nil && len(b) >= peekSize {
			return Header{}, err
		}
		return Header{}, errorf(ErrShort, len(b), "truncated: batch header needs %d bytes, have %d", HeaderSize, len(b))
	}
	if _, err := PeekSize(b); err != nil {
		return Header{}, err
	}
	be := binary.BigEndian
	return Header{
		BaseOffset:           int64(be.Uint64(b[offBaseOffset:])),
		BatchLength:          int32(be.Uint32(b[offBatchLength:])),
		PartitionLeaderEpoch: int32(be.Uint32(b[offLeaderEpoch:])),
		Magic:                int8(b[offMagic]),
		CRC:                  be.Uint32(b[offCRC:]),
		Attributes:           int16(be.Uint16(b[offAttributes:])),
		LastOffsetDelta:      int32(be.Uint32(b[offLastOffsetDelta:])),
		BaseTimestamp:        int64(be.Uint64(b[offBaseTimestamp:])),
		MaxTimestamp:         int64(be.Uint64(b[offMaxTimestamp:])),
		ProducerID:           int64(be.Uint64(b[offProducerID:])),
		ProducerEpoch:        int16(be.Uint16(b[offProducerEpoch:])),
		BaseSequence:         int32(be.Uint32(b[offBaseSequence:])),
		RecordCount:          int32(be.Uint32(b[offRecordCount:])),
	}, nil
}

// parseWhole is ParseHeader plus the check that b is exactly one batch,
// which every function taking a whole batch needs.
func parseWhole(b []byte) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	size := h.Size()
	if int64(len(b)) < size {
		return h, errorf(ErrShort, len(b), "truncated: batch length says %d bytes, have %d", size, len(b))
	}
	if int64(len(b)) > size {
		return h, errorf(ErrCorrupt, int(size), "%d bytes after the end of a %d-byte batch", int64(len(b))-size, size)
	}
	return h, nil
}

// Validate checks a whole batch b (len(b) must equal its Size()): length,
// magic, CRC-32C over bytes 21..end.
func Validate(b []byte) error {
	h, err := parseWhole(b)
	if err != nil {
		return err
	}
	if c := CRC(b); c != h.CRC {
		return errorf(ErrCorrupt, offCRC, "CRC mismatch (stored %d, computed %d)", h.CRC, c)
	}
	return nil
}

// CRC computes the CRC-32C of b[21:]. A b too short to reach the covered
// bytes yields the CRC of nothing, 0.
func CRC(b []byte) uint32 {
	if len(b) < crcStart {
		return 0
	}
	return crc32.Checksum(b[crcStart:], castagnoli)
}

// SetBaseOffset rewrites BaseOffset in place (outside the CRC). b must hold
// at least the 12-byte log overhead; a shorter b is a caller bug and panics.
func SetBaseOffset(b []byte, off int64) {
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(off))
}

// SetLeaderEpoch rewrites PartitionLeaderEpoch in place (outside the CRC).
// b must hold at least 16 bytes; a shorter b panics.
func SetLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(epoch))
}

// SetLogAppendTime sets attribute bit 3, MaxTimestamp = ts, and recomputes the
// CRC, as a broker does on append to a LogAppendTime topic. b must be a
// whole batch; a b shorter than the header panics.
func SetLogAppendTime(b []byte, ts int64) {
	be := binary.BigEndian
	_ = b[HeaderSize-1]
	be.PutUint16(b[offAttributes:], be.Uint16(b[offAttributes:])|attrLogAppendTime)
	be.PutUint64(b[offMaxTimestamp:], uint64(ts))
	be.PutUint32(b[offCRC:], CRC(b))
}

// SetCreateTime sets MaxTimestamp = ts and clears attribute bit 3 (the
// timestamp type becomes CreateTime), and recomputes the CRC, as a broker
// does to a produced batch on a CreateTime topic (Kafka's
// setMaxTimestamp(CREATE_TIME, ts)). b must be a whole batch; a b shorter
// than the header panics.
func SetCreateTime(b []byte, ts int64) {
	be := binary.BigEndian
	_ = b[HeaderSize-1]
	be.PutUint16(b[offAttributes:], be.Uint16(b[offAttributes:])&^attrLogAppendTime)
	be.PutUint64(b[offMaxTimestamp:], uint64(ts))
	be.PutUint32(b[offCRC:], CRC(b))
}

// putHeader writes the header fields of a batch whose records already fill
// b[HeaderSize:], then its CRC. b is exactly the batch.
func putHeader(b []byte, spec *BatchSpec, attrs int16, lastOffsetDelta int32, baseTS, maxTS int64, count int32) {
	be := binary.BigEndian
	_ = b[HeaderSize-1]
	be.PutUint64(b[offBaseOffset:], uint64(spec.BaseOffset))
	be.PutUint32(b[offBatchLength:], uint32(len(b)-LogOverhead))
	be.PutUint32(b[offLeaderEpoch:], uint32(spec.LeaderEpoch))
	b[offMagic] = MagicV2
	be.PutUint16(b[offAttributes:], uint16(attrs))
	be.PutUint32(b[offLastOffsetDelta:], uint32(lastOffsetDelta))
	be.PutUint64(b[offBaseTimestamp:], uint64(baseTS))
	be.PutUint64(b[offMaxTimestamp:], uint64(maxTS))
	be.PutUint64(b[offProducerID:], uint64(spec.ProducerID))
	be.PutUint16(b[offProducerEpoch:], uint16(spec.ProducerEpoch))
	be.PutUint32(b[offBaseSequence:], uint32(spec.BaseSequence))
	be.PutUint32(b[offRecordCount:], uint32(count))
	be.PutUint32(b[offCRC:], CRC(b))
}
