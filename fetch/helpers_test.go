package fetch

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/segfs/segfs/logstore"
	"github.com/segfs/segfs/logstore/record"
)

// testServer runs a Server in-process over a fresh store in t.TempDir.
type testServer struct {
	srv   *Server
	store *logstore.Store
	dir   string
	addr  string
	stop  func() // shuts down and closes the store (also run by Cleanup)
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func startServer(t testing.TB, cfg Config) *testServer {
	t.Helper()
	return startServerDir(t, t.TempDir(), cfg)
}

func startServerDir(t testing.TB, dir string, cfg Config) *testServer {
	t.Helper()
	return startServerPrepared(t, dir, cfg, nil)
}

// startServerPrepared is startServerDir with prepare run on the server
// before it serves (to replace its clock).
func startServerPrepared(t testing.TB, dir string, cfg Config, prepare func(*Server)) *testServer {
	t.Helper()
	store, err := logstore.Open(dir, logstore.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{srv: New(store, cfg), store: store, dir: dir, addr: ln.Addr().String()}
	if prepare != nil {
		prepare(ts.srv)
	}
	served := make(chan error, 1)
	go func() { served <- ts.srv.Serve(ln) }()
	// stop runs once, whoever calls it first (the test, or its cleanup
	// after a failure while the test's own call is still running).
	var once sync.Once
	stop := func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := ts.srv.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
			if err := <-served; err != nil {
				t.Errorf("Serve: %v", err)
			}
			if err := store.Close(); err != nil {
				t.Errorf("store.Close: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	ts.stop = stop
	return ts
}

// client is a raw protocol client: it writes kmsg requests with a correct
// header and reads responses frame by frame.
type client struct {
	t    testing.TB
	conn net.Conn
	corr int32
}

func dial(t testing.TB, addr string) *client {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, conn: c}
}

// encodeRequest frames req (version set) with a request header.
func encodeRequest(req kmsg.Request, corr int32, clientID string) []byte {
	b := make([]byte, 4, 64)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	b = append(b, clientID...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func (c *client) send(req kmsg.Request) int32 {
	c.t.Helper()
	c.corr++
	if _, err := c.conn.Write(encodeRequest(req, c.corr, "test")); err != nil {
		c.t.Fatal(err)
	}
	return c.corr
}

// readFrame reads one response frame (without its size prefix).
func (c *client) readFrame() ([]byte, error) {
	c.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	var sz [4]byte
	if _, err := io.ReadFull(c.conn, sz[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(sz[:]))
	_, err := io.ReadFull(c.conn, b)
	return b, err
}

// roundTrip sends req and decodes the response.
func (c *client) roundTrip(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	corr := c.send(req)
	frame, err := c.readFrame()
	if err != nil {
		c.t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	resp := req.ResponseKind()
	return decodeResponse(c.t, frame, corr, resp)
}

func decodeResponse(t testing.TB, frame []byte, corr int32, resp kmsg.Response) kmsg.Response {
	t.Helper()
	if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
		t.Fatalf("correlation id %d, want %d", got, corr)
	}
	body := frame[4:]
	if resp.IsFlexible() && resp.Key() != 18 {
		if body[0] != 0 {
			t.Fatalf("response header tags %x", body[0])
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decoding %s v%d: %v", kmsg.NameForKey(resp.Key()), resp.GetVersion(), err)
	}
	return resp
}

// produceBatch builds an uncompressed, non-idempotent batch of values, as
// a producer sends it (base offset 0).
func produceBatch(t testing.TB, values ...string) []byte {
	t.Helper()
	var bl record.Builder
	bl.Reset(record.DefaultSpec())
	now := time.Now().UnixMilli()
	for _, v := range values {
		bl.Add(now, nil, []byte(v), nil)
	}
	b, err := bl.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// produce sends one batch to topic/partition with acks=-1 and returns the
// partition's answer.
func (c *client) produce(version int16, topic string, partition int32, batch []byte) kmsg.ProduceResponseTopicPartition {
	c.t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version = version
	req.Acks = -1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := c.roundTrip(req).(*kmsg.ProduceResponse)
	return resp.Topics[0].Partitions[0]
}

// fetchReq builds a single-partition Fetch request.
func fetchReq(version int16, topic string, partition int32, offset int64, maxWait, minBytes, maxBytes, partMax int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = version
	req.ReplicaID = -1
	req.MaxWaitMillis = maxWait
	req.MinBytes = minBytes
	req.MaxBytes = maxBytes
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = partition
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = partMax
	rp.CurrentLeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// batchOffsets walks record batches and returns each batch's
// (base offset, last offset); a trailing partial batch is ignored.
func batchOffsets(b []byte) [][2]int64 {
	var out [][2]int64
	for len(b) >= record.HeaderSize {
		h, err := record.ParseHeader(b)
		if err != nil || int64(len(b)) < h.Size() {
			break
		}
		out = append(out, [2]int64{h.BaseOffset, h.LastOffset()})
		b = b[h.Size():]
	}
	return out
}

// values decodes every record value in record batches b from offset from.
func values(t testing.TB, b []byte, from int64) []string {
	t.Helper()
	var d record.Decoder
	var out []string
	for len(b) >= record.HeaderSize {
		h, err := record.ParseHeader(b)
		if err != nil || int64(len(b)) < h.Size() {
			break
		}
		err = d.Records(b[:h.Size()], func(r *record.Record) error {
			if r.Offset >= from {
				out = append(out, string(r.Value))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		b = b[h.Size():]
	}
	return out
}

func newLoopbackListener() (net.Listener, error) {
	return net.Listen("tcp", "127.0.0.1:0")
}
