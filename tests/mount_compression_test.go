package tests

import (
	"bytes"
	"crypto/rand"
	"os"
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

// TestMountCompressionIncompressibleLine: on a compressed topic, a line
// as long as the mount accepts (max.message.bytes less the framing) of
// random bytes grows when compressed, and was stored as a batch over
// max.message.bytes (1,048,912 bytes with snappy). Such a batch is now
// stored uncompressed, within the limit; compressible lines still go in
// compressed, and everything reads back byte for byte.
func TestMountCompressionIncompressibleLine(t *testing.T) {
	for _, codec := range []string{"snappy", "lz4", "zstd", "gzip"} {
		t.Run(codec, func(t *testing.T) {
			m := mntNew(t)
			m.ok(`mkdir "$M/r" && echo compression.type=` + codec + ` >> "$M/r/config"`)
			// Random bytes without a newline, then one: the longest line
			// max.message.bytes lets the mount take.
			line := make([]byte, 0, 1048505)
			for len(line) < 1048504 {
				var b [4096]byte
				if _, err := rand.Read(b[:]); err != nil {
					t.Fatal(err)
				}
				line = append(line, bytes.ReplaceAll(b[:], []byte{'\n'}, nil)...)
			}
			line = append(line[:1048504], '\n')
			path := filepath.Join(t.TempDir(), "line")
			if err := os.WriteFile(path, line, 0o644); err != nil {
				t.Fatal(err)
			}
			m.ok(`cat "` + path + `" >> "$M/r/0/data"
seq 1 1000 >> "$M/r/0/data"
{ cat "` + path + `"; seq 1 1000; } | cmp - "$M/r/0/data"`)
			logs, _ := filepath.Glob(filepath.Join(m.data, "r-0", "*.log"))
			out, err := exec.Command(segfsBin, append([]string{"dump-log"}, logs...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("dump-log: %v\n%s", err, out)
			}
			var sizes []string
			for _, l := range strings.Split(string(out), "\n") {
				if !strings.HasPrefix(l, "baseOffset: ") {
					continue
				}
				f := strings.Fields(l[strings.Index(l, " size: ")+len(" size: "):])
				size, err := strconv.Atoi(f[0])
				if err != nil || size > 1048588 {
					t.Errorf("batch over max.message.bytes (1048588): %s", l)
				}
				sizes = append(sizes, f[0])
			}
			if len(sizes) != 2 || !strings.Contains(lastBatchLine(string(out)), "compresscodec: "+codec) {
				t.Fatalf("want the random line's batch and a %s batch of the numbers:\n%s", codec, out)
			}
		})
	}
}

// lastBatchLine returns the last line of dump-log's output that describes a
// batch.
func lastBatchLine(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "baseOffset: ") {
			return lines[i]
		}
	}
	return ""
}
