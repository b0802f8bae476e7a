package fetch

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterPartitionReassignments (key 45), versions 0-1:
// Admin.alterPartitionReassignments, which `kafka-reassign-partitions.sh
// --execute` and `--cancel` and kadm's AlterPartitionAssignments use.
//
// Every partition has the one replica node 0 and can have no other, so
// segfs answers as Kafka's controller
// (ReplicationControlManager.alterPartitionReassignment) answers on a
// single-broker cluster: a target of [0], the current assignment (what
// `--generate` proposes), succeeds and changes nothing; a target naming
// another broker, none or one twice is INVALID_REPLICA_ASSIGNMENT with the
// message CreateTopics gives (checkReplicas); a cancellation (null
// replicas) is NO_REASSIGNMENT_IN_PROGRESS, without a message as Kafka's
// ApiError drops one equal to the code's own; an unknown topic or
// partition is UNKNOWN_TOPIC_OR_PARTITION with the controller's "Unable to
// find a topic named T." or "Unable to find partition T:P.". Entries are
// answered in request order. v1 echoes allow_replication_factor_change
// (KIP-860), which cannot matter: every valid target keeps one replica.
// No reassignment is ever in progress, as ListPartitionReassignments
// (46_list_partition_reassignments.go) says.
func init() { register(45, 0, 1, handleAlterPartitionReassignments) }

func handleAlterPartitionReassignments(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		st.Topic = rt.Topic
		t, terr := c.s.store.Topic(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			sp.Partition = rp.Partition
			var msg string
			switch {
			case terr != nil:
				sp.ErrorCode, msg = kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("Unable to find a topic named %s.", rt.Topic)
			case rp.Partition < 0 || int(rp.Partition) >= t.PartitionCount():
				sp.ErrorCode, msg = kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("Unable to find partition %s:%d.", rt.Topic, rp.Partition)
			case rp.Replicas == nil:
				sp.ErrorCode = kerr.NoReassignmentInProgress.Code
			default:
				sp.ErrorCode, msg = checkReplicas(rp.Replicas)
			}
			if msg != "" {
				sp.ErrorMessage = kmsg.StringPtr(msg)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return c.send(h, resp)
}
