package index

import (
	"fmt"
	"math"
)

// timeWarmEntries is how many trailing entries Lookup searches first (682
// for 12-byte entries, as in Kafka).
const timeWarmEntries = warmBytes / TimeEntrySize

// TimeIndex is a memory-mapped .timeindex file; same rules as OffsetIndex.
type TimeIndex struct {
	m          mappedFile
	baseOffset int64
}

// OpenTimeIndex opens or creates path (entry count = file length / 12).
// Writable opens extend the file to maxBytes rounded down to 12, exactly
// like OpenOffsetIndex.
func OpenTimeIndex(path string, baseOffset int64, maxBytes int, writable bool) (*TimeIndex, error) {
	x := &TimeIndex{baseOffset: baseOffset}
	if err := openMapped(&x.m, path, TimeEntrySize, maxBytes, writable); err != nil {
		return nil, err
	}
	return x, nil
}

// Path returns the file name the index was opened with.
func (x *TimeIndex) Path() string { return x.m.path }

// BaseOffset returns the segment's base offset, which entries are relative to.
func (x *TimeIndex) BaseOffset() int64 { return x.baseOffset }

// Entries returns the number of entries.
func (x *TimeIndex) Entries() int { return int(x.m.entries.Load()) }

// MaxEntries returns the number of slots in the current mapping.
func (x *TimeIndex) MaxEntries() int { return x.m.maxEntriesShared() }

// Full reports Entries() >= MaxEntries()-1 (the last slot is kept for the
// entry written at roll).
func (x *TimeIndex) Full() bool { return x.Entries() >= x.MaxEntries()-1 }

// Entry returns entry i (0 <= i < Entries()). Like a slice index, it
// panics when i is out of range.
func (x *TimeIndex) Entry(i int) TimeEntry {
	x.m.mu.RLock()
	defer x.m.mu.RUnlock()
	if n := x.m.countLocked(); i < 0 || i >= n {
		panic(fmt.Sprintf("index: entry %d out of range [0, %d) in %s", i, n, x.m.path))
	}
	return decodeTimeEntry(x.m.slot(i), x.baseOffset)
}

// Last returns the last entry, or (-1, BaseOffset) if empty.
func (x *TimeIndex) Last() (e TimeEntry) {
	x.m.mu.RLock()
	defer x.m.mu.RUnlock()
	defer guardFaults().end(func() { e = TimeEntry{Timestamp: -1, Offset: x.baseOffset} })
	return x.lastLocked()
}

func (x *TimeIndex) lastLocked() TimeEntry {
	n := x.m.countLocked()
	if n == 0 {
		return TimeEntry{Timestamp: -1, Offset: x.baseOffset}
	}
	return decodeTimeEntry(x.m.slot(n-1), x.baseOffset)
}

// offsetAt returns the absolute offset of entry i; the caller holds m.mu.
func (x *TimeIndex) offsetAt(i int) int64 { return x.baseOffset + int64(timeRel(x.m.slot(i))) }

// MaybeAppend appends (ts, offset) only if ts > Last().Timestamp; the
// offset must not go backwards. skipFullCheck is used for the final entry
// at roll/close. ErrFull, ErrOrder.
//
// An equal timestamp is a silent no-op (Kafka re-offers the same maximum
// at every index point); a smaller one, or a smaller offset, is ErrOrder.
// Even with skipFullCheck a write needs a free slot. An offset that cannot
// be stored relative to the base returns ErrOffsetOverflow.
func (x *TimeIndex) MaybeAppend(ts, offset int64, skipFullCheck bool) (err error) {
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
	if !skipFullCheck && n >= m.maxEntries-1 {
		return fmt.Errorf("%w: %s has %d of %d entries (last slot reserved)", ErrFull, m.path, n, m.maxEntries)
	}
	last := x.lastLocked()
	if n > 0 {
		if offset < last.Offset {
			return fmt.Errorf("%w: offset %d < last offset %d in %s", ErrOrder, offset, last.Offset, m.path)
		}
		if ts < last.Timestamp {
			return fmt.Errorf("%w: timestamp %d < last timestamp %d in %s", ErrOrder, ts, last.Timestamp, m.path)
		}
	}
	if ts <= last.Timestamp {
		return nil
	}
	if n >= m.maxEntries {
		return fmt.Errorf("%w: %s has %d of %d entries", ErrFull, m.path, n, m.maxEntries)
	}
	rel := offset - x.baseOffset
	if rel < 0 || rel > math.MaxInt32 {
		return fmt.Errorf("%w: offset %d, base offset %d in %s", ErrOffsetOverflow, offset, x.baseOffset, m.path)
	}
	m.changed = true
	if err := m.reserveLocked(n); err != nil {
		return err
	}
	// The slot is past the published count, so no reader looks at it
	// until the Store below publishes it.
	putTimeEntry(m.slot(n), ts, int32(rel))
	m.entries.Store(int64(n + 1))
	return nil
}

// Lookup returns the largest entry with Timestamp <= target, or
// (-1, BaseOffset) if there is none.
func (x *TimeIndex) Lookup(target int64) (e TimeEntry) {
	x.m.mu.RLock()
	defer x.m.mu.RUnlock()
	defer guardFaults().end(func() { e = TimeEntry{Timestamp: -1, Offset: x.baseOffset} })
	i := floorSlot(x.m.countLocked(), timeWarmEntries, target, timestampKeys{x.m.data})
	if i < 0 {
		return TimeEntry{Timestamp: -1, Offset: x.baseOffset}
	}
	return decodeTimeEntry(x.m.slot(i), x.baseOffset)
}

// TruncateTo removes every entry with Offset >= offset.
func (x *TimeIndex) TruncateTo(offset int64) {
	m := &x.m
	m.wmu.Lock()
	defer m.wmu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	// Offsets never decrease but may repeat, so find the first slot whose
	// offset reaches the cut rather than a floor (which could land on any
	// of several equal entries).
	lo, hi := 0, m.countLocked()
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if x.offsetAt(mid) < offset {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	m.truncateCountLocked(lo)
}

// Reset removes every entry. It also forgets that the file had a partial
// trailing entry when opened, since the rebuilt index no longer has one.
func (x *TimeIndex) Reset() {
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

// SanityCheck applies Kafka's rules (§4.5) plus non-decreasing offsets and
// strictly increasing timestamps. Returns *CorruptError.
//
// Kafka's rules are a length that is a multiple of 12, a last timestamp not
// below the first and a last offset not below the base offset. The added
// rules catch an untrimmed index left by a crash, whose zero-filled tail
// repeats timestamp 0 ("entry N timestamp 0 <= previous ..."), and negative
// relative offsets.
func (x *TimeIndex) SanityCheck() error {
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
	first, last := decodeTimeEntry(m.slot(0), x.baseOffset), decodeTimeEntry(m.slot(n-1), x.baseOffset)
	if last.Timestamp < first.Timestamp {
		return corruptf(m.path, "last timestamp %d < first timestamp %d", last.Timestamp, first.Timestamp)
	}
	if last.Offset < x.baseOffset {
		return corruptf(m.path, "last offset %d < base offset %d", last.Offset, x.baseOffset)
	}
	var prev TimeEntry
	for i := 0; i < n; i++ {
		e := decodeTimeEntry(m.slot(i), x.baseOffset)
		if p := TimeEntryProblem(i, e, prev, x.baseOffset); p != "" {
			return corruptf(m.path, "%s", p)
		}
		prev = e
	}
	return nil
}

// TimeEntryProblem says how entry i breaks the per-entry rules of
// SanityCheck, given the entry before it (prev, unused for i == 0), or
// returns "": shared with checkers of an untrimmed index's used prefix,
// like OffsetEntryProblem.
func TimeEntryProblem(i int, e, prev TimeEntry, baseOffset int64) string {
	switch {
	case e.Offset < baseOffset:
		return fmt.Sprintf("entry %d offset %d < base offset %d", i, e.Offset, baseOffset)
	case i > 0 && e.Timestamp <= prev.Timestamp:
		return fmt.Sprintf("entry %d timestamp %d <= previous %d", i, e.Timestamp, prev.Timestamp)
	case i > 0 && e.Offset < prev.Offset:
		return fmt.Sprintf("entry %d offset %d < previous %d", i, e.Offset, prev.Offset)
	}
	return ""
}

// CheckOffsets reports the first entry whose offset is at or past the log's
// next offset, i.e. a time-index entry for a batch the log does not have.
// Returns *CorruptError.
func (x *TimeIndex) CheckOffsets(nextOffset int64) error {
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

// Trim truncates the file to Entries()*12 and remaps it (on roll and close).
func (x *TimeIndex) Trim() error { return x.m.trim() }

// Resize extends (or trims) the file to maxBytes rounded down to 12,
// keeping the entries: the file never shrinks below Entries()*12.
func (x *TimeIndex) Resize(maxBytes int) error { return x.m.resize(maxBytes) }

// Seal trims the file to Entries()*12, makes it durable and closes its
// descriptor (when a segment rolls): the index stays readable through its
// mapping and is read-only from then on. Sealing twice is harmless.
func (x *TimeIndex) Seal() error { return x.m.seal() }

// Flush msyncs the mapping (makes entries durable).
func (x *TimeIndex) Flush() error { return x.m.flush() }

// Close trims (when writable) and unmaps.
func (x *TimeIndex) Close() error { return x.m.close() }
