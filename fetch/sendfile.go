package fetch

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/segfs/segfs/logstore"
)

// maxSendfileChunk keeps each sendfile(2) call below Linux's per-call limit
// of 0x7ffff000 bytes.
const maxSendfileChunk = 1 << 30

// errFileShrank means a segment file ended before the range the store
// handed out: the frame size is already promised, so the connection must
// close (Kafka's FileRecords.writeTo does the same).
var errFileShrank = errors.New("segment file shorter than the range being sent")

// piece is one part of a response frame: bytes from memory, or a range of a
// segment file.
type piece struct {
	mem  []byte
	file logstore.FileSlice
}

// writePieces writes a frame made of memory and file pieces in order:
// consecutive memory pieces go out in one writev, file ranges by sendfile.
func (c *conn) writePieces(pieces []piece) error {
	var bufs net.Buffers
	flush := func() error {
		if len(bufs) == 0 {
			return nil
		}
		c.writeProgress()
		n, err := bufs.WriteTo(c.nc)
		c.s.userBytes.Add(n)
		bufs = bufs[:0]
		return err
	}
	for _, p := range pieces {
		if p.file.File == nil {
			if len(p.mem) > 0 {
				bufs = append(bufs, p.mem)
			}
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		if err := c.sendFile(p.file); err != nil {
			return err
		}
	}
	return flush()
}

// sendFile sends a file range to the connection with sendfile(2) at an
// explicit offset. Go's own (*net.TCPConn).ReadFrom would use sendfile too,
// but from the file's current position, which it moves: the store shares
// one *os.File per segment among all readers, so that is not an option
// (KAFKA-PROTOCOL.md §7.6, P18). Passing the offset keeps the shared
// position untouched. The socket's RawConn.Write integrates with the
// runtime poller: on EAGAIN we return false and are called again once the
// socket is writable, so a slow client parks this goroutine, not a thread.
func (c *conn) sendFile(fs logstore.FileSlice) error {
	if c.raw == nil {
		return c.copyFile(fs)
	}
	frc, err := fs.File.SyscallConn()
	if err != nil {
		return c.copyFile(fs)
	}
	off, remain := fs.Pos, fs.Len
	var sendErr error
	c.writeProgress()
	ctlErr := frc.Control(func(ffd uintptr) {
		// The poller's wait for writability (return false) honours the
		// write deadline, which each sendfile that moved bytes pushes
		// back (SetWriteDeadline does not take the write lock held here).
		werr := c.raw.Write(func(sfd uintptr) bool {
			for remain > 0 {
				n, err := unix.Sendfile(int(sfd), int(ffd), &off, int(min(remain, maxSendfileChunk)))
				if n > 0 {
					remain -= int64(n)
					c.s.sendfileBytes.Add(int64(n))
					c.writeProgress()
				}
				switch {
				case err == unix.EAGAIN:
					return false
				case err == unix.EINTR:
					continue
				case err != nil:
					sendErr = fmt.Errorf("sendfile: %w", err)
					return true
				case n == 0:
					sendErr = errFileShrank
					return true
				}
			}
			return true
		})
		if sendErr == nil {
			sendErr = werr
		}
	})
	if sendErr != nil {
		return sendErr
	}
	return ctlErr
}

// copyBufs holds buffers for the user-space fallback.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// copyFile sends a file range through a user-space buffer with pread. It
// serves connections without a file descriptor and Config.CopyRecords.
func (c *conn) copyFile(fs logstore.FileSlice) error {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	off, remain := fs.Pos, fs.Len
	for remain > 0 {
		n, err := fs.File.ReadAt(buf[:min(remain, int64(len(buf)))], off)
		if n > 0 {
			if werr := c.write(buf[:n]); werr != nil {
				return werr
			}
			off += int64(n)
			remain -= int64(n)
		}
		if err != nil && remain > 0 {
			if errors.Is(err, io.EOF) {
				return errFileShrank
			}
			return err
		}
	}
	return nil
}
