package tests

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCLIFlagValuesRefused: mount and serve refuse, before they create,
// mount or serve anything, a flag value Kafka would refuse for the
// setting or that means nothing (a topic of no partitions, a negative
// grace, a server-side group session that is not longer than its
// heartbeat, a cleaner buffer too small for one key), each naming its
// flag. TestCLIGroupFlags covers the classic group flags, and
// TestRefusedMountLeavesDataDir that two cleaner flags are refused, not what it
// says; no test gave any of these. mount is given --kafka-listen, so
// that a value let through would mount and serve.
func TestCLIFlagValuesRefused(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	mp := t.TempDir()
	both := func(flags ...string) [][]string {
		return [][]string{
			append(append([]string{"mount", "--kafka-listen", "127.0.0.1:0"}, flags...), missing, mp),
			append(append([]string{"serve", "--listen", "127.0.0.1:0"}, flags...), missing),
		}
	}
	for _, tc := range []struct {
		runs [][]string
		want string
	}{
		{both("--partitions", "0"), "--partitions must be at least 1"},
		{both("--partitions", "-3"), "--partitions must be at least 1"},
		{both("--offsets-retention", "0s"), "--offsets-retention must be positive"},
		{both("--offsets-retention-check-interval", "0s"), "--offsets-retention-check-interval must be positive"},
		{both("--group-consumer-session-timeout", "0s"), "--group-consumer-session-timeout must be positive"},
		{both("--group-consumer-heartbeat-interval", "-1s"), "--group-consumer-heartbeat-interval must be positive"},
		{both("--group-consumer-heartbeat-interval", "45s"),
			"--group-consumer-heartbeat-interval (45s) must be shorter than --group-consumer-session-timeout (45s)"},
		{both("--group-consumer-session-timeout", "2s", "--group-consumer-heartbeat-interval", "3s"),
			"--group-consumer-heartbeat-interval (3s) must be shorter than --group-consumer-session-timeout (2s)"},
		{both("--cleaner-buffer-size", "1023"), "--cleaner-buffer-size must be at least 1024"},
		{both("--cleaner-interval", "0s"), "--cleaner-interval must be positive"},
		{both("--producer-id-expiration", "-1h"), "--producer-id-expiration must be positive"},
		{both("--retention-check-interval", "0s"), "--retention-check-interval must be positive"},
		{[][]string{{"mount", "--unmount-grace", "-1s", missing, mp}}, "--unmount-grace must not be negative"},
	} {
		for _, args := range tc.runs {
			cliRefused(t, mp, "segfs: "+args[0]+": "+tc.want, args...)
			if _, err := os.Stat(missing); err == nil {
				t.Fatalf("segfs %q was refused but created %s", args, missing)
			}
		}
	}
}
