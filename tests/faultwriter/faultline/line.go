// Package faultline is the content of the fault suite's writer lines,
// shared by the writer process (tests/faultwriter) and the oracle in
// tests/: every line is a pure function of (writer id, seq).
package faultline

import (
	"fmt"
	"hash/crc32"
	"math/rand/v2"
)

// Line returns line seq of writer id, without its newline. Big writers
// draw lengths from 1 to 300,000 bytes, weighted towards the edges that
// matter to FUSE: around 4 KiB pages and the 128 KiB / 1 MiB max_write.
// Short writers' lines are "id seq len crc payload" of 20 to 200 bytes.
func Line(id string, seq int64, big bool) []byte {
	r := rand.New(rand.NewPCG(uint64(seq), uint64(crc32.ChecksumIEEE([]byte(id)))))
	var n int
	if big {
		switch r.IntN(6) {
		case 0:
			n = 1 + r.IntN(40)
		case 1:
			n = 4096 - 8 + r.IntN(16)
		case 2:
			n = 1 + r.IntN(300000)
		case 3:
			n = 131072 - 64 + r.IntN(128)
		case 4:
			n = 300000 - r.IntN(100)
		default:
			n = 1 + r.IntN(8192)
		}
	} else {
		n = 20 + r.IntN(180)
	}
	payload := make([]byte, n)
	for i := range payload {
		payload[i] = 'a' + byte(r.IntN(26))
	}
	head := fmt.Appendf(nil, "%s %d %d %08x ", id, seq, n, crc32.ChecksumIEEE(payload))
	if big && n <= len(head) {
		// Too short for a header: the payload alone (the big writer has
		// its own partition, so lines are matched by position).
		return payload
	}
	if big {
		return append(head, payload[:n-len(head)]...)
	}
	return append(head, payload...)
}

// Key returns the key (0 to keys-1) of keyed line seq of writer id, for
// compacted topics, and whether that write is a tombstone (about one in
// eight).
func Key(id string, seq int64, keys int) (int, bool) {
	r := rand.New(rand.NewPCG(uint64(seq), uint64(crc32.ChecksumIEEE([]byte(id)))^0x6b657973))
	return r.IntN(keys), r.IntN(8) == 0
}

// Keyed returns keyed line seq of writer id, without its newline, for a
// topic whose key.separator is "=": "id.kK=" followed by Line(id, seq,
// false), or nothing after the separator for a tombstone. The key names
// its writer, so writers sharing a topic never overwrite each other's keys.
func Keyed(id string, seq int64, keys int) []byte {
	k, tomb := Key(id, seq, keys)
	l := fmt.Appendf(nil, "%s.k%d=", id, k)
	if tomb {
		return l
	}
	return append(l, Line(id, seq, false)...)
}
