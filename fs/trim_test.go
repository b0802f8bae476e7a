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
