package fetch

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// WriteTxnMarkers (key 27), versions 0-1: the request a transaction
// coordinator sends partition leaders to end a transaction, and the one
// Admin.abortTransaction (`kafka-transactions.sh abort`) sends to end a
// hanging one (KIP-664). segfs has no transaction coordinator; this is
// how an operator ends a transaction a data directory copied from Kafka
// left open, which otherwise holds read_committed consumers at its first
// offset (see "Transactions" in doc.go).
//
// Each marker is written to each partition named, as Kafka's leader
// appends it (logstore's Partition.WriteTxnMarker): a COMMIT or ABORT
// control batch (magic 2, transactional and control attributes, the
// producer id and epoch, the coordinator epoch in its record) through the
// ordinary append path, after which the producer's ongoing transaction,
// if any, has ended: the last stable offset moves on, read_committed
// consumers get a committed transaction's records and skip an aborted
// one's (its .txnindex entry is on disk before the answer). Kafka's
// leader checks, per partition: a producer epoch below the one the
// partition knows is INVALID_PRODUCER_EPOCH, a coordinator epoch below
// the producer's last marker's TRANSACTION_COORDINATOR_FENCED; a producer
// the partition does not know, or one without an ongoing transaction,
// gets its marker written all the same (Kafka's appendEndTxnMarker does
// not refuse it; it just ends nothing). An unknown topic or partition is
// UNKNOWN_TOPIC_OR_PARTITION, a full disk KAFKA_STORAGE_ERROR. Internal
// topics take markers (Kafka appends them with internal topics allowed).
// A producer id or epoch below 0 is INVALID_RECORD: Kafka would write a
// marker no producer state tracks, which ends nothing.
//
// v2 (KIP-890 transaction version 2, whose markers bump the epoch) is not
// served; segfs authorizes nothing, so CLUSTER_ACTION is not checked.
func init() { register(27, 0, 1, handleWriteTxnMarkers) }

func handleWriteTxnMarkers(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, m := range req.Markers {
		sm := kmsg.NewWriteTxnMarkersResponseMarker()
		sm.ProducerID = m.ProducerID
		for _, rt := range m.Topics {
			st := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			st.Topic = rt.Topic
			for _, part := range rt.Partitions {
				sp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				sp.Partition = part
				sp.ErrorCode = c.s.writeTxnMarker(&m, rt.Topic, part)
				st.Partitions = append(st.Partitions, sp)
			}
			sm.Topics = append(sm.Topics, st)
		}
		resp.Markers = append(resp.Markers, sm)
	}
	return c.send(h, resp)
}

// writeTxnMarker writes one marker to one partition and returns the error
// code.
func (s *Server) writeTxnMarker(m *kmsg.WriteTxnMarkersRequestMarker, topic string, part int32) int16 {
	p, err := s.store.Partition(topic, part)
	if err != nil {
		return errorCode(err)
	}
	_, err = p.WriteTxnMarker(m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Committed)
	code := errorCode(err)
	switch code {
	case kerr.UnknownServerError.Code, kerr.KafkaStorageError.Code:
		s.log.Warn("fetch: writing a transaction marker failed", "topic", topic, "partition", part,
			"producer_id", m.ProducerID, "err", err)
	}
	return code
}
