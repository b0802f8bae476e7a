package tests

import (
	"strings"
	"testing"
)

// TestCLIHelpCommand: "segfs help" prints what "segfs --help" prints, and
// "segfs help COMMAND" what "segfs COMMAND --help" prints, for every
// command, help itself included ("help help" printed urfave/cli's generic
// text, "Shows a list of commands or help for one command"). An unknown
// topic fails as an unknown command does ("help nosuch" said "No help
// topic for 'nosuch'"), and so do extra arguments.
func TestCLIHelpCommand(t *testing.T) {
	app := cliRun(t, "--help")
	if r := cliRun(t, "help"); r.Code != 0 || r.Stdout != app.Stdout || r.Stdout == "" {
		t.Errorf("segfs help: exit %d, output differs from --help:\n%s", r.Code, r.Stdout)
	}
	if !strings.Contains(app.Stdout, "\n   help         list the commands, or explain one\n") {
		t.Errorf("--help does not list help as the other commands:\n%s", app.Stdout)
	}
	for _, c := range []string{"mount", "serve", "dump-log", "verify", "get-offsets", "log-dirs", "help"} {
		want := cliRun(t, c, "--help")
		if r := cliRun(t, "help", c); r.Code != 0 || want.Code != 0 || r.Stdout != want.Stdout {
			t.Errorf("segfs help %s: exit %d, output differs from %s --help (exit %d):\n%s\n---\n%s", c, r.Code, c, want.Code, r.Stdout, want.Stdout)
		}
	}
	r := cliRun(t, "help", "help")
	for _, w := range []string{"segfs help - list the commands, or explain one", "segfs help [command options] [COMMAND]", "Example:", "segfs help mount"} {
		if !strings.Contains(r.Stdout, w) {
			t.Errorf("segfs help help lacks %q:\n%s", w, r.Stdout)
		}
	}
	for _, args := range [][]string{{"help", "--help"}, {"help", "-h"}} {
		if got := cliRun(t, args...); got.Code != 0 || got.Stdout != r.Stdout {
			t.Errorf("segfs %q: exit %d, output differs from help help:\n%s", args, got.Code, got.Stdout)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"help", "nosuch"}, `segfs: unknown command "nosuch" (see segfs --help)`},
		{[]string{"help", "mount", "extra"}, "segfs: help: want one COMMAND at most, not 2 arguments (usage: segfs help [COMMAND])"},
		{[]string{"h"}, `segfs: unknown command "h" (see segfs --help)`},
	} {
		if r := cliRun(t, tc.args...); r.Code != 1 || r.Stdout != "" || r.Stderr != tc.want+"\n" {
			t.Errorf("segfs %q: exit %d, stdout %q, stderr %q; want exit 1 and %q", tc.args, r.Code, r.Stdout, r.Stderr, tc.want)
		}
	}
}
