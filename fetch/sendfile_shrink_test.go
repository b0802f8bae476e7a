package fetch

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchSegmentShrankUnderResponse: a segment file cut short behind the
// store's back (truncated by hand, a disk that lost its tail) makes the
// record range the store hands a Fetch reach past the file's end. The
// response frame's size is written before the records, so the server
// must send the bytes the file still has, exactly as they are, and close
// the connection, by sendfile and by the pread fallback (CopyRecords):
// the client sees a prefix of the response it got before the cut and then
// the end of the stream, never bytes made up to fill the frame nor a
// frame left waiting forever for the rest (which would make the client
// read the next response's bytes as records). A file cut to nothing is
// found before the frame is started, and answered with a whole response
// (KAFKA_STORAGE_ERROR, as a fetch of a batch wholly past the cut is) on
// a connection that goes on. The server
// goes on serving other connections. No test made a segment end under a
// fetch.
func TestFetchSegmentShrankUnderResponse(t *testing.T) {
	for _, copyRecords := range []bool{false, true} {
		for _, cut := range []string{"mid-batch", "empty"} {
			t.Run(fmt.Sprintf("copy=%v/%s", copyRecords, cut), func(t *testing.T) {
				ts := startServer(t, Config{CopyRecords: copyRecords})
				createTopic(t, ts, "shrink", 1)
				c := dial(t, ts.addr)
				for i := 0; i < 3; i++ {
					v := fmt.Sprintf("%d%s", i, strings.Repeat("x", 1000))
					if pr := c.produce(9, "shrink", 0, produceBatch(t, v)); pr.ErrorCode != 0 {
						t.Fatalf("produce: error %d", pr.ErrorCode)
					}
				}
				req := fetchReq(11, "shrink", 0, 0, 0, 1, 1<<20, 1<<20)
				corr := c.send(req)
				before, err := c.readFrame()
				if err != nil {
					t.Fatal(err)
				}
				resp := decodeResponse(t, before, corr, req.ResponseKind()).(*kmsg.FetchResponse)
				recs := resp.Topics[0].Partitions[0].RecordBatches
				if got := batchOffsets(recs); len(got) != 3 {
					t.Fatalf("fetch before the cut: batches %v, want 3", got)
				}
				logs, _ := filepath.Glob(filepath.Join(ts.dir, "shrink-0", "*.log"))
				if len(logs) != 1 {
					t.Fatalf("segment files %v, want one", logs)
				}
				size := int64(0)
				if cut == "mid-batch" {
					size = int64(len(recs)/3 + 100) // into the second batch
				}
				if err := os.Truncate(logs[0], size); err != nil {
					t.Fatal(err)
				}

				// The records are the last field of this one-partition
				// response: they start hdr bytes into any of its frames.
				hdr := len(before) - len(recs)
				c2 := dial(t, ts.addr)
				corr2 := c2.send(req)
				c2.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
				var sz [4]byte
				if _, err := io.ReadFull(c2.conn, sz[:]); err != nil {
					t.Fatalf("no response: %v", err)
				}
				frame := make([]byte, binary.BigEndian.Uint32(sz[:]))
				n, err := io.ReadFull(c2.conn, frame)
				var ne interface{ Timeout() bool }
				switch {
				case err == nil:
					// A whole frame: it must decode, its records a prefix of
					// the log's bytes, and the connection goes on.
					r := decodeResponse(t, frame, corr2, req.ResponseKind()).(*kmsg.FetchResponse)
					rp := r.Topics[0].Partitions[0]
					if !bytes.HasPrefix(recs[:size], rp.RecordBatches) {
						t.Fatalf("a whole response whose %d record bytes are not the %d the file still has", len(rp.RecordBatches), size)
					}
					t.Logf("a whole response: error %d, %d record bytes", rp.ErrorCode, len(rp.RecordBatches))
					if size == 0 && rp.ErrorCode != kerr.KafkaStorageError.Code {
						t.Fatalf("a fetch of a segment cut to nothing: error %d, want KAFKA_STORAGE_ERROR (%d)", rp.ErrorCode, kerr.KafkaStorageError.Code)
					}
					if v := c2.roundTrip(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse); v.ErrorCode != 0 {
						t.Fatalf("ApiVersions after the response: error %d", v.ErrorCode)
					}
				case errors.As(err, &ne) && ne.Timeout():
					t.Fatalf("the connection stayed open after %d bytes of a %d-byte frame: the client waits for bytes that never come", n, len(frame))
				case errors.Is(err, io.ErrUnexpectedEOF):
					// Cut short and closed: what came is the response's
					// header and the bytes the file still has, unchanged.
					got := frame[:n]
					if n < hdr {
						t.Fatalf("the connection closed after %d bytes, inside the response header", n)
					}
					if binary.BigEndian.Uint32(got[hdr-4:hdr]) != uint32(len(frame)-hdr) {
						t.Fatalf("a header unlike the response's: %x", got[:hdr])
					}
					if sent := got[hdr:]; !bytes.Equal(sent, recs[:len(sent)]) || int64(len(sent)) != size {
						t.Fatalf("%d record bytes sent from a file cut to %d; they are the log's: %v", len(sent), size, bytes.Equal(sent, recs[:min(len(sent), len(recs))]))
					}
				default:
					t.Fatalf("reading the response: %v", err)
				}

				// Other connections are served.
				c3 := dial(t, ts.addr)
				av := kmsg.NewPtrApiVersionsRequest()
				if r := c3.roundTrip(av).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
					t.Fatalf("ApiVersions after the cut: error %d", r.ErrorCode)
				}
				// A fetch of the third batch, wholly past the cut, finds
				// the file short before the frame is started: the log's
				// file cannot be read, KAFKA_STORAGE_ERROR (retriable),
				// not UNKNOWN_SERVER_ERROR; an offset past the log end
				// keeps its OFFSET_OUT_OF_RANGE.
				r := c3.roundTrip(fetchReq(11, "shrink", 0, 2, 0, 1, 1<<20, 1<<20)).(*kmsg.FetchResponse)
				if rp := r.Topics[0].Partitions[0]; rp.ErrorCode != kerr.KafkaStorageError.Code || len(rp.RecordBatches) != 0 {
					t.Fatalf("a fetch past the cut: error %d, %d record bytes; want KAFKA_STORAGE_ERROR (%d) and none", rp.ErrorCode, len(rp.RecordBatches), kerr.KafkaStorageError.Code)
				}
				r = c3.roundTrip(fetchReq(11, "shrink", 0, 4, 0, 1, 1<<20, 1<<20)).(*kmsg.FetchResponse)
				if rp := r.Topics[0].Partitions[0]; rp.ErrorCode != kerr.OffsetOutOfRange.Code {
					t.Fatalf("a fetch past the log end: error %d, want OFFSET_OUT_OF_RANGE", rp.ErrorCode)
				}
			})
		}
	}
}

// TestFetchStorageErrorFranzGo: franz-go, consuming a partition whose
// segment file was cut to nothing behind the store, takes the fetch's
// KAFKA_STORAGE_ERROR as retriable: it reports no error to the
// application and fetches again, and once the file holds its bytes again
// (put back by whoever cut it) it returns the records. UNKNOWN_SERVER_ERROR
// reached the application as a fetch error on every poll.
func TestFetchStorageErrorFranzGo(t *testing.T) {
	ts := startServer(t, Config{})
	createTopic(t, ts, "cut", 1)
	c := dial(t, ts.addr)
	for i := 0; i < 3; i++ {
		if pr := c.produce(9, "cut", 0, produceBatch(t, fmt.Sprintf("value %d", i))); pr.ErrorCode != 0 {
			t.Fatalf("produce: error %d", pr.ErrorCode)
		}
	}
	logs, _ := filepath.Glob(filepath.Join(ts.dir, "cut-0", "*.log"))
	if len(logs) != 1 {
		t.Fatalf("segment files %v, want one", logs)
	}
	data, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(logs[0], 0); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"cut": {0: kgo.NewOffset().At(0)}}),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// While the file is cut: no records and no error for the application,
	// for 2 s of polling (many fetches at franz-go's backoff).
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		fs := cl.PollFetches(ctx)
		cancel()
		for _, e := range fs.Errors() {
			if !errors.Is(e.Err, context.DeadlineExceeded) {
				t.Fatalf("a fetch error reached the application while the file is cut: %v", e.Err)
			}
		}
		if n := fs.NumRecords(); n != 0 {
			t.Fatalf("%d records from a file cut to nothing", n)
		}
	}
	if err := os.WriteFile(logs[0], data, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []string
	for len(got) < 3 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("after the file was put back: records %q, want 3: %v", got, err)
		}
		for _, e := range fs.Errors() {
			t.Fatalf("fetch error after the file was put back: %v", e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if want := []string{"value 0", "value 1", "value 2"}; !slices.Equal(got, want) {
		t.Fatalf("records %q, want %q", got, want)
	}
}
