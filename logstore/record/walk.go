package record

import "math"

// Finding the text position of offset N (`offset/N`) needs the rendered
// size of the records of N's batch below N. Stats decodes every record
// into a Record to count it; TextStatsSplit walks the same bytes with the
// same checks but keeps only the four counts, in one pass instead of the
// two of Stats(b, 0) - Stats(b, offset).

// TextSplit is a batch's records divided at an offset, from SplitText.
type TextSplit struct {
	Below TextStats // records with offset < at
	Rest  TextStats // records with offset >= at: Stats(b, at)

	at int64
	// Where the rest starts in an uncompressed batch whose records below
	// at all come first: AppendTextSplit renders from there without
	// decoding the records before it.
	pos   int
	index int32
	mark  bool
}

// TextStatsSplit returns the TextStats of the records of batch b with
// offset < at and of those with offset >= at, in one pass: rest is
// Stats(b, at) and below+rest is Stats(b, allOffsets) (so a batch whose
// NextOffset <= at is all below, whatever its records' offset deltas say).
// It checks every record of the batch exactly as Stats does, so it fails on
// exactly the batches Stats fails on (with Stats' error), and like Stats it
// does not check the CRC. Control batches count nothing.
func (d *Decoder) TextStatsSplit(b []byte, at int64) (below, rest TextStats, err error) {
	sp, err := d.SplitText(b, at)
	return sp.Below, sp.Rest, err
}

// SplitText is TextStatsSplit, keeping where the records at or above at
// start for AppendTextSplit.
func (d *Decoder) SplitText(b []byte, at int64) (TextSplit, error) {
	sp := TextSplit{at: at}
	h, err := parseWhole(b)
	if err != nil {
		return sp, err
	}
	if h.Control() {
		return sp, nil
	}
	defer d.release()
	var it recordIter
	if err := d.openParsed(b, &it, &h); err != nil {
		return sp, err
	}
	if h.NextOffset() <= at {
		at = math.MaxInt64 // records may claim deltas past LastOffsetDelta
	}
	if walkSplit(&sp, it.s, int(it.n), it.baseOffset, at) {
		sp.mark = sp.mark && !it.compressed
		return sp, nil
	}
	// Something is wrong with the records: let the decoder find it and
	// word the error.
	var r Record
	for {
		ok, err := it.next(&r, nil)
		if err != nil {
			return TextSplit{at: sp.at}, err
		}
		if !ok {
			// walkSplit and next disagree: a bug, but never a size.
			return TextSplit{at: sp.at}, errorf(ErrCorrupt, offRecords, "records do not decode consistently")
		}
	}
}

// AppendTextSplit is AppendText(dst, b, at, keySep) for the batch b that
// SplitText(b, at) returned sp for. When the records below at come first
// in an uncompressed batch it renders from the first record at or above
// at, without decoding those before it (SplitText checked them).
func (d *Decoder) AppendTextSplit(dst []byte, b []byte, sp *TextSplit, keySep []byte) ([]byte, error) {
	if !sp.mark {
		return d.AppendText(dst, b, sp.at, keySep)
	}
	h, err := parseWhole(b)
	if err != nil {
		return dst, err
	}
	var it recordIter
	if h.Codec() != CodecNone || h.Control() || d.openParsed(b, &it, &h) != nil || sp.pos > len(it.s) || sp.index > it.n {
		return d.AppendText(dst, b, sp.at, keySep) // not the batch sp is for
	}
	// Every record from the split on is rendered, whatever its offset:
	// by AppendText's fast loop over the rest of the region when it can,
	// else by the general one, which renders or finds the error.
	if out, ok := appendTextFast(dst, it.s[sp.pos:], it.n-sp.index, it.baseOffset, math.MinInt64, keySep, nil); ok {
		return out, nil
	}
	it.off, it.i = sp.pos, sp.index
	return appendTextRecords(dst, &it, math.MinInt64, keySep)
}

// AppendTextBelow renders the records of batch b at or above from, as
// AppendText(dst, b, from, keySep) does, and returns the TextStats of the
// records below from, as SplitText(b, from).Below, in one pass over the
// records: SplitText then AppendTextSplit walk the records from `from` on
// twice, once to size them and once to render them, and decompress a
// compressed batch twice. It takes only what AppendText's fast loop
// takes (records without headers, with short varints), which checks each
// record as recordIter.next does, and a batch that holds from
// (NextOffset > from, not a control batch). For anything else, a damaged
// record included, ok is false and dst is returned as passed: the caller
// takes the two-pass way, which renders the batch or words its error.
// Like SplitText it does not check the CRC.
func (d *Decoder) AppendTextBelow(dst []byte, b []byte, from int64, keySep []byte) (out []byte, below TextStats, ok bool) {
	h, err := parseWhole(b)
	if err != nil || h.Control() || h.NextOffset() <= from {
		return dst, TextStats{}, false
	}
	defer d.release()
	var it recordIter
	if d.openParsed(b, &it, &h) != nil {
		return dst, TextStats{}, false
	}
	out, ok = appendTextFast(dst, it.s, it.n, it.baseOffset, from, keySep, &below)
	if !ok {
		return dst, TextStats{}, false
	}
	return out, below, true
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
	if v, k := varint2(s, q); k > 0 {
		return v, k
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

// walkSplit sums into sp the text stats of the n records in region s whose
// offset (base + offset delta) is below at, and of the others, applying
// every check of recordIter.next to every record, and marks where the
// others start if they all follow the records below at. It returns false
// if any check fails.
func walkSplit(sp *TextSplit, s []byte, n int, base, at int64) bool {
	var below, rest TextStats
	off := 0
	sp.pos, sp.index, sp.mark = len(s), int32(n), true
	for i := 0; i < n; i++ {
		start := off
		// One-byte varints are decoded inline (zz), longer ones by
		// varintLong: a call per field costs more than the field.
		var length int32
		m := 1
		if off < len(s) && s[off] < 0x80 {
			length = zz(s[off])
		} else if length, m = varintLong(s, off); m <= 0 {
			return false
		}
		p := off + m
		if length < 1 || int(length) > len(s)-p {
			return false // length 0 cannot hold the attributes
		}
		rec := s[p : p+int(length)]
		off = p + int(length)
		q := 1 // attributes
		if q < len(rec) && rec[q] < 0x80 {
			q++
		} else {
			_, m := readVarlong(rec[q:])
			if m <= 0 {
				return false
			}
			q += m
		}
		var delta int32
		if q < len(rec) && rec[q] < 0x80 {
			delta = zz(rec[q])
			q++
		} else {
			if delta, m = varintLong(rec, q); m <= 0 {
				return false
			}
			q += m
		}
		var klen int32
		if q < len(rec) && rec[q] < 0x80 {
			klen = zz(rec[q])
			q++
		} else {
			if klen, m = varintLong(rec, q); m <= 0 {
				return false
			}
			q += m
		}
		if klen > 0 {
			if int(klen) > len(rec)-q {
				return false
			}
			q += int(klen)
		} else if klen < -1 {
			return false
		}
		var vlen int32
		if q < len(rec) && rec[q] < 0x80 {
			vlen = zz(rec[q])
			q++
		} else {
			if vlen, m = varintLong(rec, q); m <= 0 {
				return false
			}
			q += m
		}
		if vlen > 0 {
			if int(vlen) > len(rec)-q {
				return false
			}
			q += int(vlen)
		} else if vlen < -1 {
			return false
		}
		// Headers: the count, then a key (never null) and value each.
		if q != len(rec)-1 || rec[q] != 0 {
			count, m := varintAt(rec, q)
			if m <= 0 {
				return false
			}
			q += m
			if count < 0 || int(count) > (len(rec)-q)/2 {
				return false
			}
			for j := int32(0); j < count; j++ {
				kl, qk, good := bytesLen(rec, q)
				if !good || kl < 0 {
					return false
				}
				if _, q, good = bytesLen(rec, qk); !good {
					return false
				}
			}
			if q != len(rec) {
				return false
			}
		}
		st := &rest
		if at == math.MaxInt64 || base+int64(delta) < at {
			st = &below
			if rest.Lines > 0 {
				sp.mark = false // a record below at after one above it
			}
		} else if rest.Lines == 0 {
			sp.pos, sp.index = start, int32(i)
		}
		st.count(klen, vlen)
	}
	sp.Below, sp.Rest = below, rest
	return off == len(s)
}

// zz decodes a one-byte zigzag varint.
func zz(c byte) int32 { return int32(c>>1) ^ -int32(c&1) }
