package tests

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The ACL admin calls (`kafka-acls.sh --list/--add/--remove`, kadm's
// DescribeACLs, CreateACLs, DeleteACLs, the ACL pages of UIs), sent by
// franz-go as an admin client does, get the answer of a Kafka broker
// without an authorizer: SECURITY_DISABLED, with Kafka's message. They
// used to be unadvertised, so the client refused them before sending
// ("broker is too old") and tools blamed the broker's version.
func TestKafkaACLsSecurityDisabled(t *testing.T) {
	srv := kafkaServe(t, "")
	cl := kafkaClient(t, srv.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	dr := kmsg.NewPtrDescribeACLsRequest()
	dr.ResourceType = kmsg.ACLResourceTypeAny
	dr.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
	dr.Operation = kmsg.ACLOperationAny
	dr.PermissionType = kmsg.ACLPermissionTypeAny
	dresp, err := dr.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("DescribeAcls: %v", err)
	}
	if dresp.ErrorCode != kerr.SecurityDisabled.Code || dresp.ErrorMessage == nil || len(dresp.Resources) != 0 {
		t.Fatalf("DescribeAcls: error %v %v, resources %+v; want SECURITY_DISABLED", kerr.ErrorForCode(dresp.ErrorCode), dresp.ErrorMessage, dresp.Resources)
	}

	cr := kmsg.NewPtrCreateACLsRequest()
	for _, topic := range []string{"orders", "payments"} {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, topic, kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host = "User:alice", "*"
		c.Operation, c.PermissionType = kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		cr.Creations = append(cr.Creations, c)
	}
	cresp, err := cr.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("CreateAcls: %v", err)
	}
	if len(cresp.Results) != 2 {
		t.Fatalf("CreateAcls: %d results for 2 creations", len(cresp.Results))
	}
	for i, res := range cresp.Results {
		if res.ErrorCode != kerr.SecurityDisabled.Code || res.ErrorMessage == nil {
			t.Fatalf("CreateAcls result %d: %v %v, want SECURITY_DISABLED", i, kerr.ErrorForCode(res.ErrorCode), res.ErrorMessage)
		}
	}

	del := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	del.Filters = append(del.Filters, f)
	delResp, err := del.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("DeleteAcls: %v", err)
	}
	if len(delResp.Results) != 1 || delResp.Results[0].ErrorCode != kerr.SecurityDisabled.Code || len(delResp.Results[0].MatchingACLs) != 0 {
		t.Fatalf("DeleteAcls: %+v, want one SECURITY_DISABLED result", delResp.Results)
	}
}
