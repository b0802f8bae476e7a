package fetch

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/segfs/segfs/logstore"
)

// The Fetch response is encoded by kmsg like every other response, except
// that kmsg writes a partition's record set from memory and we want it to
// come from the segment file. So each partition with data first gets a
// marker as its record set; after encoding, the output is cut at every
// marker, the marker's size prefix is replaced by the real one, and the
// file ranges are spliced in (KAFKA-PROTOCOL.md §7.2, §8.3).
//
// Around a marker the encoding is, for non-flexible versions (v4-v11):
//
//	... preferred_read_replica | int32 16 | marker (16 bytes) | next partition ...
//
// and for flexible ones (v12+), with uvarint(length+1):
//
//	... preferred_read_replica | 0x11 | marker (16 bytes) | partition tags ...
//
// and becomes
//
//	... preferred_read_replica | int32 N or uvarint N+1 | N bytes sent from the file | ...
//
// A marker is "\xff\x00sg", 8 random bytes drawn once per process and the
// partition's index (uint32). Topic names cannot contain 0xff and the
// numeric fields cannot plausibly repeat 8 random bytes, and the size
// prefix is checked too, so a marker cannot be confused with real data.
const markerLen = 16

var markerSeed = func() [8]byte {
	var b [8]byte
	rand.Read(b[:]) // never fails on Linux (getrandom)
	return b
}()

func marker(i int) []byte {
	m := make([]byte, markerLen)
	m[0], m[1], m[2], m[3] = 0xff, 0x00, 's', 'g'
	copy(m[4:12], markerSeed[:])
	binary.BigEndian.PutUint32(m[12:], uint32(i))
	return m
}

// splicedFetch encodes resp (version set) as a frame whose record sets are
// the file ranges of data: data[i] belongs to the partition whose
// RecordBatches was set to marker(i). It returns the frame's pieces.
func splicedFetch(corr int32, resp *kmsg.FetchResponse, data []*logstore.ReadResult) ([]piece, error) {
	buf := make([]byte, 8, 512)
	binary.BigEndian.PutUint32(buf[4:], uint32(corr))
	if resp.IsFlexible() {
		buf = append(buf, 0) // response header v1: empty tag section
	}
	buf = resp.AppendTo(buf)

	flexible := resp.IsFlexible()
	pieces := make([]piece, 0, 2*len(data)+1)
	// prefixes holds the hand-written size prefixes; sized up front so the
	// slices handed to pieces never move.
	prefixes := make([]byte, 0, 5*len(data))
	total := int64(0)
	pos := 0
	for i, res := range data {
		m := marker(i)
		rel := bytes.Index(buf[pos:], m)
		if rel < 0 {
			return nil, fmt.Errorf("fetch response: record marker %d not found", i)
		}
		at := pos + rel
		start := at
		if flexible {
			if at < 1 || buf[at-1] != markerLen+1 {
				return nil, fmt.Errorf("fetch response: marker %d without its size prefix", i)
			}
			start = at - 1
		} else {
			if at < 4 || binary.BigEndian.Uint32(buf[at-4:]) != markerLen {
				return nil, fmt.Errorf("fetch response: marker %d without its size prefix", i)
			}
			start = at - 4
		}
		pieces = append(pieces, piece{mem: buf[pos:start]})
		total += int64(start - pos)

		n := len(prefixes)
		if flexible {
			prefixes = binary.AppendUvarint(prefixes, uint64(res.Bytes)+1)
		} else {
			prefixes = binary.BigEndian.AppendUint32(prefixes, uint32(res.Bytes))
		}
		pieces = append(pieces, piece{mem: prefixes[n:]})
		total += int64(len(prefixes) - n)
		for _, fs := range res.Slices {
			if fs.Len > 0 {
				pieces = append(pieces, piece{file: fs})
			}
		}
		total += res.Bytes
		pos = at + markerLen
	}
	pieces = append(pieces, piece{mem: buf[pos:]})
	total += int64(len(buf) - pos)
	if total-4 > 1<<31-1 {
		return nil, fmt.Errorf("fetch response of %d bytes does not fit a frame", total)
	}
	// buf[0:4] is the start of the first piece: patching it here is what
	// goes on the wire.
	binary.BigEndian.PutUint32(buf, uint32(total-4))
	return pieces, nil
}
