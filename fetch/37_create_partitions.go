package fetch

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/segfs/segfs/logstore"
)

// CreatePartitions (key 37), versions 0-3.
//
// The same path as `mkdir MOUNT/T/N` (Topic.AddPartition), one partition
// after the other up to the new count. As Kafka's controller answers:
// UNKNOWN_TOPIC_OR_PARTITION for a topic that does not exist,
// INVALID_PARTITIONS for a count that does not grow, and for an
// assignment INVALID_REPLICA_ASSIGNMENT unless it has one entry per new
// partition, each naming node 0 alone. A topic named twice is
// INVALID_REQUEST. validate_only checks and adds nothing. Partitions are
// added one at a time, each durable before the next: a failure part way
// (a full disk) keeps those already made, as the same mkdirs would, and
// answers the error. Admin changes are serialized (Server.adminMu), so
// concurrent CreatePartitions answer as if one after the other; a
// partition a mkdir adds meanwhile counts towards the new count. A
// request adding more than maxRecordsPerOp
// partitions in all is POLICY_VIOLATION for every topic in it,
// validate_only too, as Kafka's controller refuses a request that would
// make more metadata records than that (19_create_topics.go): without the
// bound, a count of 2147483647 had segfs add partitions for days.
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
		} else if tooLarge {
			st.ErrorCode, msg = kerr.PolicyViolation.Code, tooLargeOpMessage
		} else {
			st.ErrorCode, msg = c.s.createPartitions(rt, req.ValidateOnly)
		}
		if st.ErrorCode != 0 {
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
	for _, rt := range topics {
		if count[rt.Topic] > 1 {
			continue
		}
		t, err := s.store.Topic(rt.Topic)
		if err != nil {
			continue
		}
		add := int64(rt.Count) - int64(t.PartitionCount())
		if add <= 0 || (rt.Assignment != nil && int64(len(rt.Assignment)) != add) {
			continue
		}
		records += add
	}
	return records
}

func (s *Server) createPartitions(rt *kmsg.CreatePartitionsRequestTopic, validateOnly bool) (int16, string) {
	t, err := s.store.Topic(rt.Topic)
	if err != nil {
		return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("Topic %s does not exist.", rt.Topic)
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
	for {
		// Counted afresh each time: a `mkdir MOUNT/T/N` may add one too.
		n := int32(t.PartitionCount())
		if n >= rt.Count {
			break
		}
		if _, err := t.AddPartition(n); err != nil {
			if errors.Is(err, logstore.ErrPartitionExists) {
				continue
			}
			code := errorCode(err)
			if code == kerr.UnknownServerError.Code || code == kerr.KafkaStorageError.Code {
				s.log.Error("fetch: adding a partition", "topic", rt.Topic, "partition", n, "err", err)
			}
			return code, fmt.Sprintf("adding partition %d of %s: %v", n, rt.Topic, err)
		}
		s.log.Info("fetch: partition added", "topic", rt.Topic, "partition", n)
	}
	return 0, ""
}
