package cli

// dump-log prints segment and index files the way Kafka's
// kafka-dump-log.sh (kafka.tools.DumpLogSegments) does, field for field
// (KAFKA-FORMAT.md §11), so that output can be compared with Kafka's and
// fed to the tools people already use on it. Where Kafka would throw a
// stack trace (a corrupt batch, an index pointing nowhere), it names the
// file and the position instead and exits non-zero.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	ucli "github.com/urfave/cli/v2"

	"github.com/segfs/segfs/index"
	"github.com/segfs/segfs/logstore"
	"github.com/segfs/segfs/logstore/record"
)

func dumpLogCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "dump-log",
		Usage:     "print segment and index files like kafka-dump-log",
		ArgsUsage: "FILE...",
		Description: `Prints .log segments (one line per batch; with --deep-iteration one line
per record, with --print-data-log keys and payloads too), .index and
.timeindex files (their entries, checked against the matching .log) and
.txnindex files, in the format of Kafka's kafka-dump-log.sh. Works on the
files of a running mount too: it only reads.

Messages of Kafka's pre-0.11 formats (magic 0 or 1) are printed as Kafka
prints them, with a note on stderr that segfs does not serve them; the
messages inside a compressed one are not shown.

A corrupt batch is reported on stderr with its position, a partial batch at
the end of a file as "Found N invalid bytes", an index entry that does not
match its log as a mismatch; any of these makes the exit status non-zero. So
does a .log, .index, .timeindex or .txnindex whose name does not start with
its base offset (as Kafka names them): a .log's batches and a .txnindex's
entries are still printed, an index's entries (relative to the base offset)
are not.

Flags go before the files. Example:

   segfs dump-log --print-data-log ~/.segfs/data/orders-0/00000000000000000000.log
   segfs dump-log --index-sanity-check ~/.segfs/data/orders-0/*.index`,
		Flags: []ucli.Flag{
			&ucli.StringSliceFlag{Name: "files", Usage: "comma-separated `FILES` to dump (as Kafka's --files; positional FILEs work too)"},
			&ucli.BoolFlag{Name: "deep-iteration", Usage: "print every record inside the batches"},
			&ucli.BoolFlag{Name: "print-data-log", Usage: "print record keys and payloads (implies --deep-iteration)"},
			&ucli.BoolFlag{Name: "skip-record-metadata", Usage: "with --print-data-log, print only keys and payloads"},
			&ucli.BoolFlag{Name: "index-sanity-check", Usage: "check .index/.timeindex files against their own rules and their .log; print only the verdict"},
			&ucli.BoolFlag{Name: "verify-index-only", Usage: "check index entries against the log, print only problems"},
			&ucli.Int64Flag{Name: "max-bytes", Value: math.MaxInt32, Usage: "read at most `BYTES` of each .log file"},
		},
		Action: runDumpLog,
	}
}

// dumpOptions are the parsed flags.
type dumpOptions struct {
	deep, printData, skipMeta bool
	sanityOnly, verifyOnly    bool
	maxBytes                  int64
	maxBytesSet               bool
}

// dumper holds the state of one dump-log run: problems found so far and
// the reports Kafka prints after all files (mismatches, non-consecutive
// offsets), which go to stderr at the end in the order files were given.
type dumper struct {
	opts     dumpOptions
	out      *bufio.Writer
	errw     io.Writer
	dec      record.Decoder
	problems int
	trailer  []string // stderr lines printed after the last file
}

func runDumpLog(c *ucli.Context) error {
	files := append([]string(nil), c.StringSlice("files")...)
	files = append(files, c.Args().Slice()...)
	if err := rejectLateFlags(c.Args().Slice()); err != nil {
		return err
	}
	if len(files) == 0 {
		return errors.New("dump-log: no files given (usage: segfs dump-log [flags] FILE...)")
	}
	d := &dumper{
		opts: dumpOptions{
			printData:   c.Bool("print-data-log"),
			deep:        c.Bool("deep-iteration") || c.Bool("print-data-log"),
			skipMeta:    c.Bool("skip-record-metadata"),
			sanityOnly:  c.Bool("index-sanity-check"),
			verifyOnly:  c.Bool("verify-index-only"),
			maxBytes:    c.Int64("max-bytes"),
			maxBytesSet: c.IsSet("max-bytes"),
		},
		out:  bufio.NewWriterSize(c.App.Writer, 64<<10),
		errw: c.App.ErrWriter,
	}
	if d.opts.maxBytes < 0 {
		return fmt.Errorf("dump-log: --max-bytes %d is negative", d.opts.maxBytes)
	}
	for _, f := range files {
		if err := d.dumpFile(f); err != nil {
			d.problemf("%s: %s", f, reasonAt(err, f))
		}
	}
	d.out.Flush()
	for _, l := range d.trailer {
		fmt.Fprintln(d.errw, l)
	}
	if d.problems > 0 {
		return fmt.Errorf("dump-log: %s found", plural(d.problems, "problem"))
	}
	return nil
}

// segmentName returns the base offset a segment file's name starts with
// (.log, .index, .timeindex, .txnindex: Kafka names them all by it, and
// its DumpLogSegments fails on any other name). A name without one is a
// problem, whatever the kind, reported once the file was found readable
// (a missing file is reported as missing, and only that); what can be
// shown without the base offset is shown: a .log's and a .txnindex's
// entries hold absolute offsets, an index's are relative to it. It was a
// problem for an index but only a note for a .log, printed before the
// .log was opened.
func (d *dumper) segmentName(path string) (int64, bool) {
	base, err := baseOffsetOf(path)
	if err != nil {
		d.problemf("%s: %s", path, reasonAt(err, path))
		return 0, false
	}
	return base, true
}

// problemf reports a problem on stderr at once (after what stdout has so
// far, so the two streams read in order on a terminal) and counts it.
func (d *dumper) problemf(format string, args ...any) {
	d.problems++
	d.notef(format, args...)
}

// notef prints to stderr without counting a problem.
func (d *dumper) notef(format string, args ...any) {
	d.out.Flush()
	fmt.Fprintf(d.errw, format+"\n", args...)
}

func (d *dumper) dumpFile(path string) error {
	fmt.Fprintf(d.out, "Dumping %s\n", path)
	name := filepath.Base(path)
	suffix := ""
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		suffix = name[i:]
	}
	switch suffix {
	case logSuffix, kraftSnapSuffix:
		return d.dumpLog(path, suffix)
	case indexSuffix:
		return d.dumpIndex(path)
	case timeIndexSuffix:
		return d.dumpTimeIndex(path)
	case txnIndexSuffix:
		return d.dumpTxnIndex(path)
	case snapshotSuffix:
		// Skipped, but only if it is there: a mistyped or vanished path
		// exited 0 as if it had been seen.
		if _, err := os.Stat(path); err != nil {
			return err
		}
		d.notef("Skipping producer snapshot %s: not supported by segfs dump-log", path)
		return nil
	default:
		// Kafka ignores names it does not know; a directory or a path
		// that does not exist is a mistake to report, not a file to
		// skip with exit status 0 ("segfs dump-log DATA/orders-0").
		fi, err := os.Stat(path)
		switch {
		case err != nil:
			return err
		case fi.IsDir():
			return fmt.Errorf("is a directory: give the files in it (%s)", filepath.Join(path, "*.log"))
		}
		d.notef("Ignoring unknown file %s", path)
		return nil
	}
}

// dumpLog prints the batches of a .log (or KRaft .checkpoint) file,
// streaming them one at a time.
func (d *dumper) dumpLog(path, suffix string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return errors.New("not a regular file")
	}
	if suffix == logSuffix {
		// The batches hold absolute offsets: they are shown whatever
		// the name, which is still a problem (segmentName).
		if base, ok := d.segmentName(path); ok {
			fmt.Fprintf(d.out, "Log starting offset: %d\n", base)
		}
	} else if off, epoch, ok := parseKRaftSnapshotName(filepath.Base(path)); ok {
		fmt.Fprintf(d.out, "Snapshot end offset: %d, epoch: %d\n", off, epoch)
	}
	limit := min(fi.Size(), d.opts.maxBytes)
	sc := newBatchScanner(f, 0, limit)
	lastOffset := int64(-1)
	var gaps []string
	var line []byte
	legacyNoted := false
	for {
		b, err := sc.Next(true)
		if err == io.EOF {
			break
		}
		var te *tailError
		var fe *framingError
		switch {
		case errors.As(err, &te):
			// Kafka stops at a batch that does not fit and reports the rest
			// as invalid bytes, unless --max-bytes cut the file on purpose.
			if !d.opts.maxBytesSet {
				fmt.Fprintf(d.out, "Found %d invalid bytes at the end of %s\n", fi.Size()-te.Pos, filepath.Base(path))
				d.problemf("truncated batch at position %d in %s: %s", te.Pos, path, te.Reason)
			}
		case errors.As(err, &fe):
			fmt.Fprintf(d.out, "Found %d invalid bytes at the end of %s\n", fi.Size()-fe.Pos, filepath.Base(path))
			d.problemf("corrupt batch at position %d in %s: %s", fe.Pos, path, fe.Reason)
		case err != nil:
			return err
		}
		if err != nil {
			break
		}
		if b.Legacy {
			if !legacyNoted {
				// Kafka prints these without comment; segfs says once
				// that it will not serve them.
				legacyNoted = true
				d.notef("note: message format v%d (magic %d) at position %d in %s: %s", b.Header.Magic, b.Header.Magic, b.Pos, path, logstore.LegacyFormatReason)
			}
			d.dumpLegacy(&b, path, &line, &lastOffset, &gaps)
			continue
		}
		line = appendBatchLine(line[:0], &b)
		d.out.Write(line)
		if b.CRCErr != nil {
			// A batch that fails its CRC is never shown as data: its
			// records may be garbage.
			d.problemf("corrupt batch at position %d in %s: %s (records not shown)", b.Pos, path, reasonOf(b.CRCErr))
			continue
		}
		if !d.opts.deep {
			continue
		}
		h := &b.Header
		err = d.dec.Records(b.Raw, func(r *record.Record) error {
			if lastOffset != -1 && r.Offset != lastOffset+1 {
				gaps = append(gaps, fmt.Sprintf("  %d is followed by %d", lastOffset, r.Offset))
			}
			lastOffset = r.Offset
			line = d.appendRecordLine(line[:0], h, r)
			_, err := d.out.Write(line)
			return err
		})
		if err != nil {
			d.problemf("corrupt batch at position %d in %s: %s", b.Pos, path, reasonOf(err))
		}
	}
	if len(gaps) > 0 {
		// Not a problem: compaction leaves gaps on purpose.
		abs, _ := filepath.Abs(path)
		d.trailer = append(d.trailer, "Non-consecutive offsets in "+abs)
		d.trailer = append(d.trailer, gaps...)
	}
	return nil
}

// dumpLegacy prints a message of the old formats (magic 0 or 1) as
// Kafka's DumpLogSegments does: a batch line that starts "offset:", and
// with deep iteration the message itself as its one record. The messages
// a compressed one wraps are not shown: segfs does not decompress the old
// formats (magic 0 framed LZ4 in a way of its own), and says so.
func (d *dumper) dumpLegacy(b *batchAt, path string, line *[]byte, lastOffset *int64, gaps *[]string) {
	// The scanner yields only messages whose CRC checks out, so Kafka's
	// isvalid (size and CRC) is true; ParseLegacy fills the header fields
	// before it checks the key and value layout, which may still fail.
	m, err := record.ParseLegacy(b.Raw)
	*line = fmt.Appendf((*line)[:0], "offset: %d position: %d %s: %d size: %d magic: %d compresscodec: %s crc: %d isvalid: true\n",
		m.Offset, b.Pos, legacyTimestampType(&m), m.Timestamp, m.TotalSize(), m.Magic, m.Codec(), m.CRC)
	d.out.Write(*line)
	if !d.opts.deep {
		return
	}
	if err != nil {
		d.problemf("corrupt message at position %d in %s: %s", b.Pos, path, reasonOf(err))
		return
	}
	if m.Codec() != record.CodecNone {
		d.problemf("%s message at position %d in %s (message format v%d): the messages it wraps are not shown: segfs dump-log does not decompress message formats v0/v1",
			m.Codec(), b.Pos, path, m.Magic)
		return
	}
	if *lastOffset != -1 && m.Offset != *lastOffset+1 {
		*gaps = append(*gaps, fmt.Sprintf("  %d is followed by %d", *lastOffset, m.Offset))
	}
	*lastOffset = m.Offset
	dst := (*line)[:0]
	prefix := "| "
	if !d.opts.skipMeta {
		dst = fmt.Appendf(dst, "%soffset: %d %s: %d keySize: %d valueSize: %d", prefix, m.Offset, legacyTimestampType(&m), m.Timestamp, sizeOrNull(m.Key), sizeOrNull(m.Value))
		// Kafka's text for a legacy record, its stray brace included,
		// so that the output compares equal to kafka-dump-log's.
		dst = fmt.Appendf(dst, " isValid: true crc: %d}", m.CRC)
		prefix = " "
	}
	if d.opts.printData {
		if m.Key != nil {
			dst = append(dst, prefix+"key: "...)
			dst = appendJavaString(dst, m.Key)
		}
		if m.Value != nil {
			dst = append(dst, " payload: "...)
			dst = appendJavaString(dst, m.Value)
		}
	}
	*line = append(dst, '\n')
	d.out.Write(*line)
}

// legacyTimestampType is Kafka's TimestampType name for a message of the
// old formats: magic 0 has no timestamp.
func legacyTimestampType(m *record.LegacyMessage) string {
	switch {
	case m.Magic == record.MagicV0:
		return "NoTimestampType"
	case m.LogAppendTime():
		return "LogAppendTime"
	}
	return "CreateTime"
}

// parseKRaftSnapshotName parses "<20-digit end offset>-<10-digit
// epoch>.checkpoint".
func parseKRaftSnapshotName(name string) (offset int64, epoch int32, ok bool) {
	stem := strings.TrimSuffix(name, kraftSnapSuffix)
	o, e, found := strings.Cut(stem, "-")
	if !found {
		return 0, 0, false
	}
	off, err1 := strconv.ParseInt(o, 10, 64)
	ep, err2 := strconv.ParseInt(e, 10, 32)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return off, int32(ep), true
}

// timestampType is Kafka's TimestampType name for a v2 batch.
func timestampType(h *record.Header) string {
	if h.LogAppendTime() {
		return "LogAppendTime"
	}
	return "CreateTime"
}

// incrementSequence is Kafka's DefaultRecordBatch.incrementSequence:
// sequences wrap from MaxInt32 to 0.
func incrementSequence(seq, inc int32) int32 {
	if seq > math.MaxInt32-inc {
		return inc - (math.MaxInt32 - seq) - 1
	}
	return seq + inc
}

// appendBatchLine renders the batch line of kafka-dump-log (magic v2),
// fields in Kafka's order.
func appendBatchLine(dst []byte, b *batchAt) []byte {
	h := &b.Header
	lastSeq := int32(-1)
	if h.BaseSequence != -1 {
		lastSeq = incrementSequence(h.BaseSequence, h.LastOffsetDelta)
	}
	horizon := "OptionalLong.empty"
	if h.HasDeleteHorizon() {
		horizon = "OptionalLong[" + strconv.FormatInt(h.BaseTimestamp, 10) + "]"
	}
	dst = fmt.Appendf(dst, "baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d producerId: %d producerEpoch: %d partitionLeaderEpoch: %d isTransactional: %t isControl: %t deleteHorizonMs: %s",
		h.BaseOffset, h.LastOffset(), h.RecordCount, h.BaseSequence, lastSeq, h.ProducerID, h.ProducerEpoch,
		h.PartitionLeaderEpoch, h.Transactional(), h.Control(), horizon)
	dst = fmt.Appendf(dst, " position: %d %s: %d size: %d magic: %d compresscodec: %s crc: %d isvalid: %t\n",
		b.Pos, timestampType(h), h.MaxTimestamp, h.Size(), h.Magic, h.Codec(), h.CRC, b.CRCErr == nil)
	return dst
}

// controlTypeNames are Kafka's ControlRecordType names by type id.
var controlTypeNames = map[int16]string{
	0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER",
	4: "SNAPSHOT_FOOTER", 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS",
}

// appendRecordLine renders one record line of kafka-dump-log's deep
// iteration.
func (d *dumper) appendRecordLine(dst []byte, h *record.Header, r *record.Record) []byte {
	prefix := "| "
	if !d.opts.skipMeta {
		dst = fmt.Appendf(dst, "%soffset: %d %s: %d keySize: %d valueSize: %d", prefix, r.Offset, timestampType(h), r.Timestamp, sizeOrNull(r.Key), sizeOrNull(r.Value))
		prefix = " "
		seq := int32(-1)
		if h.BaseSequence != -1 {
			seq = incrementSequence(h.BaseSequence, r.OffsetDelta)
		}
		dst = fmt.Appendf(dst, " sequence: %d headerKeys: [", seq)
		for i, hd := range r.Headers {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, hd.Key...)
		}
		dst = append(dst, ']')
		if h.Control() {
			dst = appendControl(dst, r)
		}
	}
	if d.opts.printData && !h.Control() {
		if r.Key != nil {
			dst = append(dst, prefix+"key: "...)
			dst = appendJavaString(dst, r.Key)
		}
		if r.Value != nil {
			dst = append(dst, " payload: "...)
			dst = appendJavaString(dst, r.Value)
		}
	}
	return append(dst, '\n')
}

// appendControl renders a control record: the key is int16 version, int16
// type; a transaction marker's value is int16 version, int32 coordinator
// epoch. Kafka prints KRaft control records (types 2-6) as JSON of their
// schemas; segfs prints their type only, Kafka's fallback form.
func appendControl(dst []byte, r *record.Record) []byte {
	if len(r.Key) < 4 || int16(binary.BigEndian.Uint16(r.Key)) < 0 {
		return append(dst, " controlType: UNKNOWN(-1)"...)
	}
	typ := int16(binary.BigEndian.Uint16(r.Key[2:]))
	name, known := controlTypeNames[typ]
	if (typ == 0 || typ == 1) && len(r.Value) >= 6 {
		return fmt.Appendf(dst, " endTxnMarker: %s coordinatorEpoch: %d", name, int32(binary.BigEndian.Uint32(r.Value[2:])))
	}
	if !known {
		name = "UNKNOWN"
	}
	return fmt.Appendf(dst, " controlType: %s(%d)", name, typ)
}

func sizeOrNull(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

// appendJavaString appends b as Kafka's StringDecoder shows it (Java's
// new String(bytes, UTF_8)): valid UTF-8 as is, each invalid byte as
// U+FFFD.
func appendJavaString(dst, b []byte) []byte {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
			b = b[1:]
			continue
		}
		dst = append(dst, b[:n]...)
		b = b[n:]
	}
	return dst
}

// siblingLog summarizes the .log of an index file, or reports why it
// cannot (the index is then checked against its own rules only).
func (d *dumper) siblingLog(path string, base int64) *logSummary {
	logPath := siblingPath(path, logSuffix)
	sum, err := summarizeLog(logPath, base)
	if err != nil {
		d.problemf("%s: cannot check against its log: %v", path, err)
		return nil
	}
	return sum
}

// reportSanity prints the outcome of an --index-sanity-check.
func (d *dumper) reportSanity(path string, c indexCheck) {
	if len(c.Problems) == 0 {
		fmt.Fprintf(d.out, "%s passed sanity check.\n", path)
		if c.Untrimmed > 0 {
			d.notef("note: %s has %s after its %s (an active segment, or one not shut down cleanly)", path, plural(c.Untrimmed, "unused preallocated slot"), plural(c.Used, "entry"))
		}
		return
	}
	d.problemf("%s failed sanity check:", path)
	for _, p := range c.Problems {
		d.notef("  %s", p)
	}
}

func (d *dumper) dumpIndex(path string) error {
	raw, err := readRegular(path)
	if err != nil {
		return err
	}
	base, ok := d.segmentName(path)
	if !ok {
		return nil
	}
	// A file of zeros is a preallocated index with no entry yet (Kafka
	// would show its first slot as an entry at position 0).
	if len(raw)/index.OffsetEntrySize == 0 || !bytes.ContainsFunc(raw, func(r rune) bool { return r != 0 }) {
		fmt.Fprintf(d.out, "%s is empty.\n", path)
		return nil
	}
	// The log is read after the index, and the sanity check uses the
	// index as read before it: a running daemon writes a batch to the
	// .log before its index entry, so entries appended meanwhile are not
	// taken for entries "pointing past its log" (which failed every
	// --index-sanity-check of an active segment beside a writer).
	sum := d.siblingLog(path, base)
	if d.opts.sanityOnly {
		d.reportSanity(path, checkOffsetIndex(path, raw, base, sum))
		return nil
	}
	entries, _ := index.ParseOffsetEntries(raw, base)
	var mismatches []string
	for _, e := range entries {
		if sum != nil {
			pos := int64(e.Position)
			b, ok := sum.batchStartingAt(pos)
			switch {
			case pos >= sum.ValidBytes || e.Position < 0:
				mismatches = append(mismatches, fmt.Sprintf("  Index offset: %d, log offset: -1 (position %d is past the end of the log, %s)", e.Offset, pos, plural(sum.ValidBytes, "byte")))
			case !ok:
				mismatches = append(mismatches, fmt.Sprintf("  Index offset: %d, log offset: -1 (no batch starts at position %d)", e.Offset, pos))
			case b.LastOffset != e.Offset:
				mismatches = append(mismatches, fmt.Sprintf("  Index offset: %d, log offset: %d", e.Offset, b.LastOffset))
			}
		}
		if !d.opts.verifyOnly {
			fmt.Fprintf(d.out, "offset: %d position: %d\n", e.Offset, e.Position)
		}
	}
	if len(mismatches) > 0 {
		d.problems++
		abs, _ := filepath.Abs(path)
		d.trailer = append(d.trailer, "Mismatches in :"+abs)
		d.trailer = append(d.trailer, mismatches...)
	}
	return nil
}

func (d *dumper) dumpTimeIndex(path string) error {
	raw, err := readRegular(path)
	if err != nil {
		return err
	}
	base, ok := d.segmentName(path)
	if !ok {
		return nil
	}
	sum := d.siblingLog(path, base)
	if d.opts.sanityOnly {
		d.reportSanity(path, checkTimeIndex(path, raw, base, sum))
		return nil
	}
	entries, _ := index.ParseTimeEntries(raw, base)
	if !bytes.ContainsFunc(raw, func(r rune) bool { return r != 0 }) {
		entries = nil // preallocated, no entry yet
	}
	var mismatch, order, notFound []string
	prev := int64(-1) // Kafka's RecordBatch.NO_TIMESTAMP
	for _, e := range entries {
		if sum != nil {
			b, ok := sum.firstBatchEndingAtOrAfter(e.Offset)
			switch {
			case !ok:
				notFound = append(notFound, fmt.Sprintf("Indexed offset: %d, found log offset: -1", e.Offset))
			case b.LastOffset != e.Offset:
				notFound = append(notFound, fmt.Sprintf("Indexed offset: %d, found log offset: %d", e.Offset, b.LastOffset))
			default:
				// Kafka takes the max over the batch's records; a valid
				// batch's MaxTimestamp is that max.
				if b.MaxTimestamp != e.Timestamp {
					mismatch = append(mismatch, fmt.Sprintf("  Index timestamp: %d, log timestamp: %d", e.Timestamp, b.MaxTimestamp))
				}
				if prev >= e.Timestamp {
					order = append(order, fmt.Sprintf("  Index timestamp: %d, Previously indexed timestamp: %d", e.Timestamp, prev))
				}
			}
		}
		if !d.opts.verifyOnly {
			fmt.Fprintf(d.out, "timestamp: %d offset: %d\n", e.Timestamp, e.Offset)
		}
		prev = e.Timestamp
	}
	abs, _ := filepath.Abs(path)
	if len(mismatch) > 0 {
		d.problems++
		d.trailer = append(d.trailer, "Found timestamp mismatch in :"+abs)
		d.trailer = append(d.trailer, mismatch...)
	}
	if len(order) > 0 {
		d.problems++
		d.trailer = append(d.trailer, "Found out of order timestamp in :"+abs)
		d.trailer = append(d.trailer, order...)
	}
	if len(notFound) > 0 {
		d.problems++
		d.trailer = append(d.trailer, "The following indexed offsets are not found in the log.")
		d.trailer = append(d.trailer, notFound...)
	}
	return nil
}

// txnEntrySize is a .txnindex entry: int16 version, int64 producer id,
// first offset, last offset, last stable offset (KAFKA-FORMAT.md §9.8).
const txnEntrySize = 34

func (d *dumper) dumpTxnIndex(path string) error {
	raw, err := readRegular(path)
	if err != nil {
		return err
	}
	d.segmentName(path)
	be := binary.BigEndian
	for b := raw; len(b) >= txnEntrySize; b = b[txnEntrySize:] {
		fmt.Fprintf(d.out, "version: %d producerId: %d firstOffset: %d lastOffset: %d lastStableOffset: %d\n",
			int16(be.Uint16(b)), int64(be.Uint64(b[2:])), int64(be.Uint64(b[10:])), int64(be.Uint64(b[18:])), int64(be.Uint64(b[26:])))
	}
	if n := len(raw) % txnEntrySize; n != 0 {
		d.problemf("%s: %s after the last whole entry", path, plural(n, "trailing byte"))
	}
	return nil
}

// maxIndexFile bounds what dump-log reads of an index: Kafka caps
// segment.index.bytes at MaxInt32, so a larger file is not an index.
const maxIndexFile = math.MaxInt32

// readRegular reads a whole index file, refusing devices, directories and
// impossibly large files rather than reading without end.
func readRegular(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	if fi.Size() > maxIndexFile {
		return nil, fmt.Errorf("%d bytes is too large for an index file", fi.Size())
	}
	return os.ReadFile(path)
}
