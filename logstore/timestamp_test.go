package logstore

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/segfs/segfs/logstore/record"
)

// tsBatch builds a produced batch of one record per timestamp, values
// v0, v1, ..., keyed k0, k1, ... unless keyless, in codec c; lat sets the
// LogAppendTime attribute with maxTs as its MaxTimestamp.
func tsBatch(t *testing.T, c record.Codec, keyless bool, lat bool, maxTs int64, ts ...int64) []byte {
	t.Helper()
	var bl record.Builder
	spec := record.DefaultSpec()
	spec.Codec = c
	spec.LogAppendTime = lat
	spec.MaxTimestamp = maxTs
	bl.Reset(spec)
	for i, ms := range ts {
		var key []byte
		if !keyless {
			key = []byte(fmt.Sprint("k", i))
		}
		bl.Add(ms, key, []byte(fmt.Sprint("v", i)), nil)
	}
	b, err := bl.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// outOfRange matches Kafka's message for a record whose CreateTime is
// outside the topic's bounds.
var outOfRange = regexp.MustCompile(`^Timestamp (-?\d+) of message with offset (\d+) is out of range\. The timestamp should be within \[(-?\d+), (-?\d+)\]$`)

// TestProduceTimestampBounds: on a CreateTime topic a produced record
// stamped further from the store's clock than
// message.timestamp.before.max.ms / after.max.ms fails its whole batch
// with ErrInvalidTimestamp, each such record listed with Kafka's message
// (LogValidator.validateTimestamp), and nothing is appended; the
// defaults are Kafka 4.0's (after 1 h, before unbounded), -1 (no
// timestamp) always passes, and compressed batches are checked in the
// walk that decompresses them. segfs took any timestamp: a record two
// hours ahead was stored.
func TestProduceTimestampBounds(t *testing.T) {
	clock := newClock()
	s := openStore(t, t.TempDir(), clock)
	defer s.Close()
	tp, err := s.CreateTopic("ts", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tp.Partition(0)
	const hour = int64(3600000)

	for _, c := range []record.Codec{record.CodecNone, record.CodecGzip, record.CodecZstd} {
		now := clock.ms.Load()
		b := tsBatch(t, c, false, false, 0, now, now+2*hour, now-1, now+2*hour+5)
		_, err := p.AppendBatch(b)
		var re *RecordErrors
		if !errors.Is(err, ErrInvalidTimestamp) || errors.Is(err, ErrInvalidRecord) || !errors.As(err, &re) {
			t.Fatalf("%v: a record 2 h ahead: %v, want RecordErrors matching ErrInvalidTimestamp only", c, err)
		}
		after := clock.ms.Load()
		if err.Error() != "One or more records have been rejected due to invalid timestamp" {
			t.Errorf("%v: message %q", c, err.Error())
		}
		if len(re.Records) != 2 || re.Records[0].Index != 1 || re.Records[1].Index != 3 {
			t.Fatalf("%v: refused records %+v, want indexes 1 and 3", c, re.Records)
		}
		for i, r := range re.Records {
			m := outOfRange.FindStringSubmatch(r.Message)
			if m == nil {
				t.Fatalf("%v: record message %q", c, r.Message)
			}
			ts, _ := strconv.ParseInt(m[1], 10, 64)
			off, _ := strconv.ParseInt(m[2], 10, 64)
			lo, _ := strconv.ParseInt(m[3], 10, 64)
			hi, _ := strconv.ParseInt(m[4], 10, 64)
			if ts != now+2*hour+int64(5*i) || off != int64(r.Index) {
				t.Errorf("%v: %q names timestamp %d offset %d", c, r.Message, ts, off)
			}
			// The check's now is the store's clock during the call;
			// before.max.ms is Long.MAX, printed as Kafka prints it.
			if hi-hour <= now || hi-hour > after || lo != hi-hour-math.MaxInt64 {
				t.Errorf("%v: bounds [%d, %d] for a clock between %d and %d", c, lo, hi, now, after)
			}
		}
		if end := p.LogEndOffset(); end != 0 {
			t.Fatalf("%v: log end %d after a refused batch", c, end)
		}
	}

	// Within an hour ahead, years back, or no timestamp at all: stored.
	now := clock.ms.Load()
	for _, ts := range []int64{now + hour - 1000, now - 10*365*24*hour, -1, 0} {
		if _, err := p.AppendBatch(tsBatch(t, record.CodecNone, false, false, 0, ts)); err != nil {
			t.Fatalf("timestamp %d (clock %d): %v", ts, now, err)
		}
	}

	// The bounds are the topic's settings, read at each produce.
	if err := tp.SetConfig(map[string]string{"message.timestamp.after.max.ms": strconv.FormatInt(3*hour, 10),
		"message.timestamp.before.max.ms": strconv.FormatInt(hour, 10)}); err != nil {
		t.Fatal(err)
	}
	now = clock.ms.Load()
	if _, err := p.AppendBatch(tsBatch(t, record.CodecNone, false, false, 0, now+2*hour)); err != nil {
		t.Fatalf("2 h ahead with after.max.ms=3h: %v", err)
	}
	if _, err := p.AppendBatch(tsBatch(t, record.CodecLZ4, false, false, 0, now-2*hour)); !errors.Is(err, ErrInvalidTimestamp) {
		t.Fatalf("2 h back with before.max.ms=1h: %v", err)
	}
	if _, err := p.AppendBatch(tsBatch(t, record.CodecNone, false, false, 0, now-hour+1000)); err != nil {
		t.Fatalf("just under 1 h back with before.max.ms=1h: %v", err)
	}
	if end := p.LogEndOffset(); end != 6 {
		t.Fatalf("log end %d, want 6", end)
	}
	if got := textOf(t, p, 0); got != "v0\nv0\nv0\nv0\nv0\nv0\n" {
		t.Fatalf("log text %q", got)
	}

	// On a compacted topic a keyless record is refused for its key only,
	// as Kafka checks the key first; a timestamp among the refusals makes
	// the whole refusal INVALID_TIMESTAMP.
	ctp, err := s.CreateTopic("compacted", 1, map[string]string{"cleanup.policy": "compact"})
	if err != nil {
		t.Fatal(err)
	}
	cp, _ := ctp.Partition(0)
	now = clock.ms.Load()
	_, err = cp.AppendBatch(tsBatch(t, record.CodecNone, true, false, 0, now+2*hour, now))
	var re *RecordErrors
	if !errors.As(err, &re) || !errors.Is(err, ErrInvalidRecord) || len(re.Records) != 2 ||
		!strings.HasPrefix(re.Records[0].Message, "Compacted topic cannot accept message without key") {
		t.Fatalf("keyless records, one 2 h ahead: %v %+v", err, re)
	}
	var kb record.Builder
	kb.Reset(record.DefaultSpec())
	kb.Add(now, nil, []byte("keyless"), nil)
	kb.Add(now+2*hour, []byte("k"), []byte("ahead"), nil)
	b, _ := kb.Build(nil)
	_, err = cp.AppendBatch(b)
	if !errors.As(err, &re) || !errors.Is(err, ErrInvalidTimestamp) || len(re.Records) != 2 ||
		!strings.HasPrefix(re.Records[0].Message, "Compacted topic") || !strings.HasPrefix(re.Records[1].Message, "Timestamp ") {
		t.Fatalf("a keyless record and one 2 h ahead: %v %+v", err, re)
	}
}

// TestProduceLogAppendTimeAttribute: a batch with the LogAppendTime
// attribute is refused on a LogAppendTime topic, and on a CreateTime
// topic when its records carry no timestamp (MaxTimestamp -1), with
// Kafka's message; on a CreateTime topic with a MaxTimestamp in bounds it
// is stored. A LogAppendTime topic takes any CreateTime and stamps the
// batch with the store's clock.
func TestProduceLogAppendTimeAttribute(t *testing.T) {
	clock := newClock()
	s := openStore(t, t.TempDir(), clock)
	defer s.Close()
	lat, err := s.CreateTopic("lat", 1, map[string]string{"message.timestamp.type": "LogAppendTime"})
	if err != nil {
		t.Fatal(err)
	}
	lp, _ := lat.Partition(0)
	const hour = int64(3600000)
	now := clock.ms.Load()
	res, err := lp.AppendBatch(tsBatch(t, record.CodecNone, false, false, 0, now+100*hour))
	if err != nil || res.LogAppendTime <= now {
		t.Fatalf("CreateTime 100 h ahead on a LogAppendTime topic: %v, log append time %d (clock %d)", err, res.LogAppendTime, now)
	}
	_, err = lp.AppendBatch(tsBatch(t, record.CodecNone, false, true, now, now, now))
	var re *RecordErrors
	want := fmt.Sprintf("Invalid timestamp type in message DefaultRecord(offset=1, timestamp=%d, key=2 bytes, value=2 bytes). Producer should not set timestamp type to LogAppendTime.", now)
	if !errors.As(err, &re) || !errors.Is(err, ErrInvalidTimestamp) || len(re.Records) != 2 || re.Records[1].Message != want {
		t.Fatalf("LogAppendTime attribute on a LogAppendTime topic: %v %+v\nwant %q", err, re, want)
	}

	ct, _ := s.CreateTopic("ct", 1, nil)
	cp, _ := ct.Partition(0)
	if _, err := cp.AppendBatch(tsBatch(t, record.CodecNone, false, true, -1, -1)); !errors.Is(err, ErrInvalidTimestamp) {
		t.Fatalf("LogAppendTime attribute without a timestamp on a CreateTime topic: %v", err)
	}
	if _, err := cp.AppendBatch(tsBatch(t, record.CodecNone, false, true, now+2*hour, now)); !errors.Is(err, ErrInvalidTimestamp) {
		t.Fatalf("LogAppendTime attribute, MaxTimestamp 2 h ahead, on a CreateTime topic: %v", err)
	}
	if _, err := cp.AppendBatch(tsBatch(t, record.CodecNone, false, true, now, now)); err != nil {
		t.Fatalf("LogAppendTime attribute with a MaxTimestamp in bounds on a CreateTime topic: %v", err)
	}
	if end := lp.LogEndOffset(); end != 1 {
		t.Fatalf("lat log end %d, want 1", end)
	}
}

// TestTimestampBounds: before.max.ms and after.max.ms apply as set, with
// Kafka 4.0's defaults; the deprecated difference.max.ms stands in for
// either one left unbounded, and for an after.max.ms not set at all (its
// 3.x default was unbounded), as Kafka 3.6-3.9's LogConfig reads them.
// The config text shows the two, and difference.max.ms once set.
func TestTimestampBounds(t *testing.T) {
	const max = math.MaxInt64
	for _, tc := range []struct {
		set           map[string]string
		before, after int64
	}{
		{nil, max, 3600000},
		{map[string]string{"message.timestamp.before.max.ms": "5", "message.timestamp.after.max.ms": "7"}, 5, 7},
		{map[string]string{"message.timestamp.difference.max.ms": "9"}, 9, 9},
		{map[string]string{"message.timestamp.difference.max.ms": "9", "message.timestamp.after.max.ms": "7"}, 9, 7},
		{map[string]string{"message.timestamp.difference.max.ms": "9", "message.timestamp.after.max.ms": "3600000"}, 9, 3600000},
		{map[string]string{"message.timestamp.difference.max.ms": "9", "message.timestamp.before.max.ms": "5"}, 5, 9},
		{map[string]string{"message.timestamp.difference.max.ms": "9", "message.timestamp.after.max.ms": "9223372036854775807"}, 9, 9},
		{map[string]string{"message.timestamp.after.max.ms": "9223372036854775807"}, max, max},
	} {
		c, err := withOverrides(tc.set)
		if err != nil {
			t.Fatal(err)
		}
		if b, a := c.TimestampBounds(); b != tc.before || a != tc.after {
			t.Errorf("%v: bounds %d, %d; want %d, %d", tc.set, b, a, tc.before, tc.after)
		}
		text := string(c.Text())
		_, diff := tc.set["message.timestamp.difference.max.ms"]
		if !strings.Contains(text, "\nmessage.timestamp.before.max.ms=") || !strings.Contains(text, "\nmessage.timestamp.after.max.ms=") ||
			strings.Contains(text, "\nmessage.timestamp.difference.max.ms=") != diff {
			t.Errorf("%v: config text:\n%s", tc.set, text)
		}
	}
}

// storedHeaders reads back the headers of p's batches from offset 0.
func storedHeaders(t *testing.T, p *Partition) []record.Header {
	t.Helper()
	r, err := p.Read(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	var out []record.Header
	for _, sl := range r.Slices {
		b := make([]byte, sl.Len)
		if _, err := sl.File.ReadAt(b, sl.Pos); err != nil {
			t.Fatal(err)
		}
		for len(b) > 0 {
			h, err := record.ParseHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			if err := record.Validate(b[:h.Size()]); err != nil {
				t.Fatalf("stored batch at %d: %v", h.BaseOffset, err)
			}
			out = append(out, h)
			b = b[h.Size():]
		}
	}
	return out
}

// TestProduceMaxTimestampRecomputed: on a CreateTime topic a produced
// batch's MaxTimestamp becomes the largest of its records' timestamps and
// its timestamp type CreateTime, as Kafka's LogValidator sets them, with
// the CRC redone. segfs kept the producer's header, which nothing checks:
// a batch of records stamped now whose header claimed 10 h ahead passed
// the timestamp check and then put 10 h ahead in the time index,
// ListOffsets' max timestamp and the partition status; a batch with the
// LogAppendTime attribute kept it on a CreateTime topic.
func TestProduceMaxTimestampRecomputed(t *testing.T) {
	clock := newClock()
	s := openStore(t, t.TempDir(), clock)
	defer s.Close()
	tp, _ := s.CreateTopic("ct", 1, nil)
	p, _ := tp.Partition(0)
	const hour = int64(3600000)
	now := clock.ms.Load()
	for _, c := range []record.Codec{record.CodecNone, record.CodecSnappy} {
		if _, err := p.AppendBatch(tsBatch(t, c, false, false, now+10*hour, now-5, now)); err != nil {
			t.Fatalf("%v: records stamped now, header 10 h ahead: %v", c, err)
		}
	}
	// No timestamps at all: MaxTimestamp -1.
	if _, err := p.AppendBatch(tsBatch(t, record.CodecNone, false, false, 0, -1)); err != nil {
		t.Fatal(err)
	}
	hs := storedHeaders(t, p)
	if len(hs) != 3 {
		t.Fatalf("%d batches stored", len(hs))
	}
	for i, want := range []int64{now, now, -1} {
		if hs[i].MaxTimestamp != want || hs[i].LogAppendTime() {
			t.Errorf("batch %d: MaxTimestamp %d, LogAppendTime %v; want %d, false", i, hs[i].MaxTimestamp, hs[i].LogAppendTime(), want)
		}
	}
	if ts, off, ok, err := p.MaxTimestamp(); err != nil || !ok || ts != now || off != 1 {
		t.Errorf("max timestamp %d at %d (%v %v), want %d at 1", ts, off, ok, err, now)
	}
	if got, ok, err := p.OffsetForTime(now + 1); err != nil || ok {
		t.Errorf("first offset stamped after every record: %d (%v %v), want none", got, ok, err)
	}

	// The LogAppendTime attribute with a MaxTimestamp in bounds: stored as
	// CreateTime (Kafka overwrites the type), MaxTimestamp as it came,
	// since it is every record's timestamp in the batch as it came.
	lt, _ := s.CreateTopic("lat-attr", 1, nil)
	lp, _ := lt.Partition(0)
	if _, err := lp.AppendBatch(tsBatch(t, record.CodecNone, false, true, now+1, now-7, now-6)); err != nil {
		t.Fatal(err)
	}
	if hs := storedHeaders(t, lp); len(hs) != 1 || hs[0].MaxTimestamp != now+1 || hs[0].LogAppendTime() {
		t.Errorf("LogAppendTime attribute on a CreateTime topic, stored: %+v", hs)
	}
}
