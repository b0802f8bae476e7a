package index

import (
	"errors"
	"fmt"
)

var (
	// ErrFull is returned by Append when the index has no free slot.
	ErrFull = errors.New("index: full")
	// ErrCorrupt is wrapped by *CorruptError from SanityCheck and Open.
	ErrCorrupt = errors.New("index: corrupt")
	// ErrOrder is returned by Append for an entry that does not increase.
	ErrOrder = errors.New("index: entry out of order")
	// ErrOffsetOverflow is returned by Append for an offset that cannot be
	// stored relative to the base offset (0 <= offset-base <= MaxInt32,
	// KAFKA-FORMAT.md §3.6). The log store avoids it by rolling first.
	ErrOffsetOverflow = errors.New("index: offset not representable relative to base offset")
	// ErrReadOnly is returned by operations that would modify an index
	// opened read-only.
	ErrReadOnly = errors.New("index: read-only")
	// ErrClosed is returned by operations on a closed index.
	ErrClosed = errors.New("index: closed")
)

// CorruptError names the index file and what is wrong with it.
type CorruptError struct {
	Path   string
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("index: corrupt index file %s: %s", e.Path, e.Reason)
}

// Unwrap lets errors.Is(err, ErrCorrupt) match every CorruptError.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

func corruptf(path, format string, args ...any) error {
	return &CorruptError{Path: path, Reason: fmt.Sprintf(format, args...)}
}
