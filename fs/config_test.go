package fs

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestConfigLineTooLong: a line written to config is held until its
// newline, up to 64 KiB (maxConfigLine); past that the write(2) fails with
// EINVAL and the line is dropped, its tail too, so that a writer streaming
// a line without end (a comment, which every prefix of is valid) cannot
// grow the daemon's memory without bound. The handle takes lines again
// after the refused one.
func TestConfigLineTooLong(t *testing.T) {
	m := mountForTest(t, Options{})
	m.topic(t, "cl")
	f, err := os.OpenFile(m.path("cl", "config"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	write := func(what string, s string, want error) {
		t.Helper()
		if _, err := f.WriteString(s); !errors.Is(err, want) && !(err == nil && want == nil) {
			t.Fatalf("write of %s: %v, want %v", what, err, want)
		}
	}
	write("40 KiB of a comment", "# "+strings.Repeat("c", 40<<10), nil)
	write("30 KiB more of it (over 64 KiB)", strings.Repeat("c", 30<<10), syscall.EINVAL)
	write("the refused line's end", "ccc\n", syscall.EINVAL)
	write("a setting", "segment.ms=70000\n", nil)
	if err := f.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	b, err := os.ReadFile(m.path("cl", "config"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\nsegment.ms=70000\n") {
		t.Errorf("config after the refused line and a setting:\n%s", b)
	}
}
