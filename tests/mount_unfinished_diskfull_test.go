package tests

// The journal of unfinished lines on a full disk: a write(2) whose entry
// cannot be journaled fails with ENOSPC and is not taken, so that after
// kill -9 the recovered line is exactly the bytes acknowledged before,
// nothing of the refused writes.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// unfinishedDiskFullPy holds an unfinished line, then (after "go" on
// stdin, the disk full) extends it by 4000-byte chunks until one fails,
// then tries a write that completes it and starts another line of 4000
// bytes (whose entry, like the failed extend's, needs a page the disk no
// longer has: a short one fitted in the journal's last page and was
// rightly taken), and
// prints each result and the bytes acknowledged in all; after the next
// "go" (room again) it extends the line once more.
const unfinishedDiskFullPy = `
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
acked = os.write(fd, b"held-")
print("ready", flush=True)
sys.stdin.readline()
res = []
for k in range(2000):
    try:
        acked += os.write(fd, b"x%04d" % k + b"y" * 3995)
    except OSError as e:
        res.append("extend:%d:%d" % (k, e.errno))
        break
try:
    acked += os.write(fd, b"-end\n" + b"n" * 4000)
    res.append("complete:ok")
except OSError as e:
    res.append("complete:%d" % e.errno)
print(" ".join(res), acked, flush=True)
sys.stdin.readline()
try:
    acked += os.write(fd, b"-more")
    print("more:ok", acked, flush=True)
except OSError as e:
    print("more:%d" % e.errno, acked, flush=True)
sys.stdin.readline()
`

func TestUnfinishedDiskFullKill9(t *testing.T) {
	unfinishedNeedPython3(t)
	for _, fstype := range []string{"tmpfs", "xfs"} {
		t.Run(fstype, func(t *testing.T) {
			var disk string
			if fstype == "tmpfs" {
				disk = faultTmpfs(t, "8m")
			} else {
				disk = faultLoopDisk(t, "xfs", 320).dir
			}
			m := mntAt(t, filepath.Join(disk, "data"))
			m.ok(`mkdir "$M/t" && echo first >> "$M/t/0/data"`)
			py := startUnfinishedPy(t, unfinishedDiskFullPy, m.path("t", "0", "data"))
			free := unfinishedFillDisk(t, disk)
			l := py.step()
			f := strings.Fields(l)
			if len(f) != 3 {
				t.Fatalf("writer: %q", l)
			}
			t.Logf("on the full disk: %s", l)
			enospc := strconv.Itoa(int(syscall.ENOSPC))
			if !strings.HasPrefix(f[0], "extend:") || !strings.HasSuffix(f[0], ":"+enospc) {
				t.Fatalf("the extends of the held line never failed with ENOSPC: %q", l)
			}
			if f[1] != "complete:"+enospc {
				t.Fatalf("the write that completes the line: %s, want ENOSPC", f[1])
			}
			free()
			// Room again: the journal takes the next extend.
			l = py.step()
			f2 := strings.Fields(l)
			if len(f2) != 2 || f2[0] != "more:ok" {
				t.Fatalf("extend once the disk has room: %q", l)
			}
			acked, _ := strconv.Atoi(f2[1])
			m.kill9()
			m.mount()
			recs := recordsOf(m, "t")
			if len(recs) != 2 || recs[0] != "first" {
				t.Fatalf("records %d, want first and the held line", len(recs))
			}
			if len(recs[1]) != acked || !strings.HasPrefix(recs[1], "held-") {
				t.Fatalf("recovered line of %d bytes (%.20q...), want the %d acknowledged", len(recs[1]), recs[1], acked)
			}
			k, _ := strconv.Atoi(strings.TrimPrefix(strings.Split(f[0], ":")[1], "extend"))
			if want := "held-" + func() string {
				var b strings.Builder
				for i := 0; i < k; i++ {
					fmt.Fprintf(&b, "x%04d%s", i, strings.Repeat("y", 3995))
				}
				return b.String()
			}() + "-more"; recs[1] != want {
				t.Fatalf("recovered line is not the %d acknowledged extends and -more", k)
			}
			m.ok(`echo after >> "$M/t/0/data"`)
			m.unmount()
			journalEmpty(t, filepath.Join(m.data, "t-0"))
		})
	}
}

// unfinishedFillDisk fills dir's filesystem: one file takes all but a
// little of the free space (fallocate, so nothing is written), then
// small writes take the rest until ENOSPC. It returns the func that
// removes the files, giving the room back.
func unfinishedFillDisk(t *testing.T, dir string) (free func()) {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	big, small := filepath.Join(dir, "filler-big"), filepath.Join(dir, "filler-small")
	fb, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := os.Create(small)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	if free := int64(st.Bavail)*st.Bsize - 64<<10; free > 0 {
		if err := syscall.Fallocate(int(fb.Fd()), 0, 0, free); err != nil {
			t.Fatalf("fallocate: %v", err)
		}
	}
	fb.Close()
	buf := make([]byte, 4096)
	for i := 0; i < 1<<16; i++ {
		if _, err := fs.Write(buf); err != nil {
			break
		}
	}
	// xfs takes delayed allocations back at fsync: fill what it freed.
	fs.Sync()
	for i := 0; i < 1<<16; i++ {
		if _, err := fs.Write(buf[:512]); err != nil {
			break
		}
	}
	return func() {
		os.Remove(big)
		os.Remove(small)
	}
}

// A mount on a full disk whose partition has a journal of unfinished
// lines to recover cannot rewrite the journal (its temp file gets
// ENOSPC). It used to fence the partition until the next restart, so
// that `echo room >> data` still failed with "No space left on device"
// once the disk had room again, against the README's promise for ENOSPC
// (writes succeed again once space returns). The recovery is now retried
// before each append (logstore/unfinished.go, recoverPendingLocked): the
// appends fail with ENOSPC while the disk is full, and once it has room
// the held line is stored first, then the new one.
func TestUnfinishedRecoveryOnFullDiskWritableOnceRoom(t *testing.T) {
	disk := faultTmpfs(t, "8m")
	m := mntAt(t, filepath.Join(disk, "data"))
	m.ok(`mkdir "$M/t" && echo first >> "$M/t/0/data"`)
	h := startUnfinishedHolder(t, m, `exec 3>>"$M/t/0/data"; printf held >&3`)
	m.kill9()
	h.stop()
	free := unfinishedFillDisk(t, disk)
	m.mount()
	m.fails(`echo full >> "$M/t/0/data"`, "No space left on device")
	free()
	if r := m.sh(`echo room >> "$M/t/0/data"`); r.code != 0 {
		t.Fatalf("append once the disk has room again: %s\n%s", r.err, m.daemonLog())
	}
	wantRecords(t, m, "t", "records", "first|held|room")
}

// A write(2) that makes the unfinished line too long fails with EMSGSIZE
// and the line is dropped; on a full disk the journal entry that drops it
// cannot be written. That line used to stay in the journal, outlive the
// clean unmount, and come back as a record at the next mount. The
// journal now forgets the line in memory and repairs its file (here
// emptied at once, no other writer having a line; else rewritten at the
// writer's next write, its release, the journal's next entry or the
// partition's clean close): fs/data.go journalDrop, logstore/unfinished.go
// LineWriter.Drop. The line's 4043 bytes and its entry's 53 of headers
// (logstore/unfinished.go) make the journal exactly one tmpfs page, so
// the drop's entry needs a new one.
func TestUnfinishedDroppedLineOnFullDiskStaysDropped(t *testing.T) {
	unfinishedNeedPython3(t)
	disk := faultTmpfs(t, "8m")
	m := mntAt(t, filepath.Join(disk, "data"))
	m.ok(`mkdir "$M/t" && echo max.message.bytes=8192 > "$M/t/config" && echo first >> "$M/t/0/data"`)
	py := unfinishedDropOnFullDisk(t, m, disk, 4043)
	// Its close.
	py.step()
	m.unmount()
	if fi, err := os.Stat(filepath.Join(m.data, "t-0", "segfs-unfinished-lines")); err != nil || fi.Size() != 0 {
		t.Errorf("journal after a clean unmount: %v, want an empty file", func() any {
			if err != nil {
				return err
			}
			return fmt.Sprintf("%d bytes", fi.Size())
		}())
	}
	m.mount()
	if got := recordsOf(m, "t"); len(got) != 1 || got[0] != "first" {
		t.Fatalf("%d records after the remount (the last %d bytes), want only first: the refused line came back", len(got), len(got[len(got)-1]))
	}
}

// As TestUnfinishedDroppedLineOnFullDiskStaysDropped, while another
// writer holds a line: the journal cannot simply be emptied when the
// drop's entry fails, so the writer's next write, once the disk has room,
// rewrites it (LineWriter.Resync). A kill -9 after that write recovers
// the other writer's line and not the dropped one. The held line's entry
// (57 bytes) and the dropped line's (3986 bytes and 53 of headers) make
// the journal exactly one tmpfs page, so the drop's entry needs a new one.
func TestUnfinishedDroppedLineOnFullDiskBesideHeldLine(t *testing.T) {
	unfinishedNeedPython3(t)
	disk := faultTmpfs(t, "8m")
	m := mntAt(t, filepath.Join(disk, "data"))
	m.ok(`mkdir "$M/t" && echo max.message.bytes=8192 > "$M/t/config" && echo first >> "$M/t/0/data"`)
	h := startUnfinishedHolder(t, m, `exec 3>>"$M/t/0/data"; printf held >&3`)
	py := unfinishedDropOnFullDisk(t, m, disk, 3986)
	m.kill9()
	h.stop()
	py.stop()
	m.mount()
	if got := strings.Join(recordsOf(m, "t"), "|"); got != "first|held" {
		t.Fatalf("records after kill -9 and the remount: %.80q, want first|held (the dropped line must not come back)", got)
	}
}

// TestUnfinishedRecoveryOnFullDiskKafkaProduce: as
// TestUnfinishedRecoveryOnFullDiskWritableOnceRoom, through a franz-go
// producer: while the recovery cannot be done, its Produce is answered
// with the retriable KAFKA_STORAGE_ERROR (not fenced until a restart), and
// once the disk has room the retry lands after the recovered line.
func TestUnfinishedRecoveryOnFullDiskKafkaProduce(t *testing.T) {
	mntRequireFuse(t)
	disk := faultTmpfs(t, "8m")
	addr := kafkaFreeAddr(t)
	m := mntAt(t, filepath.Join(disk, "data"), "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/t" && echo first >> "$M/t/0/data"`)
	h := startUnfinishedHolder(t, m, `exec 3>>"$M/t/0/data"; printf held >&3`)
	m.kill9()
	h.stop()
	free := unfinishedFillDisk(t, disk)
	m.mount("--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	hook := &produceReadHook{read: make(chan struct{}, 1)}
	// No idempotence: allocating a producer id is not what is tested.
	// A KAFKA_STORAGE_ERROR makes the client refresh its metadata before
	// the retry, at most every MetadataMinAge (5 s by default): the retry
	// then came 5 s after the disk had room, which is not what is tested.
	cl := kafkaClient(t, addr, kgo.WithHooks(hook), kgo.RetryTimeout(60*time.Second), kgo.DisableIdempotentWrite(),
		kgo.MetadataMinAge(100*time.Millisecond))
	hook.armed.Store(true)
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		done <- cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: 0, Value: []byte("produced")}).FirstErr()
	}()
	select {
	case <-hook.read:
	case err := <-done:
		t.Fatalf("produce on a full disk returned before any Produce response was read: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("no Produce response within 60s")
	}
	free()
	if err := <-done; err != nil {
		t.Fatalf("produce once the disk has room again (want a retriable error, then success): %v\n%s", err, m.daemonLog())
	}
	wantRecords(t, m, "t", "records", "first|held|produced")
}
