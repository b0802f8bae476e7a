package fetch

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeCluster (key 60), versions 0-2.
//
// The cluster Metadata describes: its id (Config.ClusterID), node 0 as
// controller and as the one broker, at the advertised address. Asked for
// controllers (v1+ endpoint type 2), a broker answers
// MISMATCHED_ENDPOINT_TYPE, as Kafka's brokers do: only a KRaft
// controller listener serves that; an unknown type is
// UNSUPPORTED_ENDPOINT_TYPE. No broker is fenced (v2). The cluster
// authorized operations (when asked) are every operation Kafka defines on
// a cluster: segfs has no authorizer, and Kafka without one allows all.
func init() { register(60, 0, 2, handleDescribeCluster) }

// clusterOperations is Kafka's AclEntry.supportedOperations(CLUSTER) as
// the bit field its AuthHelper.authorizedOperations answers without an
// authorizer. It had bit 4 (WRITE) for CREATE, whose code is 5, so admin
// clients listed WRITE and no CREATE.
var clusterOperations = aclOperations(kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction,
	kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite,
	kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe)

// topicOperations and groupOperations are Kafka's
// AclEntry.supportedOperations(TOPIC) and (GROUP), which Metadata,
// DescribeGroups and ConsumerGroupDescribe answer when asked for
// authorized operations, as Kafka without an authorizer does.
var (
	topicOperations = aclOperations(kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate,
		kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs)
	groupOperations = aclOperations(kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs)
)

// aclOperations is the authorized operations bit field of the protocol
// (Kafka's Utils.to32BitField): bit n set for the operation of code n.
func aclOperations(ops ...kmsg.ACLOperation) int32 {
	var bits int32
	for _, op := range ops {
		bits |= 1 << op
	}
	return bits
}

func handleDescribeCluster(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	// Kafka's AuthHelper.computeDescribeClusterResponse on a broker: a
	// request for controllers (2) is MISMATCHED_ENDPOINT_TYPE, any type
	// but 1 and 2 UNSUPPORTED_ENDPOINT_TYPE, each with Kafka's message
	// and nothing else (the endpoint type is the schema's default, 1).
	// segfs answered both UNSUPPORTED_ENDPOINT_TYPE with its own message
	// and echoed the type asked for. (v0 has no endpoint type: 1.)
	switch req.EndpointType {
	case 1:
	case 2:
		resp.ErrorCode = kerr.MismatchedEndpointType.Code
		resp.ErrorMessage = kmsg.StringPtr("The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER")
		return c.send(h, resp)
	default:
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Unsupported endpoint type %d", req.EndpointType))
		return c.send(h, resp)
	}
	resp.ClusterID = c.s.cfg.ClusterID
	resp.ControllerID = nodeID
	host, port := c.advertised()
	b := kmsg.NewDescribeClusterResponseBroker()
	b.NodeID, b.Host, b.Port = nodeID, host, port
	resp.Brokers = []kmsg.DescribeClusterResponseBroker{b}
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = clusterOperations
	}
	return c.send(h, resp)
}
