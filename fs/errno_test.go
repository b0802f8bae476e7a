package fs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"

	"github.com/segfs/segfs/logstore"
)

func TestToErrno(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("partition orders-0: %w", err) }
	pathErr := &os.PathError{Op: "write", Path: "/d/orders-0/00000000000000000000.log", Err: syscall.ENOSPC}
	tests := []struct {
		name string
		err  error
		want syscall.Errno
	}{
		{"nil", nil, 0},
		{"offset out of range", wrap(logstore.ErrOffsetOutOfRange), syscall.ENOENT},
		{"unknown topic", logstore.ErrUnknownTopic, syscall.ENOENT},
		{"unknown partition", wrap(wrap(logstore.ErrUnknownPartition)), syscall.ENOENT},
		{"topic exists", wrap(logstore.ErrTopicExists), syscall.EEXIST},
		{"partition exists", logstore.ErrPartitionExists, syscall.EEXIST},
		{"invalid name", wrap(logstore.ErrInvalidName), syscall.EINVAL},
		{"invalid partition", wrap(logstore.ErrInvalidPartition), syscall.EINVAL},
		{"invalid config", fmt.Errorf("line 3: %w", logstore.ErrInvalidConfig), syscall.EINVAL},
		{"invalid record", wrap(logstore.ErrInvalidRecord), syscall.EINVAL},
		{"message too large", wrap(logstore.ErrMessageTooLarge), syscall.EMSGSIZE},
		{"batch too large", logstore.ErrBatchTooLarge, syscall.EMSGSIZE},
		{"corrupt", fmt.Errorf("segment 0 pos 4096: %w", logstore.ErrCorrupt), syscall.EIO},
		{"closed", logstore.ErrClosed, syscall.EIO},
		{"fenced alone", wrap(logstore.ErrFenced), syscall.EIO},
		{"fenced by ENOSPC", fmt.Errorf("%w: %w", logstore.ErrFenced, pathErr), syscall.ENOSPC},
		{"fenced by EROFS", fmt.Errorf("%w: %w", logstore.ErrFenced, syscall.EROFS), syscall.EROFS},
		{"ENOSPC", wrap(pathErr), syscall.ENOSPC},
		{"EDQUOT", wrap(syscall.EDQUOT), syscall.EDQUOT},
		{"EROFS", syscall.EROFS, syscall.EROFS},
		{"bare EIO", wrap(syscall.EIO), syscall.EIO},
		{"ENOSYS is never passed on", wrap(syscall.ENOSYS), syscall.EIO},
		{"not exist", wrap(fs.ErrNotExist), syscall.ENOENT},
		{"canceled", wrap(context.Canceled), syscall.EINTR},
		{"unknown", errors.New("something odd"), syscall.EIO},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := toErrno(tc.err); got != tc.want {
				t.Errorf("toErrno(%v) = %v (%d), want %v (%d)", tc.err, got, got, tc.want, tc.want)
			}
		})
	}
}
