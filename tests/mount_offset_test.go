package tests

import (
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMountOffsetAndTime checks offset/N at random and boundary N, and
// time/T before, inside and after the log, in both formats.
func TestMountOffsetAndTime(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/ot" && echo segment.bytes=16384 > "$M/ot/config"`)
	p := `"$M/ot/0"`

	// Three groups of 1000 lines with a pause between them; the times
	// around each group are taken outside the daemon.
	nowMs := func() int64 { return time.Now().UnixMilli() }
	var before, after [3]int64
	for g := 0; g < 3; g++ {
		time.Sleep(30 * time.Millisecond)
		before[g] = nowMs()
		time.Sleep(5 * time.Millisecond)
		m.ok(fmt.Sprintf(`for i in $(seq %d %d); do echo "line-$i"; done >> %s/data`, g*1000, g*1000+999, p))
		time.Sleep(5 * time.Millisecond)
		after[g] = nowMs()
	}
	const end = 3000

	rng := rand.New(rand.NewSource(7))
	for i := 0; i < 30; i++ {
		n := rng.Intn(end)
		if got := m.ok(fmt.Sprintf(`head -n1 %s/offset/%d`, p, n)); got != fmt.Sprintf("line-%d\n", n) {
			t.Errorf("head -n1 offset/%d = %q", n, got)
		}
	}
	if got := m.ok(`head -n1 ` + p + `/offset/0`); got != "line-0\n" {
		t.Errorf("offset/0 (log start) = %q", got)
	}
	if got := m.ok(`tail -n1 ` + p + `/offset/2999 && wc -l < ` + p + `/offset/2999`); got != "line-2999\n1\n" {
		t.Errorf("offset/2999 = %q", got)
	}
	// offset/N and data agree on the suffix.
	m.ok(`cmp <(tail -n +1501 ` + p + `/data) ` + p + `/offset/1500`)
	// N == log end: an empty file that exists; stat size matches.
	if got := m.ok(`cat ` + p + `/offset/3000 | wc -c; stat -c %s ` + p + `/offset/3000`); got != "0\n0\n" {
		t.Errorf("offset/end = %q", got)
	}
	// and it grows.
	m.ok(`echo line-3000 >> ` + p + `/data`)
	if got := m.ok(`cat ` + p + `/offset/3000`); got != "line-3000\n" {
		t.Errorf("offset/3000 after an append = %q", got)
	}
	// Only canonical decimal names an offset (no sign, no leading zero,
	// ASCII digits), as only /proc/7, not /proc/007, names pid 7: one name
	// per offset, so one node and one st_ino per offset.
	for _, name := range []string{"3002", "-1", "01", "+1", "abc", "1e3", "0x10", "99999999999999999999", "9223372036854775808", " 1",
		"007", "00", "-0", "+7", "7 ", "0x7", "٣", "７", "1_000", "1.0"} {
		m.fails(fmt.Sprintf(`head -n1 %s/offset/'%s'`, p, name), "No such file or directory")
	}
	if got := m.ok(`ls -A ` + p + `/offset ` + p + `/time | grep -v ':$' | grep -c . || true`); got != "0\n" {
		t.Errorf("ls offset/ time/ listed %q", got)
	}

	rfc := func(ms int64) string {
		return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
	}
	links := []struct {
		ts   int64
		want string
	}{
		{1000, "../offset/0"},                // long before the log
		{before[0], "../offset/0"},           // just before the first group
		{before[1], "../offset/1000"},        // between groups 1 and 2
		{before[2], "../offset/2000"},        // between groups 2 and 3
		{after[2] + 60000, "../offset/3001"}, // after the newest record: the log end
	}
	for _, l := range links {
		for _, name := range []string{strconv.FormatInt(l.ts, 10), rfc(l.ts)} {
			got := strings.TrimSpace(m.ok(fmt.Sprintf(`readlink %s/time/%s`, p, name)))
			if got != l.want {
				t.Errorf("readlink time/%s = %q, want %q", name, got, l.want)
			}
		}
	}
	// A link is followed like any symlink.
	if got := m.ok(fmt.Sprintf(`head -n1 %s/time/%d`, p, before[1])); got != "line-1000\n" {
		t.Errorf("head time/T = %q", got)
	}
	// RFC 3339's zone offsets stop at 23:59; Go's parser took +24:00.
	for _, name := range []string{"yesterday", "2026-11-29", "01", "-5", "2026-13-01T00:00:00Z",
		"2026-11-29T10:00:00+24:00", "2026-11-29T10:00:00+23:60"} {
		m.fails(fmt.Sprintf(`readlink -e %s/time/'%s'`, p, name), "")
	}

	// offset/N has a true size (the bytes a read returns), and it grows
	// with the log, for a handle open across the append too.
	sizeOf := func(n int) string {
		return m.ok(fmt.Sprintf(`stat -c %%s %s/offset/%d; cat %s/offset/%d | wc -c`, p, n, p, n))
	}
	if got := mntLines(sizeOf(1500)); len(got) != 2 || got[0] != got[1] || got[0] == "0" {
		t.Errorf("offset/1500: st_size and bytes read = %q", got)
	}
	grow := m.ok(fmt.Sprintf(`exec 3< %s/offset/2990; a=$(stat -L -c %%s /dev/fd/3); echo extra-line >> %s/data
sleep 1.2; b=$(stat -L -c %%s /dev/fd/3); c=$(cat <&3 | wc -c); echo $a $b $c`, p, p))
	if f := strings.Fields(grow); len(f) != 3 || f[1] != f[2] {
		t.Errorf("offset/2990 open across an append: size before, size after, bytes read = %q", grow)
	} else if a, _ := strconv.Atoi(f[0]); strconv.Itoa(a+len("extra-line\n")) != f[1] {
		t.Errorf("offset/2990 grew from %s to %s bytes, want %d more", f[0], f[1], len("extra-line\n"))
	}
	if got := m.ok(`tail -n1 ` + p + `/data`); got != "extra-line\n" {
		t.Fatalf("last line %q", got)
	}

	// status: every key of DESIGN.md, with values that agree with the
	// segment files and the times of the appends.
	status := map[string]int64{}
	for _, l := range mntLines(m.ok(`cat ` + p + `/status`)) {
		k, v, ok := strings.Cut(l, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil {
			t.Fatalf("status line %q is not key=number", l)
		}
		status[k] = n
	}
	segs := mntLines(m.ok(`cd ` + p + `/segments && ls | grep '\.log$'`))
	var logBytes int64
	for _, s := range mntLines(m.ok(`cd ` + p + `/segments && stat -c %s *.log`)) {
		n, _ := strconv.ParseInt(s, 10, 64)
		logBytes += n
	}
	lastBase, _ := strconv.ParseInt(strings.TrimSuffix(segs[len(segs)-1], ".log"), 10, 64)
	for k, want := range map[string]int64{
		"log.start.offset":           0,
		"log.end.offset":             end + 2, // and line-3000 and extra-line
		"segments":                   int64(len(segs)),
		"size.bytes":                 logBytes,
		"active.segment.base.offset": lastBase,
	} {
		if got, ok := status[k]; !ok || got != want {
			t.Errorf("status %s = %d (present %v), want %d", k, got, ok, want)
		}
	}
	if len(segs) < 3 {
		t.Errorf("%d segments with segment.bytes=16384, want several", len(segs))
	}
	if ft := status["first.timestamp"]; ft < before[0] || ft > after[0] {
		t.Errorf("status first.timestamp = %d, want within the first group's [%d, %d]", ft, before[0], after[0])
	}
	if lt := status["last.timestamp"]; lt < after[2] || lt > time.Now().UnixMilli() {
		t.Errorf("status last.timestamp = %d, want the last append's time, after %d", lt, after[2])
	}
	if rp, ok := status["recovery.point"]; !ok || rp < 0 || rp > end+2 {
		t.Errorf("status recovery.point = %d (present %v)", rp, ok)
	}
}
