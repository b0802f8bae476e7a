package fetch

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeTransactions (key 65), version 0 (KIP-664):
// Admin.describeTransactions (`kafka-transactions.sh describe`). segfs has
// no transaction coordinator (see 66_list_transactions.go), so every
// transactional id is TRANSACTIONAL_ID_NOT_FOUND, as Kafka's coordinator
// answers an id it has no metadata for, and an empty id INVALID_REQUEST,
// as Kafka's TransactionCoordinator.handleDescribeTransactions does. Each
// id named gets its own answer, in request order.
//
// Clients find the coordinator of a transactional id with FindCoordinator
// (key type 1) first, which segfs refuses (10_find_coordinator.go), so the
// Java admin client and kadm stop there with that error; this answer is
// for a client that sends the request to the broker directly.
func init() { register(65, 0, 0, handleDescribeTransactions) }

func handleDescribeTransactions(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		st.ErrorCode = kerr.TransactionalIDNotFound.Code
		if id == "" {
			st.ErrorCode = kerr.InvalidRequest.Code
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return c.send(h, resp)
}
