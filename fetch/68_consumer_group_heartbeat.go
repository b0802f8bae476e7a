package fetch

import (
	"crypto/rand"
	"encoding/base64"
	"net"
	"regexp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerGroupHeartbeat (key 68), versions 0-1.
//
// KIP-848 consumer groups (consumer_groups.go): a member joins with epoch
// 0, heartbeats with its member epoch, gets its assignment (topic IDs and
// partitions) from the broker, acknowledges it by listing what it owns,
// and leaves with epoch -1 (-2: a static member leaving for now). Kafka's
// request checks answer INVALID_REQUEST with Kafka's messages: an empty
// member id (v1+, where the client generates it; v0 gets one from the
// server on its first heartbeat), an empty instance or rack id, a join
// without rebalance timeout or subscription or with owned partitions, epoch
// -2 without instance id, an epoch below -2. An empty group id is
// INVALID_GROUP_ID, an unknown ServerAssignor UNSUPPORTED_ASSIGNOR, a
// regex that does not compile INVALID_REGULAR_EXPRESSION. v1 adds
// SubscribedTopicRegex, matched against whole topic names (Go's RE2 syntax,
// Kafka's is RE2/J), and is the version franz-go and the Java consumer
// use.
func init() { register(68, 0, 1, handleConsumerGroupHeartbeat) }

func handleConsumerGroupHeartbeat(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.ConsumerGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	res := c.consumerGroupHeartbeat(h, req)
	resp.ErrorCode = res.err
	if res.err != 0 {
		if res.msg != "" {
			resp.ErrorMessage = &res.msg
		}
		return c.send(h, resp)
	}
	resp.MemberID = &res.memberID
	resp.MemberEpoch = res.epoch
	resp.HeartbeatIntervalMillis = int32(c.s.groups.cgInterval.Milliseconds())
	if res.send {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
		ids, parts := res.assignment.byTopic()
		for _, id := range ids {
			t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			t.TopicID, t.Partitions = id, parts[id]
			a.Topics = append(a.Topics, t)
		}
		resp.Assignment = &a
	}
	return c.send(h, resp)
}

// consumerGroupHeartbeat checks the request (Kafka's
// throwIfConsumerGroupHeartbeatRequestIsInvalid) and hands it to the
// coordinator.
func (c *conn) consumerGroupHeartbeat(h *reqHeader, req *kmsg.ConsumerGroupHeartbeatRequest) cgResult {
	invalid := func(msg string) cgResult { return cgResult{err: kerr.InvalidRequest.Code, msg: msg} }
	// Kafka's order and rule (throwIfEmptyString): the member id first,
	// then the group id, instance id and rack id, each refused when
	// blank (empty or only characters up to a space, Java's trim()),
	// all INVALID_REQUEST. segfs answered an empty group id
	// INVALID_GROUP_ID before the member id, and took a blank id for one.
	memberID := req.MemberID
	switch {
	case (h.version >= 1 || req.MemberEpoch > 0 || req.MemberEpoch == leaveGroupEpoch) && blank(memberID):
		return invalid("MemberId can't be empty.")
	case blank(req.Group):
		return invalid("GroupId can't be empty.")
	case req.InstanceID != nil && blank(*req.InstanceID):
		return invalid("InstanceId can't be empty.")
	case req.RackID != nil && blank(*req.RackID):
		return invalid("RackId can't be empty.")
	}
	switch {
	case req.MemberEpoch == 0:
		switch {
		case req.RebalanceTimeoutMillis == -1:
			return invalid("RebalanceTimeoutMs must be provided in first request.")
		case len(req.Topics) > 0:
			return invalid("TopicPartitions must be empty when (re-)joining.")
		case req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil:
			return invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
		}
	case req.MemberEpoch == leaveGroupStaticEpoch:
		if req.InstanceID == nil {
			return invalid("InstanceId can't be null.")
		}
	case req.MemberEpoch < leaveGroupStaticEpoch:
		return invalid("MemberEpoch is invalid.")
	}
	if a := req.ServerAssignor; a != nil && !slices.Contains(serverAssignors, *a) {
		return cgResult{err: kerr.UnsupportedAssignor.Code, msg: "ServerAssignor " + *a + " is not supported. Supported assignors: " + strings.Join(serverAssignors, ", ") + "."}
	}
	var re *regexp.Regexp
	if rx := req.SubscribedTopicRegex; rx != nil && *rx != "" {
		var err error
		// Kafka matches the whole topic name.
		if re, err = regexp.Compile(`^(?:` + *rx + `)$`); err != nil {
			return cgResult{err: kerr.InvalidRegularExpression.Code, msg: "SubscribedTopicRegex `" + *rx + "` is not a valid regular expression: " + err.Error() + "."}
		}
	}
	if memberID == "" {
		memberID = newMemberUUID() // v0: the server names a joining member
	}
	host, _, err := net.SplitHostPort(c.remote)
	if err != nil {
		host = c.remote
	}
	return c.s.groups.consumerHeartbeat(cgHeartbeat{
		group:      req.Group,
		memberID:   memberID,
		epoch:      req.MemberEpoch,
		instanceID: req.InstanceID,
		rackID:     req.RackID,
		rebalance:  req.RebalanceTimeoutMillis,
		topics:     req.SubscribedTopicNames,
		regex:      req.SubscribedTopicRegex,
		re:         re,
		assignor:   req.ServerAssignor,
		owned:      req.Topics,
		ownedGiven: req.Topics != nil,
		clientID:   h.clientID,
		host:       "/" + host,
	})
}

// newMemberUUID is Kafka's Uuid.randomUuid().toString(): 16 random bytes,
// URL-safe base64 without padding.
func newMemberUUID() string {
	var u [16]byte
	rand.Read(u[:])
	return base64.RawURLEncoding.EncodeToString(u[:])
}

// blank reports whether s is empty once Java's String.trim() has removed
// every character up to U+0020 from its ends: Kafka's test for an id
// that "can't be empty".
func blank(s string) bool {
	for _, r := range s {
		if r > ' ' {
			return false
		}
	}
	return true
}
