package fs

import (
	"bytes"

	"github.com/segfs/segfs/logstore/record"
)

// lineAssembler rebuilds lines from the WRITE chunks of one file handle.
// The kernel splits a write(2) at page boundaries (buffered) and at
// max_write (always), so a chunk may end inside a line; the tail waits here
// until the rest arrives or the handle is released.
//
// It is not safe for concurrent use; the handle serialises it.
type lineAssembler struct {
	partial []byte // bytes of an unfinished line, never containing '\n'
	line    []byte // holds the line add completes; partial stays as it was

	// skipping is set after a line was refused as too long part-way: the
	// rest of that line (up to and including its '\n') must not become a
	// record of its own. The kernel answers the writer with a short write
	// for the chunks before the failing one and the writer retries from
	// the failing chunk, so the tail of the long line arrives again.
	skipping bool
}

// errLineTooLong reports that the current line exceeded the limit; the
// caller answers EMSGSIZE. Nothing of the chunk is kept.
type errLineTooLong struct{}

func (errLineTooLong) Error() string { return "line longer than max.message.bytes" }

// add takes one WRITE chunk. It returns the complete lines the chunk
// finishes ('\n'-terminated) for one AppendLinesAfter call, in two pieces:
// head, the line the chunk completes with the partial prefix before it
// (nil when no line was pending), and lines, the chunk's other complete
// lines (a slice of p, so a large chunk is never copied). It also returns
// the unfinished tail to keep once they are stored, and
// n, the number of bytes of p to acknowledge. n < len(p) is a short write:
// the chunk ends with the start of a line longer than limit, the kernel
// passes the short count on, and the writer resends the rest as a new
// chunk, which then fails on its own. errLineTooLong means the unfinished
// line grew past limit bytes or the chunk ends a line already refused.
//
// Nothing changes until the caller confirms with commit (after a
// successful append) or abort (after a failed one). The returned slices
// alias internal storage or p and are valid until the next call.
func (a *lineAssembler) add(p []byte, limit int) (head, lines, keep []byte, n int, err error) {
	if a.skipping {
		if bytes.IndexByte(p, '\n') >= 0 {
			// The tail of the refused line ends in this chunk. The
			// writer is told the chunk failed, so the lines after it
			// are not taken either: nothing of this write is stored.
			a.skipping = false
		}
		return nil, nil, nil, 0, errLineTooLong{}
	}
	last := bytes.LastIndexByte(p, '\n')
	if last < 0 {
		if len(a.partial)+len(p) > limit {
			// Skip the line's tail only if an earlier write() took its
			// start. A chunk that starts the line and alone exceeds the
			// limit fails its write(2) whole (no short count), so the
			// writer does not resend the rest of it: the next chunk is
			// a new line, which skipping would refuse too.
			a.skipping = len(a.partial) > 0
			a.partial = a.partial[:0]
			return nil, nil, nil, 0, errLineTooLong{}
		}
		return nil, nil, p, len(p), nil
	}
	if i := record.FirstLongLine(p[:last+1], len(a.partial), limit); i >= 0 {
		// A complete line in this chunk is too long. If it is the
		// first one and began in an earlier chunk, the unfinished line
		// is that line's start: drop it, and since the writer may
		// resend this chunk after a short write, skip its tail then.
		// A later line is this chunk's own: the unfinished line, whose
		// start an earlier write() acknowledged, stays as it was.
		if i == 0 {
			a.skipping = len(a.partial) > 0
			a.partial = a.partial[:0]
		}
		return nil, nil, nil, 0, errLineTooLong{}
	}
	n = len(p)
	keep = p[last+1:]
	if len(keep) > limit {
		// A line too long to keep starts after the last newline: take
		// the complete lines and let the writer resend the long one.
		n, keep = last+1, nil
	}
	if len(a.partial) == 0 {
		return nil, p[:last+1], keep, n, nil
	}
	// The completed line goes to a buffer of its own: if the append
	// fails (ENOSPC) and the writer resends this chunk, the start of the
	// line must still be here.
	first := bytes.IndexByte(p, '\n')
	a.line = append(append(a.line[:0], a.partial...), p[:first+1]...)
	return a.line, p[first+1 : last+1], keep, n, nil
}

// commit records that the lines returned by add are stored, and keeps rest
// (the unfinished tail of the chunk) as the new partial line.
func (a *lineAssembler) commit(head, lines, keep []byte) {
	if head != nil || lines != nil {
		a.partial = a.partial[:0]
	}
	a.partial = append(a.partial, keep...)
}

// abort records that the store refused the line the chunk completes
// (head): the unfinished line, its start, is dropped. skip says whether the
// refused line's tail may come again and must not become a record: a line
// too long, whose write(2) the kernel may have answered short (the chunks
// before it taken) so that the writer resends from this chunk. A line
// refused for what it says (no key on a compacted topic) is not skipped:
// its tail, resent alone, is refused for the same reason.
func (a *lineAssembler) abort(skip bool) {
	a.partial = a.partial[:0]
	a.skipping = skip
}

// pending reports whether an unfinished line waits.
func (a *lineAssembler) pending() bool { return len(a.partial) > 0 && !a.skipping }

// take returns the unfinished line with a '\n' appended and forgets it;
// nil if there is none.
func (a *lineAssembler) take() []byte {
	if !a.pending() {
		a.partial, a.line = nil, nil
		return nil
	}
	line := append(a.partial, '\n')
	a.partial, a.line = nil, nil
	return line
}
