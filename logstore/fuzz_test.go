package logstore

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/segfs/segfs/logstore/record"
)

// FuzzSegmentLoad feeds arbitrary bytes to the loader as the active segment
// of a partition that was not shut down cleanly. Opening must not panic or
// fail, and what survives must be a prefix of the input made of whole,
// valid batches.
func FuzzSegmentLoad(f *testing.F) {
	seed, _ := os.ReadFile(filepath.Join("record", "testdata", "kraft-metadata-00000000000000000000.log"))
	f.Add(seed)
	b1, _ := record.AppendLines(nil, []byte("hello\nworld\n"), 1700000000000, nil)
	b2, _ := record.AppendLines(nil, []byte("k=v\n"), 1700000000001, []byte("="))
	record.SetBaseOffset(b2, 2)
	f.Add(append(append([]byte{}, b1...), b2...))
	f.Add(append(append([]byte{}, b1...), make([]byte, 40)...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		pd := filepath.Join(dir, "fz-0")
		os.Mkdir(pd, 0o755)
		logPath := filepath.Join(pd, "00000000000000000000.log")
		if err := os.WriteFile(logPath, data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), RetentionCheckInterval: -1, CleanerInterval: -1})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		defer s.Close()
		p, err := s.Partition("fz", 0)
		if err != nil {
			t.Fatal(err)
		}
		kept, _ := os.ReadFile(logPath)
		if !bytes.HasPrefix(data, kept) {
			t.Fatal("recovery kept bytes that are not a prefix of the input")
		}
		var dec record.Decoder
		prevNext := int64(0)
		for rest := kept; len(rest) > 0; {
			n, err := record.PeekSize(rest)
			if err != nil || n > int64(len(rest)) {
				t.Fatalf("kept a partial batch: %v", err)
			}
			b := rest[:n]
			if err := record.Validate(b); err != nil {
				t.Fatalf("kept an invalid batch: %v", err)
			}
			h, _ := record.ParseHeader(b)
			if h.BaseOffset < prevNext {
				t.Fatal("kept offsets that go backwards")
			}
			if err := dec.Records(b, func(*record.Record) error { return nil }); err != nil {
				t.Fatalf("kept a batch whose records do not decode: %v", err)
			}
			prevNext = h.NextOffset()
			rest = rest[n:]
		}
		if p.LogEndOffset() != prevNext {
			t.Fatalf("log end %d, batches end at %d", p.LogEndOffset(), prevNext)
		}
		if _, _, err := p.AppendLines([]byte("after\n")); err != nil {
			t.Fatalf("append after recovery: %v", err)
		}
		v, err := p.Text(p.LogStartOffset())
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		buf := make([]byte, v.Size())
		if n, err := v.ReadAt(buf, 0); (err != nil && err != io.EOF) || n != len(buf) || !bytes.HasSuffix(buf, []byte("after\n")) {
			t.Fatalf("text after recovery: %d/%d %v", n, len(buf), err)
		}
	})
}
