package record

import "math"

// Finding the text position of offset N (`offset/N`) needs the rendered
// size of the records of N's batch below N. Stats decodes every record
// into a Record to count it; TextStatsSplit walks the same bytes with the
// same checks but keeps only the four counts, in one pass instead of the
// two of Stats(b, 0) - Stats(b, offset).

// TextStatsSplit returns the TextStats of the records of batch b with
// offset < at and of those with offset >= at, in one pass: rest is
// Stats(b, at) and below+rest is Stats(b, allOffsets) (so a batch whose
// NextOffset <= at is all below, whatever its records' offset deltas say).
// It checks every record of the batch exactly as Stats does, so it fails on
// exactly the batches Stats fails on (with Stats' error), and like Stats it
// does not check the CRC. Control batches count nothing.
func (d *Decoder) TextStatsSplit(b []byte, at int64) (below, rest TextStats, err error) {
	h, err := parseWhole(b)
	if err != nil {
		return below, rest, err
	}
	if h.Control() {
		return below, rest, nil
	}
	defer d.release()
	var it recordIter
	if err := d.openParsed(b, &it, &h); err != nil {
		return below, rest, err
	}
	if h.NextOffset() <= at {
		at = math.MaxInt64 // records may claim deltas past LastOffsetDelta
	}
	if below, rest, ok := walkSplit(it.s, int(it.n), it.baseOffset, at); ok {
		return below, rest, nil
	}
	// Something is wrong with the records: let the decoder find it and
	// word the error.
	var r Record
	for {
		ok, err := it.next(&r, nil)
		if err != nil {
			return TextStats{}, TextStats{}, err
		}
		if !ok {
			// walkSplit and next disagree: a bug, but never a size.
			return TextStats{}, TextStats{}, errorf(ErrCorrupt, offRecords, "records do not decode consistently")
		}
	}
}

// varintAt reads a zigzag varint at q of s (q <= len(s)) as readVarint
// does; the one-byte case inlines.
func varintAt(s []byte, q int) (int32, int) {
	if q < len(s) && s[q] < 0x80 {
		u := uint32(s[q])
		return int32(u>>1) ^ -int32(u&1), 1
	}
	return varintLong(s, q)
}

// varintLong is varintAt past the one-byte case, with the two-byte varints
// of lengths and deltas under 8 KiB decoded without readVarint's loop.
func varintLong(s []byte, q int) (int32, int) {
	if q+1 < len(s) {
		u := uint32(s[q])
		if u < 0x80 {
			return int32(u>>1) ^ -int32(u&1), 1
		}
		if c := uint32(s[q+1]); c < 0x80 {
			u = u&0x7f | c<<7
			return int32(u>>1) ^ -int32(u&1), 2
		}
	}
	return readVarint(s[q:])
}

// bytesLen reads a varint length at q of rec and checks it as readBytes
// does; it returns the length (-1 for null) and the position after the
// bytes, ok false on any failure.
func bytesLen(rec []byte, q int) (int32, int, bool) {
	l, n := varintAt(rec, q)
	if n <= 0 {
		return 0, q, false
	}
	q += n
	if l == -1 {
		return -1, q, true
	}
	if l < -1 || int(l) > len(rec)-q {
		return 0, q, false
	}
	return l, q + int(l), true
}

// walkSplit sums the text stats of the n records in region s whose offset
// (base + offset delta) is below at, and of the others, applying every
// check of recordIter.next to every record. ok is false if any check fails.
func walkSplit(s []byte, n int, base, at int64) (below, rest TextStats, ok bool) {
	off := 0
	for i := 0; i < n; i++ {
		// One-byte varints are decoded inline (zz), longer ones by
		// varintLong: a call per field costs more than the field.
		var length int32
		m := 1
		if off < len(s) && s[off] < 0x80 {
			length = zz(s[off])
		} else if length, m = varintLong(s, off); m <= 0 {
			return below, rest, false
		}
		p := off + m
		if length < 1 || int(length) > len(s)-p {
			return below, rest, false // length 0 cannot hold the attributes
		}
		rec := s[p : p+int(length)]
		off = p + int(length)
		q := 1 // attributes
		if q < len(rec) && rec[q] < 0x80 {
			q++
		} else {
			_, m := readVarlong(rec[q:])
			if m <= 0 {
				return below, rest, false
			}
			q += m
		}
		var delta int32
		if q < len(rec) && rec[q] < 0x80 {
			delta = zz(rec[q])
			q++
		} else {
			if delta, m = varintLong(rec, q); m <= 0 {
				return below, rest, false
			}
			q += m
		}
		var klen int32
		if q < len(rec) && rec[q] < 0x80 {
			klen = zz(rec[q])
			q++
		} else {
			if klen, m = varintLong(rec, q); m <= 0 {
				return below, rest, false
			}
			q += m
		}
		if klen > 0 {
			if int(klen) > len(rec)-q {
				return below, rest, false
			}
			q += int(klen)
		} else if klen < -1 {
			return below, rest, false
		}
		var vlen int32
		if q < len(rec) && rec[q] < 0x80 {
			vlen = zz(rec[q])
			q++
		} else {
			if vlen, m = varintLong(rec, q); m <= 0 {
				return below, rest, false
			}
			q += m
		}
		if vlen > 0 {
			if int(vlen) > len(rec)-q {
				return below, rest, false
			}
			q += int(vlen)
		} else if vlen < -1 {
			return below, rest, false
		}
		// Headers: the count, then a key (never null) and value each.
		if q != len(rec)-1 || rec[q] != 0 {
			count, m := varintAt(rec, q)
			if m <= 0 {
				return below, rest, false
			}
			q += m
			if count < 0 || int(count) > (len(rec)-q)/2 {
				return below, rest, false
			}
			for j := int32(0); j < count; j++ {
				kl, qk, good := bytesLen(rec, q)
				if !good || kl < 0 {
					return below, rest, false
				}
				if _, q, good = bytesLen(rec, qk); !good {
					return below, rest, false
				}
			}
			if q != len(rec) {
				return below, rest, false
			}
		}
		st := &rest
		if at == math.MaxInt64 || base+int64(delta) < at {
			st = &below
		}
		st.Lines++
		if vlen > 0 {
			st.ValueBytes += int64(vlen)
		}
		if klen >= 0 {
			st.Keyed++
			st.KeyBytes += int64(klen)
		}
	}
	return below, rest, off == len(s)
}

// zz decodes a one-byte zigzag varint.
func zz(c byte) int32 { return int32(c>>1) ^ -int32(c&1) }
