package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// cliSingular finds a count of one with a plural noun, or a "(s)": the
// offline tools said "1 segments", "1 error(s)".
var cliSingular = regexp.MustCompile(`(^|[^0-9.,])1 (partition|segment|batch|error|warning|byte|invalid byte|trailing byte|entr|record|message|problem|offset|unused preallocated slot)(s|es|ies)\b|\(s\)`)

// TestCLICountsAgree: verify and dump-log name one segment, batch,
// partition, error, warning or byte in the singular ("1 segment"), and
// more in the plural, with no "(s)". Kafka's own "Found N invalid bytes at
// the end of FILE" of dump-log is kept as Kafka prints it.
func TestCLICountsAgree(t *testing.T) {
	dataDir := t.TempDir()
	one := cliWriteSegment(t, filepath.Join(dataDir, "one-0"), 0, []cliBatch{{Base: 0, TS: 1700000000000, Values: []string{"x"}}})
	size := int64(len(one.Batches[0]))

	check := func(what string, r cliResult, code int, want ...string) {
		t.Helper()
		out := r.Stdout + r.Stderr
		if r.Code != code {
			t.Errorf("%s: exit %d, want %d", what, r.Code, code)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: no %q", what, w)
			}
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "Found ") { // Kafka's text
				continue
			}
			if cliSingular.MatchString(l) {
				t.Errorf("%s: %q", what, l)
			}
		}
		if t.Failed() {
			t.Fatalf("%s:\n%s%s", what, r.Stdout, r.Stderr)
		}
	}

	check("verify, one of each", cliRun(t, "verify", dataDir), 0,
		"one-0: ok (1 segment, 1 batch, log start 0, log end 1, ",
		"verified 1 partition, 1 segment, 1 batch: 0 errors, 0 warnings\n")

	// One byte past the batch: a warning in the active segment.
	f, err := os.OpenFile(one.Log, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte{0}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	check("verify, one partial byte", cliRun(t, "verify", dataDir), 0,
		"warning: "+one.Log+": position "+strconv.FormatInt(size, 10)+": partial batch at the end of the active segment (1 byte; only 1 byte, a batch header needs 61)",
		"one-0: 0 errors, 1 warning (1 segment, 1 batch, ",
		"verified 1 partition, 1 segment, 1 batch: 0 errors, 1 warning\n")
	check("dump-log, one partial byte", cliRun(t, "dump-log", one.Log), 1,
		"Found 1 invalid bytes at the end of 00000000000000000000.log",
		"dump-log: 1 problem found")

	// A second partition and segment, the first now closed: its partial
	// byte is one error.
	cliWriteSegment(t, filepath.Join(dataDir, "one-0"), 1, []cliBatch{{Base: 1, TS: 1700000001000, Values: []string{"y", "z"}}})
	cliWriteSegment(t, filepath.Join(dataDir, "two-0"), 0, cliThreeBatches())
	check("verify, one error", cliRun(t, "verify", dataDir), 1,
		"error: "+one.Log+": position "+strconv.FormatInt(size, 10)+": partial batch at the end of a closed segment (1 byte; ",
		"one-0: 1 error, 0 warnings (2 segments, 2 batches, log start 0, log end 3, ",
		"two-0: ok (1 segment, 3 batches, ",
		"verified 2 partitions, 3 segments, 5 batches: 1 error, 0 warnings\n",
		"verify: 1 error found in "+dataDir)
}
