package record

// A produce walks each batch once (Decoder.Walk) to check every record,
// count its text statistics and apply the produce rules to each record
// (keys on a compacted topic, timestamps within bounds, offset deltas
// 0, 1, 2, ...). Through Walk's callback that cost ~25 ns a record, a
// third of the daemon's CPU under franz-go's produce load: a call per
// record to the callback and per field to the varint readers.
// WalkProduced does the same checks in one loop with the one-byte varints
// inline, and leaves every refusal to Walk.

// ProduceRules are the per-record rules of a produce that WalkProduced
// applies besides the layout checks of Walk.
type ProduceRules struct {
	// NeedKey refuses a record with a null key (a compacted topic).
	NeedKey bool
	// CheckTimestamps refuses a record whose timestamp, unless -1, lies
	// outside [Now-Before, Now+After], with the arithmetic wrapping as
	// Java's long does (Kafka's LogValidator on a CreateTime topic): the
	// record is refused if Now-ts > Before or ts-Now > After.
	CheckTimestamps    bool
	Now, Before, After int64
}

// WalkProduced is Walk for a produced data batch that passes every check:
// those of Walk on each record, offset deltas equal to the records'
// indexes, and pr. It returns what Walk returns and the largest record
// timestamp (-1 if every one is below 0). ok is false, with nothing else
// meaningful, when the batch is anything else: unparsable, a control batch,
// one with the LogAppendTime attribute (whose records take MaxTimestamp),
// undecompressable, or with any record that fails a check. The caller
// then walks it with Walk, which finds and words what is wrong: the pass
// here keeps no reason, so that it stays one tight loop.
func (d *Decoder) WalkProduced(b []byte, pr *ProduceRules) (w Walked, maxTs int64, ok bool) {
	defer d.release()
	h, err := parseWhole(b)
	if err != nil || h.Control() || h.LogAppendTime() {
		return Walked{}, 0, false
	}
	var it recordIter
	if err := d.openParsed(b, &it, &h); err != nil {
		return Walked{}, 0, false
	}
	st, maxTs, ok := walkProduced(it.s, int(it.n), h.BaseTimestamp, pr)
	if !ok {
		return Walked{}, 0, false
	}
	return Walked{Stats: st, Region: it.s}, maxTs, true
}

// walkProduced checks the n records of region s as recordIter.next does
// (every varint, length and header; the region used up exactly), that
// record i has offset delta i, and pr, and sums their stats and largest
// timestamp (base + delta). It returns false if any check fails.
//
// Positions are absolute in s, each record's fields bounded by its end,
// and the sums and rules are locals, so that the loop keeps them in
// registers.
func walkProduced(s []byte, n int, base int64, pr *ProduceRules) (TextStats, int64, bool) {
	var lines, valueBytes, keyed, keyBytes int64
	needKey, check := pr.NeedKey, pr.CheckTimestamps
	now, before, after := pr.Now, pr.Before, pr.After
	maxTs := int64(-1)
	off := 0
	for i := 0; i < n; i++ {
		// One- and two-byte varints (lengths and deltas below 8 KiB) are
		// decoded inline (zz, varint2), longer ones by readVarint and
		// readVarlong: a call per field costs more than the field.
		var length int32
		m := 1
		if off < len(s) && s[off] < 0x80 {
			length = zz(s[off])
		} else if length, m = varint2(s, off); m <= 0 {
			if length, m = readVarint(s[off:]); m <= 0 {
				return TextStats{}, 0, false
			}
		}
		p := off + m
		if length < 1 || int(length) > len(s)-p {
			return TextStats{}, 0, false // length 0 cannot hold the attributes
		}
		end := p + int(length)
		rec := s[:end] // fields end with the record: past it is "runs past the end"
		q := p + 1     // after the attributes
		var tsDelta int64
		if q < end && rec[q] < 0x80 {
			tsDelta = int64(zz(rec[q]))
			q++
		} else {
			if tsDelta, m = readVarlong(rec[q:]); m <= 0 {
				return TextStats{}, 0, false
			}
			q += m
		}
		var delta int32
		if q < end && rec[q] < 0x80 {
			delta = zz(rec[q])
			q++
		} else {
			if delta, m = varint2(rec, q); m <= 0 {
				if delta, m = readVarint(rec[q:]); m <= 0 {
					return TextStats{}, 0, false
				}
			}
			q += m
		}
		if delta != int32(i) {
			return TextStats{}, 0, false
		}
		var klen int32
		if q < end && rec[q] < 0x80 {
			klen = zz(rec[q])
			q++
		} else {
			if klen, m = varint2(rec, q); m <= 0 {
				if klen, m = readVarint(rec[q:]); m <= 0 {
					return TextStats{}, 0, false
				}
			}
			q += m
		}
		if klen > 0 {
			if int(klen) > end-q {
				return TextStats{}, 0, false
			}
			q += int(klen)
			keyed++
			keyBytes += int64(klen)
		} else if klen == 0 {
			keyed++
		} else if klen < -1 || needKey {
			return TextStats{}, 0, false
		}
		var vlen int32
		if q < end && rec[q] < 0x80 {
			vlen = zz(rec[q])
			q++
		} else {
			if vlen, m = varint2(rec, q); m <= 0 {
				if vlen, m = readVarint(rec[q:]); m <= 0 {
					return TextStats{}, 0, false
				}
			}
			q += m
		}
		if vlen > 0 {
			if int(vlen) > end-q {
				return TextStats{}, 0, false
			}
			q += int(vlen)
			valueBytes += int64(vlen)
		} else if vlen < -1 {
			return TextStats{}, 0, false
		}
		// Headers: the count, then a key (never null) and value each.
		if q != end-1 || rec[q] != 0 {
			count, m := varintAt(rec, q)
			if m <= 0 {
				return TextStats{}, 0, false
			}
			q += m
			if count < 0 || int(count) > (end-q)/2 {
				return TextStats{}, 0, false
			}
			for j := int32(0); j < count; j++ {
				kl, qk, good := bytesLen(rec, q)
				if !good || kl < 0 {
					return TextStats{}, 0, false
				}
				if _, q, good = bytesLen(rec, qk); !good {
					return TextStats{}, 0, false
				}
			}
			if q != end {
				return TextStats{}, 0, false
			}
		}
		ts := base + tsDelta
		if check && ts != -1 {
			if diff := now - ts; diff > before || -diff > after {
				return TextStats{}, 0, false
			}
		}
		maxTs = max(maxTs, ts)
		lines++
		off = end
	}
	if off != len(s) {
		return TextStats{}, 0, false
	}
	return TextStats{Lines: lines, ValueBytes: valueBytes, Keyed: keyed, KeyBytes: keyBytes}, maxTs, true
}
