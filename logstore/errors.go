package logstore

import (
	"errors"
	"fmt"
	"strings"
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
	ErrInvalidTimestamp  = errors.New("invalid timestamp")      // a produced CreateTime outside message.timestamp.{before,after}.max.ms
	ErrCorrupt           = errors.New("corrupt data")           // CRC/length/magic failure while reading; wraps record.ErrCorrupt
	ErrFenced            = errors.New("partition fenced")       // a previous write or fsync failed; appends refused
	ErrClosed            = errors.New("store closed")
	ErrLocked            = errors.New("data directory is locked") // held by another process
	ErrDuplicateSequence = errors.New("duplicate sequence number")
	ErrOutOfOrderSeq     = errors.New("out of order sequence number")
	ErrProducerFenced    = errors.New("invalid producer epoch")
	ErrUnknownProducerID = errors.New("unknown producer id")
	// A transaction marker whose coordinator epoch is below the one of
	// the producer's last marker (Kafka's TransactionCoordinatorFencedException).
	ErrCoordinatorFenced = errors.New("transaction coordinator fenced")
	ErrPolicyViolation   = errors.New("policy violation") // DeleteRecords on a topic without cleanup.policy=delete
	// A name Kafka keeps for itself (ClusterMetadataTopic): an
	// ErrInvalidName too, for the doors that have no answer of their own.
	ErrReservedName = fmt.Errorf("%w: reserved by Kafka", ErrInvalidName)
)

// CorruptError reports damaged segment data with its file and position. It
// matches ErrCorrupt and unwraps to the decoder's error.
type CorruptError struct {
	Path string
	Pos  int64
	Err  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s: position %d: %v", e.Path, e.Pos, e.Err)
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

func (e *CorruptError) Unwrap() error { return e.Err }

// LockedError is Open's error for a data directory another process holds
// (its lock file names the holder's pid). It matches ErrLocked.
type LockedError struct {
	Dir     string
	PID     int    // 0: not recorded
	What    string // what the holder is ("segfs serve"), if the caller knows
	Closing bool   // the holder has begun to shut down (Store.MarkClosing)
	// Detached is the mountpoint, detached lazily, on which the holder
	// still serves open files (Store.MarkDetached); "" if none.
	Detached string
}

func (e *LockedError) Error() string {
	if e.PID <= 0 {
		return fmt.Sprintf("data directory %s is in use by another process", e.Dir)
	}
	who := fmt.Sprintf("process %d", e.PID)
	if e.What != "" {
		who += " (" + e.What + ")"
	}
	if e.Closing {
		who += ", which is shutting down"
	} else if e.Detached != "" {
		who += fmt.Sprintf(", which still serves files open on %s, unmounted lazily (umount -l), and exits once they are closed: close them, or kill %d", e.Detached, e.PID)
	}
	return fmt.Sprintf("data directory %s is in use by %s", e.Dir, who)
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// fencedError carries the error that fenced a partition, so callers can
// still see the cause (ENOSPC, EIO, EROFS) through errors.Is.
type fencedError struct{ cause error }

func (e *fencedError) Error() string {
	return fmt.Sprintf("partition fenced after an earlier failure: %v", e.cause)
}
func (e *fencedError) Is(target error) bool { return target == ErrFenced }
func (e *fencedError) Unwrap() error        { return e.cause }

// RecordError is one record a produced batch was refused for: its index
// in the batch (Kafka's batchIndex) and why.
type RecordError struct {
	Index   int32
	Message string
}

// RecordErrors is AppendBatch's error for a batch whose records fail the
// checks Kafka's LogValidator makes record by record (a record without a
// key on a compacted topic, a timestamp out of bounds), listing every such
// record, as Kafka's RecordValidationException does. It matches
// ErrInvalidTimestamp if any record's timestamp is refused (Kafka then
// throws InvalidTimestampException for the whole batch, whatever else is
// listed), else ErrInvalidRecord. Error() is Kafka's message for it
// (LogValidator.processRecordErrors), which Produce v8+ sends as the
// partition's error message beside the records.
type RecordErrors struct {
	Records []RecordError
	// Timestamp: at least one of Records is a refused timestamp.
	Timestamp bool
}

func (e *RecordErrors) Error() string {
	if e.Timestamp {
		return "One or more records have been rejected due to invalid timestamp"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "One or more records have been rejected due to %d record errors in total, and only showing the first three errors at most: [", len(e.Records))
	for i, r := range e.Records[:min(len(e.Records), 3)] {
		if i > 0 {
			b.WriteString(", ")
		}
		// ProduceResponse.RecordError.toString.
		fmt.Fprintf(&b, "RecordError(batchIndex=%d, message='%s')", r.Index, r.Message)
	}
	b.WriteString("]")
	return b.String()
}

// Is makes errors.Is(err, ErrInvalidTimestamp) or errors.Is(err,
// ErrInvalidRecord) true, as Timestamp says.
func (e *RecordErrors) Is(target error) bool {
	if e.Timestamp {
		return target == ErrInvalidTimestamp
	}
	return target == ErrInvalidRecord
}
