package fetch

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeCluster (key 60), versions 0-2.
//
// The cluster Metadata describes: its id (Config.ClusterID), node 0 as
// controller and as the one broker, at the advertised address. Asked for
// controllers (v1+ endpoint type 2), a broker answers
// UNSUPPORTED_ENDPOINT_TYPE, as Kafka's brokers do: only a KRaft
// controller listener serves that. No broker is fenced (v2). The cluster
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
	if h.version >= 1 {
		resp.EndpointType = req.EndpointType
		if req.EndpointType != 1 {
			resp.ErrorCode = kerr.UnsupportedEndpointType.Code
			resp.ErrorMessage = kmsg.StringPtr("The request was sent to a broker, which describes brokers only (endpoint type 1).")
			return c.send(h, resp)
		}
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
