package logstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/segfs/segfs/logstore/record"
	"github.com/segfs/segfs/logstore/record/recordtest"
)

// legacySet is three messages of the given magic from offset 0.
func legacySet(magic byte) []byte {
	var b []byte
	for i, v := range []string{"hello1", "hello2", "hello3"} {
		b = append(b, recordtest.LegacyMessage(magic, 0, int64(i), 1_600_000_000_000+int64(i), nil, []byte(v))...)
	}
	return b
}

// v2Batch is a one-record v2 batch at base.
func v2Batch(t *testing.T, base int64) []byte {
	t.Helper()
	var b record.Builder
	spec := record.DefaultSpec()
	spec.BaseOffset = base
	b.Reset(spec)
	b.Add(1_700_000_000_000, nil, []byte("v2 record"), nil)
	v2, err := b.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return v2
}

// snapshotDir returns every file under dir (path relative to dir → its
// bytes, with its mode), for comparing a directory before and after.
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			out[rel] = "dir " + fi.Mode().String()
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out[rel] = fi.Mode().String() + " " + string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameSnapshot(t *testing.T, before, after map[string]string) {
	t.Helper()
	for name, b := range before {
		a, ok := after[name]
		switch {
		case !ok:
			t.Errorf("%s: removed", name)
		case a != b:
			t.Errorf("%s: changed (%d bytes before, %d after)", name, len(b), len(a))
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s: created", name)
		}
	}
}

func openQuiet(dir string) (*Store, error) {
	return Open(dir, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// TestOpenRefusesLegacySegment: a partition directory of a Kafka broker
// that once ran with log.message.format.version < 0.11 holds segments of
// magic 0 or 1 messages. Read as v2 batches they were garbage ("batch
// length 28 below minimum 49"): recovery truncated the segment to 0 bytes,
// even after a clean shutdown (the trusted segment's tail did not parse,
// so it was recovered). Open now refuses the data directory with an error
// naming the file, the position and the format, and leaves every file as
// it was: the clean-shutdown marker, the empty indexes, Kafka's .lock.
func TestOpenRefusesLegacySegment(t *testing.T) {
	cases := []struct {
		name  string
		magic byte
		clean bool
		// v2First puts a closed segment of v2 batches at base 0 and the
		// old messages in the active segment at base 3 (made by a
		// broker whose format was downgraded). Otherwise the old
		// segment is at base 0, and an active v2 segment follows it
		// when upgraded is set (the format was upgraded later).
		upgraded bool
		kafkaLck bool // a Kafka data directory has its own .lock
	}{
		{name: "v1-clean", magic: 1, clean: true},
		{name: "v0-clean", magic: 0, clean: true},
		{name: "v1-unclean", magic: 1},
		{name: "v1-upgraded-clean", magic: 1, clean: true, upgraded: true},
		{name: "v1-upgraded-unclean", magic: 1, upgraded: true},
		{name: "v1-kafka-lock", magic: 1, clean: true, kafkaLck: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			pdir := filepath.Join(dir, "old-0")
			if err := os.MkdirAll(pdir, 0o755); err != nil {
				t.Fatal(err)
			}
			files := map[string][]byte{
				"old-0/00000000000000000000.log":       legacySet(tc.magic),
				"old-0/00000000000000000000.index":     nil,
				"old-0/00000000000000000000.timeindex": nil,
				"recovery-point-offset-checkpoint":     []byte("0\n1\nold 0 3\n"),
			}
			if tc.upgraded {
				v2 := v2Batch(t, 3)
				files["old-0/00000000000000000003.log"] = v2
				files["old-0/00000000000000000003.index"] = nil
				files["old-0/00000000000000000003.timeindex"] = nil
				files["recovery-point-offset-checkpoint"] = []byte("0\n1\nold 0 4\n")
			}
			if tc.clean {
				files[cleanShutdownFile] = nil
			}
			if tc.kafkaLck {
				files[lockFile] = nil
			}
			for name, b := range files {
				if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			before := snapshotDir(t, dir)
			s, err := openQuiet(dir)
			if err == nil {
				s.Close()
				fi, _ := os.Stat(filepath.Join(pdir, "00000000000000000000.log"))
				t.Fatalf("Open succeeded; the log is now %d bytes, was %d", fi.Size(), len(legacySet(tc.magic)))
			}
			var le *LegacyFormatError
			logPath := filepath.Join(pdir, "00000000000000000000.log")
			if !errors.As(err, &le) || le.Pos != 0 || le.Magic != int8(tc.magic) || le.Path != logPath {
				t.Fatalf("Open: %v; want a LegacyFormatError at position 0 of %s, magic %d", err, logPath, tc.magic)
			}
			want := "message format v" + string('0'+byte(tc.magic)) + " (magic " + string('0'+byte(tc.magic)) + ") at position 0 in " + logPath + ": segfs reads only magic 2 record batches"
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error %q\nwant it to start %q", err, want)
			}
			sameSnapshot(t, before, snapshotDir(t, dir))
		})
	}
}

// TestRecoveryRefusesLegacyAfterV2: old messages after v2 batches in one
// segment (a broker whose message format was downgraded) are not a torn
// tail either. Open's look at each segment's first message cannot see
// them; recovery finds them where the v2 batches end, and must refuse the
// partition instead of truncating them, after a crash and after a clean
// shutdown alike. A tail that merely has magic byte 1 where a v2 batch
// has its magic, with a size that fits but a wrong CRC, is torn bytes and
// is truncated as before.
func TestRecoveryRefusesLegacyAfterV2(t *testing.T) {
	for _, tc := range []struct {
		name  string
		clean bool
		tail  func() []byte
		torn  bool // the tail must be truncated, not refused
	}{
		{name: "legacy-unclean", tail: func() []byte { return legacySet(1) }},
		{name: "legacy-clean", clean: true, tail: func() []byte { return legacySet(1) }},
		{name: "legacy-v0-unclean", tail: func() []byte { return legacySet(0) }},
		{name: "magic1-bad-crc", torn: true, tail: func() []byte {
			b := legacySet(1)
			b[20] ^= 0xff // inside the first message's timestamp: CRC mismatch
			return b
		}},
		{name: "magic1-bad-crc-clean", clean: true, torn: true, tail: func() []byte {
			b := legacySet(1)
			binary.BigEndian.PutUint32(b[12:], binary.BigEndian.Uint32(b[12:])+1)
			return b
		}},
		{name: "magic1-cut-short", torn: true, tail: func() []byte { return legacySet(1)[:30] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, newClock())
			if _, err := s.CreateTopic("d", 1, nil); err != nil {
				t.Fatal(err)
			}
			p := mustPartition(t, s, "d")
			for _, l := range []string{"one\n", "two\n", "three\n"} {
				if _, _, err := p.AppendLines([]byte(l)); err != nil {
					t.Fatal(err)
				}
			}
			v2End := p.active().size.Load()
			if tc.clean {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			} else {
				s.abandon()
			}
			logPath := filepath.Join(dir, "d-0", "00000000000000000000.log")
			f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write(tc.tail()); err != nil {
				t.Fatal(err)
			}
			f.Close()
			want, err := os.ReadFile(logPath)
			if err != nil {
				t.Fatal(err)
			}

			s, err = openQuiet(dir)
			if tc.torn {
				if err != nil {
					t.Fatalf("Open: %v; want the torn tail truncated", err)
				}
				defer s.Close()
				if got := mustPartition(t, s, "d").active().size.Load(); got != v2End {
					t.Errorf("log is %d bytes after recovery, want %d (the v2 batches)", got, v2End)
				}
				if got := textOf(t, mustPartition(t, s, "d"), 0); got != "one\ntwo\nthree\n" {
					t.Errorf("text %q", got)
				}
				return
			}
			if err == nil {
				s.Close()
				got, _ := os.ReadFile(logPath)
				t.Fatalf("Open succeeded; log %d bytes, was %d", len(got), len(want))
			}
			var le *LegacyFormatError
			if !errors.As(err, &le) || le.Pos != v2End || le.Path != logPath {
				t.Fatalf("Open: %v; want a LegacyFormatError at position %d of %s", err, v2End, logPath)
			}
			if got, err := os.ReadFile(logPath); err != nil || !bytes.Equal(got, want) {
				t.Errorf("the .log changed: %d bytes, was %d (%v)", len(got), len(want), err)
			}
			// Refused again, not recovered, by the next Open.
			if s, err := openQuiet(dir); !errors.As(err, &le) {
				if s != nil {
					s.Close()
				}
				t.Errorf("second Open: %v", err)
			}
		})
	}
}

// TestLegacyCRCValid checks the evidence test on its own: a whole message
// of magic 0 or 1 with a matching CRC-32 (IEEE) is legacy data; one cut
// short, one bit off, a v2 batch or zeros are not.
func TestLegacyCRCValid(t *testing.T) {
	m1 := recordtest.LegacyMessage(1, 0, 7, 1_600_000_000_000, []byte("k"), []byte("value"))
	m0 := recordtest.LegacyMessage(0, 0, 7, 0, nil, nil)
	flipped := bytes.Clone(m1)
	flipped[len(flipped)-1] ^= 1
	v2 := v2Batch(t, 0)
	for _, tc := range []struct {
		name  string
		b     []byte
		limit int
		want  bool
	}{
		{"v1", m1, len(m1), true},
		{"v0-null-key-value", m0, len(m0), true},
		{"v1-then-more", append(bytes.Clone(m1), m0...), len(m1) + len(m0), true},
		{"v1-past-limit", m1, len(m1) - 1, false},
		{"v1-cut", m1[:len(m1)-1], len(m1) - 1, false},
		{"v1-bit-flipped", flipped, len(flipped), false},
		{"v2", v2, len(v2), false},
		{"zeros", make([]byte, 64), 64, false},
	} {
		_, ok, err := record.LegacyCRCValid(bytes.NewReader(tc.b), 0, int64(tc.limit))
		if err != nil || ok != tc.want {
			t.Errorf("%s: valid %v, %v; want %v", tc.name, ok, err, tc.want)
		}
	}
	m, err := record.ParseLegacy(m1)
	if err != nil || m.Offset != 7 || m.Magic != 1 || m.Timestamp != 1_600_000_000_000 || string(m.Key) != "k" || string(m.Value) != "value" || m.TotalSize() != int64(len(m1)) {
		t.Errorf("ParseLegacy(v1) = %+v, %v", m, err)
	}
	if m, err := record.ParseLegacy(m0); err != nil || m.Key != nil || m.Value != nil || m.Timestamp != -1 {
		t.Errorf("ParseLegacy(v0) = %+v, %v", m, err)
	}
	if _, err := record.ParseLegacy(flipped); !errors.Is(err, record.ErrCorrupt) {
		t.Errorf("ParseLegacy(bit flipped) = %v, want ErrCorrupt", err)
	}
}
