package tests

import (
	"os"
	"path/filepath"
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
