package tests

import (
	"testing"
	"time"
)

// TestMaxCompactionLagCleansActiveSegment: on a compacted topic the
// active segment rolls once it is max.compaction.lag.ms old (Kafka's
// LogConfig.maxSegmentMs), and the cleaner then removes what it
// superseded: max.compaction.lag.ms=1000 bounds how long a superseded
// value stays, as KIP-354 promises. segfs rolled only after segment.ms (a
// week), and the cleaner never touches the active segment.
func TestMaxCompactionLagCleansActiveSegment(t *testing.T) {
	m := mntNew(t, cleanerFlags...)
	m.ok(`mkdir "$M/lag" && printf 'cleanup.policy=compact\nkey.separator==\nmax.compaction.lag.ms=1000\nfile.delete.delay.ms=0\n' > "$M/lag/config"` +
		` && printf 'k=1\nj=1\nk=2\n' >> "$M/lag/0/data"`)
	var got string
	if !mntWaitFor(20*time.Second, func() bool {
		got = m.ok(`cat "$M/lag/0/data"`)
		return got == "j=1\nk=2\n"
	}) {
		t.Fatalf("max.compaction.lag.ms=1000: data still reads %q after 20 s, want j=1 k=2; status %v", got, m.status("lag"))
	}
}
