package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOffsetsToolsDamagedLog: get-offsets and log-dirs read the log end
// from the batches at the end of each partition's last segment, and
// stopped silently at the first one they could not read (a corrupt batch
// length in the middle of the segment) or counted one that fails its CRC,
// exiting 0 with a log end a script would trust. They still print every
// partition, and now say on stderr what they met, with verify's words and
// verify's classification: damage is an error (exit 1, naming the
// partitions whose log end may be wrong); a partial batch at the end of
// the active segment, which a crash in an append leaves and recovery
// truncates, is a warning (exit 0). --json output stays one well-formed
// document on stdout.
func TestOffsetsToolsDamagedLog(t *testing.T) {
	for _, tc := range []struct {
		name string
		// damage changes the active segment of orders-0 (batches at
		// offsets 6-7, 8-9 and 10, at positions pos[0..2]); the log
		// end orders-0 then shows, and the line on stderr (%[1]s the
		// .log, %[2]d the position of its second batch, %[3]d of its
		// third); "" for none.
		damage  func(t *testing.T, log string, pos []int64)
		end     int64
		line    string
		isError bool
	}{
		{
			name:   "sound",
			damage: func(*testing.T, string, []int64) {},
			end:    11,
		},
		{
			// The high byte of the batch length: a negative length,
			// after which nothing can be located.
			name:    "corrupt length in the middle",
			damage:  func(t *testing.T, log string, pos []int64) { cliFlipByte(t, log, pos[1]+8) },
			end:     8,
			line:    "error: %[1]s: position %[2]d: corrupt batch: batch length",
			isError: true,
		},
		{
			name:    "CRC mismatch in the middle",
			damage:  func(t *testing.T, log string, pos []int64) { cliFlipByte(t, log, pos[1]+70) },
			end:     11,
			line:    "error: %[1]s: position %[2]d: corrupt batch: CRC mismatch",
			isError: true,
		},
		{
			name: "torn tail",
			damage: func(t *testing.T, log string, _ []int64) {
				fi, err := os.Stat(log)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.Truncate(log, fi.Size()-3); err != nil {
					t.Fatal(err)
				}
			},
			end:  10,
			line: "warning: %[1]s: position %[3]d: partial batch at the end of the active segment",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := t.TempDir()
			pdir := filepath.Join(dataDir, "orders-0")
			cliWriteSegment(t, pdir, 0, cliThreeBatches())
			active := cliWriteSegment(t, pdir, 6, []cliBatch{
				{Base: 6, TS: 1700000003000, Values: []string{"x", "y"}},
				{Base: 8, TS: 1700000004000, Values: []string{"z", "w"}},
				{Base: 10, TS: 1700000005000, Values: []string{"v"}},
			})
			// An active segment of a few small batches has no index entry
			// yet (one per index.interval.bytes, 4096): its log end is
			// read from its first batch on.
			cliWriteFile(t, active.Index, "")
			cliWriteFile(t, active.TimeIndex, "")
			cliWriteSegment(t, filepath.Join(dataDir, "orders-1"), 0, cliThreeBatches())
			tc.damage(t, active.Log, active.Positions)
			line := ""
			if tc.line != "" {
				line = fmt.Sprintf(tc.line, active.Log, active.Positions[1], active.Positions[2])
			}

			// verify says the same of the damage: one classification.
			v := cliRun(t, "verify", dataDir)
			if line != "" && !strings.Contains(v.Stdout, line) {
				t.Errorf("verify does not say %q:\n%s", line, v.Stdout)
			}

			check := func(args []string, r cliResult, ends string) {
				t.Helper()
				if ends != fmt.Sprintf("orders-0 %d, orders-1 6", tc.end) {
					t.Errorf("segfs %v: log ends %s, want orders-0 %d, orders-1 6", args, ends, tc.end)
				}
				wantCode := 0
				if tc.isError {
					wantCode = 1
				}
				if r.Code != wantCode {
					t.Errorf("segfs %v: exit %d, want %d\n%s", args, r.Code, wantCode, r.Stderr)
				}
				if line == "" {
					if r.Stderr != "" {
						t.Errorf("segfs %v: stderr %q, want none", args, r.Stderr)
					}
					return
				}
				if !strings.Contains(r.Stderr, line) {
					t.Errorf("segfs %v: stderr %q lacks %q", args, r.Stderr, line)
				}
				verdict := fmt.Sprintf("%s: 1 error found in %s: the log end offset of orders-0 may not be its end", args[0], dataDir)
				if strings.Contains(r.Stderr, verdict) != tc.isError {
					t.Errorf("segfs %v: stderr %q; want %q there: %v", args, r.Stderr, verdict, tc.isError)
				}
				if strings.Contains(r.Stderr, "orders-1") {
					t.Errorf("segfs %v: stderr names the sound partition: %q", args, r.Stderr)
				}
			}

			args := []string{"get-offsets", dataDir}
			r := cliRun(t, args...)
			var ends []string
			for _, l := range strings.Split(strings.TrimSuffix(r.Stdout, "\n"), "\n") {
				var topic string
				var part, start, end int64
				if _, err := fmt.Sscanf(l, "%s %d %d %d", &topic, &part, &start, &end); err == nil {
					ends = append(ends, fmt.Sprintf("%s-%d %d", topic, part, end))
				}
			}
			check(args, r, strings.Join(ends, ", "))

			args = []string{"get-offsets", "--json", dataDir}
			r = cliRun(t, args...)
			var rows []struct {
				Topic        string `json:"topic"`
				Partition    int32  `json:"partition"`
				LogEndOffset int64  `json:"logEndOffset"`
			}
			if err := json.Unmarshal([]byte(r.Stdout), &rows); err != nil {
				t.Errorf("segfs %v: stdout is not JSON: %v\n%s", args, err, r.Stdout)
			}
			ends = nil
			for _, row := range rows {
				ends = append(ends, fmt.Sprintf("%s-%d %d", row.Topic, row.Partition, row.LogEndOffset))
			}
			check(args, r, strings.Join(ends, ", "))

			args = []string{"log-dirs", dataDir}
			r = cliRun(t, args...)
			ends = nil
			for _, l := range strings.Split(r.Stdout, "\n") {
				if f := strings.Fields(l); len(f) == 5 && f[0] != "DIR" {
					ends = append(ends, filepath.Base(f[0])+" "+f[4])
				}
			}
			check(args, r, strings.Join(ends, ", "))

			args = []string{"log-dirs", "--json", dataDir}
			r = cliRun(t, args...)
			var doc struct {
				Brokers []struct {
					LogDirs []struct {
						Partitions []struct {
							Partition    string `json:"partition"`
							LogEndOffset int64  `json:"logEndOffset"`
						} `json:"partitions"`
					} `json:"logDirs"`
				} `json:"brokers"`
			}
			if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil || len(doc.Brokers) != 1 || len(doc.Brokers[0].LogDirs) != 1 {
				t.Fatalf("segfs %v: stdout is not kafka-log-dirs' JSON: %v\n%s", args, err, r.Stdout)
			}
			ends = nil
			for _, p := range doc.Brokers[0].LogDirs[0].Partitions {
				ends = append(ends, fmt.Sprintf("%s %d", p.Partition, p.LogEndOffset))
			}
			check(args, r, strings.Join(ends, ", "))
		})
	}
}
