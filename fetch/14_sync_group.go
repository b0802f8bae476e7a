package fetch

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncGroup (key 14), versions 0-5.
//
// The leader sends every member's assignment (opaque bytes, computed by
// the client); each member's SyncGroup is held until the leader's has
// arrived, then answered with its own assignment (empty for a member the
// leader left out, as in Kafka). Errors as Kafka: UNKNOWN_MEMBER_ID,
// ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS (the group is rebalancing
// again, rejoin), FENCED_INSTANCE_ID (v3+, a newer member took the
// instance id), INCONSISTENT_GROUP_PROTOCOL (v5+, protocol type or name
// differ from the generation's, or either is missing: v5 made both
// mandatory, and Kafka's KafkaApis refuses a request without them before
// it looks at the group). v4 is flexible; v5 returns the protocol.
func init() { register(14, 0, 5, handleSyncGroup) }

func handleSyncGroup(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.SyncGroupRequest)
	if h.version >= 5 && (req.ProtocolType == nil || req.Protocol == nil) {
		// SyncGroupRequest.areMandatoryProtocolTypeAndNamePresent.
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode, resp.MemberAssignment = kerr.InconsistentGroupProtocol.Code, []byte{}
		return c.send(h, resp)
	}
	res, wait := c.s.groups.sync(req)
	if wait != nil {
		res = await(c, wait, syncResult{err: kerr.NotCoordinator.Code})
	}
	if res.err == 0 {
		// The generation's record is on disk before anyone holds an
		// assignment from it. If its write fails, the group has
		// rebalanced (groups.storeFailed) and every member waiting is
		// answered the write's error, as Kafka answers it.
		if err := c.s.groups.waitPersistType(req.Group, res.stored); err != nil {
			res = syncResult{err: offsetsWriteErrorCode(err)}
		}
	}
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	resp.ErrorCode = res.err
	resp.MemberAssignment = []byte{}
	if res.err == 0 {
		resp.ProtocolType, resp.Protocol = &res.protocolType, &res.protocol
		if res.assignment != nil {
			resp.MemberAssignment = res.assignment
		}
	}
	return c.send(h, resp)
}
