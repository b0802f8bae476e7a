package fetch

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ElectLeaders (key 43), versions 0-2: Admin.electLeaders, which
// `kafka-leader-election.sh` and kadm's ElectLeaders use.
//
// Every partition has one replica, node 0, which is its leader, its
// preferred leader and its only in-sync replica, so there is never an
// election to hold. The answer is the one Kafka's controller
// (ReplicationControlManager.electLeaders) gives a cluster in that state:
// each partition named gets ELECTION_NOT_NEEDED, for a preferred election
// (type 0, the only one before v1) as for an unclean one (type 1), with
// Kafka's message; a topic or partition that does not exist gets
// UNKNOWN_TOPIC_OR_PARTITION with the controller's "No such topic as T" or
// "No such partition as T-P". Null topics ask for every partition: Kafka
// then lists every topic but leaves out the partitions whose election was
// not needed, so each topic comes with an empty list. Partitions are
// answered in request order, a partition named twice twice. Any other
// election type is INVALID_REQUEST for the whole request, as Kafka's
// ElectLeadersRequest.getErrorResponse answers the controller's
// InvalidRequestException: the top-level code (v1+) and every partition
// named. Without this key admin clients refused the call ("broker is too
// old") where Kafka says there is nothing to do.
func init() { register(43, 0, 2, handleElectLeaders) }

const (
	electPreferred = 0
	electUnclean   = 1
)

func handleElectLeaders(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	if h.version >= 1 && req.ElectionType != electPreferred && req.ElectionType != electUnclean {
		code := kerr.InvalidRequest.Code
		msg := fmt.Sprintf("Unknown election type %d", req.ElectionType)
		resp.ErrorCode = code
		for _, rt := range req.Topics {
			st := kmsg.NewElectLeadersResponseTopic()
			st.Topic = rt.Topic
			for _, p := range rt.Partitions {
				sp := kmsg.NewElectLeadersResponseTopicPartition()
				sp.Partition, sp.ErrorCode, sp.ErrorMessage = p, code, kmsg.StringPtr(msg)
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return c.send(h, resp)
	}
	if req.Topics == nil {
		for _, t := range c.s.store.Topics() {
			st := kmsg.NewElectLeadersResponseTopic()
			st.Topic = t.Name()
			st.Partitions = []kmsg.ElectLeadersResponseTopicPartition{}
			resp.Topics = append(resp.Topics, st)
		}
		return c.send(h, resp)
	}
	for _, rt := range req.Topics {
		st := kmsg.NewElectLeadersResponseTopic()
		st.Topic = rt.Topic
		t, terr := c.s.store.Topic(rt.Topic)
		for _, p := range rt.Partitions {
			sp := kmsg.NewElectLeadersResponseTopicPartition()
			sp.Partition = p
			switch {
			case terr != nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				sp.ErrorMessage = kmsg.StringPtr("No such topic as " + rt.Topic)
			case p < 0 || int(p) >= t.PartitionCount():
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				sp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("No such partition as %s-%d", rt.Topic, p))
			default:
				sp.ErrorCode = kerr.ElectionNotNeeded.Code
				sp.ErrorMessage = kmsg.StringPtr("Leader election not needed for topic partition.")
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return c.send(h, resp)
}
