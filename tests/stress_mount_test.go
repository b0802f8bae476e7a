package tests

// TestStressEverything (stress_all_test.go): the clients of the mount,
// writers and readers, and what each checks.

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// stressWriterScript is a bash writer: until $STOP exists, it appends its
// lines (stressLine) to $F with echo (one line a write), cat (1-20 lines)
// or dd (bs=1000: writes cut lines anywhere). It prints "acked N" when it
// stops. For grow, $F is empty and each append goes to a random existing
// partition.
const stressWriterScript = `
gen() { awk -v id="$ID" -v a="$1" -v b="$2" -v keyed="$KEYED" -v pad="$PAD" -v nk=` + "8" + ` -v tb=` + "13" + ` 'BEGIN{
  for (k = a; k <= b; k++) {
    if (keyed) { key = id ".k" (k % nk); if (k % tb == 0) print key "="; else print key "=" id " " k " " pad }
    else print id " " k " " pad
  } }'; }
line() {
  if [ "$KEYED" = 1 ]; then
    if (($1 % 13 == 0)); then l="$ID.k$(($1 % 8))="; else l="$ID.k$(($1 % 8))=$ID $1 $PAD"; fi
  else l="$ID $1 $PAD"; fi
}
fail() { echo "$1 failed"; echo "acked $i"; exit 1; }
[ "$MODE" = hold ] && { exec 3>>"$F" || fail "open"; }
i=0 f=$F n=0
while [ ! -e "$STOP" ]; do
  if [ -z "$F" ]; then parts=("$M"/grow/[0-9]*); f=${parts[RANDOM % ${#parts[@]}]}/data; fi
  n=$((n+1))
  case $MODE in
  echo)
    j=$((i+1)); line $j
    echo "$l" >> "$f" || fail "write of $j to $f" ;;
  hold)
    # One descriptor for the whole run, each line in two write(2)s.
    j=$((i+1)); line $j
    printf '%s' "${l:0:7}" >&3 && printf '%s\n' "${l:7}" >&3 || fail "write of $j" ;;
  cat)
    j=$((i + RANDOM % 20 + 1))
    gen $((i+1)) $j | cat >> "$f" || fail "cat of $((i+1))..$j to $f" ;;
  dd)
    j=$((i + RANDOM % 40 + 1)) conv=notrunc
    ((n % 2)) && conv=notrunc,fsync
    gen $((i+1)) $j | dd of="$f" oflag=append conv=$conv bs=1000 status=none || fail "dd of $((i+1))..$j to $f" ;;
  esac
  i=$j
done
[ "$MODE" = hold ] && { exec 3>&- || fail "close"; }
echo "acked $i"
`

func (r *stressRig) startWriters() {
	for _, tp := range []stressTP{{"del", 0}, {"del", 1}, {"cmp", 0}, {"cmp", 1}} {
		for _, mode := range []string{"echo", "cat", "dd", "hold"} {
			id := fmt.Sprintf("%s%d", mode[:1], tp.part)
			r.addWriter(id, mode, tp, r.m.path(tp.topic, strconv.Itoa(int(tp.part)), "data"))
		}
	}
	r.addWriter("g", "echo", stressTP{"grow", -1}, "")
	r.addWriter("h", "cat", stressTP{"grow", -1}, "")
}

func (r *stressRig) addWriter(id, mode string, tp stressTP, file string) {
	keyed := "0"
	if tp.keyed() {
		keyed = "1"
	}
	w := &stressWriter{id: id, mode: mode, tp: tp}
	w.proc = r.start("writer-"+tp.topic+"-"+id, []string{"ID=" + id, "MODE=" + mode, "KEYED=" + keyed,
		"F=" + file, "STOP=" + r.stopFile, "PAD=" + stressPad}, "bash", "-c", stressWriterScript)
	r.writers = append(r.writers, w)
}

func (r *stressRig) waitWriters() {
	for _, w := range r.writers {
		select {
		case <-w.proc.done:
		case <-time.After(60 * time.Second):
			r.t.Fatalf("writer %s did not stop 60s after the stop file: a write hangs\n%s", w.id, mntHolders(r.m.dir))
		}
		out := w.proc.output()
		i := strings.LastIndex(out, "acked ")
		if i < 0 {
			r.t.Fatalf("writer %s %s printed no ack: %s", w.tp, w.id, out)
		}
		w.acked, _ = strconv.Atoi(strings.TrimSpace(out[i+6:]))
		if w.proc.err != nil {
			r.fail("write failed", "writer %s %s: %v: %s", w.tp, w.id, w.proc.err, tailOf(out, 500))
		}
		r.count("mount lines", w.acked)
	}
}

// startTails starts `tail -f` on every del and cmp partition, open before
// any writer writes: each must print every line written, in order.
func (r *stressRig) startTails() {
	for _, tp := range []stressTP{{"del", 0}, {"del", 1}, {"cmp", 0}, {"cmp", 1}} {
		name := fmt.Sprintf("tail-%s-%d", tp.topic, tp.part)
		ready := filepath.Join(r.work, name+".ready")
		p := r.start(name, nil, "bash", "-c", `exec < "$0" || exit 1; : > "$1"; exec tail -s 0.05 -n +1 -f`,
			r.m.path(tp.topic, strconv.Itoa(int(tp.part)), "data"), ready)
		if !mntWaitFor(20*time.Second, func() bool { _, err := os.Stat(ready); return err == nil }) {
			r.t.Fatalf("%s did not open data: %s", name, p.output())
		}
	}
}

// checkTails waits for every tail to print each writer's last line, then
// checks that it printed each writer's lines 1..acked once, in order.
func (r *stressRig) checkTails() {
	for _, tp := range []stressTP{{"del", 0}, {"del", 1}, {"cmp", 0}, {"cmp", 1}} {
		name := fmt.Sprintf("tail-%s-%d", tp.topic, tp.part)
		var p *stressProc
		for _, q := range r.procs {
			if q.name == name {
				p = q
			}
		}
		var ws []*stressWriter
		for _, w := range r.writers {
			if w.tp == tp {
				ws = append(ws, w)
			}
		}
		complete := func() bool {
			next := r.perWriter(p.output(), tp.keyed())
			for _, w := range ws {
				if next[w.id] < w.acked {
					return false
				}
			}
			return true
		}
		if !mntWaitFor(30*time.Second, complete) {
			r.t.Logf("%s did not catch up within 30s", name)
		}
		p.kill()
		out := p.output()
		if strings.IndexByte(out, 0) >= 0 {
			r.fail("NUL", "%s printed a NUL byte", name)
		}
		next := map[string]int{}
		for i, l := range mntLines(out) {
			id, seq, key, ok := stressParse(l, tp.keyed())
			if !ok {
				r.fail("tail line", "%s line %d: %q is no writer's line", name, i+1, l)
				continue
			}
			if strings.HasPrefix(id, "p") {
				continue // the producer's lines are checked by offset
			}
			want := next[id] + 1
			if seq == 0 { // tombstone: the next write of id must be it
				if want%stressTomb != 0 || want%stressKeys != key {
					r.fail("tail order", "%s line %d: tombstone %q after %s %d", name, i+1, l, id, next[id])
				}
				next[id] = want
				continue
			}
			if seq != want {
				r.fail("tail order", "%s line %d: %q after %s %d: a line lost, repeated or reordered", name, i+1, l, id, next[id])
			}
			next[id] = seq
		}
		for _, w := range ws {
			if next[w.id] != w.acked {
				r.fail("tail incomplete", "%s: writer %s at %d, acked %d", name, w.id, next[w.id], w.acked)
			}
		}
		r.count("tail lines", len(mntLines(out)))
	}
}

// perWriter returns, for text, each writer's highest seq (tombstones
// count as their seq by position: only used for progress).
func (r *stressRig) perWriter(text string, keyed bool) map[string]int {
	last := map[string]int{}
	for _, l := range mntLines(text) {
		id, seq, _, ok := stressParse(l, keyed)
		if !ok {
			continue
		}
		if seq == 0 {
			seq = last[id] + 1
		}
		if seq > last[id] {
			last[id] = seq
		}
	}
	return last
}

// --- mount readers --------------------------------------------------------

// run runs a short command and returns its stdout, stderr and exit code.
func (r *stressRig) run(limit int, prog string, args ...string) (string, string, int) {
	cmd := exec.Command("timeout", append([]string{"-k", "5", strconv.Itoa(limit), prog}, args...)...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.Dir = r.work
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		r.fail("exec", "%s: %v", prog, err)
		code = -1
	}
	if code == 124 || code == 137 {
		r.fail("hang", "%s %v did not finish in %ds: %s", prog, args, limit, errb.String())
	}
	return out.String(), errb.String(), code
}

func (r *stressRig) partPath(tp stressTP, names ...string) string {
	return r.m.path(append([]string{tp.topic, strconv.Itoa(int(tp.part))}, names...)...)
}

func (r *stressRig) randTP() stressTP {
	switch rand.IntN(3) {
	case 0:
		return stressTP{"del", rand.Int32N(2)}
	case 1:
		return stressTP{"cmp", rand.Int32N(2)}
	}
	return stressTP{"grow", rand.Int32N(r.growParts.Load())}
}

// stressStatus is a parsed status file.
type stressStatus map[string]int64

func (r *stressRig) readStatus(tp stressTP) (stressStatus, bool) {
	out, errs, code := r.run(30, "cat", r.partPath(tp, "status"))
	if code != 0 {
		r.fail("status", "cat %s/status: exit %d: %s", tp, code, errs)
		return nil, false
	}
	st := stressStatus{}
	if !strings.HasSuffix(out, "\n") {
		r.fail("status", "%s status does not end in a newline: %q", tp, out)
	}
	for _, l := range mntLines(out) {
		k, v, ok := strings.Cut(l, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil {
			r.fail("status", "%s status line %q", tp, l)
			return nil, false
		}
		st[k] = n
	}
	for _, k := range []string{"log.start.offset", "log.end.offset", "segments", "size.bytes", "first.timestamp",
		"last.timestamp", "active.segment.base.offset", "recovery.point"} {
		if _, ok := st[k]; !ok {
			r.fail("status", "%s status has no %s: %q", tp, k, out)
			return nil, false
		}
	}
	if st["log.start.offset"] > st["log.end.offset"] || st["recovery.point"] > st["log.end.offset"] ||
		st["active.segment.base.offset"] > st["log.end.offset"] || st["segments"] < 1 {
		r.fail("status", "%s status inconsistent: %q", tp, out)
	}
	return st, true
}

func (r *stressRig) startMountReaders() {
	// cat status: sane and monotonic.
	r.goLoop(func() {
		prev := map[stressTP]stressStatus{}
		for !r.stopping() {
			tp := r.randTP()
			st, ok := r.readStatus(tp)
			if ok {
				if p := prev[tp]; p != nil {
					if st["log.start.offset"] < p["log.start.offset"] || st["log.end.offset"] < p["log.end.offset"] {
						r.fail("status", "%s went back: start %d->%d end %d->%d", tp, p["log.start.offset"], st["log.start.offset"],
							p["log.end.offset"], st["log.end.offset"])
					}
				}
				prev[tp] = st
				r.count("status reads", 1)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	// cat data: whole lines of known writers; del: each writer contiguous.
	for range 2 {
		r.goLoop(func() {
			for !r.stopping() {
				tp := r.randTP()
				if rand.IntN(4) == 0 {
					if _, errs, code := r.run(60, "grep", "-c", "x", r.partPath(tp, "data")); code > 1 {
						r.fail("grep data", "%s: exit %d: %s", tp, code, errs)
					}
				}
				out, errs, code := r.run(60, "cat", r.partPath(tp, "data"))
				if code != 0 {
					r.fail("cat data", "%s: exit %d: %s", tp, code, errs)
					continue
				}
				r.checkText(tp, out, "cat", tp.topic != "cmp")
				r.count("cat reads", 1)
				time.Sleep(30 * time.Millisecond)
			}
		})
	}
	// One open of data read in odd-sized pieces, then read again at
	// random positions while the writers and cleaners go on: a byte's
	// position in an open data file never changes.
	r.goLoop(func() {
		for !r.stopping() {
			tp := r.randTP()
			f, err := os.Open(r.partPath(tp, "data"))
			if err != nil {
				r.fail("open data", "%s: %v", tp, err)
				continue
			}
			var text []byte
			buf := make([]byte, 70000)
			for {
				n, err := f.Read(buf[:1+rand.IntN(len(buf))])
				text = append(text, buf[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil {
					r.fail("read data", "%s at %d: %v", tp, len(text), err)
					break
				}
			}
			r.checkText(tp, string(text), "read(2)", tp.topic == "del")
			r.sleep(time.Duration(rand.IntN(500)) * time.Millisecond)
			for k := 0; k < 20 && len(text) > 0; k++ {
				off := rand.IntN(len(text))
				b := buf[:min(1+rand.IntN(8192), len(text)-off)]
				n, err := f.ReadAt(b, int64(off))
				if err != nil && err != io.EOF || n != len(b) {
					r.fail("pread data", "%s at %d: %d of %d bytes: %v", tp, off, n, len(b), err)
					break
				}
				if !bytes.Equal(b, text[off:off+n]) {
					r.fail("pread data", "%s at %d: %q, first read %q", tp, off, tailOf(string(b), 80), tailOf(string(text[off:off+n]), 80))
					break
				}
			}
			f.Close()
			r.count("pread opens", 1)
		}
	})
	// head -n1 offset/N: the record at N (del, grow: dense offsets).
	r.goLoop(func() {
		for !r.stopping() {
			tp := r.randTP()
			st, ok := r.readStatus(tp)
			if !ok {
				continue
			}
			lo, hi := st["log.start.offset"], st["log.end.offset"]
			if hi == lo {
				continue
			}
			n := lo + rand.Int64N(hi-lo)
			out, errs, code := r.run(30, "head", "-n1", r.partPath(tp, "offset", strconv.FormatInt(n, 10)))
			if code != 0 {
				if strings.Contains(errs, "No such file") {
					r.count("offset/N below the moved start", 1) // retention or DeleteRecords since
					continue
				}
				r.fail("offset/N", "head -n1 %s offset/%d: exit %d: %s", tp, n, code, errs)
				continue
			}
			if !strings.HasSuffix(out, "\n") {
				r.fail("offset/N", "%s offset/%d: %q is not a whole line", tp, n, out)
				continue
			}
			line := strings.TrimSuffix(out, "\n")
			if _, _, _, ok := stressParse(line, tp.keyed()); !ok {
				r.fail("offset/N", "%s offset/%d: %q is no writer's line", tp, n, line)
				continue
			}
			if !tp.keyed() {
				r.observe(tp, n, line, "head -n1 offset/N")
			}
			r.count("offset reads", 1)
			time.Sleep(10 * time.Millisecond)
		}
	})
	// readlink time/T: ../offset/N with N in [start, end].
	r.goLoop(func() {
		for !r.stopping() {
			tp := r.randTP()
			before, ok := r.readStatus(tp)
			if !ok {
				continue
			}
			ts := time.Now().Add(-time.Duration(rand.IntN(4000)) * time.Millisecond).UnixMilli()
			out, errs, code := r.run(30, "readlink", r.partPath(tp, "time", strconv.FormatInt(ts, 10)))
			after, ok2 := r.readStatus(tp)
			if code != 0 {
				r.fail("time/T", "readlink %s time/%d: exit %d: %s", tp, ts, code, errs)
				continue
			}
			s, found := strings.CutPrefix(strings.TrimSpace(out), "../offset/")
			n, err := strconv.ParseInt(s, 10, 64)
			if !found || err != nil {
				r.fail("time/T", "%s time/%d -> %q", tp, ts, out)
				continue
			}
			if ok2 && (n < before["log.start.offset"] || n > after["log.end.offset"]) {
				r.fail("time/T", "%s time/%d -> %d, outside [%d, %d]", tp, ts, n, before["log.start.offset"], after["log.end.offset"])
			}
			r.count("time reads", 1)
			time.Sleep(10 * time.Millisecond)
		}
	})
	// tail -f started mid-run for a second: del lines per writer contiguous.
	r.goLoop(func() {
		for i := 0; !r.stopping(); i++ {
			tp := stressTP{"del", int32(i % 2)}
			name := fmt.Sprintf("latetail-%d", i)
			p := r.start(name, nil, "tail", "-s", "0.05", "-n", "+1", "-f", r.partPath(tp, "data"))
			select {
			case <-r.quit:
			case <-time.After(time.Second):
			}
			p.kill()
			out := p.output()
			// The last line may be cut by the kill.
			if i := strings.LastIndexByte(out, '\n'); i >= 0 {
				out = out[:i+1]
			}
			r.checkText(tp, out, name, true)
			os.Remove(p.out)
			r.count("late tails", 1)
		}
	})
	// segfs verify beside the running mount: no corrupt batch or index.
	// An error a second run right after no longer reports for that file
	// was the log changing under verify (a race of the offline tool, which
	// takes no lock), logged rather than failed: the compaction swap and
	// roll races it had are fixed (cli/cmd_verify_test.go), and so is the
	// index it could read while the cleaner built it in place after a
	// swap (the cleaner now moves complete indexes with the log:
	// logstore's TestCompactionSwapNeverExposesPartialIndex).
	r.goLoop(func() {
		for !r.stopping() {
			out, errs, code := r.run(120, r.bin, "verify", r.m.data)
			if code != 0 {
				again, _, _ := r.run(120, r.bin, "verify", r.m.data)
				var still []string
				for _, f := range stressVerifyErrorFiles(out) {
					if slices.Contains(stressVerifyErrorFiles(again), f) {
						still = append(still, f)
					}
				}
				if len(still) > 0 {
					r.fail("live verify", "segfs verify exit %d, twice for %v:\n%.3000s\n%.2000s", code, still, errs, out)
				} else {
					r.count("live verify errors gone on a rerun", 1)
					r.t.Logf("live verify reported errors that a rerun no longer finds:\n%.3000s", out)
				}
			}
			r.count("live verifies", 1)
			time.Sleep(500 * time.Millisecond)
		}
	})
}

// checkText checks text read from tp's data: no NUL, whole lines of
// known writers, each writer's seqs increasing, and contiguous when dense.
func (r *stressRig) checkText(tp stressTP, text, what string, dense bool) {
	if strings.IndexByte(text, 0) >= 0 {
		r.fail("NUL", "%s of %s: a NUL byte at %d", what, tp, strings.IndexByte(text, 0))
	}
	if text != "" && !strings.HasSuffix(text, "\n") {
		r.fail("torn", "%s of %s: ends without a newline: %q", what, tp, tailOf(text, 100))
	}
	last := map[string]int{}
	for i, l := range mntLines(text) {
		id, seq, _, ok := stressParse(l, tp.keyed())
		if !ok {
			r.fail("bad line", "%s of %s line %d: %q", what, tp, i+1, l)
			continue
		}
		if seq == 0 || tp.topic == "grow" {
			continue
		}
		if p, ok := last[id]; ok && (seq <= p || (dense && seq != p+1)) {
			r.fail("order", "%s of %s line %d: %s %d after %d", what, tp, i+1, id, seq, p)
		}
		last[id] = seq
	}
}

// stressVerifyErrorFiles lists the files that `segfs verify` output names
// in its "error: FILE: ..." lines.
func stressVerifyErrorFiles(out string) []string {
	var files []string
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(l, "error: "); ok {
			if f, _, ok := strings.Cut(rest, ": "); ok {
				files = append(files, f)
			}
		}
	}
	return files
}
