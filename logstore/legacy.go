package logstore

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/segfs/segfs/logstore/record"
)

// LegacyFormatReason says why segfs refuses a partition holding messages
// of format v0 or v1 (magic 0 or 1) and what to do about it; segfs verify
// reports the same.
const LegacyFormatReason = "segfs reads only magic 2 record batches (Kafka 0.11 and later): " +
	"serve the partition with Kafka until retention has deleted its old segments, " +
	"copy its records into a new topic with a Kafka client (MirrorMaker 2, kcat), " +
	"or remove the partition directory"

// LegacyFormatError is Open's error for a segment that holds messages of
// Kafka's old formats (record.PeekLegacy) with a valid CRC: a data
// directory of a broker that once ran with log.message.format.version <
// 0.11. Those bytes are not a torn write, so recovery must not truncate
// them, and segfs cannot serve them: the directory is refused, as it is
// for other data segfs cannot read, and left as it was.
type LegacyFormatError struct {
	Path  string // the .log file
	Pos   int64  // where the first such message starts
	Magic int8
}

func (e *LegacyFormatError) Error() string {
	return fmt.Sprintf("message format v%d (magic %d) at position %d in %s: %s", e.Magic, e.Magic, e.Pos, e.Path, LegacyFormatReason)
}

// legacyAt reports whether f holds, at pos, a legacy message whose CRC
// checks out before limit, as a *LegacyFormatError naming path. Anything
// else (a v2 batch, torn or damaged bytes, a legacy-looking header with a
// wrong CRC) is nil: the caller's rules for it stand. A read error is
// returned as it is.
func legacyAt(f *os.File, path string, pos, limit int64) error {
	magic, ok, err := record.LegacyCRCValid(f, pos, limit)
	if err != nil {
		return fmt.Errorf("reading %s at position %d: %w", path, pos, err)
	}
	if !ok {
		return nil
	}
	return &LegacyFormatError{Path: path, Pos: pos, Magic: magic}
}

// checkLegacySegments looks at the first message of every segment of a
// partition directory and fails with a *LegacyFormatError for one of the
// old formats, before Open changes anything in the data directory. A
// Kafka broker writes each segment in the format it was configured with
// when the segment was written, so the segments of the old format start
// with an old message (a format upgraded mid-segment too). Old messages
// after v2 batches in one segment (a format downgraded mid-segment) are
// caught by recovery instead, which refuses to truncate them (recover).
func checkLegacySegments(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		name := e.Name()
		if _, ok := parseSegmentBase(name, logSuffix); !ok || !e.Type().IsRegular() {
			continue
		}
		if err := checkLegacyFile(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

func checkLegacyFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var hdr [record.LegacyPeekSize]byte
	if n, _ := f.ReadAt(hdr[:], 0); n < len(hdr) {
		return nil // shorter than any message: empty, or a torn first write
	}
	if _, _, ok := record.PeekLegacy(hdr[:]); !ok {
		return nil // the common case: one small read, no stat
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return legacyAt(f, path, 0, fi.Size())
}
