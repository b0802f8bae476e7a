package fetch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/segfs/segfs/logstore"
)

// OffsetsFile holds committed consumer-group offsets in the data directory.
// The name is segfs's own (Kafka keeps them in the __consumer_offsets
// topic), so Kafka's tools never mistake it for a partition directory.
const OffsetsFile = "segfs-consumer-offsets.json"

// offsetsFileVersion is bumped on incompatible changes of the file.
const offsetsFileVersion = 1

// committedOffset is one committed position of a group in a partition.
type committedOffset struct {
	Offset       int64  `json:"offset"`
	LeaderEpoch  int32  `json:"leader_epoch"`
	Metadata     string `json:"metadata"`
	CommitTimeMs int64  `json:"commit_time_ms"`
}

// offsetsFileData is the file's JSON document.
type offsetsFileData struct {
	Version int                                             `json:"version"`
	Groups  map[string]map[string]map[int32]committedOffset `json:"groups"`
}

// offsetStore keeps committed offsets in memory and persists every commit
// before acknowledging it: the whole map is written with
// logstore.WriteFileAtomic (temp file, fsync, rename, fsync of the
// directory), so a crash leaves either the old or the new file. Commits
// are rare (clients commit every few seconds), so rewriting the file each
// time costs less than the complexity of a log.
type offsetStore struct {
	path string

	mu     sync.Mutex
	groups map[string]map[string]map[int32]committedOffset // group → topic → partition
}

func newOffsetStore(dir string) *offsetStore {
	return &offsetStore{
		path:   filepath.Join(dir, OffsetsFile),
		groups: map[string]map[string]map[int32]committedOffset{},
	}
}

// load reads the file; a missing file is an empty store.
func (o *offsetStore) load() error {
	b, err := os.ReadFile(o.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("committed offsets: %w", err)
	}
	var d offsetsFileData
	if err := json.Unmarshal(b, &d); err != nil {
		return fmt.Errorf("committed offsets: %s: %w", o.path, err)
	}
	if d.Version != offsetsFileVersion {
		return fmt.Errorf("committed offsets: %s: unknown version %d", o.path, d.Version)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if d.Groups != nil {
		o.groups = d.Groups
	}
	return nil
}

// commitEntry is one offset to store.
type commitEntry struct {
	topic     string
	partition int32
	offset    committedOffset
}

// commit stores entries for group and persists them. On a write error
// nothing changes in memory either, so readers never see an offset that a
// restart would lose.
func (o *offsetStore) commit(group string, entries []commitEntry) error {
	if len(entries) == 0 {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	old := o.groups[group]
	// Copy on write: old stays intact for the rollback below.
	next := maps.Clone(old)
	if next == nil {
		next = map[string]map[int32]committedOffset{}
	}
	cloned := map[string]bool{}
	for _, e := range entries {
		if !cloned[e.topic] {
			cloned[e.topic] = true
			parts := maps.Clone(next[e.topic])
			if parts == nil {
				parts = map[int32]committedOffset{}
			}
			next[e.topic] = parts
		}
		next[e.topic][e.partition] = e.offset
	}
	o.groups[group] = next
	b, err := json.MarshalIndent(offsetsFileData{Version: offsetsFileVersion, Groups: o.groups}, "", " ")
	if err == nil {
		err = logstore.WriteFileAtomic(o.path, b)
	}
	if err != nil {
		if old == nil {
			delete(o.groups, group)
		} else {
			o.groups[group] = old
		}
		return fmt.Errorf("committed offsets: %w", err)
	}
	return nil
}

// hasGroup reports whether group has committed offsets: the group exists,
// as Kafka's simple group created by its first commit does.
func (o *offsetStore) hasGroup(group string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.groups[group]) > 0
}

// get returns the committed offset of group in topic/partition.
func (o *offsetStore) get(group, topic string, partition int32) (committedOffset, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	c, ok := o.groups[group][topic][partition]
	return c, ok
}

// topics returns the topics group has committed offsets for, sorted, with
// their partitions sorted.
func (o *offsetStore) topics(group string) map[string][]int32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string][]int32{}
	for t, parts := range o.groups[group] {
		out[t] = slices.Sorted(maps.Keys(parts))
	}
	return out
}

// groupNames returns the groups that have committed offsets.
func (o *offsetStore) groupNames() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for g, topics := range o.groups {
		if len(topics) > 0 {
			out = append(out, g)
		}
	}
	return out
}
