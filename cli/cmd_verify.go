package cli

// verify is an offline fsck for a data directory: it reads every batch of
// every segment and every index, and says what recovery would have to
// repair and what it could not. It only reads, takes no lock and so also
// works beside a running mount (the active segments may then change under
// it, which it says).

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/segfs/segfs/logstore"
	"github.com/segfs/segfs/logstore/record"
)

func verifyCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "verify",
		Usage:     "check every segment, index and checkpoint of a data directory",
		ArgsUsage: "DATA_DIR",
		Description: `Reads every partition of DATA_DIR: every batch of every segment (length,
magic, CRC-32C, record layout, offsets increasing within and across
segments), every .index and .timeindex (their own rules, and against their
.log: positions past the log end, offsets not found, timestamps), every
.txnindex a Kafka broker left (its rules; ABORT markers inside the segment), and the
checkpoint files (format; recovery points and log start offsets not past the
log end). Each problem is printed with its file and byte position.
Messages of Kafka's pre-0.11 formats (magic 0 or 1) are an error: segfs does
not serve them, and a mount that finds them refuses the data directory.

Errors make the exit status 1. Warnings are what recovery repairs on the next
mount without losing acknowledged data (a partial batch at the end of the
active segment, an untrimmed or missing index). verify only reads: it takes
no lock and can run beside a mount, whose active segments may change while
they are read. The directories of a topic creation or partition addition
that a stop interrupted (marked in segfs-topics.json) are not checked, only
named: the next start removes them.

Example:

   segfs verify ~/.segfs/data`,
		Action: runVerify,
	}
}

// verifier collects the findings of one run.
type verifier struct {
	out      io.Writer
	errors   int
	warnings int
	dec      record.Decoder
	// per-partition counts, reset by each partition
	pErrors, pWarnings int
	// indexBytes holds the indexes of an active segment, read before its
	// .log (checkSegment); indexes checks these rather than the files.
	indexBytes map[string][]byte
}

func (v *verifier) errorf(path string, format string, args ...any) {
	v.errors++
	v.pErrors++
	fmt.Fprintf(v.out, "error: %s: %s\n", path, fmt.Sprintf(format, args...))
}

// report prints a finding of the segment at path.
func (v *verifier) report(path string, f segmentFinding) {
	if f.Error {
		v.errorf(path, "%s", f.Text)
	} else {
		v.warnf(path, "%s", f.Text)
	}
}

func (v *verifier) warnf(path string, format string, args ...any) {
	v.warnings++
	v.pWarnings++
	fmt.Fprintf(v.out, "warning: %s: %s\n", path, fmt.Sprintf(format, args...))
}

func runVerify(c *ucli.Context) error {
	if err := rejectLateFlags(c.Args().Slice()); err != nil {
		return err
	}
	if c.NArg() != 1 {
		return errors.New("verify: want exactly one DATA_DIR (usage: segfs verify DATA_DIR)")
	}
	dataDir := c.Args().First()
	parts, err := listPartitions(dataDir)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	v := &verifier{out: c.App.Writer}
	if held, who := lockHolder(dataDir); held {
		fmt.Fprintf(c.App.ErrWriter, "note: %s is in use by %s; its active segments may change while verify reads them\n", dataDir, who)
	}
	// A topic whose creation, or partition addition, a stop interrupted
	// has directories the next start removes (the client got no answer
	// and retries): they are neither checked nor counted as gaps.
	interrupted, err := logstore.InterruptedPartitions(dataDir)
	if err != nil {
		topics := filepath.Join(dataDir, "segfs-topics.json")
		v.errorf(topics, "%s", reasonAt(err, topics))
	}
	kept := parts[:0:0]
	for _, p := range parts {
		from, ok := interrupted[p.Topic]
		if !ok || p.Partition < from {
			kept = append(kept, p)
			continue
		}
		what := fmt.Sprintf("an addition of partitions from %d on", from)
		if from == 0 {
			what = "the topic's creation"
		}
		v.warnf(p.Path, "not checked: a stop interrupted %s, and the next start removes this directory", what)
	}
	parts = kept
	recovery := v.checkpoint(filepath.Join(dataDir, "recovery-point-offset-checkpoint"))
	logStart := v.checkpoint(filepath.Join(dataDir, "log-start-offset-checkpoint"))
	// Kafka's other offset checkpoints share the format; each offset in
	// them must lie inside the log.
	otherNames := []string{"cleaner-offset-checkpoint", "replication-offset-checkpoint"}
	others := make([]offsetCheckpoint, len(otherNames))
	for i, name := range otherNames {
		others[i] = v.checkpoint(filepath.Join(dataDir, name))
	}
	known := map[string]bool{}
	var segs, batches int
	for _, p := range parts {
		known[p.Name] = true
		v.pErrors, v.pWarnings = 0, 0
		r := v.partition(p)
		segs += len(p.Segments)
		batches += r.batches
		start := r.firstBase
		// A checkpoint offset past the end of what verify read is damage
		// only if the log ends there: beside a running daemon it may
		// have rolled since the listing, and the offsets lie in segments
		// verify did not list.
		past := func(off int64) bool { return off > r.next && !grewPastListing(p) }
		if cp, ok := logStart[p.Name]; ok {
			if past(cp) {
				// Records the log start had passed were lost (a power
				// cut after a DeleteRecords was checkpointed): nothing
				// readable is missing, and the next start repairs it.
				v.warnf(filepath.Join(dataDir, "log-start-offset-checkpoint"), "%s: log start offset %d is past the log end offset %d: the next start deletes every segment and restarts the log empty at %d, as Kafka does", p.Name, cp, r.next, cp)
			}
			start = max(start, cp)
		}
		for i, cp := range others {
			if off, ok := cp[p.Name]; ok && past(off) {
				v.errorf(filepath.Join(dataDir, otherNames[i]), "%s: offset %d is past the log end offset %d", p.Name, off, r.next)
			}
		}
		if rp, ok := recovery[p.Name]; ok && past(rp) {
			v.errorf(filepath.Join(dataDir, "recovery-point-offset-checkpoint"), "%s: recovery point %d is past the log end offset %d: data that was flushed is missing", p.Name, rp, r.next)
		}
		status := "ok"
		if v.pErrors+v.pWarnings > 0 {
			status = plural(v.pErrors, "error") + ", " + plural(v.pWarnings, "warning")
		}
		fmt.Fprintf(v.out, "%s: %s (%s, %s, log start %d, log end %d, %s)\n", p.Name, status, plural(len(p.Segments), "segment"), plural(r.batches, "batch"), start, r.next, plural(r.bytes, "byte"))
	}
	v.partitionGaps(dataDir, parts)
	for _, cp := range []struct {
		name string
		m    offsetCheckpoint
	}{{"recovery-point-offset-checkpoint", recovery}, {"log-start-offset-checkpoint", logStart}} {
		for tp := range cp.m {
			if !known[tp] {
				v.warnf(filepath.Join(dataDir, cp.name), "entry for %s, which has no directory", tp)
			}
		}
	}
	fmt.Fprintf(v.out, "verified %s, %s, %s: %s, %s\n", plural(len(parts), "partition"), plural(segs, "segment"), plural(batches, "batch"), plural(v.errors, "error"), plural(v.warnings, "warning"))
	if v.errors > 0 {
		return fmt.Errorf("verify: %s found in %s", plural(v.errors, "error"), dataDir)
	}
	return nil
}

// grewPastListing reports whether p's directory holds a segment after the
// last one verify listed: a running daemon rolled since, so the log goes
// on past what verify read (and the last segment listed may have been
// compacted, losing its last records, since it closed).
func grewPastListing(p *partitionDir) bool {
	segs, err := listSegments(p.Path)
	if err != nil {
		return false
	}
	last := int64(-1)
	if n := len(p.Segments); n > 0 {
		last = p.Segments[n-1].Base
	}
	for _, s := range segs {
		if s.Log != "" && s.Base > last {
			return true
		}
	}
	return false
}

// partitionGaps reports a topic whose partition directories are not
// numbered 0..N-1 (parts is sorted by topic and partition). segfs mount
// refuses such a data directory, so verify must not call it sound.
func (v *verifier) partitionGaps(dataDir string, parts []*partitionDir) {
	for i := 0; i < len(parts); {
		j := i
		for j < len(parts) && parts[j].Topic == parts[i].Topic {
			j++
		}
		for k := i; k < j; k++ {
			if want := int32(k - i); parts[k].Partition != want {
				var found []string
				for _, p := range parts[i:min(j, i+4)] {
					found = append(found, p.Name)
				}
				if j-i > 4 {
					found = append(found, fmt.Sprintf("... (%d in all)", j-i))
				}
				v.errorf(dataDir, "topic %s: partition directory %s-%d is missing (found %s): segfs mount refuses a topic whose partitions are not numbered from 0 without gaps",
					parts[i].Topic, parts[i].Topic, want, strings.Join(found, ", "))
				break
			}
		}
		i = j
	}
}

// checkpoint reads an offset checkpoint, reporting a malformed one.
func (v *verifier) checkpoint(path string) offsetCheckpoint {
	cp, err := readOffsetCheckpoint(path)
	if err != nil {
		v.errorf(path, "%s", reasonAt(err, path))
		return offsetCheckpoint{}
	}
	return cp
}

func trimPathPrefix(err error, path string) string {
	return strings.TrimPrefix(err.Error(), path+": ")
}

// partitionResult summarizes one partition for the report.
type partitionResult struct {
	firstBase int64 // base offset of the first segment
	next      int64 // log end offset
	batches   int
	bytes     int64
}

func (v *verifier) partition(p *partitionDir) partitionResult {
	var r partitionResult
	v.partitionMetadata(p)
	for _, path := range strayLogs(p.Path) {
		// The mount refuses to load the partition (logstore/load.go).
		v.errorf(path, "%s", logstore.StrayLogReason(path))
	}
	prevLast := int64(-1) // last offset of the previous segment
	for i := range p.Segments {
		s := &p.Segments[i]
		last := i == len(p.Segments)-1
		if i == 0 {
			r.firstBase = s.Base
		}
		if s.Log == "" {
			for _, f := range []string{s.Index, s.TimeIndex} {
				if f != "" {
					v.warnf(f, "index without a .log (Kafka deletes such files on load)")
				}
			}
			continue
		}
		sum, batches, read := v.checkSegment(s, last)
		if sum == nil {
			// Deleted by a running daemon's cleaner since the listing: a
			// merged segment read before it may already cover its offsets.
			continue
		}
		if !read {
			// The .log could not be opened (reported): checking its
			// indexes against an empty log would only add false errors.
			r.next = max(r.next, s.Base)
			continue
		}
		if s.Base <= prevLast {
			v.errorf(s.Log, "segment base offset %d <= last offset %d of the previous segment", s.Base, prevLast)
		}
		r.batches += batches
		r.bytes += sum.Size
		r.next = sum.NextOffset
		if len(sum.Batches) > 0 {
			prevLast = sum.Batches[len(sum.Batches)-1].LastOffset
		}
	}
	if len(p.Segments) == 0 {
		r.next = 0
	}
	v.leaderEpochs(p, r.next)
	return r
}

// verifyLogRead, when set (by tests), runs after verify has read a .log:
// where a running daemon's appends land in the real race.
var verifyLogRead func(path string)

// checkSegment reads a segment and checks its indexes against it. A
// running daemon changes segments while verify reads them: the active
// segment grows, so an index read after the log can hold entries for
// batches appended in between, which looked like an index "pointing past
// its log"; and the cleaner swaps a compacted segment in at the base
// offset of a closed one, so verify can read the old .log and then the new
// .index, whose entries point between the old file's batches ("no batch
// starts at position P"). When a segment shows errors and the file at its
// .log path is no longer the one read (another size, another file, or
// none), the check is run again on the new state (a few times), and only
// the last run's findings are reported. An active segment's indexes are
// read before its .log: the daemon writes a batch to the .log before its
// index entries, so every entry read first points at a batch the later
// read of the .log finds. Retrying alone did not do for growth: under a
// steady writer (`tail -F app.log >> data`) every attempt raced, and
// verify beside the mount reported "index pointing past its log" and
// exited 1 about one run in five.
func (v *verifier) checkSegment(s *segmentFiles, active bool) (sum *logSummary, batches int, read bool) {
	for attempt := 1; ; attempt++ {
		var buf bytes.Buffer
		run := &verifier{out: &buf}
		if active {
			run.indexBytes = map[string][]byte{}
			for _, path := range []string{s.Index, s.TimeIndex} {
				if path == "" {
					continue
				}
				if b, err := os.ReadFile(path); err == nil {
					if b == nil {
						b = []byte{} // nil would mean "read the file"
					}
					run.indexBytes[path] = b
				}
			}
		}
		sum, batches, read = run.segment(s, active)
		if sum != nil && read {
			run.indexes(s, sum, active)
		}
		retry := false
		if run.errors > 0 && sum != nil && sum.file != nil && attempt < 5 {
			fi, err := os.Stat(s.Log)
			retry = errors.Is(err, os.ErrNotExist) ||
				err == nil && (fi.Size() != sum.Size || !os.SameFile(fi, sum.file))
		}
		if !retry {
			v.out.Write(buf.Bytes())
			v.errors += run.errors
			v.pErrors += run.errors
			v.warnings += run.warnings
			v.pWarnings += run.warnings
			return sum, batches, read
		}
	}
}

// segment reads every batch of one .log, checking framing, CRC, record
// layout and offsets, and returns the header summary the index checks use.
// read is false when the file could not be opened at all.
func (v *verifier) segment(s *segmentFiles, active bool) (sum *logSummary, batches int, read bool) {
	sum = &logSummary{NextOffset: s.Base}
	f, err := os.Open(s.Log)
	if errors.Is(err, os.ErrNotExist) {
		// Listed a moment ago: retention or compaction of the daemon
		// serving this directory renamed it (verify may run beside a
		// mount). What is gone is no longer part of the log.
		v.warnf(s.Log, "deleted while being checked (retention or compaction of a running daemon): skipped")
		return nil, 0, false
	}
	if err != nil {
		v.errorf(s.Log, "cannot read it: %s", pathErrReason(err))
		return sum, 0, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		v.errorf(s.Log, "cannot read it: %s", pathErrReason(err))
		return sum, 0, false
	}
	sum.Size, sum.file = fi.Size(), fi
	sc := newBatchScanner(f, 0, fi.Size())
	prevLast := s.Base - 1
	n := 0
	// Messages of the old formats (magic 0 or 1): reported once, at the
	// first, with their count, after the scan.
	legacyPos, legacyMagic, legacyCount := int64(-1), int8(0), 0
	for {
		b, err := sc.Next(true)
		if err == io.EOF {
			break
		}
		if err != nil {
			v.report(s.Log, scanFinding(err, active, fi.Size()))
			break
		}
		n++
		h := &b.Header
		if b.Legacy {
			if legacyCount == 0 {
				legacyPos, legacyMagic = b.Pos, h.Magic
			}
			legacyCount++
		}
		for _, f := range batchFindings(&b, &v.dec, s.Base, prevLast) {
			v.report(s.Log, f)
		}
		prevLast = max(prevLast, h.LastOffset())
		sum.Batches = append(sum.Batches, logBatch{Pos: b.Pos, LastOffset: h.LastOffset(), MaxTimestamp: h.MaxTimestamp})
		sum.NextOffset = h.NextOffset()
	}
	sum.ValidBytes = sc.Pos()
	if legacyCount > 0 {
		v.errorf(s.Log, "position %d: message format v%d (magic %d), %s of format v0/v1 in this segment: %s",
			legacyPos, legacyMagic, legacyMagic, plural(legacyCount, "message"), logstore.LegacyFormatReason)
	}
	if verifyLogRead != nil {
		verifyLogRead(s.Log)
	}
	return sum, n, true
}

// reasonAt is err for a message that names path before it, without path
// again: dump-log printed "F: open F: no such file or directory" and "F:
// F: file name does not start with a base offset", verify "error: F: read
// F: is a directory". A failed read of path is "cannot read it: open: ...",
// as verify says of a .log.
func reasonAt(err error, path string) string {
	if pe, ok := err.(*os.PathError); ok && pe.Path == path {
		return "cannot read it: " + pe.Op + ": " + pe.Err.Error()
	}
	return trimPathPrefix(err, path)
}

// pathErrReason is err without the path, which the report line already
// names: "open: permission denied".
func pathErrReason(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + pe.Err.Error()
	}
	return err.Error()
}

// indexes checks a segment's .index and .timeindex against their rules and
// the log summary.
func (v *verifier) indexes(s *segmentFiles, sum *logSummary, active bool) {
	for _, ix := range []struct {
		path  string
		check func(string, []byte, int64, *logSummary) indexCheck
		kind  string
	}{{s.Index, checkOffsetIndex, indexSuffix}, {s.TimeIndex, checkTimeIndex, timeIndexSuffix}} {
		if ix.path == "" {
			if len(sum.Batches) > 0 {
				v.warnf(siblingPath(s.Log, ix.kind), "missing: the next mount rebuilds it from the .log")
			}
			continue
		}
		if _, err := os.Stat(ix.path); errors.Is(err, os.ErrNotExist) {
			v.warnf(ix.path, "deleted while being checked (retention or compaction of a running daemon): skipped")
			continue
		}
		c := ix.check(ix.path, v.indexBytes[ix.path], s.Base, sum)
		for _, p := range c.Problems {
			v.errorf(ix.path, "%s", p)
		}
		if c.Untrimmed > 0 && !active {
			v.warnf(ix.path, "%s after %s: not trimmed at roll (unclean shutdown?)", plural(c.Untrimmed, "unused preallocated slot"), plural(c.Used, "entry"))
		}
	}
	if s.TxnIndex != "" {
		v.txnIndex(s.TxnIndex, s.Base, sum)
	}
}

// txnIndex checks a .txnindex (aborted transactions, in a data directory
// copied from Kafka, or written for an ABORT marker): Kafka's rules, and
// each entry's ABORT marker inside the segment. A file that breaks them is
// a warning, as the other derived indexes are: the next mount rebuilds it
// from the log's ABORT markers, as Kafka's recovery does (it was an error
// while the daemon ignored such a file). A marker past the log's end is a
// warning: the next mount drops such entries (a truncated tail).
func (v *verifier) txnIndex(path string, base int64, sum *logSummary) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		v.warnf(path, "deleted while being checked (retention or compaction of a running daemon): skipped")
		return
	}
	if err != nil {
		v.errorf(path, "%s", reasonAt(err, path))
		return
	}
	txns, err := logstore.ParseTxnIndex(b, base)
	if err != nil {
		v.warnf(path, "%v (the next mount rebuilds this index from the log's ABORT markers)", err)
		return
	}
	for i, t := range txns {
		if t.LastOffset >= sum.NextOffset {
			v.warnf(path, "entry %d (position %d): ABORT marker at offset %d is past the log's end %d: the next mount drops it", i, i*txnEntrySize, t.LastOffset, sum.NextOffset)
		}
	}
}

// partitionMetadata checks partition.metadata (KAFKA-FORMAT.md §10.3):
// "version: 0\ntopic_id: <22-char URL-safe base64 UUID>".
func (v *verifier) partitionMetadata(p *partitionDir) {
	path := filepath.Join(p.Path, "partition.metadata")
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return // written before the first append; an empty partition may lack it
	}
	if err != nil {
		v.errorf(path, "%s", reasonAt(err, path))
		return
	}
	fields := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		k, val, ok := strings.Cut(l, ":")
		if !ok {
			v.errorf(path, "malformed line %q", l)
			return
		}
		fields[strings.TrimSpace(k)] = strings.TrimSpace(val)
	}
	if ver, err := strconv.Atoi(fields["version"]); err != nil || ver < 0 {
		v.errorf(path, "bad version %q", fields["version"])
	}
	id, err := base64.RawURLEncoding.DecodeString(fields["topic_id"])
	if err != nil || len(id) != 16 || string(id) == string(make([]byte, 16)) {
		v.errorf(path, "bad topic_id %q (want a non-zero UUID in 22 characters of URL-safe base64)", fields["topic_id"])
	}
}

// leaderEpochs checks leader-epoch-checkpoint (KAFKA-FORMAT.md §10.2):
// version 0, a count, then "epoch startOffset" lines ascending in both.
// An entry starting past the log end is a warning: a power cut that took
// the unflushed records of an epoch leaves it (the entry is written
// before the epoch's first batch), and the next start drops it, as
// Kafka's loader does, and leads a later epoch.
func (v *verifier) leaderEpochs(p *partitionDir, logEnd int64) {
	path := filepath.Join(p.Path, "leader-epoch-checkpoint")
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(data) == 0) {
		return
	}
	if err != nil {
		v.errorf(path, "%s", reasonAt(err, path))
		return
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if lines[0] != "0" || len(lines) < 2 {
		v.errorf(path, "bad header: want version 0 and an entry count")
		return
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n != len(lines)-2 {
		v.errorf(path, "says %q entries, has %d", lines[1], len(lines)-2)
		return
	}
	prevEpoch, prevOff := int64(-1), int64(-1)
	for i, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) != 2 {
			v.errorf(path, "line %d: want \"epoch startOffset\", got %q", i+3, l)
			return
		}
		ep, err1 := strconv.ParseInt(f[0], 10, 32)
		off, err2 := strconv.ParseInt(f[1], 10, 64)
		switch {
		case err1 != nil || err2 != nil:
			v.errorf(path, "line %d: bad number in %q", i+3, l)
			return
		case ep <= prevEpoch || off < prevOff:
			v.errorf(path, "line %d: epoch %d at offset %d does not follow epoch %d at offset %d", i+3, ep, off, prevEpoch, prevOff)
		case off > logEnd:
			v.warnf(path, "line %d: epoch %d starts at offset %d, past the log end offset %d: the next start drops it, as Kafka does", i+3, ep, off, logEnd)
		}
		prevEpoch, prevOff = ep, off
	}
}
