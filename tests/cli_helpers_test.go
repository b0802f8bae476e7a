package tests

// Helpers for the CLI tests: run the built binary with separate stdout and
// stderr, build segment files byte by byte (so that a corruption lands at a
// known position), and compare against golden files.

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/segfs/segfs/index"
	"github.com/segfs/segfs/logstore/record"
)

// The -update flag rewrites golden files. It is registered only if no
// other test file of the package registered it first (package variables
// of every file are initialised before any init runs), so that two owners
// of golden files cannot make the package panic with "flag redefined".
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files under testdata/")
	}
}

func cliUpdateGolden() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// cliResult is what one run of the binary produced.
type cliResult struct {
	Stdout, Stderr string
	Code           int // exit status; -1 if it did not exit normally
}

// cliRun runs the segfs binary with args, keeping stdout and stderr apart.
func cliRun(t *testing.T, args ...string) cliResult {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(segfsBin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := cliResult{Stdout: out.String(), Stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.Code = ee.ExitCode()
	default:
		t.Fatalf("running segfs %v: %v", args, err)
	}
	if bytes.Contains(errb.Bytes(), []byte("panic:")) || bytes.Contains(errb.Bytes(), []byte("goroutine ")) {
		t.Fatalf("segfs %v crashed:\n%s", args, errb.String())
	}
	return r
}

// cliBatch describes one batch of a hand-built segment.
type cliBatch struct {
	Base   int64
	TS     int64 // timestamp of the first record; record i gets TS+i
	Values []string
	Key    string // non-empty: every record gets this key
	// Control makes a transaction COMMIT marker (coordinator epoch 5) of
	// producer 7; Values only sets the record count.
	Control bool
	// Idempotent gives the batch producer 7, epoch 1, base sequence 10.
	Idempotent bool
}

// cliBuildBatch encodes b as a magic-v2 batch.
func cliBuildBatch(t testing.TB, b cliBatch) []byte {
	t.Helper()
	var bl record.Builder
	spec := record.DefaultSpec()
	spec.BaseOffset = b.Base
	if b.Control || b.Idempotent {
		spec.ProducerID, spec.ProducerEpoch = 7, 1
	}
	if b.Idempotent {
		spec.BaseSequence = 10
	}
	spec.Control, spec.Transactional = b.Control, b.Control
	bl.Reset(spec)
	for i, v := range b.Values {
		key, value := []byte(nil), []byte(v)
		if b.Key != "" {
			key = []byte(b.Key)
		}
		var headers []record.RecordHeader
		if b.Idempotent {
			headers = []record.RecordHeader{{Key: "h1", Value: []byte("x")}, {Key: "h2"}}
		}
		if b.Control {
			key, value = []byte{0, 0, 0, 1}, []byte{0, 0, 0, 0, 0, 5}
		}
		bl.Add(b.TS+int64(i), key, value, headers)
	}
	out, err := bl.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// cliSegment is a segment written by cliWriteSegment: where each batch
// starts, and the file paths.
type cliSegment struct {
	Dir, Log, Index, TimeIndex string
	Positions                  []int64
	Batches                    [][]byte
}

// cliWriteSegment writes base's .log with the given batches and, as
// logstore would with index.interval.bytes=0, an .index and .timeindex
// entry for every batch but the first.
func cliWriteSegment(t testing.TB, dir string, base int64, batches []cliBatch) *cliSegment {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := &cliSegment{Dir: dir}
	stem := filepath.Join(dir, fmt.Sprintf("%020d", base))
	s.Log, s.Index, s.TimeIndex = stem+".log", stem+".index", stem+".timeindex"
	var log, idx, tidx []byte
	for i, tb := range batches {
		raw := cliBuildBatch(t, tb)
		pos := int64(len(log))
		s.Positions = append(s.Positions, pos)
		s.Batches = append(s.Batches, raw)
		log = append(log, raw...)
		last := tb.Base + int64(len(tb.Values)) - 1
		if i > 0 {
			idx = index.AppendOffsetEntry(idx, base, index.OffsetEntry{Offset: last, Position: int32(pos)})
			tidx = index.AppendTimeEntry(tidx, base, index.TimeEntry{Timestamp: tb.TS + int64(len(tb.Values)) - 1, Offset: last})
		}
	}
	for path, data := range map[string][]byte{s.Log: log, s.Index: idx, s.TimeIndex: tidx} {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// cliThreeBatches is a small segment at base 0: offsets 0-1, 2-4, 5.
func cliThreeBatches() []cliBatch {
	return []cliBatch{
		{Base: 0, TS: 1700000000000, Values: []string{"hello", "world"}},
		{Base: 2, TS: 1700000001000, Values: []string{"a", "b", "c"}, Key: "k"},
		{Base: 5, TS: 1700000002000, Values: []string{"last"}},
	}
}

// cliFlipByte XORs one byte of a file in place.
func cliFlipByte(t *testing.T, path string, pos int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[pos] ^= 0xff
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// cliCheckGolden compares got with testdata/<name>, or rewrites it with -update.
func cliCheckGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if cliUpdateGolden() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./tests -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}
