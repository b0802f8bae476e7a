package record

// LengthStats is Stats for the hot paths that only need sizes (recovery
// rebuilding a segment's text map): for an uncompressed batch it walks the
// record lengths without decoding records into a Record, checking every
// record exactly as the decoder does (every varint, every length against
// the record and the region, the header count and the null header keys,
// that the fields fill each record and the records the region), so it
// fails on exactly the batches Stats fails on. Compressed batches, and any
// batch the walk rejects, go to Stats itself, which then gives the same
// result and error as always.
func (d *Decoder) LengthStats(b []byte, from int64) (TextStats, error) {
	h, err := parseWhole(b)
	if err != nil {
		return TextStats{}, err
	}
	if h.Control() || h.NextOffset() <= from {
		return TextStats{}, nil
	}
	if h.Codec() == CodecNone {
		if st, ok := walkStats(b[HeaderSize:], h.RecordCount, h.BaseOffset, from); ok {
			return st, nil
		}
	}
	return d.Stats(b, from)
}

// walkStats computes the TextStats of an uncompressed records region s that
// declares n records, for records with offset >= from. ok is false when
// recordIter would reject the region (the caller then asks the decoder for
// its error); it never accepts what recordIter rejects.
//
// Varints of one and two bytes (every length below 8 KiB) are decoded
// inline; longer ones go through readVarint.
func walkStats(s []byte, n int32, base, from int64) (st TextStats, ok bool) {
	if n < 0 || int64(n)*minRecordSize > int64(len(s)) {
		return TextStats{}, false
	}
	off := 0
	for range n {
		var length int32
		p := off
		if p < len(s) && s[p] < 0x80 {
			length, p = zigzag(uint32(s[p])), p+1
		} else if p+1 < len(s) && s[p+1] < 0x80 {
			length, p = zigzag(uint32(s[p]&0x7f)|uint32(s[p+1])<<7), p+2
		} else if length, p = varintNext(s, p); p < 0 {
			return TextStats{}, false
		}
		if length < 0 || int(length) > len(s)-p {
			return TextStats{}, false
		}
		end := p + int(length)
		rec := s[p:end:end]
		if len(rec) < 1 {
			return TextStats{}, false
		}
		q := 1 // after the attributes
		// Timestamp delta (skipped).
		if q < len(rec) && rec[q] < 0x80 {
			q++
		} else if _, k := readVarlong(rec[q:]); k > 0 {
			q += k
		} else {
			return TextStats{}, false
		}
		// Offset delta.
		var delta int32
		if q < len(rec) && rec[q] < 0x80 {
			delta, q = zigzag(uint32(rec[q])), q+1
		} else if q+1 < len(rec) && rec[q+1] < 0x80 {
			delta, q = zigzag(uint32(rec[q]&0x7f)|uint32(rec[q+1])<<7), q+2
		} else if delta, q = varintNext(rec, q); q < 0 {
			return TextStats{}, false
		}
		// Key length and key.
		var kl int32
		if q < len(rec) && rec[q] < 0x80 {
			kl, q = zigzag(uint32(rec[q])), q+1
		} else if q+1 < len(rec) && rec[q+1] < 0x80 {
			kl, q = zigzag(uint32(rec[q]&0x7f)|uint32(rec[q+1])<<7), q+2
		} else if kl, q = varintNext(rec, q); q < 0 {
			return TextStats{}, false
		}
		if kl < -1 || int(kl) > len(rec)-q {
			return TextStats{}, false
		}
		if kl > 0 {
			q += int(kl)
		}
		// Value length and value.
		var vl int32
		if q < len(rec) && rec[q] < 0x80 {
			vl, q = zigzag(uint32(rec[q])), q+1
		} else if q+1 < len(rec) && rec[q+1] < 0x80 {
			vl, q = zigzag(uint32(rec[q]&0x7f)|uint32(rec[q+1])<<7), q+2
		} else if vl, q = varintNext(rec, q); q < 0 {
			return TextStats{}, false
		}
		if vl < -1 || int(vl) > len(rec)-q {
			return TextStats{}, false
		}
		if vl > 0 {
			q += int(vl)
		}
		// Headers: the count, then each key (never null) and value.
		if q < len(rec) && rec[q] == 0 {
			q++
		} else if !skipHeaders(rec, &q) {
			return TextStats{}, false
		}
		if q != len(rec) {
			return TextStats{}, false
		}
		if base+int64(delta) >= from {
			st.count(kl, vl)
		}
		off = end
	}
	return st, off == len(s)
}

// zigzag decodes a zig-zag encoded 32-bit value.
func zigzag(u uint32) int32 { return int32(u>>1) ^ -int32(u&1) }

// varintNext is readVarint at b[i:] (i <= len(b)) giving the value and the
// position after it, or a negative position where readVarint fails.
func varintNext(b []byte, i int) (int32, int) {
	v, n := varintAt(b, i)
	if n <= 0 {
		return 0, -1
	}
	return v, i + n
}

// skipHeaders steps *q over the header count and headers of rec, failing
// where recordIter.next does: a bad count, a null key, a bad length.
func skipHeaders(rec []byte, q *int) bool {
	count, p := varintNext(rec, *q)
	if p < 0 || count < 0 || int(count) > (len(rec)-p)/2 {
		return false
	}
	for range count {
		for j := range 2 {
			l, r := varintNext(rec, p)
			if r < 0 || l < -1 || int(l) > len(rec)-r || (j == 0 && l == -1) {
				return false
			}
			p = r + max(int(l), 0)
		}
	}
	*q = p
	return true
}
