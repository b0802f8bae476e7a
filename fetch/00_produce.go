package fetch

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/segfs/segfs/logstore"
	"github.com/segfs/segfs/logstore/record"
)

// Produce (key 0), versions 3-12, advertised as 0-12.
//
// Advertised even for read-only use: librdkafka will not fetch with record
// batches unless Produce >= 3 is listed (P1). v3 brings record batches, v9
// the flexible encoding; v13 names topics by ID and is not served.
//
// ApiVersions lists Produce from v0 although v0-v2 (message sets) are
// refused like any unserved version, as Kafka 4.0 does (KAFKA-18659):
// librdkafka before 2.10 (Debian's kcat and python3-confluent-kafka 2.0.2)
// enables gzip, snappy and lz4 only if the broker lists Produce v0, and
// otherwise sends those batches uncompressed without telling the
// application (librdkafka issue #4956). No client picks v0-2 when v3+ is
// listed: they all take the highest version both sides know.
//
// Each partition's record set goes to logstore's AppendBatch, which
// validates it like Kafka's leader (one batch, magic 2, base offset 0,
// CRC-32C, sizes, counts, keys on compacted topics, record timestamps,
// idempotent sequence/epoch with duplicate detection), stamps offsets and
// appends it as it came. What the protocol decides stays here:
//
//   - acks must be 0, 1 or -1 (else INVALID_REQUIRED_ACKS, checked where
//     Kafka checks it: in ReplicaManager.appendRecords, which
//     handleProduceRequest calls only with the partitions that exist and
//     whose record set has a valid shape (ProduceRequest.validateRecords).
//     So an unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION
//     whatever the acks, and is not auto-created; a short, multi-batch,
//     zstd-below-v7 or transactional record set gets its own error
//     first. segfs checked acks before anything else). On one node -1
//     means the same as 1: appended, and flushed if the topic's flush
//     settings say so (the store's job), unless the topic's
//     min.insync.replicas is above 1: then, as on a Kafka cluster whose
//     in-sync replicas are fewer, acks=-1 is NOT_ENOUGH_REPLICAS and
//     nothing is written (acks 0 and 1 are not affected). acks=0 gets no response at all;
//     if a partition of it failed, the connection is closed (Kafka's
//     handleProduceRequest does the same).
//   - Transactions are not served: a transactional batch gets
//     INVALID_TXN_STATE (as kfake answers a producer without an open
//     transaction). A request holding one without a transactional id
//     is refused whole first, every partition
//     TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka's
//     handleProduceRequest refuses it before it looks at anything else
//     (segfs answered each partition on its own: an unknown topic
//     UNKNOWN_TOPIC_OR_PARTITION, the rest INVALID_TXN_STATE).
//   - zstd batches need Produce v7+ (UNSUPPORTED_COMPRESSION_TYPE), as in
//     Kafka.
//   - Kafka's internal topics (__consumer_offsets, __transaction_state,
//     __share_group_state) take no client's records: an existing partition
//     of one answers INVALID_TOPIC_EXCEPTION, as Kafka's
//     ReplicaManager.appendToLocalLog does at every version, unless the
//     client id is Kafka's "__admin_client". segfs keeps committed offsets
//     in a file of its own (offsets.go), so such a topic only holds data
//     copied from Kafka, which is served to consumers but not extended.
//   - An unknown topic is created when auto-creation is on (issue #4 asks
//     for it on Produce as on Metadata; Kafka's own Produce handler leaves
//     it to the Metadata request producers send first), but only if the
//     partition asked for is one it will have (below --partitions):
//     otherwise UNKNOWN_TOPIC_OR_PARTITION, and nothing is created (it
//     used to create the topic, then refuse the partition). Kafka's
//     internal topic names are never auto-created (03_metadata.go): an
//     unknown one is INVALID_TOPIC_EXCEPTION, as Metadata answers it and
//     as Kafka answers a produce to its internal topic, which on Kafka
//     exists as soon as a Metadata request named it; Kafka's admin client
//     id, which may write there, gets UNKNOWN_TOPIC_OR_PARTITION. The topic is
//     looked up first, before the batch is examined, as Kafka's
//     handleProduceRequest does.
//   - A duplicate of one of the producer's last 5 batches succeeds with the
//     original offsets and writes nothing.
//   - Records without a key on a compacted topic are INVALID_RECORD with,
//     from v8, each one listed in RecordErrors (its index and Kafka's
//     "Compacted topic cannot accept message without key in topic
//     partition T-N.") and Kafka's summary as the ErrorMessage. Kafka
//     sends a message with no other produce error (CORRUPT_MESSAGE,
//     MESSAGE_TOO_LARGE, a batch-level INVALID_RECORD,
//     INVALID_TOPIC_EXCEPTION, UNKNOWN_TOPIC_OR_PARTITION: null), and
//     neither does segfs.
//   - On a CreateTime topic, records whose timestamp (other than -1) lies
//     more than message.timestamp.before.max.ms before the broker's clock
//     or more than message.timestamp.after.max.ms after it (1 h by
//     default, as in Kafka 4.0) fail the batch with INVALID_TIMESTAMP, as
//     does a batch with the LogAppendTime attribute on a LogAppendTime
//     topic or without timestamps (logstore's timestampRule). As for
//     keyless records, v8+ lists each refused record in RecordErrors with
//     Kafka's message ("Timestamp T of message with offset N is out of
//     range. The timestamp should be within [A, B]"), and the
//     ErrorMessage is Kafka's summary, "One or more records have been
//     rejected due to invalid timestamp".
func init() {
	register(0, 3, 12, handleProduce)
	apis[0].adMin = 0
}

// Record batch header positions this file reads (KAFKA-FORMAT.md §2.1);
// everything else about the batch is the store's to check.
const (
	batchAttributesPos = 21 // int16
	attrCodecMask      = 0x07
	attrTransactional  = 0x10
	codecZstd          = 4
	batchHeaderSize    = 61
)

func handleProduce(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	// Kafka's first check (RequestUtils.hasTransactionalRecords): without
	// a transactional id no transactional batch can be authorized.
	refused := req.TransactionID == nil && hasTransactionalBatch(req)
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			if refused {
				sp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			} else {
				c.s.produce(req, rt.Topic, rp, h, &sp)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if req.Acks == 0 {
		// The client reads no response, so an error could not reach it:
		// as Kafka does, close the connection, which makes the client
		// refresh its metadata and learn that something failed.
		for _, st := range resp.Topics {
			for _, sp := range st.Partitions {
				if sp.ErrorCode != 0 {
					return fmt.Errorf("acks=0 produce to %s-%d failed: %v", st.Topic, sp.Partition, kerr.ErrorForCode(sp.ErrorCode))
				}
			}
		}
		return nil
	}
	return c.send(h, resp)
}

// hasTransactionalBatch reports whether the first batch of some
// partition's record set is transactional, as Kafka's
// RequestUtils.hasTransactionalRecords reads it: only a batch the record
// set holds whole counts.
func hasTransactionalBatch(req *kmsg.ProduceRequest) bool {
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			b := rp.Records
			if len(b) < batchHeaderSize {
				continue
			}
			if size, err := record.PeekSize(b); err != nil || size > int64(len(b)) {
				continue
			}
			if binary.BigEndian.Uint16(b[batchAttributesPos:])&attrTransactional != 0 {
				return true
			}
		}
	}
	return false
}

// produce appends one partition's record set and fills sp.
func (s *Server) produce(req *kmsg.ProduceRequest, topic string, rp *kmsg.ProduceRequestTopicPartition, h *reqHeader, sp *kmsg.ProduceResponseTopicPartition) {
	acksValid := req.Acks == 0 || req.Acks == 1 || req.Acks == -1
	// A request Kafka would refuse creates nothing: Kafka never creates a
	// topic on Produce, and an unknown one is answered before the acks.
	create := acksValid && s.cfg.AutoCreateTopics && rp.Partition >= 0 && int(rp.Partition) < s.store.DefaultPartitions()
	t, err := s.topic(topic, create)
	if err != nil {
		sp.ErrorCode = errorCode(err)
		if errors.Is(err, logstore.ErrUnknownTopic) && isInternalTopic(topic) && h.clientID != adminClientID {
			sp.ErrorCode = kerr.InvalidTopicException.Code
		}
		return
	}
	p, err := t.Partition(rp.Partition)
	if err != nil {
		sp.ErrorCode = errorCode(err)
		return
	}
	b := rp.Records
	if len(b) < batchHeaderSize {
		sp.ErrorCode = kerr.CorruptMessage.Code
		return
	}
	attrs := binary.BigEndian.Uint16(b[batchAttributesPos:])
	// Kafka's ProduceRequest.validateRecords, before the transaction
	// verification and the acks.
	if attrs&attrCodecMask == codecZstd && h.version < 7 {
		sp.ErrorCode = kerr.UnsupportedCompressionType.Code
		return
	}
	if attrs&attrTransactional != 0 {
		sp.ErrorCode = kerr.InvalidTxnState.Code
		return
	}
	if !acksValid {
		// The one-batch rule of validateRecords comes first; AppendBatch
		// checks it the same way for valid acks.
		if size, err := record.PeekSize(b); err != nil || size > int64(len(b)) {
			sp.ErrorCode = kerr.CorruptMessage.Code
		} else if size != int64(len(b)) {
			sp.ErrorCode = kerr.InvalidRecord.Code
		} else {
			sp.ErrorCode = kerr.InvalidRequiredAcks.Code
		}
		return
	}
	if isInternalTopic(topic) && h.clientID != adminClientID {
		sp.ErrorCode = kerr.InvalidTopicException.Code
		return
	}
	// Kafka's Partition.appendRecordsToLeader: acks=all needs
	// min.insync.replicas in-sync replicas, and this node is the only one.
	if req.Acks == -1 && t.Config().MinInsyncReplicas > 1 {
		sp.ErrorCode = kerr.NotEnoughReplicas.Code
		sp.LogStartOffset = failedLogStart(sp.ErrorCode, p)
		return
	}
	// AppendBatch rewrites the batch in place; it aliases the request
	// frame, which nobody reads after this.
	res, err := p.AppendBatch(b)
	if err != nil {
		sp.ErrorCode = errorCode(err)
		sp.LogStartOffset = failedLogStart(sp.ErrorCode, p)
		var recErrs *logstore.RecordErrors
		if errors.As(err, &recErrs) {
			setRecordErrors(sp, recErrs)
		}
		switch sp.ErrorCode {
		case kerr.UnknownServerError.Code:
			s.log.Error("fetch: produce failed", "topic", topic, "partition", rp.Partition, "err", err)
		case kerr.KafkaStorageError.Code:
			// Retriable for the client (a full disk), but the operator
			// must learn why producers stall.
			s.log.Warn("fetch: produce failed; the client will retry", "topic", topic, "partition", rp.Partition, "err", err)
		}
		return
	}
	sp.BaseOffset = res.BaseOffset
	sp.LogAppendTime = res.LogAppendTime
	sp.LogStartOffset = res.LogStartOffset
}

// failedLogStart is the log_start_offset a failed partition answers, as
// Kafka's ReplicaManager.appendToLocalLog gives it: -1
// (UNKNOWN_LOG_APPEND_INFO) for the errors it catches by name (unknown
// partition, not the leader, a record or batch too large, a corrupt
// batch, a storage error), the partition's log start for the others
// (processFailedRecord: invalid records, sequence and epoch errors,
// anything unexpected).
func failedLogStart(code int16, p *logstore.Partition) int64 {
	switch code {
	case kerr.UnknownTopicOrPartition.Code, kerr.NotLeaderForPartition.Code,
		kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code,
		kerr.CorruptMessage.Code, kerr.KafkaStorageError.Code:
		return -1
	}
	return p.LogStartOffset()
}

// setRecordErrors fills the v8+ error message and per-record errors of a
// batch refused record by record, as Kafka's ReplicaManager does for a
// RecordValidationException: the only produce errors to which Kafka
// attaches a message (hasCustomErrorMessage); every other error code
// goes out with a null one, in Kafka as here.
func setRecordErrors(sp *kmsg.ProduceResponseTopicPartition, e *logstore.RecordErrors) {
	msg := e.Error()
	sp.ErrorMessage = &msg
	for _, r := range e.Records {
		er := kmsg.NewProduceResponseTopicPartitionErrorRecord()
		er.RelativeOffset = r.Index
		m := r.Message
		er.ErrorMessage = &m
		sp.ErrorRecords = append(sp.ErrorRecords, er)
	}
}

// adminClientID is the client id to which Kafka's Produce handler allows
// appends to internal topics (AdminUtils.ADMIN_CLIENT_ID).
const adminClientID = "__admin_client"

// isInternalTopic reports whether name is one of Kafka's internal topics
// (Topic.isInternal): written only by the broker itself, flagged
// is_internal in Metadata.
func isInternalTopic(name string) bool {
	switch name {
	case "__consumer_offsets", "__transaction_state", "__share_group_state":
		return true
	}
	return false
}
