package logstore

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"testing"
)

// TestTopicsFileBadOverrideCostsItAlone: an override in the topics file
// that this segfs cannot apply (a key it does not know, written by a newer
// segfs or by hand; a value it refuses) is dropped alone, with a warning:
// the topic keeps its other overrides. All of them went back to the
// defaults: a topic kept forever (retention.ms=-1) and compacted was
// opened with 7 days' retention and the delete policy, so the next
// retention check deleted its older segments, and the next config change
// wrote the loss to the file.
func TestTopicsFileBadOverrideCostsItAlone(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	good := map[string]string{"retention.ms": "-1", "cleanup.policy": "compact", "key.separator": "="}
	if _, err := s.CreateTopic("kept", 1, good); err != nil {
		t.Fatal(err)
	}
	s.Close()

	path := filepath.Join(dir, topicsFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc topicsDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	td := doc.Topics["kept"]
	td.Overrides["some.future.key"] = "1"
	td.Overrides["segment.bytes"] = "lots"
	doc.Topics["kept"] = td
	if b, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, dir, nil)
	tp, err := s.Topic("kept")
	if err != nil {
		t.Fatal(err)
	}
	c := tp.Config()
	if c.RetentionMs != -1 || c.CleanupPolicy != "compact" || c.KeySeparator != "=" || c.SegmentBytes != DefaultConfig().SegmentBytes {
		s.Close()
		t.Fatalf("config after a bad override: retention.ms=%d cleanup.policy=%s key.separator=%q segment.bytes=%d; want -1, compact, = and the default",
			c.RetentionMs, c.CleanupPolicy, c.KeySeparator, c.SegmentBytes)
	}
	if got := tp.Overrides(); !maps.Equal(got, good) {
		s.Close()
		t.Fatalf("overrides %v, want %v", got, good)
	}
	// A later change keeps them in the file.
	if err := tp.SetConfig(map[string]string{"segment.ms": "100000"}); err != nil {
		s.Close()
		t.Fatal(err)
	}
	s.Close()
	s = openStore(t, dir, nil)
	defer s.Close()
	tp, _ = s.Topic("kept")
	want := maps.Clone(good)
	want["segment.ms"] = "100000"
	if got := tp.Overrides(); !maps.Equal(got, want) {
		t.Fatalf("overrides after a change and a reopen: %v, want %v", got, want)
	}
}
