package record

import "slices"

// The text view of a partition renders each record as one line. Its file
// size must be known before anyone reads it, so Stats computes, without
// rendering, exactly how many bytes AppendText would produce, for any
// separator.

// AppendText renders the records of batch b with offset >= from as text,
// appending to dst: [key keySep] value '\n' per record (key and separator
// only when keySep is non-empty and the key non-null; a null value renders
// as nothing after the separator). Control batches render nothing. It uses
// d for decompression.
//
// A batch whose last offset is below from renders nothing without its
// records being decoded. On error dst is returned as it was passed, without
// partial text.
func (d *Decoder) AppendText(dst []byte, b []byte, from int64, keySep []byte) ([]byte, error) {
	h, err := parseWhole(b)
	if err != nil {
		return dst, err
	}
	if h.Control() || h.NextOffset() <= from {
		return dst, nil
	}
	defer d.release()
	var it recordIter
	if err := d.openParsed(b, &it, &h); err != nil {
		return dst, err
	}
	if out, ok := appendTextFast(dst, it.s, it.n, it.baseOffset, from, keySep, nil); ok {
		return out, nil
	}
	// Something the fast path does not handle (headers, long varints) or
	// a damaged record: the general decoder renders it or finds the error.
	return appendTextRecords(dst, &it, from, keySep)
}

// appendTextRecords is AppendText's general loop over it's records.
func appendTextRecords(dst []byte, it *recordIter, from int64, keySep []byte) ([]byte, error) {
	orig := len(dst)
	keyed := len(keySep) > 0
	var r Record
	for {
		ok, err := it.next(&r, nil)
		if err != nil {
			return dst[:orig], err
		}
		if !ok {
			return dst, nil
		}
		if r.Offset < from {
			continue
		}
		if keyed && r.Key != nil {
			dst = append(dst, r.Key...)
			dst = append(dst, keySep...)
		}
		dst = append(dst, r.Value...)
		dst = append(dst, '\n')
	}
}

// appendTextFast renders the n records of the records region s (offsets
// from base) the way appendTextRecords does, for records without headers
// whose varints are short, which is what AppendLines and most producers
// write. It accepts only what recordIter.next accepts and gives up (false,
// with dst's contents beyond its length undefined) on anything else,
// leaving errors and the rare shapes to the general loop. The rendering
// is the text path's hot loop: it skips the timestamp, decodes one- and
// two-byte varints inline and checks each bound once. When below is not
// nil it also sums there the stats of the records it skips for being
// below from (AppendTextBelow); on failure below holds a partial sum.
func appendTextFast(dst []byte, s []byte, n int32, base, from int64, keySep []byte, below *TextStats) ([]byte, bool) {
	orig := len(dst)
	keyed := len(keySep) > 0
	// The text of a record is at most the record plus a separator, so one
	// growth covers the common batch.
	dst = slices.Grow(dst, len(s))
	off := 0
	for i := int32(0); i < n; i++ {
		length, k := varint2(s, off)
		if k == 0 {
			length, k = readVarint(s[off:])
		}
		if k <= 0 || length < 1 || int(length) > len(s)-off-k {
			return dst[:orig], false
		}
		p := off + k
		off = p + int(length)
		rec := s[p:off:off]
		// rec[0] is the attributes byte, then the timestamp delta.
		q := 1
		for q < len(rec) && q < 1+maxVarintLen64 && rec[q] >= 0x80 {
			q++
		}
		if q >= len(rec) || q == 1+maxVarintLen64 {
			return dst[:orig], false
		}
		q++
		od, k := varint2(rec, q)
		if k == 0 {
			od, k = readVarint(rec[q:])
		}
		if k <= 0 {
			return dst[:orig], false
		}
		q += k
		kl, k := varint2(rec, q)
		if k == 0 {
			kl, k = readVarint(rec[q:])
		}
		if k <= 0 || kl < -1 || int(kl) > len(rec)-q-k {
			return dst[:orig], false
		}
		q += k
		kq := q
		if kl > 0 {
			q += int(kl)
		}
		vl, k := varint2(rec, q)
		if k == 0 {
			vl, k = readVarint(rec[q:])
		}
		if k <= 0 || vl < -1 || int(vl) > len(rec)-q-k {
			return dst[:orig], false
		}
		q += k
		vq := q
		if vl > 0 {
			q += int(vl)
		}
		// No headers: a single 0 byte ends the record.
		if q != len(rec)-1 || rec[q] != 0 {
			return dst[:orig], false
		}
		if base+int64(od) < from {
			if below != nil {
				below.count(kl, vl)
			}
			continue
		}
		if keyed && kl >= 0 {
			dst = append(dst, rec[kq:kq+int(kl)]...)
			dst = append(dst, keySep...)
		}
		// The value and its newline, without append's growth checks
		// when the room is there (it is, unless keys take it).
		if l := len(dst); vl >= 0 && cap(dst)-l > int(vl) {
			dst = dst[:l+int(vl)+1]
			copy(dst[l:], rec[vq:vq+int(vl)])
			dst[l+int(vl)] = '\n'
			continue
		}
		if vl > 0 {
			dst = append(dst, rec[vq:vq+int(vl)]...)
		}
		dst = append(dst, '\n')
	}
	if off != len(s) {
		return dst[:orig], false
	}
	return dst, true
}

// varint2 decodes a one- or two-byte varint at b[q:] followed by at least
// one more byte (every field of a record is); k == 0 means "not that
// case", for readVarint to decide.
func varint2(b []byte, q int) (v int32, k int) {
	if q+1 < len(b) {
		u := uint32(b[q])
		if u < 0x80 {
			return int32(u>>1) ^ -int32(u&1), 1
		}
		if c := uint32(b[q+1]); c < 0x80 {
			u = u&0x7f | c<<7
			return int32(u>>1) ^ -int32(u&1), 2
		}
	}
	return 0, 0
}

// TextStats is what a batch renders to, split so that the rendered size can
// be computed for any separator: Size(sep) = ValueBytes + Lines +
// (len(sep) > 0 ? KeyBytes + Keyed*len(sep) : 0).
type TextStats struct {
	Lines      int64 // rendered records (non-control)
	ValueBytes int64 // sum of non-null value lengths
	Keyed      int64 // records with a non-null key
	KeyBytes   int64 // sum of key lengths
}

// Size returns the rendered size for separator length sepLen.
func (s TextStats) Size(sepLen int) int64 {
	n := s.ValueBytes + s.Lines
	if sepLen > 0 {
		n += s.KeyBytes + s.Keyed*int64(sepLen)
	}
	return n
}

// count adds one rendered record to s, given the lengths of its key and
// value (-1: null), as the walks of the record lengths see them.
func (s *TextStats) count(keyLen, valueLen int32) {
	s.Lines++
	if valueLen > 0 {
		s.ValueBytes += int64(valueLen)
	}
	if keyLen >= 0 {
		s.Keyed++
		s.KeyBytes += int64(keyLen)
	}
}

// Add adds o to s.
func (s *TextStats) Add(o TextStats) {
	s.Lines += o.Lines
	s.ValueBytes += o.ValueBytes
	s.Keyed += o.Keyed
	s.KeyBytes += o.KeyBytes
}

// Stats computes the TextStats of the records of b with offset >= from. It
// decodes exactly what AppendText decodes, so the two fail on the same
// batches and Stats(b, from).Size(len(sep)) == len(AppendText(nil, b, from,
// sep)) whenever both succeed.
func (d *Decoder) Stats(b []byte, from int64) (TextStats, error) {
	var s TextStats
	h, err := parseWhole(b)
	if err != nil {
		return s, err
	}
	if h.Control() || h.NextOffset() <= from {
		return s, nil
	}
	defer d.release()
	var it recordIter
	if err := d.openParsed(b, &it, &h); err != nil {
		return s, err
	}
	var r Record
	for {
		ok, err := it.next(&r, nil)
		if err != nil {
			return TextStats{}, err
		}
		if !ok {
			return s, nil
		}
		if r.Offset < from {
			continue
		}
		s.AddRecord(&r)
	}
}

// AddRecord adds one rendered record to s: what Stats counts for each
// record, for a caller that decodes the records anyway (the log cleaner
// building the text map of the segment it writes).
func (s *TextStats) AddRecord(r *Record) {
	s.Lines++
	s.ValueBytes += int64(len(r.Value))
	if r.Key != nil {
		s.Keyed++
		s.KeyBytes += int64(len(r.Key))
	}
}
