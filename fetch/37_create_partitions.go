package fetch

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CreatePartitions (key 37), versions 0-3.
//
// The same path as `mkdir MOUNT/T/N` (Topic.AddPartition), one partition
// after the other up to the new count. As Kafka's controller answers:
// UNKNOWN_TOPIC_OR_PARTITION (no message) for a topic that does not exist,
// INVALID_PARTITIONS for a count that does not grow, and for an
// assignment INVALID_REPLICA_ASSIGNMENT unless it has one entry per new
// partition, each naming node 0 alone. A topic named twice is
// INVALID_REQUEST. validate_only checks and adds nothing. The partitions
// are added all or none (Topic.AddPartitions), as Kafka's controller
// applies the request as one metadata change: a failure part way (a full
// disk, no descriptors left) removes those already made and answers the
// error, which names its cause; a crash part way (kill -9 before the
// answer) is rolled back when the data directory is next opened, so the
// client's retry finds the topic as it was. Admin changes are serialized
// (Server.adminMu), so concurrent CreatePartitions answer as if one after
// the other; a partition a mkdir adds before counts towards the new
// count (a mkdir during one waits for it). A
// request adding more than maxRecordsPerOp
// partitions in all is POLICY_VIOLATION for every topic in it that would
// add partitions, validate_only too, as Kafka's controller refuses a
// request that would make more metadata records than that
// (19_create_topics.go): without the bound, a count of 2147483647 had
// segfs add partitions for days. A topic of such a request that adds none
// keeps its own error (UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS,
// INVALID_REPLICA_ASSIGNMENT for an assignment of the wrong length), as
// Kafka's ReplicationControlManager.createPartitions finds it before it
// makes any record (segfs answered those POLICY_VIOLATION too).
func init() { register(37, 0, 3, handleCreatePartitions) }

func handleCreatePartitions(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	count := map[string]int{}
	for _, rt := range req.Topics {
		count[rt.Topic]++
	}
	tooLarge := c.s.newPartitionRecords(req.Topics, count) > maxRecordsPerOp
	done := map[string]bool{}
	for i := range req.Topics {
		rt := &req.Topics[i]
		if done[rt.Topic] {
			continue
		}
		done[rt.Topic] = true
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		var msg string
		if count[rt.Topic] > 1 {
			st.ErrorCode, msg = kerr.InvalidRequest.Code, "Duplicate topic name."
		} else if tooLarge && c.s.partitionRecords(rt) > 0 {
			st.ErrorCode, msg = kerr.PolicyViolation.Code, tooLargeOpMessage
		} else {
			st.ErrorCode, msg = c.s.createPartitions(rt, req.ValidateOnly)
		}
		if msg != "" {
			st.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, st)
	}
	return c.send(h, resp)
}

// newPartitionRecords counts the PartitionRecords Kafka's controller would
// make for a CreatePartitions request: the partitions added to each
// existing topic named once that grows, unless its assignment is refused
// for its length.
func (s *Server) newPartitionRecords(topics []kmsg.CreatePartitionsRequestTopic, count map[string]int) int64 {
	var records int64
	for i := range topics {
		if count[topics[i].Topic] > 1 {
			continue
		}
		records += s.partitionRecords(&topics[i])
	}
	return records
}

// partitionRecords is the number of PartitionRecords one topic of a
// CreatePartitions request makes: none for a topic that does not exist,
// does not grow, or has an assignment of the wrong length.
func (s *Server) partitionRecords(rt *kmsg.CreatePartitionsRequestTopic) int64 {
	t, err := s.store.Topic(rt.Topic)
	if err != nil {
		return 0
	}
	add := int64(rt.Count) - int64(t.PartitionCount())
	if add <= 0 || (rt.Assignment != nil && int64(len(rt.Assignment)) != add) {
		return 0
	}
	return add
}

func (s *Server) createPartitions(rt *kmsg.CreatePartitionsRequestTopic, validateOnly bool) (int16, string) {
	t, err := s.store.Topic(rt.Topic)
	if err != nil {
		// No message, as Kafka's controller throws
		// UnknownTopicOrPartitionException without one: clients print
		// the code's own text. segfs sent "Topic X does not exist.".
		return kerr.UnknownTopicOrPartition.Code, ""
	}
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	have := int32(t.PartitionCount())
	switch {
	case rt.Count < have:
		return kerr.InvalidPartitions.Code, fmt.Sprintf("The topic %s currently has %d partition(s); %d would not be an increase.", rt.Topic, have, rt.Count)
	case rt.Count == have:
		return kerr.InvalidPartitions.Code, fmt.Sprintf("Topic already has %d partition(s).", have)
	}
	if rt.Assignment != nil {
		if int64(len(rt.Assignment)) != int64(rt.Count)-int64(have) {
			return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", rt.Count-have, len(rt.Assignment))
		}
		for _, a := range rt.Assignment {
			if code, msg := checkReplicas(a.Replicas); code != 0 {
				return code, msg
			}
		}
	}
	if validateOnly {
		return 0, ""
	}
	// All or nothing (Topic.AddPartitions), as Kafka's controller applies
	// the request as one metadata change: a failure part way used to
	// leave the partitions made before it.
	if err := t.AddPartitions(rt.Count); err != nil {
		code := errorCode(err)
		if code == kerr.UnknownServerError.Code || code == kerr.KafkaStorageError.Code {
			s.log.Error("fetch: adding partitions", "topic", rt.Topic, "count", rt.Count, "err", err)
		}
		return code, err.Error()
	}
	s.log.Info("fetch: partitions added", "topic", rt.Topic, "from", have, "count", rt.Count)
	return 0, ""
}
