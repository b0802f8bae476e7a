package record

import (
	"errors"
	"fmt"
	"strconv"
)

// Sentinels; wrapped by *CorruptError where a position is known.
var (
	ErrShort   = errors.New("record: truncated batch") // fewer bytes than the header or BatchLength claims
	ErrCorrupt = errors.New("record: corrupt batch")   // bad length, magic, CRC, varint, record layout
	ErrCodec   = errors.New("record: unknown compression codec")

	// ErrEmptyBatch is returned by Builder.Build when no record was added:
	// Kafka only writes record-less batches when compaction empties one,
	// and those keep offsets and timestamps a Builder cannot know.
	ErrEmptyBatch = errors.New("record: batch has no records")
)

// CorruptError says what is wrong and where (byte position inside the batch
// or the file, as set by the caller via Pos).
type CorruptError struct {
	Pos    int64  // position of the batch (or field) in the file; callers may add their base
	Reason string // human-readable reason
	Err    error  // ErrShort, ErrCorrupt or ErrCodec
	Cause  error  // a more specific reason, if any (ErrTooBig)
}

// Error reads like "corrupt batch at position 123: CRC mismatch (stored 1,
// computed 2)".
func (e *CorruptError) Error() string {
	return "corrupt batch at position " + strconv.FormatInt(e.Pos, 10) + ": " + e.Reason
}

// Unwrap returns the sentinel (and the cause, if set), so
// errors.Is(err, ErrCorrupt) works, and errors.Is(err, ErrTooBig) for a
// batch too large to decompress.
func (e *CorruptError) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Err, e.Cause}
	}
	return []error{e.Err}
}

// errorf builds a *CorruptError at pos wrapping sentinel.
func errorf(sentinel error, pos int, format string, args ...any) error {
	return &CorruptError{Pos: int64(pos), Reason: fmt.Sprintf(format, args...), Err: sentinel}
}

// itoa formats v in decimal for error reasons.
func itoa(v int64) string { return strconv.FormatInt(v, 10) }
