package tests

import (
	"os"
	"os/exec"
	"testing"
)

// toolsRequiredEnv is set by .ci/run once it has installed every program
// the tests drive (kcat, strace, rsync, python3 with confluent-kafka,
// mkfs.xfs, fusermount3, ...): there a missing one fails the test that
// needs it, where elsewhere it skips. Without it, a failed install left
// CI green with those tests skipped, and parts of tests (the rsync copy of
// TestMountBackupToolsCopyText, kcat's read in TestCompactionConverges)
// were left out without a word.
const toolsRequiredEnv = "SEGFS_TEST_TOOLS_REQUIRED"

// needProgram returns the path of the program name, which the Debian
// package pkg installs. When it is missing the test skips, or fails under
// .ci/run (toolsRequiredEnv).
func needProgram(t testing.TB, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv(toolsRequiredEnv) != "" {
		t.Fatalf("%s not installed (Debian package %s), which .ci/run installs: %v", name, pkg, err)
	}
	t.Skipf("%s not installed (apt-get install %s); .ci/run installs it", name, pkg)
	return ""
}

// optionalProgram is needProgram for a part of a test that the rest can
// do without: when name is missing it says so in the test's log and
// returns false, or fails the test under .ci/run (toolsRequiredEnv).
func optionalProgram(t testing.TB, name, pkg, part string) (string, bool) {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p, true
	}
	if os.Getenv(toolsRequiredEnv) != "" {
		t.Fatalf("%s not installed (Debian package %s), which .ci/run installs: %v", name, pkg, err)
	}
	t.Logf("SKIP %s: %s not installed (apt-get install %s); .ci/run installs it", part, name, pkg)
	return "", false
}
