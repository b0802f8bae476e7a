// Package tests holds end-to-end tests: they build the segfs binary, mount
// real filesystems, and drive them with real Unix tools and Kafka clients.
package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// segfsBin is the path of the binary built once for the whole package.
var segfsBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "segfs-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	segfsBin = filepath.Join(dir, "segfs")
	// -race is not passed: the binary under test runs as a separate daemon;
	// its races are caught by the package tests that run in-process.
	cmd := exec.Command("go", "build", "-o", segfsBin, "..")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building segfs:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runSegfs runs the binary with args and returns its combined output.
func runSegfs(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(segfsBin, args...).CombinedOutput()
	return string(out), err
}
