package logstore

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestCompactConcurrentPartitions: two partitions compacted at once each
// keep every key's latest value. The store has one offset map; the two
// passes shared it, each resetting and filling it under the other, so a
// pass could drop a partition's latest value for a key the other
// partition had written at a higher offset (and -race reported the race).
func TestCompactConcurrentPartitions(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	const keys = 50
	parts := []*Partition{
		compactTopic(t, s, "ca", map[string]string{"segment.bytes": "16384", "segment.ms": "604800000"}),
		compactTopic(t, s, "cb", map[string]string{"segment.bytes": "16384", "segment.ms": "604800000"}),
	}
	latest := make([]map[string]string, len(parts))
	for i := range latest {
		latest[i] = map[string]string{}
	}
	for round := 0; round < 8; round++ {
		for i, p := range parts {
			// Different counts per partition, so that the same key sits
			// at different offsets in the two.
			var b strings.Builder
			for j := 0; j < 600+i*170; j++ {
				k := fmt.Sprintf("k%02d", j%keys)
				v := fmt.Sprintf("%s-r%d-%d", p.Topic().Name(), round, j)
				latest[i][k] = v
				fmt.Fprintf(&b, "%s=%s\n", k, v)
			}
			if _, _, err := p.AppendLines([]byte(b.String())); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		errs := make([]error, len(parts))
		for i, p := range parts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = p.Compact()
			}()
		}
		wg.Wait()
		for i, p := range parts {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			found := map[string]bool{}
			for _, l := range strings.Split(strings.TrimSuffix(textOf(t, p, 0), "\n"), "\n") {
				k, v, _ := strings.Cut(l, "=")
				if v == latest[i][k] {
					found[k] = true
				}
			}
			if len(found) != keys {
				t.Fatalf("round %d: %s keeps the latest value of %d keys of %d", round, p.Topic().Name(), len(found), keys)
			}
		}
	}
}
