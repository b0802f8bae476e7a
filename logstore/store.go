package logstore

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Files of the data directory root. Kafka's own names where Kafka has the
// concept; segfs- names for what Kafka keeps elsewhere (topic configs live
// in Kafka's controller, not in the log dir).
const (
	recoveryCheckpointFile = "recovery-point-offset-checkpoint"
	logStartCheckpointFile = "log-start-offset-checkpoint"
	cleanerCheckpointFile  = "cleaner-offset-checkpoint"
	cleanShutdownFile      = ".kafka_cleanshutdown"
	topicsFile             = "segfs-topics.json"
	producerIDFile         = "segfs-producer-id"
)

// Options configure a Store.
type Options struct {
	Logger            *slog.Logger     // nil = slog.Default()
	DefaultPartitions int              // partitions of a topic created with n <= 0; default 1
	Now               func() time.Time // clock; nil = time.Now (tests inject)

	// RetentionCheckInterval is how often retention runs (Kafka's
	// log.retention.check.interval.ms); default 5 minutes, negative = never.
	RetentionCheckInterval time.Duration
	// CleanerInterval is how often compaction looks for work (Kafka's
	// log.cleaner.backoff.ms); default 15 s, negative = never.
	CleanerInterval time.Duration
	// CleanerBufferBytes sizes the compaction offset map (24 bytes a key);
	// default 16 MiB, about 600,000 keys per pass.
	CleanerBufferBytes int
	// ProducerIDExpiration is how long an idempotent producer's state
	// outlives its last batch's timestamp (Kafka's
	// producer.id.expiration.ms); default 1 day, negative = never.
	// Every producer run of franz-go, and of any client with idempotence
	// on, is a new producer id, so without it the state of each one ever
	// seen stays in memory and in every .snapshot for good.
	ProducerIDExpiration time.Duration
	// ProducerIDExpirationCheckInterval is how often expired producers
	// are dropped (Kafka's producer.id.expiration.check.interval.ms);
	// default the smaller of 10 minutes and ProducerIDExpiration.
	ProducerIDExpirationCheckInterval time.Duration
}

// Store owns a data directory (exclusively, through a lock file).
type Store struct {
	dir  string
	opts Options
	log  *slog.Logger
	lock *dirLock
	// probe confirms the filesystem after the fsyncs durability rests on
	// (syncProbe).
	probe *syncProbe

	topicsMu sync.Mutex // guards topics, creating and the topics file
	topics   map[string]*Topic
	// creating reserves the names of topics CreateTopic is making their
	// partitions for, without topicsMu: a large topic takes seconds, and
	// holding the lock that long stalled every topic lookup (each
	// Produce, Fetch and Metadata, each lookup in the mount). A reserved
	// name is taken for other creations, but no topic yet. The topics
	// file lists them marked "creating", so that a crash part-way leaves
	// no half-made topic behind (load removes it).
	creating map[string]*Topic
	// creations counts CreateTopic calls past their reservation; Close
	// waits for them.
	creations sync.WaitGroup

	pidMu   sync.Mutex
	nextPID int64
	pidCap  int64

	// omMu guards om for a whole cleaning pass (acquireOffsetMap): one
	// map serves every partition's passes, which the cleaner loop runs
	// one at a time, but Partition.Compact may also be called directly.
	omMu sync.Mutex
	om   *offsetMap

	pendMu  sync.Mutex
	pending map[*segment]*time.Timer // deleted segments awaiting file.delete.delay.ms

	ckMu   sync.Mutex // serialises checkpoint writes
	dirty  atomic.Bool
	closed atomic.Bool
	stop   chan struct{}
	wg     sync.WaitGroup

	kicks chan writebackKick // for the writeback kicker (see kickWriteback)
}

// topicsDoc is the persisted form of topic metadata.
type topicsDoc struct {
	Topics map[string]topicDoc `json:"topics"`
}

type topicDoc struct {
	ID        string            `json:"id"`
	Overrides map[string]string `json:"overrides,omitempty"`
	// Creating marks a topic whose partitions were still being made
	// when the file was written (Store.creating).
	Creating bool `json:"creating,omitempty"`
	// AddingFrom, if set, is the topic's partition count before an
	// addition of partitions that was under way when the file was
	// written (Topic.adding): the partition directories from that
	// number on are removed at load. Files written before segfs kept
	// it lack it, as do topics with no addition under way.
	AddingFrom int32 `json:"adding_from,omitempty"`
	// ConfigChangedNs is when the topic's config last changed (its
	// creation, or a change of its overrides), in Unix nanoseconds: the
	// mtime of its config file (Topic.ConfigModTime). Files written
	// before it was kept lack it (see configChangedAtLoad).
	ConfigChangedNs int64 `json:"config_changed_ns,omitempty"`
}

func (s *Store) now() time.Time {
	if s.opts.Now != nil {
		return s.opts.Now()
	}
	return time.Now()
}

// Open locks dir (creating it if needed), cleans leftover temp files and
// loads every partition, recovering those that were not shut down cleanly.
// A second Open of the same dir fails with ErrLocked naming the holder.
func Open(dir string, opts Options) (*Store, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.DefaultPartitions <= 0 {
		opts.DefaultPartitions = 1
	}
	if opts.RetentionCheckInterval == 0 {
		opts.RetentionCheckInterval = 5 * time.Minute
	}
	if opts.CleanerInterval == 0 {
		opts.CleanerInterval = 15 * time.Second
	}
	if opts.CleanerBufferBytes <= 0 {
		opts.CleanerBufferBytes = 16 << 20
	}
	if opts.ProducerIDExpiration == 0 {
		opts.ProducerIDExpiration = 24 * time.Hour
	}
	if opts.ProducerIDExpirationCheckInterval == 0 {
		opts.ProducerIDExpirationCheckInterval = min(10*time.Minute, opts.ProducerIDExpiration)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, err
	}
	// Everything that refuses the directory as a whole is checked before
	// anything in it changes, so that a refused open leaves it as it was:
	// it used to be found part-way through loading, after the partitions
	// before it had been loaded (an empty partition directory given its
	// first segment, leftovers removed), the clean-shutdown marker
	// deleted (forcing a full recovery next time) and the lock file
	// written. Without a lock file (a directory segfs never opened), the
	// check comes before the lock, which creates one; the scan stands if
	// this Open then creates it, as no other segfs can have had the
	// directory meanwhile. Otherwise it is (re)done under the lock.
	var scan *dirScan
	if _, err := os.Lstat(filepath.Join(abs, lockFile)); errors.Is(err, os.ErrNotExist) {
		if scan, err = scanDir(abs); err != nil {
			return nil, err
		}
	}
	lock, err := lockDir(abs)
	if err != nil {
		return nil, err
	}
	if scan == nil || !lock.created {
		if scan, err = scanDir(abs); err != nil {
			lock.abandon()
			return nil, err
		}
	}
	lock.claim()
	probe, err := openSyncProbe(abs)
	if err != nil {
		lock.release()
		return nil, err
	}
	s := &Store{dir: abs, opts: opts, log: opts.Logger, lock: lock, probe: probe, topics: map[string]*Topic{}, creating: map[string]*Topic{}, stop: make(chan struct{}), kicks: make(chan writebackKick, 64)}
	if err := s.load(scan); err != nil {
		s.closeTopics(false)
		probe.close()
		lock.release()
		return nil, err
	}
	s.wg.Add(2)
	go s.background()
	go s.writebackKicker()
	return s, nil
}

// A roll fsyncs the segment it seals before the next one takes appends: a
// power cut must never leave a later segment on disk beside a rolled one
// that ends short, a hole recovery could not see (the kernel writes back
// dirty pages of different files in no particular order). Left to the
// fsync, the whole segment's writeback lands inside the append that
// crossed segment.bytes: ~0.6 s for 1 GiB here. So, as databases do with
// bytes_per_sync, the appender asks for the writeback of every
// writebackStep bytes it appends, and the kicker goroutine starts it
// (sync_file_range SYNC_FILE_RANGE_WRITE, which does not wait for the
// disk) off the appender's path; by the roll, the fsync finds at most the
// last few megabytes still dirty. It durably promises nothing: the
// recovery point moves only after an fsync, as before. Small segments
// never reach a step and never ask.
const writebackStep = 8 << 20

type writebackKick struct {
	seg      *segment
	from, to int64
}

// kickWriteback asks the kicker to start writing [from, to) of seg back.
// It never blocks the appender: when the kicker is behind, the request is
// dropped and the roll's fsync writes those pages.
func (s *Store) kickWriteback(seg *segment, from, to int64) {
	seg.acquire() // the file stays open until the kicker is done with it
	select {
	case s.kicks <- writebackKick{seg, from, to}:
	default:
		seg.release()
	}
}

func (s *Store) writebackKicker() {
	defer s.wg.Done()
	for {
		select {
		case k := <-s.kicks:
			startWriteback(k.seg.log, k.from, k.to-k.from)
			k.seg.release()
		case <-s.stop:
			for {
				select {
				case k := <-s.kicks:
					k.seg.release()
				default:
					return
				}
			}
		}
	}
}

// startWriteback starts the writeback of a file range without waiting for
// it; errors surface at the next fsync. A variable for tests.
var startWriteback = func(f *os.File, off, n int64) {
	for unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE) == unix.EINTR {
	}
}

// Dir is the data directory.
func (s *Store) Dir() string { return s.dir }

// TopicsModTime is when the set of topics last changed: the newest birth
// time of the data directory and of every topic's partition 0 directory,
// which CreateTopic makes (topics are never removed). It is not the data
// directory's mtime, which moves whenever the checkpoints are rewritten
// (write-temp and rename, about once a second while appends go on) and
// whenever a partition is added, neither of which changes the list of
// topics. Where the filesystem records no birth time (statx without
// STATX_BTIME), it is the data directory's mtime after all. The zero time
// if nothing can be read.
func (s *Store) TopicsModTime() time.Time {
	newest, ok := birthTime(s.dir)
	if !ok {
		return dirModTime(s.dir)
	}
	for _, t := range s.Topics() {
		if b := t.createdTime(); b.After(newest) {
			newest = b
		}
	}
	return newest
}

// InterruptedPartitions reads dir's topics file and returns, for each topic
// whose creation (Creating) or partition addition (AddingFrom) a stop
// interrupted, the first partition number the next Open removes: 0 for a
// topic being created. The offline tools (verify) must not judge, or count
// as gaps, directories that load discards. No file is no interruption.
func InterruptedPartitions(dir string) (map[string]int32, error) {
	path := filepath.Join(dir, topicsFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var doc topicsDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	from := map[string]int32{}
	for name, td := range doc.Topics {
		switch {
		case td.Creating:
			from[name] = 0
		case td.AddingFrom > 0:
			from[name] = td.AddingFrom
		}
	}
	return from, nil
}

// dirScan is what Open reads of a data directory before it changes
// anything: the topics file and the partition directories, by topic, each
// numbered 0..N-1.
type dirScan struct {
	doc topicsDoc
	// docTime is the topics file's mtime before Open rewrites it: no
	// config it holds changed after it (configChangedAtLoad).
	docTime time.Time
	parts   map[string][]int32 // sorted
	names   []string           // topic names, sorted
	// metadataLog lists the directories of ClusterMetadataTopic, which
	// are not loaded (see scanDir).
	metadataLog []string
}

// scanDir reads dir's topics file and lists its partition directories,
// changing nothing, and fails on what makes the whole directory unusable:
// a topics file that does not parse, a topic whose partition directories
// have a gap, a segment of Kafka's old message formats (magic 0 or 1).
func scanDir(dir string) (*dirScan, error) {
	sc := &dirScan{parts: map[string][]int32{}}
	if b, err := os.ReadFile(filepath.Join(dir, topicsFile)); err == nil {
		if err := json.Unmarshal(b, &sc.doc); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, topicsFile), err)
		}
		if fi, err := os.Stat(filepath.Join(dir, topicsFile)); err == nil {
			sc.docTime = fi.ModTime()
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if !IsDirEntryDir(dir, e) {
			continue
		}
		topic, n, ok := parsePartitionDir(e.Name())
		if !ok {
			continue
		}
		if topic == ClusterMetadataTopic {
			// KRaft's metadata log, in a data directory copied from a
			// Kafka broker (or a topic an older segfs let mkdir make):
			// skipped as Kafka's log manager skips it. Loaded as a
			// topic, it was served as one that no door could create,
			// and retention and recovery rewrote the Raft layer's log.
			sc.metadataLog = append(sc.metadataLog, e.Name())
			continue
		}
		sc.parts[topic] = append(sc.parts[topic], n)
	}
	for name := range sc.parts {
		sc.names = append(sc.names, name)
	}
	sort.Strings(sc.names)
	for _, name := range sc.names {
		nums := sc.parts[name]
		sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
		td := sc.doc.Topics[name]
		if td.Creating {
			continue // removed by load, whatever it holds
		}
		// The partitions of an interrupted addition (AddingFrom) are
		// removed by load, whatever they hold; those before it must all
		// be there.
		keep := nums
		if td.AddingFrom > 0 {
			keep = nums[:0:0]
			for _, n := range nums {
				if n < td.AddingFrom {
					keep = append(keep, n)
				}
			}
		}
		for i, n := range keep {
			if int32(i) != n {
				return nil, fmt.Errorf("%s: topic %s: partition directory %s-%d is missing (found %s); a topic's partitions must be numbered from 0 without gaps",
					dir, name, name, i, partitionDirList(name, nums))
			}
		}
		if td.AddingFrom > 0 && int32(len(keep)) != td.AddingFrom {
			return nil, fmt.Errorf("%s: topic %s: partition directory %s-%d is missing (found %s); %s had %d partitions before an addition a crash interrupted",
				dir, name, name, len(keep), partitionDirList(name, nums), topicsFile, td.AddingFrom)
		}
		// Segments of Kafka's old message formats: recovery would take
		// them for garbage and truncate them (see checkLegacySegments).
		for _, n := range keep {
			if err := checkLegacySegments(filepath.Join(dir, fmt.Sprintf("%s-%d", name, n))); err != nil {
				return nil, err
			}
		}
	}
	return sc, nil
}

func (s *Store) load(scan *dirScan) error {
	marker := filepath.Join(s.dir, cleanShutdownFile)
	_, err := os.Stat(marker)
	clean := err == nil
	if clean {
		// Deleted at once: a crash while loading must force recovery.
		if err := os.Remove(marker); err != nil {
			return err
		}
		if err := syncDir(s.dir); err != nil {
			return err
		}
	}
	// Temp files of atomic writes a crash interrupted (WriteFileAtomic);
	// the files they were to replace are intact.
	for _, f := range []string{topicsFile, recoveryCheckpointFile, logStartCheckpointFile,
		cleanerCheckpointFile, producerIDFile, cleanShutdownFile} {
		os.Remove(filepath.Join(s.dir, f+".tmp"))
	}
	recovery, err := readOffsetCheckpoint(filepath.Join(s.dir, recoveryCheckpointFile))
	if err != nil {
		s.log.Warn("unreadable checkpoint; recovering every segment", "err", err)
		recovery, clean = map[tp]int64{}, false
	}
	logStart, err := readOffsetCheckpoint(filepath.Join(s.dir, logStartCheckpointFile))
	if err != nil {
		s.log.Warn("unreadable checkpoint; log start from first segments", "err", err)
		logStart = map[tp]int64{}
	}
	cleaner, err := readOffsetCheckpoint(filepath.Join(s.dir, cleanerCheckpointFile))
	if err != nil {
		s.log.Warn("unreadable cleaner checkpoint; compaction restarts from the log start", "err", err)
		cleaner = map[tp]int64{}
	}
	for _, name := range scan.metadataLog {
		s.log.Warn("not loaded: the directory of Kafka's KRaft metadata log, never a topic; left as it is",
			"dir", filepath.Join(s.dir, name), "topic", ClusterMetadataTopic)
	}
	doc := scan.doc
	if b, err := os.ReadFile(filepath.Join(s.dir, producerIDFile)); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			// Ids below the saved cap may have been handed out.
			s.nextPID, s.pidCap = n, n
		}
	}

	for _, name := range scan.names {
		nums := scan.parts[name]
		td := doc.Topics[name]
		if td.Creating {
			// A creation a crash interrupted: the client that asked
			// got no answer, and retries. Remove what it left, as
			// Kafka never shows a topic created part-way.
			for _, n := range nums {
				if err := os.RemoveAll(filepath.Join(s.dir, fmt.Sprintf("%s-%d", name, n))); err != nil {
					return err
				}
			}
			if err := syncDir(s.dir); err != nil {
				return err
			}
			s.log.Warn("removed a topic whose creation was interrupted", "topic", name, "partitions_made", len(nums))
			continue
		}
		if from := td.AddingFrom; from > 0 {
			// An addition of partitions a crash interrupted (see
			// Topic.AddPartitions): the client that asked got no
			// answer, and retries. Remove what it made, as Kafka
			// never shows part of a CreatePartitions. scanDir checked
			// that 0..from-1 are all there.
			removed := 0
			for _, n := range nums[from:] {
				if err := os.RemoveAll(filepath.Join(s.dir, fmt.Sprintf("%s-%d", name, n))); err != nil {
					return err
				}
				removed++
			}
			if err := syncDir(s.dir); err != nil {
				return err
			}
			nums = nums[:from]
			s.log.Warn("removed the partitions of an addition that was interrupted", "topic", name, "partitions", from, "partitions_removed", removed)
		}
		t := &Topic{store: s, name: name, overrides: td.Overrides}
		if t.overrides == nil {
			t.overrides = map[string]string{}
		}
		cfg, err := withOverrides(t.overrides)
		if err != nil {
			// An override this segfs cannot apply (a key it does not
			// know, from a newer segfs or a hand edit; a value it
			// refuses) is ignored alone, and kept in the file
			// (Topic.unapplied). All of them went back to the
			// defaults: a topic kept forever (retention.ms=-1) got 7
			// days' retention, a compacted one the delete policy.
			stored := t.overrides
			kept, dropped := applicableOverrides(stored)
			t.unapplied = map[string]string{}
			for _, k := range dropped {
				t.unapplied[k] = stored[k]
			}
			s.log.Warn("ignoring topic config overrides that do not apply (the topics file keeps them); the topic keeps its others", "topic", name, "ignored", dropped, "err", err)
			t.overrides = kept
			if cfg, err = withOverrides(kept); err != nil {
				t.overrides, t.unapplied, cfg = map[string]string{}, stored, DefaultConfig()
			}
		}
		t.cfg.Store(&cfg)
		if raw, err := base64.RawURLEncoding.DecodeString(td.ID); err == nil && len(raw) == 16 {
			copy(t.id[:], raw)
		} else if id, ok := readPartitionTopicID(filepath.Join(s.dir, fmt.Sprintf("%s-%d", name, nums[0]))); ok {
			t.id = id
		} else {
			t.id = newTopicID()
		}
		for _, n := range nums {
			key := tp{name, n}
			rp, ok := recovery[key]
			if !ok {
				rp = 0
			}
			p, err := s.loadPartition(t, n, clean && ok, rp, logStart[key])
			if err != nil {
				return err
			}
			p.firstDirty.Store(cleaner[key])
			p.deleteHorizon.Store(-1) // unknown until the cleaner looks
			t.parts = append(t.parts, p)
		}
		t.cfgChanged.Store(configChangedAtLoad(t, td, scan.docTime))
		s.topics[name] = t
	}
	s.topicsMu.Lock()
	err = s.saveTopicsLocked()
	s.topicsMu.Unlock()
	if err != nil {
		return err
	}
	if err := s.writeCheckpoints(); err != nil {
		if !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, syscall.EDQUOT) {
			return err
		}
		// A full disk must not keep the log from opening: reading it
		// and lowering retention are how space comes back. The
		// checkpoints on disk are from before, never ahead of the log
		// (a recovery point only moves to flushed data), so the next
		// open has at most more to validate and the cleaner more to
		// clean; the next checkpoint (a change, the close) rewrites them.
		s.log.Warn("checkpoints not written at open: the disk is full; the previous ones stay until there is space", "err", err)
		s.markDirty()
	}
	return nil
}

// saveTopicsLocked persists topic ids and overrides (topicsMu held).
func (s *Store) saveTopicsLocked() error {
	doc := topicsDoc{Topics: map[string]topicDoc{}}
	for name, t := range s.topics {
		doc.Topics[name] = topicDoc{ID: topicIDString(t.id), Overrides: t.fileOverrides(), AddingFrom: t.adding, ConfigChangedNs: t.cfgChanged.Load()}
	}
	for name, t := range s.creating {
		doc.Topics[name] = topicDoc{ID: topicIDString(t.id), Overrides: t.fileOverrides(), Creating: true, ConfigChangedNs: t.cfgChanged.Load()}
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Join(s.dir, topicsFile), append(b, '\n'))
}

// Topics returns the topics sorted by name.
func (s *Store) Topics() []*Topic {
	s.topicsMu.Lock()
	defer s.topicsMu.Unlock()
	out := make([]*Topic, 0, len(s.topics))
	for _, t := range s.topics {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// DefaultPartitions is the partition count of a topic created without
// one (Options.DefaultPartitions).
func (s *Store) DefaultPartitions() int { return s.opts.DefaultPartitions }

// TopicCount is len(Topics()), without building the list.
func (s *Store) TopicCount() int {
	s.topicsMu.Lock()
	defer s.topicsMu.Unlock()
	return len(s.topics)
}

// Topic returns the named topic or ErrUnknownTopic.
func (s *Store) Topic(name string) (*Topic, error) {
	s.topicsMu.Lock()
	defer s.topicsMu.Unlock()
	t, ok := s.topics[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	return t, nil
}

// Partition is a shortcut for Topic(name).Partition(n).
func (s *Store) Partition(topic string, n int32) (*Partition, error) {
	t, err := s.Topic(topic)
	if err != nil {
		return nil, err
	}
	return t.Partition(n)
}

// CreateTopic creates a topic with n partitions (n <= 0: the default) and
// config overrides (validated first; nothing is created on error).
func (s *Store) CreateTopic(name string, n int, overrides map[string]string) (*Topic, error) {
	ov, cfg, err := s.checkNewTopic(name, overrides)
	if err != nil {
		return nil, err
	}
	if n <= 0 {
		n = s.opts.DefaultPartitions
	}
	s.topicsMu.Lock()
	if s.closed.Load() {
		s.topicsMu.Unlock()
		return nil, ErrClosed
	}
	if err := s.checkNameFreeLocked(name); err != nil {
		s.topicsMu.Unlock()
		return nil, err
	}
	// The name is reserved and the partitions made without topicsMu (see
	// creating); Close, which sets closed before it takes topicsMu, waits
	// for this creation to finish. The topics file names the topic as
	// being created before its first partition directory exists: a crash
	// part-way (kill -9 in a 3,000-partition CreateTopics) left partition
	// directories no file named, which the next open adopted as a topic
	// of their own with the default config, so a client retrying the
	// create got TOPIC_ALREADY_EXISTS and a compacted topic became a
	// deleting one. Now the next open removes them: a topic is created
	// whole or not at all, as in Kafka.
	t := &Topic{store: s, name: name, id: newTopicID(), overrides: ov}
	t.cfg.Store(&cfg)
	t.cfgChanged.Store(time.Now().UnixNano())
	s.creating[name] = t
	if err := s.saveTopicsLocked(); err != nil {
		delete(s.creating, name)
		s.topicsMu.Unlock()
		return nil, err
	}
	s.creations.Add(1)
	s.topicsMu.Unlock()
	defer s.creations.Done()
	for i := 0; i < n; i++ {
		p, err := s.createPartition(t, int32(i))
		if err != nil {
			for _, p := range t.parts {
				p.close()
				os.RemoveAll(p.dir)
			}
			s.topicsMu.Lock()
			delete(s.creating, name)
			if serr := s.saveTopicsLocked(); serr != nil {
				// The entry stays marked creating: the next open
				// removes whatever is left of the topic.
				s.log.Warn("topics file not rewritten after a failed topic creation", "topic", name, "err", serr)
			}
			s.topicsMu.Unlock()
			return nil, err
		}
		t.parts = append(t.parts, p)
	}
	s.topicsMu.Lock()
	defer s.topicsMu.Unlock()
	delete(s.creating, name)
	s.topics[name] = t
	if err := s.saveTopicsLocked(); err != nil {
		return nil, err
	}
	return t, nil
}

// CheckCreateTopic reports the error CreateTopic(name, n, overrides) would
// fail with now, creating nothing: a dry run for Kafka's CreateTopics with
// validate_only; on success it returns the config the topic would have.
// The answer may be stale by the time it is acted on.
func (s *Store) CheckCreateTopic(name string, overrides map[string]string) (Config, error) {
	_, cfg, err := s.checkNewTopic(name, overrides)
	if err != nil {
		return Config{}, err
	}
	s.topicsMu.Lock()
	defer s.topicsMu.Unlock()
	return cfg, s.checkNameFreeLocked(name)
}

// checkNewTopic validates a new topic's name and overrides (an empty value
// means the default) and returns the overrides to store and the effective
// config.
func (s *Store) checkNewTopic(name string, overrides map[string]string) (map[string]string, Config, error) {
	if err := CheckNewTopicName(name); err != nil {
		return nil, Config{}, err
	}
	if s.closed.Load() {
		return nil, Config{}, ErrClosed
	}
	ov := map[string]string{}
	for k, v := range overrides {
		if v != "" {
			ov[k] = v
		}
	}
	cfg, err := withOverrides(ov)
	if err == nil {
		err = checkValues(&cfg)
	}
	if err != nil {
		return nil, Config{}, err
	}
	return ov, cfg, nil
}

// checkNameFreeLocked fails if name is taken, or collides with a topic's
// name (topicsMu held).
func (s *Store) checkNameFreeLocked(name string) error {
	if _, ok := s.topics[name]; ok || s.creating[name] != nil {
		return fmt.Errorf("%w: %q", ErrTopicExists, name)
	}
	if other := s.collidingTopicLocked(name); other != "" {
		return fmt.Errorf("%w: %q collides with existing topic %q ('.' and '_' are the same in Kafka's metric names)", ErrInvalidName, name, other)
	}
	return nil
}

// CollidingTopic returns an existing topic (or one being created) whose
// name differs from name only by '.' against '_', "" if there is none:
// CreateTopic refuses name then (ErrInvalidName). For callers that check
// before creating, as Kafka's controller does before it looks at configs.
func (s *Store) CollidingTopic(name string) string {
	s.topicsMu.Lock()
	defer s.topicsMu.Unlock()
	return s.collidingTopicLocked(name)
}

// collidingTopicLocked returns an existing topic whose name differs from
// name only by '.' against '_', "" if there is none. Kafka refuses to
// create such a topic (InvalidTopicException, "collides with existing
// topic"): the two would share their metric names. The caller holds
// topicsMu.
func (s *Store) collidingTopicLocked(name string) string {
	if !strings.ContainsAny(name, "._") {
		return ""
	}
	unified := strings.ReplaceAll(name, ".", "_")
	for other := range s.topics {
		if other != name && strings.ReplaceAll(other, ".", "_") == unified {
			return other
		}
	}
	for other := range s.creating {
		if other != name && strings.ReplaceAll(other, ".", "_") == unified {
			return other
		}
	}
	return ""
}

// createPartition makes the directory, metadata files and first segment.
func (s *Store) createPartition(t *Topic, n int32) (_ *Partition, err error) {
	dir := filepath.Join(s.dir, fmt.Sprintf("%s-%d", t.name, n))
	mkErr := os.Mkdir(dir, 0o755)
	switch {
	case mkErr == nil:
		defer func() {
			if err != nil {
				removeNewPartitionDir(dir)
			}
		}()
	case !errors.Is(mkErr, os.ErrExist):
		return nil, mkErr
	}
	// (ErrExist: a leftover empty directory from an interrupted create is
	// reused.)
	if err := writePartitionMeta(dir, t.id); err != nil {
		return nil, err
	}
	// A new partition is led in epoch 0 from offset 0, its entry written
	// now, as Kafka's leader assigns it when it is elected.
	epochs := []epochEntry{{0, 0}}
	if err := WriteFileAtomic(filepath.Join(dir, epochCheckpointFile), formatEpochCheckpoint(epochs)); err != nil {
		return nil, err
	}
	// The journal of unfinished lines exists from the start, so that a
	// writer's first one does not move the directory's mtime.
	if err := emptyUnfinishedFile(dir); err != nil {
		return nil, err
	}
	cfg := t.cfg.Load()
	seg, err := createSegment(dir, 0, cfg)
	if err != nil {
		return nil, err
	}
	p := newPartition(s, t, n, dir)
	p.segs = []*segment{seg}
	p.epochs = epochs
	if err := syncDir(s.dir); err != nil {
		p.close()
		return nil, err
	}
	s.markDirty()
	return p, nil
}

// partitionDirList names a topic's partition directories for a message,
// the first few only.
func partitionDirList(topic string, nums []int32) string {
	var b strings.Builder
	for i, n := range nums {
		if i == 4 && len(nums) > 5 {
			fmt.Fprintf(&b, ", ... (%d in all)", len(nums))
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s-%d", topic, n)
	}
	return b.String()
}

// removeNewPartitionDir undoes a createPartition that failed after making
// dir. Left behind, the directory made the next Open refuse the whole data
// directory (a topic whose partition directories are not numbered 0..N-1,
// when partition k of a new topic failed and 0..k-1 were removed) or
// revive a partition whose mkdir had failed. The files createPartition
// makes are removed by name, which needs no descriptor: running out of
// them (EMFILE) is one way to fail here.
func removeNewPartitionDir(dir string) {
	for _, name := range []string{"partition.metadata", "leader-epoch-checkpoint", unfinishedFile} {
		os.Remove(filepath.Join(dir, name))
		os.Remove(filepath.Join(dir, name+".tmp"))
	}
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, textIndexSuffix, txnIndexSuffix} {
		os.Remove(filepath.Join(dir, segmentName(0)+suf))
	}
	if os.Remove(dir) != nil {
		os.RemoveAll(dir)
	}
}

func newPartition(s *Store, t *Topic, n int32, dir string) *Partition {
	p := &Partition{store: s, topic: t, num: n, dir: dir, ch: make(chan struct{})}
	p.lastFlush = s.now()
	return p
}

// Flush makes everything appended so far durable in every partition.
func (s *Store) Flush() error {
	var first error
	for _, t := range s.Topics() {
		for _, p := range t.Partitions() {
			if err := p.Flush(); err != nil && first == nil {
				first = err
			}
		}
	}
	if err := s.writeCheckpoints(); err != nil && first == nil {
		first = err
	}
	return first
}

// AllocateProducerID returns a producer id never handed out before in this
// data directory. Ids are reserved in blocks of 1000 so that the file is
// rewritten once per block, not once per producer.
func (s *Store) AllocateProducerID() (int64, error) {
	s.pidMu.Lock()
	defer s.pidMu.Unlock()
	if s.nextPID >= s.pidCap {
		newCap := s.nextPID + 1000
		if err := WriteFileAtomic(filepath.Join(s.dir, producerIDFile), []byte(strconv.FormatInt(newCap, 10)+"\n")); err != nil {
			return -1, err
		}
		s.pidCap = newCap
	}
	id := s.nextPID
	s.nextPID++
	return id, nil
}

func (s *Store) markDirty() { s.dirty.Store(true) }

// acquireOffsetMap returns the cleaner's map, allocated once at its fixed
// size, for the caller's pass alone: two passes sharing it at once (two
// partitions compacted concurrently) reset and filled each other's
// entries, and a record could be kept or dropped by another partition's
// keys. The caller calls releaseOffsetMap when the pass is done with it.
func (s *Store) acquireOffsetMap() *offsetMap {
	s.omMu.Lock()
	if s.om == nil {
		s.om = newOffsetMap(s.opts.CleanerBufferBytes)
	}
	return s.om
}

func (s *Store) releaseOffsetMap() { s.omMu.Unlock() }

// writeCheckpoints writes the recovery-point and log-start checkpoints of
// every partition.
func (s *Store) writeCheckpoints() error {
	s.ckMu.Lock()
	defer s.ckMu.Unlock()
	s.dirty.Store(false)
	rp := map[tp]int64{}
	cl := map[tp]int64{}
	for _, t := range s.topicsSnapshot() {
		for _, p := range t.Partitions() {
			rp[tp{t.name, p.num}] = p.recoveryPoint.Load()
			if fd := p.firstDirty.Load(); fd > 0 {
				cl[tp{t.name, p.num}] = fd
			}
		}
	}
	if err := writeOffsetCheckpoint(filepath.Join(s.dir, recoveryCheckpointFile), rp); err != nil {
		return err
	}
	if err := s.writeLogStartsLocked(); err != nil {
		return err
	}
	return writeOffsetCheckpoint(filepath.Join(s.dir, cleanerCheckpointFile), cl)
}

// saveLogStarts writes the log-start checkpoint alone, for DeleteRecords,
// which must not answer before its new log start is on disk.
func (s *Store) saveLogStarts() error {
	s.ckMu.Lock()
	defer s.ckMu.Unlock()
	return s.writeLogStartsLocked()
}

// writeLogStartsLocked writes the log-start checkpoint (ckMu held): the
// log start of every partition where it lies above the first segment's
// base (elsewhere the segment files say it) or a deleted segment is left
// on disk below it, and on success notes in each partition what is now on
// disk.
func (s *Store) writeLogStartsLocked() error {
	ls := map[tp]int64{}
	type saved struct {
		p     *Partition
		start int64
	}
	var all []saved
	for _, t := range s.topicsSnapshot() {
		for _, p := range t.Partitions() {
			st := p.logStart.Load()
			p.mu.RLock()
			first := p.segs[0].base
			p.mu.RUnlock()
			if st > first || st > 0 && p.strayBelowStart.Load() {
				ls[tp{t.name, p.num}] = st
			}
			all = append(all, saved{p, st})
		}
	}
	if err := writeOffsetCheckpoint(filepath.Join(s.dir, logStartCheckpointFile), ls); err != nil {
		return err
	}
	for _, sv := range all {
		sv.p.savedStart.Store(sv.start)
	}
	return nil
}

// topicsSnapshot lists topics without sorting (for internal loops).
func (s *Store) topicsSnapshot() []*Topic {
	s.topicsMu.Lock()
	defer s.topicsMu.Unlock()
	out := make([]*Topic, 0, len(s.topics))
	for _, t := range s.topics {
		out = append(out, t)
	}
	return out
}

// background runs the flush.ms policy and writes dirty checkpoints, the
// way Kafka's scheduler runs log-flusher and checkpoint tasks.
func (s *Store) background() {
	defer s.wg.Done()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	lastCk := time.Now()
	lastRetention, lastClean, lastExpiry := time.Now(), time.Now(), time.Now()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		now := s.now()
		for _, t := range s.topicsSnapshot() {
			cfg := t.cfg.Load()
			if cfg.FlushMs == math.MaxInt64 {
				continue
			}
			for _, p := range t.Partitions() {
				p.amu.Lock()
				if p.leo.Load() != p.recoveryPoint.Load() && now.Sub(p.lastFlush).Milliseconds() >= cfg.FlushMs {
					if err := p.flushLocked(); err != nil {
						p.log().Error("scheduled flush failed", "err", err)
					}
				}
				p.amu.Unlock()
			}
		}
		if d := s.opts.RetentionCheckInterval; d > 0 && time.Since(lastRetention) >= d {
			s.runCleanup("retention", (*Partition).ApplyRetention)
			lastRetention = time.Now()
		}
		if d := s.opts.ProducerIDExpirationCheckInterval; d > 0 && s.opts.ProducerIDExpiration > 0 && time.Since(lastExpiry) >= d {
			s.expireProducers(now)
			lastExpiry = time.Now()
		}
		if d := s.opts.CleanerInterval; d > 0 && time.Since(lastClean) >= d {
			s.runCleanup("compaction", (*Partition).Compact)
			lastClean = time.Now()
		}
		if s.dirty.Load() && time.Since(lastCk) >= time.Second {
			if err := s.writeCheckpoints(); err != nil {
				s.log.Error("writing checkpoints", "err", err)
			}
			lastCk = time.Now()
		}
	}
}

// runCleanup runs one retention or compaction pass over every partition
// and logs what each pass that did something did.
func (s *Store) runCleanup(kind string, pass func(*Partition) (CleanupStats, error)) {
	for _, t := range s.topicsSnapshot() {
		for _, p := range t.Partitions() {
			select {
			case <-s.stop:
				return
			default:
			}
			st, err := pass(p)
			if err != nil {
				p.log().Error(kind+" failed", "err", err)
				continue
			}
			if st.SegmentsDeleted > 0 || st.SegmentsCleaned > 0 {
				p.log().Info(kind+" pass",
					"segments_deleted", st.SegmentsDeleted, "bytes_freed", st.BytesFreed,
					"segments_cleaned", st.SegmentsCleaned, "records_removed", st.RecordsRemoved,
					"log_start_offset", st.NewLogStart, "duration", st.Duration)
			}
		}
	}
}

// MarkClosing records in the lock file that this process has begun to
// shut down, for a segfs started meanwhile on the directory (a restart
// that did not wait for this one to exit) to wait for the lock rather
// than refuse the directory (LockHolder). The store keeps working until
// Close.
func (s *Store) MarkClosing() { s.lock.markClosing() }

// MarkDetached records in the lock file that this process still serves
// files open on mountpoint, which was detached lazily (umount -l), and so
// keeps the directory until they are closed: a segfs started meanwhile
// on the directory refuses it at once, saying so (LockDetached), rather
// than wait for an exit that may be days away. MarkClosing replaces it.
func (s *Store) MarkDetached(mountpoint string) { s.lock.markDetached(mountpoint) }

// Close flushes every partition, trims indexes, writes checkpoints and the
// clean-shutdown marker, and releases the lock.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	close(s.stop)
	s.wg.Wait()
	// A CreateTopic that reserved its name before closed was set finishes
	// (its topic is then closed below); any later one sees closed under
	// topicsMu and creates nothing.
	s.topicsMu.Lock()
	s.topicsMu.Unlock() // empty: a barrier after closed, as said above
	s.creations.Wait()
	s.releasePending()
	err := s.closeTopics(true)
	if err == nil {
		// The recovery points written next claim the seals' fsyncs.
		err = s.probe.check()
	}
	if err == nil {
		err = s.writeCheckpoints()
	} else {
		s.writeCheckpoints()
	}
	if err == nil {
		// Only a fully flushed store earns the marker; without it the next
		// open validates everything past the recovery points.
		if werr := WriteFileAtomic(filepath.Join(s.dir, cleanShutdownFile), []byte(`{"version":0,"brokerEpoch":0}`)); werr != nil {
			err = werr
		}
	}
	s.probe.close()
	s.lock.release()
	return err
}

// closeWorkers is how many partitions closeTopics seals at once. Each
// seal ends in fsyncs, and one partition after another a daemon with
// 1,300 partitions took 5 s to exit on a quiet disk and 25 s on a busy
// one (2,900: 35 s, past the 30 s a new mount waits for it, lockWait);
// concurrent fsyncs share the file system's journal commits. Kafka closes
// its logs on a pool too (num.recovery.threads.per.data.dir).
const closeWorkers = 8

// closeTopics closes every partition; with seal it first makes each one
// durable and saves its indexes as Kafka does at shutdown. Partitions
// are independent: they are closed by closeWorkers goroutines, and the
// first error (in no particular order) is returned.
func (s *Store) closeTopics(seal bool) error {
	var parts []*Partition
	for _, t := range s.topicsSnapshot() {
		parts = append(parts, t.Partitions()...)
	}
	var (
		mu    sync.Mutex
		first error
		next  = make(chan *Partition)
		wg    sync.WaitGroup
	)
	for range min(closeWorkers, len(parts)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range next {
				if seal {
					if err := p.shutdown(); err != nil {
						mu.Lock()
						if first == nil {
							first = err
						}
						mu.Unlock()
					}
				}
				p.close()
			}
		}()
	}
	for _, p := range parts {
		next <- p
	}
	close(next)
	wg.Wait()
	return first
}

// shutdown seals the active segment (final time-index entry, trimmed
// indexes, text map, fsync) and writes a producer snapshot at the log end.
func (p *Partition) shutdown() error {
	p.amu.Lock()
	defer p.amu.Unlock()
	if p.fenceErr != nil {
		return &fencedError{cause: p.fenceErr}
	}
	a := p.active()
	if err := a.seal(); err != nil {
		return p.failLocked(err)
	}
	p.recoveryPoint.Store(p.leo.Load())
	p.producers.snapshot(p.dir, p.leo.Load())
	return nil
}

// close releases the partition's references to its segments; readers that
// still hold some keep them open until they finish, and none takes another
// (closed).
func (p *Partition) close() {
	p.mu.Lock()
	segs := p.segs
	p.closed = true
	p.mu.Unlock()
	for _, s := range segs {
		s.release()
	}
	p.unfinished.close(p)
	p.notify()
}
