package logstore

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A synced line ended by a batch not yet durable survives a power cut
// that loses that batch: the journal keeps the line's synced entries and
// the conditional entry that ended it (void without the batch) until the
// batch is durable. Emptying the journal once no writer had a line (and
// another writer's fsync making the emptying durable), or rewriting it
// without the line, dropped the line's start while its end could still be
// lost: an fsync(2) that had returned success lost the bytes it synced.
func TestUnfinishedSyncedLineKeptWhenItsEndIsLost(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after func(t *testing.T, p *Partition) string // the rest of the text wanted
	}{
		{"journal emptied, then synced by another writer's fsync", func(t *testing.T, p *Partition) string {
			q := p.NewLineWriter()
			mustExtend(t, q, "q")
			if err := q.Sync([]byte("q")); err != nil {
				t.Fatal(err)
			}
			return "q\n"
		}},
		{"journal rewritten", func(t *testing.T, p *Partition) string {
			q := p.NewLineWriter()
			mustExtend(t, q, "q")
			if err := q.Sync([]byte("q")); err != nil {
				t.Fatal(err)
			}
			// The marks of a long run of other appends while q has a
			// line make the journal rewritten from memory, synced as
			// the file held a synced mark.
			echo := p.NewLineWriter()
			n := int(unfinishedRewriteAt/(unfinishedHdr+unfinishedBodyHdr)) + 1000
			for i := 0; i < n; i++ {
				mustAppend(t, echo, "", "x\n", "")
			}
			return "q\n"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rig := newPowerCutRig(t)
			dir, s, p := openUnfinished(t, nil)
			mustAppend(t, p.NewLineWriter(), "", "first\n", "")
			if err := p.Flush(); err != nil {
				t.Fatal(err)
			}
			seg := filepath.Join(dir, "a-0", "00000000000000000000.log")
			fi, err := os.Stat(seg)
			if err != nil {
				t.Fatal(err)
			}
			durable, rp := fi.Size(), p.recoveryPoint.Load() // the segment as of its last fsync
			// noteFlush: a flush since made the segment durable as it is.
			noteFlush := func() {
				if p.recoveryPoint.Load() == rp {
					return
				}
				if rp = p.recoveryPoint.Load(); rp != p.leo.Load() {
					t.Fatal("a flush left appends after it: not modelled here")
				}
				fi, err := os.Stat(seg)
				if err != nil {
					t.Fatal(err)
				}
				durable = fi.Size()
			}
			a := p.NewLineWriter()
			mustExtend(t, a, "ab")
			if err := a.Sync([]byte("ab")); err != nil { // fsync(2) returned: "ab" is durable
				t.Fatal(err)
			}
			mustAppend(t, a, "abc\n", "", "") // ends the line
			noteFlush()
			rest := tc.after(t, p)
			noteFlush()
			// The power cut: the journal as of its last sync, the segment
			// as of its last fsync.
			s.abandon()
			fdatasyncDone = nil
			path := filepath.Join(dir, "a-0", unfinishedFile)
			rig.mu.Lock()
			b := rig.durable[path]
			rig.mu.Unlock()
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(seg, durable); err != nil {
				t.Fatal(err)
			}
			var logged bytes.Buffer
			_, p = openLogged(t, dir, &logged)
			text := textOf(t, p, 0)
			if !strings.HasPrefix(text, "first\n") || strings.Count(text, "ab") != 1 || !strings.HasSuffix(text, rest) {
				t.Fatalf("text after the power cut %q, want \"first\\n\", the synced \"ab\" (once) and %q\n%s", text, rest, logged.String())
			}
		})
	}
}
