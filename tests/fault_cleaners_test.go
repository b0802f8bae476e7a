package tests

// Retention and compaction under the fault loops (issue 7): the mixed load
// of F1 and F2 has two more topics whose logs the daemon's cleaners cut
// while the writers append, the readers follow and the faults strike.
//
//   - del: cleanup.policy=delete, 8 KiB segments, retention.bytes=16384
//     (the oldest segments go while what remains is at least that size).
//     After every fault, the stored lines of each writer are a contiguous
//     tail of what it wrote, ending at its last acknowledged line (plus
//     the write in flight); the lines missing in front are exactly the
//     records below the log start offset. Size, not time: time retention
//     deletes the active segment too (Kafka's rule), so by the time the
//     oracle reads after a restart a quiet topic would be empty, and the
//     writers' last acknowledged lines could not be checked.
//   - cmp: cleanup.policy=compact, 8 KiB segments, key.separator "=",
//     lines "ID.kK=VALUE" over a few keys per writer, about one write in
//     eight a tombstone "ID.kK=", min.cleanable.dirty.ratio=0.01,
//     min.compaction.lag.ms=0, delete.retention.ms=1000. After every
//     fault, the lines present are a subsequence of each writer's writes
//     (in order, none twice), and for every key the last line present is
//     its last acknowledged write; a key whose last write was a tombstone
//     may have no line at all once the tombstone has expired. A tombstone
//     renders as "KEY=" (record.AppendText: a null value renders nothing
//     after the separator), and names no seq: the oracle matches it to the
//     earliest write it can be.
//
// The daemon runs both cleaners every 100 ms (faultCleanerFlags). Both
// topics also get what every topic gets: no NUL, no partial line, st_size
// equal to the bytes read, dump-log records equal to the lines read (with
// compaction's offset gaps, dense otherwise), offset/N the suffix of data
// from the first record at or after N, CRCs valid (dump-log, verify).
// Since the cleaners keep working while the oracle reads (closed
// segments get compacted for a second or two after the writers stop),
// the oracle reads status before and after everything else and reads
// again if the two differ.
//
// A `tail -f` on each topic, opened before the writers start and killed
// at the fault, must print every line of this round's run exactly once and
// in order (DESIGN.md "Stable positions": an open data file neither
// repeats nor skips a line while segments beneath it are deleted or
// rewritten); on the retention topic it prints each writer's lines with
// consecutive seqs from the log start it opened at.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// faultCleanerFlags run retention and compaction every 100 ms.
var faultCleanerFlags = []string{"--retention-check-interval", "100ms", "--cleaner-interval", "100ms"}

// faultCleaned is a topic of the mixed load that a cleaner works on.
type faultCleaned struct {
	compact bool
	// figures: the highest log start seen (records deleted by retention),
	// the most offsets missing from [start, end) seen (records removed by
	// compaction), the oracle's rereads because the cleaners changed the
	// log while it read.
	maxStart, maxRemoved, rereads int64
	// inexact: once a writer's stored lines were all below the log start,
	// whether its write in flight was stored is unknown, and the records
	// below the log start may number more than the lines missing.
	inexact bool
}

// faultCleanerLoad adds the retention and compaction topics, with their
// writers, to the mixed load set up by faultMixedLoad (after it: the
// writers' indexes there stay what the tests use). Each topic has a
// batching line writer and a bash echo loop; durable as faultMixedLoad.
func faultCleanerLoad(r *faultRig, suffix string, durable bool) {
	del, cmp := "del"+suffix, "cmp"+suffix
	// Indexes of 4 KiB (a few entries for an 8 KiB segment) rather than
	// 10 MiB: verify reads the active ones whole after every fault.
	r.topic(del, "segment.bytes=8192", "segment.index.bytes=4096", "retention.ms=-1", "retention.bytes=16384", "file.delete.delay.ms=0")
	r.topic(cmp, "cleanup.policy=compact", "key.separator==", "segment.bytes=8192", "segment.index.bytes=4096",
		"min.cleanable.dirty.ratio=0.01", "min.compaction.lag.ms=0", "delete.retention.ms=1000", "file.delete.delay.ms=0")
	r.cleaned[del] = &faultCleaned{}
	r.cleaned[cmp] = &faultCleaned{compact: true}
	r.addWriter("d1"+suffix, "lines", del, durable, 4).pause = "1ms"
	r.addWriter("d2"+suffix, "echo", del, durable, 1)
	c1 := r.addWriter("c1"+suffix, "lines", cmp, durable, 4)
	c1.keys, c1.pause = 16, "1ms"
	r.addWriter("c2"+suffix, "echo", cmp, durable, 1).keys = 8
}

// cleanedTopics are the cleaned topics that have writers now (this epoch).
func (r *faultRig) cleanedTopics() []string {
	var topics []string
	for _, w := range r.writers {
		if r.cleaned[w.topic] != nil && !slices.Contains(topics, w.topic) {
			topics = append(topics, w.topic)
		}
	}
	slices.Sort(topics)
	return topics
}

// cleanedFigures sums the figures of every cleaned topic of the test.
func (r *faultRig) cleanedFigures() (deleted, removed int64) {
	for _, c := range r.cleaned {
		deleted += c.maxStart
		removed += c.maxRemoved
	}
	return deleted, removed
}

// requireCleaners fails the test if retention never deleted a record or
// compaction never removed one: the cleaner topics would prove nothing.
func (r *faultRig) requireCleaners() {
	r.t.Helper()
	deleted, removed := r.cleanedFigures()
	var rereads int64
	for _, c := range r.cleaned {
		rereads += c.rereads
	}
	r.t.Logf("cleaners: %d records deleted by retention, %d removed by compaction; the oracle reread %d times while they worked", deleted, removed, rereads)
	if deleted == 0 || removed == 0 {
		r.t.Errorf("retention deleted %d records and compaction removed %d during the test: the cleaners did not run under the load\n%s",
			deleted, removed, r.m.daemonLog())
	}
}

// startCleanedReaders starts a `tail -f` on each cleaned topic. The shell
// opens data before it says it is ready, and tail follows that open file
// (its stdin), so the reader is open before any writer of this round
// writes: it must see every line of the run.
func (r *faultRig) startCleanedReaders() {
	t := r.t
	t.Helper()
	var ready []string
	var procs []*faultProc
	for _, topic := range r.cleanedTopics() {
		out := r.readerOut("tail-" + topic)
		ready = append(ready, out+".ready")
		p := faultStart(t, "tail-"+topic, 600, nil, "bash", "-c", `exec < "$0" || exit 1; : > "$2"; exec tail -s 0.05 -n +1 -f > "$1" 2>/dev/null`,
			r.m.path(topic, "0", "data"), out, out+".ready")
		procs = append(procs, p)
		r.readers = append(r.readers, p)
	}
	for i, f := range ready {
		deadline := time.Now().Add(20 * time.Second)
		for _, err := os.Stat(f); err != nil && !procs[i].exited() && time.Now().Before(deadline); _, err = os.Stat(f) {
			time.Sleep(5 * time.Millisecond)
		}
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("the tail -f of %s did not open data: %v %s", r.cleanedTopics()[i], procs[i].err, procs[i].errb)
		}
	}
}

// faultParse splits a line of a cleaned topic into its writer id, its
// seq (0 for a tombstone, which names none) and its key (-1 unkeyed).
func faultParse(l string, keyed bool) (id string, seq int64, key int, ok bool) {
	val := l
	key = -1
	if keyed {
		k, v, found := strings.Cut(l, "=")
		kid, ks, found2 := strings.Cut(k, ".k")
		n, err := strconv.Atoi(ks)
		if !found || !found2 || err != nil || n < 0 {
			return "", 0, 0, false
		}
		if v == "" {
			return kid, 0, n, true
		}
		id, key, val = kid, n, v
	}
	f := strings.SplitN(val, " ", 3)
	if len(f) < 3 {
		return "", 0, 0, false
	}
	seq, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || seq < 1 || (keyed && f[0] != id) {
		return "", 0, 0, false
	}
	return f[0], seq, key, true
}

// byWriter splits lines among the writers of a cleaned topic; a line of
// no writer is reported as what.
func (r *faultRig) byWriter(lines []string, ws []*faultWriter, keyed bool) (map[*faultWriter][]string, error) {
	out := map[*faultWriter][]string{}
	for i, l := range lines {
		id, _, _, ok := faultParse(l, keyed)
		var owner *faultWriter
		for _, w := range ws {
			if ok && w.id == id {
				owner = w
			}
		}
		if owner == nil {
			return nil, fmt.Errorf("line %d belongs to no writer (partial, torn or garbage): %.200q", i+1, l)
		}
		out[owner] = append(out[owner], l)
	}
	return out, nil
}

// errTransient marks a read that may succeed again: the cleaners changed
// the log while the oracle read it, or a segment file went away under
// dump-log.
type errTransient struct{ error }

// readCleaned reads a cleaned partition consistently: status, data (cat,
// stat, wc), the segments (dump-log) and offset/N, then status again; if
// the status changed, the cleaners worked meanwhile and it reads again
// (up to 60 times, 100 ms apart: they stop changing anything a couple of
// seconds after the writers stop). With the status unchanged every check
// is final.
func (r *faultRig) readCleaned(topic string, c *faultCleaned) *faultPartition {
	t := r.t
	t.Helper()
	var err error
	for attempt := 0; attempt < 60; attempt++ {
		if attempt > 0 {
			c.rereads++
			time.Sleep(100 * time.Millisecond)
		}
		var p *faultPartition
		if p, err = r.tryReadCleaned(topic, c); err == nil {
			return p
		}
		if _, ok := err.(errTransient); !ok {
			t.Fatalf("%s: %v", topic, err)
		}
	}
	t.Fatalf("%s: no consistent read in 60 attempts: %v", topic, err)
	return nil
}

func (r *faultRig) tryReadCleaned(topic string, c *faultCleaned) (*faultPartition, error) {
	t := r.t
	t.Helper()
	dir := r.m.path(topic, "0")
	tmp := filepath.Join(r.workDir, "read-"+topic)
	res := r.m.sh(fmt.Sprintf(`d=%q; cat "$d/status" && echo --- && cat "$d/data" > %q && stat -c %%s "$d/data" && wc -l < "$d/data"`, dir, tmp))
	if res.code != 0 {
		return nil, errTransient{fmt.Errorf("reading data: %s", res.err)}
	}
	st1, rest, _ := strings.Cut(res.out, "---\n")
	f := mntLines(rest)
	text, err := os.ReadFile(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(f) != 2 {
		return nil, fmt.Errorf("stat/wc gave %q", f)
	}
	st := map[string]int64{}
	for _, l := range mntLines(st1) {
		k, v, _ := strings.Cut(l, "=")
		st[k], _ = strconv.ParseInt(v, 10, 64)
	}
	p := &faultPartition{text: text, lines: mntLines(string(text)), start: st["log.start.offset"], end: st["log.end.offset"]}

	// The segments, as dump-log reads them from disk.
	logs, _ := filepath.Glob(filepath.Join(r.data, topic+"-0", "*.log"))
	slices.Sort(logs)
	out, derr := faultRun(t, 120, r.tools(), append([]string{"dump-log", "--print-data-log"}, logs...)...)
	var offs []int64
	var recs []string
	if derr == nil {
		offs, recs, derr = faultDumpRecords(out, "=")
	}

	// offset/N for the log start and end, the last record, a random N and
	// (compacted) an N in a random gap; then status again (one shell).
	ns := []int64{p.start, p.end}
	if p.end > p.start {
		ns = append(ns, p.end-1, p.start+r.rng.Int64N(p.end-p.start))
	}
	var gaps []int
	for i := 1; i < len(offs); i++ {
		if offs[i] > offs[i-1]+1 {
			gaps = append(gaps, i)
		}
	}
	if len(gaps) > 0 {
		i := gaps[r.rng.IntN(len(gaps))]
		ns = append(ns, offs[i-1]+1+r.rng.Int64N(offs[i]-offs[i-1]-1))
	}
	script := fmt.Sprintf(`d=%q; o=%q`, dir, tmp)
	for _, n := range ns {
		script += fmt.Sprintf(`; cat "$d/offset/%d" > "$o.%d" && echo ok || echo failed`, n, n)
	}
	res = r.m.sh(script + `; echo ---; cat "$d/status"`)
	codes, st2, _ := strings.Cut(res.out, "---\n")
	if res.code != 0 || st2 != st1 {
		return nil, errTransient{fmt.Errorf("status changed while reading:\n%s\nthen\n%s%s", st1, st2, res.err)}
	}
	// A cleaner pass that changes nothing status shows still swaps the
	// segment (Kafka's order: the old .log goes to .deleted before the
	// .swap becomes the .log), and a listing taken in between lacks that
	// segment: dump-log then reads fewer records without an error. The
	// listing must be the same afterwards.
	if logs2, _ := filepath.Glob(filepath.Join(r.data, topic+"-0", "*.log")); !slices.Equal(logs, logs2) {
		return nil, errTransient{fmt.Errorf("the segment files changed while reading: %d then %d", len(logs), len(logs2))}
	}
	got, ok := make([]string, len(ns)), mntLines(codes)
	for i, n := range ns {
		b, _ := os.ReadFile(fmt.Sprintf("%s.%d", tmp, n))
		got[i] = string(b)
		if i >= len(ok) || ok[i] != "ok" {
			got[i] = "(" + strings.TrimSpace(res.err) + ")"
		}
	}

	// The status held: everything above is one state of the log.
	if f[0] != strconv.Itoa(len(text)) {
		return nil, fmt.Errorf("st_size %s, but %d bytes read", f[0], len(text))
	}
	if i := bytes.IndexByte(text, 0); i >= 0 {
		return nil, fmt.Errorf("NUL byte at %d of data", i)
	}
	if len(text) > 0 && text[len(text)-1] != '\n' {
		return nil, fmt.Errorf("data does not end with a newline: %q", text[max(0, len(text)-80):])
	}
	if f[1] != strconv.Itoa(len(p.lines)) {
		return nil, fmt.Errorf("wc -l %s, %d lines read", f[1], len(p.lines))
	}
	if derr != nil {
		// A segment renamed under dump-log by a pass that changed nothing
		// status shows (a tombstone's horizon set): read again. A damaged
		// segment fails every time, which fails the test.
		return nil, errTransient{fmt.Errorf("dump-log: %v\n%.3000s", derr, out)}
	}
	if len(recs) != len(p.lines) {
		return nil, fmt.Errorf("dump-log shows %d records, the mount %d lines (status %s)", len(recs), len(p.lines), strings.ReplaceAll(st1, "\n", " "))
	}
	for i, o := range offs {
		if recs[i] != p.lines[i] {
			return nil, fmt.Errorf("dump-log record at offset %d differs from line %d read through the mount: %.120q vs %.120q", o, i+1, recs[i], p.lines[i])
		}
		if o < p.start || o >= p.end || (i > 0 && o <= offs[i-1]) {
			return nil, fmt.Errorf("dump-log offset %d (record %d) outside [%d, %d) or not increasing", o, i+1, p.start, p.end)
		}
		if !c.compact && o != p.start+int64(i) {
			return nil, fmt.Errorf("retention topic: record %d at offset %d, want %d (offsets not dense)", i+1, o, p.start+int64(i))
		}
	}
	if !c.compact && p.end-p.start != int64(len(p.lines)) {
		return nil, fmt.Errorf("status says offsets [%d, %d), data has %d lines (offsets not dense)", p.start, p.end, len(p.lines))
	}
	p.offsets = offs
	for i, n := range ns {
		k, _ := slices.BinarySearch(offs, n)
		want := ""
		if k < len(p.lines) {
			want = strings.Join(p.lines[k:], "\n") + "\n"
		}
		if got[i] != want {
			return nil, fmt.Errorf("offset/%d (%d bytes: %.100q) is not the suffix of data from the first record at or after %d (%d bytes)",
				n, len(got[i]), got[i], n, len(want))
		}
	}
	c.maxStart = max(c.maxStart, p.start)
	if c.compact {
		c.maxRemoved = max(c.maxRemoved, p.end-p.start-int64(len(p.lines)))
	}
	return p, nil
}

// faultDumpRecords parses `dump-log --print-data-log` output: the offset
// of every record and its line as data renders it (key, sep, value; a
// tombstone is the key and sep).
func faultDumpRecords(out, sep string) ([]int64, []string, error) {
	var offs []int64
	var recs []string
	if strings.Contains(out, "invalid bytes") || strings.Contains(out, "isvalid: false") {
		return nil, nil, fmt.Errorf("invalid batch")
	}
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "| offset:") {
			continue
		}
		head, payload, hasValue := strings.Cut(l, " payload: ")
		o, _, _ := strings.Cut(strings.TrimPrefix(head, "| offset: "), " ")
		off, err := strconv.ParseInt(o, 10, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("dump-log record line without an offset: %.200s", l)
		}
		line := payload
		if _, key, keyed := strings.Cut(head, " key: "); keyed {
			line = key + sep + payload
		} else if !hasValue {
			return nil, nil, fmt.Errorf("dump-log record line with neither key nor payload: %.200s", l)
		}
		offs = append(offs, off)
		recs = append(recs, line)
	}
	return offs, recs, nil
}

// oracleCleaned judges a cleaned topic after a fault (see the file
// comment), adopts the writes in flight that were stored, and returns
// what it read for the reader checks.
func (r *faultRig) oracleCleaned(topic string, c *faultCleaned, ws []*faultWriter) *faultPartition {
	t := r.t
	t.Helper()
	p := r.readCleaned(topic, c)
	stored, err := r.byWriter(p.lines, ws, c.compact)
	if err != nil {
		t.Fatalf("%s: %v", topic, err)
	}
	if c.compact {
		for _, w := range ws {
			r.judgeCompacted(topic, w, stored[w])
		}
		return p
	}
	var missing int64 // lines of all writers in front of their stored tails
	for _, w := range ws {
		acked := w.acked(t)
		got := stored[w]
		r.ackedChecked += acked
		if len(got) == 0 {
			// Retention took all of it (the segments left hold other
			// writers' lines only); whether the line in flight was stored
			// is unknown.
			t.Logf("%s: writer %s has no line above the log start %d (%d acknowledged)", topic, w.id, p.start, acked)
			c.inexact = true
			missing += acked
			w.adopt(t, acked, acked)
			continue
		}
		_, first, _, _ := faultParse(got[0], false)
		for i, l := range got {
			if !w.matches(first+int64(i), l) {
				t.Errorf("%s: writer %s: stored line %d (from seq %d) is %.120q, want %.120q (torn, lost, repeated or reordered)",
					topic, w.id, i+1, first, l, w.line(first+int64(i)))
				break
			}
		}
		n := first + int64(len(got)) - 1
		if n < acked {
			r.lost += acked - n
			t.Errorf("%s: writer %s: %d lines acknowledged, the stored ones end at %d: %d LOST", topic, w.id, acked, n, acked-n)
		}
		if n > acked+w.maxExtra() {
			t.Errorf("%s: writer %s: stored lines end at %d, %d acknowledged: more than the write in flight", topic, w.id, n, acked)
		}
		missing += first - 1
		if t.Failed() {
			t.FailNow()
		}
		w.adopt(t, acked, n)
	}
	// Every record below the log start is a line of some writer in front
	// of its stored tail, and each such line was below the log start.
	if missing > p.start || (!c.inexact && missing != p.start) {
		r.lost += max(0, missing-p.start)
		t.Fatalf("%s: %d lines of the writers are missing in front of their stored lines, and %d records lie below the log start: lines LOST (or repeated)",
			topic, missing, p.start)
	}
	return p
}

// judgeCompacted checks writer w's lines got of a compacted topic and
// adopts its stored write in flight.
func (r *faultRig) judgeCompacted(topic string, w *faultWriter, got []string) {
	t := r.t
	t.Helper()
	acked := w.acked(t)
	r.ackedChecked += acked
	// The write in flight was stored if its lines end got: they are the
	// writer's last records, in the active segment (never compacted).
	// (Its tombstones may also be older ones of the same keys: adopting a
	// tombstone that was not stored leaves the key deleted as it is.)
	m := int64(0)
	for k := w.maxExtra(); k > 0 && m == 0; k-- {
		if int64(len(got)) < k {
			continue
		}
		m = k
		for j := int64(0); j < k; j++ {
			if got[int64(len(got))-k+j] != w.line(acked+1+j) {
				m = 0
				break
			}
		}
	}
	n := acked + m
	// Every line is a write of w, in order, none twice: value lines by
	// their seq, a tombstone matched to the earliest tombstone of its key
	// after the line before it.
	last := map[int]string{} // key → its last line
	var cur int64
	for i, l := range got {
		_, seq, key, _ := faultParse(l, true)
		if seq == 0 {
			s := cur + 1
			for ; s <= n; s++ {
				if k, tomb := w.key(s); k == key && tomb {
					break
				}
			}
			if s > n {
				t.Fatalf("%s: writer %s: line %d, tombstone %q, matches no tombstone written after seq %d (up to %d): repeated or out of order",
					topic, w.id, i+1, l, cur, n)
			}
			seq = s
		} else if seq <= cur || seq > n || !w.matches(seq, l) {
			t.Fatalf("%s: writer %s: line %d is %.120q after seq %d, %d stored of %d acknowledged: repeated, reordered, torn or never acknowledged",
				topic, w.id, i+1, l, cur, n, acked)
		}
		cur = seq
		last[key] = l
	}
	// For every key, its last write is its last line; a tombstone may be
	// gone with everything before it.
	lastWrite := map[int]int64{}
	for s := int64(1); s <= n; s++ {
		k, _ := w.key(s)
		lastWrite[k] = s
	}
	for k, s := range lastWrite {
		l, ok := last[k]
		_, tomb := w.key(s)
		if ok && l == w.line(s) || !ok && tomb {
			continue
		}
		r.lost++
		t.Errorf("%s: writer %s: key %d: its last acknowledged write is seq %d %.80q, its last line %.80q (present %v): LOST",
			topic, w.id, k, s, w.line(s), l, ok)
	}
	for k := range last {
		if _, ok := lastWrite[k]; !ok {
			t.Errorf("%s: writer %s: key %d has lines but no write", topic, w.id, k)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	w.adopt(t, acked, n)
}

// checkCleanedReaders checks each cleaned topic's `tail -f` of this
// round: its lines are whole lines of the writers; each writer's lines
// of this run appear once, in order, none skipped; on the retention topic
// every writer's lines have consecutive seqs. If the fault kept what the
// reader saw (seenKept), the lines it saw of the retention topic that are
// still stored continue, from the first stored line, what is stored.
func (r *faultRig) checkCleanedReaders(parts map[string]*faultPartition, seenKept bool) {
	t := r.t
	t.Helper()
	byTopic := map[string][]*faultWriter{}
	for _, w := range r.writers {
		byTopic[w.topic] = append(byTopic[w.topic], w)
	}
	for _, topic := range r.cleanedTopics() {
		c, ws := r.cleaned[topic], byTopic[topic]
		b, err := os.ReadFile(r.readerOut("tail-" + topic))
		if err != nil {
			t.Fatalf("tail -f of %s: %v", topic, err)
		}
		seen := mntLines(string(b[:bytes.LastIndexByte(b, '\n')+1]))
		mine, err := r.byWriter(seen, ws, c.compact)
		if err != nil {
			t.Fatalf("tail -f of %s printed a line that is no writer's: %v", topic, err)
		}
		for _, w := range ws {
			got := mine[w]
			hi := w.next - 1 + w.maxExtra()
			if !c.compact {
				if len(got) == 0 {
					continue
				}
				_, first, _, _ := faultParse(got[0], false)
				for i, l := range got {
					if s := first + int64(i); s > hi || !w.matches(s, l) {
						t.Fatalf("tail -f of %s: writer %s: line %d (from seq %d) is %.120q, want %.120q: a line skipped, repeated or torn while retention deleted segments",
							topic, w.id, i+1, first, l, w.line(s))
					}
				}
				if first > w.start {
					t.Fatalf("tail -f of %s opened before writer %s's run from seq %d, but its lines start at %d", topic, w.id, w.start, first)
				}
				continue
			}
			// Compacted: this run's lines form the end of what tail
			// printed, from line(start) on, without a gap; before them
			// the compacted log it opened, in order.
			j := len(got)
			for i := range got {
				if got[i] == w.line(w.start) && r.runFrom(w, got[i:]) {
					j = i
					break
				}
			}
			var cur int64
			for i, l := range got[:j] {
				_, seq, _, _ := faultParse(l, true)
				if seq != 0 && (seq <= cur || seq >= w.start || !w.matches(seq, l)) {
					t.Fatalf("tail -f of %s: writer %s: line %d is %.120q after seq %d (this run starts at %d, its lines from %d of %d): repeated, reordered, torn or skipped",
						topic, w.id, i+1, l, cur, w.start, j+1, len(got))
				}
				cur = max(cur, seq)
			}
			if w.start+int64(len(got)-j)-1 > hi {
				t.Fatalf("tail -f of %s: writer %s printed up to seq %d, %d stored", topic, w.id, w.start+int64(len(got)-j)-1, w.next-1)
			}
		}
		if !seenKept || c.compact {
			continue
		}
		p := parts[topic]
		idx := map[string]int{}
		for i, l := range p.lines {
			idx[l] = i
		}
		prev := -1
		for i, l := range seen {
			k, ok := idx[l]
			switch {
			case !ok && prev >= 0:
				t.Fatalf("tail -f of %s: line %d %.120q is not stored, but the line before it is", topic, i+1, l)
			case ok && prev < 0 && k != 0:
				// It opened at the log start of then, and the log start
				// only moves up: the first stored line it printed is the
				// first stored now.
				t.Fatalf("tail -f of %s: after %d lines deleted by retention it printed stored line %d, not the first", topic, i, k+1)
			case ok && prev >= 0 && k != prev+1:
				t.Fatalf("tail -f of %s: line %d is stored line %d, after stored line %d", topic, i+1, k+1, prev+1)
			}
			if ok {
				prev = k
			}
		}
	}
}

// runFrom reports whether lines are line(w.start), line(w.start+1), ...
func (r *faultRig) runFrom(w *faultWriter, lines []string) bool {
	for i, l := range lines {
		if !w.matches(w.start+int64(i), l) {
			return false
		}
	}
	return true
}
