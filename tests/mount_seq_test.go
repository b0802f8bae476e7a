package tests

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestMountSeqMillion appends `seq 1 1000000` to a topic with 1 MiB
// segments and reads it back with the usual tools.
func TestMountSeqMillion(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/nums" && echo segment.bytes=1048576 > "$M/nums/config" && grep -x segment.bytes=1048576 "$M/nums/config"`)
	m.ok(`seq 1 1000000 >> "$M/nums/0/data"`)

	want := filepath.Join(t.TempDir(), "want")
	m.ok(`seq 1 1000000 > ` + want)
	wantSize, _ := os.Stat(want)

	data := `"$M/nums/0/data"`
	checks := []struct{ script, want string }{
		{`wc -l < ` + data, "1000000\n"},
		{`head -n 3 ` + data, "1\n2\n3\n"},
		{`tail -n 3 ` + data, "999998\n999999\n1000000\n"},
		{`grep -c '77$' ` + data, "10000\n"},
		{`sed -n '123456p' ` + data, "123456\n"},
		{`sed -n '999999p' ` + data, "999999\n"},
		{`stat -c %s ` + data, strconv.FormatInt(wantSize.Size(), 10) + "\n"},
		{`cat ` + data + ` | wc -c`, strconv.FormatInt(wantSize.Size(), 10) + "\n"},
		{`cmp ` + data + ` ` + want + ` && echo same`, "same\n"},
		{`dd if=` + data + ` bs=1M status=none | cmp - ` + want + ` && echo same`, "same\n"},
		{`head -n1 "$M/nums/0/offset/500000"`, "500001\n"},
	}
	for _, c := range checks {
		if got := m.ok(c.script); got != c.want {
			t.Errorf("%s = %q, want %q", c.script, got, c.want)
		}
	}
	status := m.ok(`cat "$M/nums/0/status"`)
	for _, kv := range []string{"log.start.offset=0\n", "log.end.offset=1000000\n"} {
		if !strings.Contains(status, kv) {
			t.Errorf("status lacks %q:\n%s", kv, status)
		}
	}
	segs := mntLines(m.ok(`ls "$M/nums/0/segments" | grep -c '\.log$'`))
	if n, _ := strconv.Atoi(segs[0]); n < 5 {
		t.Errorf("%d segments with segment.bytes=1048576, want several", n)
	}
	// Raw segment files read the same through the mount as on disk.
	m.ok(`for f in "$M"/nums/0/segments/*.log; do cmp "$f" "$D/nums-0/$(basename "$f")" || exit 1; done`)
	m.unmount()
	m.sanityCheck()
}
