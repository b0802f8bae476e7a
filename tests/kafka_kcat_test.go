package tests

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kcat (librdkafka 2.x) against the binary: -P with and without
// compression, -L, -C -o beginning -e, -Q by timestamp; and what kcat
// writes franz-go reads, and the other way round.
func TestKafkaKcat(t *testing.T) {
	kafkaNeedKcat(t)
	srv := kafkaServe(t, "")

	// -P (auto-creates the topic through Metadata, P14), one codec per run.
	var want []string
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		var lines []string
		for i := range 3 {
			lines = append(lines, fmt.Sprintf("kcat %s %d", codec, i))
		}
		kcat(t, srv.addr, strings.Join(lines, "\n")+"\n", "-P", "-t", "lines", "-p", "0", "-z", codec)
		want = append(want, lines...)
	}
	tMid := time.Now().UnixMilli()
	time.Sleep(20 * time.Millisecond)

	// franz-go appends to the same partition (zstd, idempotent).
	cl := kafkaClient(t, srv.addr, kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	kafkaProduce(t, cl, "lines", 0, "kgo a", "kgo b")
	want = append(want, "kgo a", "kgo b")

	// -L lists the broker at the listen address and the topic.
	out := kcat(t, srv.addr, "", "-L")
	if !strings.Contains(out, "broker 0 at "+srv.addr) || !strings.Contains(out, `topic "lines" with 1 partitions`) {
		t.Fatalf("kcat -L:\n%s", out)
	}

	// -C -o beginning -e reads everything, with offsets, and exits at the end.
	out = kcat(t, srv.addr, "", "-C", "-t", "lines", "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%o %s\n")
	var got []string
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		off, val, _ := strings.Cut(line, " ")
		if off != fmt.Sprint(i) {
			t.Fatalf("kcat -C line %d has offset %s: %q", i, off, line)
		}
		got = append(got, val)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("kcat -C read\n%q\nwant\n%q", got, want)
	}

	// franz-go reads what kcat wrote (compressed by librdkafka).
	if vals := recordValues(kafkaConsume(t, srv.addr, "lines", 0, 0, len(want))); !slices.Equal(vals, want) {
		t.Fatalf("kgo read %q", vals)
	}

	// -Q by timestamp: the first record at or after tMid is franz-go's.
	out = kcat(t, srv.addr, "", "-Q", "-t", fmt.Sprintf("lines:0:%d", tMid))
	if !strings.Contains(out, "offset 15") {
		t.Fatalf("kcat -Q at %d: %q, want offset 15", tMid, out)
	}
	// -3, the record with the largest timestamp: one of franz-go's two,
	// the last records (the same millisecond or not). librdkafka 2.0 asks
	// at ListOffsets v2, which Kafka's broker answers as at v7; it used
	// to be INVALID_REQUEST.
	out = kcat(t, srv.addr, "", "-Q", "-t", "lines:0:-3")
	if !strings.Contains(out, "offset 15") && !strings.Contains(out, "offset 16") {
		t.Fatalf("kcat -Q -3: %q, want offset 15 or 16", out)
	}
	// ... and a time after everything gives -1 (no such record).
	out = kcat(t, srv.addr, "", "-Q", "-t", fmt.Sprintf("lines:0:%d", time.Now().UnixMilli()+3600_000))
	if !strings.Contains(out, "offset -1") {
		t.Fatalf("kcat -Q in the future: %q", out)
	}
}

// librdkafka's committed offsets: a consumer with a group id and a manual
// assignment reads from the stored offset and commits where it stopped
// (FindCoordinator, OffsetFetch, OffsetCommit); after a restart of the
// server the next run resumes there.
func TestKafkaKcatCommitResume(t *testing.T) {
	kafkaNeedKcat(t)
	srv := kafkaServe(t, "")
	consume := func() []string {
		out := kcat(t, srv.addr, "", "-C", "-t", "jobs", "-p", "0", "-o", "stored", "-e", "-q",
			"-X", "group.id=workers", "-X", "auto.offset.reset=earliest")
		return strings.Fields(out)
	}
	kcat(t, srv.addr, "j1\nj2\nj3\n", "-P", "-t", "jobs", "-p", "0")
	if got := consume(); !slices.Equal(got, []string{"j1", "j2", "j3"}) {
		t.Fatalf("first run read %q", got)
	}
	data := srv.data
	srv.stop()
	srv = kafkaServe(t, data)
	kcat(t, srv.addr, "j4\n", "-P", "-t", "jobs", "-p", "0")
	if got := consume(); !slices.Equal(got, []string{"j4"}) {
		t.Fatalf("resumed run read %q, want only j4", got)
	}
}
