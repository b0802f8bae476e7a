package logstore

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// Topic is a named set of partitions sharing one config.
type Topic struct {
	store *Store
	name  string
	id    [16]byte
	cfg   atomic.Pointer[Config]

	mu        sync.Mutex // guards overrides, unapplied, cfgGen and parts
	overrides map[string]string
	// unapplied holds the overrides of the topics file this segfs cannot
	// apply (a key it does not know, from a newer segfs or a hand edit; a
	// value it refuses): ignored, but written back with the others, until
	// a change of that key replaces or removes it. Open rewrites the file,
	// and it wrote it without them: one open by an older segfs lost a
	// newer one's setting for good.
	unapplied map[string]string
	// cfgGen counts the config changes committed (store.topicsMu held
	// too), so that UpdateConfig can tell whether its snapshot is still
	// the current config.
	cfgGen uint64
	parts  []*Partition

	// growMu serializes the additions of partitions (AddPartition,
	// AddPartitions), taken before mu: AddPartitions makes its
	// partitions without mu, which every lookup of a partition takes.
	growMu sync.Mutex
	// adding is the partition count before an addition under way
	// (growLocked), 0 if none: the topics file records it as
	// adding_from, so that a crash part way is rolled back at the next
	// Open. Guarded by store.topicsMu.
	adding int32

	born atomic.Int64 // createdTime in Unix nanoseconds, 0 until known

	// cfgChanged is when the config last changed, in Unix nanoseconds
	// (ConfigModTime); persisted in the topics file.
	cfgChanged atomic.Int64
}

// ConfigModTime is when the topic's config last changed: when the topic
// was created or its overrides last changed (SetConfig, UpdateConfig), as
// the topics file records it, so that it survives a restart. The mtime of
// the mounted config file: it used to be when the mount first showed the
// file, so after every remount `find -newer` listed configs that never
// changed.
func (t *Topic) ConfigModTime() time.Time {
	return time.Unix(0, t.cfgChanged.Load())
}

// configChangedAtLoad is the config change time of a topic loaded from
// td: the time the topics file records, or, in a file written before
// segfs kept it (or none, in a directory copied from Kafka), the best
// bound there is that does not move: a topic without overrides has the
// config it was created with (the birth time of its partition 0
// directory), and one with overrides had them when the topics file was
// last written (docTime, read before Open rewrites the file). Open then
// writes the time into the file, so it stays put. Now if neither is known.
func configChangedAtLoad(t *Topic, td topicDoc, docTime time.Time) int64 {
	if td.ConfigChangedNs > 0 {
		return td.ConfigChangedNs
	}
	at := docTime
	if len(t.overrides) == 0 {
		if b := t.createdTime(); !b.IsZero() {
			at = b
		}
	}
	if at.IsZero() {
		at = time.Now()
	}
	return at.UnixNano()
}

// createdTime is the birth time of the topic's partition 0 directory,
// made when the topic was created; it never changes, so it is read once.
// The zero time where the filesystem records no birth time.
func (t *Topic) createdTime() time.Time {
	if ns := t.born.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	t.mu.Lock()
	var dir string
	if len(t.parts) > 0 {
		dir = t.parts[0].dir
	}
	t.mu.Unlock()
	b, ok := birthTime(dir)
	if dir == "" || !ok {
		return time.Time{}
	}
	t.born.Store(b.UnixNano())
	return b
}

func (t *Topic) Name() string { return t.name }

// ID is the topic's UUID (as in partition.metadata).
func (t *Topic) ID() [16]byte { return t.id }

// Config returns the effective config (defaults + overrides).
func (t *Topic) Config() Config { return *t.cfg.Load() }

// Overrides returns the explicitly set keys.
func (t *Topic) Overrides() map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]string, len(t.overrides))
	for k, v := range t.overrides {
		out[k] = v
	}
	return out
}

// fileOverrides is what the topics file holds for the topic: its
// overrides and those it keeps without applying them (unapplied).
func (t *Topic) fileOverrides() map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]string, len(t.overrides)+len(t.unapplied))
	maps.Copy(out, t.overrides)
	for k, v := range t.unapplied {
		out[k] = v
	}
	return out
}

// ConfigSnapshot returns the effective config and the overrides of one
// moment: read one after the other, a SetConfig between them could show a
// new override with its old effective value (DescribeConfigs).
func (t *Topic) ConfigSnapshot() (Config, map[string]string) {
	cfg, overrides, _ := t.configSnapshot()
	return cfg, overrides
}

// SetConfig applies changes atomically: key=value sets an override, an
// empty value resets the key to its default. Unknown keys or invalid values
// fail with ErrInvalidConfig and change nothing. Persisted before it returns.
func (t *Topic) SetConfig(changes map[string]string) error {
	t.store.topicsMu.Lock()
	defer t.store.topicsMu.Unlock()
	return t.setConfigLocked(changes)
}

// ConfigUpdate computes SetConfig changes from a topic's current settings:
// its effective config and its overrides (a copy fn may keep).
type ConfigUpdate func(cfg Config, overrides map[string]string) (map[string]string, error)

// UpdateConfig applies the changes fn computes from the current settings
// as one step against every other config change (SetConfig, as the
// mount's config file does, or another UpdateConfig): for a
// read-modify-write such as Kafka's IncrementalAlterConfigs APPEND, whose
// result depends on the value it replaces. Computed from a snapshot and
// then set, a change written to the config file in between was lost.
//
// fn runs with no lock held, so that it may take its time or call the
// topic, and may run more than once: if the config changed after its
// snapshot, the changes are not applied and fn runs again on the new
// settings. An error from fn is returned as it is and changes nothing;
// the changes are checked and persisted as SetConfig's.
func (t *Topic) UpdateConfig(fn ConfigUpdate) error { return t.updateConfig(fn, false) }

// CheckConfigUpdate reports the error UpdateConfig(fn) would fail with
// now, changing nothing: the dry run for validate_only.
func (t *Topic) CheckConfigUpdate(fn ConfigUpdate) error { return t.updateConfig(fn, true) }

func (t *Topic) updateConfig(fn ConfigUpdate, dryRun bool) error {
	for {
		cfg, overrides, gen := t.configSnapshot()
		changes, err := fn(cfg, overrides)
		if err != nil {
			return err
		}
		t.store.topicsMu.Lock()
		// Every commit holds topicsMu: cfgGen cannot move until it is
		// released.
		t.mu.Lock()
		current := t.cfgGen == gen
		t.mu.Unlock()
		switch {
		case !current:
			err = errStaleConfig
		case dryRun:
			err = t.CheckConfig(changes)
		default:
			err = t.setConfigLocked(changes)
		}
		t.store.topicsMu.Unlock()
		if err != errStaleConfig {
			return err
		}
	}
}

// errStaleConfig is updateConfig's signal to compute the changes again.
var errStaleConfig = errors.New("config changed since its snapshot")

// configSnapshot is the effective config, the overrides and the commit
// count, all of one moment: under topicsMu, which a commit holds from
// the new overrides to the new effective config.
func (t *Topic) configSnapshot() (Config, map[string]string, uint64) {
	t.store.topicsMu.Lock()
	defer t.store.topicsMu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	return *t.cfg.Load(), maps.Clone(t.overrides), t.cfgGen
}

// setConfigLocked is SetConfig with store.topicsMu held.
func (t *Topic) setConfigLocked(changes map[string]string) error {
	t.mu.Lock()
	next, cfg, err := t.nextConfigLocked(changes)
	if err != nil {
		t.mu.Unlock()
		return err
	}
	old, oldUnapplied := t.overrides, t.unapplied
	t.overrides = next
	for k := range changes {
		if _, ok := t.unapplied[k]; ok {
			// Set or reset in this segfs's terms: the stored value
			// it could not apply goes.
			t.unapplied = maps.Clone(t.unapplied)
			for k := range changes {
				delete(t.unapplied, k)
			}
			break
		}
	}
	t.mu.Unlock()
	// Only a change moves the config's mtime: writing a value it has
	// already changes nothing a reader of the file sees.
	oldChanged := t.cfgChanged.Load()
	if !maps.Equal(old, next) {
		t.cfgChanged.Store(time.Now().UnixNano())
	}
	if err := t.store.saveTopicsLocked(); err != nil {
		t.mu.Lock()
		t.overrides, t.unapplied = old, oldUnapplied
		t.mu.Unlock()
		t.cfgChanged.Store(oldChanged)
		return err
	}
	t.mu.Lock()
	t.cfgGen++
	t.mu.Unlock()
	prev := t.cfg.Swap(&cfg)
	if prev.KeySeparator != cfg.KeySeparator {
		// Rendered text changes shape: open files keep their generation.
		for _, p := range t.Partitions() {
			p.bumpGeneration()
		}
	}
	return nil
}

// CheckConfig reports the error SetConfig(changes) would fail with now,
// changing nothing: a dry run for Kafka's AlterConfigs with validate_only.
func (t *Topic) CheckConfig(changes map[string]string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, _, err := t.nextConfigLocked(changes)
	return err
}

// nextConfigLocked returns the overrides and effective config after
// changes, or the error wrapping ErrInvalidConfig that refuses them (t.mu
// held).
func (t *Topic) nextConfigLocked(changes map[string]string) (map[string]string, Config, error) {
	next := make(map[string]string, len(t.overrides)+len(changes))
	for k, v := range t.overrides {
		next[k] = v
	}
	for k, v := range changes {
		if _, ok := configKeys[k]; !ok {
			return nil, Config{}, fmt.Errorf("%w: unknown key %q", ErrInvalidConfig, k)
		}
		// key.separator may legitimately be set to any non-empty string;
		// an empty value means "back to the default" for every key.
		if v == "" {
			delete(next, k)
		} else {
			next[k] = v
		}
	}
	cfg, err := withOverrides(next)
	if err == nil {
		err = checkValues(&cfg)
	}
	if err != nil {
		return nil, Config{}, err
	}
	return next, cfg, nil
}

// Partitions returns the partitions in order 0..n-1.
func (t *Topic) Partitions() []*Partition {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]*Partition(nil), t.parts...)
}

// PartitionCount is len(Partitions()), without the copy.
func (t *Topic) PartitionCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.parts)
}

// Partition returns partition n or ErrUnknownPartition.
func (t *Topic) Partition(n int32) (*Partition, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n < 0 || int(n) >= len(t.parts) {
		return nil, fmt.Errorf("%w: %s-%d", ErrUnknownPartition, t.name, n)
	}
	return t.parts[n], nil
}

// AddPartition adds partition n, which must be the next number
// (ErrInvalidPartition otherwise, ErrPartitionExists if present): `mkdir
// MOUNT/T/N`. It is AddPartitions to n+1, so that a crash while the
// partition is made leaves no half-made partition behind either.
func (t *Topic) AddPartition(n int32) (*Partition, error) {
	t.growMu.Lock()
	defer t.growMu.Unlock()
	have := int32(t.PartitionCount())
	if n >= 0 && n < have {
		return nil, fmt.Errorf("%w: %s-%d", ErrPartitionExists, t.name, n)
	}
	if n != have {
		return nil, fmt.Errorf("%w: %s has %d partitions, the next is %d, not %d", ErrInvalidPartition, t.name, have, have, n)
	}
	if err := t.growLocked(n + 1); err != nil {
		return nil, err
	}
	return t.Partition(n)
}

// AddPartitions grows the topic to count partitions as one change, as
// Kafka's controller applies a CreatePartitions: all the new partitions
// appear at once, or, if making one fails (a full disk, no descriptors
// left), none does: those already made are closed and their directories
// removed before the error returns, so the topic keeps its old count. Made
// one at a time and published as they came, a failure at partition 95 of
// 200 left the topic with 95. The partitions are made without mu, so that
// lookups in the topic's existing partitions (each Produce, Fetch, read in
// the mount) do not wait for them; an AddPartition meanwhile (`mkdir
// T/N`) waits. A topic that already has count partitions or more is left
// as it is. Close waits for an AddPartitions under way, as for a
// CreateTopic.
//
// A crash part way is rolled back too, at the next Open: before the first
// new directory is made, the topics file records the old count as the
// topic's adding_from (Topic.adding), and only once every new partition
// is made (and the data directory synced) is it rewritten without it and
// the partitions published. An Open that finds the mark removes the
// partition directories from that number on, whatever they hold: the
// client that asked got no answer and retries, as with a topic whose
// creation a crash interrupted (Store.creating). A kill -9 during a
// 200-partition CreatePartitions used to leave the topic with the
// partitions made so far, a count nobody asked for (and a retry of the
// request answered INVALID_PARTITIONS if the kill came after the last
// one). The cost is two rewrites of the topics file (each with its
// fsyncs) per addition, `mkdir T/N` included.
func (t *Topic) AddPartitions(count int32) error {
	t.growMu.Lock()
	defer t.growMu.Unlock()
	return t.growLocked(count)
}

// growLocked is AddPartitions with growMu held.
func (t *Topic) growLocked(count int32) error {
	s := t.store
	from := int32(t.PartitionCount())
	if count <= from {
		return nil
	}
	s.topicsMu.Lock()
	if s.closed.Load() {
		s.topicsMu.Unlock()
		return ErrClosed
	}
	t.adding = from
	if err := s.saveTopicsLocked(); err != nil {
		// Nothing is made yet; if the file was replaced after all,
		// its mark only makes the next open look for directories
		// that are not there.
		t.adding = 0
		s.topicsMu.Unlock()
		return fmt.Errorf("adding partitions to %s: %w (none was added: the topic keeps %d)", t.name, err, from)
	}
	s.creations.Add(1)
	s.topicsMu.Unlock()
	defer s.creations.Done()
	var made []*Partition
	undo := func(err error) error {
		for _, p := range made {
			p.close()
			removeNewPartitionDir(p.dir)
		}
		if len(made) > 0 {
			if serr := syncDir(s.dir); serr != nil {
				s.log.Warn("data directory not synced after removing the partitions of a failed addition", "topic", t.name, "err", serr)
			}
		}
		s.topicsMu.Lock()
		t.adding = 0
		if serr := s.saveTopicsLocked(); serr != nil {
			// The mark stays: the next open removes whatever is left
			// from partition `from` on, and any later addition or
			// config change rewrites the file without it.
			s.log.Warn("topics file not rewritten after a failed partition addition", "topic", t.name, "err", serr)
		}
		s.topicsMu.Unlock()
		return err
	}
	for n := from; n < count; n++ {
		p, err := s.createPartition(t, n)
		if err != nil {
			return undo(fmt.Errorf("adding partition %d of %s: %w (the %d partition(s) added before it were removed: the topic keeps %d)", n, t.name, err, len(made), from))
		}
		made = append(made, p)
	}
	// createPartition synced the data directory after each partition,
	// so the new directories are durable before the mark goes; the
	// partitions are published only once it is gone, so that nothing is
	// ever written to a partition the next open would remove.
	s.topicsMu.Lock()
	t.adding = 0
	err := s.saveTopicsLocked()
	if err != nil {
		t.adding = from
	}
	s.topicsMu.Unlock()
	if err != nil {
		return undo(fmt.Errorf("adding partitions %d to %d of %s: %w (the %d partition(s) made were removed: the topic keeps %d)", from, count-1, t.name, err, len(made), from))
	}
	t.mu.Lock()
	t.parts = append(t.parts, made...)
	t.mu.Unlock()
	return nil
}

func newTopicID() [16]byte {
	var id [16]byte
	rand.Read(id[:])
	id[6] = id[6]&0x0f | 0x40 // version 4
	id[8] = id[8]&0x3f | 0x80
	return id
}

func topicIDString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// writePartitionMeta writes partition.metadata in Kafka's text format
// (KAFKA-FORMAT.md §10.3).
func writePartitionMeta(dir string, id [16]byte) error {
	return WriteFileAtomic(filepath.Join(dir, "partition.metadata"),
		[]byte("version: 0\ntopic_id: "+topicIDString(id)))
}

// readPartitionTopicID reads partition.metadata's topic id, if any.
func readPartitionTopicID(dir string) ([16]byte, bool) {
	var id [16]byte
	b, err := os.ReadFile(filepath.Join(dir, "partition.metadata"))
	if err != nil {
		return id, false
	}
	for _, line := range splitLines(string(b)) {
		const pfx = "topic_id: "
		if len(line) > len(pfx) && line[:len(pfx)] == pfx {
			raw, err := base64.RawURLEncoding.DecodeString(line[len(pfx):])
			if err == nil && len(raw) == 16 {
				copy(id[:], raw)
				return id, id != [16]byte{}
			}
		}
	}
	return id, false
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		out = append(out, s[:i])
		if i == len(s) {
			break
		}
		s = s[i+1:]
	}
	return out
}
