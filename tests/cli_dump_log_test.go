package tests

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/segfs/segfs/index"
)

const cliKafkaVector = "testdata/kafka/__cluster_metadata-0/00000000000000000000.log"

// TestDumpLogKafkaVector dumps the segment a real Kafka broker wrote and
// compares with golden output, plus the batch facts known independently
// of segfs (testdata/kafka/README.md), so the golden file cannot drift
// into agreeing with a bug.
func TestDumpLogKafkaVector(t *testing.T) {
	for _, tc := range []struct {
		golden string
		flags  []string
	}{
		{"dump-log/kraft.golden", nil},
		{"dump-log/kraft-deep.golden", []string{"--deep-iteration"}},
		{"dump-log/kraft-data.golden", []string{"--print-data-log"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			args := append(append([]string{"dump-log"}, tc.flags...), cliKafkaVector)
			r := cliRun(t, args...)
			if r.Code != 0 || r.Stderr != "" {
				t.Fatalf("exit %d, stderr:\n%s", r.Code, r.Stderr)
			}
			cliCheckGolden(t, tc.golden, []byte(r.Stdout))
			for _, want := range []string{
				"Dumping " + cliKafkaVector + "\n",
				"Log starting offset: 0\n",
				"baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 1 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: ",
				" size: 91 magic: 2 compresscodec: none crc: 2959689084 isvalid: true\n",
				"baseOffset: 1 lastOffset: 3 count: 3 ",
				" position: 91 ",
				" size: 240 magic: 2 compresscodec: none crc: 618336989 isvalid: true\n",
			} {
				if !strings.Contains(r.Stdout, want) {
					t.Errorf("output lacks %q", want)
				}
			}
			records := strings.Count(r.Stdout, "\n| offset: ")
			if wantRecs := map[bool]int{true: 4, false: 0}[len(tc.flags) > 0]; records != wantRecs {
				t.Errorf("%d record lines, want %d", records, wantRecs)
			}
		})
	}
}

func TestDumpLogRecords(t *testing.T) {
	seg := cliWriteSegment(t, t.TempDir(), 0, cliThreeBatches())
	r := cliRun(t, "dump-log", "--print-data-log", seg.Log)
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	for _, want := range []string{
		"| offset: 0 CreateTime: 1700000000000 keySize: -1 valueSize: 5 sequence: -1 headerKeys: [] payload: hello\n",
		"| offset: 3 CreateTime: 1700000001001 keySize: 1 valueSize: 1 sequence: -1 headerKeys: [] key: k payload: b\n",
		fmt.Sprintf("baseOffset: 5 lastOffset: 5 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: %d CreateTime: 1700000002000 size: %d magic: 2 compresscodec: none", seg.Positions[2], len(seg.Batches[2])),
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("output lacks %q\n%s", want, r.Stdout)
		}
	}
	// --skip-record-metadata prints Kafka's short form.
	r = cliRun(t, "dump-log", "--print-data-log", "--skip-record-metadata", seg.Log)
	if !strings.Contains(r.Stdout, "\n payload: hello\n") || !strings.Contains(r.Stdout, "\n| key: k payload: a\n") {
		t.Errorf("--skip-record-metadata output:\n%s", r.Stdout)
	}
}

// TestDumpLogCorrupt damages segments in the ways a disk or a crash does
// and checks that each is reported with its file and position, with a
// non-zero exit, and that nothing crashes or allocates a claimed size.
func TestDumpLogCorrupt(t *testing.T) {
	type damage struct {
		name      string
		apply     func(t *testing.T, s *cliSegment)
		stderr    string // substring of stderr, %s = log path, %d = position of batch 1
		stdout    string // substring of stdout ("" = none required)
		nextBatch bool   // the batch after the damage is still printed
	}
	for _, tc := range []damage{
		{
			name:      "crc",
			apply:     func(t *testing.T, s *cliSegment) { cliFlipByte(t, s.Log, s.Positions[1]+int64(len(s.Batches[1]))-1) },
			stderr:    "corrupt batch at position %d in %s: CRC mismatch",
			stdout:    "isvalid: false",
			nextBatch: true,
		},
		{
			name:   "magic",
			apply:  func(t *testing.T, s *cliSegment) { cliFlipByte(t, s.Log, s.Positions[1]+16) },
			stderr: "corrupt batch at position %d in %s: magic",
			stdout: "invalid bytes at the end of 00000000000000000000.log",
		},
		{
			name: "length 2GB",
			apply: func(t *testing.T, s *cliSegment) {
				cliPatch(t, s.Log, s.Positions[1]+8, binary.BigEndian.AppendUint32(nil, 0x7fffffff))
			},
			stderr: "truncated batch at position %d in %s: batch length says 2147483659 bytes",
			stdout: "invalid bytes at the end of 00000000000000000000.log",
		},
		{
			name: "negative length",
			apply: func(t *testing.T, s *cliSegment) {
				cliPatch(t, s.Log, s.Positions[1]+8, binary.BigEndian.AppendUint32(nil, 0xfffffff0))
			},
			stderr: "corrupt batch at position %d in %s: batch length -16",
		},
		{
			name: "torn tail",
			apply: func(t *testing.T, s *cliSegment) {
				if err := os.Truncate(s.Log, s.Positions[2]+30); err != nil {
					t.Fatal(err)
				}
			},
			stdout: "Found 30 invalid bytes at the end of 00000000000000000000.log\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seg := cliWriteSegment(t, t.TempDir(), 0, cliThreeBatches())
			tc.apply(t, seg)
			r := cliRun(t, "dump-log", "--deep-iteration", seg.Log)
			if r.Code == 0 {
				t.Errorf("exit 0 for a damaged segment; stderr:\n%s", r.Stderr)
			}
			if tc.stderr != "" {
				if want := fmt.Sprintf(tc.stderr, seg.Positions[1], seg.Log); !strings.Contains(r.Stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.Stderr)
				}
			}
			if tc.stdout != "" && !strings.Contains(r.Stdout, tc.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdout, r.Stdout)
			}
			if !strings.Contains(r.Stdout, "baseOffset: 0 lastOffset: 1 ") {
				t.Errorf("the batch before the damage is missing:\n%s", r.Stdout)
			}
			if got := strings.Contains(r.Stdout, "baseOffset: 5 "); got != tc.nextBatch && tc.name != "torn tail" {
				t.Errorf("batch after the damage printed = %v, want %v", got, tc.nextBatch)
			}
			if strings.Contains(r.Stdout, "| offset: 2 ") && tc.name == "crc" {
				t.Errorf("records of a batch failing its CRC were printed as data")
			}
		})
	}
}

// cliPatch overwrites bytes of a file at pos.
func cliPatch(t *testing.T, path string, pos int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, pos); err != nil {
		t.Fatal(err)
	}
}

func TestDumpLogIndexes(t *testing.T) {
	seg := cliWriteSegment(t, t.TempDir(), 0, cliThreeBatches())
	r := cliRun(t, "dump-log", seg.Index, seg.TimeIndex)
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	want := fmt.Sprintf("Dumping %s\noffset: 4 position: %d\noffset: 5 position: %d\nDumping %s\ntimestamp: 1700000001002 offset: 4\ntimestamp: 1700000002000 offset: 5\n",
		seg.Index, seg.Positions[1], seg.Positions[2], seg.TimeIndex)
	if r.Stdout != want {
		t.Errorf("got:\n%s\nwant:\n%s", r.Stdout, want)
	}

	r = cliRun(t, "dump-log", "--index-sanity-check", seg.Index, seg.TimeIndex)
	if r.Code != 0 || !strings.Contains(r.Stdout, seg.Index+" passed sanity check.\n") || !strings.Contains(r.Stdout, seg.TimeIndex+" passed sanity check.\n") {
		t.Errorf("sanity check of good indexes: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}

	// An index that outlived a truncation of its log: its last entry
	// points past the end, and the time index names an offset the log no
	// longer has.
	if err := os.Truncate(seg.Log, seg.Positions[2]); err != nil {
		t.Fatal(err)
	}
	r = cliRun(t, "dump-log", "--index-sanity-check", seg.Index, seg.TimeIndex)
	if r.Code == 0 {
		t.Errorf("exit 0 for indexes pointing past their log")
	}
	for _, want := range []string{
		seg.Index + " failed sanity check:",
		fmt.Sprintf("position %d >= log size %d", seg.Positions[2], seg.Positions[2]),
		seg.TimeIndex + " failed sanity check:",
		"offset 5 >= log next offset 5",
	} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.Stderr)
		}
	}
	r = cliRun(t, "dump-log", "--verify-index-only", seg.Index, seg.TimeIndex)
	if r.Code == 0 || !strings.Contains(r.Stderr, "Mismatches in :") || !strings.Contains(r.Stderr, "Indexed offset: 5, found log offset: -1") {
		t.Errorf("--verify-index-only: exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if strings.Contains(r.Stdout, "offset: 4 position") {
		t.Errorf("--verify-index-only printed entries:\n%s", r.Stdout)
	}
}

// TestDumpLogIndexGarbage feeds index files that are not indexes.
func TestDumpLogIndexGarbage(t *testing.T) {
	seg := cliWriteSegment(t, t.TempDir(), 0, cliThreeBatches())
	// Entries going backwards and a length that is not a multiple of 8.
	var idx []byte
	idx = index.AppendOffsetEntry(idx, 0, index.OffsetEntry{Offset: 5, Position: int32(seg.Positions[2])})
	idx = index.AppendOffsetEntry(idx, 0, index.OffsetEntry{Offset: 4, Position: int32(seg.Positions[1])})
	idx = append(idx, 1, 2, 3)
	if err := os.WriteFile(seg.Index, idx, 0o644); err != nil {
		t.Fatal(err)
	}
	r := cliRun(t, "dump-log", "--index-sanity-check", seg.Index)
	if r.Code == 0 || !strings.Contains(r.Stderr, "failed sanity check") {
		t.Errorf("garbage index passed: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	// An empty index is Kafka's "is empty." case.
	if err := os.WriteFile(seg.Index, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r = cliRun(t, "dump-log", seg.Index)
	if r.Code != 0 || !strings.Contains(r.Stdout, seg.Index+" is empty.\n") {
		t.Errorf("empty index: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

func TestDumpLogArguments(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(other, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := cliRun(t, "dump-log", other)
	if r.Code != 0 || !strings.Contains(r.Stderr, "Ignoring unknown file "+other) {
		t.Errorf("unknown suffix: exit %d, stderr %q", r.Code, r.Stderr)
	}
	r = cliRun(t, "dump-log", filepath.Join(dir, "00000000000000000000.log"))
	if r.Code == 0 || !strings.Contains(r.Stderr, "no such file") {
		t.Errorf("missing file: exit %d, stderr %q", r.Code, r.Stderr)
	}
	r = cliRun(t, "dump-log", cliKafkaVector, "--deep-iteration")
	if r.Code == 0 || !strings.Contains(r.Stderr, `flag "--deep-iteration" must come before the arguments`) {
		t.Errorf("late flag: exit %d, stderr %q", r.Code, r.Stderr)
	}
	r = cliRun(t, "dump-log")
	if r.Code == 0 || !strings.Contains(r.Stderr, "no files given") {
		t.Errorf("no files: exit %d, stderr %q", r.Code, r.Stderr)
	}
	// Kafka's --files a,b form.
	r = cliRun(t, "dump-log", "--files", cliKafkaVector+","+cliKafkaVector)
	if r.Code != 0 || strings.Count(r.Stdout, "Dumping ") != 2 {
		t.Errorf("--files: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	// --max-bytes stops before a batch that does not fit, silently.
	r = cliRun(t, "dump-log", "--max-bytes", "100", cliKafkaVector)
	if r.Code != 0 || strings.Count(r.Stdout, "baseOffset:") != 1 || strings.Contains(r.Stdout, "invalid bytes") {
		t.Errorf("--max-bytes 100: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// TestDumpLogPreallocatedIndex covers the indexes of an active segment: a
// preallocated file of zeros (no entry yet) and entries followed by zero
// slots. They are sound, and dump-log must not take the zero slots for
// entries at position 0.
func TestDumpLogPreallocatedIndex(t *testing.T) {
	seg := cliWriteSegment(t, t.TempDir(), 0, cliThreeBatches())
	idx, _ := os.ReadFile(seg.Index)
	tidx, _ := os.ReadFile(seg.TimeIndex)
	for name, files := range map[string][2][]byte{
		"zeros":     {make([]byte, 800), make([]byte, 1200)},
		"zero tail": {append(idx, make([]byte, 800)...), append(tidx, make([]byte, 1200)...)},
	} {
		t.Run(name, func(t *testing.T) {
			cliWriteFile(t, seg.Index, string(files[0]))
			cliWriteFile(t, seg.TimeIndex, string(files[1]))
			r := cliRun(t, "dump-log", "--index-sanity-check", seg.Index, seg.TimeIndex)
			// An index of zeros is Kafka's "is empty." case.
			verdicts := strings.Count(r.Stdout, "passed sanity check.") + strings.Count(r.Stdout, " is empty.\n")
			if r.Code != 0 || verdicts != 2 || !strings.Contains(r.Stderr, "unused preallocated slots") {
				t.Errorf("sanity: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
			}
			r = cliRun(t, "dump-log", seg.Index, seg.TimeIndex)
			if r.Code != 0 || strings.Contains(r.Stdout, "position: 0\n") || strings.Contains(r.Stdout, "timestamp: 0 ") {
				t.Errorf("dump: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
			}
		})
	}
}

// TestDumpLogProducerAndControl checks the producer fields, sequences,
// header keys and transaction markers against Kafka's rendering.
func TestDumpLogProducerAndControl(t *testing.T) {
	seg := cliWriteSegment(t, t.TempDir(), 0, []cliBatch{
		{Base: 0, TS: 1700000000000, Values: []string{"p", "q"}, Idempotent: true},
		{Base: 2, TS: 1700000000005, Values: []string{""}, Control: true},
	})
	r := cliRun(t, "dump-log", "--print-data-log", seg.Log)
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	for _, want := range []string{
		"baseOffset: 0 lastOffset: 1 count: 2 baseSequence: 10 lastSequence: 11 producerId: 7 producerEpoch: 1 partitionLeaderEpoch: 0 isTransactional: false isControl: false ",
		"| offset: 1 CreateTime: 1700000000001 keySize: -1 valueSize: 1 sequence: 11 headerKeys: [h1,h2] payload: q\n",
		"baseOffset: 2 lastOffset: 2 count: 1 baseSequence: -1 lastSequence: -1 producerId: 7 producerEpoch: 1 partitionLeaderEpoch: 0 isTransactional: true isControl: true ",
		"| offset: 2 CreateTime: 1700000000005 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 5\n",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.Stdout)
		}
	}
}

// TestDumpLogDirectoryArgument: `segfs dump-log DATA/orders-0` (the
// partition directory instead of its files) and a path that does not
// exist are errors naming the argument, with exit status 1. Both were
// "Ignoring unknown file" with exit status 0, as if everything checked
// were sound. A file of another kind is still skipped, as Kafka does. So
// is a producer snapshot, but only one that exists: a missing .snapshot
// path was "Skipping producer snapshot" with exit status 0.
func TestDumpLogDirectoryArgument(t *testing.T) {
	dataDir, _, _ := cliHandBuiltDir(t)
	pdir := filepath.Join(dataDir, "orders-0")
	for _, tc := range []struct{ arg, want string }{
		{pdir, pdir + ": is a directory: give the files in it (" + pdir + "/*.log)"},
		{filepath.Join(dataDir, "missing.txt"), "no such file or directory"},
		{filepath.Join(pdir, "00000000000000000099.snapshot"), "no such file or directory"},
	} {
		r := cliRun(t, "dump-log", tc.arg)
		if r.Code != 1 || !strings.Contains(r.Stderr, tc.want) {
			t.Errorf("dump-log %s: exit %d, stderr %q; want exit 1 and %q", tc.arg, r.Code, r.Stderr, tc.want)
		}
	}
	other := filepath.Join(dataDir, "README")
	os.WriteFile(other, []byte("hi\n"), 0o644)
	if r := cliRun(t, "dump-log", other); r.Code != 0 || !strings.Contains(r.Stderr, "Ignoring unknown file "+other) {
		t.Errorf("dump-log of an unknown kind of file: exit %d, stderr %q", r.Code, r.Stderr)
	}
	snap := filepath.Join(pdir, "00000000000000000008.snapshot")
	os.WriteFile(snap, []byte{0, 1}, 0o644)
	if r := cliRun(t, "dump-log", snap); r.Code != 0 || !strings.Contains(r.Stderr, "Skipping producer snapshot "+snap) {
		t.Errorf("dump-log of a producer snapshot: exit %d, stderr %q", r.Code, r.Stderr)
	}
}

// TestDumpLogNamesFileOnce: a file dump-log cannot read is named once,
// before the reason: it printed "F: open F: no such file or directory" and
// "F: F: file name does not start with a base offset".
func TestDumpLogNamesFileOnce(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "00000000000000000000.log")
	badName := filepath.Join(dir, "x.index")
	cliWriteFile(t, badName, "")
	r := cliRun(t, "dump-log", missing, badName)
	for _, want := range []string{
		missing + ": cannot read it: open: no such file or directory\n",
		badName + ": file name does not start with a base offset\n",
		"dump-log: 2 problems found",
	} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	for _, f := range []string{missing, badName} {
		if strings.Count(r.Stderr, f) != 1 {
			t.Errorf("stderr names %s %d times", f, strings.Count(r.Stderr, f))
		}
	}
	if r.Code != 1 || t.Failed() {
		t.Fatalf("exit %d\n%s", r.Code, r.Stderr)
	}
}
