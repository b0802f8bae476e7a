package fetch

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/segfs/segfs/logstore"
	"github.com/segfs/segfs/logstore/record"
)

func TestErrorCode(t *testing.T) {
	tests := []struct {
		err  error
		want *kerr.Error
	}{
		{logstore.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
		{logstore.ErrUnknownPartition, kerr.UnknownTopicOrPartition},
		{logstore.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
		{logstore.ErrMessageTooLarge, kerr.MessageTooLarge},
		{logstore.ErrBatchTooLarge, kerr.RecordListTooLarge},
		{logstore.ErrInvalidRecord, kerr.InvalidRecord},
		{logstore.ErrCorrupt, kerr.CorruptMessage},
		{record.ErrCorrupt, kerr.CorruptMessage},
		{record.ErrShort, kerr.CorruptMessage},
		{&record.CorruptError{Pos: 7, Reason: "crc", Err: record.ErrCorrupt}, kerr.CorruptMessage},
		{logstore.ErrDuplicateSequence, kerr.DuplicateSequenceNumber},
		{logstore.ErrOutOfOrderSeq, kerr.OutOfOrderSequenceNumber},
		{logstore.ErrProducerFenced, kerr.InvalidProducerEpoch},
		{logstore.ErrUnknownProducerID, kerr.UnknownProducerID},
		{logstore.ErrFenced, kerr.KafkaStorageError},
		{logstore.ErrClosed, kerr.NotLeaderForPartition},
		// A clean append failure on a full disk or quota, as the store
		// wraps it: retriable, not UNKNOWN_SERVER_ERROR.
		{fmt.Errorf("append to x.log: %w", &os.PathError{Op: "write", Path: "x.log", Err: syscall.ENOSPC}), kerr.KafkaStorageError},
		{fmt.Errorf("roll: %w", &os.PathError{Op: "open", Path: "y.log", Err: syscall.EDQUOT}), kerr.KafkaStorageError},
		{logstore.ErrInvalidName, kerr.InvalidTopicException},
		{fmt.Errorf("%w: x", logstore.ErrReservedName), kerr.TopicAuthorizationFailed},
		{logstore.ErrTopicExists, kerr.TopicAlreadyExists},
		{logstore.ErrInvalidConfig, kerr.InvalidConfig},
		{logstore.ErrPolicyViolation, kerr.PolicyViolation},
		// Wrapped errors keep their code: the store adds file and position.
		{fmt.Errorf("orders-0: %w", logstore.ErrOffsetOutOfRange), kerr.OffsetOutOfRange},
		{fmt.Errorf("segment 5: %w", fmt.Errorf("batch at 10: %w", logstore.ErrCorrupt)), kerr.CorruptMessage},
		// Anything unmapped (I/O) is UNKNOWN_SERVER_ERROR.
		{errors.New("input/output error"), kerr.UnknownServerError},
	}
	for _, tt := range tests {
		if got := errorCode(tt.err); got != tt.want.Code {
			t.Errorf("errorCode(%v) = %d (%v), want %d (%s)", tt.err, got, kerr.ErrorForCode(got), tt.want.Code, tt.want.Message)
		}
	}
	if got := errorCode(nil); got != 0 {
		t.Errorf("errorCode(nil) = %d", got)
	}
}

// TestReadErrorCode: a Fetch's read that fails on the log's file (a
// pread error, or a file cut short behind the store) is
// KAFKA_STORAGE_ERROR; the mapped errors keep their codes, and a file
// closed under the read or an error of no file stays UNKNOWN_SERVER_ERROR.
func TestReadErrorCode(t *testing.T) {
	tests := []struct {
		err  error
		want *kerr.Error
	}{
		{io.ErrUnexpectedEOF, kerr.KafkaStorageError},
		{fmt.Errorf("segment 0: %w", io.ErrUnexpectedEOF), kerr.KafkaStorageError},
		{&os.PathError{Op: "read", Path: "x.log", Err: syscall.EIO}, kerr.KafkaStorageError},
		{fmt.Errorf("orders-0: %w", logstore.ErrOffsetOutOfRange), kerr.OffsetOutOfRange},
		{&logstore.CorruptError{Path: "x.log", Pos: 10, Err: record.ErrShort}, kerr.CorruptMessage},
		{logstore.ErrClosed, kerr.NotLeaderForPartition},
		{logstore.ErrUnknownPartition, kerr.UnknownTopicOrPartition},
		{&os.PathError{Op: "read", Path: "x.log", Err: os.ErrClosed}, kerr.UnknownServerError},
		{errors.New("something else"), kerr.UnknownServerError},
	}
	for _, tt := range tests {
		if got := readErrorCode(tt.err); got != tt.want.Code {
			t.Errorf("readErrorCode(%v) = %d (%v), want %d (%s)", tt.err, got, kerr.ErrorForCode(got), tt.want.Code, tt.want.Message)
		}
	}
}

// Every sentinel the store exports either has a row or is deliberately
// left to UNKNOWN_SERVER_ERROR; this catches a new sentinel nobody mapped.
func TestErrorCodeCoversStoreSentinels(t *testing.T) {
	unmapped := map[error]bool{logstore.ErrLocked: true} // Open only; never reaches a request
	for _, err := range []error{
		logstore.ErrOffsetOutOfRange, logstore.ErrUnknownTopic, logstore.ErrUnknownPartition,
		logstore.ErrTopicExists, logstore.ErrPartitionExists, logstore.ErrInvalidName,
		logstore.ErrInvalidPartition, logstore.ErrInvalidConfig, logstore.ErrMessageTooLarge,
		logstore.ErrBatchTooLarge, logstore.ErrInvalidRecord, logstore.ErrCorrupt, logstore.ErrFenced,
		logstore.ErrClosed, logstore.ErrLocked, logstore.ErrDuplicateSequence, logstore.ErrOutOfOrderSeq,
		logstore.ErrProducerFenced, logstore.ErrUnknownProducerID, logstore.ErrPolicyViolation,
	} {
		if got := errorCode(err) == kerr.UnknownServerError.Code; got != unmapped[err] {
			t.Errorf("%v: unmapped = %v, want %v", err, got, unmapped[err])
		}
	}
}
