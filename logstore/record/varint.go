package record

// Kafka's varints are protobuf's: zig-zag, then little-endian base-128.
// encoding/binary has the same encoding (AppendVarint, Varint) but bounds
// only the 64-bit form, so the 32-bit reader lives here to reject a sixth
// byte exactly as Kafka's ByteUtils.readVarint does.

// appendVarint appends the zig-zag varint encoding of v.
func appendVarint(b []byte, v int32) []byte {
	u := uint32(v<<1) ^ uint32(v>>31)
	for u >= 0x80 {
		b = append(b, byte(u)|0x80)
		u >>= 7
	}
	return append(b, byte(u))
}

// appendVarlong appends the zig-zag varlong encoding of v.
func appendVarlong(b []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	for u >= 0x80 {
		b = append(b, byte(u)|0x80)
		u >>= 7
	}
	return append(b, byte(u))
}

// sizeVarint is the encoded length of v as a varint.
func sizeVarint(v int32) int {
	u := uint32(v<<1) ^ uint32(v>>31)
	if u < 0x80 {
		return 1
	}
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// putVarint writes the varint encoding of v at b[0:] and returns its
// length; b must have room for sizeVarint(v) bytes.
func putVarint(b []byte, v int32) int {
	u := uint32(v<<1) ^ uint32(v>>31)
	if u < 0x80 {
		b[0] = byte(u)
		return 1
	}
	i := 0
	for u >= 0x80 {
		b[i] = byte(u) | 0x80
		u >>= 7
		i++
	}
	b[i] = byte(u)
	return i + 1
}

// readVarint decodes a varint from the front of b. It returns the value and
// the bytes read; n == 0 means b ended inside the varint and n < 0 that
// the varint runs past five bytes. Like Kafka, bits above 32 in the fifth
// byte are dropped rather than rejected.
func readVarint(b []byte) (v int32, n int) {
	if len(b) > 0 && b[0] < 0x80 {
		u := uint32(b[0])
		return int32(u>>1) ^ -int32(u&1), 1
	}
	var u uint32
	for i := 0; i < maxVarintLen32; i++ {
		if i >= len(b) {
			return 0, 0
		}
		c := b[i]
		u |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int32(u>>1) ^ -int32(u&1), i + 1
		}
	}
	return 0, -1
}

// readVarlong is readVarint for 64-bit values (at most ten bytes).
func readVarlong(b []byte) (v int64, n int) {
	if len(b) > 0 && b[0] < 0x80 {
		u := uint64(b[0])
		return int64(u>>1) ^ -int64(u&1), 1
	}
	var u uint64
	for i := 0; i < maxVarintLen64; i++ {
		if i >= len(b) {
			return 0, 0
		}
		c := b[i]
		u |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), i + 1
		}
	}
	return 0, -1
}
