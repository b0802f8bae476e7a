package logstore

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/segfs/segfs/index"
	"github.com/segfs/segfs/logstore/record"
)

// Tests of the storage rules of issue 2 that no other test pins down one
// by one: Kafka's index append rules at the segment level, the roll rules
// not covered by TestRollRules, flush.ms, the checkpoint files' exact
// text, leftover temp files, and what a clean open does not rescan.

// producedBatch builds a batch as a client would send it (base offset 0)
// with the given record timestamps and values.
func producedBatch(t *testing.T, ts []int64, vals []string) []byte {
	t.Helper()
	var bl record.Builder
	bl.Reset(record.DefaultSpec())
	for i, v := range vals {
		bl.Add(ts[i], nil, []byte(v), nil)
	}
	b, err := bl.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// appended is what the test knows of one batch it appended.
type appended struct {
	pos, size    int64
	base, last   int64
	maxTs        int64
	sent         []byte // the batch as produced (base offset 0)
	segmentIndex int    // which segment holds it
}

// kafkaIndexEntries applies KAFKA-FORMAT.md §3.3 and §4.2 to a segment's
// single-batch appends: an offset entry (last offset, start) for a batch
// starting more than interval bytes after the last indexed one, and with
// it a time entry (max timestamp so far, last offset of the batch holding
// it) when that timestamp is greater than the last time entry's.
func kafkaIndexEntries(batches []appended, interval int64) ([]index.OffsetEntry, []index.TimeEntry) {
	var oes []index.OffsetEntry
	var tes []index.TimeEntry
	lastTs := int64(-1)
	since := int64(0)
	maxTs, maxOff := int64(-1), int64(-1)
	for _, b := range batches {
		if b.maxTs > maxTs {
			maxTs, maxOff = b.maxTs, b.last
		}
		if since > interval {
			oes = append(oes, index.OffsetEntry{Offset: b.last, Position: int32(b.pos)})
			if maxTs > lastTs {
				tes = append(tes, index.TimeEntry{Timestamp: maxTs, Offset: maxOff})
				lastTs = maxTs
			}
			since = 0
		}
		since += b.size
	}
	return oes, tes
}

// withFinalTimeEntry adds the entry Kafka writes when a segment becomes
// inactive: the segment's max timestamp, if greater than the last entry's.
func withFinalTimeEntry(tes []index.TimeEntry, batches []appended) []index.TimeEntry {
	maxTs, maxOff := int64(-1), int64(-1)
	for _, b := range batches {
		if b.maxTs > maxTs {
			maxTs, maxOff = b.maxTs, b.last
		}
	}
	if maxTs >= 0 && (len(tes) == 0 || maxTs > tes[len(tes)-1].Timestamp) {
		tes = append(append([]index.TimeEntry(nil), tes...), index.TimeEntry{Timestamp: maxTs, Offset: maxOff})
	}
	return tes
}

func liveIndexEntries(s *segment) ([]index.OffsetEntry, []index.TimeEntry) {
	var oes []index.OffsetEntry
	for i := 0; i < s.oidx.Entries(); i++ {
		oes = append(oes, s.oidx.Entry(i))
	}
	var tes []index.TimeEntry
	for i := 0; i < s.tidx.Entries(); i++ {
		tes = append(tes, s.tidx.Entry(i))
	}
	return oes, tes
}

func fileIndexEntries(t *testing.T, dir string, base int64) ([]index.OffsetEntry, []index.TimeEntry) {
	t.Helper()
	ob, err := os.ReadFile(filepath.Join(dir, segmentName(base)+indexSuffix))
	if err != nil {
		t.Fatal(err)
	}
	tb, err := os.ReadFile(filepath.Join(dir, segmentName(base)+timeIndexSuffix))
	if err != nil {
		t.Fatal(err)
	}
	oes, otrail := index.ParseOffsetEntries(ob, base)
	tes, ttrail := index.ParseTimeEntries(tb, base)
	if otrail != 0 || ttrail != 0 || len(ob) != len(oes)*index.OffsetEntrySize || len(tb) != len(tes)*index.TimeEntrySize {
		t.Fatalf("segment %d: index files of %d and %d bytes are not trimmed to %d and %d entries",
			base, len(ob), len(tb), len(oes), len(tes))
	}
	return oes, tes
}

func fileSizeOf(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestIndexEntriesFollowKafka appends produced batches of varied sizes and
// timestamps (some going backwards) and checks, segment by segment: the
// offsets assigned by rewriting only the base offset (the CRC is the
// producer's); the active segment's indexes preallocated to
// segment.index.bytes; offset entries exactly where index.interval.bytes
// puts them and time entries only where the max timestamp grew; sealed
// indexes trimmed to their entries with the final time entry; and indexes
// rebuilt from the .log after they are deleted equal to those appended.
func TestIndexEntriesFollowKafka(t *testing.T) {
	const interval = 300
	dir := t.TempDir()
	s := openStore(t, dir, newClock())
	if _, err := s.CreateTopic("ix", 1, map[string]string{
		"index.interval.bytes": fmt.Sprint(interval),
		"segment.index.bytes":  "1001", // 1000 bytes of offset entries, 996 of time entries
		"segment.bytes":        "6000",
	}); err != nil {
		t.Fatal(err)
	}
	p := mustPartition(t, s, "ix")
	pd := filepath.Join(dir, "ix-0")
	act := p.active()
	if got := fileSizeOf(t, act.path(indexSuffix)); got != 1000 {
		t.Fatalf("active .index preallocated to %d bytes, want 1000", got)
	}
	if got := fileSizeOf(t, act.path(timeIndexSuffix)); got != 996 {
		t.Fatalf("active .timeindex preallocated to %d bytes, want 996", got)
	}

	var all []appended
	ts := int64(1_700_000_000_000)
	for i := 0; i < 120; i++ {
		n := 1 + i%4
		var tss []int64
		var vals []string
		for j := 0; j < n; j++ {
			// Every fifth batch goes back in time: no time entry may
			// record a smaller maximum.
			if i%5 == 4 {
				tss = append(tss, ts-5000+int64(j))
			} else {
				ts += int64(1 + (i*7+j)%13)
				tss = append(tss, ts)
			}
			vals = append(vals, strings.Repeat(string(rune('a'+i%26)), 10+(i*31+j*17)%90))
		}
		sent := producedBatch(t, tss, vals)
		b := append([]byte(nil), sent...)
		segsBefore := statusOf(t, p).Segments
		res, err := p.AppendBatch(b)
		if err != nil {
			t.Fatal(err)
		}
		st := statusOf(t, p)
		seg := p.active()
		size := int64(len(sent))
		pos := seg.size.Load() - size
		if st.Segments != segsBefore && pos != 0 {
			t.Fatalf("batch %d: rolled but written at position %d", i, pos)
		}
		maxTs := tss[0]
		for _, x := range tss {
			maxTs = max(maxTs, x)
		}
		all = append(all, appended{pos: pos, size: size, base: res.BaseOffset, last: res.LastOffset, maxTs: maxTs,
			sent: sent, segmentIndex: st.Segments - 1})
		if res.BaseOffset != st.LogEndOffset-int64(n) || res.LastOffset != st.LogEndOffset-1 {
			t.Fatalf("batch %d: offsets %d..%d, log end %d", i, res.BaseOffset, res.LastOffset, st.LogEndOffset)
		}
	}
	segCount := all[len(all)-1].segmentIndex + 1
	if segCount < 3 {
		t.Fatalf("only %d segments: the test wants rolls", segCount)
	}
	bySeg := make([][]appended, segCount)
	for _, a := range all {
		bySeg[a.segmentIndex] = append(bySeg[a.segmentIndex], a)
	}

	// Offsets are assigned by rewriting the base offset, which lies
	// outside the CRC: every other byte is the producer's.
	for _, a := range all {
		f, err := os.Open(filepath.Join(pd, segmentName(bySeg[a.segmentIndex][0].base)+logSuffix))
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, a.size)
		_, err = f.ReadAt(got, a.pos)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		h, err := record.ParseHeader(got)
		if err != nil || h.BaseOffset != a.base || record.Validate(got) != nil {
			t.Fatalf("batch at %d: base %d (want %d), %v, %v", a.pos, h.BaseOffset, a.base, err, record.Validate(got))
		}
		if !bytes.Equal(got[8:], a.sent[8:]) {
			t.Fatalf("batch at %d: bytes after the base offset differ from the producer's", a.pos)
		}
	}

	// Live indexes: closed segments are trimmed and hold the final time
	// entry; the active one holds exactly the rule's entries.
	for i, batches := range bySeg {
		wantO, wantT := kafkaIndexEntries(batches, interval)
		if len(wantO) == 0 {
			t.Fatalf("segment %d has no index entry: the test wants some", i)
		}
		var gotO []index.OffsetEntry
		var gotT []index.TimeEntry
		if i < segCount-1 {
			gotO, gotT = fileIndexEntries(t, pd, batches[0].base)
			wantT = withFinalTimeEntry(wantT, batches)
		} else {
			gotO, gotT = liveIndexEntries(p.active())
		}
		if !reflect.DeepEqual(gotO, wantO) {
			t.Errorf("segment %d offset index:\n got %v\nwant %v", i, gotO, wantO)
		}
		if !reflect.DeepEqual(gotT, wantT) {
			t.Errorf("segment %d time index:\n got %v\nwant %v", i, gotT, wantT)
		}
	}

	// A clean close seals the active segment like a roll.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	want := make([][2]any, segCount)
	for i, batches := range bySeg {
		o, tm := kafkaIndexEntries(batches, interval)
		tm = withFinalTimeEntry(tm, batches)
		gotO, gotT := fileIndexEntries(t, pd, batches[0].base)
		if !reflect.DeepEqual(gotO, o) || !reflect.DeepEqual(gotT, tm) {
			t.Errorf("segment %d after Close:\n got %v %v\nwant %v %v", i, gotO, gotT, o, tm)
		}
		want[i] = [2]any{o, tm}
	}

	// Deleted indexes are rebuilt from the .log with the same rule: the
	// closed segments' as they were, the active one's re-extended to
	// segment.index.bytes.
	for _, batches := range bySeg {
		for _, suf := range []string{indexSuffix, timeIndexSuffix} {
			if err := os.Remove(filepath.Join(pd, segmentName(batches[0].base)+suf)); err != nil {
				t.Fatal(err)
			}
		}
	}
	s = openStore(t, dir, newClock())
	defer s.Close()
	p = mustPartition(t, s, "ix")
	for i, batches := range bySeg[:segCount-1] {
		gotO, gotT := fileIndexEntries(t, pd, batches[0].base)
		if !reflect.DeepEqual([2]any{gotO, gotT}, want[i]) {
			t.Errorf("segment %d rebuilt:\n got %v %v\nwant %v", i, gotO, gotT, want[i])
		}
	}
	act = p.active()
	if act.base != bySeg[segCount-1][0].base {
		t.Fatalf("active segment %d after reopen, want %d", act.base, bySeg[segCount-1][0].base)
	}
	gotO, gotT := liveIndexEntries(act)
	wantO, wantT := kafkaIndexEntries(bySeg[segCount-1], interval)
	if !reflect.DeepEqual(gotO, wantO) {
		t.Errorf("active offset index rebuilt:\n got %v\nwant %v", gotO, wantO)
	}
	// Kafka's recover also appends the segment's max timestamp at the end;
	// either form serves lookups.
	if !reflect.DeepEqual(gotT, wantT) && !reflect.DeepEqual(gotT, withFinalTimeEntry(wantT, bySeg[segCount-1])) {
		t.Errorf("active time index rebuilt:\n got %v\nwant %v", gotT, wantT)
	}
	if got := fileSizeOf(t, act.path(indexSuffix)); got != 1000 {
		t.Errorf("rebuilt active .index is %d bytes, want 1000", got)
	}
	if got := fileSizeOf(t, act.path(timeIndexSuffix)); got != 996 {
		t.Errorf("rebuilt active .timeindex is %d bytes, want 996", got)
	}
	// And lookups answer from them: by offset every batch, by time the
	// first record with timestamp >= T.
	for _, a := range all {
		r, err := p.Read(a.last, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Slices) != 1 || r.Slices[0].Len != a.size {
			t.Fatalf("Read(%d): %+v, want the batch %d..%d", a.last, r.Slices, a.base, a.last)
		}
		r.Release()
	}
}

// TestRollOnJitterAndOffsetOverflow covers the roll rules TestRollRules
// does not: segment.ms less the segment's segment.jitter.ms, and a last
// offset the active segment's relative offsets cannot represent.
func TestRollOnJitterAndOffsetOverflow(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	defer s.Close()
	const segMs = 100_000
	tp, err := s.CreateTopic("jit", 1, map[string]string{"segment.ms": fmt.Sprint(segMs), "segment.jitter.ms": fmt.Sprint(segMs)})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tp.Partition(0)
	jitters := map[int64]bool{}
	// Each round starts with one batch in a fresh segment at time first;
	// a batch at first + segment.ms - jitter stays, one a millisecond
	// later rolls and starts the next round's segment.
	first := int64(1_700_000_000_000)
	if _, err := p.AppendBatch(producedBatch(t, []int64{first}, []string{"x"})); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 8; round++ {
		seg := p.active()
		j := seg.rollJitter
		if j < 0 || j >= segMs {
			t.Fatalf("roll jitter %d outside [0, %d)", j, segMs)
		}
		jitters[j] = true
		segs := statusOf(t, p).Segments
		if _, err := p.AppendBatch(producedBatch(t, []int64{first + segMs - j}, []string{"y"})); err != nil {
			t.Fatal(err)
		}
		if got := statusOf(t, p).Segments; got != segs {
			t.Fatalf("round %d: rolled at exactly segment.ms - jitter (%d ms; jitter %d)", round, segMs-j, j)
		}
		first += segMs - j + 1
		if _, err := p.AppendBatch(producedBatch(t, []int64{first}, []string{"z"})); err != nil {
			t.Fatal(err)
		}
		if got := statusOf(t, p).Segments; got != segs+1 || p.active() == seg {
			t.Fatalf("round %d: no roll past segment.ms - jitter (%d ms; jitter %d)", round, segMs-j, j)
		}
	}
	if len(jitters) < 2 {
		t.Errorf("every segment drew the same jitter %v", jitters)
	}
	// Without segment.jitter.ms there is no jitter.
	tp0, _ := s.CreateTopic("nojit", 1, map[string]string{"segment.ms": fmt.Sprint(segMs)})
	p0, _ := tp0.Partition(0)
	if j := p0.active().rollJitter; j != 0 {
		t.Errorf("jitter %d with segment.jitter.ms=0", j)
	}

	// Relative offset overflow: offsets are dense, so no real append gets
	// 2^31 offsets past a segment's base; the rule is checked on the
	// header an append of such a batch would carry.
	tpo, _ := s.CreateTopic("ovf", 1, nil)
	po, _ := tpo.Partition(0)
	po.AppendLines([]byte("a\nb\n"))
	cfg := po.config()
	po.amu.Lock()
	defer po.amu.Unlock()
	// The time of the segment's first batch: no roll for segment.ms.
	h := record.Header{BaseOffset: po.leo.Load(), LastOffsetDelta: 1<<31 - 3, MaxTimestamp: po.active().firstBatchTs}
	if err := po.maybeRollLocked(100, &h, cfg); err != nil {
		t.Fatal(err)
	}
	if po.active().base != 0 {
		t.Fatalf("rolled for last offset %d, representable in segment 0", h.LastOffset())
	}
	h.LastOffsetDelta++
	if err := po.maybeRollLocked(100, &h, cfg); err != nil {
		t.Fatal(err)
	}
	if po.active().base != 2 {
		t.Fatalf("last offset %d in a segment based at 0: active segment %d, want a roll to 2", h.LastOffset(), po.active().base)
	}
}

// TestFlushMsMovesRecoveryPoint: with flush.ms the background flusher makes
// appends durable (the recovery point reaches the log end) without any
// explicit Flush; with the default, nothing does.
func TestFlushMsMovesRecoveryPoint(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	defer s.Close()
	tp, _ := s.CreateTopic("fms", 1, map[string]string{"flush.ms": "200"})
	p, _ := tp.Partition(0)
	tpd, _ := s.CreateTopic("fdefault", 1, nil)
	pd, _ := tpd.Partition(0)
	for _, q := range []*Partition{p, pd} {
		if _, _, err := q.AppendLines([]byte("a\nb\nc\n")); err != nil {
			t.Fatal(err)
		}
		if rp := statusOf(t, q).RecoveryPoint; rp != 0 {
			t.Fatalf("recovery point %d right after the append", rp)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for statusOf(t, p).RecoveryPoint != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("flush.ms=200: recovery point still %d after 20 s", statusOf(t, p).RecoveryPoint)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if rp := statusOf(t, pd).RecoveryPoint; rp != 0 {
		t.Fatalf("default flush.ms flushed: recovery point %d", rp)
	}
}

// TestCheckpointFiles checks the exact text of Kafka's checkpoint files
// (KAFKA-FORMAT.md §10) and that a log start offset read from
// log-start-offset-checkpoint is kept and written back.
func TestCheckpointFiles(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, newClock())
	tp, err := s.CreateTopic("ck", 2, map[string]string{"segment.bytes": "1000"})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tp.Partition(0)
	for i := 0; i < 100; i++ {
		if _, _, err := p.AppendLines([]byte(fmt.Sprintf("line %d\n", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read(recoveryCheckpointFile); got != "0\n2\nck 0 100\nck 1 0\n" {
		t.Errorf("recovery-point-offset-checkpoint = %q", got)
	}
	// Only partitions whose log start is past their first segment's base.
	if got := read(logStartCheckpointFile); got != "0\n0\n" {
		t.Errorf("log-start-offset-checkpoint = %q", got)
	}
	if got := read(cleanShutdownFile); got != `{"version":0,"brokerEpoch":0}` {
		t.Errorf(".kafka_cleanshutdown = %q", got)
	}
	var ids []string
	for _, part := range []string{"ck-0", "ck-1"} {
		if got := read(filepath.Join(part, "leader-epoch-checkpoint")); got != "0\n1\n0 0\n" {
			t.Errorf("%s/leader-epoch-checkpoint = %q", part, got)
		}
		meta := read(filepath.Join(part, "partition.metadata"))
		id, ok := strings.CutPrefix(meta, "version: 0\ntopic_id: ")
		raw, err := base64.RawURLEncoding.DecodeString(id)
		if !ok || len(id) != 22 || err != nil || len(raw) != 16 || bytes.Equal(raw, make([]byte, 16)) {
			t.Errorf("%s/partition.metadata = %q", part, meta)
		}
		ids = append(ids, id)
	}
	if ids[0] != ids[1] {
		t.Errorf("partitions of one topic have topic ids %v", ids)
	}

	// A log start inside the first segment (Kafka's DeleteRecords) is
	// read from the checkpoint and kept.
	segs, _ := filepath.Glob(filepath.Join(dir, "ck-0", "*.log"))
	if len(segs) < 2 {
		t.Fatalf("%d segments", len(segs))
	}
	if err := WriteFileAtomic(filepath.Join(dir, logStartCheckpointFile), []byte("0\n1\nck 0 5\n")); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, newClock())
	p, _ = s.Partition("ck", 0)
	if got := p.LogStartOffset(); got != 5 {
		t.Fatalf("log start %d, want 5 from the checkpoint", got)
	}
	if got := textOf(t, p, 5); !strings.HasPrefix(got, "line 5\n") {
		t.Fatalf("text from the log start: %.20q", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := read(logStartCheckpointFile); got != "0\n1\nck 0 5\n" {
		t.Errorf("log-start-offset-checkpoint after reopen = %q", got)
	}
}

// TestLeftoverTempFilesRemoved: the temp files of interrupted atomic
// writes (checkpoints, topic configs, partition metadata) are removed at
// open, and the files they were replacing are intact.
func TestLeftoverTempFilesRemoved(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, newClock())
	tp, _ := s.CreateTopic("tmp", 1, map[string]string{"segment.bytes": "2000"})
	p, _ := tp.Partition(0)
	for i := 0; i < 50; i++ {
		p.AppendLines([]byte(fmt.Sprintf("value %d\n", i)))
	}
	want := textOf(t, p, 0)
	if _, err := s.AllocateProducerID(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var leftovers []string
	for _, name := range []string{recoveryCheckpointFile, logStartCheckpointFile, cleanerCheckpointFile,
		topicsFile, producerIDFile, cleanShutdownFile,
		"tmp-0/partition.metadata", "tmp-0/leader-epoch-checkpoint", "tmp-0/00000000000000000000.textindex"} {
		path := filepath.Join(dir, name+".tmp")
		if err := os.WriteFile(path, []byte("half-written"), 0o644); err != nil {
			t.Fatal(err)
		}
		leftovers = append(leftovers, path)
	}
	for _, clean := range []bool{true, false} {
		if !clean {
			// The same after an unclean stop.
			s.abandon()
			for _, path := range leftovers {
				os.WriteFile(path, []byte("half-written"), 0o644)
			}
		}
		s = openStore(t, dir, newClock())
		for _, path := range leftovers {
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("clean=%v: leftover %s not removed (%v)", clean, path, err)
			}
		}
		p = mustPartition(t, s, "tmp")
		if got := textOf(t, p, 0); got != want {
			t.Fatalf("clean=%v: text changed", clean)
		}
		if tp, err := s.Topic("tmp"); err != nil || tp.Config().SegmentBytes != 2000 {
			t.Fatalf("clean=%v: topic config lost", clean)
		}
	}
	s.Close()
}

// TestCleanOpenRescansNothing damages a batch in the middle of the active
// segment after a clean close. The next open trusts the clean-shutdown
// marker and rescans nothing: the file keeps its length and a read of the
// batch reports the damage (as Kafka does). Without the marker the same
// damage is found and the log truncated before it. And after an unclean
// stop only segments from the recovery point on are rescanned: damage in a
// closed segment below it is left to the readers, as after a clean close.
func TestCleanOpenRescansNothing(t *testing.T) {
	src := t.TempDir()
	s := openStore(t, src, newClock())
	tp, _ := s.CreateTopic("cl", 1, map[string]string{"segment.bytes": "3000"})
	p, _ := tp.Partition(0)
	// Position of each batch in its segment, and the active segment's.
	var positions, inActive []int64
	prevBase, prevEnd := int64(0), int64(0)
	for i := 0; i < 100; i++ {
		if _, _, err := p.AppendLines([]byte(fmt.Sprintf("value %d\n", i))); err != nil {
			t.Fatal(err)
		}
		a := p.active()
		pos := prevEnd
		if a.base != prevBase {
			pos, inActive = 0, nil
		}
		positions = append(positions, pos)
		inActive = append(inActive, pos)
		prevBase, prevEnd = a.base, a.size.Load()
	}
	act := p.active()
	if act.base == 0 || len(inActive) < 4 || positions[3] == 0 {
		t.Fatalf("want a roll and a few batches in each segment (active base %d, %d batches)", act.base, len(inActive))
	}
	activeLog := filepath.Join("cl-0", segmentName(act.base)+logSuffix)
	firstLog := filepath.Join("cl-0", segmentName(0)+logSuffix)
	damagedAt := inActive[len(inActive)/2]
	leo := p.LogEndOffset()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	flip := func(t *testing.T, path string, at int64) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b[at+record.HeaderSize+1] ^= 0x40 // inside the first record: the CRC fails
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name      string
		log       string
		at        int64
		unclean   bool
		truncated bool
	}{
		{"clean, active segment", activeLog, damagedAt, false, false},
		{"unclean, active segment", activeLog, damagedAt, true, true},
		{"unclean, closed segment below the recovery point", firstLog, positions[3], true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, src, dir)
			path := filepath.Join(dir, c.log)
			size := fileSizeOf(t, path)
			flip(t, path, c.at)
			if c.unclean {
				os.Remove(filepath.Join(dir, cleanShutdownFile))
			}
			s := openStore(t, dir, newClock())
			defer s.Close()
			p := mustPartition(t, s, "cl")
			got := fileSizeOf(t, path)
			if c.truncated {
				if got != c.at || p.LogEndOffset() >= leo {
					t.Fatalf("unclean open kept a damaged batch: %s is %d bytes (damage at %d), log end %d", c.log, got, c.at, p.LogEndOffset())
				}
				return
			}
			if got != size || p.LogEndOffset() != leo {
				t.Fatalf("rescanned: %s is %d bytes (was %d), log end %d (was %d)", c.log, got, size, p.LogEndOffset(), leo)
			}
			v, err := p.Text(0)
			if err != nil {
				t.Fatal(err)
			}
			defer v.Close()
			buf := make([]byte, v.Size())
			_, err = v.ReadAt(buf, 0)
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Path != path || ce.Pos != c.at {
				t.Fatalf("read over the damage: %v; want a corrupt batch at %s position %d", err, path, c.at)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), fmt.Sprint(c.at)) {
				t.Fatalf("error %q does not name the file and position", err)
			}
		})
	}
}

// storedCodecs reads the codec of every batch of a partition.
func storedCodecs(t *testing.T, p *Partition) []record.Codec {
	t.Helper()
	var out []record.Codec
	hdr := make([]byte, record.HeaderSize)
	for o := p.LogStartOffset(); o < p.LogEndOffset(); {
		r, err := p.Read(o, 1)
		if err != nil {
			t.Fatal(err)
		}
		sl := r.Slices[0]
		if _, err := sl.File.ReadAt(hdr, sl.Pos); err != nil {
			t.Fatal(err)
		}
		r.Release()
		h, err := record.ParseHeader(hdr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, h.Codec())
		o = h.NextOffset()
	}
	return out
}

// TestCompressionType: a topic's compression.type names the codec every
// batch is stored with, as a Kafka broker recompresses: lines appended as
// text and batches produced in another codec alike; "producer" (the
// default) keeps what the producer sent and writes text uncompressed.
func TestCompressionType(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, newClock())
	produced := func(codec record.Codec, vals ...string) []byte {
		var bl record.Builder
		spec := record.DefaultSpec()
		spec.Codec = codec
		spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence = 3, 0, 0
		bl.Reset(spec)
		for _, v := range vals {
			bl.Add(1_700_000_000_000, []byte("k"), []byte(v), nil)
		}
		b, err := bl.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	long := strings.Repeat("compressible ", 40)
	cases := []struct {
		ctype string
		want  []record.Codec // lines, producer none, producer gzip
	}{
		{"producer", []record.Codec{record.CodecNone, record.CodecNone, record.CodecGzip}},
		{"uncompressed", []record.Codec{record.CodecNone, record.CodecNone, record.CodecNone}},
		{"gzip", []record.Codec{record.CodecGzip, record.CodecGzip, record.CodecGzip}},
		{"snappy", []record.Codec{record.CodecSnappy, record.CodecSnappy, record.CodecSnappy}},
		{"lz4", []record.Codec{record.CodecLZ4, record.CodecLZ4, record.CodecLZ4}},
		{"zstd", []record.Codec{record.CodecZstd, record.CodecZstd, record.CodecZstd}},
	}
	texts := map[string]string{}
	for _, c := range cases {
		over := map[string]string{"compression.type": c.ctype, "key.separator": "="}
		if c.ctype == "zstd" {
			over["message.timestamp.type"] = "LogAppendTime"
		}
		tp, err := s.CreateTopic("z-"+c.ctype, 1, over)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := tp.Partition(0)
		text := "a=1 " + long + "\nplain " + long + "\n"
		if _, _, err := p.AppendLines([]byte(text)); err != nil {
			t.Fatal(err)
		}
		r1, err := p.AppendBatch(produced(record.CodecNone, "one "+long, "two"))
		if err != nil {
			t.Fatal(err)
		}
		var bl record.Builder
		spec := record.DefaultSpec()
		spec.Codec = record.CodecGzip
		spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence = 3, 0, 2
		bl.Reset(spec)
		bl.Add(1_700_000_000_000, []byte("k"), []byte("three "+long), nil)
		b, _ := bl.Build(nil)
		if _, err := p.AppendBatch(b); err != nil {
			t.Fatal(err)
		}
		// A retry of the recompressed batch is still recognised.
		if dup, err := p.AppendBatch(produced(record.CodecNone, "one "+long, "two")); err != nil || !dup.Duplicate || dup.BaseOffset != r1.BaseOffset {
			t.Fatalf("%s: retry %+v %v", c.ctype, dup, err)
		}
		if got := storedCodecs(t, p); !reflect.DeepEqual(got, c.want) {
			t.Errorf("compression.type=%s: batches stored as %v, want %v", c.ctype, got, c.want)
		}
		want := text + "k=one " + long + "\nk=two\nk=three " + long + "\n"
		if got := textOf(t, p, 0); got != want {
			t.Errorf("compression.type=%s: text %q", c.ctype, got)
		}
		texts[tp.Name()] = want
		if c.ctype == "zstd" {
			if st := statusOf(t, p); st.LastTimestamp <= 1_700_000_000_000 {
				t.Errorf("LogAppendTime lost in recompression: last timestamp %d", st.LastTimestamp)
			}
		}
	}
	// Recovery validates the recompressed batches like any other.
	s.abandon()
	s = openStore(t, dir, newClock())
	defer s.Close()
	for name, want := range texts {
		p := mustPartition(t, s, name)
		if got := textOf(t, p, 0); got != want {
			t.Errorf("%s after recovery: %q", name, got)
		}
	}
}

// TestDefaultConfigIsKafkas: a topic without overrides reads as Kafka's
// topic-level defaults (KAFKA-FORMAT.md §12), every key, plus segfs's
// key.separator, empty. The settings segfs takes but does not apply
// (config_inert.go) show only once set.
func TestDefaultConfigIsKafkas(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	defer s.Close()
	tp, err := s.CreateTopic("defaults", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	const want = `cleanup.policy=delete
compression.type=producer
delete.retention.ms=86400000
file.delete.delay.ms=60000
flush.messages=9223372036854775807
flush.ms=9223372036854775807
index.interval.bytes=4096
key.separator=
max.compaction.lag.ms=9223372036854775807
max.message.bytes=1048588
message.timestamp.after.max.ms=3600000
message.timestamp.before.max.ms=9223372036854775807
message.timestamp.type=CreateTime
min.cleanable.dirty.ratio=0.5
min.compaction.lag.ms=0
min.insync.replicas=1
retention.bytes=-1
retention.ms=604800000
segment.bytes=1073741824
segment.index.bytes=10485760
segment.jitter.ms=0
segment.ms=604800000
`
	if got := string(tp.Config().Text()); got != want {
		t.Errorf("default config:\n%s\nwant:\n%s", got, want)
	}
}

// TestFailedWriteFences: a write to the segment that fails and cannot be
// taken back (the truncate fails too, so the file's state is unknown)
// fences the partition: every later append and flush fails with the
// first error, and reads go on. (A write that fails cleanly, ENOSPC with
// the file restored, does not fence: tests/ TestMountDiskFull.)
func TestFailedWriteFences(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	defer s.abandon()
	tp, _ := s.CreateTopic("wf", 1, nil)
	p, _ := tp.Partition(0)
	if _, _, err := p.AppendLines([]byte("before\n")); err != nil {
		t.Fatal(err)
	}
	seg := p.active()
	// A read-only descriptor: pwrite fails with EBADF, and so does the
	// truncate that would take a partial write back.
	ro, err := os.Open(seg.path(logSuffix))
	if err != nil {
		t.Fatal(err)
	}
	p.amu.Lock()
	rw := seg.log
	seg.log = ro
	p.amu.Unlock()
	_, _, err = p.AppendLines([]byte("lost\n"))
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("append through a failing write: %v, want ErrFenced", err)
	}
	// The file is writable again, but the partition stays fenced.
	p.amu.Lock()
	seg.log = rw
	p.amu.Unlock()
	ro.Close()
	if _, _, err := p.AppendLines([]byte("after\n")); !errors.Is(err, ErrFenced) {
		t.Fatalf("append after the fence: %v", err)
	}
	if _, err := p.AppendBatch(producedBatch(t, []int64{1}, []string{"produced"})); !errors.Is(err, ErrFenced) {
		t.Fatalf("produce after the fence: %v", err)
	}
	if err := p.Flush(); !errors.Is(err, ErrFenced) {
		t.Fatalf("flush after the fence: %v", err)
	}
	if got := textOf(t, p, 0); got != "before\n" {
		t.Fatalf("reads after the fence: %q", got)
	}
}
