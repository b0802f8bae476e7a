package fetch

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/segfs/segfs/logstore/record"
)

// The size limits a produced batch is held to after the broker rebuilt
// it, as Kafka's Log.append checks the validated batch: a batch over the
// topic's segment.bytes is RECORD_LIST_TOO_LARGE (Kafka's
// RecordBatchTooLargeException), and a gzip batch that is small on the
// wire but over max.message.bytes once the topic's compression.type
// (uncompressed) recompressed it is MESSAGE_TOO_LARGE, or
// RECORD_LIST_TOO_LARGE over segment.bytes. Nothing is written, and an
// idempotent producer's refused batch does not move its sequence: the
// same sequence is taken next. The same gzip batch is stored on a topic
// that keeps the producer's codec. No test produced past segment.bytes, nor
// past a limit only the recompressed batch exceeds.
func TestProduceSizeAfterRecompression(t *testing.T) {
	ts := startServer(t, Config{})
	for name, cfg := range map[string]map[string]string{
		"seg":      {"segment.bytes": "1000"},
		"plain":    {"compression.type": "uncompressed", "max.message.bytes": "1000"},
		"plainseg": {"compression.type": "uncompressed", "segment.bytes": "1000"},
		"keep":     {"max.message.bytes": "1000"},
	} {
		if _, err := ts.store.CreateTopic(name, 1, cfg); err != nil {
			t.Fatal(err)
		}
	}
	c := dial(t, ts.addr)
	ipr := c.roundTrip(kmsg.NewPtrInitProducerIDRequest()).(*kmsg.InitProducerIDResponse)
	if ipr.ErrorCode != 0 {
		t.Fatal(ipr.ErrorCode)
	}
	// batch builds a batch of n values of 200 bytes; idempotent with
	// sequence seq when seq >= 0.
	batch := func(codec record.Codec, seq int32, n int) []byte {
		t.Helper()
		var bl record.Builder
		spec := record.DefaultSpec()
		spec.Codec = codec
		if seq >= 0 {
			spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence = ipr.ProducerID, 0, seq
		}
		bl.Reset(spec)
		for i := range n {
			bl.Add(time.Now().UnixMilli(), nil, []byte(strings.Repeat(string(rune('a'+i%26)), 200)), nil)
		}
		b, err := bl.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	big := batch(record.CodecGzip, -1, 20) // ~4 KB of records, far less on the wire
	if len(big) >= 1000 {
		t.Fatalf("the gzip batch is %d bytes on the wire; the test needs it under 1000", len(big))
	}
	cases := []struct {
		name, topic string
		batch       []byte
		want        *kerr.Error
	}{
		{"uncompressed over segment.bytes", "seg", batch(record.CodecNone, -1, 10), kerr.RecordListTooLarge},
		{"gzip, recompressed over max.message.bytes", "plain", big, kerr.MessageTooLarge},
		{"gzip, recompressed over segment.bytes", "plainseg", big, kerr.RecordListTooLarge},
		{"idempotent gzip, recompressed over max.message.bytes", "plain", batch(record.CodecGzip, 0, 20), kerr.MessageTooLarge},
	}
	for _, tc := range cases {
		sp := c.produce(9, tc.topic, 0, slices.Clone(tc.batch))
		wantCode(t, tc.name, sp.ErrorCode, tc.want)
		if p, _ := ts.store.Partition(tc.topic, 0); p.LogEndOffset() != 0 {
			t.Fatalf("%s: the refused batch was stored (log end %d)", tc.name, p.LogEndOffset())
		}
	}
	// The refused idempotent batch took no sequence: sequence 0 again is
	// the next batch, not a duplicate, nor out of order.
	if sp := c.produce(9, "plain", 0, batch(record.CodecGzip, 0, 2)); sp.ErrorCode != 0 || sp.BaseOffset != 0 {
		t.Fatalf("idempotent sequence 0 after the refusal: %v at %d, want success at 0", kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
	}
	// The topics take batches that fit, and a topic that keeps the
	// producer's codec takes the gzip batch as it came.
	for _, topic := range []string{"seg", "plainseg"} {
		if sp := c.produce(9, topic, 0, batch(record.CodecNone, -1, 2)); sp.ErrorCode != 0 || sp.BaseOffset != 0 {
			t.Fatalf("%s: a batch that fits: %v at %d", topic, kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
		}
	}
	if sp := c.produce(9, "keep", 0, slices.Clone(big)); sp.ErrorCode != 0 || sp.BaseOffset != 0 {
		t.Fatalf("keep: the gzip batch on a topic that keeps its codec: %v at %d", kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
	}
}
