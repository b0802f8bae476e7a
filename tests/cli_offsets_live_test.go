package tests

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOffsetsToolsAppendInFlight: beside a running mount (the data
// directory's lock held), a partial batch at the end of the active segment
// is an append being written, which get-offsets and log-dirs do not count
// yet and say nothing of: they warned that "recovery truncates it"
// whenever they ran while a mount wrote a large batch (a page of it
// written, the rest to come), and no recovery would. Damage is still an
// error beside a mount. The lock is held here as a mount holds it (an
// exclusive flock on DATA_DIR/.lock), for a torn tail that stays put.
func TestOffsetsToolsAppendInFlight(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spoil  func(log string, pos []int64)
		end    string
		code   int
		stderr string
	}{
		{"append in flight", func(log string, _ []int64) {
			fi, err := os.Stat(log)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(log, fi.Size()-3); err != nil {
				t.Fatal(err)
			}
		}, "4", 0, ""},
		{"CRC mismatch", func(log string, pos []int64) { cliFlipByte(t, log, pos[1]+70) }, "5", 1, "corrupt batch: CRC mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := t.TempDir()
			pdir := filepath.Join(dataDir, "orders-0")
			active := cliWriteSegment(t, pdir, 0, []cliBatch{
				{Base: 0, TS: 1700000003000, Values: []string{"x", "y"}},
				{Base: 2, TS: 1700000004000, Values: []string{"z", "w"}},
				{Base: 4, TS: 1700000005000, Values: []string{"v"}},
			})
			cliWriteFile(t, active.Index, "")
			cliWriteFile(t, active.TimeIndex, "")
			tc.spoil(active.Log, active.Positions)
			lock, err := os.OpenFile(filepath.Join(dataDir, ".lock"), os.O_RDWR|os.O_CREATE, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			defer lock.Close()
			if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"get-offsets", dataDir}, {"log-dirs", dataDir}} {
				r := cliRun(t, args...)
				if r.Code != tc.code {
					t.Errorf("segfs %v: exit %d, want %d\n%s", args, r.Code, tc.code, r.Stderr)
				}
				if tc.stderr == "" && r.Stderr != "" || !strings.Contains(r.Stderr, tc.stderr) {
					t.Errorf("segfs %v: stderr %q, want %q", args, r.Stderr, tc.stderr)
				}
				lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
				if f := strings.Fields(lines[len(lines)-1]); len(f) == 0 || f[len(f)-1] != tc.end {
					t.Errorf("segfs %v: %q, want the log end %s", args, r.Stdout, tc.end)
				}
			}
		})
	}
}
