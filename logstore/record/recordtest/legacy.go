// Package recordtest builds, for tests, record data that the record
// package only reads.
package recordtest

import (
	"encoding/binary"
	"hash/crc32"
)

// LegacyMessage is one message of Kafka's pre-0.11 formats (magic 0 or 1,
// KAFKA-FORMAT.md §2), built byte by byte: offset int64, message size
// int32, CRC-32 (IEEE) of the rest from the magic on, magic int8,
// attributes int8, timestamp int64 (magic 1 only), then key and value as
// an int32 length (-1 for nil) and their bytes. segfs never writes these;
// its tests need them as a Kafka broker that once ran an old message
// format left them.
func LegacyMessage(magic, attrs byte, offset, ts int64, key, value []byte) []byte {
	be := binary.BigEndian
	m := []byte{magic, attrs}
	if magic == 1 {
		m = be.AppendUint64(m, uint64(ts))
	}
	for _, b := range [][]byte{key, value} {
		if b == nil {
			m = be.AppendUint32(m, 0xffffffff)
			continue
		}
		m = be.AppendUint32(m, uint32(len(b)))
		m = append(m, b...)
	}
	out := be.AppendUint64(nil, uint64(offset))
	out = be.AppendUint32(out, uint32(4+len(m)))
	out = be.AppendUint32(out, crc32.ChecksumIEEE(m))
	return append(out, m...)
}
