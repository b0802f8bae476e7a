package fetch

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeUserScramCredentials (key 50), version 0:
// Admin.describeUserScramCredentials, which `kafka-configs.sh --describe
// --entity-type users` and kadm's DescribeUserSCRAMs use.
//
// segfs authenticates no one and stores no SCRAM credentials, so it
// answers as Kafka's ScramImage.describe does for a cluster without any:
// all users (null or empty list) is an empty result; each user named gets
// RESOURCE_NOT_FOUND ("Attempt to describe a user credential that does
// not exist: NAME"), and a user named more than once one
// DUPLICATE_RESOURCE result ("Cannot describe SCRAM credentials for the
// same user twice in a single request: NAME"). Results come in the order
// users are first named (Kafka's is its hash map's). Before this key was
// listed, admin clients refused the call as unsupported.
func init() { register(50, 0, 0, handleDescribeUserSCRAMCredentials) }

func handleDescribeUserSCRAMCredentials(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	resp.Results = []kmsg.DescribeUserSCRAMCredentialsResponseResult{}
	count := map[string]int{}
	var order []string
	for _, u := range req.Users {
		if count[u.Name] == 0 {
			order = append(order, u.Name)
		}
		count[u.Name]++
	}
	for _, name := range order {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = name
		if count[name] > 1 {
			res.ErrorCode = kerr.DuplicateResource.Code
			res.ErrorMessage = kmsg.StringPtr("Cannot describe SCRAM credentials for the same user twice in a single request: " + name)
		} else {
			res.ErrorCode = kerr.ResourceNotFound.Code
			res.ErrorMessage = kmsg.StringPtr("Attempt to describe a user credential that does not exist: " + name)
		}
		resp.Results = append(resp.Results, res)
	}
	return c.send(h, resp)
}
