package fetch

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit (key 8), versions 0-9.
//
// Stores offsets durably (offsets.go) before answering. A commit is
// checked against the group's membership as Kafka's
// ClassicGroup.validateOffsetCommit does (groups.go), and its offsets are
// staged in the same critical section, so a rebalance is either before it
// (and refuses it) or after it; the fsync follows outside the group lock.
// A member of a group with members commits with its member id and current
// generation (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID otherwise,
// REBALANCE_IN_PROGRESS between JoinGroup and SyncGroup; commits during
// PreparingRebalance are accepted, so members commit before rejoining).
// Into a group without members only "simple" commits go: generation -1,
// which is what clients with manual assignment send (librdkafka
// assign()+commit, franz-go without a group); as in Kafka, the member id
// and group instance id of such a commit are not checked: librdkafka
// sends its group.instance.id with every commit, joined or not. A commit
// that names a generation for a group that never had members gets
// UNKNOWN_MEMBER_ID when the group has committed offsets (it exists, with
// no members), else GROUP_ID_NOT_FOUND (v9+) or ILLEGAL_GENERATION (before
// v9), Kafka's OffsetMetadataManager answers. The empty group id is a
// group like any other (Kafka 4 refuses only a null one), so a simple
// commit to "" is stored (groups.go validateCommit). v0's
// ZooKeeper storage is treated like the rest. Offsets expire as in Kafka
// (expiry.go): a retention after their commit, or after their group
// became Empty; v1's explicit commit timestamp is the commit time they
// count from, and v2-v4's retention time (other than -1, the broker's)
// sets an expiry of its own, now + that time. Partitions must exist
// (UNKNOWN_TOPIC_OR_PARTITION, as Kafka checks), metadata is capped at
// Kafka's offset.metadata.max.bytes (OFFSET_METADATA_TOO_LARGE). A member
// of a KIP-848 consumer group (consumer_groups.go) commits with its member
// epoch in the generation field: UNKNOWN_MEMBER_ID for a member the group
// does not have, STALE_MEMBER_EPOCH for any other epoch than its current
// one, UNSUPPORTED_VERSION below v9 (Kafka's ConsumerGroup rules); a
// commit with a negative epoch goes into such a group only while it has
// no members. v10 names topics by ID and is not served.
func init() { register(8, 0, 9, handleOffsetCommit) }

// maxOffsetMetadata is Kafka's offset.metadata.max.bytes default.
const maxOffsetMetadata = 4096

func handleOffsetCommit(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)

	generation := req.Generation
	if h.version == 0 {
		generation = -1 // v0 has none: a simple commit
	}

	// Per-partition checks first, outside the group lock.
	now := c.s.now().UnixMilli()
	var expire int64 // 0: the broker's retention
	if h.version >= 2 && h.version <= 4 && req.RetentionTimeMillis != -1 {
		// Kafka's expireTimestampMs: now + retention, whatever its sign
		// (a negative one has expired already); saturated, and at
		// least 1, since 0 means none.
		expire = max(satAdd(now, req.RetentionTimeMillis), 1)
	}
	var entries []commitEntry
	codes := make([][]int16, len(req.Topics))
	for i, rt := range req.Topics {
		codes[i] = make([]int16, len(rt.Partitions))
		for j, rp := range rt.Partitions {
			code := c.s.checkCommit(rt.Topic, &rp)
			codes[i][j] = code
			if code != 0 {
				continue
			}
			meta := ""
			if rp.Metadata != nil {
				meta = *rp.Metadata
			}
			commitTime := now
			if h.version == 1 && rp.Timestamp != -1 {
				commitTime = max(rp.Timestamp, commitTimeUnknown+1) // commitTimeUnknown is no time
			}
			entries = append(entries, commitEntry{
				topic:     rt.Topic,
				partition: rp.Partition,
				offset: committedOffset{
					Offset:       rp.Offset,
					LeaderEpoch:  rp.LeaderEpoch,
					Metadata:     meta,
					CommitTimeMs: commitTime,
					ExpireTimeMs: expire,
				},
			})
		}
	}

	// Validation against the group and staging of the offsets happen in
	// one critical section of the coordinator (groups.commit), so a
	// rebalance is either before the commit (which is then refused) or
	// after it; the durable write follows outside the lock.
	groupErr, op := c.s.groups.commit(commitRequest{
		group:      req.Group,
		generation: generation,
		memberID:   req.MemberID,
		instanceID: req.InstanceID,
		version:    h.version,
		entries:    entries,
	})
	writeErr := int16(0)
	if op != nil {
		if err := c.s.offsets.wait(op); err != nil {
			c.s.log.Error("fetch: storing committed offsets", "group", req.Group, "err", err)
			writeErr = offsetsWriteErrorCode(err) // retriable
		}
	}
	// A partition that does not exist keeps its error: Kafka's
	// handleOffsetCommitRequest answers it before the group coordinator
	// sees the commit, whose error goes to the rest (metadata too large
	// included: the coordinator checks the group first).
	for i := range codes {
		for j := range codes[i] {
			if groupErr != 0 && codes[i][j] != kerr.UnknownTopicOrPartition.Code {
				codes[i][j] = groupErr
			}
		}
	}
	for i, rt := range req.Topics {
		st := kmsg.NewOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		for j, rp := range rt.Partitions {
			sp := kmsg.NewOffsetCommitResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.ErrorCode = codes[i][j]
			if sp.ErrorCode == 0 {
				sp.ErrorCode = writeErr
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return c.send(h, resp)
}

// satAdd is a+b, saturated at the int64 limits.
func satAdd(a, b int64) int64 {
	switch {
	case b > 0 && a > math.MaxInt64-b:
		return math.MaxInt64
	case b < 0 && a < math.MinInt64-b:
		return math.MinInt64
	}
	return a + b
}

// checkCommit validates one partition of a commit.
func (s *Server) checkCommit(topic string, rp *kmsg.OffsetCommitRequestTopicPartition) int16 {
	if _, err := s.store.Partition(topic, rp.Partition); err != nil {
		return errorCode(err)
	}
	if rp.Metadata != nil && len(*rp.Metadata) > maxOffsetMetadata {
		return kerr.OffsetMetadataTooLarge.Code
	}
	return 0
}
