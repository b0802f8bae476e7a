package record

// Finding the text position of offset N (`offset/N`) needs the rendered
// size of the records of N's batch below N. Stats decodes every record
// into a Record to count it; TextStatsBelow walks the same bytes with the
// same checks but keeps only the four counts, in one pass instead of the
// two of Stats(b, 0) - Stats(b, offset).

// TextStatsBelow returns the TextStats of the records of batch b with
// offset < below: Stats(b, allOffsets) minus Stats(b, below) (so all of
// them when the batch's NextOffset <= below), computed in one pass. It checks every record of the batch exactly as Stats does, so
// it fails on exactly the batches Stats fails on (with Stats' error), and
// like Stats it does not check the CRC. Control batches count nothing.
func (d *Decoder) TextStatsBelow(b []byte, below int64) (TextStats, error) {
	h, err := parseWhole(b)
	if err != nil {
		return TextStats{}, err
	}
	if h.Control() {
		return TextStats{}, nil
	}
	defer d.release()
	var it recordIter
	if err := d.openParsed(b, &it, &h); err != nil {
		return TextStats{}, err
	}
	// Like Stats(b, below), a batch ending at or below `below` counts
	// whole, whatever its records' offset deltas say.
	if st, ok := walkBelow(it.s, int(it.n), it.baseOffset, below, h.NextOffset() <= below); ok {
		return st, nil
	}
	// Something is wrong with the records: let the decoder find it and
	// word the error.
	var r Record
	for {
		ok, err := it.next(&r, nil)
		if err != nil {
			return TextStats{}, err
		}
		if !ok {
			// walkBelow and next disagree: a bug, but never a size.
			return TextStats{}, errorf(ErrCorrupt, offRecords, "records do not decode consistently")
		}
	}
}

// uvarintFast reads a zigzag varint of one byte inline and defers longer
// ones to readVarint.
func varintAt(s []byte, q int) (int32, int) {
	if q < len(s) && s[q] < 0x80 {
		u := uint32(s[q])
		return int32(u>>1) ^ -int32(u&1), 1
	}
	if q > len(s) {
		return 0, 0
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

// walkBelow sums the text stats of the n records in region s whose offset
// (base + offset delta) is below `below`, applying every check of
// recordIter.next to every record; all counts every record. ok is false if
// any check fails.
func walkBelow(s []byte, n int, base, below int64, all bool) (st TextStats, ok bool) {
	off := 0
	for i := 0; i < n; i++ {
		length, m := varintAt(s, off)
		if m <= 0 {
			return st, false
		}
		p := off + m
		if length < 1 || int(length) > len(s)-p {
			return st, false // length 0 cannot hold the attributes
		}
		rec := s[p : p+int(length)]
		off = p + int(length)
		q := 1
		if q < len(rec) && rec[q] < 0x80 {
			q++
		} else {
			_, m := readVarlong(rec[q:])
			if m <= 0 {
				return st, false
			}
			q += m
		}
		delta, m := varintAt(rec, q)
		if m <= 0 {
			return st, false
		}
		q += m
		klen, q2, good := bytesLen(rec, q)
		if !good {
			return st, false
		}
		vlen, q3, good := bytesLen(rec, q2)
		if !good {
			return st, false
		}
		q = q3
		count, m := varintAt(rec, q)
		if m <= 0 {
			return st, false
		}
		q += m
		if count < 0 || int(count) > (len(rec)-q)/2 {
			return st, false
		}
		for j := int32(0); j < count; j++ {
			kl, qk, good := bytesLen(rec, q)
			if !good || kl < 0 {
				return st, false
			}
			if _, q, good = bytesLen(rec, qk); !good {
				return st, false
			}
		}
		if q != len(rec) {
			return st, false
		}
		if all || base+int64(delta) < below {
			st.Lines++
			if vlen > 0 {
				st.ValueBytes += int64(vlen)
			}
			if klen >= 0 {
				st.Keyed++
				st.KeyBytes += int64(klen)
			}
		}
	}
	return st, off == len(s)
}
