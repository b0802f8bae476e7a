package logstore

import (
	"crypto/md5"
	"crypto/sha256"
	"fmt"
	"strconv"
	"testing"
)

// TestOffsetMap: put keeps the latest offset a key was put with, get finds
// every key put and no other, keys one byte apart (and the empty key, and
// a key that is a prefix of another) are distinct, full() comes at 90 % of
// CleanerBufferBytes/24 slots, a full map refuses new keys but still takes
// new offsets for keys it holds, and reset empties it.
func TestOffsetMap(t *testing.T) {
	for _, bytes := range []int{24 << 10, 24<<17 + 23} { // 921 and 117,964 keys
		t.Run(strconv.Itoa(bytes), func(t *testing.T) { testOffsetMap(t, bytes) })
	}
}

func testOffsetMap(t *testing.T, bytes int) {
	m := newOffsetMap(bytes)
	limit := bytes / 24 * 9 / 10 // Kafka: buffer/(16+8) slots, 90 % of them
	var keys [][]byte
	keys = append(keys, []byte{}, []byte{0}, []byte{0, 0}, []byte("k"), []byte("k\x00"))
	// Keys differing in one bit of one byte, at every position of a long
	// key (past maphash's 128-byte chunks), and decimal neighbours.
	long := make([]byte, 300)
	for _, i := range []int{0, 1, 7, 8, 15, 16, 63, 64, 127, 128, 129, 255, 299} {
		k := append([]byte{}, long...)
		k[i] ^= 1
		keys = append(keys, k)
	}
	keys = append(keys, long, long[:299], long[:128], long[:127])
	for i := 0; len(keys) < limit; i++ {
		keys = append(keys, []byte("key-"+strconv.Itoa(i)))
	}
	for round := 0; round < 2; round++ {
		for i, k := range keys {
			if m.full() {
				t.Fatalf("round %d: full after %d keys, want %d", round, i, limit)
			}
			if _, ok := m.get(k); ok {
				t.Fatalf("round %d: key %q found before put", round, k)
			}
			if !m.put(k, int64(i)) {
				t.Fatalf("round %d: put of key %d refused", round, i)
			}
		}
		if !m.full() {
			t.Fatalf("round %d: not full with %d keys for %d bytes", round, len(keys), bytes)
		}
		if m.put([]byte("one more"), 1) {
			t.Fatalf("round %d: a full map took a new key", round)
		}
		if _, ok := m.get([]byte("one more")); ok {
			t.Fatalf("round %d: a refused key is found", round)
		}
		// Later offsets overwrite, in the full map too.
		for i, k := range keys {
			if i%3 == 0 && !m.put(k, int64(i)+1e12) {
				t.Fatalf("round %d: full map refused a new offset for key %d", round, i)
			}
		}
		for i, k := range keys {
			want := int64(i)
			if i%3 == 0 {
				want += 1e12
			}
			if got, ok := m.get(k); !ok || got != want {
				t.Fatalf("round %d: get(key %d %q) = %d, %v; want %d", round, i, k, got, ok, want)
			}
		}
		for _, k := range []string{"key-", "key--1", "key-" + strconv.Itoa(len(keys)), "\x00\x00\x00"} {
			if _, ok := m.get([]byte(k)); ok {
				t.Fatalf("round %d: key %q never put is found", round, k)
			}
		}
		m.reset()
		if m.full() {
			t.Fatalf("round %d: full after reset", round)
		}
	}
}

// TestOffsetMapSmall: the map has 16 slots at least (14 keys), and a probe
// ends when every slot but the unusable tenth is taken.
func TestOffsetMapSmall(t *testing.T) {
	m := newOffsetMap(1)
	n := 0
	for ; m.put([]byte{byte(n)}, int64(n)); n++ {
	}
	if n != 14 {
		t.Fatalf("took %d keys, want 14", n)
	}
	for i := 0; i < 256; i++ {
		got, ok := m.get([]byte{byte(i)})
		if ok != (i < n) || ok && got != int64(i) {
			t.Fatalf("get(%d) = %d, %v", i, got, ok)
		}
	}
}

// BenchmarkOffsetMapDigest compares the map's digest with MD5 (Kafka's)
// and SHA-256 on keys of the sizes a log holds.
func BenchmarkOffsetMapDigest(b *testing.B) {
	m := newOffsetMap(1)
	var sink uint64
	for _, n := range []int{8, 32, 128} {
		keys := make([][]byte, 1024)
		for i := range keys {
			keys[i] = fmt.Appendf(nil, "%0*d", n, i*7919)
		}
		b.Run(fmt.Sprintf("maphash2/len=%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				h1, h2 := m.digest(keys[i&1023])
				sink += h1 ^ h2
			}
		})
		b.Run(fmt.Sprintf("md5/len=%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				d := md5.Sum(keys[i&1023])
				sink += uint64(d[0])
			}
		})
		b.Run(fmt.Sprintf("sha256/len=%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				d := sha256.Sum256(keys[i&1023])
				sink += uint64(d[0])
			}
		})
	}
	if sink == 42 {
		b.Log(sink)
	}
}

// BenchmarkOffsetMap: one put and one get of a random earlier key per
// iteration, in a 16 MiB map (the default) holding 250,000 keys, the
// BenchmarkCompact partition's count: mostly the cache misses of the
// probes.
func BenchmarkOffsetMap(b *testing.B) {
	m := newOffsetMap(16 << 20)
	keys := make([][]byte, 250000)
	for i := range keys {
		keys[i] = []byte("u" + strconv.Itoa(i*7))
	}
	for i, k := range keys {
		m.put(k, int64(i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.put(keys[i%len(keys)], int64(i))
		if _, ok := m.get(keys[i*7919%len(keys)]); !ok {
			b.Fatal("key lost")
		}
	}
}
