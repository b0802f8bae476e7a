package logstore

import (
	"hash/maphash"
	"math/bits"
	"unsafe"
)

// offsetMap is the cleaner's key → latest offset table, Kafka's
// SkimpyOffsetMap (KAFKA-FORMAT.md §9.2): linear probing over one fixed
// array of 24-byte slots (a 128-bit digest of the key, 8-byte offset), so
// the cleaner's memory is the same whatever the partition holds: as in
// Kafka, buffer bytes / 24 slots, filled to 90 %.
//
// Equal digests are taken for equal keys (the keys are not stored), so a
// collision would keep or drop a record wrongly, as in Kafka. The digest
// is not Kafka's MD5 but two 64-bit hash/maphash sums of the key under two
// independent random seeds, drawn again at every reset (every pass):
//
//   - 128 bits: n keys collide by accident with probability about
//     n²/2^129, under 10^-20 for a billion keys.
//   - Keyed: the seeds come from the runtime's cryptographic generator and
//     never leave the process; the digests are never shown. Crafting two
//     keys that collide needs the seeds (or a seed-independent weakness of
//     the hash: none is known for the AES-based hash the runtime uses on
//     amd64 and arm64; its portable fallback, used on CPUs without AES, has
//     had crafted collisions, golang/go#66841). MD5 is unkeyed and has
//     practical collisions (identical-prefix in seconds, chosen-prefix in
//     hours), so a writer of two crafted keys can already collide them in
//     Kafka, and in every pass. Here a pair that did collide by accident
//     would not collide again at the next pass.
//   - Cost: for keys of 3 to 122 bytes, 7-14 ns for both sums against
//     100-250 ns for MD5 and 90-160 ns for SHA-256 (this machine, AMD
//     EPYC, Go 1.26; see BenchmarkOffsetMapDigest). In BenchmarkCompact's
//     profile MD5 was a third of the map's time and the map a third of
//     the pass; the rest of the map's time is the cache miss of each
//     probe, which no digest avoids.
//
// The slots are uint64 words, not bytes: no byte-order decoding, and the
// digest compares as two words. The first probe is the high word of
// h1 × slots (Lemire's multiply-shift range reduction): uniform for any
// slot count, without a 64-bit division.
type offsetMap struct {
	slots []mapEntry
	used  int
	limit int // fill no further than 90 % of the slots
	seeds [2]maphash.Seed
}

// mapEntry is one slot. h1 = h2 = 0 marks it empty; put never stores that
// digest.
type mapEntry struct {
	h1, h2 uint64
	offset int64
}

// mapSlot is a slot's size: CleanerBufferBytes buys one slot per mapSlot
// bytes, as Kafka's map (16-byte digest + 8-byte offset).
const mapSlot = int(unsafe.Sizeof(mapEntry{}))

func newOffsetMap(bytes int) *offsetMap {
	n := max(bytes/mapSlot, 16)
	m := &offsetMap{slots: make([]mapEntry, n), limit: n * 9 / 10}
	m.reseed()
	return m
}

func (m *offsetMap) reseed() {
	m.seeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
}

// reset empties the map for a new pass. A map nothing was put in is all
// zeros already (the first pass of a store): clearing it would fault in
// and zero every page of the buffer for nothing.
func (m *offsetMap) reset() {
	if m.used > 0 {
		clear(m.slots)
		m.used = 0
	}
	m.reseed()
}

func (m *offsetMap) full() bool { return m.used >= m.limit }

func (m *offsetMap) digest(key []byte) (h1, h2 uint64) {
	h1, h2 = maphash.Bytes(m.seeds[0], key), maphash.Bytes(m.seeds[1], key)
	if h1|h2 == 0 {
		h1 = 1 // the all-zero digest marks an empty slot
	}
	return h1, h2
}

// find returns the slot of digest (h1, h2), or the empty slot where it
// belongs. The map is never full (limit < slots), so the probe ends.
func (m *offsetMap) find(h1, h2 uint64) (*mapEntry, bool) {
	i, _ := bits.Mul64(h1, uint64(len(m.slots)))
	for j := int(i); ; {
		e := &m.slots[j]
		if e.h1 == h1 && e.h2 == h2 {
			return e, true
		}
		if e.h1|e.h2 == 0 {
			return e, false
		}
		if j++; j == len(m.slots) {
			j = 0
		}
	}
}

// put records offset as the latest for key; false when the map is full
// and key is new.
func (m *offsetMap) put(key []byte, offset int64) bool {
	h1, h2 := m.digest(key)
	e, ok := m.find(h1, h2)
	if !ok {
		if m.full() {
			return false
		}
		e.h1, e.h2 = h1, h2
		m.used++
	}
	e.offset = offset
	return true
}

func (m *offsetMap) get(key []byte) (int64, bool) {
	e, ok := m.find(m.digest(key))
	if !ok {
		return 0, false
	}
	return e.offset, true
}
