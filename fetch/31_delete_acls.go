package fetch

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteAcls (key 31), versions 1-3: `kafka-acls.sh --remove`, kadm's
// DeleteACLs. segfs has no authorizer, so every filter is answered with
// SECURITY_DISABLED and no matching ACLs, as Kafka answers without one
// (see 29_describe_acls.go). v0 is not served (KIP-896).
func init() { register(31, 1, 3, handleDeleteACLs) }

func handleDeleteACLs(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	for range req.Filters {
		res := kmsg.NewDeleteACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = kerr.SecurityDisabled.Code, kmsg.StringPtr(noAuthorizerMsg)
		res.MatchingACLs = []kmsg.DeleteACLsResponseResultMatchingACL{}
		resp.Results = append(resp.Results, res)
	}
	return c.send(h, resp)
}
