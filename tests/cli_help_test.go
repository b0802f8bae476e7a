package tests

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/segfs/segfs/cli"
)

// TestCLIHelp checks that --help lists every command and that each command's
// help has a usage line and an example, as STYLE.md asks.
func TestCLIHelp(t *testing.T) {
	commands := []string{"mount", "serve", "dump-log", "verify", "get-offsets", "log-dirs"}
	r := cliRun(t, "--help")
	if r.Code != 0 {
		t.Fatalf("--help: exit %d: %s", r.Code, r.Stderr)
	}
	for _, c := range commands {
		if !strings.Contains(r.Stdout, "\n   "+c+" ") {
			t.Errorf("--help does not list %s:\n%s", c, r.Stdout)
		}
	}
	for _, c := range []string{"dump-log", "verify", "get-offsets", "log-dirs"} {
		r := cliRun(t, c, "--help")
		if r.Code != 0 || !strings.Contains(r.Stdout, "segfs "+c+" [command options]") || !strings.Contains(r.Stdout, "Example") {
			t.Errorf("%s --help: exit %d\n%s", c, r.Code, r.Stdout)
		}
	}
	// Every flag that takes a value names it (DURATION, BYTES, ADDR, ...):
	// urfave/cli's bare "value" placeholder, shown when a flag's usage
	// has no `NAME`, tells a user nothing (--unmount-grace showed it).
	for _, c := range commands {
		r := cliRun(t, c, "--help")
		for _, line := range strings.Split(r.Stdout, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "--") && strings.Contains(line, " value ") {
				t.Errorf("%s --help: a flag without a named value: %q", c, strings.TrimSpace(line))
			}
		}
	}
	// --debug says what it logs: mount's logged the Kafka requests of
	// --kafka-listen too, and both the file limit (README: "--debug logs
	// the limit set"), which the help did not say.
	for cmd, want := range map[string]string{
		"mount": "--debug  log every FUSE request, with --kafka-listen every Kafka request too, and the file limit set",
		"serve": "--debug  log every request and the file limit set",
	} {
		if r := cliRun(t, cmd, "--help"); !strings.Contains(strings.Join(strings.Fields(r.Stdout), "  "), strings.Join(strings.Fields(want), "  ")) {
			t.Errorf("%s --help: --debug does not say %q:\n%s", cmd, want, r.Stdout)
		}
	}
	// serve, as mount, creates a missing DATA_DIR, and says so.
	if r := cliRun(t, "serve", "--help"); !strings.Contains(r.Stdout, "over DATA_DIR (created if needed") {
		t.Errorf("serve --help does not say it creates DATA_DIR:\n%s", r.Stdout)
	}
	r = cliRun(t, "--version")
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "segfs version ") {
		t.Errorf("--version: exit %d %q", r.Code, r.Stdout)
	}
	r = cliRun(t, "no-such-command")
	if r.Code == 0 || r.Stderr != "segfs: unknown command \"no-such-command\" (see segfs --help)\n" {
		t.Errorf("an unknown command: exit %d, stderr %q; want exit 1 and a message naming it", r.Code, r.Stderr)
	}
	// Without their arguments, each command prints its usage line as
	// --help shows it: serve's named two of its many flags, and those of
	// get-offsets and log-dirs, which take --json, none.
	for _, tc := range [][2]string{
		{"mount", "mount: usage: segfs mount [flags] DATA_DIR MOUNTPOINT"},
		{"serve", "serve: usage: segfs serve [flags] DATA_DIR"},
		{"verify", "verify: want exactly one DATA_DIR (usage: segfs verify DATA_DIR)"},
		{"get-offsets", "get-offsets: usage: segfs get-offsets [flags] DATA_DIR [TOPIC[/PARTITION]]"},
		{"log-dirs", "log-dirs: usage: segfs log-dirs [flags] DATA_DIR"},
		{"dump-log", "dump-log: no files given (usage: segfs dump-log [flags] FILE...)"},
	} {
		if r := cliRun(t, tc[0]); r.Code != 1 || r.Stderr != "segfs: "+tc[1]+"\n" {
			t.Errorf("segfs %s: exit %d, stderr %q; want %q", tc[0], r.Code, r.Stderr, "segfs: "+tc[1])
		}
	}
	r = cliRun(t)
	if r.Code != 0 || !strings.Contains(r.Stdout, "COMMANDS:") {
		t.Errorf("segfs without a command: exit %d, want the help\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// TestCLIRunInProcess checks that commands run through cli.RunIO without
// exiting the process, with output where the caller asks.
func TestCLIRunInProcess(t *testing.T) {
	var out, errb bytes.Buffer
	err := cli.RunIO(context.Background(), []string{"segfs", "dump-log", cliKafkaVector}, &out, &errb)
	if err != nil || !strings.Contains(out.String(), "baseOffset: 1 lastOffset: 3") {
		t.Errorf("RunIO dump-log: err %v\n%s%s", err, out.String(), errb.String())
	}
	out.Reset()
	err = cli.RunIO(context.Background(), []string{"segfs", "verify", t.TempDir() + "/missing"}, &out, &errb)
	if err == nil {
		t.Errorf("verify of a missing dir returned nil")
	}
}

// TestCLICleanerFlags: mount and serve take the cleaners' schedule as Go
// durations, --retention-check-interval defaulting to Kafka's 5 minutes
// (log.retention.check.interval.ms); a value that is not a positive
// duration is refused before anything is mounted or served.
func TestCLICleanerFlags(t *testing.T) {
	for _, cmd := range []string{"mount", "serve"} {
		r := cliRun(t, cmd, "--help")
		for _, want := range []string{
			"--retention-check-interval DURATION", "(default: 5m0s)",
			"--cleaner-interval DURATION", "(default: 15s)",
		} {
			if !strings.Contains(r.Stdout, want) {
				t.Errorf("%s --help lacks %q:\n%s", cmd, want, r.Stdout)
			}
		}
	}
	data, mnt := t.TempDir(), t.TempDir()
	for _, tc := range []struct{ value, want string }{
		{"0", "--retention-check-interval must be positive"},
		{"-1m", "--retention-check-interval must be positive"},
		{"5", "invalid value \"5\" for flag -retention-check-interval"},
	} {
		r := cliRun(t, "mount", "--retention-check-interval", tc.value, data, mnt)
		if r.Code == 0 || !strings.Contains(r.Stderr, tc.want) {
			t.Errorf("mount --retention-check-interval %s: exit %d, stderr %q; want %q", tc.value, r.Code, r.Stderr, tc.want)
		}
	}
}

// TestCLIUsageErrorOneLine: a flag that is unknown or does not parse fails
// with one line on stderr naming the command and the flag, and nothing on
// stdout (urfave/cli's default printed "Incorrect Usage" and the whole
// help text to stdout, then main printed the error a second time).
func TestCLIUsageErrorOneLine(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mount", "--partitions", "abc", dir, dir}, "segfs: mount: invalid value \"abc\" for flag -partitions"},
		{[]string{"mount", "--no-such-flag", dir, dir}, "segfs: mount: flag provided but not defined: -no-such-flag"},
		{[]string{"serve", "--max-request-bytes", "1k", dir}, "segfs: serve: invalid value \"1k\" for flag -max-request-bytes"},
		{[]string{"verify", "--deep", dir}, "segfs: verify: flag provided but not defined: -deep"},
		{[]string{"dump-log", "--max-bytes", "x", "f.log"}, "segfs: dump-log: "},
		{[]string{"get-offsets", "--jsn", dir}, "segfs: get-offsets: flag provided but not defined: -jsn"},
		{[]string{"log-dirs", "--jsn", dir}, "segfs: log-dirs: flag provided but not defined: -jsn"},
		{[]string{"--no-such-flag"}, "segfs: flag provided but not defined: -no-such-flag"},
	} {
		r := cliRun(t, tc.args...)
		lines := strings.Split(strings.TrimSuffix(r.Stderr, "\n"), "\n")
		if r.Code != 1 || r.Stdout != "" || len(lines) != 1 || !strings.HasPrefix(lines[0], tc.want) || !strings.Contains(lines[0], "--help") {
			t.Errorf("segfs %q: exit %d, stdout %d bytes, stderr %q; want exit 1, no stdout, one line %q... pointing to --help",
				tc.args, r.Code, len(r.Stdout), r.Stderr, tc.want)
		}
	}
}
