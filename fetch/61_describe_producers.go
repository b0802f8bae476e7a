package fetch

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/segfs/segfs/logstore"
)

// DescribeProducers (key 61), version 0: Admin.describeProducers, which
// `kafka-transactions.sh describe-producers`, `abort --start-offset` and
// `find-hanging` use.
//
// Each partition asked lists its active producers as Kafka's
// UnifiedLog.activeProducers does, from logstore's producer state
// (logstore.Partition.ActiveProducers): id, epoch, last sequence (-1 for
// a producer known by its markers only), last timestamp, the coordinator
// epoch of its last marker (-1: none) and the first offset of its ongoing
// transaction (-1: none). A transaction a data directory copied from
// Kafka left open shows here with its start offset, which is what
// `kafka-transactions.sh abort --start-offset` takes. As in Kafka's
// handleDescribeProducersRequest, a topic that does not exist answers
// UNKNOWN_TOPIC_OR_PARTITION for each partition asked, with Kafka's
// message, a name no topic can have ("", "a/b") INVALID_TOPIC_EXCEPTION
// with what is wrong with it (checked first, as Kafka's
// checkValidTopic), and an unknown
// partition of a known topic UNKNOWN_TOPIC_OR_PARTITION without a message
// (Kafka's ReplicaManager.activeProducerState). Partitions are answered
// in request order, a partition named twice twice, as Kafka does.
func init() { register(61, 0, 0, handleDescribeProducers) }

func handleDescribeProducers(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		var (
			t        *logstore.Topic
			topicErr int16
			topicMsg *string
		)
		if err := logstore.ValidateTopicName(rt.Topic); err != nil {
			// Kafka's checkValidTopic, before the topic is looked up:
			// the message says what is wrong with the name. segfs
			// answered UNKNOWN_TOPIC_OR_PARTITION.
			m := err.Error()
			topicErr, topicMsg = kerr.InvalidTopicException.Code, &m
		} else if t, err = c.s.store.Topic(rt.Topic); err != nil {
			topicErr = errorCode(err)
			// Kafka's ApiError for a topic-level error carries the
			// error's default message.
			if ke, ok := kerr.ErrorForCode(topicErr).(*kerr.Error); ok {
				m := ke.Description
				topicMsg = &m
			}
		}
		for _, part := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = part
			if topicErr != 0 {
				sp.ErrorCode, sp.ErrorMessage = topicErr, topicMsg
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			p, err := t.Partition(part)
			if err != nil {
				sp.ErrorCode = errorCode(err)
				if !errors.Is(err, logstore.ErrUnknownPartition) {
					c.s.log.Warn("fetch: describe producers", "topic", rt.Topic, "partition", part, "err", err)
				}
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			for _, pi := range p.ActiveProducers() {
				ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ap.ProducerID, ap.ProducerEpoch = pi.ID, int32(pi.Epoch)
				ap.LastSequence, ap.LastTimestamp = pi.LastSequence, pi.LastTimestamp
				ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = pi.CoordinatorEpoch, pi.TxnStartOffset
				sp.ActiveProducers = append(sp.ActiveProducers, ap)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return c.send(h, resp)
}
