package fetch

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator (key 10), versions 0-4.
//
// The coordinator of every group is this node. v4 batches keys
// (CoordinatorKeys, franz-go uses it); earlier versions ask for one key.
// Transaction coordinators (type 1) are refused with INVALID_REQUEST (and,
// v1+, an error message saying why), as InitProducerId refuses a
// transactional id: transactions are not served. The error must not be a
// retriable one such as COORDINATOR_NOT_AVAILABLE, or a transactional
// producer retries FindCoordinator until its own timeout and reports only
// that (franz-go "context deadline exceeded", librdkafka _TIMED_OUT). It
// also carries the only explanation a client gets: InitProducerId's
// answer has no message field. Admin clients look the transaction
// coordinator up here before DescribeTransactions, so `kafka-transactions.sh
// describe` stops at this refusal; ListTransactions goes to every broker
// without a lookup, and find-hanging needs no other transaction API (see
// 66_list_transactions.go). A v0 request has no key type: it is a group
// lookup. v6 adds share groups and is not served.
func init() { register(10, 0, 4, handleFindCoordinator) }

const coordinatorTypeGroup = 0

// noTransactionsMsg is the error message of every refusal of a
// transactional request.
const noTransactionsMsg = "segfs does not serve transactions"

func handleFindCoordinator(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	host, port := c.advertised()
	code := int16(0)
	var msg *string
	if req.CoordinatorType != coordinatorTypeGroup {
		code = kerr.InvalidRequest.Code
		m := noTransactionsMsg
		msg = &m
	}
	if h.version < 4 {
		resp.ErrorCode, resp.ErrorMessage = code, msg
		if code == 0 {
			resp.NodeID, resp.Host, resp.Port = nodeID, host, port
		} else {
			resp.NodeID, resp.Port = -1, -1
		}
		return c.send(h, resp)
	}
	for _, key := range req.CoordinatorKeys {
		rc := kmsg.NewFindCoordinatorResponseCoordinator()
		rc.Key = key
		rc.ErrorCode, rc.ErrorMessage = code, msg
		if code == 0 {
			rc.NodeID, rc.Host, rc.Port = nodeID, host, port
		} else {
			rc.NodeID, rc.Port = -1, -1
		}
		resp.Coordinators = append(resp.Coordinators, rc)
	}
	return c.send(h, resp)
}
