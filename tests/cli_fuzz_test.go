package tests

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/segfs/segfs/cli"
)

// FuzzOfflineTools runs dump-log (every mode) and verify in-process over
// arbitrary .log, .index and .timeindex bytes. Invariants: nothing panics
// (a panic fails the fuzz run), and every failure is a reported problem,
// never an unexplained error.
func FuzzOfflineTools(f *testing.F) {
	if vec, err := os.ReadFile(cliKafkaVector); err == nil {
		f.Add(vec, []byte{}, []byte{})
	}
	seed := cliWriteSegment(f, f.TempDir(), 0, cliThreeBatches())
	log, _ := os.ReadFile(seed.Log)
	idx, _ := os.ReadFile(seed.Index)
	tidx, _ := os.ReadFile(seed.TimeIndex)
	f.Add(log, idx, tidx)
	f.Add(log[:len(log)-7], idx, tidx[:5])
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 2}, idx, tidx)

	f.Fuzz(func(t *testing.T, log, idx, tidx []byte) {
		dataDir := t.TempDir()
		pdir := filepath.Join(dataDir, "fuzz-0")
		if err := os.Mkdir(pdir, 0o755); err != nil {
			t.Fatal(err)
		}
		stem := filepath.Join(pdir, "00000000000000000000")
		for suffix, b := range map[string][]byte{".log": log, ".index": idx, ".timeindex": tidx} {
			if err := os.WriteFile(stem+suffix, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		runs := [][]string{
			{"dump-log", "--print-data-log", stem + ".log"},
			{"dump-log", stem + ".index", stem + ".timeindex"},
			{"dump-log", "--index-sanity-check", stem + ".index", stem + ".timeindex"},
			{"verify", dataDir},
			{"get-offsets", dataDir},
		}
		for _, args := range runs {
			err := cli.RunIO(context.Background(), append([]string{"segfs"}, args...), io.Discard, io.Discard)
			if err != nil && !strings.Contains(err.Error(), "problem found") && !strings.Contains(err.Error(), "problems found") && !strings.Contains(err.Error(), "error found") && !strings.Contains(err.Error(), "errors found") {
				t.Errorf("segfs %v: unexpected error %v", args, err)
			}
		}
	})
}
