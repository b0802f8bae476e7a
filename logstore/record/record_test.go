package record

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// kafkaSegment is a segment written by a real Kafka broker, copied from
// shared/testdata/kafka so the test does not depend on where CI puts that
// directory.
const kafkaSegment = "kraft-metadata-00000000000000000000.log"

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// splitBatches cuts a segment into its batches with PeekSize.
func splitBatches(t testing.TB, seg []byte) (batches [][]byte, positions []int) {
	t.Helper()
	for pos := 0; pos < len(seg); {
		size, err := PeekSize(seg[pos:])
		if err != nil {
			t.Fatalf("PeekSize at %d: %v", pos, err)
		}
		if int64(len(seg)-pos) < size {
			t.Fatalf("batch at %d: size %d overruns the segment", pos, size)
		}
		batches = append(batches, seg[pos:pos+int(size)])
		positions = append(positions, pos)
		pos += int(size)
	}
	return batches, positions
}

func TestKafkaSegment(t *testing.T) {
	seg := readTestdata(t, kafkaSegment)
	batches, positions := splitBatches(t, seg)
	want := []struct {
		base, last    int64
		count         int32
		position, sz  int
		crc           uint32
		wantOffsets   []int64
		wantLeaderEp  int32
		wantCodecName string
	}{
		{0, 0, 1, 0, 91, 2959689084, []int64{0}, 1, "none"},
		{1, 3, 3, 91, 240, 618336989, []int64{1, 2, 3}, 1, "none"},
	}
	if len(batches) != len(want) {
		t.Fatalf("got %d batches, want %d", len(batches), len(want))
	}
	var d Decoder
	for i, w := range want {
		b := batches[i]
		h, err := ParseHeader(b)
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if h.BaseOffset != w.base || h.LastOffset() != w.last || h.RecordCount != w.count ||
			positions[i] != w.position || h.Size() != int64(w.sz) || h.CRC != w.crc ||
			h.Codec().String() != w.wantCodecName || h.Magic != MagicV2 {
			t.Errorf("batch %d: got base %d last %d count %d position %d size %d crc %d codec %v magic %d, want %+v",
				i, h.BaseOffset, h.LastOffset(), h.RecordCount, positions[i], h.Size(), h.CRC, h.Codec(), h.Magic, w)
		}
		if h.PartitionLeaderEpoch != w.wantLeaderEp || h.ProducerID != -1 || h.ProducerEpoch != -1 || h.BaseSequence != -1 {
			t.Errorf("batch %d: header %+v", i, h)
		}
		if h.NextOffset() != w.last+1 {
			t.Errorf("batch %d: NextOffset %d", i, h.NextOffset())
		}
		if err := Validate(b); err != nil {
			t.Errorf("batch %d: Validate: %v", i, err)
		}
		if c := CRC(b); c != w.crc {
			t.Errorf("batch %d: CRC %d, want %d", i, c, w.crc)
		}
		var offsets []int64
		err = d.Records(b, func(r *Record) error {
			offsets = append(offsets, r.Offset)
			if r.Timestamp != h.BaseTimestamp+r.TimestampDelta {
				t.Errorf("batch %d offset %d: timestamp %d", i, r.Offset, r.Timestamp)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("batch %d: Records: %v", i, err)
		}
		if fmt.Sprint(offsets) != fmt.Sprint(w.wantOffsets) {
			t.Errorf("batch %d: offsets %v, want %v", i, offsets, w.wantOffsets)
		}
		checkStats(t, &d, b, h.BaseOffset)
	}
}

// workedExample is KAFKA-FORMAT.md §2.8: base offset 0, leader epoch 0, one
// record with a null key and value "hello" at 1700000000000, CreateTime,
// uncompressed, non-idempotent.
const workedExample = `
00 00 00 00 00 00 00 00  00 00 00 3d  00 00 00 00  02  e6 41 a4 4b  00 00  00 00 00 00
00 00 01 8b cf e5 68 00  00 00 01 8b cf e5 68 00  ff ff ff ff ff ff ff ff  ff ff
ff ff ff ff  00 00 00 01  16 00 00 00 01 0a 68 65 6c 6c 6f 00`

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWorkedExample(t *testing.T) {
	want := unhex(t, workedExample)
	if len(want) != 73 {
		t.Fatalf("example is %d bytes", len(want))
	}

	var bl Builder
	bl.Reset(DefaultSpec())
	bl.Add(1700000000000, nil, []byte("hello"), nil)
	got, err := bl.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Builder:\n got %x\nwant %x", got, want)
	}

	got, n := AppendLines(nil, []byte("hello\n"), 1700000000000, nil)
	if n != 1 || !bytes.Equal(got, want) {
		t.Errorf("AppendLines: n %d\n got %x\nwant %x", n, got, want)
	}
	// A separator that does not occur leaves the key null.
	got, _ = AppendLines(nil, []byte("hello\n"), 1700000000000, []byte("\t"))
	if !bytes.Equal(got, want) {
		t.Errorf("AppendLines with separator:\n got %x\nwant %x", got, want)
	}

	h, err := ParseHeader(want)
	if err != nil {
		t.Fatal(err)
	}
	if h.CRC != 3863061579 || CRC(want) != 3863061579 || h.BatchLength != 61 || h.Size() != 73 {
		t.Errorf("header %+v", h)
	}
	if err := Validate(want); err != nil {
		t.Error(err)
	}
	var d Decoder
	text, err := d.AppendText(nil, want, 0, []byte("="))
	if err != nil || string(text) != "hello\n" {
		t.Errorf("AppendText = %q, %v", text, err)
	}
}

func TestRecordExample(t *testing.T) {
	// KAFKA-FORMAT.md §2.5: offset delta 0, timestamp delta 0, key "k",
	// value "v", no headers.
	want := unhex(t, "10 00 00 00 02 6B 02 76 00")
	var bl Builder
	bl.Add(5, []byte("k"), []byte("v"), nil)
	b, err := bl.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := b[HeaderSize:]; !bytes.Equal(got, want) {
		t.Errorf("record bytes %x, want %x", got, want)
	}
	var d Decoder
	calls := 0
	err = d.Records(b, func(r *Record) error {
		calls++
		if string(r.Key) != "k" || string(r.Value) != "v" || r.OffsetDelta != 0 || r.TimestampDelta != 0 ||
			r.Attributes != 0 || len(r.Headers) != 0 || r.Timestamp != 5 || r.Offset != 0 {
			t.Errorf("record %+v", r)
		}
		return nil
	})
	if err != nil || calls != 1 {
		t.Fatalf("Records: %v, %d calls", err, calls)
	}
	// A null key encodes as the single byte 01.
	bl.Reset(DefaultSpec())
	bl.Add(5, nil, []byte("v"), nil)
	b, _ = bl.Build(nil)
	if got := b[HeaderSize:]; !bytes.Equal(got, unhex(t, "0e 00 00 00 01 02 76 00")) {
		t.Errorf("null-key record %x", got)
	}
}

var allCodecs = []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}

// testRecord is a record to build and expect back.
type testRecord struct {
	ts         int64
	key, value []byte
	headers    []RecordHeader
}

func sampleRecords() []testRecord {
	big := bytes.Repeat([]byte("0123456789abcdef"), 10000) // spans several codec blocks
	return []testRecord{
		{ts: 1000, key: []byte("k1"), value: []byte("v1")},
		{ts: 999, key: nil, value: []byte("no key")},
		{ts: 1500, key: []byte("tomb"), value: nil},
		{ts: 1200, key: nil, value: nil},
		{ts: 1001, key: []byte{}, value: []byte{}},
		{ts: -5, key: []byte("h"), value: []byte("with headers"), headers: []RecordHeader{
			{Key: "a", Value: []byte("1")}, {Key: "", Value: nil}, {Key: "c", Value: []byte{}},
		}},
		{ts: 1 << 40, key: []byte("big"), value: big},
		{ts: 1000, key: []byte("multi\nline"), value: []byte("x=y")},
	}
}

func buildBatch(t testing.TB, spec BatchSpec, recs []testRecord) []byte {
	t.Helper()
	var bl Builder
	bl.Reset(spec)
	for _, r := range recs {
		bl.Add(r.ts, r.key, r.value, r.headers)
	}
	if bl.Len() != len(recs) {
		t.Fatalf("Len %d, want %d", bl.Len(), len(recs))
	}
	b, err := bl.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// nullEq compares nullable byte strings, telling nil from empty.
func nullEq(a, b []byte) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

func TestRoundTripCodecs(t *testing.T) {
	recs := sampleRecords()
	for _, c := range allCodecs {
		t.Run(c.String(), func(t *testing.T) {
			spec := DefaultSpec()
			spec.Codec = c
			spec.BaseOffset = 1000
			spec.LeaderEpoch = 7
			spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence = 42, 3, 17
			b := buildBatch(t, spec, recs)
			if err := Validate(b); err != nil {
				t.Fatal(err)
			}
			h, err := ParseHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			if h.Codec() != c || h.BaseOffset != 1000 || h.PartitionLeaderEpoch != 7 || h.ProducerID != 42 ||
				h.ProducerEpoch != 3 || h.BaseSequence != 17 || h.RecordCount != int32(len(recs)) ||
				h.LastOffsetDelta != int32(len(recs)-1) || h.BaseTimestamp != 1000 || h.MaxTimestamp != 1<<40 ||
				h.Transactional() || h.Control() || h.LogAppendTime() || h.HasDeleteHorizon() {
				t.Errorf("header %+v", h)
			}
			if c != CodecNone && len(b) >= len(buildBatch(t, DefaultSpec(), recs)) {
				t.Errorf("%v did not compress: %d bytes", c, len(b))
			}
			var d Decoder
			for range 2 { // the second pass reuses the Decoder's buffers
				i := 0
				err = d.Records(b, func(r *Record) error {
					w := recs[i]
					if r.Offset != 1000+int64(i) || r.OffsetDelta != int32(i) || r.Timestamp != w.ts ||
						!nullEq(r.Key, w.key) || !nullEq(r.Value, w.value) || len(r.Headers) != len(w.headers) {
						t.Errorf("record %d: got %+v", i, r)
					}
					for j, hd := range r.Headers {
						if hd.Key != w.headers[j].Key || !nullEq(hd.Value, w.headers[j].Value) {
							t.Errorf("record %d header %d: got %+v want %+v", i, j, hd, w.headers[j])
						}
					}
					i++
					return nil
				})
				if err != nil || i != len(recs) {
					t.Fatalf("Records: %v after %d records", err, i)
				}
			}
			for _, from := range []int64{0, 1000, 1003, 1007, 1008} {
				checkStats(t, &d, b, from)
			}
			text, err := d.AppendText([]byte("prefix:"), b, 0, []byte("\t"))
			if err != nil {
				t.Fatal(err)
			}
			var want strings.Builder
			want.WriteString("prefix:")
			for _, r := range recs {
				if r.key != nil {
					fmt.Fprintf(&want, "%s\t", r.key)
				}
				fmt.Fprintf(&want, "%s\n", r.value)
			}
			if string(text) != want.String() {
				t.Errorf("AppendText:\n got %.200q\nwant %.200q", text, want.String())
			}
		})
	}
}

// checkStats asserts that Stats agrees with the length of AppendText for
// several separators.
func checkStats(t testing.TB, d *Decoder, b []byte, from int64) {
	t.Helper()
	st, serr := d.Stats(b, from)
	for _, sep := range []string{"", "\t", "=", " => "} {
		text, terr := d.AppendText(nil, b, from, []byte(sep))
		if (serr == nil) != (terr == nil) {
			t.Fatalf("from %d sep %q: Stats error %v, AppendText error %v", from, sep, serr, terr)
		}
		if serr == nil && st.Size(len(sep)) != int64(len(text)) {
			t.Fatalf("from %d sep %q: Stats %+v size %d, AppendText %d bytes", from, sep, st, st.Size(len(sep)), len(text))
		}
		if serr == nil && int64(bytes.Count(text, []byte{'\n'})) < st.Lines {
			t.Fatalf("from %d sep %q: %d lines, Stats says %d", from, sep, bytes.Count(text, []byte{'\n'}), st.Lines)
		}
	}
}

func TestStatsFrom(t *testing.T) {
	b, n := AppendLines(nil, []byte("a=1\nb=\nc\n"), 7, nil)
	if n != 3 {
		t.Fatal(n)
	}
	SetBaseOffset(b, 10)
	var d Decoder
	cases := []struct {
		from int64
		sep  string
		want string
		st   TextStats
	}{
		{0, "", "a=1\nb=\nc\n", TextStats{Lines: 3, ValueBytes: 6}},
		{11, "", "b=\nc\n", TextStats{Lines: 2, ValueBytes: 3}},
		{12, "=", "c\n", TextStats{Lines: 1, ValueBytes: 1}},
		{13, "", "", TextStats{}},
	}
	for _, c := range cases {
		text, err := d.AppendText(nil, b, c.from, []byte(c.sep))
		st, err2 := d.Stats(b, c.from)
		if err != nil || err2 != nil || string(text) != c.want || st != c.st {
			t.Errorf("from %d: %q %+v (%v, %v), want %q %+v", c.from, text, st, err, err2, c.want, c.st)
		}
	}

	// Keyed: the key and separator count only with a separator.
	b, _ = AppendLines(nil, []byte("a=1\nb=\nc\n=\n"), 7, []byte("="))
	st, err := d.Stats(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := (TextStats{Lines: 4, ValueBytes: 2, Keyed: 3, KeyBytes: 2}); st != want {
		t.Errorf("keyed stats %+v, want %+v", st, want)
	}
	if st.Size(0) != 6 || st.Size(1) != 11 || st.Size(3) != 17 {
		t.Errorf("sizes %d %d %d", st.Size(0), st.Size(1), st.Size(3))
	}
	var sum TextStats
	sum.Add(st)
	sum.Add(st)
	if sum.Lines != 8 || sum.Size(1) != 22 {
		t.Errorf("Add: %+v", sum)
	}
	text, _ := d.AppendText(nil, b, 0, []byte(": "))
	if string(text) != "a: 1\nb: \nc\n: \n" {
		t.Errorf("rendered %q", text)
	}
}

func TestAppendLines(t *testing.T) {
	var d Decoder
	cases := []struct {
		text, sep string
		n         int
		keys      []string // "<nil>" for null
		values    []string
	}{
		{"", "", 0, nil, nil},
		{"\n", "", 1, []string{"<nil>"}, []string{""}},
		{"a\nb\n", "", 2, []string{"<nil>", "<nil>"}, []string{"a", "b"}},
		{"k=v\nk=\n=v\nnone\n==\n", "=", 5, []string{"k", "k", "", "<nil>", ""}, []string{"v", "<nil>", "v", "none", "="}},
		{"k::v::w\n", "::", 1, []string{"k"}, []string{"v::w"}},
		{"no newline", "", 1, []string{"<nil>"}, []string{"no newline"}},
		{"a\n\n", "\t", 2, []string{"<nil>", "<nil>"}, []string{"a", ""}},
	}
	for _, c := range cases {
		dst := []byte("keep")
		b, n := AppendLines(dst, []byte(c.text), 1234, []byte(c.sep))
		if n != c.n || string(b[:4]) != "keep" {
			t.Errorf("%q: n %d", c.text, n)
			continue
		}
		b = b[4:]
		if n == 0 {
			if len(b) != 0 {
				t.Errorf("%q: empty text appended %d bytes", c.text, len(b))
			}
			continue
		}
		if err := Validate(b); err != nil {
			t.Errorf("%q: %v", c.text, err)
		}
		var keys, values []string
		str := func(b []byte) string {
			if b == nil {
				return "<nil>"
			}
			return string(b)
		}
		err := d.Records(b, func(r *Record) error {
			if r.Timestamp != 1234 {
				t.Errorf("%q: timestamp %d", c.text, r.Timestamp)
			}
			keys = append(keys, str(r.Key))
			values = append(values, str(r.Value))
			return nil
		})
		if err != nil {
			t.Errorf("%q: %v", c.text, err)
		}
		if fmt.Sprint(keys) != fmt.Sprint(c.keys) || fmt.Sprint(values) != fmt.Sprint(c.values) {
			t.Errorf("%q sep %q: keys %q values %q, want %q %q", c.text, c.sep, keys, values, c.keys, c.values)
		}
		h, _ := ParseHeader(b)
		if h.BaseTimestamp != 1234 || h.MaxTimestamp != 1234 || h.LastOffsetDelta != int32(n-1) || h.RecordCount != int32(n) ||
			h.PartitionLeaderEpoch != 0 || h.ProducerID != -1 || h.Attributes != 0 {
			t.Errorf("%q: header %+v", c.text, h)
		}
	}
}

func TestAppendLinesNoAlloc(t *testing.T) {
	text := bytes.Repeat([]byte(strings.Repeat("x", 60)+"=value of the line\n"), 500)
	dst := make([]byte, 0, 2*len(text)+1024)
	for _, sep := range []string{"", "=", "=v"} {
		allocs := testing.AllocsPerRun(50, func() {
			AppendLines(dst[:0], text, 1, []byte(sep))
		})
		if allocs != 0 {
			t.Errorf("sep %q: %v allocs per run, want 0", sep, allocs)
		}
	}
}

// TestAppendLinesRoom checks the documented room: the batch size plus
// maxRecordOverhead bytes of capacity is enough to build without
// allocation, and text of very short lines (which outgrows the first
// reservation) still comes out right.
func TestAppendLinesRoom(t *testing.T) {
	for _, text := range [][]byte{
		bytes.Repeat([]byte("0123456789\n"), 300),
		bytes.Repeat([]byte("\n"), 3000),
		bytes.Repeat([]byte("k=\n"), 3000),
	} {
		want, n := AppendLines(nil, text, 1, []byte("="))
		if n != bytes.Count(text, []byte("\n")) || Validate(want) != nil {
			t.Fatalf("%d records, %v", n, Validate(want))
		}
		dst := make([]byte, 0, len(want)+maxRecordOverhead)
		var got []byte
		allocs := testing.AllocsPerRun(20, func() {
			got, _ = AppendLines(dst, text, 1, []byte("="))
		})
		if allocs != 0 || !bytes.Equal(got, want) {
			t.Errorf("%d-byte text: %v allocs, equal %v", len(text), allocs, bytes.Equal(got, want))
		}
		var d Decoder
		if back, err := d.AppendText(nil, want, 0, []byte("=")); err != nil || !bytes.Equal(back, text) {
			t.Errorf("round trip: %v", err)
		}
	}
}

func TestDecoderNoAlloc(t *testing.T) {
	text := bytes.Repeat([]byte("key=some value\n"), 200)
	b, _ := AppendLines(nil, text, 1, []byte("="))
	var d Decoder
	dst := make([]byte, 0, 2*len(text))
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := d.AppendText(dst[:0], b, 0, []byte("=")); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Stats(b, 0); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocs per run, want 0", allocs)
	}
}

func TestFlags(t *testing.T) {
	recs := []testRecord{{ts: 100, value: []byte("a")}, {ts: 300, value: []byte("b")}}
	spec := DefaultSpec()
	spec.Transactional = true
	spec.Control = true
	spec.LogAppendTime = true
	b := buildBatch(t, spec, recs)
	h, _ := ParseHeader(b)
	if !h.Transactional() || !h.Control() || !h.LogAppendTime() || h.HasDeleteHorizon() || h.Attributes != 0x38 {
		t.Errorf("attributes %#x", h.Attributes)
	}
	var d Decoder
	// Control batches hold markers, not user data: they render nothing.
	if text, err := d.AppendText(nil, b, 0, nil); err != nil || len(text) != 0 {
		t.Errorf("control batch rendered %q, %v", text, err)
	}
	if st, err := d.Stats(b, 0); err != nil || st != (TextStats{}) {
		t.Errorf("control batch stats %+v, %v", st, err)
	}
	// Records still sees them.
	n := 0
	if err := d.Records(b, func(*Record) error { n++; return nil }); err != nil || n != 2 {
		t.Errorf("Records: %v, %d", err, n)
	}

	// LogAppendTime: every record reports MaxTimestamp.
	b = buildBatch(t, DefaultSpec(), recs)
	SetLogAppendTime(b, 5000)
	if err := Validate(b); err != nil {
		t.Fatal(err)
	}
	h, _ = ParseHeader(b)
	if !h.LogAppendTime() || h.MaxTimestamp != 5000 || h.BaseTimestamp != 100 {
		t.Errorf("header %+v", h)
	}
	err := d.Records(b, func(r *Record) error {
		if r.Timestamp != 5000 {
			t.Errorf("offset %d timestamp %d, want 5000", r.Offset, r.Timestamp)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// Delete horizon: BaseTimestamp is the horizon and deltas stay
	// relative to it.
	b = buildBatch(t, DefaultSpec(), recs)
	binary.BigEndian.PutUint16(b[offAttributes:], attrDeleteHorizon)
	binary.BigEndian.PutUint32(b[offCRC:], CRC(b))
	h, _ = ParseHeader(b)
	if !h.HasDeleteHorizon() || Validate(b) != nil {
		t.Errorf("delete horizon header %+v", h)
	}
	var ts []int64
	_ = d.Records(b, func(r *Record) error { ts = append(ts, r.Timestamp); return nil })
	if fmt.Sprint(ts) != "[100 300]" {
		t.Errorf("timestamps %v", ts)
	}

	// The fields outside the CRC change without invalidating it.
	SetBaseOffset(b, 1<<40)
	SetLeaderEpoch(b, 9)
	h, _ = ParseHeader(b)
	if Validate(b) != nil || h.BaseOffset != 1<<40 || h.PartitionLeaderEpoch != 9 {
		t.Errorf("after Set: %+v, %v", h, Validate(b))
	}
}

func TestRecordsCallbackError(t *testing.T) {
	b := buildBatch(t, DefaultSpec(), sampleRecords())
	stop := errors.New("stop")
	var d Decoder
	n := 0
	err := d.Records(b, func(*Record) error {
		n++
		if n == 2 {
			return stop
		}
		return nil
	})
	if err != stop || n != 2 {
		t.Errorf("err %v after %d records", err, n)
	}
}

func TestBuildErrors(t *testing.T) {
	var bl Builder
	if _, err := bl.Build(nil); !errors.Is(err, ErrEmptyBatch) {
		t.Errorf("empty Build: %v", err)
	}
	spec := DefaultSpec()
	spec.Codec = 5
	bl.Reset(spec)
	bl.Add(1, nil, nil, nil)
	dst := []byte("x")
	out, err := bl.Build(dst)
	if !errors.Is(err, ErrCodec) || string(out) != "x" {
		t.Errorf("codec 5: %q, %v", out, err)
	}
}

func TestCodecNames(t *testing.T) {
	for _, c := range allCodecs {
		got, err := ParseCodec(c.String())
		if err != nil || got != c {
			t.Errorf("ParseCodec(%q) = %v, %v", c.String(), got, err)
		}
	}
	if c, err := ParseCodec("uncompressed"); c != CodecNone || err != nil {
		t.Errorf("uncompressed: %v %v", c, err)
	}
	if _, err := ParseCodec("brotli"); !errors.Is(err, ErrCodec) {
		t.Errorf("brotli: %v", err)
	}
	if s := Codec(6).String(); s != "unknown(6)" {
		t.Errorf("Codec(6) = %q", s)
	}
}

func TestErrorMessage(t *testing.T) {
	b := unhex(t, workedExample)
	b[len(b)-2] ^= 1
	err := Validate(b)
	var ce *CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("%T %v", err, err)
	}
	want := fmt.Sprintf("corrupt batch at position 17: CRC mismatch (stored 3863061579, computed %d)", CRC(b))
	if err.Error() != want {
		t.Errorf("got  %q\nwant %q", err.Error(), want)
	}
}

// TestAppendLinesAfterSameBatch: the two-piece form encodes exactly the
// batch AppendLines makes of the joined text, wherever the text is cut at
// a line end, with and without a key separator, and into a dst too small
// for it (so the growth reserving for the second piece is exercised).
func TestAppendLinesAfterSameBatch(t *testing.T) {
	text := []byte("k=v\n\n=\nplain\n" + strings.Repeat("y", 300) + "\nlast=1\n")
	for _, sep := range []string{"", "="} {
		want, wn := AppendLines(nil, text, 99, []byte(sep))
		for cut := 0; cut <= len(text); cut++ {
			if cut > 0 && text[cut-1] != '\n' {
				continue
			}
			got, n := AppendLinesAfter(make([]byte, 0, 8), text[:cut], text[cut:], 99, []byte(sep))
			if n != wn || !bytes.Equal(got, want) {
				t.Fatalf("sep %q cut %d: %d records\n got %x\nwant %x", sep, cut, n, got, want)
			}
		}
	}
}
