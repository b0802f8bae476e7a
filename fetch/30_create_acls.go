package fetch

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CreateAcls (key 30), versions 1-3: `kafka-acls.sh --add`, kadm's
// CreateACLs. segfs has no authorizer, so every creation is refused with
// SECURITY_DISABLED, as Kafka refuses it without one (see
// 29_describe_acls.go). v0 is not served (KIP-896).
func init() { register(30, 1, 3, handleCreateACLs) }

func handleCreateACLs(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	for range req.Creations {
		res := kmsg.NewCreateACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = kerr.SecurityDisabled.Code, kmsg.StringPtr(noAuthorizerMsg)
		resp.Results = append(resp.Results, res)
	}
	return c.send(h, resp)
}
