package index

import "encoding/binary"

// An .index file is an array of 8-byte entries with no header, trailer or
// checksum (KAFKA-FORMAT.md §3.1). Both fields are big-endian int32:
//
//	byte  0               4               8
//	      +---------------+---------------+
//	      | relative      | position      |
//	      | offset        | in the .log   |
//	      +---------------+---------------+
//
// The relative offset is the last offset of the indexed append minus the
// segment's base offset; the position is the byte position in the .log of
// the start of that append. Unused preallocated slots are zeros.
const (
	// OffsetEntrySize is the size of one .index entry.
	OffsetEntrySize = 8 // int32 relative offset, int32 position

	offsetRelOffsetAt = 0 // int32 relative offset
	offsetPositionAt  = 4 // int32 position
)

// OffsetEntry is one .index entry with the offset made absolute.
type OffsetEntry struct {
	Offset   int64
	Position int32
}

// offsetRel returns the relative offset of the entry starting at b[0].
func offsetRel(b []byte) int32 {
	return int32(binary.BigEndian.Uint32(b[offsetRelOffsetAt:]))
}

// decodeOffsetEntry decodes the entry starting at b[0].
func decodeOffsetEntry(b []byte, baseOffset int64) OffsetEntry {
	return OffsetEntry{
		Offset:   baseOffset + int64(offsetRel(b)),
		Position: int32(binary.BigEndian.Uint32(b[offsetPositionAt:])),
	}
}

// putOffsetEntry encodes (rel, position) into b[0:OffsetEntrySize].
func putOffsetEntry(b []byte, rel, position int32) {
	binary.BigEndian.PutUint32(b[offsetRelOffsetAt:], uint32(rel))
	binary.BigEndian.PutUint32(b[offsetPositionAt:], uint32(position))
}

// AppendOffsetEntry appends the 8-byte encoding of e relative to
// baseOffset to dst. The caller guarantees 0 <= e.Offset-baseOffset <=
// MaxInt32; out-of-range offsets are truncated to 32 bits, as on disk.
func AppendOffsetEntry(dst []byte, baseOffset int64, e OffsetEntry) []byte {
	var b [OffsetEntrySize]byte
	putOffsetEntry(b[:], int32(e.Offset-baseOffset), e.Position)
	return append(dst, b[:]...)
}

// ParseOffsetEntries decodes raw .index bytes (for dump-log), stopping at
// the first entry after entry 0 whose relative offset is 0, which is how
// kafka-dump-log recognises a zero-filled preallocated tail (§11.2). A
// length that is not a multiple of 8 is reported as trailing bytes; they
// are never decoded.
func ParseOffsetEntries(b []byte, baseOffset int64) (entries []OffsetEntry, trailing int) {
	n := len(b) / OffsetEntrySize
	trailing = len(b) % OffsetEntrySize
	for i := 0; i < n; i++ {
		e := b[i*OffsetEntrySize:]
		if i > 0 && offsetRel(e) == 0 {
			break
		}
		entries = append(entries, decodeOffsetEntry(e, baseOffset))
	}
	return entries, trailing
}
