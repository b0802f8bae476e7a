package logstore

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"
)

// TestKafkaTopicIDKept: a data directory copied from Kafka (no topics file
// of segfs) keeps each topic's id from its partitions' partition.metadata,
// as Kafka's log loader does, so that clients that know the topic by id
// (Fetch v13+, Metadata by id) find it after the move; the file is left as
// Kafka wrote it, and the id stays across a reopen. A directory from
// before Kafka 2.8 (no partition.metadata) gets a new id, written to every
// partition. No test gave partition.metadata with an id.
func TestKafkaTopicIDKept(t *testing.T) {
	dir := t.TempDir()
	kafkaID := [16]byte{0x4f, 0x1e, 0x0a, 0x5b, 0x77, 0x10, 0x4c, 0x2d, 0x9a, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07}
	meta := "version: 0\ntopic_id: " + base64.RawURLEncoding.EncodeToString(kafkaID[:]) + "\n" // Kafka ends it with a newline
	for _, part := range []string{"orders-0", "orders-1", "old-0", "old-1"} {
		pdir := filepath.Join(dir, part)
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pdir, "00000000000000000000.log"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if part[:2] == "or" {
			if err := os.WriteFile(filepath.Join(pdir, "partition.metadata"), []byte(meta), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	ids := func() (orders, old [16]byte) {
		t.Helper()
		s := openStore(t, dir, nil)
		defer s.Close()
		o, err := s.Topic("orders")
		if err != nil {
			t.Fatal(err)
		}
		d, err := s.Topic("old")
		if err != nil {
			t.Fatal(err)
		}
		return o.ID(), d.ID()
	}
	orders, old := ids()
	if orders != kafkaID {
		t.Fatalf("orders: topic id %x, want Kafka's %x from partition.metadata", orders, kafkaID)
	}
	for _, part := range []string{"orders-0", "orders-1"} {
		if b, err := os.ReadFile(filepath.Join(dir, part, "partition.metadata")); err != nil || string(b) != meta {
			t.Fatalf("%s/partition.metadata: %q %v, want Kafka's as it was", part, b, err)
		}
	}
	if old == ([16]byte{}) || old == kafkaID {
		t.Fatalf("old: topic id %x, want a new one", old)
	}
	for _, part := range []string{"old-0", "old-1"} {
		id, ok := readPartitionTopicID(filepath.Join(dir, part))
		if !ok || id != old {
			t.Fatalf("%s/partition.metadata: id %x %v, want the topic's %x", part, id, ok, old)
		}
	}
	if o2, d2 := ids(); o2 != orders || d2 != old {
		t.Fatalf("after a reopen: ids %x and %x, want %x and %x", o2, d2, orders, old)
	}
}
