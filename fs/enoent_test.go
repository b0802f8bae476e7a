package fs

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"

	"github.com/segfs/segfs/logstore"
)

// TestWalkDuringEviction: the walk to an existing partition's data never
// fails while the kernel drops the dentries and inodes on the way, as
// drop_caches or memory pressure does (this machine's /proc/vmstat counts
// drop_slab runs): the FORGETs then race the LOOKUPs of the next walks.
// Each round prunes data, the partition and the topic (NOTIFY_PRUNE, or
// entry invalidation on kernels without it) and starts six walks at once,
// half `>>` opens (O_CREAT, so a failed LOOKUP of data would read EPERM
// and only a directory can give ENOENT), half read-only opens.
func TestWalkDuringEviction(t *testing.T) {
	fc := &forgetCounter{}
	m := mountForTest(t, Options{Debug: true,
		Logger: slog.New(slog.NewTextHandler(fc, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err := os.Mkdir(m.path("ev"), 0o755); err != nil {
		t.Fatal(err)
	}
	data := m.path("ev", "0", "data")
	var failed, ops atomic.Int64
	var first atomic.Value
	walk := func(write bool) {
		var f *os.File
		var err error
		if write {
			f, err = os.OpenFile(data, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
			if err == nil {
				_, err = f.Write([]byte("x\n"))
			}
		} else {
			f, err = os.Open(data)
		}
		if f != nil {
			f.Close()
		}
		ops.Add(1)
		if err != nil {
			if failed.Load() < 5 {
				t.Logf("write=%v: %v", write, err)
			}
			failed.Add(1)
			first.CompareAndSwap(nil, err)
		}
	}
	walk(true)
	root := &m.srv.root.Inode
	evict := func(round int) {
		var nodes []*gofs.Inode
		tn := root.GetChild("ev")
		if tn == nil {
			return
		}
		pn := tn.GetChild("0")
		if pn != nil {
			if d := pn.GetChild("data"); d != nil {
				nodes = append(nodes, d)
			}
			nodes = append(nodes, pn)
		}
		nodes = append(nodes, tn)
		if round%2 == 0 && root.NotifyPrune(nodes) == 0 {
			return
		}
		if pn != nil {
			pn.NotifyEntry("data")
		}
		tn.NotifyEntry("0")
		root.NotifyEntry("ev")
	}
	deadline := time.Now().Add(3 * time.Second)
	for round := 0; time.Now().Before(deadline); round++ {
		evict(round)
		var wg sync.WaitGroup
		for i := range 6 {
			wg.Add(1)
			go func() { defer wg.Done(); walk(i%2 == 0) }()
		}
		wg.Wait()
	}
	t.Logf("walks=%d failed=%d forgets=%d", ops.Load(), failed.Load(), fc.n.Load())
	if n := failed.Load(); n > 0 {
		t.Errorf("%d of %d walks to data failed; first: %v (ENOENT: %v)", n, ops.Load(), first.Load(),
			errors.Is(first.Load().(error), syscall.ENOENT))
	}
	if fc.n.Load() == 0 {
		t.Error("no FORGET reached the daemon: the test raced nothing")
	}
}

// forgetCounter counts the FORGETs in go-fuse's debug output.
type forgetCounter struct{ n atomic.Int64 }

func (c *forgetCounter) Write(p []byte) (int, error) {
	if strings.Contains(string(p), "FORGET") {
		c.n.Add(1)
	}
	return len(p), nil
}

// TestWarnDataFailed: a failed lookup or open of data is logged with its
// cause, at most once a second (a `tail -F` retries every second).
func TestWarnDataFailed(t *testing.T) {
	store, err := logstore.Open(t.TempDir(), logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	tp, err := store.CreateTopic("w", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	f := newFsys(store, slog.New(slog.NewTextHandler(&buf, nil)))
	cause := fmt.Errorf("fenced: %w", syscall.ENOSPC)
	for range 3 {
		f.warnDataFailed("open", tp.Partitions()[0], toErrno(cause), cause)
	}
	out := buf.String()
	if n := strings.Count(out, "\n"); n != 1 {
		t.Fatalf("%d lines logged, want 1:\n%s", n, out)
	}
	for _, want := range []string{"level=WARN", `msg="open of data failed"`, "topic=w", "partition=0", `errno="no space left on device"`, "fenced"} {
		if !strings.Contains(out, want) {
			t.Errorf("log line lacks %s: %s", want, out)
		}
	}
}
