package fs

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// Distinct offset/N and time/T lookups must not pile up nodes: past
// maxLiveChildren the oldest dentries are invalidated and the kernel
// forgets them.
func TestLookupNodesBounded(t *testing.T) {
	// Its own mount, and most of its time is the kernel's: the LOOKUPs
	// and then the FORGETs it waits for. It runs beside the package's
	// other waiting tests (TestOffsetLookupReusesNode), after the rest.
	t.Parallel()
	m := mountForTest(t, Options{})
	if err := os.Mkdir(m.path("t"), 0o755); err != nil {
		t.Fatal(err)
	}
	const n = maxLiveChildren + 200
	var sb strings.Builder
	for i := range n {
		fmt.Fprintf(&sb, "%d\n", i)
	}
	f, err := os.OpenFile(m.path("t", "0", "data"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(sb.String()); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for i := range n {
		if _, err := os.Stat(m.path("t", "0", "offset", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	// The last ones are still readable and right.
	b, err := os.ReadFile(m.path("t", "0", "offset", fmt.Sprint(n-1)))
	if err != nil || string(b) != fmt.Sprintf("%d\n", n-1) {
		t.Fatalf("offset/%d = %q, %v", n-1, b, err)
	}
	dir := m.srv.root.GetChild("t").GetChild("0").GetChild("offset")
	live := 0
	for deadline := time.Now().Add(5 * time.Second); ; {
		live = 0
		for _, ch := range dir.Children() {
			if !ch.Forgotten() {
				live++
			}
		}
		if live <= maxLiveChildren || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if live > maxLiveChildren {
		t.Errorf("%d offset/N nodes live after %d lookups, want <= %d", live, n, maxLiveChildren)
	}
}

// Repeated lookups of one offset/N, each after the kernel's entry timeout
// has run out (so each is a real LOOKUP), and across appends, reuse one
// node: the same go-fuse inode and the same textNode.
func TestOffsetLookupReusesNode(t *testing.T) {
	// Its own mount, and most of its time is waiting for the kernel's
	// entry timeout to run out (four times): it runs beside the package's
	// other waiting tests (TestLookupNodesBounded), after the rest.
	t.Parallel()
	m := mountForTest(t, Options{})
	p := m.topic(t, "r")
	if _, _, err := p.AppendLines([]byte("a\nb\nc\n")); err != nil {
		t.Fatal(err)
	}
	name := m.path("r", "0", "offset", "1")
	var first *textNode
	for i := range 4 {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if want := "b\nc\n" + strings.Repeat("more\n", i); string(b) != want {
			t.Fatalf("lookup %d: offset/1 reads %q, want %q", i, b, want)
		}
		ch := m.srv.root.GetChild("r").GetChild("0").GetChild("offset").GetChild("1")
		if ch == nil {
			t.Fatalf("lookup %d: no node for offset/1", i)
		}
		n, ok := ch.Operations().(*textNode)
		if !ok {
			t.Fatalf("lookup %d: offset/1 is a %T", i, ch.Operations())
		}
		if first == nil {
			first = n
		} else if n != first {
			t.Fatalf("lookup %d of offset/1 made a new node", i)
		}
		if _, _, err := p.AppendLines([]byte("more\n")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(cacheTimeout + 200*time.Millisecond)
	}
}
