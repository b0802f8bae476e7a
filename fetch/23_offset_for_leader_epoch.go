package fetch

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/segfs/segfs/logstore"
)

// OffsetForLeaderEpoch (key 23), versions 2-4.
//
// KIP-320's truncation check: a consumer that resumes at an offset it
// committed after a record of epoch E asks for the end of E, and an end
// below its offset means the log it had read was truncated (a power cut
// took its unflushed tail) and the offsets from there on were handed out
// again. Per partition the answer is Kafka's leader's
// (Partition.lastOffsetForLeaderEpoch): CurrentLeaderEpoch checked as
// everywhere (checkLeaderEpoch), then from the leader-epoch cache the
// largest epoch at or below the one asked and where it ends: the start of
// the next epoch, or the log end for the current one
// (logstore.Partition.EndOffsetForEpoch). An epoch above every epoch known
// (or -1) answers UNDEFINED, -1 and -1, with no error; one below the first
// cached epoch answers itself and the first entry's start. Each open of a
// partition is a new leader epoch (logstore/epochs.go).
//
// v0-v1 are not served: they predate KIP-320 (no current leader epoch, v0
// no epoch in the answer), and Kafka 4 removed them. ReplicaID (v3+) is
// not checked: there are no followers, and Kafka answers a consumer (-1)
// and a debug client (-2) the same way.
func init() { register(23, 2, 4, handleOffsetForLeaderEpoch) }

func handleOffsetForLeaderEpoch(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			p, err := c.s.store.Partition(rt.Topic, rp.Partition)
			switch {
			case err != nil:
				sp.ErrorCode = errorCode(err)
			default:
				if sp.ErrorCode = checkLeaderEpoch(p, rp.CurrentLeaderEpoch); sp.ErrorCode == 0 {
					if e, end, ok := p.EndOffsetForEpoch(rp.LeaderEpoch); ok {
						sp.LeaderEpoch, sp.EndOffset = e, end
					}
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return c.send(h, resp)
}

// checkLeaderEpoch is Kafka's Partition.checkCurrentLeaderEpoch for the
// CurrentLeaderEpoch of a Fetch, ListOffsets or OffsetForLeaderEpoch
// partition: -1 (unknown) passes; an epoch above the partition's is
// UNKNOWN_LEADER_EPOCH (the client saw a leadership this server has not
// started), one below it FENCED_LEADER_EPOCH (the client's metadata is
// from before the partition was last opened: it refreshes and retries).
func checkLeaderEpoch(p *logstore.Partition, current int32) int16 {
	if current == -1 {
		return 0
	}
	switch e := p.LeaderEpoch(); {
	case current > e:
		return kerr.UnknownLeaderEpoch.Code
	case current < e:
		return kerr.FencedLeaderEpoch.Code
	}
	return 0
}
