package cli

import (
	"os"
	"testing"
)

// TestOffsetsVanishedSegment: get-offsets and log-dirs run beside a mount,
// whose retention deletes segments between their listing and their stat of
// each .log. A segment gone since the listing is not an error ("stat
// ...log: no such file or directory" failed the whole command): the
// partition is listed again and the offsets are those of what is left.
// The deletion is made here between listPartitions and offsetsOf, where a
// running daemon's retention makes it at random.
func TestOffsetsVanishedSegment(t *testing.T) {
	dir := t.TempDir()
	end := segmentedTopic(t, dir).LogEndOffset()
	for _, gone := range []int{0, -1} { // the first segment (retention), then the last
		parts, err := listPartitions(dir)
		if err != nil || len(parts) != 1 || len(parts[0].Segments) < 3 {
			t.Fatalf("listPartitions: %v, %+v", err, parts)
		}
		segs := parts[0].Segments
		i := gone
		if i < 0 {
			i = len(segs) - 1
		}
		g := segs[i]
		// As retention does: rename to .deleted.
		for _, f := range []string{g.Log, g.Index, g.TimeIndex} {
			if err := os.Rename(f, f+".deleted"); err != nil {
				t.Fatal(err)
			}
		}
		po, err := offsetsOf(parts[0], nil)
		if err != nil {
			t.Fatalf("segment %d gone after the listing: %v", g.Base, err)
		}
		wantStart, wantEnd := segs[0].Base, end
		if i == 0 {
			wantStart = segs[1].Base
		} else {
			wantEnd = g.Base // the segment before ends where the removed one began
		}
		if po.Segments != len(segs)-1 || po.LogStartOffset != wantStart || po.LogEndOffset != wantEnd {
			t.Fatalf("segment %d gone: %+v; want %d segments, offsets %d..%d", g.Base, po, len(segs)-1, wantStart, wantEnd)
		}
		for _, f := range []string{g.Log, g.Index, g.TimeIndex} {
			if err := os.Rename(f+".deleted", f); err != nil {
				t.Fatal(err)
			}
		}
	}
}
