package tests

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestMountWriteBatches: each WRITE the kernel delivers becomes one record
// batch of its complete lines; a line cut by a WRITE boundary (the kernel
// splits a write(2) at max_write, 1 MiB) waits for its rest and lands
// whole; an unfinished last line becomes a record at close; and writes
// land at the end whatever the writer's file offset. Checked in the
// segment files with `segfs dump-log`.
func TestMountWriteBatches(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/wb"`)
	d := `"$M/wb/0/data"`
	want := filepath.Join(t.TempDir(), "want")
	// 1: three lines in one write(2): one batch of three records.
	// 2: 2.7 MB of lines in one write(2) of 4 MiB: split by the kernel
	//    into WRITEs of at most 1 MiB, a batch each (the cuts fall inside
	//    lines).
	// 3: a line written in three pieces, the last without a newline: one
	//    record at close.
	// 4: dd seeking to byte 64 of its O_APPEND descriptor before it
	//    writes: the line still lands at the end.
	m.ok(`printf 'a\nb\nc\n' | dd of=`+d+` oflag=append conv=notrunc bs=1k status=none
seq 1 400000 | dd of=`+d+` oflag=append conv=notrunc bs=4M iflag=fullblock status=none
{ printf 'pie'; sleep 0.1; printf 'ce-'; sleep 0.1; printf 'wise'; } >> `+d+`
echo after-seek | dd of=`+d+` oflag=append conv=notrunc bs=64 seek=1 status=none
{ printf 'a\nb\nc\n'; seq 1 400000; echo piece-wise; echo after-seek; } > `+want, 120)
	m.ok(`cmp ` + d + ` ` + want)
	// fsync(data) (sync(1) calls fsync) makes everything appended durable:
	// the recovery point, below the log end until then, reaches it.
	rp := `sed -n 's/^recovery.point=//p; s/^log.end.offset=//p' "$M/wb/0/status" | paste -sd' '`
	if f := strings.Fields(m.ok(rp)); len(f) != 2 || f[0] == f[1] {
		t.Fatalf("log end and recovery point before fsync: %q, want the recovery point behind", f)
	}
	m.ok(`sync ` + d)
	if f := strings.Fields(m.ok(rp)); len(f) != 2 || f[0] != f[1] {
		t.Fatalf("log end and recovery point after fsync(data): %q, want equal", f)
	}
	m.unmount()
	segs, _ := filepath.Glob(filepath.Join(m.data, "wb-0", "*.log"))
	if len(segs) != 1 {
		t.Fatalf("%d segments, want 1", len(segs))
	}
	out, err := runSegfs(t, "dump-log", segs[0])
	if err != nil {
		t.Fatalf("dump-log: %v\n%.2000s", err, out)
	}
	var counts []int
	var sizes []int64
	for _, l := range mntLines(out) {
		if !strings.HasPrefix(l, "baseOffset: ") {
			continue
		}
		mm := faultBatchRe.FindStringSubmatch(l)
		if mm == nil {
			t.Fatalf("dump-log line %q", l)
		}
		base, _ := strconv.Atoi(mm[1])
		last, _ := strconv.Atoi(mm[2])
		size, _ := strconv.ParseInt(mm[4], 10, 64)
		counts = append(counts, last-base+1)
		sizes = append(sizes, size)
	}
	// seq 1 400000 is 2,688,895 bytes: at least three WRITEs of at most
	// 1 MiB, each cut into batches of at most max.message.bytes.
	n := len(counts)
	if n < 1+3+2 || counts[0] != 3 || counts[n-2] != 1 || counts[n-1] != 1 {
		t.Fatalf("records per batch %v, want [3, the 4 MiB write's, 1, 1]", counts)
	}
	big := 0
	for i, c := range counts[1 : n-2] {
		big += c
		if sizes[1+i] > 1048588 {
			t.Errorf("batch %d is %d bytes, over max.message.bytes", 1+i, sizes[1+i])
		}
	}
	if big != 400000 {
		t.Fatalf("the 4 MiB write's batches hold %d records, want 400000", big)
	}
	t.Logf("the 4 MiB write became %d batches: records %v, bytes %v", n-3, counts, sizes)
}
