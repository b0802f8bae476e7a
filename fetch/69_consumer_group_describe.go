package fetch

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerGroupDescribe (key 69), versions 0-1.
//
// For admin tools (kafka-consumer-groups.sh --describe on a consumer
// group, kadm DescribeConsumerGroups): each KIP-848 group's state, group
// and assignment epochs, assignor, and members with their epochs,
// subscriptions, current and target assignments (topic IDs and names). A
// group that does not exist, or is a classic group, is GROUP_ID_NOT_FOUND
// with Kafka's message; an empty group id INVALID_GROUP_ID. Authorized
// operations, when asked, are every operation Kafka defines on a group,
// for a group answered without error, as Kafka answers without an
// authorizer (segfs has none).
// v1 adds each member's type: 1, a consumer-protocol member.
func init() { register(69, 0, 1, handleConsumerGroupDescribe) }

func handleConsumerGroupDescribe(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.ConsumerGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, name := range req.Groups {
		var d kmsg.ConsumerGroupDescribeResponseGroup
		if name == "" {
			d = kmsg.NewConsumerGroupDescribeResponseGroup()
			d.ErrorCode = kerr.InvalidGroupID.Code
		} else {
			d = c.s.groups.consumerDescribe(name)
		}
		d.AuthorizedOperations = math.MinInt32 // not provided
		if req.IncludeAuthorizedOperations && d.ErrorCode == 0 {
			d.AuthorizedOperations = groupOperations
		}
		resp.Groups = append(resp.Groups, d)
	}
	return c.send(h, resp)
}
