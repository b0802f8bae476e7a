// Package logstore keeps Kafka-format partition logs in a data directory.
//
// STUB: this file fixes the exported API that fs, fetch and cli build
// against. The lead replaces the bodies; signatures stay.
package logstore

import (
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/segfs/segfs/logstore/record"
)

// Sentinel errors. Callers map them once at their edge (fs/errno.go,
// fetch's error-code table). Wrapped errors keep file and position.
var (
	ErrOffsetOutOfRange  = errors.New("offset out of range")
	ErrUnknownTopic      = errors.New("unknown topic")
	ErrUnknownPartition  = errors.New("unknown partition")
	ErrTopicExists       = errors.New("topic already exists")
	ErrPartitionExists   = errors.New("partition already exists")
	ErrInvalidName       = errors.New("invalid topic name")
	ErrInvalidPartition  = errors.New("invalid partition number") // not the next number
	ErrInvalidConfig     = errors.New("invalid config")
	ErrMessageTooLarge   = errors.New("message too large")      // record/batch over max.message.bytes
	ErrBatchTooLarge     = errors.New("record batch too large") // batch over segment.bytes
	ErrInvalidRecord     = errors.New("invalid record")         // e.g. no key on a compacted topic, bad counts
	ErrCorrupt           = errors.New("corrupt data")           // CRC/length/magic failure while reading; wraps record.ErrCorrupt
	ErrFenced            = errors.New("partition fenced")       // a previous write or fsync failed; appends refused
	ErrClosed            = errors.New("store closed")
	ErrLocked            = errors.New("data directory is locked") // held by another process
	ErrDuplicateSequence = errors.New("duplicate sequence number")
	ErrOutOfOrderSeq     = errors.New("out of order sequence number")
	ErrProducerFenced    = errors.New("invalid producer epoch")
	ErrUnknownProducerID = errors.New("unknown producer id")
)

// Options configure a Store.
type Options struct {
	Logger            *slog.Logger     // nil = slog.Default()
	DefaultPartitions int              // partitions of a topic created with n <= 0; default 1
	Now               func() time.Time // clock; nil = time.Now (tests inject)
}

// Store owns a data directory (exclusively, through a lock file).
type Store struct{}

// Open locks dir (creating it if needed), cleans leftover temp files and
// loads every partition, recovering those that were not shut down cleanly.
// A second Open of the same dir fails with ErrLocked naming the holder.
func Open(dir string, opts Options) (*Store, error) { return nil, nil }

// Close flushes every partition, trims indexes, writes checkpoints and the
// clean-shutdown marker, and releases the lock.
func (s *Store) Close() error { return nil }

// Dir is the data directory.
func (s *Store) Dir() string { return "" }

// Topics returns the topics sorted by name.
func (s *Store) Topics() []*Topic { return nil }

// Topic returns the named topic or ErrUnknownTopic.
func (s *Store) Topic(name string) (*Topic, error) { return nil, nil }

// CreateTopic creates a topic with n partitions (n <= 0: the default) and
// config overrides (validated first; nothing is created on error).
// ErrInvalidName, ErrTopicExists, ErrInvalidConfig.
func (s *Store) CreateTopic(name string, n int, overrides map[string]string) (*Topic, error) {
	return nil, nil
}

// Partition is a shortcut for Topic(name).Partition(n).
func (s *Store) Partition(topic string, n int32) (*Partition, error) { return nil, nil }

// Flush makes everything appended so far durable in every partition.
func (s *Store) Flush() error { return nil }

// AllocateProducerID returns a producer id never handed out before in this
// data directory (persisted).
func (s *Store) AllocateProducerID() (int64, error) { return 0, nil }

// ValidateTopicName applies Kafka's rules: [a-zA-Z0-9._-]{1,249}, not "." or "..".
func ValidateTopicName(name string) error { return nil }

// WriteFileAtomic replaces path with data: temp file, fsync, rename, fsync
// of the directory. For metadata of segfs's own (fetch's committed offsets).
func WriteFileAtomic(path string, data []byte) error { return nil }

// Topic is a named set of partitions sharing one config.
type Topic struct{}

func (t *Topic) Name() string { return "" }

// ID is the topic's UUID (as in partition.metadata).
func (t *Topic) ID() [16]byte { return [16]byte{} }

// Config returns the effective config (defaults + overrides).
func (t *Topic) Config() Config { return Config{} }

// Overrides returns the explicitly set keys.
func (t *Topic) Overrides() map[string]string { return nil }

// SetConfig applies changes atomically: key=value sets an override, an
// empty value resets the key to its default. Unknown keys or invalid values
// fail with ErrInvalidConfig and change nothing. Persisted before it returns.
func (t *Topic) SetConfig(changes map[string]string) error { return nil }

// Partitions returns the partitions in order 0..n-1.
func (t *Topic) Partitions() []*Partition { return nil }

// Partition returns partition n or ErrUnknownPartition.
func (t *Topic) Partition(n int32) (*Partition, error) { return nil, nil }

// AddPartition adds partition n, which must be the next number
// (ErrInvalidPartition otherwise, ErrPartitionExists if present).
func (t *Topic) AddPartition(n int32) (*Partition, error) { return nil, nil }

// Config is a topic's effective configuration, with Kafka's topic-level
// names and defaults plus segfs's key.separator.
type Config struct {
	SegmentBytes           int64
	SegmentMs              int64
	SegmentJitterMs        int64
	SegmentIndexBytes      int64
	IndexIntervalBytes     int64
	RetentionMs            int64
	RetentionBytes         int64
	CleanupPolicy          string // "delete", "compact" or "compact,delete"
	MinCleanableDirtyRatio float64
	DeleteRetentionMs      int64
	MinCompactionLagMs     int64
	MaxCompactionLagMs     int64
	MaxMessageBytes        int64
	MessageTimestampType   string // CreateTime or LogAppendTime
	FlushMessages          int64
	FlushMs                int64
	FileDeleteDelayMs      int64
	CompressionType        string // producer, uncompressed, gzip, snappy, lz4, zstd
	KeySeparator           string // segfs: "" = no keys
}

// DefaultConfig returns Kafka's defaults (KAFKA-FORMAT.md §12).
func DefaultConfig() Config { return Config{} }

// ConfigKeys lists every settable key, sorted.
func ConfigKeys() []string { return nil }

// Get returns the value of key as text, and whether the key exists.
func (c Config) Get(key string) (string, bool) { return "", false }

// Text renders every setting as sorted key=value lines.
func (c Config) Text() []byte { return nil }

// Compact reports whether cleanup.policy includes compact.
func (c Config) Compact() bool { return false }

// ParseConfigText parses key=value lines (blank lines and # comments
// skipped) into changes for SetConfig; a malformed line is ErrInvalidConfig
// naming its line number.
func ParseConfigText(text []byte) (map[string]string, error) { return nil, nil }

// Partition is one partition log. All methods are safe for concurrent use:
// appends are serialised, reads take no lock on closed segments.
type Partition struct{}

func (p *Partition) Topic() *Topic { return nil }
func (p *Partition) Num() int32    { return 0 }

// LogStartOffset is the first retained offset.
func (p *Partition) LogStartOffset() int64 { return 0 }

// LogEndOffset is the offset the next record will get (committed end).
func (p *Partition) LogEndOffset() int64 { return 0 }

// Generation changes whenever the retained prefix of the log changes
// (retention delete, compaction swap, key.separator change): text positions
// of a new generation start again at the new log start. Appends do not
// change it.
func (p *Partition) Generation() uint64 { return 0 }

// Changed returns a channel closed at the next change of the log (append,
// retention, compaction, truncation). Take a fresh one after each wake-up.
func (p *Partition) Changed() <-chan struct{} { return nil }

// AppendLines appends text (complete '\n'-terminated lines only) as one
// batch (several if it exceeds max.message.bytes per batch), one record per
// line with CreateTime = now, keys split on key.separator. A single line
// whose record exceeds max.message.bytes fails the whole call with
// ErrMessageTooLarge and appends nothing; on a compacted topic a line
// without a key fails with ErrInvalidRecord. When it returns nil the lines
// are in the log (written to the segment file) and visible to readers.
func (p *Partition) AppendLines(text []byte) (first, last int64, err error) { return 0, 0, nil }

// AppendResult describes a stored produce batch.
type AppendResult struct {
	BaseOffset     int64
	LastOffset     int64
	LogAppendTime  int64 // -1 unless the topic uses LogAppendTime
	LogStartOffset int64
	Duplicate      bool // an idempotent retry of one of the producer's last 5 batches: nothing written, offsets are the original ones
}

// AppendBatch validates a produced batch like Kafka's leader (magic 2, base
// offset 0, CRC, sizes, count vs last offset delta, keys on compacted
// topics, idempotent sequence/epoch), assigns offsets by rewriting the base
// offset (and the leader epoch), and appends it as it came (compressed
// batches stay compressed). The slice is modified in place.
// Errors: ErrCorrupt, ErrInvalidRecord, ErrMessageTooLarge, ErrBatchTooLarge,
// ErrOutOfOrderSeq, ErrProducerFenced, ErrFenced, and I/O errors.
func (p *Partition) AppendBatch(batch []byte) (AppendResult, error) { return AppendResult{}, nil }

// Flush makes everything appended so far durable (data, then indexes, then
// the recovery point). A failure fences the partition.
func (p *Partition) Flush() error { return nil }

// FileSlice is a byte range of a segment file.
type FileSlice struct {
	File *os.File // never read with Read/Seek: use pread / sendfile at Pos
	Pos  int64
	Len  int64
}

// ReadResult holds file ranges of whole batches. The segment files stay
// open (even if retention deletes them) until Release.
type ReadResult struct {
	Slices []FileSlice
	Bytes  int64 // sum of Slices[i].Len
}

// Release drops the references taken by Read. Safe to call twice.
func (r *ReadResult) Release() {}

// Read returns whole batches starting with the batch that contains offset
// (its first record may be below offset), across segment boundaries, up to
// maxBytes — except that the first batch is always whole (KIP-74) — and
// never past the committed end. offset == LogEndOffset gives an empty
// result; offset outside [LogStartOffset, LogEndOffset] is
// ErrOffsetOutOfRange.
func (p *Partition) Read(offset int64, maxBytes int64) (*ReadResult, error) { return nil, nil }

// OffsetForTime returns the first offset whose record timestamp is >= ts,
// or ok=false if there is none.
func (p *Partition) OffsetForTime(ts int64) (offset int64, ok bool, err error) { return 0, false, nil }

// MaxTimestamp returns the largest timestamp in the log and the offset of
// the record carrying it (ListOffsets -3), ok=false for an empty log.
func (p *Partition) MaxTimestamp() (ts, offset int64, ok bool, err error) { return 0, 0, false, nil }

// Status is a summary for the status file and dump tools.
type Status struct {
	LogStartOffset          int64
	LogEndOffset            int64
	Segments                int
	SizeBytes               int64 // sum of .log sizes
	FirstTimestamp          int64 // -1 when empty
	LastTimestamp           int64 // -1 when empty
	ActiveSegmentBaseOffset int64
	RecoveryPoint           int64
}

func (p *Partition) Status() Status { return Status{} }

// SegmentFile names one raw file of the partition (.log, .index, .timeindex).
type SegmentFile struct {
	Name string
	Size int64 // committed size for the active .log; used size for indexes
}

// SegmentFiles lists the raw files, sorted by name.
func (p *Partition) SegmentFiles() []SegmentFile { return nil }

// OpenSegmentFile opens a raw file by name for reading. The handle keeps the
// file readable across retention until Close. Size() follows the committed
// size of a growing active .log.
func (p *Partition) OpenSegmentFile(name string) (*SegmentFileHandle, error) { return nil, nil }

// SegmentFileHandle is an open raw segment file.
type SegmentFileHandle struct{}

func (h *SegmentFileHandle) File() *os.File { return nil }
func (h *SegmentFileHandle) Size() int64    { return 0 }
func (h *SegmentFileHandle) Close() error   { return nil }

// TextView reads the partition as text (record.Decoder.AppendText rendering)
// from the first retained record with offset >= From(), with positions that
// never change for the life of the view: appends only extend it, and
// segments it has open stay readable after retention or compaction removes
// them. Safe for concurrent use.
type TextView struct{}

// Text opens a view from offset from; ErrOffsetOutOfRange when from is
// below LogStartOffset or above LogEndOffset (== LogEndOffset: empty, grows).
func (p *Partition) Text(from int64) (*TextView, error) { return nil, nil }

// From is the view's first offset.
func (v *TextView) From() int64 { return 0 }

// Generation is the partition generation the view was opened in.
func (v *TextView) Generation() uint64 { return 0 }

// Size is the number of text bytes the view holds now (grows with appends).
func (v *TextView) Size() int64 { return 0 }

// ReadAt fills b from text position off. It returns io.EOF at or past
// Size(). A batch that fails its CRC gives an error wrapping ErrCorrupt
// (never garbage text).
func (v *TextView) ReadAt(b []byte, off int64) (int, error) { return 0, nil }

// Close releases the segments the view holds.
func (v *TextView) Close() error { return nil }

var _ = record.HeaderSize
