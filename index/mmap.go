package index

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// maxFileEntries bounds the entry count of a file we agree to map. No valid
// index holds more than MaxInt32+1 entries (relative offsets are distinct
// non-negative int32s), so a larger file is garbage and mapping it would
// only waste address space.
const maxFileEntries = math.MaxInt32 + 1

// mappedFile is the memory-mapped array of fixed-size entries shared by
// OffsetIndex and TimeIndex. It knows nothing about what an entry means.
//
// Lock order: wmu before mu.
type mappedFile struct {
	path      string
	entrySize int
	writable  bool

	// wmu serialises the mutators (append, truncate, reset, trim, resize,
	// close) so that a stray second writer cannot interleave with the
	// first; readers never take it.
	wmu sync.Mutex

	// mu guards the mapping. Readers hold it shared while they touch
	// data; unmap, remap and overwriting published entries hold it
	// exclusively. Appends hold it shared, because they only write the
	// slot past the published count, which no reader looks at.
	mu         sync.RWMutex
	f          *os.File
	data       []byte // nil when the mapped length is zero
	maxEntries int
	closed     bool

	// trailing is the number of bytes past the last whole entry when the
	// file was opened. Kafka reports such a file as corrupt; a writable
	// open extends the file to a multiple of the entry size, so the fact
	// is recorded here for SanityCheck until Reset rebuilds the index.
	trailing int64
	openLen  int64

	// openMtime is the file's mtime when a writable open found it, and
	// changed whether an entry was written or dropped since (guarded by
	// wmu). A writable open preallocates the file to maxBytes and the
	// seal or close trims it back: two size changes, each of which sets
	// the mtime, so an index opened and closed without a change (the
	// active segment's over an idle mount and unmount) looked modified to
	// rsync, backups and find -newer. Trimmed back to its length at open
	// with nothing changed, the file holds exactly the bytes it had, and
	// the trim puts that mtime back (restoreMtimeLocked).
	openMtime time.Time
	changed   bool

	// reserved is how many bytes from the start of the file are known to
	// have disk blocks (fallocate'd), so that storing an entry through the
	// mapping never makes the filesystem allocate in a page fault: one
	// that cannot (disk full, quota, tmpfs limit) is a SIGBUS, which kills
	// the process. Guarded by wmu.
	reserved int64

	// entries is the published entry count. The writer stores the entry
	// bytes first and then this count, so a reader that loads the count
	// sees every entry below it.
	entries atomic.Int64
}

// roundDown returns n rounded down to a multiple of size, and 0 for n < 0.
func roundDown(n int64, size int) int64 {
	if n < 0 {
		return 0
	}
	return n - n%int64(size)
}

// openMapped opens or creates path and maps it. See OpenOffsetIndex for
// the rules.
func openMapped(m *mappedFile, path string, entrySize, maxBytes int, writable bool) error {
	m.path = path
	m.entrySize = entrySize
	m.writable = writable

	var f *os.File
	var err error
	if writable {
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	} else {
		f, err = os.Open(path)
	}
	if err != nil {
		return fmt.Errorf("index: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("index: %w", err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return fmt.Errorf("index: %s is not a regular file", path)
	}
	size := fi.Size()
	entries := size / int64(entrySize)
	if entries > maxFileEntries || size > math.MaxInt {
		f.Close()
		return corruptf(path, "length %d is too large for an index of %d-byte entries", size, entrySize)
	}
	m.f = f
	m.openLen = size
	m.trailing = size % int64(entrySize)
	if writable {
		m.openMtime = fi.ModTime()
		// A partial entry at the end is cleared below and trimmed away:
		// the file will not be what it was.
		m.changed = m.trailing != 0
	}

	length := size
	if writable {
		// Keep every counted entry even if maxBytes is smaller, so that
		// opening never silently drops entries; Resize follows the same
		// rule.
		length = max(roundDown(int64(maxBytes), entrySize), entries*int64(entrySize))
		if length != size {
			if err := f.Truncate(length); err != nil {
				f.Close()
				return fmt.Errorf("index: preallocate %s: %w", path, err)
			}
			// The preallocation adds only zeros past the entries that
			// segments/ and readers see, so it keeps the mtime too: the
			// active segment's indexes showed the mount's time in
			// segments/ until the first entry, and rsync recopied them
			// after every remount.
			if !m.changed {
				m.setMtimeLocked(m.openMtime)
			}
		}
	}
	if err := m.mapLocked(length); err != nil {
		f.Close()
		return err
	}
	if !writable {
		// A mapping outlives its descriptor, and a read-only index never
		// needs the file again: closing it here keeps a partition's closed
		// segments to one descriptor each (their .log), so that thousands
		// of segments do not exhaust RLIMIT_NOFILE.
		m.f = nil
		f.Close()
	}
	if writable && m.trailing > 0 {
		// The partial entry left at the end of the file would otherwise
		// become the first free slot's garbage; clear it so the
		// preallocated tail is all zeros, as Kafka's would be.
		end := min(size, int64(len(m.data)))
		clear(m.data[entries*int64(entrySize) : end])
	}
	m.entries.Store(entries)
	return nil
}

// mapLocked maps the first length bytes of the file (length must not
// exceed the file size). A zero length leaves no mapping.
func (m *mappedFile) mapLocked(length int64) error {
	m.data, m.maxEntries = nil, 0
	if length <= 0 {
		return nil
	}
	prot := unix.PROT_READ
	if m.writable {
		prot |= unix.PROT_WRITE
	}
	data, err := unix.Mmap(int(m.f.Fd()), 0, int(length), prot, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("index: mmap %s (%d bytes): %w", m.path, length, err)
	}
	m.data = data
	m.maxEntries = len(data) / m.entrySize
	return nil
}

// unmapLocked removes the mapping, if any.
func (m *mappedFile) unmapLocked() error {
	if m.data == nil {
		return nil
	}
	err := unix.Munmap(m.data)
	m.data, m.maxEntries = nil, 0
	if err != nil {
		return fmt.Errorf("index: munmap %s: %w", m.path, err)
	}
	return nil
}

// remapLocked sets the file length to newLen and maps it again. The caller
// holds wmu and mu exclusively. Whatever fails, the new mapping covers at
// most the file's actual length, so readers can never fault on a page past
// EOF; the entry count is cut to what the mapping holds.
func (m *mappedFile) remapLocked(newLen int64) error {
	if m.closed {
		return ErrClosed
	}
	if !m.writable {
		return ErrReadOnly
	}
	errUnmap := m.unmapLocked()
	m.reserved = 0
	var errTrunc error
	if err := m.f.Truncate(newLen); err != nil {
		errTrunc = fmt.Errorf("index: truncate %s to %d: %w", m.path, newLen, err)
	}
	fi, err := m.f.Stat()
	if err != nil {
		return errors.Join(errUnmap, errTrunc, fmt.Errorf("index: %w", err))
	}
	errMap := m.mapLocked(roundDown(fi.Size(), m.entrySize))
	if n := int64(m.maxEntries); m.entries.Load() > n {
		m.entries.Store(n)
		m.changed = true
	}
	return errors.Join(errUnmap, errTrunc, errMap)
}

// reserveLocked gives the page(s) of entry i disk blocks before the
// entry is stored through the mapping. The caller holds wmu and mu
// (shared is enough). A filesystem without fallocate keeps the old
// behaviour: the store allocates in the page fault.
func (m *mappedFile) reserveLocked(i int) error {
	start, end := int64(i)*int64(m.entrySize), int64(i+1)*int64(m.entrySize)
	if end <= m.reserved {
		return nil
	}
	page := int64(os.Getpagesize())
	off := start - start%page
	n := min((end+page-1)/page*page, int64(len(m.data))) - off
	if err := unix.Fallocate(int(m.f.Fd()), 0, off, n); err != nil &&
		!errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.ENOSYS) {
		return fmt.Errorf("index: reserve %d bytes at %d of %s: %w", n, off, m.path, err)
	}
	m.reserved = off + n
	return nil
}

// countLocked returns the published entry count, capped at what the
// mapping holds. The caller holds mu (shared is enough).
func (m *mappedFile) countLocked() int {
	return int(min(m.entries.Load(), int64(m.maxEntries)))
}

// slot returns the bytes of entry i. The caller holds mu and guarantees
// 0 <= i < maxEntries.
func (m *mappedFile) slot(i int) []byte {
	off := i * m.entrySize
	return m.data[off : off+m.entrySize : off+m.entrySize]
}

// maxEntriesShared returns the capacity of the current mapping.
func (m *mappedFile) maxEntriesShared() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.maxEntries
}

// truncateCount drops every entry at index n and above, zeroing the freed
// slots so that a crash before Trim leaves zeros rather than stale entries.
// Slots that are already zero are only read, never written, so that
// resetting an untrimmed sparse file does not allocate its holes.
func (m *mappedFile) truncateCountLocked(n int) {
	old := m.countLocked()
	if n >= old {
		return
	}
	n = max(n, 0)
	m.entries.Store(int64(n))
	m.changed = true
	if !m.writable || m.data == nil {
		return
	}
	const chunk = 4096
	b := m.data[n*m.entrySize : old*m.entrySize]
	for len(b) > 0 {
		c := b[:min(chunk, len(b))]
		if !allZero(c) {
			clear(c)
		}
		b = b[len(c):]
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// trim cuts the file back to the published entries and remaps it.
func (m *mappedFile) trim() error {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.remapLocked(int64(m.countLocked()) * int64(m.entrySize))
}

// resize sets the file length to maxBytes rounded down to the entry size,
// but never below the published entries, and remaps it.
func (m *mappedFile) resize(maxBytes int) error {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	used := int64(m.countLocked()) * int64(m.entrySize)
	return m.remapLocked(max(roundDown(int64(maxBytes), m.entrySize), used))
}

// flush writes the mapped pages and the file metadata to stable storage.
// It takes mu shared only, so appends can go on during a slow msync; the
// shared hold still keeps Trim or Close from unmapping underneath it.
func (m *mappedFile) flush() error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return ErrClosed
	}
	if !m.writable {
		return nil
	}
	return m.syncLocked()
}

// syncLocked writes the mapped pages and the file to stable storage. The
// caller holds mu (shared is enough) on a writable, open file.
func (m *mappedFile) syncLocked() error {
	if m.data != nil {
		if err := unix.Msync(m.data, unix.MS_SYNC); err != nil {
			return fmt.Errorf("index: msync %s: %w", m.path, err)
		}
	}
	if err := m.f.Sync(); err != nil {
		return fmt.Errorf("index: fsync %s: %w", m.path, err)
	}
	return nil
}

// seal makes a writable file final: trimmed to its entries, synced, and
// its descriptor closed (the mapping stays), after which it is read-only.
// Sealing a read-only or already sealed file does nothing.
func (m *mappedFile) seal() error {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if !m.writable {
		return nil
	}
	length := int64(m.countLocked()) * int64(m.entrySize)
	if err := m.remapLocked(length); err != nil {
		return err
	}
	m.restoreMtimeLocked(length)
	if err := m.syncLocked(); err != nil {
		return err
	}
	err := m.f.Close()
	m.f = nil
	m.writable = false
	if err != nil {
		return fmt.Errorf("index: close %s: %w", m.path, err)
	}
	return nil
}

// close trims a writable file to its entries, unmaps it and closes it.
// Closing twice is harmless.
func (m *mappedFile) close() error {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	n := m.countLocked()
	errs := []error{m.unmapLocked()}
	if m.writable {
		if err := m.f.Truncate(int64(n) * int64(m.entrySize)); err != nil {
			errs = append(errs, fmt.Errorf("index: trim %s: %w", m.path, err))
		} else {
			m.restoreMtimeLocked(int64(n) * int64(m.entrySize))
		}
	}
	if m.f != nil {
		if err := m.f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("index: close %s: %w", m.path, err))
		}
		m.f = nil
	}
	m.closed = true
	m.entries.Store(0)
	return errors.Join(errs...)
}

// restoreMtimeLocked puts back the mtime a writable open found, on a file
// just trimmed to length, when that is its length at open and no entry
// changed since (see openMtime). The caller holds wmu and the file is
// open. It goes through the descriptor (/proc/self/fd), not the path,
// which retention or compaction may have renamed meanwhile. Best effort:
// failing leaves the trim's mtime, as before.
func (m *mappedFile) restoreMtimeLocked(length int64) {
	if m.changed || length != m.openLen {
		return
	}
	m.setMtimeLocked(m.openMtime)
}

// setMtimeLocked sets the open file's mtime, leaving its atime, through
// the descriptor. Best effort, as restoreMtimeLocked.
func (m *mappedFile) setMtimeLocked(mtime time.Time) {
	if mtime.IsZero() || m.f == nil {
		return
	}
	os.Chtimes("/proc/self/fd/"+strconv.Itoa(int(m.f.Fd())), time.Time{}, mtime)
}

// checkTrailingLocked reports a file whose length at open was not a
// multiple of the entry size.
func (m *mappedFile) checkTrailingLocked() error {
	if m.trailing != 0 {
		return corruptf(m.path, "length %d is not a multiple of %d", m.openLen, m.entrySize)
	}
	return nil
}
