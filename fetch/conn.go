package fetch

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Request header v1/v2 (KAFKA-PROTOCOL.md §3): api_key int16, api_version
// int16, correlation_id int32, client_id int16-length nullable string, and
// for flexible requests a tag section.
const (
	reqHeaderFixed = 2 + 2 + 4 // key, version, correlation id
	reqHeaderMin   = reqHeaderFixed + 2
)

// firstFrameChunk bounds the first allocation for a frame: a size prefix is
// only a claim, so the buffer grows with the bytes that actually arrive.
const firstFrameChunk = 64 << 10

// reqHeader is the decoded request header.
type reqHeader struct {
	key      int16
	version  int16
	corr     int32
	clientID string
}

// conn is one client connection. Its goroutine reads a request, handles it
// and writes the response before reading the next, which keeps responses
// in request order and holds no buffer while idle.
type conn struct {
	s      *Server
	nc     net.Conn
	raw    syscall.RawConn // nil when the conn has no fd (net.Pipe): copy records
	remote string

	mu      sync.Mutex
	idle    bool // blocked waiting for the next frame's size
	closing bool // Shutdown asked; close after the current request

	size [4]byte
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{s: s, nc: nc, remote: nc.RemoteAddr().String()}
	if sc, ok := nc.(syscall.Conn); ok && !s.cfg.CopyRecords {
		if rc, err := sc.SyscallConn(); err == nil {
			c.raw = rc
		}
	}
	return c
}

// setIdle records whether the goroutine waits for a new frame. It reports
// false when Shutdown has asked the connection to end.
func (c *conn) setIdle(idle bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.idle = idle
	return !c.closing
}

// closeIfIdle is Shutdown's request: an idle connection closes now, a busy
// one after its current response.
func (c *conn) closeIfIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closing = true
	if c.idle {
		c.nc.Close()
	}
}

func (c *conn) serve() {
	defer c.s.untrack(c)
	defer c.nc.Close()
	defer func() {
		// A bug in one handler must not take down the server and every
		// other client with it.
		if r := recover(); r != nil {
			c.s.log.Error("fetch: panic serving connection", "remote", c.remote, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	for {
		if !c.setIdle(true) {
			return
		}
		if _, err := io.ReadFull(c.nc, c.size[:]); err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				c.s.log.Debug("fetch: read", "remote", c.remote, "err", err)
			}
			return
		}
		if !c.setIdle(false) {
			return
		}
		size := int32(binary.BigEndian.Uint32(c.size[:]))
		if size < reqHeaderMin || size > c.s.cfg.MaxRequestBytes {
			// Kafka closes on an invalid size (InvalidReceiveException); the
			// claimed size is never allocated.
			if hint := notKafka(c.size); hint != "" {
				c.s.log.Warn("fetch: closing connection: not a Kafka client: "+hint, "remote", c.remote)
				return
			}
			c.s.log.Warn("fetch: closing connection: bad frame size", "remote", c.remote, "size", size, "max", c.s.cfg.MaxRequestBytes)
			return
		}
		frame, err := readFrame(c.nc, int(size), getFrame())
		if err != nil {
			c.s.log.Debug("fetch: read frame", "remote", c.remote, "err", err)
			return
		}
		err = c.handle(frame)
		if binary.BigEndian.Uint16(frame) == produceKey {
			putFrame(frame)
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				err = fmt.Errorf("the client read nothing of its response for %v: %w", c.s.cfg.MaxWriteIdle, err)
			}
			if clientGone(err) {
				// A client that closed with a response still to come (kcat
				// exiting mid Metadata, a consumer stopped mid long poll)
				// is routine, not a warning.
				c.s.log.Debug("fetch: client closed the connection before its response", "remote", c.remote, "err", err)
				return
			}
			c.s.log.Warn("fetch: closing connection", "remote", c.remote, "err", err)
			return
		}
	}
}

// readFrame reads size bytes into buf (whose contents do not matter),
// growing it as data arrives so that a client claiming 100 MiB and
// sending 10 bytes costs 64 KiB, not 100 MiB.
func readFrame(r io.Reader, size int, buf []byte) ([]byte, error) {
	if cap(buf) < min(size, firstFrameChunk) {
		buf = make([]byte, 0, min(size, firstFrameChunk))
	}
	buf = buf[:0]
	for len(buf) < size {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(size-len(buf), cap(buf)))
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), size)])
		buf = buf[:len(buf)+n]
		if err != nil && len(buf) < size {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return buf, nil
}

// Frames of Produce requests are reused: under a producer's load each is
// up to a batch's size (franz-go's default 1 MB), and allocating and
// zeroing one per request was garbage the collector then had to find.
// Only Produce frames come back, once handled: its handler keeps no slice
// of the frame (AppendBatch copies the records into the segment file, or
// recompresses them into the partition's buffer, and kmsg copies every
// string), which other requests do not promise (JoinGroup's and
// SyncGroup's byte fields alias the frame and stay in the group). A frame
// goes back after its response is written, so nothing the response
// refers to can be overwritten. The pool, not the connection, holds them,
// so an idle connection holds none.
var produceFrames sync.Pool // of *[]byte

const (
	produceKey     = 0
	maxPooledFrame = 4 << 20 // larger frames (a rare huge batch) are not kept
)

// getFrame returns a buffer for the next frame: a Produce frame handled
// earlier, or nil.
func getFrame() []byte {
	if p, ok := produceFrames.Get().(*[]byte); ok {
		return *p
	}
	return nil
}

// putFrame hands the frame of a handled Produce request back for reuse.
func putFrame(b []byte) {
	if cap(b) <= maxPooledFrame {
		b = b[:0]
		produceFrames.Put(&b)
	}
}

// parseHeader decodes the fixed part of a request header and returns the
// rest of the frame (the tag section, if any, and the body).
func parseHeader(frame []byte) (reqHeader, []byte, error) {
	var h reqHeader
	if len(frame) < reqHeaderMin {
		return h, nil, errors.New("short request header")
	}
	h.key = int16(binary.BigEndian.Uint16(frame[0:]))
	h.version = int16(binary.BigEndian.Uint16(frame[2:]))
	h.corr = int32(binary.BigEndian.Uint32(frame[4:]))
	n := int(int16(binary.BigEndian.Uint16(frame[8:])))
	rest := frame[reqHeaderMin:]
	switch {
	case n == -1: // null client id
	case n < 0 || n > len(rest):
		return h, nil, fmt.Errorf("client id length %d out of range", n)
	default:
		h.clientID = string(rest[:n])
		rest = rest[n:]
	}
	return h, rest, nil
}

// skipTags skips a tag section (uvarint count, then uvarint tag, uvarint
// size and size bytes per tag) and returns what follows.
func skipTags(b []byte) ([]byte, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, errors.New("bad tag count")
	}
	b = b[n:]
	for range count {
		if _, n = binary.Uvarint(b); n <= 0 {
			return nil, errors.New("bad tag")
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || size > uint64(len(b)-n) {
			return nil, errors.New("bad tag size")
		}
		b = b[n+int(size):]
	}
	return b, nil
}

// handle decodes one frame and runs its handler.
func (c *conn) handle(frame []byte) error {
	h, rest, err := parseHeader(frame)
	if err != nil {
		return err
	}
	c.s.requests.Add(1)
	a := apis[h.key]
	if a == nil || h.version < a.min || h.version > a.max {
		return c.unsupported(&h, a)
	}
	req := kmsg.RequestForKey(h.key)
	if req == nil { // registered keys are all known to kmsg; belt and braces
		return c.unsupported(&h, a)
	}
	req.SetVersion(h.version)
	if req.IsFlexible() {
		if rest, err = skipTags(rest); err != nil {
			return fmt.Errorf("%s v%d header: %w", kmsg.NameForKey(h.key), h.version, err)
		}
	}
	if err := req.ReadFrom(rest); err != nil {
		return fmt.Errorf("%s v%d: unparsable request: %w", kmsg.NameForKey(h.key), h.version, err)
	}
	if c.s.log.Enabled(context.Background(), slog.LevelDebug) {
		c.s.log.Debug("fetch: request", "remote", c.remote, "api", kmsg.NameForKey(h.key), "version", h.version, "client", h.clientID)
	}
	return a.handle(c, &h, req)
}

// unsupported answers a request for an API key or version this server does
// not serve with UNSUPPORTED_VERSION, in the one body layout every client
// can read without knowing the key: ApiVersions v0 (error code, then the
// supported ranges), under a v0 response header. This is Kafka's KIP-511
// answer for ApiVersions; for other keys Kafka closes the connection, but
// an answer tells a hand-written or misconfigured client what went wrong,
// and frames stay aligned, so the connection stays usable.
func (c *conn) unsupported(h *reqHeader, a *api) error {
	if h.key != 18 {
		c.s.log.Info("fetch: unsupported request", "remote", c.remote, "key", h.key, "api", kmsg.NameForKey(h.key), "version", h.version)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = advertised()
	return c.sendHeaderV0(h.corr, resp)
}

// send encodes resp under the response header its (key, version) calls
// for and writes it.
func (c *conn) send(h *reqHeader, resp kmsg.Response) error {
	resp.SetVersion(h.version)
	buf := make([]byte, 8, 256)
	binary.BigEndian.PutUint32(buf[4:], uint32(h.corr))
	// ApiVersions answers always use header v0, even when flexible, so a
	// client can read them before it knows what the server speaks (P2).
	if resp.IsFlexible() && resp.Key() != 18 {
		buf = append(buf, 0)
	}
	buf = resp.AppendTo(buf)
	return c.writeFrame(buf)
}

// sendHeaderV0 writes resp, whose version is already set, under a v0
// response header regardless of its version.
func (c *conn) sendHeaderV0(corr int32, resp kmsg.Response) error {
	buf := make([]byte, 8, 256)
	binary.BigEndian.PutUint32(buf[4:], uint32(corr))
	buf = resp.AppendTo(buf)
	return c.writeFrame(buf)
}

// writeFrame patches the size prefix of buf (whose first 4 bytes are
// reserved for it) and writes it.
func (c *conn) writeFrame(buf []byte) error {
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return c.write(buf)
}

// writeProgress (re)arms the write deadline: a response must move a byte
// to the client at least every MaxWriteIdle. Called before each write and
// after each sendfile that made progress, so a slow but live client is
// never cut off, while one that stopped reading is, and its connection's
// goroutine and the segment files of its response are freed.
func (c *conn) writeProgress() {
	c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.MaxWriteIdle))
}

// write writes b from user space and counts it.
func (c *conn) write(b []byte) error {
	c.writeProgress()
	n, err := c.nc.Write(b)
	c.s.userBytes.Add(int64(n))
	return err
}

// notKafka names the protocol of a connection whose first bytes, read as a
// frame size, are too large to be Kafka's but are what a TLS or HTTP client
// sends first: a client configured for SSL/SASL_SSL against this plaintext
// listener, or a browser or health check pointed at the wrong port. The
// bare "bad frame size" said nothing useful about either.
func notKafka(b [4]byte) string {
	switch {
	case b[0] == 0x16 && b[1] == 0x03:
		return "a TLS handshake (the server speaks plaintext Kafka only; use security.protocol=PLAINTEXT)"
	case string(b[:]) == "GET " || string(b[:]) == "POST" || string(b[:]) == "HEAD" || string(b[:]) == "PUT " || string(b[:]) == "PRI ":
		return "an HTTP request"
	}
	return ""
}

// clientGone reports whether err is a send to a client that has closed its
// end (EPIPE, ECONNRESET).
func clientGone(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}
