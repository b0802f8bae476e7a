package tests

// TestStressEverything (stress_all_test.go): the checks of the settled log
// at the end, against the files, the clients and the daemon.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// --- the end ---------------------------------------------------------------

// quiesce stops the cleaners (retention off, compaction off), waits until
// two snapshots a few cleaner intervals apart agree.
func (r *stressRig) quiesce() {
	r.m.ok(`
printf 'retention.ms=-1\nretention.bytes=-1\nsegment.ms=604800000\n' >> "$M/del/config" &&
printf 'cleanup.policy=delete\nretention.ms=-1\nretention.bytes=-1\nsegment.ms=604800000\n' >> "$M/cmp/config"`)
	prev := r.snapshot()
	for i := 0; ; i++ {
		time.Sleep(300 * time.Millisecond)
		cur := r.snapshot()
		same := len(cur) == len(prev)
		for tp, s := range cur {
			if p := prev[tp]; p.text != s.text || p.start != s.start || p.end != s.end {
				same = false
			}
		}
		if same {
			return
		}
		if i == 100 {
			r.t.Fatalf("the log did not settle after the cleaners were turned off")
		}
		prev = cur
	}
}

type stressSnap struct {
	text       string
	start, end int64
	recs       []*kgo.Record
}

// snapshot reads every partition through the mount and Kafka.
func (r *stressRig) snapshot() map[stressTP]stressSnap {
	n := r.growPartsNow()
	tps := []stressTP{{"del", 0}, {"del", 1}, {"cmp", 0}, {"cmp", 1}}
	for p := range n {
		tps = append(tps, stressTP{"grow", p})
	}
	cl := r.client()
	defer cl.Close()
	snaps := map[stressTP]stressSnap{}
	for _, tp := range tps {
		st, ok := r.readStatus(tp)
		if !ok {
			r.t.FailNow()
		}
		text := r.m.ok(`cat "` + r.partPath(tp, "data") + `"`)
		s := stressSnap{text: text, start: st["log.start.offset"], end: st["log.end.offset"]}
		if s.end > s.start {
			s.recs = r.fetchAll(cl, tp, s.start, s.end)
		}
		snaps[tp] = s
	}
	return snaps
}

func (r *stressRig) growPartsNow() int32 {
	ents, err := os.ReadDir(r.m.path("grow"))
	if err != nil {
		r.t.Fatal(err)
	}
	var n int32
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			n++
		}
	}
	return n
}

// fetchAll fetches tp from start to end with a fresh direct consumer. On
// a compacted topic the records at the end can be gone (a tombstone whose
// segment rolled, once delete.retention.ms passed): a second without a
// record, with the mount's offset/N after the last one fetched empty,
// ends the fetch too.
func (r *stressRig) fetchAll(cl *kgo.Client, tp stressTP, start, end int64) []*kgo.Record {
	c := r.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{tp.topic: {tp.part: kgo.NewOffset().At(start)}}))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out []*kgo.Record
	last := start - 1
	for last < end-1 {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := c.PollFetches(pctx)
		pcancel()
		if ctx.Err() != nil {
			// What the mount shows after the last record fetched, and
			// the segments: a fetch that returns nothing where the log
			// has records is the server's defect.
			next := r.m.sh(fmt.Sprintf(`head -c 300 "%s"; echo; cat "%s"; ls -l "%s"`, r.partPath(tp, "offset", strconv.FormatInt(last+1, 10)), r.partPath(tp, "status"), r.partPath(tp, "segments")), 20)
			r.t.Fatalf("fetching %s [%d, %d): timed out at %d records, the last at offset %d; offset/%d, status and segments:\n%s%s", tp, start, end, len(out), last, last+1, next.out, next.err)
		}
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				r.t.Fatalf("fetch %s: %v", tp, err)
			}
		})
		recs := fs.Records()
		if len(recs) > 0 {
			out = append(out, recs...)
			last = recs[len(recs)-1].Offset
			continue
		}
		if b, err := os.ReadFile(r.partPath(tp, "offset", strconv.FormatInt(last+1, 10))); err == nil && len(b) == 0 {
			break
		}
	}
	return out
}

// checkFinal checks the settled log against everything the clients were
// told, and returns the snapshot.
func (r *stressRig) checkFinal() map[stressTP]stressSnap {
	t := r.t
	snaps := r.snapshot()
	r.mu.Lock()
	defer r.mu.Unlock()
	for tp, s := range snaps {
		var lines []string
		for _, rec := range s.recs {
			lines = append(lines, stressRender(tp.topic, rec))
			if prev, ok := r.obs[tp][rec.Offset]; ok && prev != stressRender(tp.topic, rec) {
				t.Errorf("%s offset %d: stored %q, %s saw %q", tp, rec.Offset, stressRender(tp.topic, rec), r.obsSrc[tp][rec.Offset], prev)
			}
		}
		if got := mntLines(s.text); !slices.Equal(got, lines) {
			t.Errorf("%s: data (%d lines) differs from what Kafka fetches (%d records) at line %d", tp, len(got), len(lines), firstDiff(got, lines))
		}
		if len(s.recs) > 0 && (s.recs[0].Offset < s.start || s.recs[len(s.recs)-1].Offset >= s.end) {
			t.Errorf("%s: records [%d, %d] outside status [%d, %d)", tp, s.recs[0].Offset, s.recs[len(s.recs)-1].Offset, s.start, s.end)
		}
		if s.start < r.drFloor[tp] {
			t.Errorf("%s: log start %d below a DeleteRecords to %d", tp, s.start, r.drFloor[tp])
		}
		at := map[int64]string{}
		for i, rec := range s.recs {
			at[rec.Offset] = lines[i]
			if tp.topic != "cmp" && rec.Offset != s.start+int64(i) {
				t.Errorf("%s: record %d has offset %d, want %d (dense)", tp, i, rec.Offset, s.start+int64(i))
				break
			}
		}
		// Produce acks: present at their offset unless below the start
		// (or, on cmp, compacted by a later write of the key).
		lastOfKey := map[string]int64{}
		for off, line := range r.acked[tp] {
			k, _, _ := strings.Cut(line, "=")
			if o, ok := lastOfKey[k]; !ok || off > o {
				lastOfKey[k] = off
			}
		}
		for off, line := range r.acked[tp] {
			if off < s.start {
				continue
			}
			got, ok := at[off]
			if ok && got != line {
				t.Errorf("%s offset %d: acked %q, stored %q", tp, off, line, got)
			}
			if !ok {
				k, v, _ := strings.Cut(line, "=")
				if tp.keyed() && (lastOfKey[k] != off || v == "") {
					continue
				}
				t.Errorf("%s offset %d: acked %q is lost (log start %d)", tp, off, line, s.start)
			}
		}
		r.counts["final records"] += len(s.recs)
	}
	// Mount writers.
	for _, w := range r.writers {
		if w.tp.topic == "grow" {
			continue
		}
		s := snaps[w.tp]
		var seqs []int
		var tombs []int // positions in seqs of tombstones, matched later
		for _, rec := range s.recs {
			id, seq, key, ok := stressParse(stressRender(w.tp.topic, rec), w.tp.keyed())
			if !ok || id != w.id {
				continue
			}
			if seq == 0 { // the earliest tombstone of key after the last seq
				prev := 0
				if len(seqs) > 0 {
					prev = seqs[len(seqs)-1]
				}
				seq = prev + 1
				for seq%stressTomb != 0 || seq%stressKeys != key {
					seq++
				}
				tombs = append(tombs, len(seqs))
			}
			seqs = append(seqs, seq)
		}
		_ = tombs
		for i := 1; i < len(seqs); i++ {
			if seqs[i] <= seqs[i-1] {
				t.Errorf("%s writer %s: seq %d after %d", w.tp, w.id, seqs[i], seqs[i-1])
			}
		}
		if len(seqs) > 0 && seqs[len(seqs)-1] > w.acked {
			t.Errorf("%s writer %s: seq %d stored, only %d written", w.tp, w.id, seqs[len(seqs)-1], w.acked)
		}
		if !w.tp.keyed() {
			// A contiguous run ending at its last write.
			if len(seqs) > 0 && (seqs[len(seqs)-1] != w.acked || seqs[len(seqs)-1]-seqs[0] != len(seqs)-1) {
				t.Errorf("%s writer %s: stored seqs %d..%d (%d lines), wrote 1..%d", w.tp, w.id, seqs[0], seqs[len(seqs)-1], len(seqs), w.acked)
			}
			continue
		}
		// cmp: every key's last write after the first line kept is kept.
		if len(seqs) == 0 {
			continue
		}
		present := map[int]bool{}
		for _, s := range seqs {
			present[s] = true
		}
		for k := 0; k < stressKeys; k++ {
			last := w.acked - ((w.acked-k)%stressKeys+stressKeys)%stressKeys
			if last <= seqs[0] || present[last] || last%stressTomb == 0 {
				continue
			}
			t.Errorf("%s writer %s: key %d's last write %d is gone, the log keeps its seqs %v", w.tp, w.id, k, last, tailInts(seqs, 20))
		}
	}
	// grow: every line of g, h once, across partitions.
	seen := map[string]int{}
	for tp, s := range snaps {
		if tp.topic != "grow" {
			continue
		}
		for _, l := range mntLines(s.text) {
			seen[l]++
		}
	}
	for _, w := range r.writers {
		if w.tp.topic != "grow" {
			continue
		}
		for i := 1; i <= w.acked; i++ {
			if n := seen[stressLine(w.id, i, false)]; n != 1 {
				t.Errorf("grow writer %s line %d stored %d times", w.id, i, n)
				break
			}
		}
	}
	if md := r.metadataPartitions("grow"); md != r.growPartsNow() {
		t.Errorf("grow: %d partitions in Metadata, %d in the mount", md, r.growPartsNow())
	}
	return snaps
}

// checkViews checks the mount's views of the settled log against it and
// against Kafka: status against the files, st_size against the bytes
// read, offset/N against the records fetched, time/T against ListOffsets.
func (r *stressRig) checkViews(snaps map[stressTP]stressSnap) {
	t := r.t
	cl := r.client()
	defer cl.Close()
	for tp, s := range snaps {
		st, ok := r.readStatus(tp)
		if !ok {
			continue
		}
		logs, _ := filepath.Glob(filepath.Join(r.m.data, fmt.Sprintf("%s-%d", tp.topic, tp.part), "*.log"))
		var size int64
		for _, l := range logs {
			if fi, err := os.Stat(l); err == nil {
				size += fi.Size()
			}
		}
		if st["segments"] != int64(len(logs)) || st["size.bytes"] != size {
			t.Errorf("%s status: segments=%d size.bytes=%d; on disk %d .log files of %d bytes", tp, st["segments"], st["size.bytes"], len(logs), size)
		}
		if fi, err := os.Stat(r.partPath(tp, "data")); err != nil || fi.Size() != int64(len(s.text)) {
			t.Errorf("%s: stat data %v %v, a read returns %d bytes", tp, fi.Size(), err, len(s.text))
		}
		for k := 0; k < 10; k++ {
			n := s.start + rand.Int64N(s.end-s.start+1)
			want := ""
			for _, rec := range s.recs {
				if rec.Offset >= n {
					want = stressRender(tp.topic, rec) + "\n"
					break
				}
			}
			out, errs, code := r.run(30, "head", "-n1", r.partPath(tp, "offset", strconv.FormatInt(n, 10)))
			if code != 0 || out != want {
				t.Errorf("%s: head -n1 offset/%d = %q (exit %d %s), want %q", tp, n, out, code, errs, want)
				break
			}
		}
		for k := 0; k < 10 && len(s.recs) > 0; k++ {
			ts := s.recs[rand.IntN(len(s.recs))].Timestamp.UnixMilli() + int64(rand.IntN(2))
			want := r.listOffset(cl, tp, ts)
			if want < 0 {
				want = s.end
			}
			out, errs, code := r.run(30, "readlink", r.partPath(tp, "time", strconv.FormatInt(ts, 10)))
			if code != 0 || strings.TrimSpace(out) != "../offset/"+strconv.FormatInt(want, 10) {
				t.Errorf("%s: readlink time/%d = %q (exit %d %s), ListOffsets says %d", tp, ts, out, code, errs, want)
				break
			}
		}
	}
}

func tailInts(s []int, n int) []int { return s[max(0, len(s)-n):] }

func (r *stressRig) metadataPartitions(topic string) int32 {
	cl := r.client()
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, mt)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		r.t.Fatal(err)
	}
	return int32(len(resp.Topics[0].Partitions))
}

// commits returns the group's committed offsets of del and cmp, and fails
// on one beyond the end of its partition.
func (r *stressRig) commits(final map[stressTP]stressSnap) map[stressTP]int64 {
	cl := r.client()
	defer cl.Close()
	out := map[stressTP]int64{}
	for _, topic := range []string{"del", "cmp"} {
		for p, o := range committed(r.t, cl, stressGroup, topic, 2) {
			tp := stressTP{topic, int32(p)}
			if o > final[tp].end {
				r.t.Errorf("group commit %s at %d, beyond the end %d", tp, o, final[tp].end)
			}
			out[tp] = o
		}
	}
	return out
}

// fds lists the daemon's open files.
func (r *stressRig) fds() []string {
	dir := fmt.Sprintf("/proc/%d/fd", r.m.pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

func stressFDSummary(fds []string) map[string]int {
	sum := map[string]int{}
	for _, f := range fds {
		switch {
		case strings.HasSuffix(f, "(deleted)") || strings.HasSuffix(f, ".deleted"):
			sum["deleted"]++
		case strings.HasPrefix(f, "socket:"):
			sum["socket"]++
		case strings.HasSuffix(f, ".log"):
			sum["log"]++
		case strings.HasSuffix(f, ".index"), strings.HasSuffix(f, ".timeindex"):
			sum["index"]++
		default:
			sum["other"]++
		}
	}
	return sum
}

// goroutines counts the daemon's goroutines by stack (the functions of
// each frame), leaving out go-fuse's request readers (bounded by
// GOMAXPROCS), the notifier's one per watched partition, and the --pprof
// HTTP server's, whose connections are ours.
func (r *stressRig) goroutines() map[string]int {
	dump := r.goroutineDump()
	if !strings.HasPrefix(dump, "goroutine profile: total ") {
		r.t.Fatalf("goroutine profile: %.300s", dump)
	}
	_, dump, _ = strings.Cut(dump, "\n")
	out := map[string]int{}
	for _, g := range strings.Split(dump, "\n\n") {
		first, _, _ := strings.Cut(g, " @ ")
		c, err := strconv.Atoi(strings.TrimSpace(first))
		if err != nil || strings.Contains(g, "fuse.(*Server).loop") || strings.Contains(g, "fs.(*notifier).run") ||
			strings.Contains(g, "net/http.") {
			continue
		}
		var fns []string
		for _, l := range strings.Split(g, "\n") {
			if f := strings.Fields(l); len(f) >= 3 && f[0] == "#" {
				fn, _, _ := strings.Cut(f[2], "+0x")
				fns = append(fns, fn)
			}
		}
		out[strings.Join(fns, " < ")] += c
	}
	return out
}

// goroutineGrowth lists the stacks with more goroutines now than before,
// leaving out those with one: background goroutines that start on first
// use (a writeback kicker, a timer's) are singletons, a leak per
// connection or per request is not.
func goroutineGrowth(before, now map[string]int) []string {
	var grew []string
	for sig, n := range now {
		if n > max(before[sig], 1) {
			grew = append(grew, fmt.Sprintf("%d (before %d): %s", n, before[sig], sig))
		}
	}
	return grew
}

func (r *stressRig) goroutineDump() string {
	// No keep-alive: an idle connection would count as the daemon's.
	cl := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 20 * time.Second}
	resp, err := cl.Get("http://" + r.pprof + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// checkLeaks: with every client gone, the daemon holds no deleted file, no
// more sockets than before the load, one .log per segment, and no more
// goroutines than before the load.
func (r *stressRig) checkLeaks(baseFDs []string, baseG map[string]int) {
	base := stressFDSummary(baseFDs)
	var sum map[string]int
	var fds []string
	var segs int
	ok := mntWaitFor(20*time.Second, func() bool {
		fds = r.fds()
		sum = stressFDSummary(fds)
		logs, _ := filepath.Glob(filepath.Join(r.m.data, "*", "*.log"))
		segs = len(logs)
		return sum["deleted"] == 0 && sum["socket"] <= base["socket"] && sum["log"] <= segs
	})
	r.t.Logf("after the load: fds %v (%d segments on disk)", sum, segs)
	if !ok {
		var bad []string
		for _, f := range fds {
			if strings.HasSuffix(f, "(deleted)") || strings.HasSuffix(f, ".deleted") || strings.HasPrefix(f, "socket:") {
				bad = append(bad, f)
			}
		}
		r.t.Errorf("fd leak: %v before, %v after (%d .log files on disk): %v", base, sum, segs, bad)
	}
	var grew []string
	ok = mntWaitFor(20*time.Second, func() bool { grew = goroutineGrowth(baseG, r.goroutines()); return len(grew) == 0 })
	if !ok {
		r.t.Errorf("goroutine leak: %s\n%.20000s", strings.Join(grew, "\n"), r.goroutineDump())
	}
}

func (r *stressRig) checkDaemonLog() {
	log, _ := os.ReadFile(filepath.Join(r.m.data, "segfs-mount.out"))
	for _, bad := range []string{"DATA RACE", "panic", "level=ERROR", "fatal error"} {
		if i := bytes.Index(log, []byte(bad)); i >= 0 {
			r.t.Errorf("the daemon log has %q:\n%.5000s", bad, log[max(0, i-500):])
		}
	}
}

func (r *stressRig) verifyOffline() {
	out, err := exec.Command(r.bin, "verify", r.m.data).CombinedOutput()
	if err != nil {
		r.t.Errorf("segfs verify after unmount: %v\n%.5000s", err, out)
	}
}
