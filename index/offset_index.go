package index

import (
	"fmt"
	"math"
)

// offsetWarmEntries is how many trailing entries Lookup searches first
// (1024 for 8-byte entries, as in Kafka).
const offsetWarmEntries = warmBytes / OffsetEntrySize

// OffsetIndex is a memory-mapped .index file. Safe for one writer and
// concurrent readers (readers see a consistent prefix of entries).
type OffsetIndex struct {
	m          mappedFile
	baseOffset int64
}

// OpenOffsetIndex opens or creates path. The entry count is the existing
// file length / 8 (Kafka's rule); the file is then extended (sparse) to
// maxBytes rounded down to a multiple of 8 when writable, so appends can
// go on. A read-only open maps the file as is.
//
// Open does not judge the entries: a zero-length file, a length that is not
// a multiple of 8 or garbage entries all open, and SanityCheck reports
// them. A writable open never shrinks the file below its counted entries.
func OpenOffsetIndex(path string, baseOffset int64, maxBytes int, writable bool) (*OffsetIndex, error) {
	x := &OffsetIndex{baseOffset: baseOffset}
	if err := openMapped(&x.m, path, OffsetEntrySize, maxBytes, writable); err != nil {
		return nil, err
	}
	return x, nil
}

// Path returns the file name the index was opened with.
func (x *OffsetIndex) Path() string { return x.m.path }

// BaseOffset returns the segment's base offset, which entries are relative to.
func (x *OffsetIndex) BaseOffset() int64 { return x.baseOffset }

// Entries returns the number of entries.
func (x *OffsetIndex) Entries() int { return int(x.m.entries.Load()) }

// MaxEntries returns the number of slots in the current mapping.
func (x *OffsetIndex) MaxEntries() int { return x.m.maxEntriesShared() }

// Full reports Entries() >= MaxEntries().
func (x *OffsetIndex) Full() bool { return x.Entries() >= x.MaxEntries() }

// Entry returns entry i (0 <= i < Entries()). Like a slice index, it
// panics when i is out of range.
func (x *OffsetIndex) Entry(i int) (e OffsetEntry) {
	x.m.mu.RLock()
	defer x.m.mu.RUnlock()
	if n := x.m.countLocked(); i < 0 || i >= n {
		panic(fmt.Sprintf("index: entry %d out of range [0, %d) in %s", i, n, x.m.path))
	}
	defer guardFaults().end(func() { e = OffsetEntry{Offset: x.baseOffset} })
	return decodeOffsetEntry(x.m.slot(i), x.baseOffset)
}

// LastOffset is the offset of the last entry, or BaseOffset if empty.
func (x *OffsetIndex) LastOffset() int64 {
	x.m.mu.RLock()
	defer x.m.mu.RUnlock()
	return x.lastOffsetLocked()
}

func (x *OffsetIndex) lastOffsetLocked() int64 {
	n := x.m.countLocked()
	if n == 0 {
		return x.baseOffset
	}
	return x.offsetAt(n - 1)
}

// offsetAt returns the absolute offset of entry i; the caller holds m.mu.
func (x *OffsetIndex) offsetAt(i int) int64 {
	return x.baseOffset + int64(offsetRel(x.m.slot(i)))
}

// Append adds (offset, position); offset must be > LastOffset (or the first
// entry) and representable relative to the base. ErrFull, ErrOrder.
//
// The position must also be non-negative and not below the previous
// entry's, since entries point at batch starts in an append-only log.
// An unrepresentable offset returns ErrOffsetOverflow.
func (x *OffsetIndex) Append(offset int64, position int32) (err error) {
	m := &x.m
	m.wmu.Lock()
	defer m.wmu.Unlock()
	m.mu.RLock()
	defer m.mu.RUnlock()
	defer guardFaults().end(func() { err = fmt.Errorf("index: %s: the mapping faulted (backing filesystem failed)", m.path) })
	switch {
	case m.closed:
		return ErrClosed
	case !m.writable:
		return ErrReadOnly
	}
	n := m.countLocked()
	if n >= m.maxEntries {
		return fmt.Errorf("%w: %s has %d of %d entries", ErrFull, m.path, n, m.maxEntries)
	}
	rel := offset - x.baseOffset
	if rel < 0 || rel > math.MaxInt32 {
		return fmt.Errorf("%w: offset %d, base offset %d in %s", ErrOffsetOverflow, offset, x.baseOffset, m.path)
	}
	if position < 0 {
		return fmt.Errorf("%w: position %d < 0 in %s", ErrOrder, position, m.path)
	}
	if n > 0 {
		last := decodeOffsetEntry(m.slot(n-1), x.baseOffset)
		if offset <= last.Offset {
			return fmt.Errorf("%w: offset %d <= last offset %d in %s", ErrOrder, offset, last.Offset, m.path)
		}
		if position < last.Position {
			return fmt.Errorf("%w: position %d < last position %d in %s", ErrOrder, position, last.Position, m.path)
		}
	}
	m.changed = true
	if err := m.reserveLocked(n); err != nil {
		return err
	}
	// The slot is past the published count, so no reader looks at it
	// until the Store below publishes it.
	putOffsetEntry(m.slot(n), int32(rel), position)
	m.entries.Store(int64(n + 1))
	return nil
}

// Lookup returns the largest entry with Offset <= target, or
// (BaseOffset, 0) if there is none.
func (x *OffsetIndex) Lookup(target int64) (e OffsetEntry) {
	x.m.mu.RLock()
	defer x.m.mu.RUnlock()
	defer guardFaults().end(func() { e = OffsetEntry{Offset: x.baseOffset} })
	i := floorSlot(x.m.countLocked(), offsetWarmEntries, target, offsetKeys{x.m.data, x.baseOffset})
	if i < 0 {
		return OffsetEntry{Offset: x.baseOffset}
	}
	return decodeOffsetEntry(x.m.slot(i), x.baseOffset)
}

// TruncateTo removes every entry with Offset >= offset.
func (x *OffsetIndex) TruncateTo(offset int64) {
	m := &x.m
	m.wmu.Lock()
	defer m.wmu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	// Entries are increasing, so the survivors are the slots below the
	// first one whose offset reaches the cut (Kafka's floor search then
	// "drop it too if equal" comes to the same).
	n := m.countLocked()
	i := floorSlot(n, offsetWarmEntries, offset, offsetKeys{m.data, x.baseOffset})
	if i >= 0 && x.offsetAt(i) < offset {
		i++
	}
	m.truncateCountLocked(max(i, 0))
}

// Reset removes every entry. It also forgets that the file had a partial
// trailing entry when opened, since the rebuilt index no longer has one.
func (x *OffsetIndex) Reset() {
	m := &x.m
	m.wmu.Lock()
	defer m.wmu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.truncateCountLocked(0)
	if m.writable {
		m.trailing = 0
	}
}

// SanityCheck applies Kafka's rules (§3.7) plus: entries strictly
// increasing and positions non-decreasing. Returns *CorruptError.
//
// Kafka's rules are a length that is a multiple of 8 and a last offset not
// below the base offset. The added rules catch what Kafka's miss, notably
// an untrimmed index left by a crash, whose zero-filled tail repeats the
// base offset ("entry N offset B <= previous ..."). Negative relative
// offsets and positions are reported as well.
func (x *OffsetIndex) SanityCheck() error {
	m := &x.m
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.checkTrailingLocked(); err != nil {
		return err
	}
	n := m.countLocked()
	if n == 0 {
		return nil
	}
	if last := x.offsetAt(n - 1); last < x.baseOffset {
		return corruptf(m.path, "last offset %d < base offset %d", last, x.baseOffset)
	}
	var prev OffsetEntry
	for i := 0; i < n; i++ {
		e := decodeOffsetEntry(m.slot(i), x.baseOffset)
		if p := OffsetEntryProblem(i, e, prev, x.baseOffset); p != "" {
			return corruptf(m.path, "%s", p)
		}
		prev = e
	}
	return nil
}

// OffsetEntryProblem says how entry i breaks the per-entry rules of
// SanityCheck, given the entry before it (prev, unused for i == 0), or
// returns "". It is exported for checkers of an index's used prefix (an
// untrimmed index of a live or crashed segment, whose zero tail
// SanityCheck would count as entries), so both apply the same rules.
func OffsetEntryProblem(i int, e, prev OffsetEntry, baseOffset int64) string {
	switch {
	case e.Offset < baseOffset:
		return fmt.Sprintf("entry %d offset %d < base offset %d", i, e.Offset, baseOffset)
	case e.Position < 0:
		return fmt.Sprintf("entry %d position %d < 0", i, e.Position)
	case i > 0 && e.Offset <= prev.Offset:
		return fmt.Sprintf("entry %d offset %d <= previous %d", i, e.Offset, prev.Offset)
	case i > 0 && e.Position < prev.Position:
		return fmt.Sprintf("entry %d position %d < previous %d", i, e.Position, prev.Position)
	}
	return ""
}

// CheckPositions reports the first entry whose position is not inside a
// log of logSize bytes. Entries point at batch starts, so a position at or
// past the end means the index outlived a truncation of its log. Returns
// *CorruptError.
func (x *OffsetIndex) CheckPositions(logSize int64) error {
	m := &x.m
	m.mu.RLock()
	defer m.mu.RUnlock()
	for i, n := 0, m.countLocked(); i < n; i++ {
		if e := decodeOffsetEntry(m.slot(i), x.baseOffset); int64(e.Position) >= logSize {
			return corruptf(m.path, "entry %d position %d >= log size %d (index pointing past its log)", i, e.Position, logSize)
		}
	}
	return nil
}

// CheckOffsets reports the first entry whose offset is at or past the log's
// next offset, i.e. an entry for a batch the log does not have. Returns
// *CorruptError.
func (x *OffsetIndex) CheckOffsets(nextOffset int64) error {
	m := &x.m
	m.mu.RLock()
	defer m.mu.RUnlock()
	for i, n := 0, m.countLocked(); i < n; i++ {
		if off := x.offsetAt(i); off >= nextOffset {
			return corruptf(m.path, "entry %d offset %d >= log next offset %d (index pointing past its log)", i, off, nextOffset)
		}
	}
	return nil
}

// Trim truncates the file to Entries()*8 and remaps it (on roll and close).
func (x *OffsetIndex) Trim() error { return x.m.trim() }

// Resize extends (or trims) the file to maxBytes rounded down to 8, keeping the entries.
// The file never shrinks below Entries()*8.
func (x *OffsetIndex) Resize(maxBytes int) error { return x.m.resize(maxBytes) }

// Seal trims the file to Entries()*8, makes it durable and closes its
// descriptor (when a segment rolls): the index stays readable through its
// mapping and is read-only from then on. Sealing twice is harmless.
func (x *OffsetIndex) Seal() error { return x.m.seal() }

// Flush msyncs the mapping (makes entries durable).
func (x *OffsetIndex) Flush() error { return x.m.flush() }

// Close trims (when writable) and unmaps.
func (x *OffsetIndex) Close() error { return x.m.close() }
