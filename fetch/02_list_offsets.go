package fetch

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListOffsets (key 2), versions 1-10.
//
// Timestamp -1 is the log end offset, or for read_committed (isolation 1)
// the last stable offset, which is the same unless a data directory copied
// from Kafka holds an open transaction (P5); a lookup by timestamp that
// lands at or past that end finds nothing, as in Kafka;
// -2 the log start offset, -3 the record with the largest timestamp, as
// Kafka finds it: the first batch carrying that timestamp decides, and an
// empty one (kept by the cleaner for an active producer) answers no offset
// (logstore's MaxTimestamp) (at every version, as Kafka 3.x's broker answers it: KIP-734 gave it v7, but
// librdkafka 2.0 sends it at v2 for `kcat -Q -t T:P:-3`),
// and ts >= 0 the first offset whose timestamp is >= ts via the time index,
// or -1 when there is none (Kafka's answer; clients then use the end).
// The tiered-storage timestamps are answered as Kafka's UnifiedLog answers
// them for a topic without remote storage, which every segfs topic is:
// -4 (earliest local, KIP-405, v8+) is the log start offset, exactly as
// -2 (the whole log is local), and -5 (latest tiered, KIP-1005, v9+) is
// offset -1, timestamp -1, leader epoch -1 with no error (nothing has been
// tiered). kadm's ListLocalLogStartOffsets and ListLatestRemoteOffsets
// send them at the highest version the broker lists.
// Any other negative timestamp, and -4 below v8 or -5 below v9, is
// UNSUPPORTED_VERSION, as Kafka's
// ReplicaManager.isListOffsetsTimestampUnsupported answers it, before the
// partition is looked up; the rest are no special timestamp at all
// (-6, KIP-1023, needs v11). (Kafka 4.x refuses -3 below v7 the same way;
// segfs answers it, see above.) v10 (KIP-1075) only adds a timeout for
// remote lookups, which no segfs topic makes: answered as v9, as Kafka 4.0.
// v0's legacy multi-offset form is not served. A partition named more
// than once in a request is INVALID_REQUEST at each of its entries, as in
// Kafka. CurrentLeaderEpoch (v4+) is checked as in Fetch
// (checkLeaderEpoch). The leader epoch answered (v4+) is Kafka's: the
// partition's current epoch with the log end (-1), the first cached
// epoch with the log start if it starts there or below (-2), and for a
// found record (-3, a timestamp) the epoch the leader-epoch cache gives
// its offset, which is its batch's (Kafka reads the batch's; the two
// differ only in a log whose batches' epochs go down, which no leader
// writes); -1 with no offset.
func init() { register(2, 1, 10, handleListOffsets) }

// Special timestamps of ListOffsets.
const (
	listLatest       = -1
	listEarliest     = -2
	listMaxTimestamp = -3
	// listEarliestLocal (KIP-405) and listLatestTiered (KIP-1005) are
	// tiered storage's, which segfs has none of.
	listEarliestLocal = -4
	listLatestTiered  = -5
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
			if !timestampServed(rp.Timestamp, h.version) {
				// Kafka checks this before it looks the partition up.
				sp.ErrorCode = kerr.UnsupportedVersion.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			sp.ErrorCode = c.s.listOffset(rt.Topic, rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp, req.IsolationLevel, &sp)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return c.send(h, resp)
}

// timestampServed reports whether ListOffsets at version serves ts: a time
// (>= 0), -1, -2 and -3 at every version, -4 from v8 and -5 from v9 (the
// versions that introduced them, Kafka's timestampMinSupportedVersion).
func timestampServed(ts int64, version int16) bool {
	switch ts {
	case listLatest, listEarliest, listMaxTimestamp:
		return true
	case listEarliestLocal:
		return version >= 8
	case listLatestTiered:
		return version >= 9
	}
	return ts >= 0
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
func (s *Server) listOffset(topic string, part, currentEpoch int32, ts int64, isolation int8, sp *kmsg.ListOffsetsResponseTopicPartition) int16 {
	p, err := s.store.Partition(topic, part)
	if err != nil {
		return errorCode(err)
	}
	if code := checkLeaderEpoch(p, currentEpoch); code != 0 {
		return code
	}
	// Kafka's Partition.fetchOffsetForTimestamp: read_committed sees the
	// log up to the last stable offset only.
	if isolation == 1 {
		lso := p.LastStableOffset()
		defer func() {
			if ts != listEarliest && sp.Offset >= lso {
				sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			}
			if ts == listLatest {
				sp.Offset, sp.LeaderEpoch = lso, p.LeaderEpoch()
			}
		}()
	}
	// The tiered-storage timestamps, as Kafka answers them for a log
	// without remote storage. (The deferred read_committed clamp above
	// sees ts as changed here: -4 is exempt from it as -2 is.)
	switch ts {
	case listEarliestLocal:
		// The local log is the whole log: Kafka's UnifiedLog answers -4
		// exactly as -2, and Partition.fetchOffsetForTimestamp treats
		// the two alike.
		ts = listEarliest
	case listLatestTiered:
		// Nothing is tiered: offset -1, timestamp -1, and leader epoch
		// -1 (Kafka's Optional.of(-1), not "unknown"), no error.
		sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
		return 0
	}
	switch {
	case ts == listLatest:
		sp.Offset = p.LogEndOffset()
		sp.LeaderEpoch = p.LeaderEpoch()
	case ts == listEarliest:
		sp.Offset = p.LogStartOffset()
		sp.LeaderEpoch = p.EarliestEpoch()
	case ts == listMaxTimestamp:
		maxTS, off, epoch, ok, err := p.MaxTimestampAt()
		if err != nil {
			return errorCode(err)
		}
		if ok {
			// The batch's own epoch, as Kafka answers: the offset may
			// be below the log start, where the epoch cache has none.
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = maxTS, off, epoch
		}
	default: // ts >= 0: handleListOffsets refused the other negatives
		off, recTs, ok, err := p.LookupTime(ts)
		if err != nil {
			return errorCode(err)
		}
		if ok {
			// Kafka answers with the found record's own timestamp.
			sp.Timestamp, sp.Offset = recTs, off
			sp.LeaderEpoch = p.EpochForOffset(off)
		}
	}
	return 0
}
