package record

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"
)

// legacySeed is one magic 0 or 1 message built byte by byte.
func legacySeed(magic byte, offset int64, key, value []byte) []byte {
	be := binary.BigEndian
	m := []byte{magic, 0}
	if magic == MagicV1 {
		m = be.AppendUint64(m, 1_600_000_000_000)
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

// FuzzLegacy runs the legacy message readers over arbitrary bytes: none
// may panic, and they must agree: a message ParseLegacy accepts is one
// PeekLegacy frames and LegacyCRCValid takes for evidence, and a v2 batch
// never is.
func FuzzLegacy(f *testing.F) {
	f.Add(legacySeed(1, 3, []byte("k"), []byte("value")))
	f.Add(legacySeed(0, 0, nil, nil))
	f.Add(legacySeed(1, 0, nil, []byte("hello")))
	for _, b := range seedBatches(f)[:2] {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		size, magic, framed := PeekLegacy(b)
		_, valid, err := LegacyCRCValid(bytes.NewReader(b), 0, int64(len(b)))
		if err != nil {
			t.Fatalf("LegacyCRCValid: %v", err)
		}
		if valid && !framed {
			t.Fatalf("valid but not framed")
		}
		if valid && Validate(b[:size]) == nil {
			t.Fatalf("both a v2 batch and a legacy message")
		}
		if !framed {
			return
		}
		m, perr := ParseLegacy(b[:min(size, int64(len(b)))])
		if perr == nil && (!valid || m.Magic != magic || m.TotalSize() != size) {
			t.Fatalf("ParseLegacy accepted %+v; framed size %d magic %d, CRC valid %v", m, size, magic, valid)
		}
	})
}
