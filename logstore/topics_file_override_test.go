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

// TestTopicsFileBadOverrideKeptInFile: an override this segfs cannot apply
// is ignored, not erased: Open rewrites the topics file, and it wrote the
// file without it, so that one open by an older segfs (a downgrade, a
// rollback) lost for good a setting a newer one had written, and a value
// mistyped by hand could not be corrected in place. It stays in the file,
// across opens and other config changes, until a change of its own key
// replaces or removes it.
func TestTopicsFileBadOverrideKeptInFile(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	if _, err := s.CreateTopic("kept", 1, map[string]string{"retention.ms": "-1"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	path := filepath.Join(dir, topicsFile)
	edit := func(fn func(ov map[string]string)) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var doc topicsDoc
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		td := doc.Topics["kept"]
		fn(td.Overrides)
		doc.Topics["kept"] = td
		if b, err = json.Marshal(doc); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	inFile := func() map[string]string {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var doc topicsDoc
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		return doc.Topics["kept"].Overrides
	}
	edit(func(ov map[string]string) {
		ov["some.future.key"] = "1"
		ov["segment.bytes"] = "lots"
	})

	s = openStore(t, dir, nil)
	tp, _ := s.Topic("kept")
	if got, want := tp.Overrides(), map[string]string{"retention.ms": "-1"}; !maps.Equal(got, want) {
		s.Close()
		t.Fatalf("overrides %v, want %v", got, want)
	}
	want := map[string]string{"retention.ms": "-1", "some.future.key": "1", "segment.bytes": "lots"}
	if got := inFile(); !maps.Equal(got, want) {
		s.Close()
		t.Fatalf("topics file after an open: %v, want %v", got, want)
	}
	// Another key's change keeps them; a change of the key replaces it.
	if err := tp.SetConfig(map[string]string{"segment.ms": "100000"}); err != nil {
		s.Close()
		t.Fatal(err)
	}
	want["segment.ms"] = "100000"
	if got := inFile(); !maps.Equal(got, want) {
		s.Close()
		t.Fatalf("topics file after a change of another key: %v, want %v", got, want)
	}
	if err := tp.SetConfig(map[string]string{"segment.bytes": "2000000"}); err != nil {
		s.Close()
		t.Fatal(err)
	}
	want["segment.bytes"] = "2000000"
	if got := inFile(); !maps.Equal(got, want) {
		s.Close()
		t.Fatalf("topics file after segment.bytes was set: %v, want %v", got, want)
	}
	s.Close()

	// Taken out by its own key's removal ("" is back to the default).
	edit(func(ov map[string]string) { ov["segment.bytes"] = "lots" })
	s = openStore(t, dir, nil)
	defer s.Close()
	tp, _ = s.Topic("kept")
	if err := tp.SetConfig(map[string]string{"segment.bytes": ""}); err != nil {
		t.Fatal(err)
	}
	delete(want, "segment.bytes")
	if got := inFile(); !maps.Equal(got, want) {
		t.Fatalf("topics file after segment.bytes was removed: %v, want %v", got, want)
	}
	if c := tp.Config(); c.SegmentBytes != DefaultConfig().SegmentBytes || c.RetentionMs != -1 {
		t.Fatalf("config segment.bytes=%d retention.ms=%d", c.SegmentBytes, c.RetentionMs)
	}
}
