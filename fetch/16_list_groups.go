package fetch

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListGroups (key 16), versions 0-5.
//
// Every group with members or committed offsets (a group that only
// commits offsets is listed with an empty protocol type, as in Kafka).
// v3 is flexible; v4 filters by state (case-insensitive, as Kafka); v5
// gives each group's type, "classic" or "consumer" (KIP-848; protocol
// type "consumer", states Empty, Assigning, Reconciling, Stable), and
// filters by type (case-insensitive).
func init() { register(16, 0, 5, handleListGroups) }

func handleListGroups(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	c.s.offsets.settle()
	for _, g := range c.s.groups.list() {
		if len(req.StatesFilter) > 0 && !slices.ContainsFunc(req.StatesFilter, func(s string) bool { return strings.EqualFold(s, g.GroupState) }) {
			continue
		}
		if len(req.TypesFilter) > 0 && !slices.ContainsFunc(req.TypesFilter, func(s string) bool { return strings.EqualFold(s, g.GroupType) }) {
			continue
		}
		resp.Groups = append(resp.Groups, g)
	}
	return c.send(h, resp)
}
