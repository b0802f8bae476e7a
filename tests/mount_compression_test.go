package tests

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestMountCompressionType: `echo compression.type=zstd >> config` makes
// every batch stored zstd-compressed, lines appended with the shell and
// batches kcat produces uncompressed alike, as a Kafka broker recompresses;
// `cat data`, `dump-log` and a Kafka consumer read them back.
func TestMountCompressionType(t *testing.T) {
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/z" && echo compression.type=zstd >> "$M/z/config"`)
	if got := m.ok(`grep '^compression.type=' "$M/z/config"`); got != "compression.type=zstd\n" {
		t.Fatalf("config reads %q", got)
	}
	m.ok(`seq 1 500 >> "$M/z/0/data" && echo "shell line" >> "$M/z/0/data"`)
	kcat(t, addr, "kcat one\nkcat two\n", "-P", "-t", "z", "-p", "0", "-z", "none")
	var want strings.Builder
	for i := 1; i <= 500; i++ {
		want.WriteString(strconv.Itoa(i) + "\n")
	}
	want.WriteString("shell line\nkcat one\nkcat two\n")
	if got := m.ok(`cat "$M/z/0/data"`); got != want.String() {
		t.Fatalf("cat data: %d bytes, want %d", len(got), want.Len())
	}
	if got := kcat(t, addr, "", "-C", "-t", "z", "-p", "0", "-o", "beginning", "-e", "-q"); got != want.String() {
		t.Fatalf("kcat -C: %d bytes, want %d", len(got), want.Len())
	}
	logs, _ := filepath.Glob(filepath.Join(m.data, "z-0", "*.log"))
	out, err := exec.Command(segfsBin, append([]string{"dump-log"}, logs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("dump-log: %v\n%s", err, out)
	}
	batches := strings.Count(string(out), "baseOffset: ")
	if batches < 3 || strings.Count(string(out), "compresscodec: zstd") != batches || strings.Contains(string(out), "isvalid: false") {
		t.Fatalf("want %d zstd batches:\n%s", batches, out)
	}
	// Back to the default: new batches keep what the producer sent.
	m.ok(`echo compression.type= >> "$M/z/config" && echo plain >> "$M/z/0/data"`)
	out, err = exec.Command(segfsBin, append([]string{"dump-log"}, logs...)...).CombinedOutput()
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if last := lines[len(lines)-1]; err != nil || !strings.HasPrefix(last, "baseOffset: ") || !strings.Contains(last, " compresscodec: none ") {
		t.Fatalf("after the reset, the last batch is not uncompressed: %v\n%s", err, out)
	}
}
