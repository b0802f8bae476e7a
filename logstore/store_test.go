package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segfs/segfs/logstore/record"
)

// fakeClock advances one millisecond per reading, so every batch gets its
// own timestamp and time lookups have something to find.
type fakeClock struct{ ms atomic.Int64 }

func newClock() *fakeClock {
	c := &fakeClock{}
	c.ms.Store(1_700_000_000_000)
	return c
}
func (c *fakeClock) now() time.Time { return time.UnixMilli(c.ms.Add(1)) }

// discardLogger is the logger of test stores: their warnings are expected
// and would only clutter -v output.
func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func openStore(t testing.TB, dir string, clock *fakeClock) *Store {
	t.Helper()
	opts := Options{Logger: discardLogger()}
	if clock != nil {
		opts.Now = clock.now
	}
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// statusOf is p.Status(), failing t on an error.
func statusOf(t testing.TB, p *Partition) Status {
	t.Helper()
	st, err := p.Status()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func mustPartition(t testing.TB, s *Store, topic string) *Partition {
	t.Helper()
	p, err := s.Partition(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// readAll reads a text view to its current size.
func readAll(t testing.TB, v *TextView) string {
	t.Helper()
	return readAllSized(t, v, 0)
}

// readAllSized is readAll into a buffer made for size bytes (a buffer
// that doubled its way to TestMillionRecords' 100 MB copied it all
// twice, slow under -race).
func readAllSized(t testing.TB, v *TextView, size int64) string {
	t.Helper()
	var out bytes.Buffer
	out.Grow(int(min(max(size, 0), 1<<30)))
	buf := make([]byte, 128<<10)
	for off := int64(0); ; {
		n, err := v.ReadAt(buf, off)
		out.Write(buf[:n])
		off += int64(n)
		if err == io.EOF || (err == nil && n == 0) {
			break
		}
		if err != nil {
			t.Fatalf("ReadAt(%d): %v", off, err)
		}
	}
	return out.String()
}

func textOf(t testing.TB, p *Partition, from int64) string {
	t.Helper()
	v, err := p.Text(from)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	size := v.Size()
	got := readAllSized(t, v, size)
	if int64(len(got)) != size {
		t.Fatalf("view from %d: Size()=%d but read %d bytes", from, size, len(got))
	}
	return got
}

// linearRecords decodes every batch of every segment in order.
type recInfo struct {
	offset, ts int64
	value      string
}

func linearRecords(t testing.TB, p *Partition) []recInfo {
	t.Helper()
	var out []recInfo
	var dec record.Decoder
	for _, s := range p.acquireSegments(0) {
		sc := newScanner(s.log, s.path(logSuffix), 0, s.size.Load(), nil)
		for {
			_, b, err := sc.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := dec.Records(b, func(r *record.Record) error {
				out = append(out, recInfo{r.Offset, r.Timestamp, string(r.Value)})
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		s.release()
	}
	return out
}

// appendLine100 appends record i's line: "record %09d " and x's to 99
// bytes, and a newline.
func appendLine100(b []byte, i int) []byte {
	b = append(b, "record "...)
	var d [9]byte
	for k := len(d) - 1; k >= 0; k-- {
		d[k] = byte('0' + i%10)
		i /= 10
	}
	b = append(b, d[:]...)
	b = append(b, ' ')
	b = append(b, xs82...)
	return append(b, '\n')
}

var xs82 = strings.Repeat("x", 99-len("record 123456789 "))

// TestMillionRecords appends 1,000,000 100-byte records into 1 MiB segments
// and reads them back by every offset, as text, and by random offset and
// timestamp lookups checked against a linear scan.
func TestMillionRecords(t *testing.T) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	dir := t.TempDir()
	clock := newClock()
	s := openStore(t, dir, clock)
	defer s.Close()
	if _, err := s.CreateTopic("big", 1, map[string]string{"segment.bytes": "1048576"}); err != nil {
		t.Fatal(err)
	}
	p := mustPartition(t, s, "big")
	// The text of every record, built in place and appended 100 lines at
	// a time, each batch from a copy. (A line built by fmt.Sprintf, and two
	// string builders, one doubling to 100 MB, took 12 s under -race; the
	// 10,000 AppendLines 0.4 s.)
	want := make([]byte, 0, n*100)
	for i := 0; i < n; i++ {
		want = appendLine100(want, i)
	}
	var chunk []byte
	for from := 0; from < n; from += 100 {
		chunk = append(chunk[:0], want[from*100:min(from+100, n)*100]...)
		if _, _, err := p.AppendLines(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if got := p.LogEndOffset(); got != int64(n) {
		t.Fatalf("log end %d, want %d", got, n)
	}
	if st := statusOf(t, p); st.Segments < n/11000 {
		t.Fatalf("expected about %d segments of 1 MiB, got %d", n/10500, st.Segments)
	}
	if got := textOf(t, p, 0); got != string(want) {
		t.Fatalf("text differs: %d bytes vs %d", len(got), len(want))
	}
	// Every offset: the first batch returned contains it. The offsets are
	// independent reads of a log nothing appends to any more, so they are
	// split between the CPUs; each worker reads and parses a batch header
	// once for the run of offsets that Read answers with the same batch (the
	// bytes at that position cannot change, so the header is the same).
	workers := min(runtime.GOMAXPROCS(0), 4)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		from, to := int64(n)*int64(w)/int64(workers), int64(n)*int64(w+1)/int64(workers)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := checkReadEach(p, from, to); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	recs := linearRecords(t, p)
	if len(recs) != n {
		t.Fatalf("linear scan found %d records", len(recs))
	}
	// The reference for a timestamp lookup is the first record with ts >= T.
	// runMax[i] is the largest timestamp among recs[0..i]; it never
	// decreases, and the first i with runMax[i] >= T is the first record
	// with ts >= T, so a binary search over it gives the same answer as a
	// linear scan of recs (which, 1000 times over a million records, took
	// about 20 s of this test under -race).
	runMax := make([]int64, n)
	for i, r := range recs {
		runMax[i] = r.ts
		if i > 0 && runMax[i-1] > r.ts {
			runMax[i] = runMax[i-1]
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 1000; i++ {
		o := rng.Int64N(int64(n))
		v, err := p.Text(o)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 100)
		if _, err := v.ReadAt(buf, 0); err != nil {
			t.Fatal(err)
		}
		v.Close()
		if string(buf[:99]) != recs[o].value {
			t.Fatalf("offset %d: got %q want %q", o, buf[:99], recs[o].value)
		}
		// Timestamp lookup: first record with ts >= T.
		T := recs[0].ts + rng.Int64N(recs[n-1].ts-recs[0].ts+2) - 1
		wantOff := int64(-1)
		if j := sort.Search(n, func(j int) bool { return runMax[j] >= T }); j < n {
			wantOff = recs[j].offset
		}
		got, ok, err := p.OffsetForTime(T)
		if err != nil {
			t.Fatal(err)
		}
		if (wantOff >= 0) != ok || (ok && got != wantOff) {
			t.Fatalf("OffsetForTime(%d) = %d,%v want %d", T, got, ok, wantOff)
		}
	}
	if _, ok, _ := p.OffsetForTime(recs[n-1].ts + 1); ok {
		t.Fatal("a time after the last record must find nothing")
	}
	ts, off, ok, err := p.MaxTimestamp()
	if err != nil || !ok || ts != recs[n-1].ts || recs[off].ts != ts {
		t.Fatalf("MaxTimestamp = %d,%d,%v,%v", ts, off, ok, err)
	}
}

// checkReadEach checks that Read(o, 1) returns exactly one slice, and that
// it is one whole batch holding o, for every o in [from, to).
func checkReadEach(p *Partition, from, to int64) error {
	hdr := make([]byte, record.HeaderSize)
	var last FileSlice
	var h record.Header
	for o := from; o < to; o++ {
		r, err := p.Read(o, 1)
		if err != nil {
			return fmt.Errorf("Read(%d): %v", o, err)
		}
		if len(r.Slices) != 1 {
			return fmt.Errorf("Read(%d): %d slices", o, len(r.Slices))
		}
		sl := r.Slices[0]
		if o == from || sl.File != last.File || sl.Pos != last.Pos {
			if _, err := sl.File.ReadAt(hdr, sl.Pos); err != nil {
				return err
			}
			if h, err = record.ParseHeader(hdr); err != nil {
				return err
			}
			last = sl
		}
		if h.BaseOffset > o || h.LastOffset() < o || sl.Len != h.Size() {
			return fmt.Errorf("Read(%d) gave batch %d..%d len %d/%d", o, h.BaseOffset, h.LastOffset(), sl.Len, h.Size())
		}
		r.Release()
	}
	return nil
}

func TestReopenCleanAndContent(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, newClock())
	if _, err := s.CreateTopic("t", 2, map[string]string{"segment.bytes": "4096", "index.interval.bytes": "100"}); err != nil {
		t.Fatal(err)
	}
	p := mustPartition(t, s, "t")
	for i := 0; i < 500; i++ {
		if _, _, err := p.AppendLines([]byte(fmt.Sprintf("line %d\n", i))); err != nil {
			t.Fatal(err)
		}
	}
	before := textOf(t, p, 0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{".kafka_cleanshutdown", "recovery-point-offset-checkpoint", "log-start-offset-checkpoint", "t-0/partition.metadata", "t-0/leader-epoch-checkpoint", "t-1/00000000000000000000.log"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	ck, _ := os.ReadFile(filepath.Join(dir, "recovery-point-offset-checkpoint"))
	if string(ck) != "0\n2\nt 0 500\nt 1 0\n" {
		t.Errorf("recovery checkpoint = %q", ck)
	}
	pm, _ := os.ReadFile(filepath.Join(dir, "t-0/partition.metadata"))
	if !strings.HasPrefix(string(pm), "version: 0\ntopic_id: ") || strings.HasSuffix(string(pm), "\n") {
		t.Errorf("partition.metadata = %q", pm)
	}
	// Sealed indexes are trimmed to their entries.
	fi, _ := os.Stat(filepath.Join(dir, "t-0/00000000000000000000.index"))
	if fi.Size() == 0 || fi.Size() >= 10485760 || fi.Size()%8 != 0 {
		t.Errorf("index not trimmed: %d bytes", fi.Size())
	}
	s = openStore(t, dir, newClock())
	defer s.Close()
	p = mustPartition(t, s, "t")
	if got := textOf(t, p, 0); got != before {
		t.Fatal("content changed across a clean reopen")
	}
	if _, err := os.Stat(filepath.Join(dir, ".kafka_cleanshutdown")); !os.IsNotExist(err) {
		t.Fatal("the clean-shutdown marker must be removed at open")
	}
	first, _, err := p.AppendLines([]byte("after\n"))
	if err != nil || first != 500 {
		t.Fatalf("append after reopen: %d %v", first, err)
	}
}

func TestLockedDataDir(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	defer s.Close()
	_, err := Open(dir, Options{})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), fmt.Sprint(os.Getpid())) {
		t.Fatalf("second open: %v", err)
	}
}

// TestLockHolderClosing: the lock file names the holder, and says once
// it has begun to shut down (MarkClosing), for a segfs started meanwhile
// to wait for it; Close empties it.
func TestLockHolderClosing(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	if pid, closing := LockHolder(dir); pid != os.Getpid() || closing {
		t.Fatalf("open store: LockHolder %d %v", pid, closing)
	}
	s.MarkClosing()
	_, err := Open(dir, Options{})
	var le *LockedError
	if !errors.As(err, &le) || le.PID != os.Getpid() || !le.Closing || !strings.Contains(err.Error(), "shutting down") {
		t.Fatalf("open beside a closing store: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if pid, closing := LockHolder(dir); pid != 0 || closing {
		t.Fatalf("closed store: LockHolder %d %v", pid, closing)
	}
}

// TestLogNamesPartition: the store's log lines about a partition name it
// as fs and fetch do, topic=T partition=N; some said partition=T-N. Here
// a leftover file removed on open, a roll and a retention pass.
func TestLogNamesPartition(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	if _, err := s.CreateTopic("lg.x-1", 2, map[string]string{"segment.bytes": "1024", "retention.bytes": "1024"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "lg.x-1-1", "00000000000000000000.log.deleted"), nil, 0o644)
	// Read after Close, once the background goroutines have stopped.
	var buf bytes.Buffer
	s, err := Open(dir, Options{
		Logger:                 slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})),
		RetentionCheckInterval: -1, CleanerInterval: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Partition("lg.x-1", 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		if _, _, err := p.AppendLines([]byte(strings.Repeat("x", 100) + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	s.runCleanup("retention", (*Partition).ApplyRetention)
	s.Close()
	out := buf.String()
	for _, msg := range []string{`msg="removed leftover file"`, `msg="rolled segment"`, `msg="retention pass"`} {
		if !strings.Contains(out, msg+" topic=lg.x-1 partition=1 ") {
			t.Errorf("no line %s topic=lg.x-1 partition=1 in:\n%s", msg, out)
		}
	}
	if strings.Contains(out, "partition=lg") {
		t.Errorf("a line names the partition by its directory:\n%s", out)
	}
}

// buildState appends batches and returns the expected text after each
// batch plus the byte position of each batch in the single segment.
func buildState(t *testing.T, dir string, batches int) (texts []string, positions []int64) {
	s := openStore(t, dir, newClock())
	if _, err := s.CreateTopic("r", 1, map[string]string{"index.interval.bytes": "64"}); err != nil {
		t.Fatal(err)
	}
	p := mustPartition(t, s, "r")
	var acc string
	for i := 0; i < batches; i++ {
		positions = append(positions, p.active().size.Load())
		l := fmt.Sprintf("batch %d a\nbatch %d b\nbatch %d c\n", i, i, i)
		if _, _, err := p.AppendLines([]byte(l)); err != nil {
			t.Fatal(err)
		}
		acc += l
		texts = append(texts, acc)
	}
	positions = append(positions, p.active().size.Load())
	s.abandon()
	return texts, positions
}

// copyDirTimes is copyDir keeping the files' modification times, which
// retention falls back to for a segment without timestamps: the copy of a
// fixture is then the directory itself, not one whose segments were all
// just written.
func copyDirTimes(t testing.TB, src, dst string) {
	t.Helper()
	copyDir(t, src, dst)
	err := filepath.Walk(src, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		return os.Chtimes(filepath.Join(dst, rel), info.ModTime(), info.ModTime())
	})
	if err != nil {
		t.Fatal(err)
	}
}

func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	filepath.Walk(src, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		// io.Copy between two files copies in the kernel
		// (copy_file_range): under -race, reading a segment of many
		// megabytes into memory and writing it out had the race
		// detector track every byte twice, which made this copy a large
		// part of the recovery tests that call it per case.
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

// TestRecoveryTornTail truncates the active segment at every byte inside its
// last batch: recovery keeps exactly the earlier batches and appends go on
// from there.
func TestRecoveryTornTail(t *testing.T) {
	src := t.TempDir()
	texts, pos := buildState(t, src, 20)
	last := len(texts) - 1
	for cut := pos[last]; cut < pos[last+1]; cut++ {
		dir := t.TempDir()
		copyDir(t, src, dir)
		if err := os.Truncate(filepath.Join(dir, "r-0", "00000000000000000000.log"), cut); err != nil {
			t.Fatal(err)
		}
		s := openStore(t, dir, newClock())
		p := mustPartition(t, s, "r")
		if got := p.LogEndOffset(); got != int64(3*last) {
			t.Fatalf("cut %d: log end %d, want %d", cut, got, 3*last)
		}
		if got := textOf(t, p, 0); got != texts[last-1] {
			t.Fatalf("cut %d: text mismatch", cut)
		}
		if fi, _ := os.Stat(filepath.Join(dir, "r-0", "00000000000000000000.log")); fi.Size() != pos[last] {
			t.Fatalf("cut %d: log not truncated to %d (is %d)", cut, pos[last], fi.Size())
		}
		if first, _, err := p.AppendLines([]byte("next\n")); err != nil || first != int64(3*last) {
			t.Fatalf("cut %d: append after recovery: %d %v", cut, first, err)
		}
		s.Close()
	}
}

// TestRecoveryGarbageTail covers zero and random tails (preallocation, torn
// sectors) and a bit flip in the active segment's last batch.
func TestRecoveryGarbageTail(t *testing.T) {
	src := t.TempDir()
	texts, pos := buildState(t, src, 10)
	logf := filepath.Join("r-0", "00000000000000000000.log")
	cases := map[string]func(path string){
		"zeros": func(path string) {
			f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			f.Write(make([]byte, 4096))
			f.Close()
		},
		"random": func(path string) {
			f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			b := make([]byte, 777)
			for i := range b {
				b[i] = byte(rand.IntN(256))
			}
			f.Write(b)
			f.Close()
		},
		"huge length": func(path string) {
			f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			f.Write([]byte{0, 0, 0, 0, 0, 0, 0, 30, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 2})
			f.Close()
		},
		"bit flip in last batch": func(path string) {
			f, _ := os.OpenFile(path, os.O_RDWR, 0)
			b := make([]byte, 1)
			at := pos[len(pos)-2] + 40
			f.ReadAt(b, at)
			b[0] ^= 0x10
			f.WriteAt(b, at)
			f.Close()
		},
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, src, dir)
			damage(filepath.Join(dir, logf))
			s := openStore(t, dir, newClock())
			defer s.Close()
			p := mustPartition(t, s, "r")
			want := texts[len(texts)-1]
			if name == "bit flip in last batch" {
				want = texts[len(texts)-2]
			}
			if got := textOf(t, p, 0); got != want {
				t.Fatalf("text after recovery: %q", got)
			}
		})
	}
}

// TestRecoveryIndexes damages or deletes the indexes of a cleanly closed
// store: they are rebuilt, and lookups answer as before.
func TestRecoveryIndexes(t *testing.T) {
	src := t.TempDir()
	clock := newClock()
	s := openStore(t, src, clock)
	if _, err := s.CreateTopic("x", 1, map[string]string{"segment.bytes": "20000", "index.interval.bytes": "200"}); err != nil {
		t.Fatal(err)
	}
	p := mustPartition(t, s, "x")
	for i := 0; i < 2000; i++ {
		if _, _, err := p.AppendLines([]byte(fmt.Sprintf("value %d\n", i))); err != nil {
			t.Fatal(err)
		}
	}
	wantText := textOf(t, p, 0)
	recs := linearRecords(t, p)
	s.Close()
	// textAt[o] is where record o's line starts in the text.
	textAt := make([]int, len(recs)+1)
	for i, r := range recs {
		textAt[i+1] = textAt[i] + len(r.value) + 1
	}
	if textAt[len(recs)] != len(wantText) {
		t.Fatalf("the records' lines make %d bytes, the text %d", textAt[len(recs)], len(wantText))
	}
	damages := map[string]func(path string){
		"deleted":     func(path string) { os.Remove(path) },
		"zero length": func(path string) { os.Truncate(path, 0) },
		"zeroed":      func(path string) { fi, _ := os.Stat(path); os.WriteFile(path, make([]byte, fi.Size()), 0o644) },
		"odd length": func(path string) {
			f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			f.Write([]byte{1, 2, 3})
			f.Close()
		},
		"garbage": func(path string) {
			b := make([]byte, 96)
			copy(b, "garbage garbage garbage")
			os.WriteFile(path, b, 0o644)
		},
		"past end of log": func(path string) { os.WriteFile(path, []byte{0, 0, 0, 5, 0x7f, 0, 0, 0}, 0o644) },
	}
	for name, damage := range damages {
		for _, suffix := range []string{".index", ".timeindex", ".textindex"} {
			t.Run(name+suffix, func(t *testing.T) {
				dir := t.TempDir()
				copyDir(t, src, dir)
				matches, _ := filepath.Glob(filepath.Join(dir, "x-0", "*"+suffix))
				for _, m := range matches {
					damage(m)
				}
				s := openStore(t, dir, newClock())
				defer s.Close()
				p := mustPartition(t, s, "x")
				if got := textOf(t, p, 0); got != wantText {
					t.Fatal("text changed")
				}
				for i := 0; i < 200; i++ {
					r := recs[rand.IntN(len(recs))]
					off, ok, err := p.OffsetForTime(r.ts)
					if err != nil || !ok || recs[off].ts < r.ts || (off > 0 && recs[off-1].ts >= r.ts) {
						t.Fatalf("OffsetForTime(%d) = %d %v %v", r.ts, off, ok, err)
					}
					// The view from r's offset: its size is the rest of
					// the text, and it starts with r's line (read alone:
					// reading the whole rest for each of the 200 lookups
					// was most of this test's time under -race).
					v, err := p.Text(r.offset)
					if err != nil {
						t.Fatal(err)
					}
					if size, want := v.Size(), int64(len(wantText)-textAt[r.offset]); size != want {
						v.Close()
						t.Fatalf("view from offset %d: Size()=%d, want %d", r.offset, size, want)
					}
					got := make([]byte, len(r.value)+1)
					n, err := v.ReadAt(got, 0)
					v.Close()
					if n != len(got) || string(got) != r.value+"\n" {
						t.Fatalf("offset %d reads %q (%v), want %q", r.offset, got[:n], err, r.value+"\n")
					}
					// Every 20th is read whole: exactly the rest of the text.
					if i%20 == 0 && textOf(t, p, r.offset) != wantText[textAt[r.offset]:] {
						t.Fatalf("the text from offset %d is not the rest of the text", r.offset)
					}
				}
				for _, seg := range p.acquireSegments(0) {
					if err := seg.oidx.SanityCheck(); err != nil {
						t.Error(err)
					}
					if err := seg.tidx.SanityCheck(); err != nil {
						t.Error(err)
					}
					seg.release()
				}
			})
		}
	}
}

// TestAbandonWithoutClose simulates a crash: every acknowledged append is
// there after reopening, and the reopened log takes appends.
func TestAbandonWithoutClose(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, newClock())
	s.CreateTopic("a", 1, map[string]string{"segment.bytes": "3000"})
	p := mustPartition(t, s, "a")
	var want strings.Builder
	for i := 0; i < 1000; i++ {
		l := fmt.Sprintf("line %d\n", i)
		if _, _, err := p.AppendLines([]byte(l)); err != nil {
			t.Fatal(err)
		}
		want.WriteString(l)
	}
	s.abandon()
	s = openStore(t, dir, newClock())
	defer s.Close()
	p = mustPartition(t, s, "a")
	if got := textOf(t, p, 0); got != want.String() {
		t.Fatal("lost data after abandon")
	}
	if first, _, err := p.AppendLines([]byte("more\n")); err != nil || first != 1000 {
		t.Fatalf("append: %d %v", first, err)
	}
}

// TestCorruptClosedSegment flips a bit in a sealed segment: reads of that
// batch fail with ErrCorrupt instead of returning garbage, others work.
func TestCorruptClosedSegment(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, newClock())
	s.CreateTopic("c", 1, map[string]string{"segment.bytes": "2000"})
	p := mustPartition(t, s, "c")
	for i := 0; i < 300; i++ {
		p.AppendLines([]byte(fmt.Sprintf("value number %d\n", i)))
	}
	s.Close()
	path := filepath.Join(dir, "c-0", "00000000000000000000.log")
	b, _ := os.ReadFile(path)
	b[200] ^= 1
	os.WriteFile(path, b, 0o644)
	s = openStore(t, dir, newClock())
	defer s.Close()
	p = mustPartition(t, s, "c")
	v, _ := p.Text(0)
	defer v.Close()
	buf := make([]byte, v.Size())
	_, err := v.ReadAt(buf, 0)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read over a flipped bit: %v", err)
	}
	if got := textOf(t, p, p.LogEndOffset()-1); got != "value number 299\n" {
		t.Fatalf("later segment: %q", got)
	}
}

func TestConfig(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	tp, err := s.CreateTopic("cfg", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(tp.Config().Text(), []byte("segment.bytes=1073741824\n")) {
		t.Fatal("default segment.bytes missing")
	}
	for _, bad := range []map[string]string{
		{"no.such.key": "1"}, {"segment.bytes": "abc"}, {"segment.bytes": "1"},
		{"cleanup.policy": "shred"}, {"min.cleanable.dirty.ratio": "2"}, {"retention.ms": "-2"},
		{"segment.bytes": "2000", "message.timestamp.type": "Never"},
	} {
		if err := tp.SetConfig(bad); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("SetConfig(%v) = %v", bad, err)
		}
	}
	if tp.Config().SegmentBytes != 1<<30 {
		t.Fatal("a failed SetConfig changed something")
	}
	if err := tp.SetConfig(map[string]string{"segment.bytes": "2000", "key.separator": "=", "cleanup.policy": "delete,compact"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseConfigText([]byte("segment.bytes=1\nbogus\n")); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("ParseConfigText: %v", err)
	}
	ch, err := ParseConfigText([]byte("# comment\n\nretention.ms = 1000\nkey.separator=\n"))
	if err != nil || ch["retention.ms"] != "1000" || ch["key.separator"] != "" {
		t.Fatalf("ParseConfigText: %v %v", ch, err)
	}
	s.Close()
	s = openStore(t, dir, nil)
	defer s.Close()
	tp, _ = s.Topic("cfg")
	c := tp.Config()
	if c.SegmentBytes != 2000 || c.KeySeparator != "=" || c.CleanupPolicy != "compact,delete" {
		t.Fatalf("overrides not persisted: %+v", c)
	}
	if err := tp.SetConfig(map[string]string{"segment.bytes": ""}); err != nil || tp.Config().SegmentBytes != 1<<30 {
		t.Fatal("reset to default failed")
	}
}

func TestTopicsAndPartitions(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{DefaultPartitions: 3, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, bad := range []string{"", ".", "..", "a/b", "sp ace", strings.Repeat("x", 250)} {
		if _, err := s.CreateTopic(bad, 1, nil); !errors.Is(err, ErrInvalidName) {
			t.Errorf("CreateTopic(%q) = %v", bad, err)
		}
	}
	tp, err := s.CreateTopic("my.topic-1_x", 0, nil)
	if err != nil || len(tp.Partitions()) != 3 {
		t.Fatalf("create: %v", err)
	}
	if _, err := s.CreateTopic("my.topic-1_x", 1, nil); !errors.Is(err, ErrTopicExists) {
		t.Fatal(err)
	}
	if _, err := tp.AddPartition(5); !errors.Is(err, ErrInvalidPartition) {
		t.Fatal(err)
	}
	if _, err := tp.AddPartition(1); !errors.Is(err, ErrPartitionExists) {
		t.Fatal(err)
	}
	if _, err := tp.AddPartition(3); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Partition("nope", 0); !errors.Is(err, ErrUnknownTopic) {
		t.Fatal(err)
	}
	if _, err := s.Partition("my.topic-1_x", 9); !errors.Is(err, ErrUnknownPartition) {
		t.Fatal(err)
	}
}

func TestMessageSizeLimits(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	defer s.Close()
	tp, _ := s.CreateTopic("m", 1, map[string]string{"max.message.bytes": "1000"})
	p, _ := tp.Partition(0)
	big := strings.Repeat("y", 2000) + "\n"
	if _, _, err := p.AppendLines([]byte("ok\n" + big)); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("oversize line: %v", err)
	}
	if p.LogEndOffset() != 0 {
		t.Fatal("a rejected write appended something")
	}
	// Many small lines over the limit split into several batches.
	text := strings.Repeat(strings.Repeat("z", 50)+"\n", 100)
	first, last, err := p.AppendLines([]byte(text))
	if err != nil || first != 0 || last != 99 {
		t.Fatalf("split append: %d %d %v", first, last, err)
	}
	r, _ := p.Read(0, 1<<20)
	defer r.Release()
	if r.Bytes < 5000 || len(r.Slices) != 1 {
		t.Fatalf("read %d bytes", r.Bytes)
	}
	if got := textOf(t, p, 0); got != text {
		t.Fatal("split text differs")
	}
	ctp, _ := s.CreateTopic("compacted", 1, map[string]string{"cleanup.policy": "compact", "key.separator": "="})
	cp, _ := ctp.Partition(0)
	if _, _, err := cp.AppendLines([]byte("k=v\nnokey\n")); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("line without key on compacted topic: %v", err)
	}
	if _, _, err := cp.AppendLines([]byte("k=v\nk=\n")); err != nil {
		t.Fatal(err)
	}
	if got := textOf(t, cp, 0); got != "k=v\nk=\n" {
		t.Fatalf("keyed text %q", got)
	}
}

func TestReadLimits(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	defer s.Close()
	tp, _ := s.CreateTopic("rl", 1, map[string]string{"segment.bytes": "600"})
	p, _ := tp.Partition(0)
	var sizes []int64
	for i := 0; i < 20; i++ {
		before := p.active().size.Load()
		roll := len(p.segs)
		p.AppendLines([]byte(strings.Repeat(fmt.Sprintf("%d", i%10), 100) + "\n"))
		if len(p.segs) != roll {
			before = 0
		}
		sizes = append(sizes, p.active().size.Load()-before)
	}
	if _, err := p.Read(-1, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatal(err)
	}
	if _, err := p.Read(21, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatal(err)
	}
	r, err := p.Read(20, 100)
	if err != nil || r.Bytes != 0 {
		t.Fatalf("read at end: %v %d", err, r.Bytes)
	}
	r, _ = p.Read(3, 1)
	if r.Bytes != sizes[3] {
		t.Fatalf("first batch must be whole: %d vs %d", r.Bytes, sizes[3])
	}
	r.Release()
	r, _ = p.Read(0, 1<<20)
	var total int64
	for _, sz := range sizes {
		total += sz
	}
	if r.Bytes != total || len(r.Slices) < 4 {
		t.Fatalf("read across segments: %d bytes in %d slices, want %d", r.Bytes, len(r.Slices), total)
	}
	r.Release()
	r, _ = p.Read(0, sizes[0]+sizes[1]+10)
	if r.Bytes != sizes[0]+sizes[1] {
		t.Fatalf("whole batches within maxBytes: %d", r.Bytes)
	}
	r.Release()
}

func TestChangedAndTextGrowth(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	defer s.Close()
	tp, _ := s.CreateTopic("g", 1, map[string]string{"segment.bytes": "200"})
	p, _ := tp.Partition(0)
	v, err := p.Text(0)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	ch := p.Changed()
	done := make(chan struct{})
	go func() {
		<-ch
		close(done)
	}()
	var want string
	for i := 0; i < 50; i++ {
		l := fmt.Sprintf("growing %d\n", i)
		p.AppendLines([]byte(l))
		want += l
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Changed was not closed by an append")
	}
	if v.Size() != int64(len(want)) || readAll(t, v) != want {
		t.Fatal("an open view did not grow across rolls")
	}
	if _, err := p.Text(51); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatal(err)
	}
	e, _ := p.Text(50)
	if e.Size() != 0 {
		t.Fatal("a view at the log end starts empty")
	}
	p.AppendLines([]byte("tail\n"))
	if readAll(t, e) != "tail\n" {
		t.Fatal("view at end did not grow")
	}
	e.Close()
}

func TestProduceBatches(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	tp, _ := s.CreateTopic("prod", 1, nil)
	p, _ := tp.Partition(0)
	build := func(pid int64, epoch int16, seq int32, codec record.Codec, vals ...string) []byte {
		var bl record.Builder
		spec := record.DefaultSpec()
		spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence, spec.Codec = pid, epoch, seq, codec
		bl.Reset(spec)
		for _, v := range vals {
			bl.Add(time.Now().UnixMilli(), []byte("k"), []byte(v), nil)
		}
		b, err := bl.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var want string
	for _, c := range []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd} {
		res, err := p.AppendBatch(build(-1, -1, -1, c, c.String()+" one", c.String()+" two"))
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		if res.LastOffset-res.BaseOffset != 1 {
			t.Fatal(res)
		}
		want += c.String() + " one\n" + c.String() + " two\n"
	}
	if got := textOf(t, p, 0); got != want {
		t.Fatalf("compressed batches render %q", got)
	}
	// Idempotence: a retry is recognised, a gap is refused.
	b1 := build(7, 0, 0, record.CodecNone, "a", "b")
	r1, err := p.AppendBatch(append([]byte(nil), b1...))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := p.AppendBatch(append([]byte(nil), b1...))
	if err != nil || !r2.Duplicate || r2.BaseOffset != r1.BaseOffset {
		t.Fatalf("retry: %+v %v", r2, err)
	}
	if _, err := p.AppendBatch(build(7, 0, 5, record.CodecNone, "gap")); !errors.Is(err, ErrOutOfOrderSeq) {
		t.Fatalf("gap: %v", err)
	}
	if _, err := p.AppendBatch(build(7, 0, 2, record.CodecNone, "c")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendBatch(build(7, 1, 0, record.CodecNone, "new epoch")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendBatch(build(7, 0, 3, record.CodecNone, "fenced")); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("old epoch: %v", err)
	}
	// Invalid batches.
	good := build(-1, -1, -1, record.CodecNone, "x")
	bad := append([]byte(nil), good...)
	bad[len(bad)-1] ^= 0xff
	if _, err := p.AppendBatch(bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("bad crc: %v", err)
	}
	nz := append([]byte(nil), good...)
	record.SetBaseOffset(nz, 5)
	if _, err := p.AppendBatch(nz); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("nonzero base: %v", err)
	}
	if _, err := p.AppendBatch(good[:40]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short: %v", err)
	}
	// A valid zstd batch of a few KiB whose records decompress past
	// record.MaxDecompressed is refused as too large, not as corrupt (Kafka
	// would take it: only the compressed size counts there).
	bomb := build(-1, -1, -1, record.CodecZstd, string(make([]byte, record.MaxDecompressed+1)))
	if len(bomb) > 64<<10 {
		t.Fatalf("bomb batch is %d bytes", len(bomb))
	}
	if _, err := p.AppendBatch(bomb); !errors.Is(err, ErrMessageTooLarge) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("decompression bomb: %v, want ErrMessageTooLarge only", err)
	}
	leo := p.LogEndOffset()
	s.Close()
	// Producer state survives a restart.
	s = openStore(t, s.dir, nil)
	defer s.Close()
	p = mustPartition(t, s, "prod")
	if p.LogEndOffset() != leo {
		t.Fatal("leo changed")
	}
	if _, err := p.AppendBatch(build(7, 0, 4, record.CodecNone, "fenced")); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("epoch after restart: %v", err)
	}
	if _, err := p.AppendBatch(build(7, 1, 5, record.CodecNone, "gap")); !errors.Is(err, ErrOutOfOrderSeq) {
		t.Fatalf("sequence after restart: %v", err)
	}
	if id1, _ := s.AllocateProducerID(); id1 < 0 {
		t.Fatal("producer id")
	}
}

func TestProducerIDsPersist(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	seen := map[int64]bool{}
	for i := 0; i < 5; i++ {
		id, _ := s.AllocateProducerID()
		seen[id] = true
	}
	s.abandon()
	s = openStore(t, dir, nil)
	defer s.Close()
	for i := 0; i < 5; i++ {
		id, _ := s.AllocateProducerID()
		if seen[id] {
			t.Fatalf("producer id %d handed out twice", id)
		}
	}
}
