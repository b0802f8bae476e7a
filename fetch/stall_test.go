package fetch

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// stallTopic fills topic "big" with mb MB (a multiple of 4), far more
// than the socket buffers of a loopback connection hold.
func stallTopic(t *testing.T, ts *testServer, mb int) {
	t.Helper()
	createTopic(t, ts, "big", 1)
	c := dial(t, ts.addr)
	defer c.conn.Close()
	val := strings.Repeat("s", 200<<10)
	for range mb * 5 / 2 {
		c.produce(9, "big", 0, produceBatch(t, val, val))
	}
}

// fetchAll sends a Fetch of all of "big" (up to 100 MB) over c.
func fetchAll(c *client) {
	c.send(fetchReq(11, "big", 0, 0, 0, 0, 100<<20, 100<<20))
}

// A client that sends a Fetch and never reads the answer used to block its
// connection forever, holding the response's segment files open (so
// segments that retention removed stayed on disk) and a goroutine. After
// MaxWriteIdle without progress the connection is closed, as Kafka does
// after connections.max.idle.ms.
func TestStalledClientIsClosed(t *testing.T) {
	ts := startServer(t, Config{MaxWriteIdle: 300 * time.Millisecond})
	stallTopic(t, ts, 32)
	waitFor(t, func() bool { return ts.srv.Stats().Connections == 0 })

	c := dial(t, ts.addr)
	c.conn.(*net.TCPConn).SetReadBuffer(4096)
	fetchAll(c)
	// The response is under way: sendfile has moved what the socket
	// buffers take, then stalls.
	waitFor(t, func() bool { return ts.srv.Stats().SendfileBytes > 0 })
	waitFor(t, func() bool { return ts.srv.Stats().Connections == 0 })

	// The server still serves everyone else.
	other := dial(t, ts.addr)
	resp := other.roundTrip(fetchReq(11, "big", 0, 0, 0, 0, 1<<20, 1<<20)).(*kmsg.FetchResponse)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
		t.Fatalf("fetch after a stalled client was closed: error %d, %d record bytes", p.ErrorCode, len(p.RecordBatches))
	}
}

// The limit is on progress, not on the whole response: a client that reads
// slowly but steadily (512 KB every fiftieth of the limit, so the kernel's
// send buffer of a few MB drains well within it) gets a response that
// takes longer than MaxWriteIdle: 64 reads, 64/50 of the limit at least.
// The limit of 2 s still leaves 40 ms between reads, each of which lets
// the blocked sendfile move on.
func TestSlowClientIsNotClosed(t *testing.T) {
	const idle = 2 * time.Second
	ts := startServer(t, Config{MaxWriteIdle: idle})
	stallTopic(t, ts, 32)
	c := dial(t, ts.addr)
	fetchAll(c)
	start := time.Now()
	var sizeb [4]byte
	c.conn.SetReadDeadline(time.Now().Add(5 * time.Minute))
	if _, err := io.ReadFull(c.conn, sizeb[:]); err != nil {
		t.Fatal(err)
	}
	size := int(sizeb[0])<<24 | int(sizeb[1])<<16 | int(sizeb[2])<<8 | int(sizeb[3])
	buf := make([]byte, 512<<10)
	for got := 0; got < size; {
		time.Sleep(idle / 50)
		n, err := io.ReadFull(c.conn, buf[:min(len(buf), size-got)])
		got += n
		if err != nil {
			t.Fatalf("slow reader cut off after %d of %d bytes (%v): %v", got, size, time.Since(start), err)
		}
	}
	if took := time.Since(start); took < idle {
		t.Logf("the response took %v, less than the %v limit: the test proved little", took, idle)
	}
}
