package record

import (
	"bytes"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestGolden pins the exact bytes of an uncompressed batch with keys, null
// keys and values, headers, a producer id and transactional bit, so that an
// accidental change to the encoding shows up as a diff. Compressed batches
// are not pinned: their bytes belong to the compression libraries.
func TestGolden(t *testing.T) {
	spec := BatchSpec{BaseOffset: 100, LeaderEpoch: 3, ProducerID: 7, ProducerEpoch: 1, BaseSequence: 0, Transactional: true}
	recs := sampleRecords()
	recs[6].value = recs[6].value[:64]
	got := buildBatch(t, spec, recs)
	path := filepath.Join("testdata", "golden-uncompressed.hex")
	if *update {
		if err := os.WriteFile(path, []byte(hex.Dump(got)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if dump := hex.Dump(got); dump != string(want) {
		t.Errorf("batch differs from %s:\n%s", path, dump)
	}
}

// TestCodecFraming checks the framing of each codec against what the Java
// client writes (KAFKA-FORMAT.md §2.6).
func TestCodecFraming(t *testing.T) {
	prefixes := map[Codec]string{
		CodecGzip:   "1f8b",
		CodecSnappy: "82534e415050590000000001" + "00000001", // xerial magic, version 1, compatible 1
		CodecLZ4:    "04224d18" + "6040",                     // frame magic; FLG version 1, independent blocks, no checksums; BD 64 KiB
		CodecZstd:   "28b52ffd",
	}
	for c, prefix := range prefixes {
		spec := DefaultSpec()
		spec.Codec = c
		b := buildBatch(t, spec, sampleRecords())
		if got := hex.EncodeToString(b[HeaderSize:]); !bytes.HasPrefix([]byte(got), []byte(prefix)) {
			t.Errorf("%v: region starts %.40s, want %s", c, got, prefix)
		}
	}
}
