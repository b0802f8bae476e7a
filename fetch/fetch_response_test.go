package fetch

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/segfs/segfs/logstore"
)

// assemble turns pieces into the bytes that go on the wire.
func assemble(t *testing.T, pieces []piece) []byte {
	t.Helper()
	var out []byte
	for _, p := range pieces {
		if p.file.File == nil {
			out = append(out, p.mem...)
			continue
		}
		b := make([]byte, p.file.Len)
		if _, err := p.file.File.ReadAt(b, p.file.Pos); err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}

// The hand-spliced Fetch response must decode with kmsg, at every served
// version, into exactly what was meant: fields from kmsg, record sets from
// the files (several slices, i.e. across segments), empty sets non-null.
func TestSplicedFetchDecodes(t *testing.T) {
	dir := t.TempDir()
	content := make([]byte, 300<<10) // > 16 KiB so flexible prefixes take 3 bytes
	for i := range content {
		content[i] = byte(rand.Uint32())
	}
	path := filepath.Join(dir, "seg")
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	// Partition data: p0 two slices, p1 empty, p2 one slice, p3 (2nd topic) one byte.
	data := []*logstore.ReadResult{
		{Slices: []logstore.FileSlice{{File: f, Pos: 100, Len: 1000}, {File: f, Pos: 5000, Len: 200 << 10}}, Bytes: 1000 + 200<<10},
		{Slices: []logstore.FileSlice{{File: f, Pos: 0, Len: 61}}, Bytes: 61},
		{Slices: []logstore.FileSlice{{File: f, Pos: 7, Len: 1}}, Bytes: 1},
	}
	want := [][]byte{
		append(append([]byte{}, content[100:1100]...), content[5000:5000+200<<10]...),
		{},
		content[0:61],
		content[7:8],
	}

	for v := int16(4); v <= 12; v++ {
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = v
		var parts []kmsg.FetchResponseTopicPartition
		for i := range 4 {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = int32(i)
			p.HighWatermark, p.LastStableOffset, p.LogStartOffset = 1000+int64(i), 1000+int64(i), int64(i)
			p.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			p.RecordBatches = []byte{}
			parts = append(parts, p)
		}
		parts[0].RecordBatches = marker(0)
		parts[2].RecordBatches = marker(1)
		parts[3].RecordBatches = marker(2)
		t1 := kmsg.NewFetchResponseTopic()
		t1.Topic = "orders"
		t1.Partitions = parts[:3]
		t2 := kmsg.NewFetchResponseTopic()
		t2.Topic = "x"
		t2.Partitions = parts[3:]
		resp.Topics = []kmsg.FetchResponseTopic{t1, t2}

		pieces, err := splicedFetch(77, resp, data)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		wire := assemble(t, pieces)
		if got := int(binary.BigEndian.Uint32(wire)); got != len(wire)-4 {
			t.Fatalf("v%d: frame size %d, have %d bytes", v, got, len(wire)-4)
		}
		got := decodeResponse(t, wire[4:], 77, &kmsg.FetchResponse{Version: v}).(*kmsg.FetchResponse)
		if len(got.Topics) != 2 || got.Topics[0].Topic != "orders" || got.Topics[1].Topic != "x" {
			t.Fatalf("v%d: topics %+v", v, got.Topics)
		}
		i := 0
		for _, tp := range got.Topics {
			for _, p := range tp.Partitions {
				if p.Partition != int32(i) || p.HighWatermark != 1000+int64(i) || p.LogStartOffset != int64(i) && v >= 5 {
					t.Errorf("v%d p%d: fields %+v", v, i, p)
				}
				if p.RecordBatches == nil {
					t.Errorf("v%d p%d: null record set (P4)", v, i)
				}
				if !bytes.Equal(p.RecordBatches, want[i]) {
					t.Errorf("v%d p%d: record set of %d bytes, want %d", v, i, len(p.RecordBatches), len(want[i]))
				}
				i++
			}
		}
		// Only the framing is written by hand: every memory piece is small.
		var mem int
		for _, p := range pieces {
			mem += len(p.mem)
		}
		if mem > 256 {
			t.Errorf("v%d: %d bytes from memory", v, mem)
		}
	}
}
