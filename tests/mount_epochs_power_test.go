package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var dumpBatchEpochRe = regexp.MustCompile(`baseOffset: (\d+) lastOffset: (\d+) .*partitionLeaderEpoch: (-?\d+)`)

// offsetEpochs maps every offset of partition directory pdir to the
// leader epoch stamped on its batch, as segfs dump-log shows them.
func offsetEpochs(t *testing.T, pdir string) map[int64]int64 {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(pdir, "*.log"))
	out := map[int64]int64{}
	for _, l := range logs {
		r := cliRun(t, "dump-log", l)
		if r.Code != 0 {
			t.Fatalf("dump-log %s: exit %d\n%s", l, r.Code, r.Stderr)
		}
		for _, m := range dumpBatchEpochRe.FindAllStringSubmatch(r.Stdout, -1) {
			first, _ := strconv.ParseInt(m[1], 10, 64)
			last, _ := strconv.ParseInt(m[2], 10, 64)
			e, _ := strconv.ParseInt(m[3], 10, 64)
			for o := first; o <= last; o++ {
				out[o] = e
			}
		}
	}
	return out
}

// Power cuts against a mount, each after one of: an unsynced line, a
// synced line then an unsynced one, nothing (an idle remount, whose
// first line came unsynced in the round before), an unsynced line, a
// kill -9, a remount and another unsynced line. After each, segfs
// verify accepts the data directory, every synced line is there, and the
// line written after the remount, at an offset that held a line the cut
// took, carries a later leader epoch than the lost line did: a Kafka
// consumer that read the lost line finds the truncation
// (OffsetForLeaderEpoch) instead of skipping the new one.
func TestMountEpochsAcrossPowerCuts(t *testing.T) {
	disk := faultLoopDisk(t, "xfs", 320)
	data := filepath.Join(disk.dir, "data")
	pdir := filepath.Join(data, "e-0")
	m := mntAt(t, data)
	m.ok(`mkdir "$M/e" && printf '1\n2\n3\n' | dd of="$M/e/0/data" oflag=dsync,append conv=notrunc status=none`)
	synced := []string{"1", "2", "3"}
	lostCuts := 0
	for i := 0; i < 12; i++ {
		switch i % 4 {
		case 0:
			m.ok(fmt.Sprintf(`echo u%d >> "$M/e/0/data"`, i))
		case 1:
			m.ok(fmt.Sprintf(`echo s%d | dd of="$M/e/0/data" oflag=dsync,append conv=notrunc status=none; echo u%d >> "$M/e/0/data"`, i, i))
			synced = append(synced, fmt.Sprintf("s%d", i))
		case 3:
			// A kill -9 keeps the unsynced line (page cache) into the
			// next leadership, whose entry starts after it; the cut
			// then takes both leaderships' lines, and the new one
			// must be above both.
			m.ok(fmt.Sprintf(`echo u%d >> "$M/e/0/data"`, i))
			m.kill9()
			m.mount()
			m.ok(fmt.Sprintf(`echo v%d >> "$M/e/0/data"`, i))
		}
		before := offsetEpochs(t, pdir)
		disk.shutdown()
		m.kill9()
		disk.cycle()
		if r := cliRun(t, "verify", data); r.Code != 0 {
			t.Fatalf("round %d: verify after the power cut: exit %d\n%s%s", i, r.Code, r.Stdout, r.Stderr)
		}
		kept := offsetEpochs(t, pdir)
		m.mount()
		m.ok(fmt.Sprintf(`echo n%d >> "$M/e/0/data"`, i))
		after := offsetEpochs(t, pdir)
		ck, _ := os.ReadFile(filepath.Join(pdir, "leader-epoch-checkpoint"))
		for o, e := range before {
			if _, ok := kept[o]; ok {
				continue
			}
			lostCuts++ // the cut took the line at o
			if ne, ok := after[o]; ok && ne <= e {
				t.Errorf("round %d: offset %d was written again in epoch %d; the line the cut took there had epoch %d (checkpoint %q)", i, o, ne, e, ck)
			}
		}
		got := m.ok(`cat "$M/e/0/data"`)
		for _, l := range synced {
			if !strings.Contains("\n"+got, "\n"+l+"\n") {
				t.Fatalf("round %d: synced line %q lost: data %q", i, l, got)
			}
		}
		if r := cliRun(t, "verify", data); r.Code != 0 || !strings.Contains(r.Stdout, " 0 errors, 0 warnings") {
			t.Fatalf("round %d: verify beside the mount: exit %d\n%s%s", i, r.Code, r.Stdout, r.Stderr)
		}
	}
	if lostCuts == 0 {
		t.Fatal("no power cut took a line: the test proves nothing")
	}
}
