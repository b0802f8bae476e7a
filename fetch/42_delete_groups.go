package fetch

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteGroups (key 42), versions 0-2.
//
// For admin tools (kafka-consumer-groups.sh --delete, kadm DeleteGroups):
// deletes a group's membership state and committed offsets, durably,
// before answering. As Kafka: only a group without members can go
// (NON_EMPTY_GROUP otherwise), an unknown group is GROUP_ID_NOT_FOUND. The
// empty group id is a group name here (Kafka 4 refuses only a null one):
// simple commits may have given it offsets. A failed write of the
// offsets file is NOT_COORDINATOR (retriable; Kafka 4's answer,
// offsetsWriteErrorCode); the group and its offsets are then still
// there, in memory too. A group named more than once is deleted and
// answered once, as Kafka's handleDeleteGroupsRequest takes the names
// distinct (segfs answered the second GROUP_ID_NOT_FOUND). v2 is
// flexible.
func init() { register(42, 0, 2, handleDeleteGroups) }

func handleDeleteGroups(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	seen := map[string]bool{}
	for _, name := range req.Groups {
		if seen[name] {
			continue
		}
		seen[name] = true
		code, op := c.s.groups.deleteGroup(name)
		if op != nil {
			if err := c.s.offsets.wait(op); err != nil {
				c.s.log.Error("fetch: deleting committed offsets", "group", name, "err", err)
				code = offsetsWriteErrorCode(err)
			}
		}
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group, rg.ErrorCode = name, code
		resp.Groups = append(resp.Groups, rg)
	}
	return c.send(h, resp)
}
