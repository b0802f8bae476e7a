package tests

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestMountUnfinishedLineOrderedByClose checks that an unfinished line a
// close(2) ends is stored before what a command run after that close
// appends: `printf a >> data; echo b >> data` stores a, then b. RELEASE,
// which stores the line, comes after close(2) returned, and go-fuse serves
// requests concurrently: without closers, two such loops at once stored
// dozens of b's before their a's per thousand pairs.
func TestMountUnfinishedLineOrderedByClose(t *testing.T) {
	m := mntNew(t)
	wantPairsOrdered(t, m, []string{"o1", "o2"}, 1000, "", "")
}

// wantPairsOrdered runs, for each topic at once, a bash loop of `printf
// a$i >> data; echo b$i >> data` for i in 1..pairs, between the shell
// lines before and after (with $d the topic's data file), and checks that
// every a$i is stored right before its b$i. A before that echoes a first
// line (one, if any) puts it ahead of the pairs.
func wantPairsOrdered(t *testing.T, m *mnt, topics []string, pairs int, before, after string) {
	t.Helper()
	for _, tp := range topics {
		m.ok(`mkdir "$M/` + tp + `"`)
	}
	var wg sync.WaitGroup
	for _, tp := range topics {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.ok(fmt.Sprintf(`d="$M/%s/0/data"; %s
for i in $(seq 1 %d); do printf "a$i" >> "$d"; echo "b$i" >> "$d"; done
%s`, tp, before, pairs, after))
		}()
	}
	wg.Wait()
	first := 0
	if before != "" {
		first = 1
	}
	for _, tp := range topics {
		got := mntLines(m.ok(`cat "$M/` + tp + `/0/data"`))
		if len(got) != 2*pairs+first {
			t.Fatalf("%s: %d lines, want %d", tp, len(got), 2*pairs+first)
		}
		got = got[first:]
		bad := 0
		for i := 1; i <= pairs; i++ {
			if got[2*i-2] != fmt.Sprintf("a%d", i) || got[2*i-1] != fmt.Sprintf("b%d", i) {
				if bad < 3 {
					t.Errorf("%s: lines %d-%d are %q, %q; want a%d, b%d", tp, 2*i-1+first, 2*i+first, got[2*i-2], got[2*i-1], i, i)
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d pairs out of order", tp, bad, pairs)
		}
	}
}

// TestMountUnfinishedLineDupStillOpen checks the cases where a FLUSH with an
// unfinished line is not the last close: a child that inherited the
// descriptor exits while the shell keeps it. The line stays one record when
// the shell completes it, and another writer meanwhile neither waits for
// good nor splits it.
func TestMountUnfinishedLineDupStillOpen(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/d"`)
	// /bin/true inherits the group's descriptor: its exit flushes "ab".
	m.ok(`{ printf a; printf b; /bin/true; echo c; } >> "$M/d/0/data"`)
	// fd 3 stays open with "x" pending while ls exits (a FLUSH) and
	// another open appends a whole line.
	m.ok(`exec 3>>"$M/d/0/data"; printf x >&3; ls "$M" > /dev/null; echo other >> "$M/d/0/data"; echo y >&3; exec 3>&-`)
	got := m.ok(`cat "$M/d/0/data"`)
	if want := "abc\nother\nxy\n"; got != want {
		t.Fatalf("data = %q, want %q", got, want)
	}
	if n := strings.TrimSpace(m.ok(`grep -c . "$M/d/0/data"`)); n != "3" {
		t.Fatalf("%s records, want 3", n)
	}
}
