package index

// warmBytes is how much of the index tail Lookup searches first (Kafka's
// AbstractIndex._warmEntries: 8192 bytes).
const warmBytes = 8192

// keyer reads the search key of slot i. floorSlot is generic over it,
// rather than taking a func value, so that each index gets its own search
// with the key read inlined and no closure is built per Lookup. (The
// search over a 10 MiB index is bound by cache misses either way.)
type keyer interface {
	key(i int) int64
}

// offsetKeys keys .index slots by absolute offset.
type offsetKeys struct {
	data []byte
	base int64
}

func (k offsetKeys) key(i int) int64 {
	return k.base + int64(offsetRel(k.data[i*OffsetEntrySize:]))
}

// timestampKeys keys .timeindex slots by timestamp.
type timestampKeys struct {
	data []byte
}

func (k timestampKeys) key(i int) int64 {
	return timeStamp(k.data[i*TimeEntrySize:])
}

// floorSlot returns the largest slot i in [0, n) with key(i) <= target, or
// -1 if there is none, assuming keys increase. Like Kafka it first tries
// the last warm entries (8 KiB worth), which the appender keeps in the
// page cache, and only then searches the cold part of the file. On
// garbage (non-increasing keys) it still returns some slot in [-1, n).
func floorSlot[K keyer](n, warm int, target int64, k K) int {
	if n == 0 {
		return -1
	}
	firstHot := max(0, n-1-warm)
	if k.key(firstHot) < target {
		return floorSearch(firstHot, n-1, target, k)
	}
	if k.key(0) > target {
		return -1
	}
	return floorSearch(0, firstHot, target, k)
}

// floorSearch is Kafka's binary search over [lo, hi] given key(lo) <= target.
func floorSearch[K keyer](lo, hi int, target int64, k K) int {
	for lo < hi {
		mid := int(uint(lo+hi+1) >> 1)
		switch key := k.key(mid); {
		case key > target:
			hi = mid - 1
		case key < target:
			lo = mid
		default:
			return mid
		}
	}
	return lo
}
