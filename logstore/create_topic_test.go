package logstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCreateTopicDoesNotStallLookups: while CreateTopic makes a topic's
// partitions, other topics are looked up at once. CreateTopic used to hold
// topicsMu for the whole creation, so a 5000-partition topic created
// through Kafka's CreateTopics (or mkdir with a large --partitions) stalled
// every Produce, Fetch and Metadata of the broker, and every lookup in the
// mount, for seconds. The name stays reserved meanwhile, and is released
// if the creation fails.
func TestCreateTopicDoesNotStallLookups(t *testing.T) {
	dir := t.TempDir()
	open := func() *Store { return openStore(t, dir, nil) }
	s := open()
	defer func() { s.Close() }()
	if _, err := s.CreateTopic("other", 1, nil); err != nil {
		t.Fatal(err)
	}

	// Partition 1's metadata is written through a FIFO whose buffer is
	// full: the creation blocks there until the test drains it, and then
	// fails (fsync of a FIFO is EINVAL).
	if err := os.Mkdir(filepath.Join(dir, "big-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "big-1", "partition.metadata.tmp")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	// Raw system calls: an *os.File would wait in Go's poller instead of
	// answering EAGAIN.
	pipe, err := syscall.Open(fifo, syscall.O_RDWR|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(pipe)
	chunk := make([]byte, 4096)
	for {
		if _, err := syscall.Write(pipe, chunk); err != nil {
			if !errors.Is(err, syscall.EAGAIN) {
				t.Fatal(err)
			}
			break
		}
	}
	created := make(chan error, 1)
	go func() {
		_, err := s.CreateTopic("big", 3, nil)
		created <- err
	}()
	// Partition 0 is made: the creation is under way.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "big-0", "partition.metadata")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("partition big-0 never appeared")
		}
	}
	// The topics file names big as being created before its partitions
	// exist, so that a crash now leaves no half-made topic behind
	// (TestCreateTopicInterruptedRemovedAtOpen).
	if doc := readTopicsDoc(t, dir); !doc.Topics["big"].Creating {
		t.Errorf("topics file during the creation of big: %+v, want big marked creating", doc.Topics)
	}
	// Bounded for liveness: before the fix each call waited for the
	// creation, which waits for the drain below.
	within := func(what string, f func() error) error {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- f() }()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Errorf("%s waits for the creation of another topic", what)
			return nil
		}
	}
	if err := within("looking up a topic", func() error { _, err := s.Topic("other"); return err }); err != nil {
		t.Errorf("Topic(other) = %v", err)
	}
	if err := within("looking up the topic being created", func() error { _, err := s.Topic("big"); return err }); err != nil && !errors.Is(err, ErrUnknownTopic) {
		t.Errorf("Topic(big) during its creation = %v, want ErrUnknownTopic", err)
	}
	if err := within("creating it again", func() error { _, err := s.CreateTopic("big", 1, nil); return err }); err != nil && !errors.Is(err, ErrTopicExists) {
		t.Errorf("CreateTopic(big) during its creation = %v, want ErrTopicExists", err)
	}

	for {
		if _, err := syscall.Read(pipe, chunk); err != nil {
			break
		}
	}
	if err := <-created; err == nil {
		t.Fatal("creation through a FIFO succeeded")
	}
	if _, err := s.Topic("big"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("failed creation left topic big: %v", err)
	}
	// The failed creation released the name.
	if _, err := s.CreateTopic("big", 2, nil); err != nil {
		t.Fatalf("creating big after a failed creation: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open()
	if tp, err := s.Topic("big"); err != nil || tp.PartitionCount() != 2 {
		t.Fatalf("after reopen: %v", err)
	}
}

// readTopicsDoc reads dir's topics file.
func readTopicsDoc(t *testing.T, dir string) topicsDoc {
	t.Helper()
	var doc topicsDoc
	b, err := os.ReadFile(filepath.Join(dir, topicsFile))
	if err == nil {
		err = json.Unmarshal(b, &doc)
	}
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestCreateTopicInterruptedRemovedAtOpen: a topic whose creation a crash
// interrupted (kill -9 part-way through a CreateTopics of thousands of
// partitions) is gone at the next open, partitions and all, and can be
// created again with its config. The next open used to adopt the
// partition directories made so far as a topic with the default config,
// so the client's retry got TOPIC_ALREADY_EXISTS and a compacted topic
// deleted by time.
func TestCreateTopicInterruptedRemovedAtOpen(t *testing.T) {
	dir := t.TempDir()
	open := func() *Store { return openStore(t, dir, nil) }
	s := open()
	compact := map[string]string{"cleanup.policy": "compact"}
	if _, err := s.CreateTopic("keep", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTopic("big", 3, compact); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// What a crash leaves while partition 2 of big is being made: the
	// topics file marks big as being created, partitions 0 and 1 exist.
	doc := readTopicsDoc(t, dir)
	e := doc.Topics["big"]
	e.Creating = true
	doc.Topics["big"] = e
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, topicsFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "big-2")); err != nil {
		t.Fatal(err)
	}

	s = open()
	defer func() { s.Close() }()
	if _, err := s.Topic("big"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("interrupted topic after open: %v, want ErrUnknownTopic", err)
	}
	for _, d := range []string{"big-0", "big-1"} {
		if _, err := os.Stat(filepath.Join(dir, d)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after open: %v, want it removed", d, err)
		}
	}
	if _, ok := readTopicsDoc(t, dir).Topics["big"]; ok {
		t.Error("topics file still names the interrupted topic")
	}
	if _, err := s.Topic("keep"); err != nil {
		t.Fatalf("other topic: %v", err)
	}
	tp, err := s.CreateTopic("big", 3, compact)
	if err != nil {
		t.Fatalf("creating the topic again: %v", err)
	}
	if got := tp.Config().CleanupPolicy; got != "compact" {
		t.Fatalf("cleanup.policy of the re-created topic = %q", got)
	}
	if doc := readTopicsDoc(t, dir); doc.Topics["big"].Creating {
		t.Error("a finished creation is still marked creating")
	}
}

// TestClusterMetadataTopic: __cluster_metadata, the topic of KRaft's
// metadata log, is refused as a new topic's name by CreateTopic (the
// path of mkdir, CreateTopics and auto-creation) with ErrReservedName, an
// ErrInvalidName; CreateTopic made it, so that the mount served a topic
// CreateTopics refused. A data directory copied from a KRaft broker holds
// __cluster_metadata-0: it opens, the directory is not loaded as a topic
// (as Kafka's log manager skips it) and is left byte for byte as it was,
// and the log says so. It used to be loaded as a topic, given index files
// and partition metadata, and subject to retention.
func TestClusterMetadataTopic(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	for _, check := range []func() error{
		func() error { _, err := s.CreateTopic(ClusterMetadataTopic, 1, nil); return err },
		func() error { _, err := s.CheckCreateTopic(ClusterMetadataTopic, nil); return err },
	} {
		if err := check(); !errors.Is(err, ErrReservedName) || !errors.Is(err, ErrInvalidName) {
			t.Errorf("creating %s: %v, want ErrReservedName (an ErrInvalidName)", ClusterMetadataTopic, err)
		}
	}
	// Names beside it are ordinary.
	if _, err := s.CreateTopic("__cluster_metadata2", 1, nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(filepath.Join(dir, ClusterMetadataTopic+"-0")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused creation left %s-0: %v", ClusterMetadataTopic, err)
	}

	// A KRaft broker's metadata log, as Kafka wrote it.
	seg, err := os.ReadFile(filepath.Join("record", "testdata", "kraft-metadata-00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}
	mdir := filepath.Join(dir, ClusterMetadataTopic+"-0")
	if err := os.Mkdir(mdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mdir, "00000000000000000000.log"), seg, 0o644); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	s, err = Open(dir, Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatalf("opening a data directory holding KRaft's metadata log: %v", err)
	}
	var names []string
	for _, tp := range s.Topics() {
		names = append(names, tp.Name())
	}
	if len(names) != 1 || names[0] != "__cluster_metadata2" {
		t.Errorf("topics %q, want __cluster_metadata2 alone", names)
	}
	if _, err := s.CreateTopic(ClusterMetadataTopic, 1, nil); !errors.Is(err, ErrReservedName) {
		t.Errorf("creating %s beside its directory: %v", ClusterMetadataTopic, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logged.String(), "level=WARN") || !strings.Contains(logged.String(), mdir) {
		t.Errorf("the log does not name the skipped directory %s:\n%s", mdir, logged.String())
	}
	ents, err := os.ReadDir(mdir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != "00000000000000000000.log" {
		var got []string
		for _, e := range ents {
			got = append(got, e.Name())
		}
		t.Errorf("%s holds %q after a mount, want the .log alone", mdir, got)
	}
	if b, err := os.ReadFile(filepath.Join(mdir, "00000000000000000000.log")); err != nil || !bytes.Equal(b, seg) {
		t.Errorf("the metadata log changed: %v", err)
	}
}
