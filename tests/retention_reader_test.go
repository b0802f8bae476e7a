package tests

import (
	"crypto/md5"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRetentionLongReader holds `cat data` open in the middle of a 2 MB
// log (its pipe is full) while retention deletes the segments beneath it,
// or the cleaner rewrites them: the reader goes on and prints the log it
// opened, byte for byte, neither repeating nor skipping a line. The
// deleted files stay on disk while it reads and go once it is done; a new
// open sees the log as it is now.
func TestRetentionLongReader(t *testing.T) {
	// It mostly waits (a blocked reader, a retention or cleaner pass) on
	// mounts of its own: it runs beside the other tests that wait
	// (t.Parallel).
	t.Parallel()
	for _, tc := range []struct {
		name    string
		trigger string                          // config that starts the change
		done    func(m *mnt, t *testing.T) bool // the change happened
	}{
		{"delete", "retention.ms=0", func(m *mnt, t *testing.T) bool {
			// The pass is logged once it has renamed the segments it
			// dropped .deleted; status shows one segment before that,
			// and a count of the .deleted files then found none (once,
			// on a loaded host).
			return m.status("lr")["segments"] == 1 && m.cleanerTotals("retention", "lr-0").segmentsDeleted > 0
		}},
		{"compact", "cleanup.policy=compact", func(m *mnt, t *testing.T) bool {
			return m.cleanerTotals("compaction", "lr-0").recordsRemoved > 0
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mntNew(t, cleanerFlags...)
			m.ok(`mkdir "$M/lr" && printf 'key.separator=:\nsegment.bytes=65536\nretention.ms=-1\nmin.cleanable.dirty.ratio=0.01\nfile.delete.delay.ms=0\n' > "$M/lr/config"`)
			// 100,000 lines over 200 keys, 1.9 MB of text, not read
			// through the mount before the reader (so that the kernel
			// has none of it cached and the reader reads the daemon).
			gen := `awk 'BEGIN { for (i = 0; i < 100000; i++) printf "k%03d:value %07d\n", i % 200, i }'`
			m.ok(gen + ` >> "$M/lr/0/data"`)
			want := m.ok(gen)
			work := t.TempDir()
			out := filepath.Join(work, "out")
			// cat fills the pipe and blocks until the file "go" appears.
			reader := bgCmd(t, filepath.Join(work, "reader.log"), "bash", "-c",
				`cat "$0" | { while [ ! -e go ]; do sleep 0.05; done; cat; } > out`, m.path("lr", "0", "data"))
			// cat has data open and has read from it (then blocks on
			// the full pipe).
			if !mntWaitFor(30*time.Second, func() bool {
				pos := mntOpenPositions(m.path("lr", "0", "data"))
				return len(pos) == 1 && pos[0] > 0
			}) {
				t.Fatalf("the reader did not open and read data: positions %v", mntOpenPositions(m.path("lr", "0", "data")))
			}
			m.ok(`echo ` + tc.trigger + ` > "$M/lr/config"`)
			if !mntWaitFor(30*time.Second, func() bool { return tc.done(m, t) }) {
				t.Fatalf("%s did not happen: status %v", tc.trigger, m.status("lr"))
			}
			deleted := countFiles(filepath.Join(m.data, "lr-0"), ".deleted")
			now := m.ok(`cat "$M/lr/0/data"`)
			t.Logf("%s: the reader holds %d .deleted files; a new open reads %d bytes, the reader's open %d",
				tc.name, deleted, len(now), len(want))
			if deleted == 0 || len(now) >= len(want) {
				t.Fatalf("nothing was deleted beneath the reader")
			}
			if err := os.WriteFile(filepath.Join(work, "go"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			select {
			case <-reader.done:
			case <-time.After(60 * time.Second):
				t.Fatal("the reader did not finish")
			}
			got := readFile(t, out)
			if got != want {
				t.Fatalf("the reader printed %d bytes (md5 %x), want the %d it opened (md5 %x)",
					len(got), md5.Sum([]byte(got)), len(want), md5.Sum([]byte(want)))
			}
			if !mntWaitFor(20*time.Second, func() bool { return countFiles(filepath.Join(m.data, "lr-0"), ".deleted") == 0 }) {
				t.Errorf(".deleted files remain after the reader closed")
			}
			if after := m.ok(`cat "$M/lr/0/data"`); after != now {
				t.Errorf("data changed after the reader closed: %d bytes, was %d", len(after), len(now))
			}
		})
	}
}
