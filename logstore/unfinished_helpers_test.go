package logstore

// Helpers of the tests of the journal of unfinished lines
// (unfinished_test.go): each opens a store with the one topic "a", gives
// its writers unfinished lines, abandons the store as kill -9 would, and
// looks at what the reopened partition holds.

import "testing"

// openUnfinished opens a store in a fresh directory and creates the topic
// "a" of one partition with the settings cfg (nil: the defaults).
func openUnfinished(t *testing.T, cfg map[string]string) (string, *Store, *Partition) {
	t.Helper()
	dir := t.TempDir()
	s := openStore(t, dir, newClock())
	if _, err := s.CreateTopic("a", 1, cfg); err != nil {
		t.Fatal(err)
	}
	return dir, s, mustPartition(t, s, "a")
}

// mustExtend adds b to w's unfinished line (journaled).
func mustExtend(t *testing.T, w *LineWriter, b string) {
	t.Helper()
	if err := w.Extend(nil, []byte(b)); err != nil {
		t.Fatal(err)
	}
}

// wantText fails t unless p's text from offset 0 is want; what begins
// the message ("text", "text after crash").
func wantText(t *testing.T, p *Partition, what, want string) {
	t.Helper()
	if got := textOf(t, p, 0); got != want {
		t.Fatalf("%s %q, want %q", what, got, want)
	}
}

// wantJournalEmpty fails t unless p's journal holds nothing; what begins
// the message ("journal left").
func wantJournalEmpty(t *testing.T, p *Partition, what string) {
	t.Helper()
	if n := journalSize(t, p); n != 0 {
		t.Fatalf("%s: %d bytes", what, n)
	}
}

// appendFailing makes the write "abc\n"+text+"zz" of w (whose unfinished
// line is "ab") with appendFail set to fail, and returns what it stored.
func appendFailing(w *LineWriter, text string, fail func(stored int) error) (int, error) {
	appendFail = fail
	defer func() { appendFail = nil }()
	_, _, stored, err := w.AppendLines([]byte("abc\n"), []byte(text), []byte("zz"))
	return stored, err
}

// appendWholeLines has a new writer of p write n lines "q\n", a write
// each.
func appendWholeLines(t *testing.T, p *Partition, n int) {
	t.Helper()
	o := p.NewLineWriter()
	for i := 0; i < n; i++ {
		mustAppend(t, o, "", "q\n", "")
	}
}
