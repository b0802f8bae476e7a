package fetch

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeAcls (key 29), versions 1-3: Admin.describeAcls, which
// `kafka-acls.sh --list`, kadm's DescribeACLs and the ACL pages of UIs
// (AKHQ, kafka-ui) use, and which UIs call to learn whether the cluster
// enforces ACLs at all.
//
// segfs has no authorizer: every client may do everything, as on a Kafka
// broker without authorizer.class.name. Kafka's AclApis answers the three
// ACL APIs of such a broker with SECURITY_DISABLED, and so does segfs:
// DescribeAcls with that code, Kafka's message ("No Authorizer is
// configured on the broker") and no resources; CreateAcls
// (30_create_acls.go) and DeleteAcls (31_delete_acls.go) with the code and
// "No Authorizer is configured." for each creation or filter, as their
// getErrorResponse builds it. Nothing is stored. Before these keys were
// listed, admin clients refused the calls as unsupported, which tools
// report as an old broker rather than as "no ACLs here". v0 is not served:
// Kafka 4.0 removed it (KIP-896).
func init() { register(29, 1, 3, handleDescribeACLs) }

func handleDescribeACLs(c *conn, h *reqHeader, r kmsg.Request) error {
	resp := r.(*kmsg.DescribeACLsRequest).ResponseKind().(*kmsg.DescribeACLsResponse)
	resp.ErrorCode = kerr.SecurityDisabled.Code
	resp.ErrorMessage = kmsg.StringPtr("No Authorizer is configured on the broker")
	resp.Resources = []kmsg.DescribeACLsResponseResource{}
	return c.send(h, resp)
}

// noAuthorizerMsg is Kafka's SecurityDisabledException message for
// CreateAcls and DeleteAcls.
const noAuthorizerMsg = "No Authorizer is configured."
