package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"sort"
	"sync"

	"github.com/segfs/segfs/logstore/record"
)

// textInterval is how many text bytes pass between two entries of a
// segment's text map: small enough that finding a text position scans
// little, large enough that the map stays sparse (~48 bytes per 64 KiB).
const textInterval = 64 << 10

// textEntry marks a batch: its file position, base offset, and the text
// rendered by every batch of the segment before it.
type textEntry struct {
	pos    int64
	offset int64
	before record.TextStats
}

// textMap is the sparse map from rendered text positions to batches for one
// segment. Positions are derived from TextStats, so the map serves any key
// separator. The appender adds to it; readers take the read lock.
type textMap struct {
	mu         sync.RWMutex
	entries    []textEntry
	total      record.TextStats // everything below end
	end        int64            // file position covered by total
	sinceEntry int64
	// corruptAt is the position of a batch that could not be decoded
	// while building the map; text beyond it is unknown, and readers that
	// reach it fail rather than skip it.
	corruptAt int64
}

func metric(st record.TextStats) int64 { return st.ValueBytes + st.Lines + st.KeyBytes }

// add records the batch at pos (size bytes, rendering st).
func (m *textMap) add(pos, size, offset int64, st record.TextStats) {
	m.mu.Lock()
	if len(m.entries) == 0 || m.sinceEntry >= textInterval {
		m.entries = append(m.entries, textEntry{pos: pos, offset: offset, before: m.total})
		m.sinceEntry = 0
	}
	m.total.Add(st)
	m.sinceEntry += metric(st)
	m.end = pos + size
	m.mu.Unlock()
}

// snapshot returns the totals and covered end consistently.
func (m *textMap) snapshot() (record.TextStats, int64, int64) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.total, m.end, m.corruptAt
}

// floorText returns the last entry whose text position (for sepLen) is <= t.
func (m *textMap) floorText(t int64, sepLen int) textEntry {
	m.mu.RLock()
	defer m.mu.RUnlock()
	i := sort.Search(len(m.entries), func(i int) bool { return m.entries[i].before.Size(sepLen) > t })
	if i == 0 {
		return textEntry{}
	}
	return m.entries[i-1]
}

// floorOffsetSpan finds the last entry whose batch base offset is <= off,
// with the bytes from it to the next entry (or to the end of the map): the
// batches there hold off when the entry does not end below it. found is
// false when no entry is <= off (the zero entry returned then starts the
// segment).
func (m *textMap) floorOffsetSpan(off int64) (e textEntry, span int64, found bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	i := sort.Search(len(m.entries), func(i int) bool { return m.entries[i].offset > off })
	next := m.end
	if i < len(m.entries) {
		next = m.entries[i].pos
	}
	if i > 0 {
		e = m.entries[i-1]
	}
	return e, next - e.pos, i > 0
}

// The .textindex file: magic, log size it describes, entry count, entries
// (pos, offset, 4 stats), totals (4 stats), CRC-32C of everything before.
var textMagic = [8]byte{'S', 'E', 'G', 'F', 'S', 'T', 'X', '1'}

const textEntrySize = 6 * 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func putStats(b []byte, st record.TextStats) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(st.Lines))
	b = binary.BigEndian.AppendUint64(b, uint64(st.ValueBytes))
	b = binary.BigEndian.AppendUint64(b, uint64(st.Keyed))
	return binary.BigEndian.AppendUint64(b, uint64(st.KeyBytes))
}

func getStats(b []byte) record.TextStats {
	return record.TextStats{
		Lines:      int64(binary.BigEndian.Uint64(b)),
		ValueBytes: int64(binary.BigEndian.Uint64(b[8:])),
		Keyed:      int64(binary.BigEndian.Uint64(b[16:])),
		KeyBytes:   int64(binary.BigEndian.Uint64(b[24:])),
	}
}

// save writes the map atomically for a segment whose .log is logSize bytes.
func (m *textMap) save(path string, logSize int64) error {
	m.mu.RLock()
	if m.corruptAt != 0 || m.end != logSize {
		m.mu.RUnlock()
		os.Remove(path)
		return nil // an incomplete map is rebuilt at the next load instead
	}
	b := make([]byte, 0, 24+len(m.entries)*textEntrySize+40)
	b = append(b, textMagic[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(logSize))
	b = binary.BigEndian.AppendUint64(b, uint64(len(m.entries)))
	for _, e := range m.entries {
		b = binary.BigEndian.AppendUint64(b, uint64(e.pos))
		b = binary.BigEndian.AppendUint64(b, uint64(e.offset))
		b = putStats(b, e.before)
	}
	b = putStats(b, m.total)
	m.mu.RUnlock()
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	return WriteFileAtomic(path, b)
}

// load reads a saved map; it fails unless the file is intact and describes
// a log of exactly logSize bytes.
func (m *textMap) load(path string, logSize int64) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if len(b) < 24+36 || [8]byte(b[:8]) != textMagic {
		return errors.New("bad text index header")
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return errors.New("text index checksum mismatch")
	}
	if int64(binary.BigEndian.Uint64(b[8:])) != logSize {
		return fmt.Errorf("text index describes another log size")
	}
	n := binary.BigEndian.Uint64(b[16:])
	if n > uint64(len(body)) || uint64(len(body)) != 24+n*textEntrySize+32 {
		return errors.New("text index length mismatch")
	}
	entries := make([]textEntry, n)
	p := body[24:]
	for i := range entries {
		entries[i] = textEntry{
			pos:    int64(binary.BigEndian.Uint64(p)),
			offset: int64(binary.BigEndian.Uint64(p[8:])),
			before: getStats(p[16:]),
		}
		p = p[textEntrySize:]
	}
	m.mu.Lock()
	m.entries = entries
	m.total = getStats(p)
	m.end = logSize
	m.sinceEntry = 0
	m.mu.Unlock()
	return nil
}

func randUint64() uint64 { return rand.Uint64() }
