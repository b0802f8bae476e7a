package tests

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// TestMountConcurrentWriters runs 4 bash loops of 10,000 `echo >>` each:
// every line lands once, and each writer's lines keep their order.
func TestMountConcurrentWriters(t *testing.T) {
	const writers, lines = 4, 10000
	m := mntNew(t)
	m.ok(`mkdir "$M/conc" && echo segment.bytes=262144 > "$M/conc/config"`)
	m.ok(fmt.Sprintf(`
for w in $(seq 1 %d); do
  ( for i in $(seq 1 %d); do echo "w$w $i" >> "$M/conc/0/data" || exit 1; done ) &
done
fail=0
for j in $(jobs -p); do wait $j || fail=1; done
exit $fail`, writers, lines), 600)
	checkWriterLines(t, m.ok(`cat "$M/conc/0/data"`), writers, lines)
	if got := m.ok(`wc -l < "$M/conc/0/data"`); got != strconv.Itoa(writers*lines)+"\n" {
		t.Errorf("wc -l = %q", got)
	}
}

// checkWriterLines checks lines "wN I": each writer 1..writers wrote
// 1..lines once, in order.
func checkWriterLines(t *testing.T, text string, writers, lines int) {
	t.Helper()
	next := make(map[string]int)
	for i, l := range mntLines(text) {
		w, num, ok := strings.Cut(l, " ")
		n, err := strconv.Atoi(num)
		if !ok || err != nil {
			t.Fatalf("line %d: %q is not a writer line", i+1, l)
		}
		if n != next[w]+1 {
			t.Fatalf("line %d: %q after %s %d: lost, repeated or reordered", i+1, l, w, next[w])
		}
		next[w] = n
	}
	for w := 1; w <= writers; w++ {
		if got := next["w"+strconv.Itoa(w)]; got != lines {
			t.Errorf("writer w%d: %d lines, want %d", w, got, lines)
		}
	}
}
