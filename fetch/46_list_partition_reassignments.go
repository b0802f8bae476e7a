package fetch

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListPartitionReassignments (key 46), version 0:
// Admin.listPartitionReassignments, which `kafka-reassign-partitions.sh
// --list` and `--verify`, kadm's ListPartitionReassignments and UIs use.
//
// A single node never has a reassignment in progress (the only target
// AlterPartitionReassignments accepts is the current one, and it completes
// at once), so the answer is the one Kafka's
// controller (ReplicationControlManager.listPartitionReassignments) gives
// when none is ongoing: no error, no message and no topics, whether all
// topics are asked for (null) or some are, known or not (the controller
// skips the ones that are not reassigning, and unknown names silently).
// Without this key admin clients refused the call ("broker is too old").
func init() { register(46, 0, 0, handleListPartitionReassignments) }

func handleListPartitionReassignments(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	resp.Topics = []kmsg.ListPartitionReassignmentsResponseTopic{}
	return c.send(h, resp)
}
