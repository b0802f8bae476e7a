package record

import (
	"bytes"
	"math"
	"slices"
)

// maxLinesText bounds the text AppendLines accepts, so that the batch it
// builds always fits an int32 BatchLength. The worst case is text of empty
// lines, where every byte of text becomes a record of up to
// maxRecordOverhead bytes.
const maxLinesText = (1<<31 - 1 - HeaderSize) / (1 + maxRecordOverhead)

// AppendLines appends to dst one uncompressed batch (DefaultSpec, base offset
// 0) holding one record per '\n'-terminated line of text, every record with
// timestamp ts; text must end in '\n' (callers pass only complete lines). If
// keySep is non-empty, a line containing keySep splits at its first
// occurrence into key and value; a line with nothing after the separator is
// a tombstone (null value); a line without the separator has a null key.
// It returns the batch and the number of records. No allocation per record
// when dst has room.
//
// Room means cap(dst)-len(dst) at least the size of the batch plus
// maxRecordOverhead (23) bytes, as a dst reused from an earlier call for
// similar text has.
//
// Should text not end in '\n', its last fragment is still encoded as a
// line, because dropping bytes the caller believes written would be worse
// than the missing newline. Empty text appends nothing and returns 0. The
// lines are not stored with their '\n', so AppendText with the same keySep
// renders text back exactly. text longer than about 89 MiB would risk a
// batch over 2 GiB in the worst case and panics; the mount hands over
// write-sized chunks, far below that.
func AppendLines(dst []byte, text []byte, ts int64, keySep []byte) ([]byte, int) {
	return AppendLinesAfter(dst, nil, text, ts, keySep)
}

// AppendLinesAfter is AppendLines for text that comes in two pieces, head
// then text, as one batch: the lines of head followed by those of text. It
// spares the caller a copy of both into one buffer (the mount's WRITE that
// completes a line begun in an earlier WRITE: head is that one line, text
// the rest of the WRITE). head, when not empty, must end in '\n'.
func AppendLinesAfter(dst, head, text []byte, ts int64, keySep []byte) ([]byte, int) {
	if len(head)+len(text) > maxLinesText {
		panic("record: AppendLines text too large for one batch")
	}
	buf, n, _ := AppendLinesMax(dst, head, text, ts, keySep, math.MaxInt)
	return buf, n
}

// AppendLinesMax is AppendLinesAfter for a batch of at most max bytes: it
// takes the lines of head and then of text in order while the batch stays
// within max, and stops before the first line that would take it past. It
// returns the batch, its record count, and used, the number of bytes of
// head and text (whole lines, with their '\n') that it holds. When not
// even the first line fits, it returns dst unchanged, 0 and 0: that line
// alone makes a batch larger than max.
//
// A caller with more text than one batch calls it again with the rest;
// the batches fill up to max exactly, with no counting or walking of the
// lines first. max is capped at the largest batch an int32 BatchLength
// allows, so any text can be passed.
func AppendLinesMax(dst, head, text []byte, ts int64, keySep []byte, max int) (buf []byte, n int, used int) {
	total := len(head) + len(text)
	if total == 0 {
		return dst, 0, 0
	}
	max = min(max, math.MaxInt32)
	// Reserve the header and the text (but not past max); the encoders
	// grow the buffer when a line's record might not fit, reserving for
	// the rest of the text with a guess at its record overhead. Growing
	// only on demand keeps a dst with room for the batch free of
	// allocation, and saves a pass counting lines.
	start := len(dst)
	end := start + max
	buf = slices.Grow(dst, min(HeaderSize+total+maxRecordOverhead, max))
	buf = bound(buf[:cap(buf)], end)
	w := start + HeaderSize
	var recs int32
	restHead, rest := head, text
	// Without a separator every record has the same shape, and a writer
	// of its own (no key search, no varint loops) takes a fifth off the
	// encoding of cat's lines (BenchmarkAppendLines).
	if len(keySep) == 0 {
		if len(head) > 0 {
			buf, w, recs, restHead = encodeLinesNoKey(buf, w, recs, head, len(text), end)
		}
		if len(restHead) == 0 {
			buf, w, recs, rest = encodeLinesNoKey(buf, w, recs, text, 0, end)
		}
	} else {
		if len(head) > 0 {
			buf, w, recs, restHead = encodeLines(buf, w, recs, head, len(text), keySep, end)
		}
		if len(restHead) == 0 {
			buf, w, recs, rest = encodeLines(buf, w, recs, text, 0, keySep, end)
		}
	}
	if recs == 0 {
		return buf[:start], 0, 0
	}
	buf = buf[:w]
	spec := DefaultSpec()
	putHeader(buf[start:], &spec, 0, recs-1, ts, ts, recs)
	return buf, int(recs), total - len(restHead) - len(rest)
}

// bound limits buf's length to end, the batch's last byte, for the
// encoders' room check: a record that might cross end then takes the
// check's slow branch, which decides exactly. Without a bound (end past
// the capacity) the whole capacity is room.
func bound(buf []byte, end int) []byte {
	return buf[:min(cap(buf), end)]
}

// encodeLines writes the records of text's lines into buf at w, offset
// deltas from n on, and returns the grown buffer, the new write position,
// the next offset delta and the text not taken: the lines from the first
// whose record would end past end (nil when all were taken). more is the
// length of text still to come after this piece, so that a growth
// reserves for it too.
func encodeLines(buf []byte, w int, n int32, text []byte, more int, keySep []byte, end int) ([]byte, int, int32, []byte) {
	for len(text) > 0 {
		from := text
		var line []byte
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			line, text = text, nil
		}
		key, value := line, line
		keyNull, valueNull := true, false
		if len(keySep) > 0 {
			if j := indexSep(line, keySep); j >= 0 {
				key, value = line[:j], line[j+len(keySep):]
				keyNull, valueNull = false, len(value) == 0
			}
		}
		// body: attributes, timestamp delta 0, offset delta, key, value,
		// header count 0.
		body := 3 + sizeVarint(n)
		if keyNull {
			body++
		} else {
			body += sizeVarint(int32(len(key))) + len(key)
		}
		if valueNull {
			body++
		} else {
			body += sizeVarint(int32(len(value))) + len(value)
		}
		if len(buf)-w < len(line)+maxRecordOverhead {
			// Out of room, or near end: the exact size decides.
			if w+sizeVarint(int32(body))+body > end {
				return buf, w, n, from
			}
			if cap(buf)-w < len(line)+maxRecordOverhead {
				buf = growFor(buf, w, len(line), min(len(text)+more, end-w))
			}
			full := buf[:cap(buf)]
			w = putKeyed(full, w, n, body, key, value, keyNull, valueNull)
			buf = bound(full, end)
			n++
			continue
		}
		w = putKeyed(buf, w, n, body, key, value, keyNull, valueNull)
		n++
	}
	return buf, w, n, nil
}

// putKeyed writes at buf[w:] the record of encodeLines with the given body
// size, offset delta n, key and value, and returns the new position.
func putKeyed(buf []byte, w int, n int32, body int, key, value []byte, keyNull, valueNull bool) int {
	w += putVarint(buf[w:], int32(body))
	buf[w] = 0 // attributes
	buf[w+1] = 0
	w += 2 // timestamp delta 0
	w += putVarint(buf[w:], n)
	if keyNull {
		buf[w] = 1 // varint -1
		w++
	} else {
		w += putVarint(buf[w:], int32(len(key)))
		w += copy(buf[w:], key)
	}
	if valueNull {
		buf[w] = 1
		w++
	} else {
		w += putVarint(buf[w:], int32(len(value)))
		w += copy(buf[w:], value)
	}
	buf[w] = 0 // header count
	return w + 1
}

// growFor grows buf, written up to w, for the record of a line of l bytes
// and rest bytes of text still to come, guessing their records' overhead.
// Both encoders grow by it, so that they reserve alike, and pass as rest
// no more than the room left before the batch's end: a batch that stops
// at its limit reserves nothing past it.
func growFor(buf []byte, w, l, rest int) []byte {
	buf = slices.Grow(buf[:w], l+rest+maxRecordOverhead*(2+rest/32))
	return buf[:cap(buf)]
}

// indexSep finds sep in line, with the single-byte separators that are the
// common case (tab, '=', ':') on the faster IndexByte.
func indexSep(line, sep []byte) int {
	if len(sep) == 1 {
		return bytes.IndexByte(line, sep[0])
	}
	return bytes.Index(line, sep)
}

// encodeLinesNoKey is encodeLines for the common case of no key separator
// (every line a record with a null key), the mount's bulk path. It writes
// the same bytes and stops at the same line; it differs only in speed.
func encodeLinesNoKey(buf []byte, w int, n int32, text []byte, more int, end int) ([]byte, int, int32, []byte) {
	for len(text) > 0 {
		from := text
		var line []byte
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			line, text = text, nil
		}
		l := len(line)
		if len(buf)-w < l+maxRecordOverhead {
			// Out of room, or near end: the exact size decides, off
			// the fast path.
			body := 4 + l + sizeVarint(n) + sizeVarint(int32(l))
			if w+sizeVarint(int32(body))+body > end {
				return buf, w, n, from
			}
			if cap(buf)-w < l+maxRecordOverhead {
				buf = growFor(buf, w, l, min(len(text)+more, end-w))
			}
			full := buf[:cap(buf)]
			w = putNoKey(full, w, n, line)
			buf = bound(full, end)
			n++
			continue
		}
		vz := uint32(l) << 1 // zig-zag of a length, never negative
		nz := uint32(n) << 1
		if vz < 1<<13 && nz < 1<<14 {
			// Every varint of the frame fits two bytes (the body is at
			// most 4+4+4095 bytes, its zig-zag under 1<<14): write it
			// without the loops of putVarint.
			body := 4 + l + size2(nz) + size2(vz)
			r := buf[w : w+maxRecordOverhead+l]
			k := put2(r, uint32(body)<<1)
			r[k] = 0
			r[k+1] = 0
			k += 2
			k += put2(r[k:], nz)
			r[k] = 1
			k++
			k += put2(r[k:], vz)
			k += copy(r[k:], line)
			r[k] = 0
			w += k + 1
			n++
			continue
		}
		w = putNoKey(buf, w, n, line)
		n++
	}
	return buf, w, n, nil
}

// putNoKey writes at buf[w:] the record of encodeLinesNoKey for line at
// offset delta n with the general varint code, and returns the new
// position.
func putNoKey(buf []byte, w int, n int32, line []byte) int {
	l := len(line)
	w += putVarint(buf[w:], int32(4+l+sizeVarint(n)+sizeVarint(int32(l))))
	buf[w] = 0
	buf[w+1] = 0
	w += 2
	w += putVarint(buf[w:], n)
	buf[w] = 1
	w++
	w += putVarint(buf[w:], int32(l))
	w += copy(buf[w:], line)
	buf[w] = 0
	return w + 1
}

// size2 is the length of the varint of u, a zig-zag value below 1<<14.
func size2(u uint32) int {
	if u < 0x80 {
		return 1
	}
	return 2
}

// put2 writes u, a zig-zag value below 1<<14, as a varint at b[0:].
func put2(b []byte, u uint32) int {
	if u < 0x80 {
		b[0] = byte(u)
		return 1
	}
	b[0] = byte(u) | 0x80
	b[1] = byte(u >> 7)
	return 2
}

// FirstLongLine returns the position in text of the first line longer
// than max bytes (not counting its '\n'), or -1 when there is none.
// prefix bytes of the first line came before text; a last line without a
// '\n' counts as a line. It looks at one window of up to max+1 bytes at a
// time and jumps to after the window's last newline, so text of short
// lines costs one call per max bytes, not one per line: the check before
// a long write is appended, that no line in it is too long.
func FirstLongLine(text []byte, prefix, max int) int {
	pos := 0
	for prefix+len(text)-pos > max {
		if prefix > max {
			return pos
		}
		win := text[pos:min(len(text), pos+max+1-prefix)]
		j := bytes.LastIndexByte(win, '\n')
		if j < 0 {
			return pos
		}
		pos += j + 1
		prefix = 0
	}
	return -1
}
