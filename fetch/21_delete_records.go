package fetch

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteRecords (key 21), versions 0-2: kafka-delete-records.sh and the
// admin clients' deleteRecords.
//
// Each partition's log start offset moves up to the offset asked, -1
// meaning the high watermark (the log end on one node), as Kafka's
// Partition.deleteRecordsOnLeader does (logstore's
// Partition.DeleteRecords): beyond the high watermark is
// OFFSET_OUT_OF_RANGE, at or below the current log start nothing happens,
// and low_watermark answers the log start after the request. A topic
// whose cleanup.policy lacks delete answers POLICY_VIOLATION, an internal
// topic INVALID_TOPIC_EXCEPTION, an unknown one UNKNOWN_TOPIC_OR_PARTITION
// (nothing is auto-created); failed partitions answer low_watermark -1.
// The new log start is in the log-start checkpoint on disk before the
// response goes out; the retention pass deletes the segments wholly below
// it later. On a single node every replica is the leader, so the
// request's timeout (Kafka's wait for followers) has nothing to wait for.
//
// Kafka collects the request's partitions in a map: one named twice is
// done once, at the last offset asked, and answered once. So is it here.
func init() { register(21, 0, 2, handleDeleteRecords) }

func handleDeleteRecords(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	offsets := map[reqPartition]int64{}
	topicAt := map[string]int{}
	var order [][]int32 // partitions of resp.Topics[i], in request order
	for _, rt := range req.Topics {
		i, ok := topicAt[rt.Topic]
		if !ok {
			i = len(resp.Topics)
			topicAt[rt.Topic] = i
			st := kmsg.NewDeleteRecordsResponseTopic()
			st.Topic = rt.Topic
			resp.Topics = append(resp.Topics, st)
			order = append(order, nil)
		}
		for _, rp := range rt.Partitions {
			k := reqPartition{rt.Topic, rp.Partition}
			if _, seen := offsets[k]; !seen {
				order[i] = append(order[i], rp.Partition)
			}
			offsets[k] = rp.Offset
		}
	}
	for i := range resp.Topics {
		st := &resp.Topics[i]
		for _, part := range order[i] {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition = part
			sp.LowWatermark, sp.ErrorCode = c.s.deleteRecords(st.Topic, part, offsets[reqPartition{st.Topic, part}])
			st.Partitions = append(st.Partitions, sp)
		}
	}
	return c.send(h, resp)
}

// deleteRecords moves one partition's log start and returns the low
// watermark and the error code.
func (s *Server) deleteRecords(topic string, part int32, offset int64) (int64, int16) {
	p, err := s.store.Partition(topic, part)
	if err != nil {
		return -1, errorCode(err)
	}
	// Kafka's ReplicaManager.deleteRecordsOnLocalLog: internal topics are
	// the broker's own.
	if isInternalTopic(topic) {
		return -1, kerr.InvalidTopicException.Code
	}
	low, err := p.DeleteRecords(offset)
	if err != nil {
		code := errorCode(err)
		switch code {
		case kerr.UnknownServerError.Code, kerr.KafkaStorageError.Code:
			s.log.Warn("fetch: delete records failed", "topic", topic, "partition", part, "offset", offset, "err", err)
		}
		return -1, code
	}
	return low, 0
}
