package record

import (
	"encoding/binary"
	"hash/crc32"
	"io"
)

// Legacy messages: the magic 0 and 1 message sets Kafka wrote before 0.11
// (and later with log.message.format.version < 0.11), which a Kafka 3.x
// broker still reads from old segments. segfs does not serve them, but it
// must recognize them: read as v2 batches they look like garbage (a
// length below the v2 minimum, magic 0 or 1), and recovery truncates
// garbage as a torn tail. A message whose magic is 0 or 1 and whose CRC-32
// checks out over its declared size is evidence of real data, never a torn
// write (whose bytes would have to match a 32-bit checksum by chance).
//
// Layout, all integers big-endian:
//
//	 0                   8           12          16 17 18
//	+-------------------+-----------+-----------+--+--+-------------------+
//	| Offset int64      | Size int32| CRC uint32|Mg|At| Timestamp (v1)    | ...
//	+-------------------+-----------+-----------+--+--+-------------------+
//	... KeyLength int32 (-1 = null), Key, ValueLength int32 (-1 = null), Value
//
// Size counts the bytes after itself (as BatchLength does), so a message
// is LogOverhead + Size bytes; the 12-byte log overhead and the magic at
// byte 16 are where a v2 batch has them, which is how a reader tells the
// formats apart. The CRC is CRC-32 (IEEE, not the Castagnoli of v2) of
// bytes [16, end). Offset is the message's own offset; a compressed
// message (attributes bits 0-2 != 0) wraps a whole message set as its
// value and carries the offset of the last message inside it.
const (
	MagicV0 = 0
	MagicV1 = 1

	legacyOffCRC        = 12
	legacyOffMagic      = 16
	legacyOffAttributes = 17
	legacyOffTimestamp  = 18
	legacyCRCStart      = legacyOffMagic

	// minLegacySizeV0 and minLegacySizeV1 are the smallest legal Size:
	// CRC, magic, attributes, (timestamp,) key and value lengths.
	minLegacySizeV0 = 4 + 1 + 1 + 4 + 4
	minLegacySizeV1 = minLegacySizeV0 + 8

	// LegacyPeekSize is how many bytes PeekLegacy needs.
	LegacyPeekSize = legacyOffMagic + 1
)

// LegacyMessage is one magic 0 or 1 message, decoded.
type LegacyMessage struct {
	Offset     int64
	Size       int32 // bytes after the size field
	CRC        uint32
	Magic      int8
	Attributes int8
	Timestamp  int64  // -1 (no timestamp) for magic 0
	Key, Value []byte // nil = null; they alias the message bytes
}

// TotalSize is the whole message: LogOverhead + Size.
func (m *LegacyMessage) TotalSize() int64 { return LogOverhead + int64(m.Size) }

// Codec is the compression codec in attribute bits 0-2: a compressed
// message wraps a message set.
func (m *LegacyMessage) Codec() Codec { return Codec(m.Attributes & attrCodecMask) }

// LogAppendTime reports attribute bit 3 (magic 1 only): the timestamp is
// the broker's append time.
func (m *LegacyMessage) LogAppendTime() bool {
	return m.Magic == MagicV1 && m.Attributes&attrLogAppendTime != 0
}

// PeekLegacy reads the first LegacyPeekSize bytes of b and reports whether
// they can begin a legacy message: magic 0 or 1 and a size at least that
// magic's minimum. size is the whole message (LogOverhead + Size). It says
// nothing about the CRC: see LegacyCRCValid.
func PeekLegacy(b []byte) (size int64, magic int8, ok bool) {
	if len(b) < LegacyPeekSize {
		return 0, 0, false
	}
	n := int32(binary.BigEndian.Uint32(b[offBatchLength:]))
	switch magic = int8(b[legacyOffMagic]); magic {
	case MagicV0:
		ok = n >= minLegacySizeV0
	case MagicV1:
		ok = n >= minLegacySizeV1
	}
	if !ok {
		return 0, 0, false
	}
	return LogOverhead + int64(n), magic, true
}

// LegacyCRCValid reports whether r holds, at pos, a whole legacy message
// (PeekLegacy) that ends by limit and whose CRC-32 matches: the evidence
// that the bytes are old Kafka data and not a torn write. It streams the
// message through a small buffer, so a large size costs reads, never an
// allocation of that size. An error is a read error; a message that ends
// past limit (or past the end of r) is not valid, without error.
func LegacyCRCValid(r io.ReaderAt, pos, limit int64) (magic int8, valid bool, err error) {
	if limit-pos < LegacyPeekSize {
		return 0, false, nil
	}
	var hdr [LegacyPeekSize]byte
	if n, err := r.ReadAt(hdr[:], pos); n < len(hdr) {
		if err == io.EOF {
			err = nil
		}
		return 0, false, err
	}
	size, magic, ok := PeekLegacy(hdr[:])
	if !ok || size > limit-pos {
		return magic, false, nil
	}
	want := binary.BigEndian.Uint32(hdr[legacyOffCRC:])
	var buf [32 << 10]byte
	crc := uint32(0)
	for at, end := pos+legacyCRCStart, pos+size; at < end; {
		chunk := buf[:min(int64(len(buf)), end-at)]
		n, err := r.ReadAt(chunk, at)
		crc = crc32.Update(crc, crc32.IEEETable, chunk[:n])
		at += int64(n)
		if n < len(chunk) {
			if err == io.EOF || err == nil {
				return magic, false, nil
			}
			return magic, false, err
		}
	}
	return magic, crc == want, nil
}

// ParseLegacy decodes the legacy message that is exactly b and checks its
// CRC-32 and layout (key and value lengths filling the message exactly).
func ParseLegacy(b []byte) (LegacyMessage, error) {
	size, magic, ok := PeekLegacy(b)
	if !ok {
		return LegacyMessage{}, errorf(ErrCorrupt, offBatchLength, "not a message of format v0 or v1")
	}
	if int64(len(b)) != size {
		return LegacyMessage{}, errorf(ErrCorrupt, 0, "message of %d bytes in %d", size, len(b))
	}
	be := binary.BigEndian
	m := LegacyMessage{
		Offset:     int64(be.Uint64(b[offBaseOffset:])),
		Size:       int32(be.Uint32(b[offBatchLength:])),
		CRC:        be.Uint32(b[legacyOffCRC:]),
		Magic:      magic,
		Attributes: int8(b[legacyOffAttributes]),
		Timestamp:  -1,
	}
	if c := crc32.ChecksumIEEE(b[legacyCRCStart:]); c != m.CRC {
		return m, errorf(ErrCorrupt, legacyOffCRC, "CRC mismatch (stored %d, computed %d)", m.CRC, c)
	}
	q := legacyOffTimestamp
	if magic == MagicV1 {
		m.Timestamp = int64(be.Uint64(b[q:]))
		q += 8
	}
	var bad string
	if m.Key, q, bad = legacyBytes(b, q, "key"); bad != "" {
		return m, errorf(ErrCorrupt, q, "%s", bad)
	}
	if m.Value, q, bad = legacyBytes(b, q, "value"); bad != "" {
		return m, errorf(ErrCorrupt, q, "%s", bad)
	}
	if q != len(b) {
		return m, errorf(ErrCorrupt, q, "%d bytes after the value", len(b)-q)
	}
	return m, nil
}

// legacyBytes reads an int32-length-prefixed byte string (-1 = null) at q.
func legacyBytes(b []byte, q int, field string) ([]byte, int, string) {
	if len(b)-q < 4 {
		return nil, q, field + " length past the end of the message"
	}
	n := int32(binary.BigEndian.Uint32(b[q:]))
	q += 4
	switch {
	case n == -1:
		return nil, q, ""
	case n < 0 || int64(n) > int64(len(b)-q):
		return nil, q - 4, field + " length " + itoa(int64(n)) + " does not fit in the message"
	}
	return b[q : q+int(n) : q+int(n)], q + int(n), ""
}
