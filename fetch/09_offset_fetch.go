package fetch

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetFetch (key 9), versions 0-9.
//
// Returns the offsets stored by OffsetCommit. A partition, topic or group
// without a commit gets offset -1 and no error — for unknown groups too,
// as Kafka >= 2.5 does and librdkafka relies on (P9; kfake differs). A
// null topic list (v2+) asks for every committed partition of the group.
// v8+ asks for several groups at once. v9 names the member (KIP-848): a
// request with a member id or epoch for a consumer group must come from a
// member at its current epoch, else the group gets STALE_MEMBER_EPOCH or
// UNKNOWN_MEMBER_ID, as in Kafka. RequireStable (v7+) only matters
// with transactions, which are not served. v10 names topics by ID and is
// not served.
func init() { register(9, 0, 9, handleOffsetFetch) }

func handleOffsetFetch(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	// Commits and deletions acknowledged, or being written, before this
	// request are visible (offsets.go).
	c.s.offsets.settle()
	if h.version < 8 {
		var topics []kmsg.OffsetFetchRequestGroupTopic
		for _, t := range req.Topics {
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic, gt.Partitions = t.Topic, t.Partitions
			topics = append(topics, gt)
		}
		if req.Topics == nil {
			topics = nil
		}
		for _, gt := range c.s.offsetFetchGroup(req.Group, topics) {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = gt.Topic
			for _, gp := range gt.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode =
					gp.Partition, gp.Offset, gp.LeaderEpoch, gp.Metadata, gp.ErrorCode
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return c.send(h, resp)
	}
	for _, g := range req.Groups {
		rg := kmsg.NewOffsetFetchResponseGroup()
		rg.Group = g.Group
		if h.version >= 9 {
			// A member of a consumer group fetches at its current
			// member epoch (STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID).
			if rg.ErrorCode = c.s.groups.validateConsumerFetch(g.Group, g.MemberID, g.MemberEpoch); rg.ErrorCode != 0 {
				rg.Topics = []kmsg.OffsetFetchResponseGroupTopic{}
				resp.Groups = append(resp.Groups, rg)
				continue
			}
		}
		rg.Topics = c.s.offsetFetchGroup(g.Group, g.Topics)
		resp.Groups = append(resp.Groups, rg)
	}
	return c.send(h, resp)
}

// offsetFetchGroup answers for one group; topics == nil means all topics
// the group committed.
func (s *Server) offsetFetchGroup(group string, topics []kmsg.OffsetFetchRequestGroupTopic) []kmsg.OffsetFetchResponseGroupTopic {
	if topics == nil {
		committed := s.offsets.topics(group)
		for _, name := range slices.Sorted(maps.Keys(committed)) {
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic, gt.Partitions = name, committed[name]
			topics = append(topics, gt)
		}
	}
	out := make([]kmsg.OffsetFetchResponseGroupTopic, 0, len(topics))
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition = p
			rp.Offset, rp.LeaderEpoch = -1, -1
			meta := ""
			if co, ok := s.offsets.get(group, t.Topic, p); ok {
				rp.Offset, rp.LeaderEpoch, meta = co.Offset, co.LeaderEpoch, co.Metadata
			}
			rp.Metadata = &meta
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}
