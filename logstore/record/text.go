package record

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
		s.Lines++
		s.ValueBytes += int64(len(r.Value))
		if r.Key != nil {
			s.Keyed++
			s.KeyBytes += int64(len(r.Key))
		}
	}
}
