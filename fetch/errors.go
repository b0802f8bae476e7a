package fetch

import (
	"errors"
	"io"
	"io/fs"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/segfs/segfs/logstore"
	"github.com/segfs/segfs/logstore/record"
)

// errorCodes maps storage errors to Kafka error codes: the one place where
// logstore's sentinels meet the protocol (STYLE.md "map errors once at each
// edge"). Order matters only where one error wraps another; the first
// match wins.
var errorCodes = []struct {
	err  error
	code *kerr.Error
}{
	{logstore.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{logstore.ErrUnknownPartition, kerr.UnknownTopicOrPartition},
	{logstore.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	{logstore.ErrMessageTooLarge, kerr.MessageTooLarge},
	// Kafka's RecordBatchTooLargeException (batch over segment.bytes).
	{logstore.ErrBatchTooLarge, kerr.RecordListTooLarge},
	{logstore.ErrInvalidTimestamp, kerr.InvalidTimestamp},
	{logstore.ErrInvalidRecord, kerr.InvalidRecord},
	{logstore.ErrCorrupt, kerr.CorruptMessage},
	{record.ErrCorrupt, kerr.CorruptMessage},
	{record.ErrShort, kerr.CorruptMessage},
	{record.ErrCodec, kerr.CorruptMessage},
	{logstore.ErrDuplicateSequence, kerr.DuplicateSequenceNumber},
	{logstore.ErrOutOfOrderSeq, kerr.OutOfOrderSequenceNumber},
	{logstore.ErrProducerFenced, kerr.InvalidProducerEpoch},
	{logstore.ErrUnknownProducerID, kerr.UnknownProducerID},
	{logstore.ErrCoordinatorFenced, kerr.TransactionCoordinatorFenced},
	// A fenced partition had a write or fsync fail: Kafka's answer for a
	// failed log directory, retriable for the client.
	{logstore.ErrFenced, kerr.KafkaStorageError},
	// A full disk or quota (the append failed cleanly, the partition is
	// not fenced, and the next append may succeed once space returns) is
	// Kafka's KAFKA_STORAGE_ERROR too: retriable, so producers retry
	// until their delivery timeout instead of dropping the records on a
	// non-retriable UNKNOWN_SERVER_ERROR.
	{syscall.ENOSPC, kerr.KafkaStorageError},
	{syscall.EDQUOT, kerr.KafkaStorageError},
	// The store is closing under us: "not the leader any more" makes
	// clients refresh metadata and retry elsewhere (here: after restart).
	{logstore.ErrClosed, kerr.NotLeaderForPartition},
	// Before ErrInvalidName, which it wraps: Kafka's controller answers
	// a CreateTopics of __cluster_metadata so.
	{logstore.ErrReservedName, kerr.TopicAuthorizationFailed},
	{logstore.ErrInvalidName, kerr.InvalidTopicException},
	{logstore.ErrTopicExists, kerr.TopicAlreadyExists},
	{logstore.ErrPartitionExists, kerr.InvalidPartitions},
	{logstore.ErrInvalidPartition, kerr.InvalidPartitions},
	{logstore.ErrInvalidConfig, kerr.InvalidConfig},
	{logstore.ErrPolicyViolation, kerr.PolicyViolation},
}

// errorCode returns the Kafka error code for err: 0 for nil,
// UNKNOWN_SERVER_ERROR (-1) for anything unmapped (I/O errors).
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	for _, e := range errorCodes {
		if errors.Is(err, e.err) {
			return e.code.Code
		}
	}
	return kerr.UnknownServerError.Code
}

// readErrorCode is errorCode for the error of a partition's read (a
// Fetch): a read of the log's segment file that failed (a *fs.PathError:
// EIO, a file gone) or came up short (io.ErrUnexpectedEOF: the file cut
// behind the store's back, by hand or by a disk that lost its tail) is
// Kafka's answer for a log whose file cannot be read, KAFKA_STORAGE_ERROR
// (its LogSegment reads throw IOException, which the log wraps as
// KafkaStorageException), retriable for clients. Every mapped error
// (offset out of range, corrupt batch, unknown partition) keeps its code,
// and anything else (a file read after the server closed it) stays
// UNKNOWN_SERVER_ERROR.
func readErrorCode(err error) int16 {
	code := errorCode(err)
	if code != kerr.UnknownServerError.Code {
		return code
	}
	if errors.Is(err, fs.ErrClosed) {
		return code // the server's own misstep, not the disk's
	}
	if _, ok := errors.AsType[*fs.PathError](err); ok || errors.Is(err, io.ErrUnexpectedEOF) {
		return kerr.KafkaStorageError.Code
	}
	return code
}

// offsetsWriteErrorCode is the answer to a group request whose write of
// the offsets file failed (offsetStore.wait), Kafka 4's: its coordinator
// appends to __consumer_offsets, an I/O error there (a full disk, a
// read-only or failed log directory) is a KafkaStorageException, and the
// group coordinator answers KAFKA_STORAGE_ERROR as NOT_COORDINATOR
// (CoordinatorOperationExceptionHelper for OffsetCommit, DeleteGroups,
// OffsetDelete and ConsumerGroupHeartbeat; appendGroupMetadataErrorTo-
// ResponseError for SyncGroup and a static member's JoinGroup). Clients
// take it as retriable: they look the coordinator up again and retry,
// which succeeds once the disk takes the write. segfs answered
// COORDINATOR_NOT_AVAILABLE, the mapping of Kafka's NOT_ENOUGH_REPLICAS
// and timeouts, which a single node with a local file never has.
func offsetsWriteErrorCode(error) int16 { return kerr.NotCoordinator.Code }
