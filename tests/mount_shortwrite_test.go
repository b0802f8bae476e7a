package tests

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestMountShortWrite: a write longer than max.message.bytes becomes
// several batches, and when one after the first fails (here the segment
// roll it needs cannot create its file), the writer is told exactly what
// was stored: a short write of the lines of the first batch, not an error
// for the whole write while those lines sit in the log. dd reports the
// bytes it got acknowledged, the log holds exactly those lines, and
// resending the rest once the obstacle is gone stores each line once.
func TestMountShortWrite(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	m := mntAt(t, data)
	m.ok(`mkdir "$M/short" && printf 'max.message.bytes=1271\nsegment.bytes=1400\n' > "$M/short/config"`)
	const line = "0123456789abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopq"
	chunk := filepath.Join(t.TempDir(), "chunk")
	var text strings.Builder
	for i := 0; i < 21; i++ {
		text.WriteString(line[:96] + string(rune('a'+i)) + "..\n") // 100 bytes, each line different
	}
	if err := os.WriteFile(chunk, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	// 2,100 bytes are batches of 11 and 10 lines (a batch takes lines while
	// it fits: 61 + 11*108 = 1,249 bytes); the second needs a new segment
	// at offset 11, and a non-empty directory holds its name.
	block := filepath.Join(data, "short-0", "00000000000000000011.log")
	if err := os.MkdirAll(filepath.Join(block, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	d := `"$M/short/0/data"`
	out := m.ok(`dd if=` + chunk + ` of=` + d + ` oflag=append conv=notrunc bs=2100 count=1 2>&1 | grep -o '^[0-9]* bytes' || true
wc -l < ` + d)
	if f := mntLines(out); len(f) != 2 || f[0] != "1100 bytes" || f[1] != "11" {
		t.Fatalf("want dd to report 1100 bytes written and 11 lines stored; got %q", out)
	}
	if err := os.RemoveAll(block); err != nil {
		t.Fatal(err)
	}
	m.ok(`tail -c +1101 ` + chunk + ` >> ` + d)
	if got := m.ok(`cat ` + d); got != text.String() {
		t.Fatalf("after resending the rest the log is\n%s\nwant\n%s", got, text.String())
	}
	m.unmount()
	m.sanityCheck()
}

// TestMountMiBWrites: `dd bs=1M` of short lines of every length from 0 to
// 299 bytes, at the default limits, through the mount. Each 1 MiB WRITE is
// over max.message.bytes (1,048,588 bytes of batch), so it becomes more
// than one batch: every batch must stay within the limit, the batches
// must fill up to it (a batch near the limit shows that a write is not
// cut by an estimate), and the text must read back byte for byte.
func TestMountMiBWrites(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	m := mntAt(t, data)
	m.ok(`mkdir "$M/mib"`)
	var text strings.Builder
	for i := 0; text.Len() < 5<<20; i++ {
		n := (i * 7919) % 300
		text.WriteString(strings.Repeat(string(rune('a'+i%26)), n))
		text.WriteByte('\n')
	}
	in := filepath.Join(t.TempDir(), "in")
	if err := os.WriteFile(in, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	d := `"$M/mib/0/data"`
	if got := m.ok(`dd if=` + in + ` of=` + d + ` oflag=append conv=notrunc bs=1M status=none && cmp ` + in + ` ` + d + ` && echo same`); got != "same\n" {
		t.Fatalf("after dd bs=1M: %q", got)
	}
	logs, _ := filepath.Glob(filepath.Join(data, "mib-0", "*.log"))
	out := m.ok(segfsBin + ` dump-log ` + strings.Join(logs, " "))
	const limit = 1048588
	batches, largest := 0, 0
	for _, l := range mntLines(out) {
		i := strings.Index(l, " size: ")
		if !strings.HasPrefix(l, "baseOffset:") || i < 0 {
			continue
		}
		size, err := strconv.Atoi(strings.Fields(l[i+len(" size: "):])[0])
		if err != nil {
			t.Fatalf("dump-log line %q: %v", l, err)
		}
		if size > limit {
			t.Errorf("a batch of %d bytes, over max.message.bytes %d", size, limit)
		}
		batches++
		largest = max(largest, size)
	}
	// 5 MiB in 1 MiB WRITEs: at least two batches per WRITE.
	if batches < 10 || largest < limit-400 {
		t.Fatalf("%d batches, the largest %d bytes; want at least 10, one within 400 bytes of %d", batches, largest, limit)
	}
	m.unmount()
	m.sanityCheck()
}
