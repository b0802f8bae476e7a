package fetch

import "github.com/twmb/franz-go/pkg/kmsg"

// DescribeGroups (key 15), versions 0-5.
//
// For admin tools (kafka-consumer-groups.sh --describe, kadm): each
// group's state, protocol and members (groups.go describe). An unknown
// group is answered, as Kafka before v6 does, with state Dead and no
// error, and so is a KIP-848 consumer group, which is not a classic group
// (Kafka's describeGroups); ConsumerGroupDescribe describes it. Authorized operations (v3+), when asked, are every operation
// Kafka defines on a group, as Kafka answers without an authorizer (segfs
// has none). v5 is flexible; v6
// (GROUP_ID_NOT_FOUND for unknown groups) is not served.
func init() { register(15, 0, 5, handleDescribeGroups) }

func handleDescribeGroups(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	c.s.offsets.settle()
	for _, name := range req.Groups {
		d := c.s.groups.describe(name)
		if h.version >= 3 && req.IncludeAuthorizedOperations && d.ErrorCode == 0 {
			d.AuthorizedOperations = groupOperations
		}
		resp.Groups = append(resp.Groups, d)
	}
	return c.send(h, resp)
}
