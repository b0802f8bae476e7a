package fetch

import "github.com/twmb/franz-go/pkg/kmsg"

// Heartbeat (key 12), versions 0-4.
//
// Keeps a member alive: a member without a heartbeat (or JoinGroup,
// SyncGroup, OffsetCommit) for its session timeout is removed and the
// group rebalances. REBALANCE_IN_PROGRESS tells the member to rejoin;
// UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION and (v3+) FENCED_INSTANCE_ID as in
// Kafka. v4 is flexible.
func init() { register(12, 0, 4, handleHeartbeat) }

func handleHeartbeat(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.HeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	resp.ErrorCode = c.s.groups.heartbeat(req)
	return c.send(h, resp)
}
