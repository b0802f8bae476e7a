package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/segfs/segfs/logstore"
)

// cliHandBuiltDir writes DATA_DIR/orders-0 with two segments: base 0 holding
// offsets 0-5 in three batches, and base 6 (the active one) holding 6-7.
func cliHandBuiltDir(t *testing.T) (dataDir string, closed, active *cliSegment) {
	t.Helper()
	dataDir = t.TempDir()
	pdir := filepath.Join(dataDir, "orders-0")
	closed = cliWriteSegment(t, pdir, 0, cliThreeBatches())
	active = cliWriteSegment(t, pdir, 6, []cliBatch{{Base: 6, TS: 1700000003000, Values: []string{"x", "y"}}})
	return dataDir, closed, active
}

func TestVerifyHandBuilt(t *testing.T) {
	dataDir, closed, active := cliHandBuiltDir(t)
	r := cliRun(t, "verify", dataDir)
	if r.Code != 0 || !strings.Contains(r.Stdout, "orders-0: ok (2 segments, 4 batches, log start 0, log end 8, ") {
		t.Fatalf("clean dir: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}

	// A partial batch at the end of the active segment is what a crash
	// leaves; recovery truncates it, so it is a warning.
	info, _ := os.Stat(active.Log)
	if err := os.Truncate(active.Log, info.Size()-3); err != nil {
		t.Fatal(err)
	}
	r = cliRun(t, "verify", dataDir)
	if r.Code != 0 || !strings.Contains(r.Stdout, "warning: "+active.Log+": position 0: partial batch at the end of the active segment") {
		t.Errorf("torn active tail: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}

	// A flipped byte in a closed segment is an error naming file and
	// position, and the scan goes on to the next batch.
	cliFlipByte(t, closed.Log, closed.Positions[1]+40)
	r = cliRun(t, "verify", dataDir)
	want := fmt.Sprintf("error: %s: position %d: corrupt batch: CRC mismatch", closed.Log, closed.Positions[1])
	if r.Code == 0 || !strings.Contains(r.Stdout, want) {
		t.Errorf("flipped byte: exit %d, want %q in\n%s%s", r.Code, want, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stderr, " found in "+dataDir) {
		t.Errorf("stderr does not say why the exit status is non-zero: %q", r.Stderr)
	}
}

func TestVerifyDamage(t *testing.T) {
	for _, tc := range []struct {
		name  string
		apply func(t *testing.T, dataDir string, closed, active *cliSegment)
		want  string // %[1]s closed log, %[2]s closed index, %[3]s data dir, %[4]d position of its batch 2
	}{
		{
			name: "torn closed segment",
			apply: func(t *testing.T, _ string, closed, _ *cliSegment) {
				if err := os.Truncate(closed.Log, closed.Positions[2]+20); err != nil {
					t.Fatal(err)
				}
			},
			want: "error: %[1]s: position %[4]d: partial batch at the end of a closed segment",
		},
		{
			name: "index past log",
			apply: func(t *testing.T, _ string, closed, _ *cliSegment) {
				if err := os.Truncate(closed.Log, closed.Positions[2]); err != nil {
					t.Fatal(err)
				}
			},
			want: "error: %[2]s: entry 1 position",
		},
		{
			name: "recovery point past end",
			apply: func(t *testing.T, dataDir string, _, _ *cliSegment) {
				cliWriteFile(t, filepath.Join(dataDir, "recovery-point-offset-checkpoint"), "0\n1\norders 0 100\n")
			},
			want: "error: %[3]s/recovery-point-offset-checkpoint: orders-0: recovery point 100 is past the log end offset 8",
		},
		{
			name: "malformed checkpoint",
			apply: func(t *testing.T, dataDir string, _, _ *cliSegment) {
				cliWriteFile(t, filepath.Join(dataDir, "log-start-offset-checkpoint"), "0\n2\norders 0 1\n")
			},
			want: "error: %[3]s/log-start-offset-checkpoint: says 2 entries, has 1",
		},
		{
			name: "overlapping segments",
			apply: func(t *testing.T, dataDir string, _, _ *cliSegment) {
				cliWriteSegment(t, filepath.Join(dataDir, "orders-0"), 3, []cliBatch{{Base: 3, TS: 1, Values: []string{"dup"}}})
			},
			want: "segment base offset 3 <= last offset 5 of the previous segment",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dataDir, closed, active := cliHandBuiltDir(t)
			tc.apply(t, dataDir, closed, active)
			r := cliRun(t, "verify", dataDir)
			want := tc.want
			if strings.Contains(want, "%") {
				want = fmt.Sprintf(want, closed.Log, closed.Index, dataDir, closed.Positions[2])
			}
			if r.Code == 0 || !strings.Contains(r.Stdout, want) {
				t.Errorf("exit %d, want %q in\n%s%s", r.Code, want, r.Stdout, r.Stderr)
			}
		})
	}
}

func cliWriteFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestGetOffsetsAndLogDirs(t *testing.T) {
	dataDir, _, _ := cliHandBuiltDir(t)
	cliWriteSegment(t, filepath.Join(dataDir, "orders-1"), 0, nil) // empty partition
	cliWriteFile(t, filepath.Join(dataDir, "log-start-offset-checkpoint"), "0\n1\norders 0 2\n")
	// Not partitions: Kafka's deletion rename, and a plain file.
	if err := os.MkdirAll(filepath.Join(dataDir, "orders-0.0123456789abcdef0123456789abcdef-delete"), 0o755); err != nil {
		t.Fatal(err)
	}

	r := cliRun(t, "get-offsets", dataDir)
	if r.Code != 0 || r.Stdout != "orders 0 2 8\norders 1 0 0\n" {
		t.Errorf("get-offsets: exit %d\n%q\n%s", r.Code, r.Stdout, r.Stderr)
	}
	r = cliRun(t, "get-offsets", dataDir, "orders/1")
	if r.Code != 0 || r.Stdout != "orders 1 0 0\n" {
		t.Errorf("get-offsets orders/1: exit %d %q %s", r.Code, r.Stdout, r.Stderr)
	}
	r = cliRun(t, "get-offsets", dataDir, "nosuch")
	if r.Code == 0 || !strings.Contains(r.Stderr, "unknown topic nosuch") {
		t.Errorf("unknown topic: exit %d %q", r.Code, r.Stderr)
	}

	r = cliRun(t, "log-dirs", dataDir)
	if r.Code != 0 || !strings.Contains(r.Stdout, "LOG_END_OFFSET") || !strings.Contains(r.Stdout, filepath.Join(dataDir, "orders-0")) {
		t.Errorf("log-dirs: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	r = cliRun(t, "log-dirs", "--json", dataDir)
	var doc struct {
		Brokers []struct {
			LogDirs []struct {
				Partitions []struct {
					Partition    string `json:"partition"`
					Size         int64  `json:"size"`
					Segments     int    `json:"segments"`
					LogEndOffset int64  `json:"logEndOffset"`
				} `json:"partitions"`
			} `json:"logDirs"`
		} `json:"brokers"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
		t.Fatalf("log-dirs --json: %v\n%s", err, r.Stdout)
	}
	ps := doc.Brokers[0].LogDirs[0].Partitions
	if len(ps) != 2 || ps[0].Partition != "orders-0" || ps[0].Segments != 2 || ps[0].LogEndOffset != 8 || ps[0].Size == 0 {
		t.Errorf("log-dirs --json partitions: %+v", ps)
	}
}

// TestVerifyLogstoreDir checks the offline tools on a data directory
// written by the log store itself, with segments small enough to roll
// many times, before and after damage.
func TestVerifyLogstoreDir(t *testing.T) {
	dataDir := t.TempDir()
	s, err := logstore.Open(dataDir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTopic("orders", 2, map[string]string{"segment.bytes": "4096", "index.interval.bytes": "512"}); err != nil {
		t.Fatal(err)
	}
	ends := map[int32]int64{}
	for part := int32(0); part < 2; part++ {
		p, err := s.Partition("orders", part)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 300; i++ {
			line := fmt.Sprintf("partition %d line %d %s\n", part, i, strings.Repeat("x", i%50))
			if _, _, err := p.AppendLines([]byte(line + line)); err != nil {
				t.Fatal(err)
			}
		}
		ends[part] = p.LogEndOffset()
	}

	// A live directory: verify reads it beside the lock holder.
	r := cliRun(t, "verify", dataDir)
	if r.Code != 0 {
		t.Errorf("verify of a live dir: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	r = cliRun(t, "verify", dataDir)
	if r.Code != 0 || strings.Contains(r.Stdout, "warning: ") {
		t.Fatalf("verify after Close: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	r = cliRun(t, "get-offsets", dataDir, "orders")
	if want := fmt.Sprintf("orders 0 0 %d\norders 1 0 %d\n", ends[0], ends[1]); r.Stdout != want {
		t.Errorf("get-offsets = %q, want %q (%s)", r.Stdout, want, r.Stderr)
	}
	// Every segment and index passes dump-log's checks too.
	files, _ := filepath.Glob(filepath.Join(dataDir, "orders-0", "*.index"))
	timeFiles, _ := filepath.Glob(filepath.Join(dataDir, "orders-0", "*.timeindex"))
	files = append(files, timeFiles...)
	if len(files) < 4 {
		t.Fatalf("expected several segments, found index files %v", files)
	}
	r = cliRun(t, append([]string{"dump-log", "--index-sanity-check"}, files...)...)
	if r.Code != 0 || strings.Count(r.Stdout, "passed sanity check.") != len(files) {
		t.Errorf("index sanity: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	r = cliRun(t, append([]string{"dump-log", "--verify-index-only"}, files...)...)
	if r.Code != 0 || r.Stderr != "" {
		t.Errorf("verify-index-only: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}

	// Damage the first (closed) segment of partition 0 in its middle.
	logs, _ := filepath.Glob(filepath.Join(dataDir, "orders-0", "*.log"))
	info, err := os.Stat(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	cliFlipByte(t, logs[0], info.Size()/2)
	r = cliRun(t, "verify", dataDir)
	if r.Code == 0 || !strings.Contains(r.Stdout, "error: "+logs[0]+": position ") {
		t.Errorf("damaged dir: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	r = cliRun(t, "dump-log", logs[0])
	if r.Code == 0 || !strings.Contains(r.Stderr, " in "+logs[0]+": ") {
		t.Errorf("dump-log of damaged segment: exit %d\n%s", r.Code, r.Stderr)
	}
}

// TestVerifyUnreadableLog: a .log that cannot be opened (here: mode 000,
// verify run as the user nobody) is one error naming the file and why,
// without the path twice, and its indexes are not checked against an empty
// log (which reported every entry of the closed segment's indexes as
// "pointing past its log").
func TestVerifyUnreadableLog(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("switching to the user nobody needs root")
	}
	needProgram(t, "setpriv", "util-linux")
	// Directories nobody can enter: MkdirTemp makes them 0700, and so
	// is CI's own TMPDIR (.ci/run), so the base is made right under /tmp,
	// where nobody can reach it; it is chmod'ed open below.
	base, err := os.MkdirTemp("/tmp", "segfs-verify-unreadable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	bin := filepath.Join(base, "segfs")
	data := filepath.Join(base, "data")
	exe, err := os.ReadFile(segfsBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, exe, 0o755); err != nil {
		t.Fatal(err)
	}
	closed := cliWriteSegment(t, filepath.Join(data, "orders-0"), 0, cliThreeBatches())
	cliWriteSegment(t, filepath.Join(data, "orders-0"), 6, []cliBatch{{Base: 6, TS: 1700000003000, Values: []string{"x", "y"}}})
	for _, dir := range []string{base, data} {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(closed.Log, 0); err != nil {
		t.Fatal(err)
	}

	out, err := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", bin, "verify", data).CombinedOutput()
	text := string(out)
	if err == nil {
		t.Fatalf("verify with an unreadable .log exited 0:\n%s", text)
	}
	want := "error: " + closed.Log + ": cannot read it: open: permission denied"
	if !strings.Contains(text, want) {
		t.Errorf("verify does not say %q:\n%s", want, text)
	}
	for _, idx := range []string{closed.Index, closed.TimeIndex} {
		if strings.Contains(text, idx) {
			t.Errorf("verify checked %s against the log it could not read:\n%s", idx, text)
		}
	}
	if !strings.Contains(text, ": 1 error, ") {
		t.Errorf("want exactly one error:\n%s", text)
	}
}

// TestVerifyPartitionGap: verify reports what segfs mount refuses, a topic
// whose partition directories are not numbered from 0 without gaps (here
// orders-0 and orders-2), as an error naming the missing directory. It
// used to call such a data directory sound.
func TestVerifyPartitionGap(t *testing.T) {
	dataDir := t.TempDir()
	cliWriteSegment(t, filepath.Join(dataDir, "orders-0"), 0, cliThreeBatches())
	cliWriteSegment(t, filepath.Join(dataDir, "orders-2"), 0, cliThreeBatches())
	cliWriteSegment(t, filepath.Join(dataDir, "users-0"), 0, cliThreeBatches())
	r := cliRun(t, "verify", dataDir)
	want := "error: " + dataDir + ": topic orders: partition directory orders-1 is missing (found orders-0, orders-2)"
	if r.Code != 1 || !strings.Contains(r.Stdout, want) {
		t.Fatalf("verify: exit %d; want exit 1 and %q\n%s%s", r.Code, want, r.Stdout, r.Stderr)
	}
	if strings.Contains(r.Stdout, "topic users") {
		t.Errorf("a topic without a gap reported:\n%s", r.Stdout)
	}
}

// TestOfflineToolsSkipWhatMountSkips: a directory named like a partition
// but with the number spelled otherwise ("orders-01", a copy someone
// made) is not a partition for the mount (logstore skips it); the offline
// tools counted it as orders/1, reporting offsets for a partition the
// mount does not have.
func TestOfflineToolsSkipWhatMountSkips(t *testing.T) {
	dataDir := t.TempDir()
	cliWriteSegment(t, filepath.Join(dataDir, "orders-0"), 0, cliThreeBatches())
	cliWriteSegment(t, filepath.Join(dataDir, "orders-01"), 0, cliThreeBatches())
	if r := cliRun(t, "get-offsets", dataDir); r.Code != 0 || r.Stdout != "orders 0 0 6\n" {
		t.Errorf("get-offsets: exit %d, %q %q; want only orders 0", r.Code, r.Stdout, r.Stderr)
	}
	if r := cliRun(t, "verify", dataDir); r.Code != 0 || strings.Contains(r.Stdout, "orders-01") {
		t.Errorf("verify: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// TestShortSegmentName: a segment renamed by hand to a short name
// ("6.log" for 00000000000000000006.log) holds records that Kafka would
// never read: its loader takes offset 6 from the name and opens an empty
// 00000000000000000006.log in its place. segfs used to skip the file
// silently and delete its indexes as orphans, serving a log that ended at
// offset 6. Now segfs verify reports it as an error naming the file and
// the name it should have, and the mount refuses to start, leaving every
// file as it was.
func TestShortSegmentName(t *testing.T) {
	dataDir := t.TempDir()
	pdir := filepath.Join(dataDir, "orders-0")
	cliWriteSegment(t, pdir, 0, cliThreeBatches())
	seg := cliWriteSegment(t, pdir, 6, []cliBatch{
		{Base: 6, TS: 1700000003000, Values: []string{"six", "seven"}},
		{Base: 8, TS: 1700000004000, Values: []string{"eight"}},
	})
	short := filepath.Join(pdir, "6.log")
	if err := os.Rename(seg.Log, short); err != nil {
		t.Fatal(err)
	}
	r := cliRun(t, "verify", dataDir)
	want := "error: " + short + ": not a segment file name (20 digits, then .log); Kafka would open an empty 00000000000000000006.log in its place"
	if r.Code != 1 || !strings.Contains(r.Stdout, want) {
		t.Errorf("verify: exit %d; want exit 1 and %q\n%s%s", r.Code, want, r.Stdout, r.Stderr)
	}

	mnt := t.TempDir()
	r = cliRun(t, "mount", dataDir, mnt)
	if r.Code == 0 {
		t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	}
	if r.Code == 0 || !strings.Contains(r.Stderr, short+": not a segment file name") {
		t.Errorf("mount: exit %d; want a failure naming %s\n%s%s", r.Code, short, r.Stdout, r.Stderr)
	}
	for _, f := range []string{short, seg.Index, seg.TimeIndex} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("after the refused mount: %v", err)
		}
	}
	if _, err := os.Stat(seg.Log); !os.IsNotExist(err) {
		t.Errorf("the mount created %s: %v", seg.Log, err)
	}
}

// TestVerifyInterruptedAddition: a stop during CreatePartitions (or a
// CreateTopic) leaves directories the next start removes, marked in
// segfs-topics.json (adding_from, creating). verify judged them as
// partitions: "ok" for a half-made one, a gap error for an addition cut
// short, and an error for whatever garbage a half-written segment held,
// where the mount starts cleanly and removes them. It now says each will
// be removed and checks only what the mount keeps.
func TestVerifyInterruptedAddition(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/orders" "$M/newt" && seq 3 >> "$M/orders/0/data" && echo x >> "$M/newt/0/data"`)
	m.unmount()
	doc := map[string]map[string]map[string]any{}
	path := filepath.Join(m.data, "segfs-topics.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	doc["topics"]["orders"]["adding_from"] = 1
	doc["topics"]["newt"]["creating"] = true
	if b, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// orders-2 made, orders-1 not yet (a gap); orders-2's segment torn.
	garbage := filepath.Join(m.data, "orders-2", "00000000000000000000.log")
	if err := os.MkdirAll(filepath.Dir(garbage), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(garbage, []byte("\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xffnot a batch"), 0o644); err != nil {
		t.Fatal(err)
	}

	r := cliRun(t, "verify", m.data)
	for _, want := range []string{
		"warning: " + filepath.Join(m.data, "orders-2") + ": not checked: a stop interrupted an addition of partitions from 1 on, and the next start removes this directory",
		"warning: " + filepath.Join(m.data, "newt-0") + ": not checked: a stop interrupted the topic's creation, and the next start removes this directory",
		"orders-0: ok",
		"verified 1 partition,",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("verify output lacks %q", want)
		}
	}
	if r.Code != 0 || strings.Contains(r.Stdout, "error:") {
		t.Errorf("verify: exit %d, want 0 and no error", r.Code)
	}
	if t.Failed() {
		t.Fatalf("verify:\n%s%s", r.Stdout, r.Stderr)
	}

	// What verify said is what the mount does.
	m.mount()
	if got := m.ok(`ls "$M"; ls "$M/orders"; cat "$M/orders/0/data"`); got != "orders\n0\nconfig\n1\n2\n3\n" {
		t.Errorf("after the start the mount shows %q", got)
	}
	m.unmount()
	if r := cliRun(t, "verify", m.data); r.Code != 0 || strings.Contains(r.Stdout, "warning:") || !strings.Contains(r.Stdout, "verified 1 partition,") {
		t.Errorf("verify after the start: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// TestVerifyLogStartPastEnd: a log-start-offset-checkpoint past the log
// end (a DeleteRecords checkpointed, then a power cut lost the records it
// passed) is what the next start repairs, as Kafka's loader does, by
// restarting the log empty at the checkpointed start: a warning, exit 0.
// verify called it an error.
func TestVerifyLogStartPastEnd(t *testing.T) {
	dataDir, _, _ := cliHandBuiltDir(t)
	cliWriteFile(t, filepath.Join(dataDir, "log-start-offset-checkpoint"), "0\n1\norders 0 20\n")
	r := cliRun(t, "verify", dataDir)
	want := "warning: " + dataDir + "/log-start-offset-checkpoint: orders-0: log start offset 20 is past the log end offset 8: the next start deletes every segment and restarts the log empty at 20, as Kafka does"
	if r.Code != 0 || !strings.Contains(r.Stdout, want) || strings.Contains(r.Stdout, "error:") {
		t.Fatalf("verify: exit %d; want exit 0 and %q\n%s%s", r.Code, want, r.Stdout, r.Stderr)
	}
}

// TestVerifyLeaderEpochPastEnd: a leader-epoch-checkpoint entry past the
// log end is what a power cut leaves when it takes an epoch's unflushed
// records (the entry is written before the epoch's first batch). The next
// start drops it, as Kafka's loader does, and leads a later epoch than the
// lost one: a warning, exit 0. verify called it an error.
func TestVerifyLeaderEpochPastEnd(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/orders" && seq 5 >> "$M/orders/0/data"`)
	m.unmount()
	ck := filepath.Join(m.data, "orders-0", "leader-epoch-checkpoint")
	cliWriteFile(t, ck, "0\n2\n0 0\n1 20\n")
	r := cliRun(t, "verify", m.data)
	want := "warning: " + ck + ": line 4: epoch 1 starts at offset 20, past the log end offset 5: the next start drops it, as Kafka does"
	if r.Code != 0 || !strings.Contains(r.Stdout, want) || strings.Contains(r.Stdout, "error:") {
		t.Fatalf("verify: exit %d; want exit 0 and %q\n%s%s", r.Code, want, r.Stdout, r.Stderr)
	}
	// What verify said is what the mount does: epoch 1 is gone, and the
	// mount leads epoch 2 from the log end, stamped on its next batch.
	m.mount()
	m.ok(`echo 6 >> "$M/orders/0/data"`)
	m.unmount()
	b, err := os.ReadFile(ck)
	if err != nil || string(b) != "0\n2\n0 0\n2 5\n" {
		t.Errorf("leader-epoch-checkpoint after the start: %q %v", b, err)
	}
	if out := cliRun(t, "dump-log", filepath.Join(m.data, "orders-0", "00000000000000000000.log")).Stdout; !strings.Contains(out, "baseOffset: 5 lastOffset: 5 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 2 ") {
		t.Errorf("the appended batch is not in epoch 2:\n%s", out)
	}
	if r := cliRun(t, "verify", m.data); r.Code != 0 || strings.Contains(r.Stdout, "warning:") {
		t.Errorf("verify after the start: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// TestVerifyNamesFileOnce: verify names a file it cannot read or parse
// once, before the reason: it printed "error: F: read F: is a directory"
// for a checkpoint, partition.metadata or leader-epoch-checkpoint, and
// "error: F: F: unexpected end of JSON input" for segfs-topics.json.
func TestVerifyNamesFileOnce(t *testing.T) {
	dataDir := t.TempDir()
	pdir := filepath.Join(dataDir, "orders-0")
	cliWriteSegment(t, pdir, 0, cliThreeBatches())
	var unreadable []string
	for _, p := range []string{
		filepath.Join(dataDir, "recovery-point-offset-checkpoint"),
		filepath.Join(pdir, "partition.metadata"),
		filepath.Join(pdir, "leader-epoch-checkpoint"),
	} {
		if err := os.Mkdir(p, 0o755); err != nil { // a read(2) of it is EISDIR, even as root
			t.Fatal(err)
		}
		unreadable = append(unreadable, p)
	}
	topics := filepath.Join(dataDir, "segfs-topics.json")
	cliWriteFile(t, topics, "{")
	r := cliRun(t, "verify", dataDir)
	for _, p := range unreadable {
		if want := "error: " + p + ": cannot read it: read: is a directory\n"; !strings.Contains(r.Stdout, want) {
			t.Errorf("no %q", want)
		}
	}
	for _, p := range append(unreadable, topics) {
		if n := strings.Count(r.Stdout, p); n != 1 {
			t.Errorf("%s named %d times", p, n)
		}
	}
	if r.Code != 1 || !strings.Contains(r.Stdout, "error: "+topics+": ") || t.Failed() {
		t.Fatalf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}
