package fetch

import "github.com/twmb/franz-go/pkg/kmsg"

// LeaveGroup (key 13), versions 0-5.
//
// Removes members and rebalances the rest. v0-v2 name one member id and
// answer with one error; v3+ (KIP-345) name a batch of members, each by
// member id or group instance id, and answer per member (UNKNOWN_MEMBER_ID,
// or FENCED_INSTANCE_ID when the instance id belongs to another member
// id). v4 is flexible, v5 adds a reason (ignored).
func init() { register(13, 0, 5, handleLeaveGroup) }

func handleLeaveGroup(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.LeaveGroupRequest)
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	var ms []leaveMember
	if h.version < 3 {
		ms = []leaveMember{{id: req.MemberID}}
	} else {
		for _, m := range req.Members {
			ms = append(ms, leaveMember{id: m.MemberID, instanceID: m.InstanceID})
		}
	}
	code, codes := c.s.groups.leave(req.Group, ms)
	resp.ErrorCode = code
	if h.version < 3 {
		if code == 0 && len(codes) == 1 {
			resp.ErrorCode = codes[0]
		}
		return c.send(h, resp)
	}
	if code == 0 {
		for i, m := range req.Members {
			rm := kmsg.NewLeaveGroupResponseMember()
			rm.MemberID, rm.InstanceID, rm.ErrorCode = m.MemberID, m.InstanceID, codes[i]
			resp.Members = append(resp.Members, rm)
		}
	}
	return c.send(h, resp)
}
