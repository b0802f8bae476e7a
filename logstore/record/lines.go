package record

import (
	"bytes"
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
	if len(head)+len(text) == 0 {
		return dst, 0
	}
	if len(head)+len(text) > maxLinesText {
		panic("record: AppendLines text too large for one batch")
	}
	// Reserve the header and the text; encodeLines grows the buffer when a
	// line's record might not fit, reserving for the rest of the text with
	// a guess at its record overhead. Growing only on demand keeps a dst
	// with room for the batch free of allocation, and saves a pass counting
	// lines.
	start := len(dst)
	buf := slices.Grow(dst, HeaderSize+len(head)+len(text)+maxRecordOverhead)
	buf = buf[:cap(buf)]
	w := start + HeaderSize
	var n int32
	// Without a separator every record has the same shape, and a writer
	// of its own (no key search, no varint loops) takes a fifth off the
	// encoding of cat's lines (BenchmarkAppendLines).
	if len(keySep) == 0 {
		if len(head) > 0 {
			buf, w, n = encodeLinesNoKey(buf, w, n, head, len(text))
		}
		buf, w, n = encodeLinesNoKey(buf, w, n, text, 0)
	} else {
		if len(head) > 0 {
			buf, w, n = encodeLines(buf, w, n, head, len(text), keySep)
		}
		buf, w, n = encodeLines(buf, w, n, text, 0, keySep)
	}
	buf = buf[:w]
	spec := DefaultSpec()
	putHeader(buf[start:], &spec, 0, n-1, ts, ts, n)
	return buf, int(n)
}

// encodeLines writes the records of text's lines into buf at w, offset
// deltas from n on, and returns the grown buffer, the new write position
// and the next offset delta. more is the length of text still to come
// after this piece, so that a growth reserves for it too.
func encodeLines(buf []byte, w int, n int32, text []byte, more int, keySep []byte) ([]byte, int, int32) {
	for len(text) > 0 {
		var line []byte
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			line, text = text, nil
		}
		if len(buf)-w < len(line)+maxRecordOverhead {
			buf = growFor(buf, w, len(line), len(text)+more)
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
		w++
		n++
	}
	return buf, w, n
}

// growFor grows buf, written up to w, for the record of a line of l bytes
// and rest bytes of text still to come, guessing their records' overhead.
// Both encoders grow by it, so that they reserve alike.
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
// the same bytes; it differs only in speed.
func encodeLinesNoKey(buf []byte, w int, n int32, text []byte, more int) ([]byte, int, int32) {
	for len(text) > 0 {
		var line []byte
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			line, text = text, nil
		}
		l := len(line)
		if len(buf)-w < l+maxRecordOverhead {
			buf = growFor(buf, w, l, len(text)+more)
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
		w++
		n++
	}
	return buf, w, n
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
