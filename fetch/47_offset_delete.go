package fetch

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetDelete (key 47), version 0.
//
// For admin tools (kafka-consumer-groups.sh --delete-offsets, kadm
// DeleteOffsets): deletes a group's committed offsets of some partitions,
// durably, before answering; a consumer of the group then starts those
// partitions from auto.offset.reset. As Kafka: INVALID_GROUP_ID for an
// empty group id and GROUP_ID_NOT_FOUND for an unknown group (group-level
// errors); while the group has members, a partition of a topic its
// current generation subscribes to is refused with
// GROUP_SUBSCRIBED_TO_TOPIC, and a group with members whose protocol is
// not the consumer one is NON_EMPTY_GROUP. A partition without a commit
// is answered without error. A failed write of the offsets file is the
// group-level NOT_COORDINATOR (offsetsWriteErrorCode), with only the
// partitions that do not exist listed, as Kafka 4 answers a failed
// coordinator write (segfs answered COORDINATOR_NOT_AVAILABLE for each
// partition it would have deleted).
// A partition that does not exist (unknown topic or partition) is
// UNKNOWN_TOPIC_OR_PARTITION and deletes nothing, as Kafka's
// handleOffsetDeleteRequest answers it before the group coordinator sees
// the request, whose group-level error still wins (segfs answered such a
// partition without error, or GROUP_SUBSCRIBED_TO_TOPIC, and deleted its
// offsets).
func init() { register(47, 0, 0, handleOffsetDelete) }

func handleOffsetDelete(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.OffsetDeleteRequest)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	// The partitions that exist go to the coordinator; known[i][j] is
	// the error of the others.
	known := make([][]int16, len(req.Topics))
	var existing []kmsg.OffsetDeleteRequestTopic
	for i, t := range req.Topics {
		known[i] = make([]int16, len(t.Partitions))
		et := kmsg.OffsetDeleteRequestTopic{Topic: t.Topic}
		for j, p := range t.Partitions {
			if _, err := c.s.store.Partition(t.Topic, p.Partition); err != nil {
				known[i][j] = kerr.UnknownTopicOrPartition.Code
				continue
			}
			et.Partitions = append(et.Partitions, p)
		}
		existing = append(existing, et)
	}
	code, codes, op := c.s.groups.deleteOffsets(req.Group, existing)
	resp.ErrorCode = code
	if code != 0 {
		return c.send(h, resp)
	}
	writeErr := int16(0)
	if op != nil {
		if err := c.s.offsets.wait(op); err != nil {
			c.s.log.Error("fetch: deleting committed offsets", "group", req.Group, "err", err)
			writeErr = offsetsWriteErrorCode(err)
			resp.ErrorCode = writeErr
		}
	}
	for i, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		k := 0 // index in existing[i]
		for j, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, known[i][j]
			if rp.ErrorCode == 0 {
				rp.ErrorCode = codes[i][k]
				k++
				if writeErr != 0 {
					continue // the group-level error answers it
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		if writeErr == 0 || len(rt.Partitions) > 0 {
			resp.Topics = append(resp.Topics, rt)
		}
	}
	return c.send(h, resp)
}
