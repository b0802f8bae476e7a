package logstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRecoveryTornSegmentPastRecoveryPoint: a closed segment past the
// recovery point torn inside a batch (a crash before the flush that would
// have moved the checkpoint) is truncated at its last whole batch, and
// every later segment is deleted, as Kafka's LogLoader deletes the
// segments after one it truncated: their offsets would follow a hole. The
// truncated segment becomes the active one and takes the next appends at
// the offset after its last whole batch, its sealed indexes taking
// entries again (without that, the full sealed index rolled it at once);
// a clean reopen then finds the same log, its indexes sound. The same happens after a clean shutdown whose recovery-point
// checkpoint is unreadable: every segment is recovered. (Below the
// recovery point the later segments are kept: TestFaultTornSealedSegment.)
// No test reached either branch.
func TestRecoveryTornSegmentPastRecoveryPoint(t *testing.T) {
	for _, tc := range []struct {
		name       string
		clean      bool   // the clean-shutdown marker is there
		checkpoint string // the recovery-point checkpoint
	}{
		{"unclean, recovery point 0", false, "0\n1\nr 0 0\n"},
		{"clean, unreadable checkpoint", true, "7\nnot a checkpoint\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, newClock())
			if _, err := s.CreateTopic("r", 1, map[string]string{"segment.bytes": "1000", "index.interval.bytes": "64"}); err != nil {
				t.Fatal(err)
			}
			p := mustPartition(t, s, "r")
			var lines []string
			var segOf, posOf []int64 // where each line's batch starts
			for i := 0; i < 200; i++ {
				l := fmt.Sprintf("line %03d\n", i)
				segOf, posOf = append(segOf, p.active().base), append(posOf, p.active().size.Load())
				if _, _, err := p.AppendLines([]byte(l)); err != nil { // a batch per line
					t.Fatal(err)
				}
				if p.active().base != segOf[i] { // rolled before the append
					segOf[i], posOf[i] = p.active().base, 0
				}
				lines = append(lines, l)
			}
			s.abandon()
			pdir := filepath.Join(dir, "r-0")
			logs, _ := filepath.Glob(filepath.Join(pdir, "*.log"))
			slices.Sort(logs)
			if len(logs) < 4 {
				t.Fatalf("%d segments, want at least 4", len(logs))
			}
			base := func(path string) int64 {
				var b int64
				fmt.Sscanf(filepath.Base(path), "%d.log", &b)
				return b
			}
			// The second segment is cut inside a batch in its middle.
			var in []int64
			for off, b := range segOf {
				if b == base(logs[1]) {
					in = append(in, int64(off))
				}
			}
			end := in[len(in)/2]
			if err := os.Truncate(logs[1], posOf[end]+5); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, recoveryCheckpointFile), []byte(tc.checkpoint), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.clean {
				if err := os.WriteFile(filepath.Join(dir, cleanShutdownFile), []byte(`{"version":0,"brokerEpoch":0}`), 0o644); err != nil {
					t.Fatal(err)
				}
			}

			s = openStore(t, dir, newClock())
			p = mustPartition(t, s, "r")
			if got := p.LogEndOffset(); got != end {
				s.Close()
				t.Fatalf("log end %d after recovery, want %d (the torn segment's last whole batch)", got, end)
			}
			for _, l := range logs[2:] {
				stem := strings.TrimSuffix(l, ".log")
				for _, suf := range []string{".log", ".index", ".timeindex"} {
					if _, err := os.Stat(stem + suf); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("%s after the torn segment: %v, want it deleted", filepath.Base(stem+suf), err)
					}
				}
			}
			if got, want := textOf(t, p, 0), strings.Join(lines[:end], ""); got != want {
				s.Close()
				t.Fatalf("text after recovery: %d bytes, want %d", len(got), len(want))
			}
			// The truncated segment is the active one and takes the next
			// appends, from end on, indexing them: its indexes, sealed
			// when it was closed, take entries again.
			entries := p.active().oidx.Entries()
			want := slices.Clone(lines[:end])
			for i := 0; i < 5; i++ {
				l := fmt.Sprintf("after %03d\n", i)
				first, _, err := p.AppendLines([]byte(l))
				if err != nil || first != end+int64(i) {
					s.Close()
					t.Fatalf("append %d after recovery: offset %d, %v; want %d", i, first, err, end+int64(i))
				}
				want = append(want, l)
			}
			if a := p.active(); a.base != base(logs[1]) || a.oidx.Entries() <= entries {
				s.Close()
				t.Fatalf("after 5 appends the active segment is %d with %d index entries (%d before); want the truncated %d, with more",
					a.base, a.oidx.Entries(), entries, base(logs[1]))
			}
			for i := 5; i < 60; i++ { // on past segment.bytes: rolls
				l := fmt.Sprintf("after %03d\n", i)
				if first, _, err := p.AppendLines([]byte(l)); err != nil || first != end+int64(i) {
					s.Close()
					t.Fatalf("append %d after recovery: offset %d, %v; want %d", i, first, err, end+int64(i))
				}
				want = append(want, l)
			}
			s.Close()

			s = openStore(t, dir, newClock())
			defer s.Close()
			p = mustPartition(t, s, "r")
			if got := textOf(t, p, 0); got != strings.Join(want, "") {
				t.Fatalf("text after a clean reopen: %d bytes, want %d", len(got), len(strings.Join(want, "")))
			}
			for off := int64(0); off < int64(len(want)); off += 7 {
				v, err := p.Text(off)
				if err != nil {
					t.Fatal(err)
				}
				got := make([]byte, len(want[off]))
				n, _ := v.ReadAt(got, 0)
				v.Close()
				if string(got[:n]) != want[off] {
					t.Fatalf("offset %d reads %q, want %q", off, got[:n], want[off])
				}
			}
			for _, seg := range p.acquireSegments(0) {
				if err := seg.oidx.SanityCheck(); err != nil {
					t.Error(err)
				}
				if err := seg.tidx.SanityCheck(); err != nil {
					t.Error(err)
				}
				seg.release()
			}
		})
	}
}
