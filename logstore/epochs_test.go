package logstore

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/segfs/segfs/logstore/record"
)

// The cache's rules, one by one against Kafka's LeaderEpochFileCache.
func TestEpochCacheRules(t *testing.T) {
	e := func(pairs ...int64) []epochEntry {
		var out []epochEntry
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, epochEntry{int32(pairs[i]), pairs[i+1]})
		}
		return out
	}
	// assign: a new epoch appends; the latest epoch again at the same or a
	// later start changes nothing; conflicting entries go first.
	for _, c := range []struct {
		in      []epochEntry
		add     epochEntry
		want    []epochEntry
		changed bool
	}{
		{nil, epochEntry{0, 0}, e(0, 0), true},
		{e(0, 0), epochEntry{0, 5}, e(0, 0), false},
		{e(0, 5), epochEntry{0, 3}, e(0, 3), true},
		{e(0, 0), epochEntry{2, 5}, e(0, 0, 2, 5), true},
		{e(0, 0, 2, 5, 3, 9), epochEntry{2, 7}, e(0, 0, 2, 7), true}, // epochs at or above 2 go
		{e(0, 0, 2, 5), epochEntry{3, 5}, e(0, 0, 3, 5), true},       // same start: replaced
		{e(0, 0, 2, 5), epochEntry{3, 4}, e(0, 0, 3, 4), true},       // start before the latest's
	} {
		in := slices.Clone(c.in)
		got, changed := assignEpoch(c.in, c.add)
		if !slices.Equal(got, c.want) || changed != c.changed {
			t.Errorf("assign(%v, %v) = %v %v, want %v %v", in, c.add, got, changed, c.want, c.changed)
		}
		if !slices.Equal(c.in, in) {
			t.Errorf("assign modified its input: %v, was %v", c.in, in)
		}
	}
	es := e(1, 0, 3, 10, 4, 20)
	if got := truncateEpochsFromEnd(es, 20); !slices.Equal(got, e(1, 0, 3, 10)) {
		t.Errorf("truncateFromEnd(20) = %v", got)
	}
	if got := truncateEpochsFromEnd(es, 5); !slices.Equal(got, e(1, 0)) {
		t.Errorf("truncateFromEnd(5) = %v", got)
	}
	if got := truncateEpochsFromEnd(es, 0); len(got) != 0 {
		t.Errorf("truncateFromEnd(0) = %v", got)
	}
	if got := truncateEpochsFromStart(es, 12); !slices.Equal(got, e(3, 12, 4, 20)) {
		t.Errorf("truncateFromStart(12) = %v", got)
	}
	if got := truncateEpochsFromStart(es, 10); !slices.Equal(got, e(3, 10, 4, 20)) {
		t.Errorf("truncateFromStart(10) = %v", got)
	}
	if got := truncateEpochsFromStart(es, 0); !slices.Equal(got, es) {
		t.Errorf("truncateFromStart(0) = %v", got)
	}
	if got := truncateEpochsFromStart(es, 25); !slices.Equal(got, e(4, 25)) {
		t.Errorf("truncateFromStart(25) = %v", got)
	}
	// endOffsetFor, log end 30.
	for _, c := range []struct {
		req       int32
		epoch     int32
		endOffset int64
	}{
		{-1, -1, -1}, // UNDEFINED_EPOCH
		{0, 0, 0},    // below the first: itself and the first entry's start
		{1, 1, 10},
		{2, 1, 10}, // between: the floor epoch, the next start
		{3, 3, 20},
		{4, 4, 30}, // the latest: the log end
		{5, -1, -1},
	} {
		ep, off := epochEndOffset(es, c.req, 30)
		if ep != c.epoch || off != c.endOffset {
			t.Errorf("endOffsetFor(%d) = (%d, %d), want (%d, %d)", c.req, ep, off, c.epoch, c.endOffset)
		}
	}
	if ep, off := epochEndOffset(nil, 0, 30); ep != -1 || off != -1 {
		t.Errorf("endOffsetFor on an empty cache = (%d, %d)", ep, off)
	}
	for off, want := range map[int64]int32{0: 1, 9: 1, 10: 3, 19: 3, 20: 4, 100: 4} {
		if got := epochOfOffset(es, off); got != want {
			t.Errorf("epochForOffset(%d) = %d, want %d", off, got, want)
		}
	}
	if got := epochOfOffset(e(5, 10), 3); got != -1 {
		t.Errorf("epochForOffset below the first entry = %d", got)
	}
	// The file format, both ways.
	b := formatEpochCheckpoint(es)
	if string(b) != "0\n3\n1 0\n3 10\n4 20\n" {
		t.Errorf("format = %q", b)
	}
	if got, err := parseEpochCheckpoint(b); err != nil || !slices.Equal(got, es) {
		t.Errorf("parse(format) = %v, %v", got, err)
	}
	for _, bad := range []string{"", "0\n", "1\n0\n", "0\n2\n1 0\n", "0\n1\n1\n", "0\n1\nx 0\n", "0\n1\n-1 0\n", "0\n1\n1 0 0\n"} {
		if _, err := parseEpochCheckpoint([]byte(bad)); err == nil {
			t.Errorf("parse(%q) accepted", bad)
		}
	}
}

// batchEpochs lists (epoch, base offset) of every batch of p.
func batchEpochs(t *testing.T, p *Partition) []epochEntry {
	t.Helper()
	var out []epochEntry
	p.mu.RLock()
	segs := slices.Clone(p.segs)
	p.mu.RUnlock()
	for _, s := range segs {
		limit := s.size.Load()
		for pos := int64(0); pos < limit; {
			h, err := s.header(pos, limit)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, epochEntry{h.PartitionLeaderEpoch, h.BaseOffset})
			pos += h.Size()
		}
	}
	return out
}

func readCheckpoint(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, epochCheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func appendN(t *testing.T, p *Partition, n int, tag string) {
	t.Helper()
	for i := range n {
		if _, _, err := p.AppendLines(fmt.Appendf(nil, "%s %d\n", tag, i)); err != nil {
			t.Fatal(err)
		}
	}
}

// Each open is a new leadership: epoch 0 for a new partition, the latest
// cached + 1 after a reopen; its entry is written before its first batch
// and not at all on an idle open; batches carry it; OffsetForLeaderEpoch
// answers as Kafka's leader would.
func TestEpochsAcrossReopens(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	if _, err := s.CreateTopic("e", 1, nil); err != nil {
		t.Fatal(err)
	}
	p := mustPartition(t, s, "e")
	pdir := filepath.Join(dir, "e-0")
	if p.LeaderEpoch() != 0 || readCheckpoint(t, pdir) != "0\n1\n0 0\n" {
		t.Fatalf("new partition: epoch %d, checkpoint %q", p.LeaderEpoch(), readCheckpoint(t, pdir))
	}
	appendN(t, p, 3, "a")
	if got := batchEpochs(t, p); !slices.Equal(got, []epochEntry{{0, 0}, {0, 1}, {0, 2}}) {
		t.Fatalf("batches %v", got)
	}
	s.Close()

	// An idle open and close: epoch 1 is served, nothing is written
	// (a rewrite renames a new file into place: a new inode).
	fi0, _ := os.Stat(filepath.Join(pdir, epochCheckpointFile))
	for range 2 {
		s = openStore(t, dir, nil)
		p = mustPartition(t, s, "e")
		if p.LeaderEpoch() != 1 {
			t.Fatalf("reopened: epoch %d, want 1", p.LeaderEpoch())
		}
		if got := p.LeaderEpochs(); !slices.Equal(got, []EpochEntry{{0, 0}, {1, 3}}) {
			t.Errorf("view %v", got)
		}
		for req, want := range map[int32][2]int64{0: {0, 3}, 1: {1, 3}, 2: {-1, -1}, -1: {-1, -1}} {
			e, off, ok := p.EndOffsetForEpoch(req)
			if int64(e) != want[0] || off != want[1] || ok != (want[1] >= 0) {
				t.Errorf("EndOffsetForEpoch(%d) = %d %d %v, want %v", req, e, off, ok, want)
			}
		}
		s.Close()
	}
	fi1, _ := os.Stat(filepath.Join(pdir, epochCheckpointFile))
	if !os.SameFile(fi0, fi1) || !fi1.ModTime().Equal(fi0.ModTime()) || readCheckpoint(t, pdir) != "0\n1\n0 0\n" {
		t.Fatalf("idle opens rewrote the checkpoint: %q", readCheckpoint(t, pdir))
	}

	s = openStore(t, dir, nil)
	p = mustPartition(t, s, "e")
	appendN(t, p, 2, "b")
	if got := readCheckpoint(t, pdir); got != "0\n2\n0 0\n1 3\n" {
		t.Errorf("after the first append of epoch 1: %q", got)
	}
	if got := batchEpochs(t, p); !slices.Equal(got[3:], []epochEntry{{1, 3}, {1, 4}}) {
		t.Errorf("batches %v", got)
	}
	if e, off, _ := p.EndOffsetForEpoch(0); e != 0 || off != 3 {
		t.Errorf("end of epoch 0 = %d %d", e, off)
	}
	if e, off, _ := p.EndOffsetForEpoch(1); e != 1 || off != 5 {
		t.Errorf("end of epoch 1 = %d %d", e, off)
	}
	if p.EpochForOffset(2) != 0 || p.EpochForOffset(3) != 1 || p.EarliestEpoch() != 0 {
		t.Errorf("EpochForOffset(2,3) = %d %d, earliest %d", p.EpochForOffset(2), p.EpochForOffset(3), p.EarliestEpoch())
	}
	// The log start moves: the cache is truncated from the start.
	if _, err := p.DeleteRecords(4); err != nil {
		t.Fatal(err)
	}
	if got := readCheckpoint(t, pdir); got != "0\n1\n1 4\n" {
		t.Errorf("after DeleteRecords(4): %q", got)
	}
	s.Close()
	s = openStore(t, dir, nil)
	defer s.Close()
	p = mustPartition(t, s, "e")
	if p.LeaderEpoch() != 2 || p.EarliestEpoch() != 1 {
		t.Errorf("epoch %d earliest %d", p.LeaderEpoch(), p.EarliestEpoch())
	}
}

// The user-visible defect, at the store: records of epoch 1 are lost by a
// power cut (the .log cut back to offset 3, inside epoch 0's records). The
// next leadership is epoch 2, above the lost one, written at open; a
// consumer that read epoch 1 up to offset 6 asks for the end of epoch 1
// and learns that the log diverged at 3.
func TestEpochsAfterPowerCut(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	if _, err := s.CreateTopic("e", 1, nil); err != nil {
		t.Fatal(err)
	}
	p := mustPartition(t, s, "e")
	appendN(t, p, 5, "a")
	s.Close()
	s = openStore(t, dir, nil)
	p = mustPartition(t, s, "e")
	cut := p.active().size.Load()
	appendN(t, p, 3, "b") // epoch 1 at 5..7
	s.abandon()
	pdir := filepath.Join(dir, "e-0")
	if got := readCheckpoint(t, pdir); got != "0\n2\n0 0\n1 5\n" {
		t.Fatalf("before the cut: %q", got)
	}
	// The power cut takes the unflushed tail, epoch 1 and two of epoch 0.
	log := filepath.Join(pdir, segmentName(0)+logSuffix)
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	// Offset 3 starts where 3 of the 5 first batches end.
	pos := int64(0)
	for i := 0; i < 3; i++ {
		h, err := record.ParseHeader(b[pos:])
		if err != nil {
			t.Fatal(err)
		}
		pos += h.Size()
	}
	if pos >= cut {
		t.Fatalf("cut %d past %d", pos, cut)
	}
	if err := os.Truncate(log, pos); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, nil)
	p = mustPartition(t, s, "e")
	if p.LogEndOffset() != 3 || p.LeaderEpoch() != 2 {
		t.Fatalf("after the cut: log end %d, epoch %d", p.LogEndOffset(), p.LeaderEpoch())
	}
	// Written at open: the epoch must never be handed out again.
	if got := readCheckpoint(t, pdir); got != "0\n2\n0 0\n2 3\n" {
		t.Errorf("checkpoint after recovery: %q", got)
	}
	if e, off, ok := p.EndOffsetForEpoch(1); !ok || e != 0 || off != 3 {
		t.Errorf("end of the lost epoch 1 = %d %d %v, want 0 3", e, off, ok)
	}
	// A crash before anything is appended: the next open is a leadership
	// again, never the lost epoch.
	s.abandon()
	s = openStore(t, dir, nil)
	defer s.Close()
	p = mustPartition(t, s, "e")
	if p.LeaderEpoch() != 3 {
		t.Errorf("epoch %d after a crash, want 3", p.LeaderEpoch())
	}
	appendN(t, p, 4, "c")
	if got := batchEpochs(t, p); !slices.Equal(got[3:], []epochEntry{{3, 3}, {3, 4}, {3, 5}, {3, 6}}) {
		t.Errorf("batches after the cut: %v", got)
	}
}

// kafkaEpochDir writes partition k-0 as a Kafka broker left it: batches of
// epoch 5 (offsets 0-2) and 6 (3-4), with the given checkpoint ("" for
// none), and no indexes, so the load rebuilds them.
func kafkaEpochDir(t *testing.T, checkpoint string) string {
	t.Helper()
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	if _, err := s.CreateTopic("k", 1, nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	pdir := filepath.Join(dir, "k-0")
	var log []byte
	var bl record.Builder
	for off := int64(0); off < 5; off++ {
		spec := record.DefaultSpec()
		spec.BaseOffset = off
		spec.LeaderEpoch = 5
		if off >= 3 {
			spec.LeaderEpoch = 6
		}
		bl.Reset(spec)
		bl.Add(1_700_000_000_000+off, nil, fmt.Appendf(nil, "r%d", off), nil)
		var err error
		if log, err = bl.Build(log); err != nil {
			t.Fatal(err)
		}
	}
	for _, suf := range []string{indexSuffix, timeIndexSuffix, textIndexSuffix} {
		os.Remove(filepath.Join(pdir, segmentName(0)+suf))
	}
	if err := os.WriteFile(filepath.Join(pdir, segmentName(0)+logSuffix), log, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(pdir, epochCheckpointFile))
	if checkpoint != "" {
		if err := os.WriteFile(filepath.Join(pdir, epochCheckpointFile), []byte(checkpoint), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A Kafka data directory keeps its epochs: from its checkpoint, rebuilt
// from the batches when the checkpoint is missing or unreadable, completed
// from the recovered batches when it lags them. Segfs's leadership follows
// the latest (7).
func TestEpochsKafkaDirectory(t *testing.T) {
	const want = "0\n2\n5 0\n6 3\n"
	for _, c := range []struct{ name, checkpoint string }{
		{"checkpoint", want},
		{"missing", ""},
		{"corrupt", "0\n3\n5 0\n"},
		{"garbage", "\x00\x00\x00"},
		{"lagging", "0\n1\n5 0\n"}, // the recovered batches of epoch 6 add it
		{"unordered", "0\n3\n5 0\n2 1\n6 3\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := kafkaEpochDir(t, c.checkpoint)
			s := openStore(t, dir, nil)
			p := mustPartition(t, s, "k")
			pdir := filepath.Join(dir, "k-0")
			if p.LogEndOffset() != 5 || p.LeaderEpoch() != 7 {
				t.Fatalf("log end %d, epoch %d", p.LogEndOffset(), p.LeaderEpoch())
			}
			if c.name != "unordered" {
				// (Kafka's load drops 2 1, which follows 5 0: 5 0 goes
				// with it, as assign removes the epochs above the new
				// one. The file is then 2 1, 6 3.)
				if got := readCheckpoint(t, pdir); got != want {
					t.Errorf("checkpoint %q, want %q", got, want)
				}
				if e, off, _ := p.EndOffsetForEpoch(5); e != 5 || off != 3 {
					t.Errorf("end of epoch 5 = %d %d", e, off)
				}
			}
			if e, off, _ := p.EndOffsetForEpoch(6); e != 6 || off != 5 {
				t.Errorf("end of epoch 6 = %d %d", e, off)
			}
			appendN(t, p, 1, "new")
			if got := batchEpochs(t, p); got[5] != (epochEntry{7, 5}) {
				t.Errorf("appended batch %v", got[5])
			}
			s.Close()
			if got := readCheckpoint(t, pdir); c.name != "unordered" && got != "0\n3\n5 0\n6 3\n7 5\n" {
				t.Errorf("checkpoint after an append: %q", got)
			}
		})
	}
}

// A checkpoint that cannot be written at open (here: a directory in its
// place) does not stop the open; the first append tries again and fails
// without writing its batch.
func TestEpochsCheckpointUnwritable(t *testing.T) {
	dir := kafkaEpochDir(t, "")
	pdir := filepath.Join(dir, "k-0")
	if err := os.Mkdir(filepath.Join(pdir, epochCheckpointFile+".tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The loader removes *.tmp leftovers: make the .tmp a non-empty
	// directory so that it stays.
	if err := os.WriteFile(filepath.Join(pdir, epochCheckpointFile+".tmp", "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, dir, nil)
	defer s.Close()
	p := mustPartition(t, s, "k")
	if p.LeaderEpoch() != 7 {
		t.Fatalf("epoch %d", p.LeaderEpoch())
	}
	if _, _, err := p.AppendLines([]byte("x\n")); err == nil {
		t.Fatal("append succeeded without its epoch on disk")
	}
	if p.LogEndOffset() != 5 {
		t.Fatalf("log end %d after a refused append", p.LogEndOffset())
	}
	os.RemoveAll(filepath.Join(pdir, epochCheckpointFile+".tmp"))
	if _, _, err := p.AppendLines([]byte("x\n")); err != nil {
		t.Fatal(err)
	}
	if got := readCheckpoint(t, pdir); got != "0\n3\n5 0\n6 3\n7 5\n" {
		t.Errorf("checkpoint %q", got)
	}
}

// After a crash that left records past the recovery point (the dead
// process's pages, which a power cut may still take), the new epoch's
// entry is written at open, before any client can see the epoch with a
// log end that may yet shrink; an open after a clean close writes nothing.
func TestEpochsWrittenAtUncleanOpen(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	if _, err := s.CreateTopic("e", 1, nil); err != nil {
		t.Fatal(err)
	}
	appendN(t, mustPartition(t, s, "e"), 3, "a")
	s.abandon()
	pdir := filepath.Join(dir, "e-0")
	s = openStore(t, dir, nil)
	p := mustPartition(t, s, "e")
	if p.LeaderEpoch() != 1 || readCheckpoint(t, pdir) != "0\n2\n0 0\n1 3\n" {
		t.Errorf("unclean open: epoch %d, checkpoint %q", p.LeaderEpoch(), readCheckpoint(t, pdir))
	}
	s.Close()
	s = openStore(t, dir, nil)
	defer s.Close()
	p = mustPartition(t, s, "e")
	if p.LeaderEpoch() != 2 || readCheckpoint(t, pdir) != "0\n2\n0 0\n1 3\n" {
		t.Errorf("clean open: epoch %d, checkpoint %q", p.LeaderEpoch(), readCheckpoint(t, pdir))
	}
	// Epoch 1 has no record: epoch 2's entry at the same offset replaces
	// it, as Kafka's assign does, and epoch 1 is answered by epoch 0.
	if e, off, _ := p.EndOffsetForEpoch(1); e != 0 || off != 3 {
		t.Errorf("end of the empty epoch 1 = %d %d, want 0 3", e, off)
	}
}

// Kafka's leader epoch is an int32. A Kafka data directory whose latest
// epoch is 2^31-2 gets 2^31-1 at its next open; the open after that has no
// epoch left to bump to, and keeps 2^31-1 with the cache as it was. The
// bump wrapped to -2^31: batches were stamped with a negative epoch, and
// the checkpoint was rewritten as that one entry, which the next load
// could not parse, so every cached epoch was lost.
func TestEpochsAtInt32Max(t *testing.T) {
	dir := kafkaEpochDir(t, "0\n2\n5 0\n2147483646 3\n")
	pdir := filepath.Join(dir, "k-0")
	const want = "0\n3\n5 0\n2147483646 3\n2147483647 5\n"
	for i := range 3 {
		s := openStore(t, dir, nil)
		p := mustPartition(t, s, "k")
		if p.LeaderEpoch() != math.MaxInt32 {
			t.Fatalf("open %d: epoch %d, want %d", i, p.LeaderEpoch(), math.MaxInt32)
		}
		appendN(t, p, 1, "x")
		if got := batchEpochs(t, p); got[len(got)-1] != (epochEntry{math.MaxInt32, int64(5 + i)}) {
			t.Errorf("open %d: batches %v", i, got)
		}
		if e, off, ok := p.EndOffsetForEpoch(2147483646); !ok || e != 2147483646 || off != 5 {
			t.Errorf("open %d: end of epoch 2^31-2 = %d %d %v, want 5", i, e, off, ok)
		}
		s.Close()
		if got := readCheckpoint(t, pdir); got != want {
			t.Fatalf("open %d: checkpoint %q, want %q", i, got, want)
		}
	}
}
