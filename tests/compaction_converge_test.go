package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCompactionConverges writes 1,000 keys × 100 updates through the
// mount of a compacted topic while `tail -f data` follows it and the
// cleaner rewrites segments beneath it. The log converges to the 1,000
// latest values, through `cat data` and through a Kafka consumer, at
// their original offsets; the tail prints all 100,000 lines exactly once;
// tombstones vanish after delete.retention.ms; lines without a key are
// refused (EINVAL through the mount, INVALID_RECORD through Produce).
func TestCompactionConverges(t *testing.T) {
	const keys, rounds = 1000, 100
	addr := kafkaFreeAddr(t)
	m := mntNew(t, append([]string{"--kafka-listen", addr}, cleanerFlags...)...)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/cmp" && printf 'cleanup.policy=compact\nkey.separator==\nsegment.bytes=65536\nsegment.ms=300\nmin.cleanable.dirty.ratio=0.01\ndelete.retention.ms=300\nfile.delete.delay.ms=0\n' > "$M/cmp/config"`)
	outDir := t.TempDir()
	modes := []string{"-f", "-F"}
	var tails []*bgProc
	for _, mode := range modes {
		tails = append(tails, bgCmd(t, filepath.Join(outDir, "tail"+mode), "tail", mode, "-s", "0.1", "-n", "+1", m.path("cmp", "0", "data")))
	}
	// Both tails open the first generation of data, before the cleaner
	// rewrites anything.
	mntWaitOpen(t, m.path("cmp", "0", "data"), len(modes), 30*time.Second)

	// Round r sets key k to "rRRR-kKKKK"; record (r-1)*1000+(k-1) is at
	// that offset. awk writes 4 KiB at a time, so lines are split across
	// writes and the mount reassembles them.
	m.ok(fmt.Sprintf(`for r in $(seq 1 %d); do
  awk -v r=$r 'BEGIN { for (k = 1; k <= %d; k++) printf "k%%04d=r%%03d-k%%04d\n", k, r, k }' >> "$M/cmp/0/data" || exit 1
  sleep 0.01
done`, rounds, keys), 150)
	cleanedWhileWriting := m.cleanerTotals("compaction", "cmp-0")
	latest := make([]string, keys)
	for k := range latest {
		latest[k] = fmt.Sprintf("k%04d=r%03d-k%04d", k+1, rounds, k+1)
	}

	// The idle active segment rolls after segment.ms and is compacted too.
	var got []string
	if !mntWaitFor(30*time.Second, func() bool {
		got = mntLines(m.ok(`cat "$M/cmp/0/data"`))
		return len(got) == keys
	}) {
		t.Fatalf("cat data has %d lines, not converging to %d; status %v", len(got), keys, m.status("cmp"))
	}
	if !slices.Equal(got, latest) {
		t.Fatalf("cat data converged to the wrong values: first %q, want %q", got[0], latest[0])
	}
	tot := m.cleanerTotals("compaction", "cmp-0")
	st := m.status("cmp")
	t.Logf("compaction: %d passes (%d while writing), %d segments rewritten, %d records removed; status %v",
		tot.passes, cleanedWhileWriting.passes, tot.segmentsCleaned, tot.recordsRemoved, st)
	if tot.recordsRemoved != keys*(rounds-1) {
		t.Errorf("the cleaner logged %d records removed, want %d", tot.recordsRemoved, keys*(rounds-1))
	}
	// Each pass logs the bytes it freed and its duration too; what they
	// freed is what the partition no longer holds.
	if tot.timed != tot.passes {
		t.Errorf("%d of %d compaction passes logged no duration", tot.passes-tot.timed, tot.passes)
	}
	if tot.bytesFreed <= 0 || tot.bytesFreed < 10*st["size.bytes"] {
		t.Errorf("the cleaner logged %d bytes freed; the partition holds %d bytes after removing 99%% of its records", tot.bytesFreed, st["size.bytes"])
	}
	if st["log.start.offset"] != 0 || st["log.end.offset"] != keys*rounds {
		t.Errorf("compaction moved the offsets: %v", st)
	}

	// Offsets are preserved: the Kafka consumer sees the latest values at
	// the offsets they were written at, with a gap before them.
	recs := kafkaConsumeAll(t, addr, "cmp", 0, keys*rounds-1)
	if len(recs) != keys {
		t.Fatalf("Kafka consumer got %d records, want %d", len(recs), keys)
	}
	for i, r := range recs {
		want := int64((rounds-1)*keys + i)
		if r.Offset != want || string(r.Key)+"="+string(r.Value) != latest[i] {
			t.Fatalf("record %d: offset %d %s=%s, want offset %d %s", i, r.Offset, r.Key, r.Value, want, latest[i])
		}
	}
	if _, ok := optionalProgram(t, "kcat", "kcat", "kcat's read"); ok {
		out := kcat(t, addr, "", "-C", "-t", "cmp", "-p", "0", "-o", "beginning", "-e", "-q", "-f", `%o %k=%s\n`)
		lines := mntLines(out)
		if len(lines) != keys || lines[0] != fmt.Sprintf("%d %s", (rounds-1)*keys, latest[0]) {
			t.Errorf("kcat consumed %d records, first %q; want %d from offset %d", len(lines), lines[0], keys, (rounds-1)*keys)
		}
	}
	// offset/N is the first retained record at or after N.
	for n, want := range map[int]string{
		(rounds-1)*keys + 4: latest[4],
		5:                   latest[0],
		(rounds-1)*keys - 1: latest[0],
	} {
		if got := m.ok(fmt.Sprintf(`head -n1 "$M/cmp/0/offset/%d"`, n)); got != want+"\n" {
			t.Errorf("head -n1 offset/%d = %q, want %q", n, got, want)
		}
	}

	// tail -f read the generation it opened, whose segments the cleaner
	// rewrote; tail -F, checking data by name, found the same st_ino and
	// kept following: every line written, once, in order.
	for i, mode := range modes {
		tailOut := filepath.Join(outDir, "tail"+mode)
		if !mntWaitFor(30*time.Second, func() bool {
			b, _ := os.ReadFile(tailOut)
			return strings.Count(string(b), "\n") >= keys*rounds
		}) {
			t.Errorf("tail %s printed %d of %d lines", mode, strings.Count(readFile(t, tailOut), "\n"), keys*rounds)
		}
		time.Sleep(300 * time.Millisecond)
		tails[i].stop()
		tailed := mntLines(readFile(t, tailOut))
		if len(tailed) != keys*rounds {
			t.Errorf("tail %s printed %d lines, want %d", mode, len(tailed), keys*rounds)
		}
		for i, l := range tailed {
			if want := fmt.Sprintf("k%04d=r%03d-k%04d", i%keys+1, i/keys+1, i%keys+1); l != want {
				t.Fatalf("tail %s line %d is %q, want %q: lost or repeated under compaction", mode, i, l, want)
			}
		}
	}

	// A line without a key is refused, through the mount and through
	// Produce, and appends nothing.
	m.fails(`echo nokey >> "$M/cmp/0/data"`, "Invalid argument")
	cl := kafkaClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res := cl.ProduceSync(ctx, &kgo.Record{Topic: "cmp", Partition: 0, Value: []byte("no key")})
	if err := res.FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
		t.Errorf("Produce without a key: %v, want INVALID_RECORD", err)
	}
	if end := m.status("cmp")["log.end.offset"]; end != keys*rounds {
		t.Errorf("refused records moved the log end to %d", end)
	}

	// Tombstones: "KEY=" deletes a key. After delete.retention.ms (300
	// ms, short as the length is not the point: it and segment.ms were
	// 1 s, which this test waited out three times) the tombstones
	// themselves are gone, without further writes.
	m.ok(`for k in $(seq 1 100); do printf 'k%04d=\n' $k; done >> "$M/cmp/0/data"`)
	left := latest[100:]
	if !mntWaitFor(30*time.Second, func() bool {
		got = mntLines(m.ok(`cat "$M/cmp/0/data"`))
		return slices.Equal(got, left)
	}) {
		t.Fatalf("after 100 tombstones, data has %d lines (first %q), want the %d live keys; status %v\n%s",
			len(got), got[0], len(left), m.status("cmp"), m.daemonLog())
	}
	tot2 := m.cleanerTotals("compaction", "cmp-0")
	t.Logf("tombstones: %d more records removed (100 values, 100 tombstones)", tot2.recordsRemoved-tot.recordsRemoved)
	if tot2.recordsRemoved-tot.recordsRemoved != 200 {
		t.Errorf("the cleaner logged %d records removed for the tombstones, want 200", tot2.recordsRemoved-tot.recordsRemoved)
	}
	recs = kafkaConsumeAll(t, addr, "cmp", 0, keys*rounds-1)
	if len(recs) != len(left) || recs[0].Offset != int64((rounds-1)*keys+100) {
		t.Errorf("Kafka consumer after the tombstones: %d records from offset %d", len(recs), lastOffset(recs[:1]))
	}
}

// TestCompactionProducedKeys: on a compacted topic without a key
// separator, the keys come from the producer. 200 keys × 10 updates
// produced through Kafka converge to the 200 latest values, through `cat
// data` (values only) and through a Kafka consumer (keys, values and the
// original offsets); a produced null value is a tombstone and its key
// goes after delete.retention.ms; ListOffsets still answers 0 and the log
// end.
func TestCompactionProducedKeys(t *testing.T) {
	const keys, rounds = 200, 10
	addr := kafkaFreeAddr(t)
	m := mntNew(t, append([]string{"--kafka-listen", addr}, cleanerFlags...)...)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/pk" && printf 'cleanup.policy=compact\nsegment.bytes=8192\nsegment.ms=500\nmin.cleanable.dirty.ratio=0.01\ndelete.retention.ms=500\nfile.delete.delay.ms=0\n' > "$M/pk/config"`)
	cl := kafkaClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for r := 0; r < rounds; r++ {
		var recs []*kgo.Record
		for k := 0; k < keys; k++ {
			recs = append(recs, &kgo.Record{Topic: "pk", Partition: 0,
				Key: []byte(fmt.Sprintf("key%03d", k)), Value: []byte(fmt.Sprintf("round %d of key%03d", r, k))})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce round %d: %v", r, err)
		}
	}
	// Tombstones for the first ten keys.
	var tomb []*kgo.Record
	for k := 0; k < 10; k++ {
		tomb = append(tomb, &kgo.Record{Topic: "pk", Partition: 0, Key: []byte(fmt.Sprintf("key%03d", k))})
	}
	if err := cl.ProduceSync(ctx, tomb...).FirstErr(); err != nil {
		t.Fatalf("produce tombstones: %v", err)
	}
	const end = keys*rounds + 10
	var want []string
	for k := 10; k < keys; k++ {
		want = append(want, fmt.Sprintf("round %d of key%03d", rounds-1, k))
	}
	var got []string
	if !mntWaitFor(30*time.Second, func() bool {
		got = mntLines(m.ok(`cat "$M/pk/0/data"`))
		return slices.Equal(got, want)
	}) {
		t.Fatalf("cat data has %d lines (first %q), want the %d latest values; status %v", len(got), got[0], len(want), m.status("pk"))
	}
	recs := kafkaConsumeAll(t, addr, "pk", 0, int64((rounds-1)*keys+keys-1))
	if len(recs) != len(want) {
		t.Fatalf("Kafka consumer got %d records, want %d", len(recs), len(want))
	}
	for i, r := range recs {
		k := i + 10
		if r.Offset != int64((rounds-1)*keys+k) || string(r.Key) != fmt.Sprintf("key%03d", k) || string(r.Value) != want[i] {
			t.Fatalf("record %d: offset %d %s=%s, want offset %d key%03d=%s", i, r.Offset, r.Key, r.Value, (rounds-1)*keys+k, k, want[i])
		}
	}
	if lo, hi := kafkaListOffset(t, addr, "pk", -2), kafkaListOffset(t, addr, "pk", -1); lo != 0 || hi != end {
		t.Errorf("ListOffsets: earliest %d, latest %d; want 0 and %d", lo, hi, end)
	}
	tot := m.cleanerTotals("compaction", "pk-0")
	t.Logf("compaction: %d passes, %d segments rewritten, %d records removed, %d bytes freed",
		tot.passes, tot.segmentsCleaned, tot.recordsRemoved, tot.bytesFreed)
	if tot.recordsRemoved != end-int64(len(want)) {
		t.Errorf("the cleaner logged %d records removed, want %d", tot.recordsRemoved, end-len(want))
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCompactionKeepsEmptyKey: on a compacted topic with key.separator
// "=", the line "=empty" has an empty key, which Kafka keeps apart from a
// null one (a record without a key, which the cleaner drops). The cleaner
// made the empty key null when it rebuilt the record's batch without a
// superseded record: cat data then read "empty", and the next pass
// dropped the line.
func TestCompactionKeepsEmptyKey(t *testing.T) {
	m := mntNew(t, cleanerFlags...)
	m.ok(`mkdir "$M/ek" && printf 'cleanup.policy=compact\nkey.separator==\nsegment.ms=300\nmin.cleanable.dirty.ratio=0.01\nfile.delete.delay.ms=0\n' > "$M/ek/config"`)
	// One write, one batch (bash's printf writes a line at a time, cat
	// the file at once): k=1 in it is superseded by the next write, so
	// the cleaner rebuilds the batch, keeping "=empty".
	in := filepath.Join(t.TempDir(), "in")
	if err := os.WriteFile(in, []byte("=empty\nk=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m.ok(`cat "` + in + `" >> "$M/ek/0/data" && echo k=2 >> "$M/ek/0/data"`)
	// The idle active segment rolls after segment.ms, and is cleaned:
	// first k=1 goes; then, after two values of z, z=1 goes, in a pass
	// that rewrites the whole log again.
	for _, gone := range []string{"k=1\n", "z=1\n"} {
		var got string
		if !mntWaitFor(30*time.Second, func() bool {
			got = m.ok(`cat "$M/ek/0/data"`)
			return !strings.Contains(got, gone)
		}) {
			t.Fatalf("%q not compacted away in 30 s: data reads %q", gone, got)
		}
		if !strings.HasPrefix(got, "=empty\nk=2\n") {
			t.Fatalf("once %q is compacted away data reads %q, want it to start with %q", gone, got, "=empty\nk=2\n")
		}
		if gone == "k=1\n" {
			m.ok(`echo z=1 >> "$M/ek/0/data" && echo z=2 >> "$M/ek/0/data"`)
		}
	}
}
