package fetch

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator (key 10), versions 0-4.
//
// The coordinator of every group is this node. v4 batches keys
// (CoordinatorKeys, franz-go uses it); earlier versions ask for one key.
// Transaction coordinators (type 1) are refused with
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED and, v1+, an error message saying
// why: transactions are not served. That is Kafka's answer to a client
// that may not use its transactional id, and the one code at this step
// that every client takes as final. librdkafka (kcat, confluent-kafka)
// retries FindCoordinator on any other error, INVALID_REQUEST included,
// every 500 ms until init_transactions gives up with only "Timed out
// waiting for operation to finish, retry call to resume"; with this code
// it fails at once and prints the message. franz-go and the Java client
// stop at any non-retriable code (a retriable one such as
// COORDINATOR_NOT_AVAILABLE has them loop too). The price: the Java
// producer, which printed the message with an unexpected code, reports
// only "Transactional Id authorization failed", so each refusal is also
// logged with the transactional id and the client's address.
// InitProducerId refuses a transactional id with the same code, as Kafka
// does, but its answer has no message field, so this one carries the only
// explanation a client gets. Admin clients look the transaction
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
		code = kerr.TransactionalIDAuthorizationFailed.Code
		m := noTransactionsMsg
		msg = &m
		key := req.CoordinatorKey
		if h.version >= 4 {
			key = strings.Join(req.CoordinatorKeys, ",")
		}
		c.s.log.Info("fetch: transactional producer refused: "+noTransactionsMsg, "remote", c.remote, "transactional_id", key)
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
