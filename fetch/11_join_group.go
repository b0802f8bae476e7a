package fetch

import (
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinGroup (key 11), versions 0-9.
//
// Classic group membership (groups.go). v0 has no rebalance timeout: the
// session timeout serves as both, as in Kafka. v4+ (KIP-394): a new
// dynamic member first gets MEMBER_ID_REQUIRED with its member id and
// joins again with it. v5 adds group.instance.id (static members, KIP-345):
// a rejoin with the same instance id replaces the old member, without a
// rebalance when the group is Stable and its protocol stays (groups.go
// replaceStatic). v6 is flexible, v7 returns the protocol type, v8 adds a
// reason (ignored), v9 SkipAssignment (KIP-814): set only for a static
// leader that rejoined a Stable group, which then gets the members but
// keeps the current assignment. The answer is held until the rebalance
// completes; meanwhile only this connection waits.
func init() { register(11, 0, 9, handleJoinGroup) }

func handleJoinGroup(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.JoinGroupRequest)
	rebalance := req.RebalanceTimeoutMillis
	if h.version == 0 {
		rebalance = req.SessionTimeoutMillis
	}
	host, _, err := net.SplitHostPort(c.remote)
	if err != nil {
		host = c.remote
	}
	res, wait := c.s.groups.join(joinRequest{
		group:              req.Group,
		memberID:           req.MemberID,
		instanceID:         req.InstanceID,
		clientID:           h.clientID,
		host:               "/" + host,
		session:            time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		rebalance:          time.Duration(max(rebalance, 0)) * time.Millisecond,
		protocolType:       req.ProtocolType,
		protocols:          req.Protocols,
		requireKnownMember: h.version >= 4,
		skipAssignment:     h.version >= 9,
	})
	if wait != nil {
		res = await(c, wait, errJoin(kerr.NotCoordinator.Code, req.MemberID))
	}
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.ErrorCode, resp.Generation, resp.MemberID = res.err, res.generation, res.memberID
	if res.err == 0 {
		resp.ProtocolType, resp.Protocol = &res.protocolType, &res.protocol
		resp.LeaderID, resp.Members = res.leader, res.members
		resp.SkipAssignment = res.skipAssignment
	}
	return c.send(h, resp)
}

// await waits for the answer to a held group request. Shutdown answers it
// with shutdown (NOT_COORDINATOR, Kafka's answer when a coordinator gives
// a group up), so clients go and find the coordinator again.
func await[T any](c *conn, ch <-chan T, shutdown T) T {
	select {
	case r := <-ch:
		return r
	case <-c.s.done:
		return shutdown
	}
}
