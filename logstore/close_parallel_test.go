package logstore

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestCloseSealsEveryPartition: Close seals partitions on closeWorkers
// goroutines; every partition of every topic, more of them than workers,
// must be sealed and closed once: its recovery point in the checkpoint is
// its log end, and the next open is clean and reads every line.
func TestCloseSealsEveryPartition(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	const topics, parts = 9, 3 // 27 partitions, more than closeWorkers
	want := map[tp]int64{}
	for i := range topics {
		name := fmt.Sprintf("t%d", i)
		tpc, err := s.CreateTopic(name, parts, nil)
		if err != nil {
			t.Fatal(err)
		}
		for n := range int32(parts) {
			p, err := tpc.Partition(n)
			if err != nil {
				t.Fatal(err)
			}
			lines := int(n) + i + 1
			for l := range lines {
				if _, _, err := p.AppendLines(fmt.Appendf(nil, "%s/%d line %d\n", name, n, l)); err != nil {
					t.Fatal(err)
				}
			}
			want[tp{name, n}] = int64(lines)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, cleanShutdownFile)); err != nil {
		t.Fatalf("no clean-shutdown marker after Close: %v", err)
	}
	got, err := readOffsetCheckpoint(filepath.Join(dir, recoveryCheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	for k, leo := range want {
		if got[k] != leo {
			t.Errorf("%s-%d: recovery point %d after Close, want its log end %d", k.topic, k.part, got[k], leo)
		}
	}
	s = openStore(t, dir, nil)
	defer s.Close()
	for k, leo := range want {
		p, err := s.Partition(k.topic, k.part)
		if err != nil {
			t.Fatal(err)
		}
		if e := p.LogEndOffset(); e != leo {
			t.Errorf("%s-%d: log end %d after reopening, want %d", k.topic, k.part, e, leo)
		}
	}
}
