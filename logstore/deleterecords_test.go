package logstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// drLines is the text of lines from..to-1 as TestDeleteRecords appends them.
func drLines(from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "line %03d %s\n", i, strings.Repeat("d", 30))
	}
	return b.String()
}

// logBases lists the base offsets of the partition directory's .log files.
func logBases(t *testing.T, dir string) []int64 {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	var out []int64
	for _, n := range names {
		if b, ok := parseSegmentBase(filepath.Base(n), logSuffix); ok {
			out = append(out, b)
		}
	}
	return out
}

// TestDeleteRecords moves the log start inside a batch inside a segment:
// the offsets below it are gone for every reader, an open view keeps its
// text, the checkpoint holds it before DeleteRecords returns and across a
// crash, and the retention pass deletes the whole segments below it (and
// only those), whatever the retention settings.
func TestDeleteRecords(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, newClock())
	defer func() { s.Close() }()
	// retention.ms=-1: only the log start can make retention delete.
	tp, err := s.CreateTopic("dr", 1, map[string]string{"segment.bytes": "1000", "retention.ms": "-1", "file.delete.delay.ms": "0"})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tp.Partition(0)
	for i := 0; i < 100; i += 5 { // batches of 5 records: 37 is mid-batch
		if _, _, err := p.AppendLines([]byte(drLines(i, i+5))); err != nil {
			t.Fatal(err)
		}
	}
	partDir := filepath.Join(dir, "dr-0")
	bases := logBases(t, partDir)
	if len(bases) < 4 {
		t.Fatalf("want several segments, have %v", bases)
	}
	const cut = 37
	for _, b := range bases {
		if b == cut {
			t.Fatalf("offset %d is a segment base (%v): the test wants it mid-segment", cut, bases)
		}
	}
	old, err := p.Text(0)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	oldText := readAll(t, old)
	gen := p.Generation()

	// Beyond the high watermark, or negative: out of range, nothing moves.
	for _, off := range []int64{101, 1 << 40, -2} {
		if _, err := p.DeleteRecords(off); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Errorf("DeleteRecords(%d): %v, want ErrOffsetOutOfRange", off, err)
		}
	}
	if p.LogStartOffset() != 0 || p.Generation() != gen {
		t.Fatalf("a refused DeleteRecords moved the log start to %d", p.LogStartOffset())
	}

	low, err := p.DeleteRecords(cut)
	if err != nil || low != cut {
		t.Fatalf("DeleteRecords(%d) = %d, %v", cut, low, err)
	}
	if p.LogStartOffset() != cut || p.Generation() == gen {
		t.Fatalf("log start %d, generation %d (was %d)", p.LogStartOffset(), p.Generation(), gen)
	}
	// On disk before DeleteRecords returned.
	ck, err := readOffsetCheckpoint(filepath.Join(dir, logStartCheckpointFile))
	if err != nil || ck[tp0("dr")] != cut {
		t.Fatalf("log-start checkpoint %v, %v; want dr 0 %d", ck, err, cut)
	}
	// Below the new start: a no-op answering the current start.
	gen = p.Generation()
	if low, err := p.DeleteRecords(10); err != nil || low != cut || p.Generation() != gen {
		t.Fatalf("DeleteRecords(10) below the log start = %d, %v (generation moved: %v)", low, err, p.Generation() != gen)
	}
	if _, err := p.Text(cut - 1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Errorf("Text(%d) below the log start: %v", cut-1, err)
	}
	if _, err := p.Read(cut-1, 1000); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Errorf("Read(%d) below the log start: %v", cut-1, err)
	}
	if got := textOf(t, p, cut); got != drLines(cut, 100) {
		t.Errorf("text from the log start starts %.40q, want %.40q", got, drLines(cut, 100))
	}
	if st := statusOf(t, p); st.LogStartOffset != cut {
		t.Errorf("Status log start %d", st.LogStartOffset)
	}
	// The view opened before keeps its positions and follows appends.
	p.AppendLines([]byte(drLines(100, 101)))
	if got := readAll(t, old); got != oldText+drLines(100, 101) {
		t.Errorf("the view opened before DeleteRecords changed: %d bytes, want %d", len(got), len(oldText)+len(drLines(100, 101)))
	}

	// A crash keeps the new log start.
	s.abandon()
	s = openStore(t, dir, newClock())
	p = mustPartition(t, s, "dr")
	if p.LogStartOffset() != cut {
		t.Fatalf("after a crash the log start is %d, want %d", p.LogStartOffset(), cut)
	}
	if got := textOf(t, p, cut); got != drLines(cut, 101) {
		t.Errorf("after a crash the text from the log start starts %.40q", got)
	}

	// Retention deletes the segments wholly below the log start, and
	// keeps the one holding it.
	st, err := p.ApplyRetention()
	if err != nil {
		t.Fatal(err)
	}
	var below, kept []int64
	for i, b := range bases {
		if i+1 < len(bases) && bases[i+1] <= cut {
			below = append(below, b)
		} else {
			kept = append(kept, b)
		}
	}
	if st.SegmentsDeleted != len(below) {
		t.Errorf("retention deleted %d segments, want the %d below the log start (%v)", st.SegmentsDeleted, len(below), below)
	}
	if got := logBases(t, partDir); fmt.Sprint(got) != fmt.Sprint(kept) {
		t.Errorf("segments left %v, want %v", got, kept)
	}
	if p.LogStartOffset() != cut {
		t.Errorf("retention moved the log start to %d", p.LogStartOffset())
	}
	if st, _ := p.ApplyRetention(); st.SegmentsDeleted != 0 {
		t.Errorf("a second pass deleted %d more segments", st.SegmentsDeleted)
	}
	s.abandon()
	s = openStore(t, dir, newClock())
	p = mustPartition(t, s, "dr")
	if p.LogStartOffset() != cut {
		t.Fatalf("after retention and a crash the log start is %d, want %d", p.LogStartOffset(), cut)
	}

	// -1 is the high watermark: nothing is left to read.
	if low, err := p.DeleteRecords(HighWatermark); err != nil || low != 101 {
		t.Fatalf("DeleteRecords(-1) = %d, %v; want the log end 101", low, err)
	}
	if got := textOf(t, p, p.LogStartOffset()); got != "" {
		t.Errorf("text after deleting up to the high watermark: %.40q", got)
	}

	// A compacted topic refuses, as Kafka does.
	ct, _ := s.CreateTopic("dc", 1, map[string]string{"cleanup.policy": "compact", "key.separator": "\t"})
	cp, _ := ct.Partition(0)
	cp.AppendLines([]byte("k\tv\n"))
	if _, err := cp.DeleteRecords(1); !errors.Is(err, ErrPolicyViolation) {
		t.Errorf("DeleteRecords on a compacted topic: %v, want ErrPolicyViolation", err)
	}
}

func tp0(topic string) tp { return tp{topic, 0} }

// TestLogStartCheckpointRetriedAfterFailure: a DeleteRecords whose
// checkpoint write failed answers an error, and its retry writes it even
// though the log start already moved in memory.
func TestLogStartCheckpointRetriedAfterFailure(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, newClock())
	defer func() { s.Close() }()
	tp, _ := s.CreateTopic("rt", 1, nil)
	p, _ := tp.Partition(0)
	p.AppendLines([]byte("a\nb\nc\n"))
	ckPath := filepath.Join(dir, logStartCheckpointFile)
	// A directory in the temp file's place makes the write fail.
	if err := os.Mkdir(ckPath+".tmp", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := p.DeleteRecords(2); err == nil {
		t.Fatal("DeleteRecords succeeded although its checkpoint could not be written")
	}
	os.Remove(ckPath + ".tmp")
	if low, err := p.DeleteRecords(2); err != nil || low != 2 {
		t.Fatalf("retry: %d, %v", low, err)
	}
	ck, err := readOffsetCheckpoint(ckPath)
	if err != nil || ck[tp0("rt")] != 2 {
		t.Fatalf("checkpoint after the retry: %v, %v", ck, err)
	}
}

// TestRetentionBelowCheckpointedLogStart: a log start checkpointed inside
// a later segment (as Kafka leaves one after DeleteRecords) makes the
// retention pass delete the segments below it, even on a compacted topic
// and with retention.ms=-1, as Kafka's deleteLogStartOffsetBreachedSegments
// does. They were kept for ever.
func TestRetentionBelowCheckpointedLogStart(t *testing.T) {
	for _, policy := range []string{"delete", "compact"} {
		t.Run(policy, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, newClock())
			top, _ := s.CreateTopic("ck", 1, map[string]string{"cleanup.policy": policy, "key.separator": "\t", "segment.bytes": "1000", "retention.ms": "-1", "file.delete.delay.ms": "0"})
			p, _ := top.Partition(0)
			for i := 0; i < 100; i += 5 {
				if _, _, err := p.AppendLines([]byte(strings.ReplaceAll(drLines(i, i+5), "line", "k\tline"))); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()
			bases := logBases(t, filepath.Join(dir, "ck-0"))
			cut := (bases[2] + bases[3]) / 2 // inside the third segment
			if err := writeOffsetCheckpoint(filepath.Join(dir, logStartCheckpointFile), map[tp]int64{tp0("ck"): cut}); err != nil {
				t.Fatal(err)
			}
			s = openStore(t, dir, newClock())
			defer s.Close()
			p = mustPartition(t, s, "ck")
			if p.LogStartOffset() != cut {
				t.Fatalf("log start %d, want the checkpoint's %d", p.LogStartOffset(), cut)
			}
			st, err := p.ApplyRetention()
			if err != nil {
				t.Fatal(err)
			}
			if got := logBases(t, filepath.Join(dir, "ck-0")); st.SegmentsDeleted != 2 || fmt.Sprint(got) != fmt.Sprint(bases[2:]) {
				t.Errorf("retention deleted %d segments, left %v; want the 2 below log start %d gone (%v)", st.SegmentsDeleted, got, cut, bases)
			}
		})
	}
}
