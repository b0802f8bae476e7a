package tests

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFaultPowerCut is F2: the power cut. The data dir is on a loop xfs;
// under the mixed load (with the retention and compaction topics of
// faultCleanerLoad) in durable mode (every writer acknowledges a line
// only after fsync returned; the Kafka topic flushes before every acks=-1
// response) `xfs_io -x -c shutdown` stops the filesystem without flushing
// its log, the daemon is SIGKILLed, the filesystem is unmounted and
// mounted again (journal replay: what was not fsynced is gone), and
// `segfs mount` restarts onto the dead mount. Oracle: every fsync-acked
// line is there, once, in order; the torn tail was truncated.
// SEGFS_FAULT_F2 sets the count (default 5).
func TestFaultPowerCut(t *testing.T) {
	rounds := faultRounds(t, "F2", 5)
	disk := faultLoopDisk(t, "xfs", 512+rounds*4)
	r := faultNewRig(t, filepath.Join(disk.dir, "data"), faultCleanerFlags...)
	r.lastRound = rounds - 1
	began := time.Now()
	for i := 0; i < rounds; i++ {
		if i%faultEpoch == 0 {
			r.epochStart(i, began)
			faultMixedLoad(r, fmt.Sprintf("-%d", i/faultEpoch), true)
			faultCleanerLoad(r, fmt.Sprintf("-%d", i/faultEpoch), true)
			// acks=-1 with flush.messages=1: the produce response comes
			// after the fsync.
			r.writers[4].durable = true
		}
		r.rounds = i
		r.startReaders(r.writers[0].topic, "")
		r.startWriters()
		r.waitProgress(3)
		time.Sleep(time.Duration(r.rng.IntN(200)) * time.Millisecond)
		disk.shutdown()
		r.killDaemon()
		r.faults++
		r.stopClients(time.Second)
		disk.cycle()
		r.restart()
		r.oracle(false)
	}
	r.figures("F2")
	if r.ackedChecked == 0 {
		t.Fatal("nothing was acknowledged: the test proves nothing")
	}
	r.requireCleaners()
}

// TestFaultBackingShutdown is F9 with a live daemon: the backing xfs is
// shut down under durable writers (every later I/O on it is EIO). Appends
// fail with EIO and the partition is fenced; reads through the mount give
// the stored bytes or EIO, never garbage; SIGTERM still stops the daemon.
// After the reboot the oracle holds. 5 rounds (SEGFS_FAULT_F9).
func TestFaultBackingShutdown(t *testing.T) {
	rounds := faultRounds(t, "F9", 5)
	disk := faultLoopDisk(t, "xfs", 512)
	r := faultNewRig(t, filepath.Join(disk.dir, "data"), "--unmount-grace", "500ms")
	faultMixedLoad(r, "", true)
	r.writers[4].durable = true
	for i := 0; i < rounds; i++ {
		r.rounds = i
		r.startWriters()
		r.waitProgress(3)
		before := r.m.ok(`cat "$M/mix/0/data"`)
		disk.shutdown()
		r.faults++
		// Writers stop by themselves, with EIO.
		for _, w := range r.writers {
			if w.kind == "kafka" {
				continue
			}
			if !w.proc.wait(30 * time.Second) {
				t.Fatalf("writer %s still running 30s after the backing filesystem shut down", w.id)
			}
			if w.proc.err == nil {
				continue // it wrote its count before the shutdown
			}
			if e := w.proc.errb.String(); !strings.Contains(e, "Input/output error") && !strings.Contains(e, "EIO") {
				t.Errorf("writer %s stopped with %q, want EIO", w.id, e)
			}
		}
		r.stopClients(time.Second)
		// Fenced: a new append fails too.
		r.m.fails(`echo late >> "$M/mix/0/data"`, "Input/output error")
		// Reads: the bytes stored, or EIO.
		res := r.m.sh(`cat "$M/mix/0/data"`)
		if res.code == 0 {
			if !strings.HasPrefix(res.out, before) {
				t.Fatalf("after the shutdown, data reads %d bytes that do not start with the %d read before", len(res.out), len(before))
			}
		} else if !strings.Contains(res.err, "Input/output error") {
			t.Fatalf("reading after the shutdown failed with %q, want EIO or data", res.err)
		}
		syscall.Kill(r.m.pid, syscall.SIGTERM)
		if !waitExit(r.m.pid, 30*time.Second) {
			t.Fatalf("daemon did not exit 30s after SIGTERM on a dead backing filesystem")
		}
		disk.cycle()
		r.restart()
		r.oracle(false)
	}
	r.figures("F9")
}

// TestFaultBackingReadOnly is F9 with the backing filesystem turned
// read-only under the daemon: ext4 with errors=remount-ro, and an error
// raised through /sys/fs/ext4/DEV/trigger_fs_error (a plain `mount -o
// remount,ro` is refused while segments are open for writing). Appends
// and fsync fail with EROFS or EIO (ext4 answers fsync with EIO after the
// error; the fence then keeps that cause), reads go on and return what is stored. A
// restart on the read-only filesystem is refused with a message naming
// the cause (segfs has no read-only mode); after the filesystem is
// writable again, everything fsync-acked is there. 5 rounds.
func TestFaultBackingReadOnly(t *testing.T) {
	rounds := faultRounds(t, "F9", 5)
	disk := faultLoopDisk(t, "ext4", 256)
	faultMust(t, 30, "umount", disk.dir)
	disk.mount("errors=remount-ro")
	trigger := filepath.Join("/sys/fs/ext4", filepath.Base(disk.dev), "trigger_fs_error")
	if _, err := os.Stat(trigger); err != nil {
		t.Skipf("no %s: %v", trigger, err)
	}
	r := faultNewRig(t, filepath.Join(disk.dir, "data"), "--unmount-grace", "500ms")
	faultMixedLoad(r, "", true)
	r.writers[4].durable = true
	for i := 0; i < rounds; i++ {
		r.rounds = i
		r.startWriters()
		r.waitProgress(3)
		if err := os.WriteFile(trigger, []byte("1"), 0); err != nil {
			t.Fatal(err)
		}
		r.faults++
		for _, w := range r.writers {
			if w.kind == "kafka" {
				continue
			}
			if !w.proc.wait(30 * time.Second) {
				t.Fatalf("writer %s still running 30s after the backing filesystem went read-only", w.id)
			}
			if w.proc.err == nil {
				continue // it wrote its count before the error
			}
			// EROFS from a write, or EIO from an fsync (ext4 answers an
			// fsync after the error with EIO); the fence keeps the cause.
			if e := w.proc.errb.String(); !strings.Contains(e, "Read-only file system") && !strings.Contains(e, "EROFS") &&
				!strings.Contains(e, "Input/output error") && !strings.Contains(e, "EIO") {
				t.Errorf("writer %s stopped with %q, want EROFS or EIO", w.id, e)
			}
		}
		r.stopClients(time.Second)
		for _, cmd := range []string{`echo late >> "$M/mix/0/data"`, `sync "$M/mix/0/data"`} {
			if res := r.m.sh(cmd); res.code == 0 || !strings.Contains(res.err, "Read-only file system") && !strings.Contains(res.err, "Input/output error") {
				t.Fatalf("%s on a fenced partition: exit %d, %q; want EROFS or EIO", cmd, res.code, res.err)
			}
		}
		// Reads go on: every fsync-acked line is readable right now.
		r.oracleReadOnlyDurable()
		r.m.unmount()
		out, err := faultRun(t, 30, segfsBin, append(append([]string{"mount"}, r.mountArgs...), r.m.data, r.m.dir)...)
		if err == nil {
			r.m.pid = r.m.findDaemon()
			t.Fatalf("segfs mount on a read-only data dir succeeded: %s", out)
		}
		if !strings.Contains(out, "read-only file system") {
			t.Errorf("segfs mount on a read-only data dir said %q, want the cause", out)
		}
		faultMust(t, 30, "umount", disk.dir)
		disk.mount("errors=remount-ro")
		r.m.mount(r.mountArgs...)
		r.oracle(false)
	}
	r.figures("F9-ro")
}

// oracleReadOnly checks that every acknowledged line is readable through
// the mount, without adopting anything (the filesystem is read-only).
func (r *faultRig) oracleReadOnly() {
	t := r.t
	t.Helper()
	for _, w := range r.writers {
		p := r.readPartition(w.topic)
		acked := w.acked(t)
		var n int64
		for _, l := range p.lines {
			if n < acked && w.matches(n+1, l) {
				n++
			}
		}
		if n < acked {
			t.Fatalf("%s: %d of %d acknowledged lines readable on the read-only filesystem", w.id, n, acked)
		}
	}
}

// oracleReadOnlyDurable is the read check after the backing filesystem
// failed under the daemon. ext4 throws away dirty pages whose writeback
// fails when it goes read-only, so bytes that were only in the page cache
// (write-acked, not fsync-acked) may read back as holes: the batch CRC
// catches them and the read fails with EIO, never garbage. Everything
// before the last fsync is on disk and must read back; the lines of durable
// writers (acked only after fsync) must all be in what reads back before
// any error. If the whole file reads, every acked line must be there.
func (r *faultRig) oracleReadOnlyDurable() {
	t := r.t
	t.Helper()
	for _, w := range r.writers {
		tmp := filepath.Join(r.workDir, "ro-"+w.topic)
		res := r.m.sh(fmt.Sprintf(`cat %q > %q`, r.m.path(w.topic, "0", "data"), tmp))
		if res.code != 0 && !strings.Contains(res.err, "Input/output error") {
			t.Fatalf("reading %s after the filesystem went read-only: %q", w.topic, res.err)
		}
		text, err := os.ReadFile(tmp)
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.IndexByte(text, 0); i >= 0 {
			t.Fatalf("%s: NUL byte at %d of data", w.topic, i)
		}
		if res.code != 0 && !w.durable {
			t.Logf("%s: EIO after %d readable bytes (unsynced pages lost with the filesystem); %s is not durable", w.topic, len(text), w.id)
			continue
		}
		acked := w.acked(t)
		var n int64
		for _, l := range mntLines(string(text)) {
			if n < acked && w.matches(n+1, l) {
				n++
			}
		}
		if n < acked {
			t.Fatalf("%s: %d of %d acknowledged lines readable on the read-only filesystem (read %s)", w.id, n, acked,
				map[bool]string{true: "stopped by EIO", false: "whole"}[res.code != 0])
		}
	}
}
