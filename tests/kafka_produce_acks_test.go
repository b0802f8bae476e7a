package tests

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/segfs/segfs/logstore/record"
)

// kafkaRawRequest sends req (its Version set) on a connection of its own
// and decodes the answer: franz-go's client rewrites a raw Produce's acks
// to its own setting, so a request it would never send goes this way.
func kafkaRawRequest(t *testing.T, addr string, req kmsg.Request) kmsg.Response {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	const corr = 7
	b := binary.BigEndian.AppendUint32(nil, 0) // size, set below
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, corr)
	b = binary.BigEndian.AppendUint16(b, 4)
	b = append(b, "test"...)
	if req.IsFlexible() {
		b = append(b, 0) // no header tags
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	var sz [4]byte
	if _, err := io.ReadFull(c, sz[:]); err != nil {
		t.Fatalf("%s v%d: reading the answer: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	frame := make([]byte, binary.BigEndian.Uint32(sz[:]))
	if _, err := io.ReadFull(c, frame); err != nil {
		t.Fatal(err)
	}
	if got := binary.BigEndian.Uint32(frame); got != corr {
		t.Fatalf("correlation id %d, want %d", got, corr)
	}
	body := frame[4:]
	resp := req.ResponseKind()
	if resp.IsFlexible() && resp.Key() != 18 {
		body = body[1:] // response header tags (none)
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decoding %s v%d: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp
}

// TestKafkaProduceInvalidAcksOrder: a Produce with acks=5 (neither 0, 1
// nor -1), sent to a mounted daemon at v3, v7, v9 and v12. Kafka 4 looks the
// partition up in handleProduceRequest and checks the acks only later, in
// ReplicaManager.appendRecords, for the partitions that exist: an unknown
// topic or partition is UNKNOWN_TOPIC_OR_PARTITION (3), an existing one
// INVALID_REQUIRED_ACKS (21). segfs checked the acks first and answered 21
// for all of them. Nothing is written and nothing is auto-created (the
// daemon auto-creates topics on Produce, Kafka never does).
func TestKafkaProduceInvalidAcksOrder(t *testing.T) {
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/acks"`)

	var bl record.Builder
	bl.Reset(record.DefaultSpec())
	bl.Add(time.Now().UnixMilli(), nil, []byte("x"), nil)
	batch, err := bl.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []int16{3, 7, 9, 12} {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = v, 5, 10000
		for _, tp := range []struct {
			topic string
			part  int32
		}{{"ghost", 0}, {"acks", 0}, {"acks", 7}} {
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = tp.topic
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = tp.part, batch
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		resp := kafkaRawRequest(t, addr, req).(*kmsg.ProduceResponse)
		want := map[string]map[int32]int16{
			"ghost": {0: kerr.UnknownTopicOrPartition.Code},
			"acks":  {0: kerr.InvalidRequiredAcks.Code, 7: kerr.UnknownTopicOrPartition.Code},
		}
		n := 0
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				n++
				if w := want[rt.Topic][rp.Partition]; rp.ErrorCode != w {
					t.Errorf("v%d acks=5 to %s/%d: %v, want %v", v, rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode), kerr.ErrorForCode(w))
				}
			}
		}
		if n != 3 {
			t.Fatalf("v%d: %d partitions answered, want 3: %+v", v, n, resp)
		}
	}
	if got := m.ok(`ls "$M"`); got != "acks\n" {
		t.Errorf("ls of the mount after the refused produce: %q, want only acks (ghost not auto-created)", got)
	}
	if got := m.ok(`wc -c < "$M/acks/0/data"`); got != "0\n" {
		t.Errorf("acks/0/data holds %s bytes after the refused produce, want 0", got)
	}
}

// TestKafkaProduceTransactionalWithoutID: a Produce holding a
// transactional batch but no transactional id, sent to a mounted daemon
// beside a plain batch for the same topic and one for a topic that does
// not exist. Kafka refuses the whole request first, every partition
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED; segfs appended the plain batch,
// auto-created and wrote the unknown topic, and refused only the
// transactional batch.
func TestKafkaProduceTransactionalWithoutID(t *testing.T) {
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/txn"`)
	build := func(transactional bool) []byte {
		spec := record.DefaultSpec()
		if transactional {
			spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence, spec.Transactional = 7, 0, 0, true
		}
		var bl record.Builder
		bl.Reset(spec)
		bl.Add(time.Now().UnixMilli(), nil, []byte("x"), nil)
		b, err := bl.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, 10000
	for _, tp := range []struct {
		topic string
		part  int32
		txn   bool
	}{{"ghost", 0, false}, {"txn", 0, true}, {"txn", 0, false}} {
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = tp.topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = tp.part, build(tp.txn)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp := kafkaRawRequest(t, addr, req).(*kmsg.ProduceResponse)
	n := 0
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			n++
			if rp.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
				t.Errorf("%s/%d: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
		}
	}
	if n != 3 {
		t.Fatalf("%d partitions answered, want 3: %+v", n, resp)
	}
	if got := m.ok(`ls "$M"; wc -c < "$M/txn/0/data"`); got != "txn\n0\n" {
		t.Errorf("after the refused produce: %q, want only txn, empty", got)
	}
}
