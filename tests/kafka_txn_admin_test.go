package tests

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaActiveProducers asks DescribeProducers for topic's partition 0
// and returns its active producers; an error code fails the test.
func kafkaActiveProducers(t *testing.T, addr, topic string) []kmsg.DescribeProducersResponseTopicPartitionActiveProducer {
	t.Helper()
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	req.Topics = append(req.Topics, rt)
	sp := adminRequest[*kmsg.DescribeProducersResponse](t, kafkaClient(t, addr), req).Topics[0].Partitions[0]
	if sp.ErrorCode != 0 {
		t.Fatalf("DescribeProducers %s-0: error %d", topic, sp.ErrorCode)
	}
	return sp.ActiveProducers
}

// txnAdminProducers asks DescribeProducers for txo-0 and returns each
// producer's current transaction start offset.
func txnAdminProducers(t *testing.T, addr string) map[int64]int64 {
	t.Helper()
	out := map[int64]int64{}
	for _, p := range kafkaActiveProducers(t, addr, "txo") {
		out[p.ProducerID] = p.CurrentTxnStartOffset
	}
	return out
}

// txnAdminEnd sends WriteTxnMarkers for producers 500 and 600 of txo-0
// (epoch 0, coordinator epoch 0), as `kafka-transactions.sh abort` does
// for each, through franz-go's raw request.
func txnAdminEnd(t *testing.T, addr string, commit bool) {
	t.Helper()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	for _, pid := range []int64{500, 600} {
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.Committed = pid, commit
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = "txo", []int32{0}
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
	}
	resp := adminRequest[*kmsg.WriteTxnMarkersResponse](t, kafkaClient(t, addr), req)
	for _, m := range resp.Markers {
		if c := m.Topics[0].Partitions[0].ErrorCode; c != 0 {
			t.Fatalf("WriteTxnMarkers producer %d: error %d", m.ProducerID, c)
		}
	}
}

// TestKafkaTxnAdminEnd: the transactions a data directory copied from
// Kafka left open (txnOpenDataDir: producers 500 and 600) show in
// DescribeProducers with their start offsets (1 and 4), and
// WriteTxnMarkers ends them, as `kafka-transactions.sh find-hanging` and
// `abort` do on Kafka: then a kcat read_committed consumer reaches the end
// of the partition, without the aborted records (or with the committed
// ones), `cat data` shows the five data records and no marker line, and
// all of it holds after kill -9 and a remount. segfs served neither API:
// the transactions stayed open until retention passed them.
func TestKafkaTxnAdminEnd(t *testing.T) {
	// It mostly waits (timers, clients) on a server, data dir and
	// port of its own: it runs beside the other tests that do (t.Parallel).
	t.Parallel()
	kafkaNeedKcat(t)
	all := []string{"plain-a", "open-1", "plain-b", "plain-c", "open-2"}
	for _, tc := range []struct {
		name      string
		commit    bool
		committed []string
	}{
		{"abort", false, []string{"plain-a", "plain-b", "plain-c"}},
		{"commit", true, all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := kafkaFreeAddr(t)
			m := mntAt(t, txnOpenDataDir(t), "--kafka-listen", addr)
			kafkaWaitListening(t, addr)
			if got := txnAdminProducers(t, addr); !reflect.DeepEqual(got, map[int64]int64{500: 1, 600: 4}) {
				t.Fatalf("DescribeProducers before: %v, want transactions at 1 (500) and 4 (600)", got)
			}
			txnAdminEnd(t, addr, tc.commit)
			check := func(when string) {
				t.Helper()
				if got := txnAdminProducers(t, addr); !reflect.DeepEqual(got, map[int64]int64{500: -1, 600: -1}) {
					t.Errorf("%s: DescribeProducers: %v, want no transaction", when, got)
				}
				out := kcat(t, addr, "", "-C", "-t", "txo", "-p", "0", "-o", "beginning", "-e", "-q",
					"-X", "isolation.level=read_committed", "-f", "%s\n")
				if got := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); !reflect.DeepEqual(got, tc.committed) {
					t.Errorf("%s: kcat read_committed: %q, want %q", when, got, tc.committed)
				}
				if got := mntLines(m.ok(`cat "$M/txo/0/data"`)); !reflect.DeepEqual(got, all) {
					t.Errorf("%s: cat data: %q, want %q (no marker line)", when, got, all)
				}
			}
			check("after the markers")
			m.kill9()
			m.mount("--kafka-listen", addr)
			kafkaWaitListening(t, addr)
			check("after kill -9 and remount")
		})
	}
}

// txnFindHanging does what `kafka-transactions.sh find-hanging --broker-id
// 0` does (Kafka's TransactionsCommand), with franz-go's raw requests:
// list every topic (Metadata), ask DescribeProducers for each partition
// with a replica on broker 0, keep the ongoing transactions whose
// producer's last timestamp is older than the default
// --max-transaction-timeout (15 minutes), look their producer ids up with
// ListTransactions, and report as hanging each one whose producer id no
// coordinator knows (DescribeTransactions is asked only for the
// transactional ids found, and those whose description lacks the
// partition are hanging too). It returns "topic-N producer P at S",
// sorted.
func txnFindHanging(t *testing.T, addr string) []string {
	t.Helper()
	cl := kafkaClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	dp := kmsg.NewPtrDescribeProducersRequest()
	for _, mt := range meta.Topics {
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic = *mt.Topic
		for _, p := range mt.Partitions {
			if slices.Contains(p.Replicas, 0) {
				rt.Partitions = append(rt.Partitions, p.Partition)
			}
		}
		dp.Topics = append(dp.Topics, rt)
	}
	prods, err := dp.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("DescribeProducers: %v", err)
	}
	type open struct {
		tp         string
		pid, start int64
	}
	var cands []open
	now := time.Now().UnixMilli()
	for _, st := range prods.Topics {
		for _, sp := range st.Partitions {
			if sp.ErrorCode != 0 {
				t.Fatalf("DescribeProducers %s-%d: error %d", st.Topic, sp.Partition, sp.ErrorCode)
			}
			for _, ap := range sp.ActiveProducers {
				if ap.CurrentTxnStartOffset >= 0 && now-ap.LastTimestamp > (15*time.Minute).Milliseconds() {
					cands = append(cands, open{fmt.Sprintf("%s-%d", st.Topic, sp.Partition), ap.ProducerID, ap.CurrentTxnStartOffset})
				}
			}
		}
	}
	var hanging []string
	if len(cands) == 0 {
		return hanging
	}
	lt := kmsg.NewPtrListTransactionsRequest()
	for _, c := range cands {
		lt.ProducerIDFilters = append(lt.ProducerIDFilters, c.pid)
	}
	list, err := lt.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ListTransactions: %v", err)
	}
	if list.ErrorCode != 0 {
		t.Fatalf("ListTransactions: error %d", list.ErrorCode)
	}
	ids := map[int64]string{}
	for _, ts := range list.TransactionStates {
		ids[ts.ProducerID] = ts.TransactionalID
	}
	if len(ids) > 0 {
		t.Fatalf("ListTransactions knows transactional ids %v: segfs has no coordinator", ids)
	}
	for _, c := range cands {
		hanging = append(hanging, fmt.Sprintf("%s producer %d at %d", c.tp, c.pid, c.start))
	}
	slices.Sort(hanging)
	return hanging
}

// TestKafkaTxnFindHanging: what `kafka-transactions.sh find-hanging` does
// (DescribeProducers, then ListTransactions for the producer ids of the
// open transactions) finds the two transactions a data directory copied
// from Kafka left open (txnOpenDataDir), and nothing in a topic written
// through the mount; after `abort` (WriteTxnMarkers) it finds none.
// Before, ListTransactions was not served and find-hanging failed ("Failed
// to list transactions").
func TestKafkaTxnFindHanging(t *testing.T) {
	addr := kafkaFreeAddr(t)
	m := mntAt(t, txnOpenDataDir(t), "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/plain" && seq 1 10 >> "$M/plain/0/data"`)
	want := []string{"txo-0 producer 500 at 1", "txo-0 producer 600 at 4"}
	if got := txnFindHanging(t, addr); !slices.Equal(got, want) {
		t.Fatalf("find-hanging: %q, want %q", got, want)
	}
	txnAdminEnd(t, addr, false)
	if got := txnFindHanging(t, addr); len(got) != 0 {
		t.Fatalf("find-hanging after abort: %q, want none", got)
	}
}

// TestKafkaTxnOpenWithoutSnapshot: a data directory copied from a Kafka
// broker that died, without producer snapshots, holding a transaction of
// producer 500 begun in its first segment and continued in the active
// one, and one of producer 600 begun in the active one, neither ended:
//
//	segment 0: 0 plain-a; 1 open-1 (producer 500); 2 plain-b
//	segment 3: 3 plain-c; 4 open-2 (producer 600); 5 open-3 (producer 500)
//
// Kafka rebuilds the producer state from the log start when it finds no
// snapshot after an unclean shutdown, so find-hanging (DescribeProducers)
// reports producer 500's transaction from offset 1 and read_committed
// consumers stop there. segfs rebuilt it from the active segment only:
// producer 500's transaction seemed to start at 5, and the last stable
// offset was 4, so read_committed consumers got open-1, which Kafka holds
// back, and could lose it to an abort.
func TestKafkaTxnOpenWithoutSnapshot(t *testing.T) {
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
		{base: 5, pid: 500, seq: 1, values: []string{"open-3"}, control: -1},
	}, nil)
	addr := kafkaFreeAddr(t)
	m := mntAt(t, data, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	check := func(when string) {
		t.Helper()
		if got, want := txnAdminProducers(t, addr), map[int64]int64{500: 1, 600: 4}; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: DescribeProducers: transactions start at %v, want %v", when, got, want)
		}
		want := []string{"txo-0 producer 500 at 1", "txo-0 producer 600 at 4"}
		if got := txnFindHanging(t, addr); !slices.Equal(got, want) {
			t.Errorf("%s: find-hanging: %q, want %q", when, got, want)
		}
		sp, vals := txnFetch(t, kafkaClient(t, addr), 0, 1)
		if sp.LastStableOffset != 1 || !slices.Equal(vals, []string{"plain-a"}) {
			t.Errorf("%s: read_committed fetch: LSO %d records %q, want LSO 1 [plain-a]", when, sp.LastStableOffset, vals)
		}
		if got := m.ok(`cat "$M/txo/0/data"`); got != "plain-a\nopen-1\nplain-b\nplain-c\nopen-2\nopen-3\n" {
			t.Errorf("%s: data reads %q", when, got)
		}
	}
	check("loaded without a snapshot")
	// segfs writes a snapshot at its close; the state survives in it.
	m.unmount()
	m.mount("--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	check("after a remount")
}
