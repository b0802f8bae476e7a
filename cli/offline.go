package cli

// This file holds what the offline tools (dump-log, verify, get-offsets,
// log-dirs) share: streaming the batches of a .log file, listing the
// partitions and segments of a data directory, and checking index files
// against their log. The tools read the files directly, like Kafka's
// DumpLogSegments, instead of opening a logstore.Store: a Store takes the
// data directory's lock, so a tool that opened one could not look at the
// directory of a running mount, and would recover (rewrite) a directory it
// was asked only to inspect.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/segfs/segfs/index"
	"github.com/segfs/segfs/logstore"
	"github.com/segfs/segfs/logstore/record"
)

// Kafka's file suffixes (KAFKA-FORMAT.md §1.2).
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	txnIndexSuffix  = ".txnindex"
	snapshotSuffix  = ".snapshot"
	kraftSnapSuffix = ".checkpoint"

	// peekBytes is how much of a batch PeekSize needs (offset, length,
	// leader epoch, magic).
	peekBytes = 17
)

// batchAt is one batch found by a scan: where it starts and its header. Raw
// holds the whole batch when the scan was asked for it; it aliases the
// scanner's buffer and is valid until the next call.
type batchAt struct {
	Pos    int64
	Header record.Header
	Raw    []byte
	// CRCErr is set when the batch is framed correctly (length and magic
	// are sane, so the scan can go on) but its CRC does not match.
	CRCErr error
	// Legacy is set for a message of Kafka's old formats (magic 0 or 1)
	// whose CRC-32 checks out: data segfs does not serve, but neither
	// garbage nor a torn tail, so the scan steps over it. Header then
	// holds what a v2 header would say of it (BaseOffset and
	// LastOffset the message's offset, MaxTimestamp its timestamp, Magic,
	// CRC, Attributes, BatchLength), so that offset and index checks
	// treat it as Kafka does; Raw must not be decoded as a v2 batch.
	Legacy bool
}

// plural is n and the noun, in its plural unless n is 1 or -1: "1
// segment", "2 batches", "0 entries". The tools' messages said "1
// segments" and "1 error(s)".
func plural[N ~int | ~int32 | ~int64](n N, noun string) string {
	if n == 1 || n == -1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	switch {
	case len(noun) > 1 && noun[len(noun)-1] == 'y' && !strings.ContainsRune("aeiou", rune(noun[len(noun)-2])):
		noun = noun[:len(noun)-1] + "ies"
	case strings.HasSuffix(noun, "s"), strings.HasSuffix(noun, "x"), strings.HasSuffix(noun, "ch"), strings.HasSuffix(noun, "sh"):
		noun += "es"
	default:
		noun += "s"
	}
	return fmt.Sprintf("%d %s", n, noun)
}

// tailError says the last bytes of a file do not hold a whole batch: a
// header or a batch cut short, as a crash in the middle of an append leaves
// it. Recovery truncates such a tail.
type tailError struct {
	Pos    int64 // where the partial batch starts
	Bytes  int64 // bytes from Pos to the end of the scanned range
	Reason string
}

func (e *tailError) Error() string {
	return fmt.Sprintf("%s at position %d: %s", plural(e.Bytes, "invalid byte"), e.Pos, e.Reason)
}

// framingError says the batch at Pos has an impossible length or magic, so
// nothing after it can be located.
type framingError struct {
	Pos    int64
	Reason string
}

func (e *framingError) Error() string {
	return fmt.Sprintf("corrupt batch at position %d: %s", e.Pos, e.Reason)
}

// segmentFinding is damage met reading a segment, as verify classifies
// and words it. Error is verify's error: bytes are lost or wrong, or the
// log goes on past what could be read. A warning is what the next mount's
// recovery repairs without losing an acknowledged write (a partial batch
// at the end of the active segment, which a crash in an append leaves).
// Text starts with the position in the file ("position 1234: ...") and
// does not name the file.
type segmentFinding struct {
	Error bool
	Text  string
}

// scanFinding classifies err, which ended a batchScanner's scan of a .log
// of size bytes before its end (not io.EOF); active says the segment is
// the last of its partition, the one recovery truncates a torn tail of.
func scanFinding(err error, active bool, size int64) segmentFinding {
	var te *tailError
	var fe *framingError
	switch {
	case errors.As(err, &te) && active:
		return segmentFinding{false, fmt.Sprintf("position %d: partial batch at the end of the active segment (%s; %s): recovery truncates it", te.Pos, plural(te.Bytes, "byte"), te.Reason)}
	case errors.As(err, &te):
		return segmentFinding{true, fmt.Sprintf("position %d: partial batch at the end of a closed segment (%s; %s)", te.Pos, plural(te.Bytes, "byte"), te.Reason)}
	case errors.As(err, &fe):
		return segmentFinding{true, fmt.Sprintf("position %d: corrupt batch: %s; the %s from here on cannot be read", fe.Pos, fe.Reason, plural(size-fe.Pos, "byte"))}
	default:
		return segmentFinding{true, err.Error()}
	}
}

// batchFindings are the errors in one batch b read whole (Raw set) from
// the segment of base offset base, after a batch ending at prevLast
// (base-1 for none): its CRC, with dec its records, and its offsets. A
// message of the old formats (Legacy) has its CRC checked by the scan and
// no records to decode; the caller reports its format.
func batchFindings(b *batchAt, dec *record.Decoder, base, prevLast int64) []segmentFinding {
	var fs []segmentFinding
	add := func(format string, args ...any) {
		fs = append(fs, segmentFinding{true, fmt.Sprintf("position %d: ", b.Pos) + fmt.Sprintf(format, args...)})
	}
	h := &b.Header
	switch {
	case b.Legacy:
		// Its CRC-32 checked out (the scan steps over no other), and it
		// holds no v2 records.
	case b.CRCErr != nil:
		add("corrupt batch: %s", reasonOf(b.CRCErr))
	case dec != nil:
		if err := dec.Records(b.Raw, func(rec *record.Record) error {
			if rec.Offset < h.BaseOffset || rec.Offset > h.LastOffset() {
				return fmt.Errorf("record offset %d outside the batch's range %d..%d", rec.Offset, h.BaseOffset, h.LastOffset())
			}
			return nil
		}); err != nil {
			add("corrupt batch: %s", reasonOf(err))
		}
	}
	switch {
	case h.LastOffsetDelta < 0:
		add("negative last offset delta %d", h.LastOffsetDelta)
	case int64(h.RecordCount) > int64(h.LastOffsetDelta)+1:
		add("%s cannot fit in %s", plural(h.RecordCount, "record"), plural(int64(h.LastOffsetDelta)+1, "offset"))
	}
	switch {
	case h.BaseOffset < base:
		add("batch base offset %d below the segment's base offset %d", h.BaseOffset, base)
	case h.BaseOffset <= prevLast:
		add("offsets do not increase: batch starts at %d, the previous one ended at %d", h.BaseOffset, prevLast)
	}
	if h.LastOffset()-base > math.MaxInt32 {
		add("offset %d cannot be stored relative to base offset %d in an index", h.LastOffset(), base)
	}
	return fs
}

// reasonOf extracts the human part of a record error (its position is
// reported by the caller, relative to the file).
func reasonOf(err error) string {
	var ce *record.CorruptError
	if errors.As(err, &ce) && ce.Reason != "" {
		return ce.Reason
	}
	return err.Error()
}

// scanChunk is how much of the file a whole scan (Next(true)) reads at a
// time.
const scanChunk = 1 << 20

// batchScanner streams the batches of one .log file. A header-only scan
// (Next(false)) reads each 61-byte header with pread and skips the rest of
// the batch. A whole scan (Next(true)) reads the file in sequential chunks
// of scanChunk bytes, each byte once (a header and its batch used to be two
// preads, which for small batches doubled the time of a scan), and a batch
// larger than a chunk whole. Memory stays at one chunk or one batch
// whatever the file size, and a batch length is trusted only once it fits
// in the bytes left in the file: a hostile 2 GB length is reported, never
// allocated.
type batchScanner struct {
	r     io.ReaderAt
	limit int64 // end of the scanned range: the file size or --max-bytes
	pos   int64
	hdr   [record.HeaderSize]byte
	// chunk is how much a refill of win reads at least: scanChunk, or
	// less in tests, to put the chunk boundaries inside headers and
	// batches.
	chunk int64
	// win holds the bytes of the file from winPos read by whole scans,
	// pos among them or just after them; it aliases buf.
	win    []byte
	winPos int64
	buf    []byte
}

func newBatchScanner(r io.ReaderAt, start, limit int64) *batchScanner {
	return &batchScanner{r: r, pos: start, limit: limit, chunk: scanChunk}
}

// window returns the n bytes (n <= limit-pos) at pos, from win, refilled
// when they are not all in it: the bytes of win from pos on move to the
// front of buf, and a read after them fills it to a chunk (or n bytes, if
// more), short of limit. Fewer than n bytes mean the file ended before
// them, with err nil, or a read failed, with err its error; a read error
// after the n bytes is not reported here but by the refill that needs the
// bytes it failed on, as a pread of each batch reported it.
func (s *batchScanner) window(n int64) ([]byte, error) {
	off := s.pos - s.winPos
	if off < 0 || off > int64(len(s.win)) {
		// pos moved outside win (a header-only Next): start afresh.
		s.win, s.winPos, off = nil, s.pos, 0
	}
	if off+n <= int64(len(s.win)) {
		return s.win[off : off+n : off+n], nil
	}
	kept := int64(len(s.win)) - off
	want := min(max(s.chunk, n), s.limit-s.pos)
	if int64(cap(s.buf)) < want {
		buf := make([]byte, want) // want <= bytes left in the file
		copy(buf, s.win[off:])
		s.buf = buf
	} else {
		copy(s.buf, s.win[off:])
	}
	got, err := s.r.ReadAt(s.buf[kept:want], s.pos+kept)
	s.win, s.winPos = s.buf[:kept+int64(got)], s.pos
	if int64(len(s.win)) < n {
		if err == io.EOF {
			err = nil
		}
		return s.win, err
	}
	return s.win[:n:n], nil
}

// read returns the n bytes (n <= limit-pos) at pos: from the chunks of a
// whole scan, or into s.hdr (n <= HeaderSize) with a pread for a
// header-only one. A short answer is a *tailError (the file shrank under
// us: a live directory truncated by recovery or retention) or a read
// error.
func (s *batchScanner) read(n int64, whole bool) ([]byte, error) {
	var b []byte
	var err error
	if whole {
		b, err = s.window(n)
	} else {
		var got int
		got, err = s.r.ReadAt(s.hdr[:n], s.pos)
		b = s.hdr[:got]
		if err == io.EOF {
			err = nil
		}
	}
	if int64(len(b)) < n {
		if err == nil {
			return nil, s.tail(int64(len(b)), "file ended early")
		}
		return nil, fmt.Errorf("read at position %d: %w", s.pos, err)
	}
	return b, nil
}

// Pos is where the next batch starts; after io.EOF it is the end of the
// last whole batch, which is the number of valid bytes for a scan from 0.
func (s *batchScanner) Pos() int64 { return s.pos }

// Next returns the next batch. whole asks for the batch bytes (and a CRC
// check); without it only the header is read. It returns io.EOF at the end,
// *tailError for a partial batch at the end (once), and *framingError for a
// batch whose length or magic is impossible; after either error the scan is
// over.
func (s *batchScanner) Next(whole bool) (batchAt, error) {
	left := s.limit - s.pos
	if left <= 0 {
		return batchAt{}, io.EOF
	}
	n := min(left, int64(record.HeaderSize))
	hdr, err := s.read(n, whole)
	if err != nil {
		return batchAt{}, err
	}
	copy(s.hdr[:], hdr)
	if n < peekBytes {
		return batchAt{}, s.tail(left, fmt.Sprintf("only %s, a batch header needs %d", plural(left, "byte"), record.HeaderSize))
	}
	size, err := record.PeekSize(s.hdr[:n])
	if err != nil {
		if b, ok, err := s.legacy(n, left, whole); ok || err != nil {
			return b, err
		}
		s.limit = s.pos // nothing after an impossible length can be trusted
		return batchAt{}, &framingError{Pos: s.pos, Reason: reasonOf(err)}
	}
	if size > left {
		return batchAt{}, s.tail(left, fmt.Sprintf("batch length says %s, only %d left", plural(size, "byte"), left))
	}
	h, err := record.ParseHeader(s.hdr[:])
	if err != nil { // PeekSize passed, so this is not expected; stay safe
		s.limit = s.pos
		return batchAt{}, &framingError{Pos: s.pos, Reason: reasonOf(err)}
	}
	b := batchAt{Pos: s.pos, Header: h}
	if whole {
		raw, err := s.read(size, true)
		if err != nil {
			return batchAt{}, err
		}
		b.Raw = raw
		if err := record.Validate(raw); err != nil {
			b.CRCErr = err
		}
	}
	s.pos += size
	return b, nil
}

// legacy recognizes a message of the old formats at s.pos (n header
// bytes read, left bytes to the limit): magic 0 or 1 and a CRC-32 that
// checks out over its size, as recovery judges it (logstore.legacyAt).
// Anything else is left to the caller's framing error, as before.
func (s *batchScanner) legacy(n, left int64, whole bool) (batchAt, bool, error) {
	size, magic, ok := record.PeekLegacy(s.hdr[:n])
	if !ok || size > left {
		return batchAt{}, false, nil
	}
	if _, valid, err := record.LegacyCRCValid(s.r, s.pos, s.limit); err != nil || !valid {
		if err != nil {
			return batchAt{}, false, fmt.Errorf("read at position %d: %w", s.pos, err)
		}
		return batchAt{}, false, nil
	}
	be := binary.BigEndian
	h := record.Header{
		BaseOffset:    int64(be.Uint64(s.hdr[0:])),
		BatchLength:   int32(size - record.LogOverhead),
		Magic:         magic,
		CRC:           be.Uint32(s.hdr[12:]),
		Attributes:    int16(s.hdr[17]),
		MaxTimestamp:  -1,
		ProducerID:    -1,
		ProducerEpoch: -1,
		BaseSequence:  -1,
		RecordCount:   1,
	}
	if magic == record.MagicV1 {
		// A magic 1 message is at least 34 bytes, all of them in hdr.
		h.MaxTimestamp = int64(be.Uint64(s.hdr[18:]))
	}
	b := batchAt{Pos: s.pos, Header: h, Legacy: true}
	if whole {
		raw, err := s.read(size, true)
		if err != nil {
			return batchAt{}, false, err
		}
		b.Raw = raw
	}
	s.pos += size
	return b, true, nil
}

func (s *batchScanner) tail(n int64, reason string) error {
	e := &tailError{Pos: s.pos, Bytes: n, Reason: reason}
	s.limit = s.pos
	return e
}

// logBatch is what the index checks need to know about one batch.
type logBatch struct {
	Pos          int64
	LastOffset   int64
	MaxTimestamp int64
}

// logSummary is a header-only scan of a whole .log file.
type logSummary struct {
	Size       int64 // file size
	ValidBytes int64 // end of the last whole batch
	NextOffset int64 // LastOffset+1 of the last batch, or the base offset
	Batches    []logBatch
	Err        error // *tailError or *framingError that ended the scan, if any
	// file is the .log read, for verify to notice that the path names
	// another file since (a compaction swap); nil from summarizeLog.
	file os.FileInfo
}

// summarizeLog scans the batch headers of path. A missing file is an error.
func summarizeLog(path string, base int64) (*logSummary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	sum := &logSummary{Size: fi.Size(), NextOffset: base}
	sc := newBatchScanner(f, 0, fi.Size())
	for {
		b, err := sc.Next(false)
		if err == io.EOF {
			break
		}
		if err != nil {
			var te *tailError
			var fe *framingError
			if !errors.As(err, &te) && !errors.As(err, &fe) {
				return nil, err
			}
			sum.Err = err
			break
		}
		sum.Batches = append(sum.Batches, logBatch{Pos: b.Pos, LastOffset: b.Header.LastOffset(), MaxTimestamp: b.Header.MaxTimestamp})
		sum.NextOffset = b.Header.NextOffset()
	}
	sum.ValidBytes = sc.Pos()
	return sum, nil
}

// batchStartingAt returns the batch that starts exactly at pos.
func (s *logSummary) batchStartingAt(pos int64) (logBatch, bool) {
	i := sort.Search(len(s.Batches), func(i int) bool { return s.Batches[i].Pos >= pos })
	if i < len(s.Batches) && s.Batches[i].Pos == pos {
		return s.Batches[i], true
	}
	return logBatch{}, false
}

// firstBatchEndingAtOrAfter returns the first batch whose last offset is >=
// off (how Kafka's dump-log finds the batch of a time-index entry).
func (s *logSummary) firstBatchEndingAtOrAfter(off int64) (logBatch, bool) {
	i := sort.Search(len(s.Batches), func(i int) bool { return s.Batches[i].LastOffset >= off })
	if i < len(s.Batches) {
		return s.Batches[i], true
	}
	return logBatch{}, false
}

// segmentStem splits a segment file name into its base offset and suffix
// ("00000000000000000042.index" → 42, ".index"). Kafka parses the text
// before the first dot as a Long; names that are not 20 digits are not
// segfs's and are rejected here so that stray files are never mistaken for
// segments.
func segmentStem(name string) (base int64, suffix string, ok bool) {
	dot := strings.IndexByte(name, '.')
	if dot != 20 {
		return 0, "", false
	}
	for _, c := range name[:dot] {
		if c < '0' || c > '9' {
			return 0, "", false
		}
	}
	base, err := strconv.ParseInt(name[:dot], 10, 64)
	if err != nil {
		return 0, "", false
	}
	return base, name[dot:], true
}

// baseOffsetOf parses the base offset from any file name (Kafka's rule:
// the text before the first dot), for dump-log, which accepts files of any
// directory.
func baseOffsetOf(path string) (int64, error) {
	name := filepath.Base(path)
	stem, _, _ := strings.Cut(name, ".")
	// A copied segment often gets a prefix ("kraft-metadata-000…000.log");
	// its 20-digit tail is still the base offset.
	if len(stem) > 20 && stem[len(stem)-21] == '-' {
		stem = stem[len(stem)-20:]
	}
	base, err := strconv.ParseInt(stem, 10, 64)
	if err != nil || base < 0 {
		return 0, fmt.Errorf("%s: file name does not start with a base offset", path)
	}
	return base, nil
}

// siblingPath replaces the suffix of a segment file name
// ("…/00000000000000000000.index" → "…/00000000000000000000.log").
func siblingPath(path, suffix string) string {
	dir, name := filepath.Split(path)
	stem, _, _ := strings.Cut(name, ".")
	return filepath.Join(dir, stem+suffix)
}

// segmentFiles are the files of one segment in a partition directory.
type segmentFiles struct {
	Base      int64
	Log       string // path; "" if the .log is missing
	Index     string // path; "" if missing
	TimeIndex string // path; "" if missing
	TxnIndex  string // path; "" if missing (the normal case: only aborted transactions make one)
}

// partitionDir is one topic-partition directory of a data directory.
type partitionDir struct {
	Topic     string
	Partition int32
	Name      string // directory name, "orders-0"
	Path      string
	Segments  []segmentFiles // sorted by base offset
}

// parsePartitionDirName splits "topic-N" at the last '-' (Kafka's rule:
// topics may contain '-'). Directories Kafka renames for deletion or moves
// ("topic-0.<uuid>-delete", "-future", "-stray") end in a word, not a
// number, and are skipped.
func parsePartitionDirName(name string) (topic string, part int32, ok bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return "", 0, false
	}
	num := name[i+1:]
	for _, c := range num {
		if c < '0' || c > '9' {
			return "", 0, false
		}
	}
	n, err := strconv.ParseInt(num, 10, 32)
	// The number in its canonical form only ("orders-01" is not
	// partition 1): the mount (logstore) skips other spellings, and the
	// offline tools must see the same partitions.
	if err != nil || strconv.FormatInt(n, 10) != num {
		return "", 0, false
	}
	topic = name[:i]
	for _, c := range topic {
		ok := c == '.' || c == '_' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
		if !ok {
			return "", 0, false
		}
	}
	if len(topic) > 249 || topic == "." || topic == ".." {
		return "", 0, false
	}
	return topic, int32(n), true
}

// listPartitions returns the partition directories of dataDir sorted by
// topic and partition number, each with its segments.
func listPartitions(dataDir string) ([]*partitionDir, error) {
	fi, err := os.Stat(dataDir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dataDir)
	}
	if err := notPartitionDir(dataDir); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dataDir)
	if err != nil {
		return nil, err
	}
	var parts []*partitionDir
	for _, e := range ents {
		if !logstore.IsDirEntryDir(dataDir, e) {
			continue
		}
		topic, n, ok := parsePartitionDirName(e.Name())
		if !ok {
			continue
		}
		p := &partitionDir{Topic: topic, Partition: n, Name: e.Name(), Path: filepath.Join(dataDir, e.Name())}
		if p.Segments, err = listSegments(p.Path); err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool {
		if parts[i].Topic != parts[j].Topic {
			return parts[i].Topic < parts[j].Topic
		}
		return parts[i].Partition < parts[j].Partition
	})
	return parts, nil
}

// notPartitionDir refuses, as a data directory, a directory that holds
// segment files itself: a partition directory, or a copy of a mount's
// segments/ (`rsync -a MOUNT/orders/0/segments/ copy/`). Read as a data
// directory it has no partition, so verify, get-offsets and log-dirs
// reported nothing and exited 0, and a mount served an empty filesystem
// and wrote the data directory's files among the segments. A Kafka log
// directory never holds segments at its top. A directory that cannot be
// read passes: the caller reports it, or creates it.
func notPartitionDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	for _, e := range ents {
		if _, suffix, ok := segmentStem(e.Name()); !ok || suffix != logSuffix || !e.Type().IsRegular() {
			continue
		}
		where := "the data directory is the one holding TOPIC-PARTITION directories"
		if abs, err := filepath.Abs(dir); err == nil {
			if _, _, ok := parsePartitionDirName(filepath.Base(abs)); ok {
				where = "its data directory is " + filepath.Dir(abs)
			}
		}
		return fmt.Errorf("%s holds segment files (%s): it is a partition directory or a copy of one, not a data directory; %s (dump-log reads segment files)",
			dir, e.Name(), where)
	}
	return nil
}

// listSegments groups the .log/.index/.timeindex files of a partition
// directory by base offset. Files being deleted, cleaned or swapped
// (".log.deleted", ".log.cleaned", ".log.swap") have a compound suffix and
// are not segments.
func listSegments(dir string) ([]segmentFiles, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	byBase := map[int64]*segmentFiles{}
	get := func(base int64) *segmentFiles {
		s := byBase[base]
		if s == nil {
			s = &segmentFiles{Base: base}
			byBase[base] = s
		}
		return s
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		base, suffix, ok := segmentStem(e.Name())
		if !ok {
			continue
		}
		path := filepath.Join(dir, e.Name())
		switch suffix {
		case logSuffix:
			get(base).Log = path
		case indexSuffix:
			get(base).Index = path
		case timeIndexSuffix:
			get(base).TimeIndex = path
		case txnIndexSuffix:
			get(base).TxnIndex = path
		}
	}
	segs := make([]segmentFiles, 0, len(byBase))
	for _, s := range byBase {
		segs = append(segs, *s)
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].Base < segs[j].Base })
	return segs, nil
}

// strayLogs lists the files of a partition directory that end in .log
// but are not named as segments (20 digits, then .log), sorted.
func strayLogs(dir string) []string {
	ents, _ := os.ReadDir(dir) // listSegments reports an unreadable directory
	var out []string
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, logSuffix) {
			continue
		}
		if _, suffix, ok := segmentStem(name); !ok || suffix != logSuffix {
			out = append(out, filepath.Join(dir, name))
		}
	}
	return out
}

// offsetCheckpoint is a parsed Kafka offset checkpoint file (§10.1).
type offsetCheckpoint map[string]int64 // "topic-partition" → offset

// readOffsetCheckpoint parses version 0 of Kafka's offset checkpoint
// format. A missing file is an empty checkpoint (Kafka's rule); a malformed
// one is an error naming the line.
func readOffsetCheckpoint(path string) (offsetCheckpoint, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return offsetCheckpoint{}, nil
	}
	if err != nil {
		return nil, err
	}
	cp := offsetCheckpoint{}
	if len(data) == 0 {
		return cp, nil
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if lines[0] != "0" {
		return nil, fmt.Errorf("%s: line 1: version %q, want 0", path, lines[0])
	}
	if len(lines) < 2 {
		return nil, fmt.Errorf("%s: missing entry count", path)
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n < 0 {
		return nil, fmt.Errorf("%s: line 2: bad entry count %q", path, lines[1])
	}
	if len(lines)-2 != n {
		return nil, fmt.Errorf("%s: says %s, has %d", path, plural(n, "entry"), len(lines)-2)
	}
	for i, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) != 3 {
			return nil, fmt.Errorf("%s: line %d: want \"topic partition offset\", got %q", path, i+3, l)
		}
		part, err1 := strconv.ParseInt(f[1], 10, 32)
		off, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || part < 0 {
			return nil, fmt.Errorf("%s: line %d: bad number in %q", path, i+3, l)
		}
		cp[f[0]+"-"+strconv.FormatInt(part, 10)] = off
	}
	return cp, nil
}

// partitionOffsets is what get-offsets and log-dirs report.
type partitionOffsets struct {
	LogStartOffset int64
	LogEndOffset   int64
	Segments       int
	SizeBytes      int64 // sum of .log sizes, as kafka-log-dirs reports
	// LastLog is the .log the log end was read from (the last segment's),
	// and Findings what that read met, as verify classifies it: a torn
	// tail (a warning) or damage (an error: the log end offset may not be
	// the log's end).
	LastLog  string
	Findings []segmentFinding
}

// reportOffsets prints on w what offsetsOf found reading the log end, one
// line per finding as verify prints it ("error: FILE: position N: ..."),
// and returns how many are errors. live says a running process holds the
// data directory (lockHolder): a partial batch at the end of the active
// segment is then an append in flight (not counted in the log end yet),
// which no recovery truncates, and nothing is said of it. It was a warning
// that "recovery truncates it" whenever a tool ran beside a mount while a
// large batch was being written.
func reportOffsets(w io.Writer, po *partitionOffsets, live bool) (errs int) {
	for _, f := range po.Findings {
		kind := "warning"
		if f.Error {
			kind = "error"
			errs++
		} else if live {
			continue
		}
		fmt.Fprintf(w, "%s: %s: %s\n", kind, po.LastLog, f.Text)
	}
	return errs
}

// offsetsDamageError is the error of get-offsets and log-dirs after they
// printed what they could: errs errors in the last segments of the
// partitions named, whose log end offsets may therefore not be their end.
func offsetsDamageError(cmd, dataDir string, errs int, damaged []string) error {
	return fmt.Errorf("%s: %s found in %s: the log end offset of %s may not be its end (segfs verify %s checks every segment)",
		cmd, plural(errs, "error"), dataDir, strings.Join(damaged, ", "), dataDir)
}

// offsetsOf computes a partition's offsets without reading whole logs:
// the log start is the first segment's base offset or the checkpointed
// start if later (Kafka's rule), and the log end comes from scanning the
// batch headers of the last segment from its last index entry on.
//
// A running daemon's retention or compaction may delete or replace
// segments between the listing and the reading (these tools work beside a
// mount): a file gone since the listing makes it list the partition again
// rather than fail.
func offsetsOf(p *partitionDir, logStart offsetCheckpoint) (partitionOffsets, error) {
	for attempt := 1; ; attempt++ {
		po, err := offsetsOfListed(p, logStart)
		if err == nil || !errors.Is(err, os.ErrNotExist) || attempt == 5 {
			return po, err
		}
		segs, lerr := listSegments(p.Path)
		if lerr != nil {
			return po, lerr
		}
		p.Segments = segs
	}
}

func offsetsOfListed(p *partitionDir, logStart offsetCheckpoint) (partitionOffsets, error) {
	var po partitionOffsets
	for _, s := range p.Segments {
		if s.Log == "" {
			continue
		}
		fi, err := os.Stat(s.Log)
		if err != nil {
			return po, err
		}
		po.Segments++
		po.SizeBytes += fi.Size()
	}
	var last *segmentFiles
	for i := range p.Segments {
		if p.Segments[i].Log != "" {
			if last == nil {
				po.LogStartOffset = p.Segments[i].Base
			}
			last = &p.Segments[i]
		}
	}
	if cp, ok := logStart[p.Name]; ok && cp > po.LogStartOffset {
		po.LogStartOffset = cp
	}
	po.LogEndOffset = po.LogStartOffset
	if last == nil {
		return po, nil
	}
	end, findings, err := segmentEnd(last)
	if err != nil {
		return po, err
	}
	po.LastLog, po.Findings = last.Log, findings
	po.LogEndOffset = max(end, po.LogStartOffset)
	return po, nil
}

// segmentEnd returns the next offset after the last whole batch of a
// partition's last segment (its base offset when empty). It starts at the
// last entry of the offset index when that entry agrees with the log, so
// that a 1 GiB active segment costs a few batch reads, not a full scan.
// The batches it reads are checked as verify checks them, all but their
// records' layout (their CRC covers it), and what it finds is returned:
// it stopped silently at the first batch it could not read, and the log
// end it reported was trusted. A read error is such a finding; only a
// file that cannot be opened is an error.
func segmentEnd(s *segmentFiles) (int64, []segmentFinding, error) {
	f, err := os.Open(s.Log)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, nil, err
	}
	start := int64(0)
	if s.Index != "" {
		if e, ok := lastIndexEntry(s.Index, s.Base); ok && int64(e.Position) < fi.Size() {
			// Trust the entry only if a batch ending at its offset starts
			// at its position; otherwise scan from the start.
			sc := newBatchScanner(f, int64(e.Position), fi.Size())
			if b, err := sc.Next(false); err == nil && b.Header.LastOffset() == e.Offset {
				start = int64(e.Position)
			}
		}
	}
	next := s.Base
	prevLast := s.Base - 1
	var findings []segmentFinding
	sc := newBatchScanner(f, start, fi.Size())
	for {
		b, err := sc.Next(true)
		if err == io.EOF {
			break
		}
		if err != nil {
			findings = append(findings, scanFinding(err, true, fi.Size()))
			break
		}
		findings = append(findings, batchFindings(&b, nil, s.Base, prevLast)...)
		prevLast = max(prevLast, b.Header.LastOffset())
		next = b.Header.NextOffset()
	}
	return next, findings, nil
}

// lastIndexEntry finds the last used entry of an .index file without
// reading it whole: used entries form a prefix (entry 0, then entries with
// a non-zero relative offset) followed, in an untrimmed (live or crashed)
// index, by zero slots, so a binary search over 8-byte preads finds the
// boundary. Garbage makes the answer wrong, never unsafe: the caller checks
// it against the log.
func lastIndexEntry(path string, base int64) (index.OffsetEntry, bool) {
	f, err := os.Open(path)
	if err != nil {
		return index.OffsetEntry{}, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return index.OffsetEntry{}, false
	}
	n := int(fi.Size() / index.OffsetEntrySize)
	if n == 0 {
		return index.OffsetEntry{}, false
	}
	var buf [index.OffsetEntrySize]byte
	read := func(i int) (index.OffsetEntry, bool) {
		if _, err := f.ReadAt(buf[:], int64(i)*index.OffsetEntrySize); err != nil {
			return index.OffsetEntry{}, false
		}
		es, _ := index.ParseOffsetEntries(buf[:], base)
		if len(es) != 1 {
			return index.OffsetEntry{}, false
		}
		return es[0], true
	}
	// used(i): slot i holds an entry. used(0) is true by Kafka's rule.
	used := func(i int) bool {
		e, ok := read(i)
		return ok && (i == 0 || e.Offset != base)
	}
	last := sort.Search(n, func(i int) bool { return !used(i) }) - 1
	if last < 0 {
		return index.OffsetEntry{}, false
	}
	return read(last)
}

// indexCheck is the outcome of checking one index file.
type indexCheck struct {
	Used      int      // entries before the zero-filled tail (what lookups use)
	Untrimmed int      // zero slots after them: an active or crashed segment
	Problems  []string // each a full sentence naming the entry
}

// guard runs fn with memory faults turned into errors. The index package
// maps files; if a running daemon truncates an index we have mapped (a
// roll trims it), touching the lost pages raises SIGBUS, which must become
// a reported problem, not a crash.
func guard(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("file changed while being read (is a daemon writing this data directory?): %v", r)
		}
	}()
	return fn()
}

// zeroTail reports whether b has a used prefix of used entries of the given
// size followed only by zero bytes (and at least one zero slot). Slot 0 is
// counted as used by Kafka's parsing rule, but an all-zero slot 0 in an
// otherwise zero file is no entry: the first batch of a segment is never
// indexed, so (base offset, position 0) is never written.
func zeroTail(b []byte, used, size int) bool {
	start := used * size
	end := len(b) - len(b)%size
	return end > start && !bytes.ContainsFunc(b[start:end], func(r rune) bool { return r != 0 })
}

// checkOffsetIndex checks an .index file against its own rules
// (index.SanityCheck) and against its log: every position inside the log
// (CheckPositions), every offset below the log end (CheckOffsets), and, as
// kafka-dump-log --verify-index-only does, a batch ending at the entry's
// offset starting at the entry's position. An untrimmed zero tail is not a
// problem: a live segment has one, and recovery rebuilds a crashed one;
// only the used entries are then checked. raw, when not nil, is the file's
// content read earlier (verify reads an active segment's indexes before
// its log); nil reads the file now.
func checkOffsetIndex(path string, raw []byte, base int64, log *logSummary) indexCheck {
	var c indexCheck
	if raw == nil {
		var err error
		if raw, err = os.ReadFile(path); err != nil {
			c.Problems = append(c.Problems, err.Error())
			return c
		}
	}
	entries, trailing := index.ParseOffsetEntries(raw, base)
	if trailing == 0 && zeroTail(raw, 0, index.OffsetEntrySize) {
		entries = nil // all zeros: a fresh preallocated index, no entry yet
	}
	c.Used = len(entries)
	if trailing == 0 && zeroTail(raw, c.Used, index.OffsetEntrySize) {
		c.Untrimmed = len(raw)/index.OffsetEntrySize - c.Used
		// The index package's check counts every slot; check the used
		// prefix by the same rules here.
		var prev index.OffsetEntry
		for i, e := range entries {
			if p := index.OffsetEntryProblem(i, e, prev, base); p != "" {
				c.Problems = append(c.Problems, p)
			}
			prev = e
		}
	} else {
		err := guard(func() error {
			x, err := index.OpenOffsetIndex(path, base, 0, false)
			if err != nil {
				return err
			}
			defer x.Close()
			var errs []error
			errs = append(errs, x.SanityCheck())
			if log != nil {
				errs = append(errs, x.CheckPositions(log.ValidBytes), x.CheckOffsets(log.NextOffset))
			}
			return errors.Join(errs...)
		})
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				c.Problems = append(c.Problems, strings.TrimPrefix(line, "index: corrupt index file "+path+": "))
			}
		}
	}
	if log == nil {
		return c
	}
	for i, e := range entries {
		pos := int64(e.Position)
		if c.Untrimmed > 0 && e.Offset >= log.NextOffset {
			c.Problems = append(c.Problems, fmt.Sprintf("entry %d offset %d >= log next offset %d (index pointing past its log)", i, e.Offset, log.NextOffset))
		}
		if c.Untrimmed > 0 && pos >= log.ValidBytes {
			c.Problems = append(c.Problems, fmt.Sprintf("entry %d position %d >= log size %d (index pointing past its log)", i, pos, log.ValidBytes))
			continue
		}
		if pos >= log.ValidBytes || e.Position < 0 {
			continue // reported by CheckPositions above
		}
		b, ok := log.batchStartingAt(pos)
		switch {
		case !ok:
			c.Problems = append(c.Problems, fmt.Sprintf("entry %d (offset %d): no batch starts at position %d", i, e.Offset, pos))
		case b.LastOffset != e.Offset:
			c.Problems = append(c.Problems, fmt.Sprintf("entry %d: index offset %d, but the batch at position %d ends at log offset %d", i, e.Offset, pos, b.LastOffset))
		}
	}
	return c
}

// checkTimeIndex checks a .timeindex file against its own rules
// (index.SanityCheck, CheckOffsets) and against its log as kafka-dump-log
// does: each entry's offset must be the last offset of a batch (else "not
// found"), and its timestamp that batch's max timestamp. raw is as for
// checkOffsetIndex.
func checkTimeIndex(path string, raw []byte, base int64, log *logSummary) indexCheck {
	var c indexCheck
	if raw == nil {
		var err error
		if raw, err = os.ReadFile(path); err != nil {
			c.Problems = append(c.Problems, err.Error())
			return c
		}
	}
	entries, trailing := index.ParseTimeEntries(raw, base)
	if trailing == 0 && zeroTail(raw, 0, index.TimeEntrySize) {
		entries = nil // all zeros: a fresh preallocated index, no entry yet
	}
	c.Used = len(entries)
	if trailing == 0 && zeroTail(raw, c.Used, index.TimeEntrySize) {
		c.Untrimmed = len(raw)/index.TimeEntrySize - c.Used
		var prev index.TimeEntry
		for i, e := range entries {
			if p := index.TimeEntryProblem(i, e, prev, base); p != "" {
				c.Problems = append(c.Problems, p)
			}
			prev = e
		}
		if log != nil {
			for i, e := range entries {
				if e.Offset >= log.NextOffset {
					c.Problems = append(c.Problems, fmt.Sprintf("entry %d offset %d >= log next offset %d (index pointing past its log)", i, e.Offset, log.NextOffset))
				}
			}
		}
	} else {
		err := guard(func() error {
			x, err := index.OpenTimeIndex(path, base, 0, false)
			if err != nil {
				return err
			}
			defer x.Close()
			errs := []error{x.SanityCheck()}
			if log != nil {
				errs = append(errs, x.CheckOffsets(log.NextOffset))
			}
			return errors.Join(errs...)
		})
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				c.Problems = append(c.Problems, strings.TrimPrefix(line, "index: corrupt index file "+path+": "))
			}
		}
	}
	if log == nil {
		return c
	}
	for i, e := range entries {
		if e.Offset >= log.NextOffset {
			continue // reported above
		}
		b, ok := log.firstBatchEndingAtOrAfter(e.Offset)
		switch {
		case !ok || b.LastOffset != e.Offset:
			c.Problems = append(c.Problems, fmt.Sprintf("entry %d: indexed offset %d not found in the log (no batch ends there)", i, e.Offset))
		case b.MaxTimestamp != e.Timestamp:
			c.Problems = append(c.Problems, fmt.Sprintf("entry %d: index timestamp %d, but the batch ending at offset %d has max timestamp %d", i, e.Timestamp, e.Offset, b.MaxTimestamp))
		}
	}
	return c
}

// lockHolder reports whether a running process holds the data directory's
// lock (logstore keeps an exclusive flock on DATA_DIR/.lock), and its pid
// as written in the file. It probes with a shared, non-blocking flock and
// lets go at once, so it never stands in the way of a mount; it never
// creates the file.
func lockHolder(dataDir string) (held bool, who string) {
	f, err := os.Open(filepath.Join(dataDir, ".lock"))
	if err != nil {
		return false, ""
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			who = "another process"
			if pid, _ := logstore.LockHolder(dataDir); pid > 0 {
				who = "pid " + strconv.Itoa(pid)
			}
			return true, who
		}
		return false, ""
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false, ""
}
