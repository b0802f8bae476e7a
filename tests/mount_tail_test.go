package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMountTailFollow starts `tail -f` and `tail -F` before the writers and
// checks that both print every line exactly once across many segment
// rolls.
func TestMountTailFollow(t *testing.T) {
	const writers, lines = 2, 5000
	m := mntNew(t)
	m.ok(`mkdir "$M/follow" && echo segment.bytes=32768 > "$M/follow/config"`)
	data := m.path("follow", "0", "data")
	outDir := t.TempDir()

	for _, mode := range []string{"-f", "-F"} {
		out, err := os.Create(filepath.Join(outDir, "tail"+mode))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("timeout", "300", "tail", mode, "-s", "0.1", "-n", "+1", data)
		cmd.Stdout, cmd.Stderr = out, out
		cmd.Dir = outDir
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		out.Close()
		t.Cleanup(func() {
			// timeout forwards the signal to tail.
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
		})
	}
	mntWaitOpen(t, data, 2, 30*time.Second) // both tails opened the file

	m.ok(fmt.Sprintf(`
for w in $(seq 1 %d); do
  ( for i in $(seq 1 %d); do echo "w$w $i" >> "$M/follow/0/data" || exit 1; done ) &
done
fail=0
for j in $(jobs -p); do wait $j || fail=1; done
exit $fail`, writers, lines), 300)
	segs := m.ok(`ls "$M/follow/0/segments" | grep -c '\.log$'`)
	t.Logf("segments after the run: %s", strings.TrimSpace(segs))
	if n, _ := strconv.Atoi(strings.TrimSpace(segs)); n < 10 {
		t.Fatalf("%s segments: the tails must follow across many segment rolls", strings.TrimSpace(segs))
	}

	for _, mode := range []string{"-f", "-F"} {
		path := filepath.Join(outDir, "tail"+mode)
		var text string
		mntWaitFor(60*time.Second, func() bool {
			b, _ := os.ReadFile(path)
			text = string(b)
			return strings.Count(text, "\n") >= writers*lines
		})
		// Give a straggler (a repeat) time to show up.
		time.Sleep(500 * time.Millisecond)
		b, _ := os.ReadFile(path)
		text = string(b)
		t.Run("tail"+mode, func(t *testing.T) {
			if strings.Contains(text, "tail:") {
				t.Errorf("tail %s complained: %.500s", mode, text)
			}
			checkWriterLines(t, text, writers, lines)
		})
	}
}
