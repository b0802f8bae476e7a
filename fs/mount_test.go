package fs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/segfs/segfs/logstore"
)

// These tests mount in-process (so that -race sees the handlers) and drive
// the mount from the test process or from child processes that never run
// with a working directory or descriptors on the mount.

type testMount struct {
	t     *testing.T
	store *logstore.Store
	srv   *Server
	dir   string
}

func mountForTest(t *testing.T, opts Options) *testMount {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("needs /dev/fuse: %v", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("in-process mounts use mount(2) and need root")
	}
	base := t.TempDir()
	store, err := logstore.Open(filepath.Join(base, "data"), logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	srv, err := Mount(store, dir, opts)
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(time.Second); err != nil {
			t.Errorf("unmount: %v", err)
			syscall.Unmount(dir, syscall.MNT_DETACH)
		}
		srv.Wait()
		if err := store.Close(); err != nil {
			t.Errorf("store close: %v", err)
		}
	})
	return &testMount{t: t, store: store, srv: srv, dir: dir}
}

func (m *testMount) path(names ...string) string {
	return filepath.Join(append([]string{m.dir}, names...)...)
}

func TestInProcessReadWrite(t *testing.T) {
	m := mountForTest(t, Options{})
	if err := os.Mkdir(m.path("t"), 0o755); err != nil {
		t.Fatal(err)
	}
	data := m.path("t", "0", "data")
	st0, err := os.Stat(data)
	if err != nil {
		t.Fatal(err)
	}

	// Random chunks, several writers' worth of lines, one handle.
	var want bytes.Buffer
	for i := range 3000 {
		fmt.Fprintf(&want, "line %d %s\n", i, strings.Repeat("z", i%97))
	}
	f, err := os.OpenFile(data, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	for p := want.Bytes(); len(p) > 0; {
		n := min(len(p), 1+rng.Intn(9000))
		if _, err := f.Write(p[:n]); err != nil {
			t.Fatal(err)
		}
		p = p[n:]
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("fsync: %v", err)
	}
	f.Close()

	got, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("read back %d bytes, want %d", len(got), want.Len())
	}
	st, err := os.Stat(data)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != int64(want.Len()) {
		t.Errorf("st_size %d, want %d", st.Size(), want.Len())
	}
	if st.Sys().(*syscall.Stat_t).Ino != st0.Sys().(*syscall.Stat_t).Ino {
		t.Errorf("data changed inode number")
	}

	// offset/N is the suffix from record N.
	b, err := os.ReadFile(m.path("t", "0", "offset", "2999"))
	if err != nil || !strings.HasPrefix(string(b), "line 2999 ") {
		t.Errorf("offset/2999 = %q, %v", b, err)
	}
	for _, bad := range []string{"3001", "01", "-1", "x"} {
		if _, err := os.Stat(m.path("t", "0", "offset", bad)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("offset/%s: %v, want ENOENT", bad, err)
		}
	}
	if target, err := os.Readlink(m.path("t", "0", "time", "0")); err != nil || target != "../offset/0" {
		t.Errorf("time/0 -> %q, %v", target, err)
	}

	// A partial line becomes a record once its handle is released.
	f, _ = os.OpenFile(data, os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte("tail without newline"))
	f.Close()
	waitFor(t, func() bool {
		b, _ := os.ReadFile(data)
		return bytes.HasSuffix(b, []byte("\ntail without newline\n"))
	})

	// Config.
	if err := os.WriteFile(m.path("t", "config"), []byte("segment.bytes=1048576\n"), 0); err != nil {
		t.Fatalf("config write: %v", err)
	}
	if err := os.WriteFile(m.path("t", "config"), []byte("bogus=1\n"), 0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("bogus config: %v, want EINVAL", err)
	}
	cfg, _ := os.ReadFile(m.path("t", "config"))
	if !strings.Contains(string(cfg), "segment.bytes=1048576\n") {
		t.Errorf("config:\n%s", cfg)
	}
	if err := os.Truncate(data, 0); !errors.Is(err, syscall.EPERM) {
		t.Errorf("truncate: %v, want EPERM", err)
	}
}

// TestNotifyExternalAppend appends through logstore, not through the
// mount, with a one-hour attribute timeout: only the notifier can make a
// reader see the growth, and the grown file must read right (no NUL
// bytes from a stale cached page).
func TestNotifyExternalAppend(t *testing.T) {
	m := mountForTest(t, Options{attrTimeout: time.Hour})
	p := m.topic(t, "n")
	if _, _, err := p.AppendLines([]byte("first\n")); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(m.path("n", "0", "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 100)
	n, _ := f.ReadAt(buf, 0) // caches the partial first page
	if string(buf[:n]) != "first\n" {
		t.Fatalf("read %q", buf[:n])
	}
	var slowest time.Duration
	for i := range 5 {
		line := fmt.Sprintf("external %d\n", i)
		start := time.Now()
		if _, _, err := p.AppendLines([]byte(line)); err != nil {
			t.Fatal(err)
		}
		var text string
		waitFor(t, func() bool {
			b, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<20))
			text = string(b)
			return err == nil && strings.HasSuffix(text, line)
		})
		slowest = max(slowest, time.Since(start))
		if strings.Contains(text, "\x00") {
			t.Fatalf("NUL bytes in %q", text)
		}
	}
	// DESIGN.md asks for one second; timings are not asserted (the
	// machine is shared), only reported.
	t.Logf("slowest append-to-visible: %v", slowest)
}

func TestPanicInCallbackKeepsMount(t *testing.T) {
	testLookupHook = func(name string) {
		if name == "panic-now" {
			panic("injected")
		}
	}
	t.Cleanup(func() { testLookupHook = nil }) // after the unmount below
	m := mountForTest(t, Options{})
	if _, err := os.Stat(m.path("panic-now")); !errors.Is(err, syscall.EIO) {
		t.Errorf("stat of the panicking name: %v, want EIO", err)
	}
	if err := os.Mkdir(m.path("alive"), 0o755); err != nil {
		t.Fatalf("mount unusable after a panic: %v", err)
	}
}

// TestUnmountBusy unmounts while a child process holds a file open: the
// mount is detached lazily and Unmount returns after the grace period.
func TestUnmountBusy(t *testing.T) {
	m := mountForTest(t, Options{})
	if err := os.Mkdir(m.path("b"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "30")
	f, err := os.Open(m.path("b", "0", "data"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.ExtraFiles = []*os.File{f}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if err := m.srv.Unmount(200 * time.Millisecond); err != nil {
		t.Fatalf("Unmount: %v", err)
	}
	if mi, _ := findMount(m.dir); mi != nil {
		t.Fatalf("still mounted after Unmount")
	}
	cmd.Process.Kill()
	cmd.Wait()
	select {
	case <-m.srv.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("server still serving after the last open file closed")
	}
}

// topic makes the topic name through the mount (mkdir) and returns its
// partition 0.
func (m *testMount) topic(t *testing.T, name string) *logstore.Partition {
	t.Helper()
	if err := os.Mkdir(m.path(name), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := m.store.Partition(name, 0)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestParseMountInfo(t *testing.T) {
	const mi = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
42 27 0:39 / /tmp/a\040b rw,nosuid,nodev,relatime - fuse.segfs /data rw,user_id=0
43 42 0:40 / /tmp/a\040b rw - fuse.segfs /data2 rw
`
	mounts, err := parseMountInfo(strings.NewReader(mi))
	if err != nil || len(mounts) != 3 {
		t.Fatalf("parseMountInfo = %+v, %v", mounts, err)
	}
	if got := topmost(mounts, "/tmp/a b"); got == nil || got.id != "43" || got.dev != "0:40" || got.fstype != "fuse.segfs" || got.source != "/data2" {
		t.Fatalf("topmost = %+v", got)
	}
	if got := topmost(mounts, "/tmp/x"); got != nil {
		t.Fatalf("found %+v for an unmounted dir", got)
	}
}

// TestGenerations changes key.separator, which starts a new text
// generation: an open reader keeps its generation's text and positions,
// a new open sees the new rendering, and data keeps its inode number.
func TestGenerations(t *testing.T) {
	m := mountForTest(t, Options{})
	if err := os.Mkdir(m.path("g"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(m.path("g", "config"), []byte("key.separator=:\n"), 0); err != nil {
		t.Fatal(err)
	}
	data := m.path("g", "0", "data")
	appendLine := func(s string) {
		t.Helper()
		f, err := os.OpenFile(data, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	appendLine("k1:v1\n")
	old, err := os.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	st0, _ := old.Stat()
	if b, _ := io.ReadAll(old); string(b) != "k1:v1\n" {
		t.Fatalf("old generation reads %q", b)
	}
	p, _ := m.store.Partition("g", 0)
	gen := p.Generation()
	if err := os.WriteFile(m.path("g", "config"), []byte("key.separator=|\n"), 0); err != nil {
		t.Fatal(err)
	}
	if p.Generation() == gen {
		t.Fatal("logstore did not start a new generation on a key.separator change")
	}
	// A new open, right away: the new rendering.
	if b, err := os.ReadFile(data); err != nil || string(b) != "k1|v1\n" {
		t.Fatalf("new open reads %q, %v; want the new generation", b, err)
	}
	st1, err := os.Stat(data)
	if err != nil {
		t.Fatal(err)
	}
	if st1.Sys().(*syscall.Stat_t).Ino != st0.Sys().(*syscall.Stat_t).Ino {
		t.Fatal("a new generation changed st_ino")
	}
	appendLine("k2|v2\n")
	// The old handle goes on in its own generation's coordinates.
	waitFor(t, func() bool {
		b, _ := io.ReadAll(io.NewSectionReader(old, 0, 1<<20))
		return string(b) == "k1:v1\nk2:v2\n"
	})
	if st, _ := old.Stat(); st.Size() != int64(len("k1:v1\nk2:v2\n")) {
		t.Errorf("old handle's size %d", st.Size())
	}
	if b, _ := os.ReadFile(data); string(b) != "k1|v1\nk2|v2\n" {
		t.Fatalf("new open reads %q", b)
	}
	if b, _ := os.ReadFile(m.path("g", "0", "offset", "1")); string(b) != "k2|v2\n" {
		t.Fatalf("offset/1 reads %q", b)
	}
}
