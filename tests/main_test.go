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
	preferSystemPython(dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// preferSystemPython puts Debian's /usr/bin/python3, where there is one,
// first on the PATH of every script and client the tests start: the
// scripts call python3 by name (standard library only), and where PATH
// finds a version manager's shim first (pyenv's is a bash script) each
// start cost 0.3 s instead of 0.03 s, dozens of times a run. The Kafka
// interop tests already run /usr/bin/python3 (pythonBin).
func preferSystemPython(dir string) {
	const sys = "/usr/bin/python3"
	if _, err := os.Stat(sys); err != nil {
		return
	}
	if p, err := exec.LookPath("python3"); err == nil && p == sys {
		return
	}
	bin := filepath.Join(dir, "python-bin")
	if os.Mkdir(bin, 0o755) != nil || os.Symlink(sys, filepath.Join(bin, "python3")) != nil {
		return
	}
	os.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// runSegfs runs the binary with args and returns its combined output.
func runSegfs(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(segfsBin, args...).CombinedOutput()
	return string(out), err
}
