package cli

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/segfs/segfs/logstore"
)

// TestVerifyVanishedSegment: verify may run beside a mount, whose cleaners
// delete segments between verify's listing and its reading them. A
// segment listed and then gone (its files removed after listPartitions,
// as retention's rename to .deleted does) is a warning and is skipped; the
// other segments are still checked, and damage in them still found.
func TestVerifyVanishedSegment(t *testing.T) {
	dir := t.TempDir()
	s, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTopic("v", 1, map[string]string{"segment.bytes": "2048"}); err != nil {
		t.Fatal(err)
	}
	p, err := s.Partition("v", 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if _, _, err := p.AppendLines(fmt.Appendf(nil, "line %d %s\n", i, strings.Repeat("x", 40))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	parts, err := listPartitions(dir)
	if err != nil || len(parts) != 1 || len(parts[0].Segments) < 4 {
		t.Fatalf("listPartitions: %v, %+v", err, parts)
	}
	segs := parts[0].Segments
	gone := segs[1] // a closed segment in the middle
	for _, f := range []string{gone.Log, gone.Index, gone.TimeIndex} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	v := &verifier{out: &out}
	r := v.partition(parts[0])
	if v.errors != 0 || !strings.Contains(out.String(), "warning: "+gone.Log+": deleted while being checked") {
		t.Fatalf("vanished segment: %d errors\n%s", v.errors, out.String())
	}
	if want := len(segs) - 1; r.batches == 0 || r.next != p.LogEndOffset() {
		t.Fatalf("the %d other segments were not checked: %+v (log end %d)", want, r, p.LogEndOffset())
	}

	// Damage in a segment that is still there is still an error.
	b, err := os.ReadFile(segs[2].Log)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if err := os.WriteFile(segs[2].Log, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	v = &verifier{out: &out}
	v.partition(parts[0])
	if v.errors == 0 {
		t.Fatalf("a flipped bit beside a vanished segment went unreported:\n%s", out.String())
	}
}
