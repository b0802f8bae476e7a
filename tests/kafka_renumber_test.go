package tests

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/segfs/segfs/logstore/record"
)

// A produced compressed batch whose records' offset deltas are not 0, 1,
// 2, ... (here all 0, as some clients number the inner records of a
// compressed batch) was refused with INVALID_RECORD; Kafka's LogValidator
// takes it, rebuilding it with the records renumbered. Now segfs does the
// same for every codec: the Produce answers the batch's base offset, and
// franz-go consumes the records back at consecutive offsets with their
// keys, values, headers and timestamps, and the mount's data file shows
// them. An uncompressed batch so numbered, which Kafka would store with
// its deltas as they came, stays refused as INVALID_RECORD with nothing
// appended.
func TestKafkaProduceMisnumberedCompressedBatch(t *testing.T) {
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cl := kafkaClient(t, addr)

	misnumbered := func(c record.Codec, t0 int64) []byte {
		t.Helper()
		var bl record.Builder
		spec := record.DefaultSpec()
		spec.Codec = c
		spec.LastOffsetDelta = 2 // three records: 0..2
		bl.Reset(spec)
		for i := range 3 {
			bl.AddAt(0, t0+int64(i), []byte(fmt.Sprint("k", i)), []byte(fmt.Sprint("v", i)),
				[]record.RecordHeader{{Key: "h", Value: []byte(fmt.Sprint("x", i))}})
		}
		b, err := bl.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	for _, c := range []record.Codec{record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd} {
		topic := fmt.Sprint("renum-", c)
		m.ok(fmt.Sprintf(`mkdir "$M/%s"`, topic))
		// A record first, so that the rebuilt batch is not at offset 0.
		kafkaProduce(t, cl, topic, 0, "first")
		t0 := time.Now().UnixMilli()
		sp := rawProduce(t, ctx, cl, topic, misnumbered(c, t0))
		if sp.ErrorCode != 0 || sp.BaseOffset != 1 {
			msg := ""
			if sp.ErrorMessage != nil {
				msg = *sp.ErrorMessage
			}
			t.Fatalf("%v batch with offset deltas 0, 0, 0: %v %q, base offset %d; want accepted at 1", c, kerr.ErrorForCode(sp.ErrorCode), msg, sp.BaseOffset)
		}
		if end := endOffset(t, ctx, cl, topic); end != 4 {
			t.Fatalf("%v: log end %d, want 4", c, end)
		}
		recs := kafkaConsume(t, addr, topic, 0, 0, 4)
		if len(recs) != 4 || recs[0].Offset != 0 || string(recs[0].Value) != "first" {
			t.Fatalf("%v: consumed %d records, first %+v", c, len(recs), recs[0])
		}
		for i, r := range recs[1:] {
			if r.Offset != int64(1+i) || string(r.Key) != fmt.Sprint("k", i) || string(r.Value) != fmt.Sprint("v", i) ||
				len(r.Headers) != 1 || r.Headers[0].Key != "h" || string(r.Headers[0].Value) != fmt.Sprint("x", i) ||
				r.Timestamp.UnixMilli() != t0+int64(i) {
				t.Errorf("%v: record %d = offset %d key %q value %q headers %v timestamp %d; want offset %d k%d v%d [h=x%d] %d",
					c, i, r.Offset, r.Key, r.Value, r.Headers, r.Timestamp.UnixMilli(), 1+i, i, i, i, t0+int64(i))
			}
		}
		want := "first\nv0\nv1\nv2\n"
		if got := mntReadsSoon(m, fmt.Sprintf(`cat "$M/%s/0/data"`, topic), want); got != want {
			t.Errorf("%v: data through the mount %q, want %q", c, got, want)
		}
		// The next produce follows the renumbered records.
		if offs := kafkaProduce(t, cl, topic, 0, "after"); offs[0] != 4 {
			t.Errorf("%v: next record at %d, want 4", c, offs[0])
		}
	}

	// Uncompressed, to a topic that keeps it uncompressed: refused.
	m.ok(`mkdir "$M/renum-none"`)
	sp := rawProduce(t, ctx, cl, "renum-none", misnumbered(record.CodecNone, time.Now().UnixMilli()))
	if sp.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("uncompressed batch with offset deltas 0, 0, 0: %v, want INVALID_RECORD", kerr.ErrorForCode(sp.ErrorCode))
	}
	if end := endOffset(t, ctx, cl, "renum-none"); end != 0 {
		t.Fatalf("log end %d after a refused batch", end)
	}
	if got := m.ok(`wc -c < "$M/renum-none/0/data"`); got != "0\n" {
		t.Fatalf("data after a refused batch: %q bytes", got)
	}
}
