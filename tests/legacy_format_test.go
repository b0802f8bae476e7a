package tests

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/segfs/segfs/logstore/record/recordtest"
)

// legacyThree is three uncompressed messages, offsets from base,
// timestamps 1600000000000+i (ignored for magic 0), values hello1..3.
func legacyThree(magic byte, base int64) []byte {
	var b []byte
	for i := range 3 {
		b = append(b, recordtest.LegacyMessage(magic, 0, base+int64(i), 1_600_000_000_000+int64(i), nil, []byte("hello"+strconv.Itoa(i+1)))...)
	}
	return b
}

// legacyDataDir writes what a Kafka broker that once ran with
// log.message.format.version < 0.11 leaves after a clean shutdown: a
// partition old-0 whose one segment holds three magic-1 messages, its
// empty indexes, the clean-shutdown marker and a recovery point at the
// log end. It returns the data directory and the .log path.
func legacyDataDir(t *testing.T, magic byte) (data, log string) {
	t.Helper()
	data = t.TempDir()
	pdir := filepath.Join(data, "old-0")
	if err := os.Mkdir(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	log = filepath.Join(pdir, "00000000000000000000.log")
	for path, b := range map[string][]byte{
		log: legacyThree(magic, 0),
		filepath.Join(pdir, "00000000000000000000.index"):       nil,
		filepath.Join(pdir, "00000000000000000000.timeindex"):   nil,
		filepath.Join(data, ".kafka_cleanshutdown"):             nil,
		filepath.Join(data, "recovery-point-offset-checkpoint"): []byte("0\n1\nold 0 3\n"),
	} {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return data, log
}

// TestRecoveryRefusesLegacyFormat: a data directory whose segment holds
// magic 0 or 1 messages (from a Kafka broker that once ran with an old
// log.message.format.version; Kafka 3.x still reads them) was destroyed by
// the mount: read as v2 batches the messages were garbage ("batch length
// 28 below minimum 49"), and recovery truncated the .log to 0 bytes, even
// after a clean shutdown. Those messages carry a valid CRC-32, so they
// are evidence of data, not a torn write: the mount (daemon and
// foreground) and `segfs serve` now refuse to start, naming the file, the
// position and the format, and leave every file as it was.
func TestRecoveryRefusesLegacyFormat(t *testing.T) {
	mntRequireFuse(t)
	for _, magic := range []byte{1, 0} {
		data, log := legacyDataDir(t, magic)
		mp := filepath.Join(t.TempDir(), "mnt")
		if err := os.Mkdir(mp, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if mntIsMounted(mp) {
				exec.Command("umount", "-l", mp).Run()
			}
		})
		// The one file a refused mount writes is its daemon log, which
		// cliDirSnapshot leaves out; made beforehand, so that creating
		// it does not move the directory's mtime.
		if err := os.WriteFile(filepath.Join(data, "segfs-mount.out"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		v := strconv.Itoa(int(magic))
		want := "message format v" + v + " (magic " + v + ") at position 0 in " + log + ": segfs reads only magic 2 record batches"
		before := cliDirSnapshot(t, data)
		for _, args := range [][]string{
			{"mount", data, mp},
			{"mount", "--foreground", data, mp},
			{"serve", "--listen", "127.0.0.1:19321", data},
		} {
			cliRefused(t, mp, want, args...)
			if after := cliDirSnapshot(t, data); after != before {
				t.Fatalf("segfs %q refused the data directory but changed it:\n--- before\n%s\n--- after\n%s", args, before, after)
			}
		}
	}
}

// TestRecoveryTornTailMagicOne: recovery still truncates a torn tail
// whose byte at the magic position happens to be 1 (a size that fits, a
// CRC that does not match), after a crash; and the same bytes with their
// CRC intact, old messages after the v2 batches of the active segment
// (a broker whose format was downgraded), make the mount refuse to start
// instead of cutting them, after a clean shutdown, the .log left as it
// was. The mount used to truncate both.
func TestRecoveryTornTailMagicOne(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/t" && seq 3 >> "$M/t/0/data"`)
	m.unmount()
	log := filepath.Join(m.data, "t-0", "00000000000000000000.log")
	v2, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	appendTo := func(b []byte) {
		t.Helper()
		f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(b); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}

	// Torn: the CRC of the first message is one off. A crash, so
	// recovery checks the active segment.
	torn := legacyThree(1, 3)
	binary.BigEndian.PutUint32(torn[12:], binary.BigEndian.Uint32(torn[12:])+1)
	appendTo(torn)
	if err := os.Remove(filepath.Join(m.data, ".kafka_cleanshutdown")); err != nil {
		t.Fatal(err)
	}
	m2 := mntAt(t, m.data)
	if got := m2.ok(`cat "$M/t/0/data"`); got != "1\n2\n3\n" {
		t.Fatalf("after recovering the torn tail: %q", got)
	}
	if fi, err := os.Stat(log); err != nil || fi.Size() != int64(len(v2)) {
		t.Fatalf("torn tail not truncated to the %d bytes of v2 batches: %v %v", len(v2), fi.Size(), err)
	}
	m2.unmount()

	// Real old messages: refused, after a clean shutdown too.
	appendTo(legacyThree(1, 3))
	want, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	mp := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mp, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if mntIsMounted(mp) {
			exec.Command("umount", "-l", mp).Run()
		}
	})
	cliRefused(t, mp, "message format v1 (magic 1) at position "+strconv.Itoa(len(v2))+" in "+log+": segfs reads only magic 2 record batches", "mount", m.data, mp)
	if got, err := os.ReadFile(log); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the refused mount changed %s: %d bytes, was %d (%v)", log, len(got), len(want), err)
	}
	r := cliRun(t, "verify", m.data)
	if w := "error: " + log + ": position " + strconv.Itoa(len(v2)) + ": message format v1 (magic 1), 3 messages of format v0/v1 in this segment"; r.Code != 1 || !strings.Contains(r.Stdout, w) {
		t.Errorf("verify: exit %d; want exit 1 and %q\n%s%s", r.Code, w, r.Stdout, r.Stderr)
	}
}

// TestVerifyLegacyFormat: verify reported a segment of magic 1 messages
// as "corrupt batch: batch length 28 below minimum 49; the 120 bytes from
// here on cannot be read", which reads as damage recovery would cut. It
// is now one error naming the file, the position and the format (and
// what to do), and verify reads on: the offsets of the messages count,
// so the checkpoint at offset 3 is not "past the log end".
func TestVerifyLegacyFormat(t *testing.T) {
	data, log := legacyDataDir(t, 1)
	r := cliRun(t, "verify", data)
	want := "error: " + log + ": position 0: message format v1 (magic 1), 3 messages of format v0/v1 in this segment: segfs reads only magic 2 record batches"
	if r.Code != 1 || !strings.Contains(r.Stdout, want) {
		t.Fatalf("verify: exit %d; want exit 1 and %q\n%s%s", r.Code, want, r.Stdout, r.Stderr)
	}
	if n := strings.Count(r.Stdout, "error:"); n != 1 || strings.Contains(r.Stdout, "corrupt") {
		t.Errorf("verify: want exactly the one error about the format\n%s", r.Stdout)
	}
	if want := "old-0: 1 error, 0 warnings (1 segment, 3 batches, log start 0, log end 3, 120 bytes)"; !strings.Contains(r.Stdout, want) {
		t.Errorf("verify: want %q\n%s", want, r.Stdout)
	}
}

// TestDumpLogLegacyFormat: dump-log printed "Found 120 invalid bytes" and
// "corrupt batch" for a segment of magic 0 or 1 messages, which Kafka's
// DumpLogSegments prints. It now prints them as Kafka does (a batch line
// starting "offset:", NoTimestampType for magic 0; with deep iteration the
// message as its record), with a note that segfs does not serve them, and
// exits 0. The messages inside a compressed one are not shown: that is
// said, and the exit status is non-zero.
func TestDumpLogLegacyFormat(t *testing.T) {
	_, log := legacyDataDir(t, 1)
	r := cliRun(t, "dump-log", "--print-data-log", log)
	crc := func(pos int) uint32 {
		b := legacyThree(1, 0)
		return binary.BigEndian.Uint32(b[pos+12:])
	}
	want := "Dumping " + log + "\nLog starting offset: 0\n" +
		"offset: 0 position: 0 CreateTime: 1600000000000 size: 40 magic: 1 compresscodec: none crc: " + strconv.Itoa(int(crc(0))) + " isvalid: true\n" +
		"| offset: 0 CreateTime: 1600000000000 keySize: -1 valueSize: 6 isValid: true crc: " + strconv.Itoa(int(crc(0))) + "} payload: hello1\n" +
		"offset: 1 position: 40 CreateTime: 1600000000001 size: 40 magic: 1 compresscodec: none crc: " + strconv.Itoa(int(crc(40))) + " isvalid: true\n" +
		"| offset: 1 CreateTime: 1600000000001 keySize: -1 valueSize: 6 isValid: true crc: " + strconv.Itoa(int(crc(40))) + "} payload: hello2\n" +
		"offset: 2 position: 80 CreateTime: 1600000000002 size: 40 magic: 1 compresscodec: none crc: " + strconv.Itoa(int(crc(80))) + " isvalid: true\n" +
		"| offset: 2 CreateTime: 1600000000002 keySize: -1 valueSize: 6 isValid: true crc: " + strconv.Itoa(int(crc(80))) + "} payload: hello3\n"
	if r.Code != 0 || r.Stdout != want {
		t.Errorf("dump-log: exit %d\n--- got\n%s--- want\n%s--- stderr\n%s", r.Code, r.Stdout, want, r.Stderr)
	}
	if w := "note: message format v1 (magic 1) at position 0 in " + log + ": segfs reads only magic 2 record batches"; !strings.Contains(r.Stderr, w) {
		t.Errorf("dump-log stderr %q; want %q", r.Stderr, w)
	}

	// Magic 0: no timestamp; a key.
	dir := t.TempDir()
	v0 := filepath.Join(dir, "00000000000000000005.log")
	msg := recordtest.LegacyMessage(0, 0, 5, 0, []byte("k"), []byte("v"))
	if err := os.WriteFile(v0, msg, 0o644); err != nil {
		t.Fatal(err)
	}
	r = cliRun(t, "dump-log", "--print-data-log", v0)
	c := strconv.Itoa(int(binary.BigEndian.Uint32(msg[12:])))
	want = "Dumping " + v0 + "\nLog starting offset: 5\n" +
		"offset: 5 position: 0 NoTimestampType: -1 size: " + strconv.Itoa(len(msg)) + " magic: 0 compresscodec: none crc: " + c + " isvalid: true\n" +
		"| offset: 5 NoTimestampType: -1 keySize: 1 valueSize: 1 isValid: true crc: " + c + "} key: k payload: v\n"
	if r.Code != 0 || r.Stdout != want {
		t.Errorf("dump-log v0: exit %d\n--- got\n%s--- want\n%s--- stderr\n%s", r.Code, r.Stdout, want, r.Stderr)
	}

	// A gzip wrapper: its batch line, then a clear refusal to go inside.
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(legacyThree(1, 0))
	zw.Close()
	wrapped := filepath.Join(dir, "00000000000000000000.log")
	msg = recordtest.LegacyMessage(1, 1, 2, 1_600_000_000_002, nil, z.Bytes())
	if err := os.WriteFile(wrapped, msg, 0o644); err != nil {
		t.Fatal(err)
	}
	r = cliRun(t, "dump-log", wrapped)
	if w := "offset: 2 position: 0 CreateTime: 1600000000002 size: " + strconv.Itoa(len(msg)) + " magic: 1 compresscodec: gzip crc: "; r.Code != 0 || !strings.Contains(r.Stdout, w) {
		t.Errorf("dump-log gzip wrapper: exit %d, want 0 and %q\n%s%s", r.Code, w, r.Stdout, r.Stderr)
	}
	r = cliRun(t, "dump-log", "--deep-iteration", wrapped)
	if w := "gzip message at position 0 in " + wrapped + " (message format v1): the messages it wraps are not shown"; r.Code == 0 || !strings.Contains(r.Stderr, w) {
		t.Errorf("dump-log --deep-iteration gzip wrapper: exit %d, want non-zero and %q\n%s%s", r.Code, w, r.Stdout, r.Stderr)
	}
}
