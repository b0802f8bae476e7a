package tests

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/segfs/segfs/index"
	"github.com/segfs/segfs/logstore/record"
)

// A data directory as a Kafka broker leaves it after transactions: the
// partition txn-0 holds, by offset,
//
//	segment 0:  0 plain-1                       non-transactional
//	            1 committed-1, 2 committed-2    producer 100, committed at 7
//	            3 aborted-1, 4 aborted-2        producer 200, aborted at 8
//	            5 plain-2
//	            6 aborted-3                     producer 200
//	            7 COMMIT (100)
//	            8 ABORT (200)
//	            9 aborted-5                     producer 300, aborted at 11
//	segment 10: 10 plain-3
//	            11 ABORT (300)
//
// with a .txnindex per segment holding its ABORT markers' transactions:
// producer 300's starts in segment 0 and is indexed in segment 10.
type txnBatch struct {
	base    int64
	pid     int64 // -1: not transactional
	seq     int32
	values  []string
	control int16 // -1: data; 0 ABORT, 1 COMMIT
}

var (
	txnAllValues = []string{"plain-1", "committed-1", "committed-2", "aborted-1", "aborted-2",
		"plain-2", "aborted-3", "aborted-5", "plain-3"}
	txnCommittedValues = []string{"plain-1", "committed-1", "committed-2", "plain-2", "plain-3"}
)

func txnBuild(t *testing.T, b txnBatch, ts int64) []byte {
	t.Helper()
	spec := record.DefaultSpec()
	spec.BaseOffset = b.base
	if b.pid >= 0 {
		spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence, spec.Transactional = b.pid, 0, b.seq, true
	}
	if b.control >= 0 {
		spec.BaseSequence, spec.Control = -1, true
	}
	var bl record.Builder
	bl.Reset(spec)
	if b.control >= 0 {
		// Key: version 0, type; value: version 0, coordinator epoch 3
		// (KAFKA-FORMAT.md, control records).
		bl.Add(ts, []byte{0, 0, 0, byte(b.control)}, []byte{0, 0, 0, 0, 0, 3}, nil)
	}
	for i, v := range b.values {
		bl.Add(ts+int64(i), nil, []byte(v), nil)
	}
	out, err := bl.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// txnWriteSegment writes a segment's .log, .index, .timeindex (an entry
// per batch but the first) and .txnindex (entries of pid, first, last,
// lso; none: no file) into the partition directory dir, which it
// creates if need be.
func txnWriteSegment(t *testing.T, dir string, base int64, batches []txnBatch, txns [][4]int64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var log, idx, tidx, txn []byte
	for i, b := range batches {
		ts := 1700000000000 + b.base*1000
		raw := txnBuild(t, b, ts)
		pos := int64(len(log))
		log = append(log, raw...)
		n := int64(max(len(b.values), 1))
		if i > 0 {
			idx = index.AppendOffsetEntry(idx, base, index.OffsetEntry{Offset: b.base + n - 1, Position: int32(pos)})
			tidx = index.AppendTimeEntry(tidx, base, index.TimeEntry{Timestamp: ts + n - 1, Offset: b.base + n - 1})
		}
	}
	for _, e := range txns {
		txn = binary.BigEndian.AppendUint16(txn, 0)
		for _, v := range e {
			txn = binary.BigEndian.AppendUint64(txn, uint64(v))
		}
	}
	files := map[string][]byte{".log": log, ".index": idx, ".timeindex": tidx}
	if len(txns) > 0 {
		files[".txnindex"] = txn
	}
	for suf, data := range files {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%020d", base)+suf), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func txnDataDir(t *testing.T) string {
	t.Helper()
	data := t.TempDir()
	pdir := filepath.Join(data, "txn-0")
	txnWriteSegment(t, pdir, 0, []txnBatch{
		{base: 0, pid: -1, values: []string{"plain-1"}, control: -1},
		{base: 1, pid: 100, seq: 0, values: []string{"committed-1", "committed-2"}, control: -1},
		{base: 3, pid: 200, seq: 0, values: []string{"aborted-1", "aborted-2"}, control: -1},
		{base: 5, pid: -1, values: []string{"plain-2"}, control: -1},
		{base: 6, pid: 200, seq: 2, values: []string{"aborted-3"}, control: -1},
		{base: 7, pid: 100, control: 1},
		{base: 8, pid: 200, control: 0},
		{base: 9, pid: 300, seq: 0, values: []string{"aborted-5"}, control: -1},
	}, [][4]int64{{200, 3, 8, 9}})
	txnWriteSegment(t, pdir, 10, []txnBatch{
		{base: 10, pid: -1, values: []string{"plain-3"}, control: -1},
		{base: 11, pid: 300, control: 0},
	}, [][4]int64{{300, 9, 11, 12}})
	return data
}

// txnKgoValues consumes txn-0 from the start with the given isolation
// level until the record at offset 10 (the last data record) arrives.
func txnKgoValues(t *testing.T, addr string, iso kgo.IsolationLevel) []string {
	t.Helper()
	cl := kafkaClient(t, addr, kgo.FetchIsolationLevel(iso),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"txn": {0: kgo.NewOffset().AtStart()}}))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []string
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("no record at offset 10 before the timeout; got %q", out)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
		done := false
		for _, r := range fs.Records() {
			out = append(out, string(r.Value))
			done = done || r.Offset >= 10
		}
		if done {
			return out
		}
	}
}

// TestKafkaTxnImported: a log with committed and aborted transactions,
// copied from Kafka with its .txnindex files, passes verify; read_committed
// consumers (kcat, franz-go) get the committed and non-transactional
// records only, read_uncommitted ones get every data record; no one sees a
// control record.
func TestKafkaTxnImported(t *testing.T) {
	data := txnDataDir(t)
	if r := cliRun(t, "verify", data); r.Code != 0 || !strings.Contains(r.Stdout, "txn-0: ok") {
		t.Fatalf("verify: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}

	srv := kafkaServe(t, data)
	kcatValues := func(iso string, extra ...string) []string {
		args := append([]string{"-C", "-t", "txn", "-p", "0", "-o", "beginning", "-e", "-q",
			"-X", "isolation.level=" + iso, "-f", "%s\n"}, extra...)
		out := kcat(t, srv.addr, "", args...)
		return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	}
	// One batch per response (KIP-74 returns the first whole): each
	// response's aborted list is bounded by its own last batch, and the
	// transaction of producer 300 (offset 9) is indexed in the next segment.
	if got := kcatValues("read_committed", "-X", "fetch.message.max.bytes=1"); !reflect.DeepEqual(got, txnCommittedValues) {
		t.Errorf("kcat read_committed, a batch per fetch: %q, want %q", got, txnCommittedValues)
	}
	// From the middle of producer 200's aborted transaction.
	if got := kcatValues("read_committed", "-o", "4"); !reflect.DeepEqual(got, []string{"plain-2", "plain-3"}) {
		t.Errorf("kcat read_committed from 4: %q, want [plain-2 plain-3]", got)
	}
	if got := kcatValues("read_committed"); !reflect.DeepEqual(got, txnCommittedValues) {
		t.Errorf("kcat read_committed: %q, want %q", got, txnCommittedValues)
	}
	if got := kcatValues("read_uncommitted"); !reflect.DeepEqual(got, txnAllValues) {
		t.Errorf("kcat read_uncommitted: %q, want %q", got, txnAllValues)
	}
	if got := txnKgoValues(t, srv.addr, kgo.ReadCommitted()); !reflect.DeepEqual(got, txnCommittedValues) {
		t.Errorf("franz-go read_committed: %q, want %q", got, txnCommittedValues)
	}
	if got := txnKgoValues(t, srv.addr, kgo.ReadUncommitted()); !reflect.DeepEqual(got, txnAllValues) {
		t.Errorf("franz-go read_uncommitted: %q, want %q", got, txnAllValues)
	}
	srv.stop()

	// The file view renders every data record, aborted ones included (what
	// read_uncommitted shows), and never a control record.
	m := mntAt(t, data)
	got, err := os.ReadFile(m.path("txn", "0", "data"))
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Join(txnAllValues, "\n") + "\n"; string(got) != want {
		t.Errorf("cat txn/0/data: %q, want %q", got, want)
	}
}

// TestVerifyTxnIndexDamage: `segfs verify` on the imported log with a torn
// .txnindex warns, naming the file: the next mount rebuilds that index
// from the log (it was an error while the daemon ignored such an index),
// and read_committed consumers then get only what was committed.
func TestVerifyTxnIndexDamage(t *testing.T) {
	data := txnDataDir(t)
	path := filepath.Join(data, "txn-0", "00000000000000000000.txnindex")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, fi.Size()-1); err != nil {
		t.Fatal(err)
	}
	r := cliRun(t, "verify", data)
	if want := "warning: " + path + ": size"; r.Code != 0 || !strings.Contains(r.Stdout, want) {
		t.Fatalf("verify of a torn .txnindex: exit %d, want 0 and %q\n%s%s", r.Code, want, r.Stdout, r.Stderr)
	}
	srv := kafkaServe(t, data)
	if got := txnKgoValues(t, srv.addr, kgo.ReadCommitted()); !reflect.DeepEqual(got, txnCommittedValues) {
		t.Errorf("franz-go read_committed after the load: %q, want %q", got, txnCommittedValues)
	}
	srv.stop()
	if r := cliRun(t, "verify", data); r.Code != 0 || strings.Contains(r.Stdout, "warning:") {
		t.Errorf("verify after the load rebuilt the index: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// txnOpenDataDir is a partition txo-0 as a Kafka broker leaves it while two
// transactions are open (their producers died before committing):
//
//	segment 0: 0 plain-a; 1 open-1 (producer 500, transactional); 2 plain-b
//	snapshot 3: producer 500, current_txn_first_offset 1
//	segment 3: 3 plain-c; 4 open-2 (producer 600, transactional)
//
// Producer 500's transaction is known from the snapshot only, producer
// 600's from the log after it: Kafka's producer-state rebuild finds both,
// and the last stable offset is 1.
func txnOpenDataDir(t *testing.T) string {
	t.Helper()
	data := t.TempDir()
	pdir := filepath.Join(data, "txo-0")
	txnWriteSegment(t, pdir, 0, []txnBatch{
		{base: 0, pid: -1, values: []string{"plain-a"}, control: -1},
		{base: 1, pid: 500, seq: 0, values: []string{"open-1"}, control: -1},
		{base: 2, pid: -1, values: []string{"plain-b"}, control: -1},
	}, nil)
	txnWriteSegment(t, pdir, 3, []txnBatch{
		{base: 3, pid: -1, values: []string{"plain-c"}, control: -1},
		{base: 4, pid: 600, seq: 0, values: []string{"open-2"}, control: -1},
	}, nil)
	// KAFKA-FORMAT.md §9.7: version 1, CRC-32C of the rest, count, then
	// producer id, epoch, last sequence, last offset, offset delta,
	// timestamp, coordinator epoch, current transaction's first offset.
	be := binary.BigEndian
	snap := make([]byte, 10)
	be.PutUint16(snap, 1)
	be.PutUint32(snap[6:], 1)
	snap = be.AppendUint64(snap, 500)
	snap = be.AppendUint16(snap, 0)
	snap = be.AppendUint32(snap, 0)
	snap = be.AppendUint64(snap, 1)
	snap = be.AppendUint32(snap, 0)
	snap = be.AppendUint64(snap, 1700000001000)
	snap = be.AppendUint32(snap, 0xffffffff)
	snap = be.AppendUint64(snap, 1)
	be.PutUint32(snap[2:], crc32.Checksum(snap[6:], crc32.MakeTable(crc32.Castagnoli)))
	if err := os.WriteFile(filepath.Join(pdir, fmt.Sprintf("%020d.snapshot", 3)), snap, 0o644); err != nil {
		t.Fatal(err)
	}
	return data
}

// txnFetch sends one Fetch of txo-0 from offset with the isolation level
// and returns the partition's answer and the values of its records.
func txnFetch(t *testing.T, cl *kgo.Client, offset int64, iso int8) (kmsg.FetchResponseTopicPartition, []string) {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.MaxBytes = 1 << 20
	req.IsolationLevel = iso
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "txo"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes = offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	sp := resp.Topics[0].Partitions[0]
	if sp.ErrorCode != 0 {
		t.Fatalf("fetch txo-0 at %d: error %d", offset, sp.ErrorCode)
	}
	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: "txo", Partition: 0,
		IsolationLevel: kgo.ReadUncommitted()}, &sp, kgo.DefaultDecompressor(), nil)
	return sp, recordValues(fp.Records)
}

// TestKafkaTxnOpenHeldBack: transactions left open in a data directory
// copied from Kafka are held back from read_committed consumers, as Kafka
// holds them: the last stable offset stays at the first one's first offset
// (1) across a restart of segfs (which rewrites the producer snapshot) and
// while new records arrive; read_uncommitted consumers and the file view
// see every record.
func TestKafkaTxnOpenHeldBack(t *testing.T) {
	kafkaNeedKcat(t)
	data := txnOpenDataDir(t)
	all := []string{"plain-a", "open-1", "plain-b", "plain-c", "open-2"}
	check := func(srv *kafkaServer, leo int64, allVals []string) {
		t.Helper()
		cl := kafkaClient(t, srv.addr)
		sp, vals := txnFetch(t, cl, 0, 1)
		if sp.LastStableOffset != 1 || sp.HighWatermark != leo || !reflect.DeepEqual(vals, []string{"plain-a"}) {
			t.Errorf("read_committed fetch from 0: LSO %d HW %d records %q, want LSO 1 HW %d [plain-a]", sp.LastStableOffset, sp.HighWatermark, vals, leo)
		}
		if sp, vals := txnFetch(t, cl, 1, 1); sp.LastStableOffset != 1 || len(vals) != 0 || len(sp.RecordBatches) != 0 {
			t.Errorf("read_committed fetch at the LSO: LSO %d, %d bytes, records %q, want none", sp.LastStableOffset, len(sp.RecordBatches), vals)
		}
		if _, vals := txnFetch(t, cl, 0, 0); !reflect.DeepEqual(vals, allVals) {
			t.Errorf("read_uncommitted fetch: %q, want %q", vals, allVals)
		}
		// franz-go, a consumer as applications run it: its first
		// records are plain-a alone, and it learns LSO 1.
		cons := kafkaClient(t, srv.addr, kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"txo": {0: kgo.NewOffset().AtStart()}}))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		fs := cons.PollFetches(ctx)
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			if got := recordValues(fp.Records); fp.LastStableOffset != 1 || !reflect.DeepEqual(got, []string{"plain-a"}) {
				t.Errorf("franz-go read_committed: LSO %d records %q, want LSO 1 [plain-a]", fp.LastStableOffset, got)
			}
		})
		cons.Close()
		// kcat: read_committed reaches the end of the partition at the
		// LSO; ListOffsets(latest) under read_committed is the LSO.
		out := kcat(t, srv.addr, "", "-C", "-t", "txo", "-p", "0", "-o", "beginning", "-e", "-q",
			"-X", "isolation.level=read_committed", "-f", "%s\n")
		if out != "plain-a\n" {
			t.Errorf("kcat read_committed: %q, want %q", out, "plain-a\n")
		}
		readCommitted := func(req *kmsg.ListOffsetsRequest) { req.IsolationLevel = 1 }
		if got := kafkaListOffsetWith(t, cl, "txo", -1, readCommitted).Offset; got != 1 {
			t.Errorf("ListOffsets(latest, read_committed): %d, want 1", got)
		}
	}

	srv := kafkaServe(t, data)
	check(srv, 5, all)
	// A record appended now lands past the open transactions: held back too.
	kafkaProduce(t, kafkaClient(t, srv.addr), "txo", 0, "plain-d")
	all = append(all, "plain-d")
	check(srv, 6, all)
	srv.stop()

	// segfs wrote its own snapshot at close; the transactions must survive
	// in it.
	srv = kafkaServe(t, data)
	check(srv, 6, all)
	srv.stop()
}

// TestKafkaTxnIndexDamagedRepair: a partition copied from a Kafka broker
// that died, whose active segment's .txnindex is damaged and whose log
// holds an ABORT after the producer snapshot (written at a clean stop
// before more was appended to the same segment), so its entry must be
// written at load:
//
//	segment 0: 0 plain-1; 1 aborted-a (producer 200); 2 ABORT (200);
//	           3 plain-2; 4 aborted-b (producer 300)
//	segment 5: 5 plain-3; 6 aborted-c (producer 400); 7 ABORT (400);
//	           8 plain-4; snapshot 9 (producer 300 in a transaction
//	           from 4); 9 ABORT (300); 10 plain-5
//
// Segment 5's .txnindex held producer 400's and 300's transactions and
// lost its last byte. The load ignored it and wrote the one entry it
// found missing (producer 300's, from the marker after the snapshot) as
// the whole new index: producer 400's aborted record aborted-c reached
// read_committed consumers for good. Kafka recovers a segment whose
// .txnindex fails its check, rebuilding the index from the log; so does
// segfs now, and read_committed consumers get only what was committed.
func TestKafkaTxnIndexDamagedRepair(t *testing.T) {
	data := t.TempDir()
	pdir := filepath.Join(data, "txn-0")
	txnWriteSegment(t, pdir, 0, []txnBatch{
		{base: 0, pid: -1, values: []string{"plain-1"}, control: -1},
		{base: 1, pid: 200, seq: 0, values: []string{"aborted-a"}, control: -1},
		{base: 2, pid: 200, control: 0},
		{base: 3, pid: -1, values: []string{"plain-2"}, control: -1},
		{base: 4, pid: 300, seq: 0, values: []string{"aborted-b"}, control: -1},
	}, [][4]int64{{200, 1, 2, 3}})
	txnWriteSegment(t, pdir, 5, []txnBatch{
		{base: 5, pid: -1, values: []string{"plain-3"}, control: -1},
		{base: 6, pid: 400, seq: 0, values: []string{"aborted-c"}, control: -1},
		{base: 7, pid: 400, control: 0},
		{base: 8, pid: -1, values: []string{"plain-4"}, control: -1},
		{base: 9, pid: 300, control: 0},
		{base: 10, pid: -1, values: []string{"plain-5"}, control: -1},
	}, [][4]int64{{400, 6, 7, 4}, {300, 4, 9, 10}})
	txnPath := filepath.Join(pdir, "00000000000000000005.txnindex")
	full, err := os.ReadFile(txnPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(txnPath, full[:len(full)-1], 0o644); err != nil {
		t.Fatal(err)
	}
	// The snapshot at 9: producer 300, epoch 0, last sequence 0, last
	// offset 4, in a transaction from 4 (KAFKA-FORMAT.md §9.7).
	be := binary.BigEndian
	snap := make([]byte, 10)
	be.PutUint16(snap, 1)
	be.PutUint32(snap[6:], 1)
	snap = be.AppendUint64(snap, 300)
	snap = be.AppendUint16(snap, 0)
	snap = be.AppendUint32(snap, 0)
	snap = be.AppendUint64(snap, 4)
	snap = be.AppendUint32(snap, 0)
	snap = be.AppendUint64(snap, 1700000004000)
	snap = be.AppendUint32(snap, 0xffffffff)
	snap = be.AppendUint64(snap, 4)
	be.PutUint32(snap[2:], crc32.Checksum(snap[6:], crc32.MakeTable(crc32.Castagnoli)))
	if err := os.WriteFile(filepath.Join(pdir, fmt.Sprintf("%020d.snapshot", 9)), snap, 0o644); err != nil {
		t.Fatal(err)
	}

	committed := []string{"plain-1", "plain-2", "plain-3", "plain-4", "plain-5"}
	srv := kafkaServe(t, data)
	if got := txnKgoValues(t, srv.addr, kgo.ReadCommitted()); !reflect.DeepEqual(got, committed) {
		t.Errorf("franz-go read_committed: %q, want %q", got, committed)
	}
	srv.stop()
	// The rebuilt index is the one Kafka had: both entries, whole.
	if got, err := os.ReadFile(txnPath); err != nil || !reflect.DeepEqual(got, full) {
		t.Errorf("segment 5's .txnindex after the load: %x (%v), want %x", got, err, full)
	}
	if r := cliRun(t, "verify", data); r.Code != 0 {
		t.Errorf("verify after the load: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}
