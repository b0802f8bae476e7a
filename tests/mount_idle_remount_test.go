package tests

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// dataDirState lists every directory and file under data: kind, inode,
// size, mtime (ns) and, for files, a hash of the content. The inode
// catches a file rewritten through temp+rename within the mtime's clock
// tick. Left out are the data directory itself and segfs's bookkeeping at
// its top, which every mount and clean stop must change: the lock file
// (the owner's pid), the clean-shutdown marker (removed at load, written
// at a clean stop), the sync probe (its size toggles after the close's
// fsyncs) and the daemon's log.
func dataDirState(t *testing.T, data string) map[string]string {
	t.Helper()
	skip := map[string]bool{".lock": true, ".kafka_cleanshutdown": true, ".segfs-sync-probe": true, "segfs-mount.out": true}
	out := map[string]string{}
	err := filepath.WalkDir(data, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(data, path)
		if rel == "." || skip[rel] {
			return nil
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		desc := fmt.Sprintf("%v ino %d size %d mtime %d", fi.Mode().Type(), st.Ino, fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" sha256 %x", sha256.Sum256(b))
		}
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diffStates lists what differs between two dataDirState or mount views.
func diffStates(before, after map[string]string) []string {
	var d []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			d = append(d, "gone: "+k+" ("+v+")")
		} else if w != v {
			d = append(d, "changed: "+k+"\n    before "+v+"\n    after  "+w)
		}
	}
	for k, w := range after {
		if _, ok := before[k]; !ok {
			d = append(d, "new: "+k+" ("+w+")")
		}
	}
	sort.Strings(d)
	return d
}

// TestMountIdleRemountMtimes: mounting a data directory and unmounting it
// cleanly without writing leaves every partition directory and every file
// in it as it was, mtimes and inodes included, and so do the directory
// mtimes the mount shows (they are the data directory's). Every clean
// unmount rewrote each partition's producer snapshot through temp+rename
// (moving the directory's mtime) and left the active segment's indexes
// with new mtimes (preallocated at open, trimmed at close), so `find DATA
// -newer X -type d` and rsync saw every topic as changed after a remount
// of an idle store. A kill -9 after such an idle remount still recovers
// everything: the clean-shutdown marker is removed while mounted.
func TestMountIdleRemountMtimes(t *testing.T) {
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	// Topic a: three partitions, one segment each. Topic b: small
	// segments (several rolls, so several snapshots and closed segments)
	// and an idempotent producer (a producer snapshot with entries,
	// written durably). Topic c: created and never written.
	m.ok(`mkdir "$M/a" && mkdir "$M/a/1" "$M/a/2" && ` +
		`for p in 0 1 2; do seq 1 50 | sed "s/^/a$p /" >> "$M/a/$p/data"; done && ` +
		`mkdir "$M/b" && echo segment.bytes=1024 > "$M/b/config" && seq 1 200 | sed 's/^/b /' >> "$M/b/0/data" && mkdir "$M/c"`)
	cl := kafkaClient(t, addr, kgo.RequiredAcks(kgo.AllISRAcks()))
	kafkaProduce(t, cl, "b", 0, "kgo 1", "kgo 2", "kgo 3")
	cl.Close()
	want := map[string]string{}
	for _, p := range []string{"a/0", "a/1", "a/2", "b/0", "c/0"} {
		want[p] = m.ok(`cat "$M/` + p + `/data"`)
	}
	m.unmount()

	// The view through the mount: every directory (their mtimes are the
	// data directory's), and data (the last append's).
	view := func() map[string]string {
		t.Helper()
		out := m.ok(`cd "$M" && find . -path ./'*'/'*'/offset/'*' -prune -o -path ./'*'/'*'/time/'*' -prune -o ` +
			`\( -type d -o -name data \) -printf '%p %y %s %T@\n'`)
		v := map[string]string{}
		for _, l := range mntLines(out) {
			name, rest, _ := strings.Cut(l, " ")
			v[name] = rest
		}
		return v
	}

	before := dataDirState(t, m.data)
	m.mount("--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	viewBefore := view()
	if _, err := os.Stat(filepath.Join(m.data, ".kafka_cleanshutdown")); err == nil {
		t.Errorf("the clean-shutdown marker is there while mounted: a kill -9 now would skip recovery")
	}
	m.unmount()
	if _, err := os.Stat(filepath.Join(m.data, ".kafka_cleanshutdown")); err != nil {
		t.Errorf("no clean-shutdown marker after a clean unmount: %v", err)
	}
	after := dataDirState(t, m.data)
	if d := diffStates(before, after); len(d) > 0 {
		t.Errorf("an idle mount and clean unmount changed the data directory:\n%s", strings.Join(d, "\n"))
	}

	// Mounted again: the mount shows the same directory mtimes.
	m.mount("--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	if d := diffStates(viewBefore, view()); len(d) > 0 {
		t.Errorf("after an idle remount the mount shows other mtimes:\n%s", strings.Join(d, "\n"))
	}

	// kill -9 of this idle mount: the next mount recovers, and every
	// record is there; an append goes on from the end.
	m.kill9()
	m.mount("--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	for p, w := range want {
		if got := m.ok(`cat "$M/` + p + `/data"`); got != w {
			t.Errorf("%s/data after kill -9 of an idle remount: %d bytes, want %d", p, len(got), len(w))
		}
	}
	m.ok(`echo after >> "$M/b/0/data"`)
	if got := mntLines(m.ok(`tail -n 2 "$M/b/0/data"`)); !slices.Equal(got, []string{"kgo 3", "after"}) {
		t.Errorf("b/0 ends with %q after an append, want kgo 3, after", got)
	}
	m.unmount()
	m.sanityCheck()
}
