package logstore

import (
	"crypto/md5"
	"encoding/binary"
)

// offsetMap is the cleaner's key → latest offset table, Kafka's
// SkimpyOffsetMap (KAFKA-FORMAT.md §9.2): open addressing over one fixed
// byte slice of 24-byte slots (16-byte MD5 of the key, 8-byte offset), so
// the cleaner's memory is the same whatever the partition holds. Digest
// collisions (2^-128) would only keep or drop a record wrongly, as in Kafka.
type offsetMap struct {
	buf   []byte
	slots int
	used  int
	limit int // fill no further than 90 % of the slots
}

const mapSlot = 24

func newOffsetMap(bytes int) *offsetMap {
	slots := max(bytes/mapSlot, 16)
	return &offsetMap{buf: make([]byte, slots*mapSlot), slots: slots, limit: slots * 9 / 10}
}

func (m *offsetMap) reset() {
	clear(m.buf)
	m.used = 0
}

func (m *offsetMap) full() bool { return m.used >= m.limit }

// find returns the slot of digest d, or the empty slot where it belongs.
func (m *offsetMap) find(d *[16]byte) (int, bool) {
	i := int(binary.BigEndian.Uint64(d[:8]) % uint64(m.slots))
	for {
		s := m.buf[i*mapSlot : i*mapSlot+16]
		if [16]byte(s) == *d {
			return i, true
		}
		if [16]byte(s) == ([16]byte{}) {
			return i, false
		}
		i++
		if i == m.slots {
			i = 0
		}
	}
}

// put records offset as the latest for key; false when the map is full
// and key is new.
func (m *offsetMap) put(key []byte, offset int64) bool {
	d := md5.Sum(key)
	if d == ([16]byte{}) {
		d[0] = 1 // the all-zero digest marks an empty slot
	}
	i, ok := m.find(&d)
	if !ok {
		if m.full() {
			return false
		}
		copy(m.buf[i*mapSlot:], d[:])
		m.used++
	}
	binary.BigEndian.PutUint64(m.buf[i*mapSlot+16:], uint64(offset))
	return true
}

func (m *offsetMap) get(key []byte) (int64, bool) {
	d := md5.Sum(key)
	if d == ([16]byte{}) {
		d[0] = 1
	}
	i, ok := m.find(&d)
	if !ok {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(m.buf[i*mapSlot+16:])), true
}
