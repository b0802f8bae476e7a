package fetch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Ranges advertised must be exactly KAFKA-PROTOCOL.md §4.2's first release
// plus the offset-store, classic group, topic admin, log directory and
// transaction admin APIs, KIP-848 consumer groups (ListGroups v5 with
// group types, ConsumerGroupHeartbeat, ConsumerGroupDescribe), and
// OffsetForLeaderEpoch from KIP-320's v2.
func TestApiVersionsAdvertised(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	want := map[int16][2]int16{
		0: {0, 12}, 1: {4, 12}, 2: {1, 10}, 3: {0, 12}, 8: {0, 9}, 9: {0, 9}, 10: {0, 4}, 18: {0, 3}, 22: {0, 4}, 27: {0, 1}, 61: {0, 0},
		11: {0, 9}, 12: {0, 4}, 13: {0, 5}, 14: {0, 5}, 15: {0, 5}, 16: {0, 5}, 21: {0, 2},
		42: {0, 2}, 43: {0, 2}, 45: {0, 1}, 46: {0, 0}, 47: {0, 0}, 29: {1, 3}, 30: {1, 3}, 31: {1, 3}, 48: {0, 1}, 50: {0, 0},
		19: {0, 7}, 20: {0, 6}, 32: {0, 4}, 33: {0, 2}, 37: {0, 3}, 44: {0, 1}, 60: {0, 2},
		35: {0, 4}, 65: {0, 0}, 66: {0, 1},
		68: {0, 1}, 69: {0, 1},
		23: {2, 4},
	}
	for v := int16(0); v <= 3; v++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
		resp := c.roundTrip(req).(*kmsg.ApiVersionsResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("v%d: error %d", v, resp.ErrorCode)
		}
		got := map[int16][2]int16{}
		for _, k := range resp.ApiKeys {
			got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
		}
		if len(got) != len(want) {
			t.Errorf("v%d: advertised %v, want %v", v, got, want)
		}
		for k, r := range want {
			if got[k] != r {
				t.Errorf("v%d: key %d advertised %v, want %v", v, k, got[k], r)
			}
		}
	}
}

// ApiVersions above v3 gets the KIP-511 answer: a v0 body, error 35, and
// our ranges, under a header without tags (P2, P3); the connection stays.
func TestApiVersionsTooNew(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 5
	corr := c.send(req)
	frame, err := c.readFrame()
	if err != nil {
		t.Fatal(err)
	}
	resp := decodeResponse(t, frame, corr, &kmsg.ApiVersionsResponse{Version: 0}).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("error %d, want 35", resp.ErrorCode)
	}
	found := false
	for _, k := range resp.ApiKeys {
		if k.ApiKey == 18 && k.MaxVersion == 3 {
			found = true
		}
	}
	if !found {
		t.Fatalf("ApiVersions range missing: %+v", resp.ApiKeys)
	}
	// The client retries at v3 on the same connection.
	req.Version = 3
	if r := c.roundTrip(req).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
		t.Fatalf("retry at v3: error %d", r.ErrorCode)
	}
}

// rawRequest frames a request header with arbitrary key/version and body.
func rawRequest(key, version int16, corr int32, body []byte) []byte {
	b := make([]byte, 4, 32)
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 0xffff) // null client id
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// Unknown API keys and unsupported versions of known ones get
// UNSUPPORTED_VERSION; the connection keeps working.
func TestUnsupportedRequests(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	cases := []struct {
		name         string
		key, version int16
	}{
		{"unknown key", 1000, 0},
		{"key kmsg knows, not served (AddPartitionsToTxn)", 24, 0},
		{"DescribeAcls v0 (removed by KIP-896)", 29, 0},
		{"CreateAcls v0", 30, 0},
		{"DeleteAcls v0", 31, 0},
		{"ConsumerGroupHeartbeat v2", 68, 2},
		{"JoinGroup v10", 11, 10},
		{"Fetch v13 (topic ids)", 1, 13},
		{"Fetch v3 (message sets)", 1, 3},
		{"Produce v2 (message sets; listed, not served)", 0, 2},
		{"Produce v13", 0, 13},
		{"DescribeLogDirs v5 (is_cordoned)", 35, 5},
		{"ListTransactions v2 (transactional id pattern)", 66, 2},
		{"DescribeTransactions v1", 65, 1},
		{"negative key", -5, 0},
		{"OffsetForLeaderEpoch v1 (before KIP-320)", 23, 1},
		{"GetTelemetrySubscriptions (not advertised, P8)", 71, 0},
		{"ListOffsets v0 (legacy form)", 2, 0},
		{"ListOffsets v11 (earliest pending upload)", 2, 11},
		{"Metadata v13", 3, 13},
	}
	for i, tc := range cases {
		corr := int32(100 + i)
		if _, err := c.conn.Write(rawRequest(tc.key, tc.version, corr, []byte{0, 0, 0, 0})); err != nil {
			t.Fatal(err)
		}
		frame, err := c.readFrame()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
			t.Fatalf("%s: correlation %d", tc.name, got)
		}
		if code := int16(binary.BigEndian.Uint16(frame[4:])); code != kerr.UnsupportedVersion.Code {
			t.Errorf("%s: error %d, want 35", tc.name, code)
		}
	}
	// Still usable.
	req := kmsg.NewPtrApiVersionsRequest()
	if r := c.roundTrip(req).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
		t.Fatalf("after unsupported requests: error %d", r.ErrorCode)
	}
}

// expectClosed asserts that the server closes c without answering.
func expectClosed(t *testing.T, c *client, what string) {
	t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b [1]byte
	_, err := c.conn.Read(b[:])
	if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("%s: connection still open", what)
		}
	}
	if err == nil {
		t.Fatalf("%s: got a response byte", what)
	}
}

// Hostile frames close their connection; the server keeps serving others,
// and a huge size claim is not allocated.
func TestHostileFrames(t *testing.T) {
	ts := startServer(t, Config{MaxRequestBytes: 1 << 20})
	healthy := dial(t, ts.addr)

	cases := []struct {
		name  string
		bytes []byte
	}{
		{"oversize frame", binary.BigEndian.AppendUint32(nil, 1<<20+1)},
		{"2 GiB claim", []byte{0x7f, 0xff, 0xff, 0xff}},
		{"negative size", []byte{0xff, 0xff, 0xff, 0xf0}},
		{"frame shorter than a header", []byte{0, 0, 0, 3, 0, 1, 0}},
		{"client id past the frame", rawRequest(18, 0, 1, nil)[:12]},
		{"garbage body", rawRequest(3, 12, 1, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f})},
		{"bad tag section", rawRequest(18, 3, 1, []byte{0x05, 0xff})},
	}
	// The "client id past the frame" case: size says 8 bytes follow, but
	// the client id length claims more.
	cases[4].bytes = append(binary.BigEndian.AppendUint32(nil, 10), 0, 18, 0, 0, 0, 0, 0, 1, 0x00, 0x40)
	for _, tc := range cases {
		c := dial(t, ts.addr)
		if _, err := c.conn.Write(tc.bytes); err != nil {
			t.Fatal(err)
		}
		expectClosed(t, c, tc.name)
		// The server still answers on an established connection and a new one.
		if r := healthy.roundTrip(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
			t.Fatalf("after %s: error %d", tc.name, r.ErrorCode)
		}
		if r := dial(t, ts.addr).roundTrip(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
			t.Fatalf("after %s: error %d", tc.name, r.ErrorCode)
		}
	}
}

// A frame that claims (almost) the maximum and then stalls costs what
// arrived, not what was claimed.
func TestSizeClaimNotAllocated(t *testing.T) {
	ts := startServer(t, Config{}) // 100 MiB limit
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const conns = 20
	for range conns {
		c := dial(t, ts.addr)
		b := binary.BigEndian.AppendUint32(nil, 99<<20)
		b = append(b, 0, 18, 0, 0) // a few bytes of the promised 99 MiB
		if _, err := c.conn.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	// Let the server read what was sent.
	waitFor(t, func() bool { return ts.srv.Stats().Connections == conns })
	time.Sleep(100 * time.Millisecond)
	runtime.ReadMemStats(&after)
	grown := int64(after.TotalAlloc - before.TotalAlloc)
	if grown > 20<<20 {
		t.Fatalf("%d stalled 99 MiB claims allocated %d MiB", conns, grown>>20)
	}
}

// waitFor polls cond (test-only; the server itself never polls).
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// 1,000 idle connections cost little: no per-connection buffers, only
// a goroutine and the socket.
func TestIdleConnectionsAreCheap(t *testing.T) {
	const n = 1000
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < 2*n+200 {
		// Both ends live in this process; raise the limit (root may
		// raise the hard limit too) rather than test less.
		want := syscall.Rlimit{Cur: 2*n + 200, Max: max(lim.Max, 2*n+200)}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
			t.Skipf("RLIMIT_NOFILE %d is too low for %d connections and cannot be raised: %v", lim.Cur, n, err)
		}
	}
	ts := startServer(t, Config{})
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	conns := make([]net.Conn, 0, n)
	for range n {
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatalf("cannot open %d connections: %v", n, err)
		}
		conns = append(conns, c)
	}
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	waitFor(t, func() bool { return ts.srv.Stats().Connections == n })
	// Every connection has served one request, then gone idle.
	for _, c := range conns[:100] {
		cl := &client{t: t, conn: c}
		cl.roundTrip(kmsg.NewPtrApiVersionsRequest())
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	// Heap and stacks of both ends (the clients live in this process too).
	grown := int64(after.HeapInuse+after.StackInuse) - int64(before.HeapInuse+before.StackInuse)
	perConn := grown / n
	t.Logf("%d idle connections: %d KiB in all, %d bytes each (both ends)", n, grown>>10, perConn)
	if perConn > 32<<10 {
		t.Fatalf("idle connection costs %d bytes", perConn)
	}
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A TLS or HTTP client on the plaintext port is closed like any bad frame,
// and the log says what it was instead of quoting a frame size of 369 MB.
func TestNotKafkaClientLogged(t *testing.T) {
	var logs syncBuffer
	ts := startServer(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for _, tc := range []struct {
		first []byte
		want  string
	}{
		{[]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01}, "TLS handshake"}, // ClientHello record header
		{[]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), "HTTP request"},
	} {
		c := dial(t, ts.addr)
		if _, err := c.conn.Write(tc.first); err != nil {
			t.Fatal(err)
		}
		expectClosed(t, c, tc.want)
		waitFor(t, func() bool { return strings.Contains(logs.String(), tc.want) })
	}
	if strings.Contains(logs.String(), "bad frame size") {
		t.Errorf("logged as a bad frame size:\n%s", logs.String())
	}
}

// A client that closes its connection while its request is served (a
// consumer stopped mid long poll, kcat exiting with a Metadata response
// under way) is routine: the send fails with EPIPE or ECONNRESET, and the
// server logs it at debug level, not as a warning.
func TestClientGoneNotWarned(t *testing.T) {
	var logs syncBuffer
	ts := startServer(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if _, err := ts.store.CreateTopic("quiet", 1, nil); err != nil {
		t.Fatal(err)
	}
	c := dial(t, ts.addr)
	// A long poll on an empty partition: the answer comes after 300 ms,
	// when the client is long gone.
	c.send(fetchReq(11, "quiet", 0, 0, 300, 1, 1<<20, 1<<20))
	waitFor(t, func() bool { return ts.srv.Stats().Connections == 1 })
	tc := c.conn.(*net.TCPConn)
	tc.SetLinger(0) // close with a reset
	tc.Close()
	waitFor(t, func() bool { return ts.srv.Stats().Connections == 0 })
	if strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "client closed the connection") {
		t.Fatalf("a client that went away: want one debug line, no warning; the log:\n%s", logs.String())
	}
}
