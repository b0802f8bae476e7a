package record

import (
	"bytes"

	"github.com/klauspost/compress/gzip"
	"github.com/pierrec/lz4/v4"
)

// RecordHeader is one record header (key never null).
type RecordHeader struct {
	Key   string
	Value []byte // nil = null
}

// Record is one decoded record. Key and Value are nil when null. Decoded
// slices alias the batch (or the decompression buffer) and are only valid
// during the callback that received them.
type Record struct {
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	Key            []byte
	Value          []byte
	Headers        []RecordHeader
	// Filled by the batch decoder:
	Offset    int64 // BaseOffset + OffsetDelta
	Timestamp int64 // BaseTimestamp + TimestampDelta, or MaxTimestamp for LogAppendTime batches
}

// Decoder iterates the records of batches, reusing its decompression
// buffers between calls. The zero value is ready to use; not safe for
// concurrent use.
type Decoder struct {
	buf  []byte         // decompressed records region
	br   bytes.Reader   // source of the streaming codecs
	gz   *gzip.Reader   // reused across gzip batches
	lz   *lz4.Reader    // reused across lz4 batches
	hdrs []RecordHeader // Record.Headers backing array
	rec  Record         // handed to callbacks, so it need not escape per call
}

// recordIter walks the records region of one batch. It reports errors as
// *CorruptError positioned in the batch: at the record itself for an
// uncompressed batch, at the start of the records region (with the offset
// inside the decompressed stream in the reason) for a compressed one.
type recordIter struct {
	// Header fields that records need; copied rather than pointed to so
	// that the caller's Header does not escape to the heap.
	baseOffset    int64
	baseTimestamp int64
	maxTimestamp  int64
	logAppendTime bool

	s          []byte // records region, decompressed
	off        int    // read position in s
	i, n       int32  // records read, records declared
	compressed bool
}

// open parses and checks the header of the whole batch b and makes its
// records region readable, decompressing with d's buffers.
func (d *Decoder) open(b []byte, it *recordIter, h *Header) error {
	var err error
	if *h, err = parseWhole(b); err != nil {
		return err
	}
	return d.openParsed(b, it, h)
}

// openParsed is open for a batch whose header h has been parsed by
// parseWhole.
func (d *Decoder) openParsed(b []byte, it *recordIter, h *Header) error {
	if h.RecordCount < 0 {
		return errorf(ErrCorrupt, offRecordCount, "negative record count %d", h.RecordCount)
	}
	c := h.Codec()
	s, err := d.decompress(c, b[HeaderSize:])
	if err != nil {
		return err
	}
	// Every record takes at least minRecordSize bytes, so a count the
	// region cannot hold is corrupt without looking further.
	if int64(h.RecordCount)*minRecordSize > int64(len(s)) {
		return errorf(ErrCorrupt, offRecordCount, "record count %d cannot fit in %d bytes of records", h.RecordCount, len(s))
	}
	*it = recordIter{
		baseOffset:    h.BaseOffset,
		baseTimestamp: h.BaseTimestamp,
		maxTimestamp:  h.MaxTimestamp,
		logAppendTime: h.LogAppendTime(),
		s:             s,
		n:             h.RecordCount,
		compressed:    c != CodecNone,
	}
	return nil
}

// fail builds the error for a bad record at stream offset at.
func (it *recordIter) fail(at int, reason string) error {
	if it.compressed {
		return errorf(ErrCorrupt, offRecords, "record %d at offset %d of the decompressed records: %s", it.i, at, reason)
	}
	return errorf(ErrCorrupt, offRecords+at, "record %d: %s", it.i, reason)
}

// next decodes the next record into r; it returns false when all declared
// records have been read and the region is exhausted (err nil) or on error.
// Headers are checked always but stored in r.Headers only when hdrs is
// non-nil, appended to (*hdrs)[:0], so that the text paths skip the string
// allocation of header keys.
func (it *recordIter) next(r *Record, hdrs *[]RecordHeader) (bool, error) {
	if it.i == it.n {
		if it.off != len(it.s) {
			return false, it.fail(it.off, "records end before the batch does (incorrect declared batch size)")
		}
		return false, nil
	}
	start := it.off
	length, n := readVarint(it.s[start:])
	if n <= 0 {
		return false, it.fail(start, varintReason("length", n))
	}
	p := start + n
	if length < 0 || int(length) > len(it.s)-p {
		return false, it.fail(start, "record length "+itoa(int64(length))+" exceeds the "+itoa(int64(len(it.s)-p))+" bytes left")
	}
	rec := it.s[p : p+int(length)] // the record body; every field must fit in it
	end := p + int(length)
	if len(rec) < 1 {
		return false, it.fail(start, "record too short for its attributes")
	}
	r.Attributes = int8(rec[0])
	q := 1
	if r.TimestampDelta, n = readVarlong(rec[q:]); n <= 0 {
		return false, it.fail(p+q, varintReason("timestamp delta", n))
	}
	q += n
	if r.OffsetDelta, n = readVarint(rec[q:]); n <= 0 {
		return false, it.fail(p+q, varintReason("offset delta", n))
	}
	q += n
	var err string
	if r.Key, q, err = readBytes(rec, q); err != "" {
		return false, it.fail(p+q, "key "+err)
	}
	if r.Value, q, err = readBytes(rec, q); err != "" {
		return false, it.fail(p+q, "value "+err)
	}
	count, n := readVarint(rec[q:])
	if n <= 0 {
		return false, it.fail(p+q, varintReason("header count", n))
	}
	q += n
	// Each header takes at least two bytes (two length varints).
	if count < 0 || int(count) > (len(rec)-q)/2 {
		return false, it.fail(p+q, "header count "+itoa(int64(count))+" does not fit the record")
	}
	if hdrs != nil {
		*hdrs = (*hdrs)[:0]
	}
	for j := int32(0); j < count; j++ {
		var k, v []byte
		at := q
		if k, q, err = readBytes(rec, q); err != "" {
			return false, it.fail(p+at, "header key "+err)
		}
		if k == nil {
			return false, it.fail(p+at, "null header key")
		}
		if v, q, err = readBytes(rec, q); err != "" {
			return false, it.fail(p+q, "header value "+err)
		}
		if hdrs != nil {
			*hdrs = append(*hdrs, RecordHeader{Key: string(k), Value: v})
		}
	}
	if q != len(rec) {
		return false, it.fail(start, "record length "+itoa(int64(length))+" but its fields take "+itoa(int64(q)))
	}
	if hdrs != nil {
		r.Headers = *hdrs
	} else {
		r.Headers = nil
	}
	r.Offset = it.baseOffset + int64(r.OffsetDelta)
	if it.logAppendTime {
		r.Timestamp = it.maxTimestamp
	} else {
		r.Timestamp = it.baseTimestamp + r.TimestampDelta
	}
	it.off = end
	it.i++
	return true, nil
}

// readBytes reads a varint length and that many bytes of rec at q, -1
// meaning null. It returns the bytes (nil for null, non-nil for empty), the
// new position, and a reason on failure.
func readBytes(rec []byte, q int) ([]byte, int, string) {
	l, n := readVarint(rec[q:])
	if n <= 0 {
		return nil, q, varintReason("length", n)
	}
	q += n
	switch {
	case l == -1:
		return nil, q, ""
	case l < -1:
		return nil, q, "length " + itoa(int64(l)) + " is negative"
	case int(l) > len(rec)-q:
		return nil, q, "length " + itoa(int64(l)) + " exceeds the " + itoa(int64(len(rec)-q)) + " bytes left in the record"
	}
	return rec[q : q+int(l) : q+int(l)], q + int(l), ""
}

func varintReason(field string, n int) string {
	if n == 0 {
		return field + " varint runs past the end of the record"
	}
	return field + " varint is too long"
}

// Records calls fn for each record of batch b (a whole batch, header
// included), decompressing if needed. It validates the record layout (length
// varints, counts, exhaustion) but not the CRC (call Validate). Decompressed
// size is bounded (MaxDecompressed, 64 MiB) so a hostile batch cannot
// exhaust memory. Returning a non-nil error from fn stops the iteration and
// is returned.
//
// Header keys are copied into strings (they are rare, and strings must not
// change under their holder); everything else aliases b or d's buffer.
func (d *Decoder) Records(b []byte, fn func(r *Record) error) error {
	_, err := d.walk(b, fn, &d.hdrs, nil)
	return err
}

// Walked is what Decoder.Walk learns of a batch in its one pass.
type Walked struct {
	// Stats counts every record of the batch: it is Stats(b, from) for a
	// data batch whose records all have an offset of at least from (a
	// produced batch's, at base offset 0, with from 0).
	Stats TextStats
	// Region is the batch's records region, decompressed: it aliases b,
	// or the Decoder's buffer until the Decoder's next call, and is what
	// RecompressRegion takes.
	Region []byte
}

// Walk is Records for a caller that takes in a batch once, as a produce
// does: it checks every record as Records does and calls fn for each, but
// with r.Headers nil (the headers are checked, not stored, so nothing is
// allocated for them), and it returns the batch's TextStats and its
// decompressed records region, so that neither Stats nor a recompression
// need decompress the batch again.
func (d *Decoder) Walk(b []byte, fn func(r *Record) error) (Walked, error) {
	var w Walked
	region, err := d.walk(b, fn, nil, &w.Stats)
	if err != nil {
		return Walked{}, err
	}
	w.Region = region
	return w, nil
}

// walk is Records and Walk: headers are stored in *hdrs unless hdrs is
// nil, and each record is counted into *st unless st is nil. It returns
// the records region.
func (d *Decoder) walk(b []byte, fn func(r *Record) error, hdrs *[]RecordHeader, st *TextStats) ([]byte, error) {
	defer d.release()
	var (
		h  Header
		it recordIter
	)
	if err := d.open(b, &it, &h); err != nil {
		return nil, err
	}
	r := &d.rec
	for {
		ok, err := it.next(r, hdrs)
		if !ok {
			*r = Record{}
			clear(d.hdrs)
			return it.s, err
		}
		if st != nil {
			// As Stats counts a record.
			st.Lines++
			st.ValueBytes += int64(len(r.Value))
			if r.Key != nil {
				st.Keyed++
				st.KeyBytes += int64(len(r.Key))
			}
		}
		if err := fn(r); err != nil {
			*r = Record{}
			clear(d.hdrs)
			return it.s, err
		}
	}
}
