package fetch

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListOffsets (key 2), versions 1-7.
//
// Timestamp -1 is the log end offset, or for read_committed (isolation 1)
// the last stable offset, which is the same unless a data directory copied
// from Kafka holds an open transaction (P5); a lookup by timestamp that
// lands at or past that end finds nothing, as in Kafka;
// -2 the log start offset, -3 the record with the largest timestamp (at
// every version, as Kafka 3.x's broker answers it: KIP-734 gave it v7, but
// librdkafka 2.0 sends it at v2 for `kcat -Q -t T:P:-3`),
// and ts >= 0 the first offset whose timestamp is >= ts via the time index,
// or -1 when there is none (Kafka's answer; clients then use the end).
// Any other negative timestamp is UNSUPPORTED_VERSION, as Kafka's
// ReplicaManager.isListOffsetsTimestampUnsupported answers it, before the
// partition is looked up: -4 (earliest local, KIP-405) needs v8 and -5
// (latest tiered, KIP-1005) v9, which segfs does not serve (they would
// answer the log start offset, and -1 as there is no tiered storage); the
// rest are no special timestamp at all. (Kafka 4.x refuses -3 below v7
// the same way; segfs answers it, see above.)
// v0's legacy multi-offset form is not served. A partition named more
// than once in a request is INVALID_REQUEST at each of its entries, as in
// Kafka. Leader epochs are returned
// as -1 (unknown): OffsetForLeaderEpoch is not served, so clients have no
// use for them.
func init() { register(2, 1, 7, handleListOffsets) }

// Special timestamps of ListOffsets.
const (
	listLatest       = -1
	listEarliest     = -2
	listMaxTimestamp = -3
)

func handleListOffsets(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	dups := duplicateListPartitions(req)
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset = -1, -1
			if dups[reqPartition{rt.Topic, rp.Partition}] {
				// Kafka's handleListOffsetRequestV1AndAbove: every
				// entry of a partition named more than once, the
				// first too, is INVALID_REQUEST, and nothing is
				// looked up for it.
				sp.ErrorCode = kerr.InvalidRequest.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			if !specialTimestamp(rp.Timestamp) {
				// Kafka checks this before it looks the partition up.
				sp.ErrorCode = kerr.UnsupportedVersion.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			sp.ErrorCode = c.s.listOffset(rt.Topic, rp.Partition, rp.Timestamp, req.IsolationLevel, &sp)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return c.send(h, resp)
}

// specialTimestamp reports whether ListOffsets serves ts: a time (>= 0)
// or one of the special timestamps -1, -2, -3.
func specialTimestamp(ts int64) bool {
	return ts >= 0 || ts == listLatest || ts == listEarliest || ts == listMaxTimestamp
}

// reqPartition names one partition of a request.
type reqPartition struct {
	topic string
	part  int32
}

// duplicateListPartitions returns the partitions a ListOffsets request
// names more than once (Kafka's ListOffsetsRequest.duplicatePartitions),
// nil if none.
func duplicateListPartitions(req *kmsg.ListOffsetsRequest) map[reqPartition]bool {
	var seen, dups map[reqPartition]bool
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			k := reqPartition{rt.Topic, rp.Partition}
			if seen == nil {
				seen = map[reqPartition]bool{}
			}
			if seen[k] {
				if dups == nil {
					dups = map[reqPartition]bool{}
				}
				dups[k] = true
			}
			seen[k] = true
		}
	}
	return dups
}

// listOffset fills sp for one partition and returns its error code.
func (s *Server) listOffset(topic string, part int32, ts int64, isolation int8, sp *kmsg.ListOffsetsResponseTopicPartition) int16 {
	p, err := s.store.Partition(topic, part)
	if err != nil {
		return errorCode(err)
	}
	// Kafka's Partition.fetchOffsetForTimestamp: read_committed sees the
	// log up to the last stable offset only.
	if isolation == 1 {
		lso := p.LastStableOffset()
		defer func() {
			if ts != listEarliest && sp.Offset >= lso {
				sp.Timestamp, sp.Offset = -1, -1
			}
			if ts == listLatest {
				sp.Offset = lso
			}
		}()
	}
	switch {
	case ts == listLatest:
		sp.Offset = p.LogEndOffset()
	case ts == listEarliest:
		sp.Offset = p.LogStartOffset()
	case ts == listMaxTimestamp:
		maxTS, off, ok, err := p.MaxTimestamp()
		if err != nil {
			return errorCode(err)
		}
		if ok {
			sp.Timestamp, sp.Offset = maxTS, off
		}
	default: // ts >= 0: handleListOffsets refused the other negatives
		off, recTs, ok, err := p.LookupTime(ts)
		if err != nil {
			return errorCode(err)
		}
		if ok {
			// Kafka answers with the found record's own timestamp.
			sp.Timestamp, sp.Offset = recTs, off
		}
	}
	return 0
}
