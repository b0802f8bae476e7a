package tests

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// compressibleLines returns n lines that compress well: both clients send
// a batch uncompressed when compressing would not make it smaller, so a
// few short records never test a codec.
func compressibleLines(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s record %02d: the quick brown fox jumps over the lazy dog, again and again", prefix, i)
	}
	return out
}

// What one client writes the others read, with every codec, and the mount
// shows it: kcat (librdkafka) and franz-go each produce a batch per codec
// into one partition of a mounted data directory served with
// --kafka-listen; then `cat data` renders all of it as text, kcat -C and
// franz-go read it all back, and dump-log shows the batches were stored
// compressed, as they came.
func TestKafkaMountEveryCodec(t *testing.T) {
	kafkaNeedKcat(t)
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/mixed"`)

	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
	}{
		{"none", kgo.NoCompression()},
		{"gzip", kgo.GzipCompression()},
		{"snappy", kgo.SnappyCompression()},
		{"lz4", kgo.Lz4Compression()},
		{"zstd", kgo.ZstdCompression()},
	}
	var want []string
	for _, c := range codecs {
		lines := compressibleLines("kcat "+c.name, 40)
		kcat(t, addr, strings.Join(lines, "\n")+"\n", "-P", "-t", "mixed", "-p", "0", "-z", c.name)
		want = append(want, lines...)
	}
	for _, c := range codecs {
		cl := kafkaClient(t, addr, kgo.ProducerBatchCompression(c.codec), kgo.ProducerLinger(20*time.Millisecond))
		vals := compressibleLines("kgo "+c.name, 40)
		kafkaProduce(t, cl, "mixed", 0, vals...)
		want = append(want, vals...)
	}

	// The mount renders every batch, compressed or not, as text.
	var got []string
	if !mntWaitFor(10*time.Second, func() bool {
		got = mntLines(m.ok(`cat "$M/mixed/0/data"`))
		return slices.Equal(got, want)
	}) {
		t.Fatalf("cat data:\n%q\nwant\n%q", got, want)
	}

	// kcat reads franz-go's batches and its own.
	out := kcat(t, addr, "", "-C", "-t", "mixed", "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%s\n")
	if got := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); !slices.Equal(got, want) {
		t.Fatalf("kcat -C read\n%q\nwant\n%q", got, want)
	}
	// franz-go reads kcat's batches and its own.
	if vals := recordValues(kafkaConsume(t, addr, "mixed", 0, 0, len(want))); !slices.Equal(vals, want) {
		t.Fatalf("kgo read\n%q\nwant\n%q", vals, want)
	}

	// Stored as they came: every codec appears in the segment's batch
	// headers, once per producer. librdkafka 2.0.2 (Debian's kcat)
	// compresses gzip, snappy and lz4 only if the broker lists Produce v0,
	// so the server lists it (and refuses v0-2 requests), as Kafka 4.0
	// does; without that kcat stored those three uncompressed.
	dump, err := exec.Command(segfsBin, "dump-log", filepath.Join(m.data, "mixed-0", "00000000000000000000.log")).CombinedOutput()
	if err != nil {
		t.Fatalf("dump-log: %v\n%s", err, dump)
	}
	// The codec of every batch in log order, runs collapsed: kcat's five
	// codecs, then franz-go's.
	var runs, want2 []string
	for _, line := range strings.Split(string(dump), "\n") {
		_, after, ok := strings.Cut(line, "compresscodec: ")
		if !ok {
			continue
		}
		codec, _, _ := strings.Cut(after, " ")
		if len(runs) == 0 || runs[len(runs)-1] != codec {
			runs = append(runs, codec)
		}
	}
	for range 2 {
		for _, c := range codecs {
			want2 = append(want2, c.name)
		}
	}
	if !slices.Equal(runs, want2) {
		t.Errorf("batch codecs in log order %q, want %q:\n%s", runs, want2, dump)
	}
}
