package index

import "encoding/binary"

// A .timeindex file is an array of 12-byte entries with no header, trailer
// or checksum (KAFKA-FORMAT.md §4.1), big-endian:
//
//	byte  0                               8               12
//	      +-------------------------------+---------------+
//	      | timestamp (int64, ms)         | relative      |
//	      |                               | offset (int32)|
//	      +-------------------------------+---------------+
//
// Entry (T, O) means the largest timestamp in the segment up to and
// including the batch whose last offset is O is T. Unused preallocated
// slots are zeros.
const (
	// TimeEntrySize is the size of one .timeindex entry.
	TimeEntrySize = 12 // int64 timestamp, int32 relative offset

	timeTimestampAt = 0 // int64 timestamp
	timeRelOffsetAt = 8 // int32 relative offset
)

// TimeEntry is one .timeindex entry with the offset made absolute.
type TimeEntry struct {
	Timestamp int64
	Offset    int64
}

// timeStamp returns the timestamp of the entry starting at b[0].
func timeStamp(b []byte) int64 {
	return int64(binary.BigEndian.Uint64(b[timeTimestampAt:]))
}

// timeRel returns the relative offset of the entry starting at b[0].
func timeRel(b []byte) int32 {
	return int32(binary.BigEndian.Uint32(b[timeRelOffsetAt:]))
}

// decodeTimeEntry decodes the entry starting at b[0].
func decodeTimeEntry(b []byte, baseOffset int64) TimeEntry {
	return TimeEntry{Timestamp: timeStamp(b), Offset: baseOffset + int64(timeRel(b))}
}

// putTimeEntry encodes (ts, rel) into b[0:TimeEntrySize].
func putTimeEntry(b []byte, ts int64, rel int32) {
	binary.BigEndian.PutUint64(b[timeTimestampAt:], uint64(ts))
	binary.BigEndian.PutUint32(b[timeRelOffsetAt:], uint32(rel))
}

// AppendTimeEntry appends the 12-byte encoding of e relative to baseOffset
// to dst. The caller guarantees 0 <= e.Offset-baseOffset <= MaxInt32;
// out-of-range offsets are truncated to 32 bits, as on disk.
func AppendTimeEntry(dst []byte, baseOffset int64, e TimeEntry) []byte {
	var b [TimeEntrySize]byte
	putTimeEntry(b[:], e.Timestamp, int32(e.Offset-baseOffset))
	return append(dst, b[:]...)
}

// ParseTimeEntries decodes raw .timeindex bytes (for dump-log) with the
// same rules as ParseOffsetEntries: stop at the first entry after entry 0
// whose relative offset is 0 (§11.3), and report a length that is not a
// multiple of 12 as trailing bytes.
func ParseTimeEntries(b []byte, baseOffset int64) (entries []TimeEntry, trailing int) {
	n := len(b) / TimeEntrySize
	trailing = len(b) % TimeEntrySize
	for i := 0; i < n; i++ {
		e := b[i*TimeEntrySize:]
		if i > 0 && timeRel(e) == 0 {
			break
		}
		entries = append(entries, decodeTimeEntry(e, baseOffset))
	}
	return entries, trailing
}
