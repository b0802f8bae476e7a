package fs

import (
	"context"
	"errors"
	"os"
	"syscall"

	"github.com/segfs/segfs/logstore"
)

// errnoTable maps logstore's sentinels to the errno a Unix user expects.
// Order matters only where an error could match two rows; the first match
// wins. Errors are matched with errors.Is, so %w chains are followed
// (go-fuse's fs.ToErrno does not follow them and would answer ENOSYS).
var errnoTable = []struct {
	err   error
	errno syscall.Errno
}{
	{logstore.ErrOffsetOutOfRange, syscall.ENOENT},
	{logstore.ErrUnknownTopic, syscall.ENOENT},
	{logstore.ErrUnknownPartition, syscall.ENOENT},
	{logstore.ErrTopicExists, syscall.EEXIST},
	{logstore.ErrPartitionExists, syscall.EEXIST},
	{logstore.ErrInvalidName, syscall.EINVAL},
	{logstore.ErrInvalidPartition, syscall.EINVAL},
	{logstore.ErrInvalidConfig, syscall.EINVAL},
	{logstore.ErrInvalidRecord, syscall.EINVAL},
	// No mount path takes a caller's timestamp (lines get the store's
	// clock), so none meets this; mapped as the bad input it is.
	{logstore.ErrInvalidTimestamp, syscall.EINVAL},
	{logstore.ErrMessageTooLarge, syscall.EMSGSIZE},
	{logstore.ErrBatchTooLarge, syscall.EMSGSIZE},
	{logstore.ErrCorrupt, syscall.EIO},
	{logstore.ErrClosed, syscall.EIO},
	{logstore.ErrLocked, syscall.EBUSY},
	{os.ErrNotExist, syscall.ENOENT},
	{context.Canceled, syscall.EINTR},
}

// toErrno is the one place where Go errors become errnos. nil is 0; an
// error that matches nothing known is EIO (never ENOSYS, which would make
// the kernel stop asking).
//
// A fenced partition (ErrFenced) answers with the errno of the failure that
// fenced it when that one is wrapped (ENOSPC, EROFS, ...), else EIO.
func toErrno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	// A backing-filesystem errno anywhere in the chain wins over the
	// sentinels: "fenced: write ...: no space left on device" is ENOSPC,
	// EDQUOT, EROFS or EIO as the disk said.
	var en syscall.Errno
	if errors.As(err, &en) && en != 0 && en != syscall.ENOSYS {
		return en
	}
	for _, row := range errnoTable {
		if errors.Is(err, row.err) {
			return row.errno
		}
	}
	return syscall.EIO
}
