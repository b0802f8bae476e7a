package tests

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIArgumentNamedHelp: a command's argument "help" or "h" is an
// argument: urfave/cli gave every command a hidden help subcommand, so
// "segfs verify help" printed verify's help and exited 0 instead of
// checking the data directory ./help.
func TestCLIArgumentNamedHelp(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"help", "h"} {
		cliWriteSegment(t, filepath.Join(dir, name, "orders-0"), 0, cliThreeBatches())
	}
	run := func(args ...string) (string, string, error) {
		var out, errb bytes.Buffer
		cmd := exec.Command(segfsBin, args...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	for _, name := range []string{"help", "h"} {
		if out, errs, err := run("verify", name); err != nil || !strings.Contains(out, "verified 1 partition, 1 segment, 3 batches: 0 errors, 0 warnings") {
			t.Errorf("segfs verify %s: %v\n%s%s", name, err, out, errs)
		}
		if out, errs, err := run("get-offsets", name); err != nil || out != "orders 0 0 6\n" {
			t.Errorf("segfs get-offsets %s: %v\n%s%s", name, err, out, errs)
		}
	}
}
