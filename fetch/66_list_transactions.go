package fetch

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListTransactions (key 66), versions 0-1 (KIP-664; v1 adds the duration
// filter, KIP-994): Admin.listTransactions, which `kafka-transactions.sh
// list` and `find-hanging` use. segfs has no transaction coordinator
// (transactional producers are refused at FindCoordinator and
// InitProducerId), so the coordinator this broker answers for knows no
// transactional id: the list is always empty, with no error, whatever the
// producer id and duration filters. As Kafka's
// TransactionStateManager.listTransactionStates, each state filter that
// is not one of Kafka's transaction state names comes back in
// unknown_state_filters (each once, in request order).
//
// This is what makes `kafka-transactions.sh find-hanging` work on a data
// directory copied from Kafka: it finds the open transactions with
// DescribeProducers (61_describe_producers.go), looks their producer ids
// up here, and reports as hanging every one no coordinator knows, which
// is exactly the state of a transaction a Kafka broker left without a
// marker in the copied directory. (With no transactional id found it has
// nothing to ask DescribeTransactions.) v2 (KIP-1152, a transactional id
// pattern) is not served.
func init() { register(66, 0, 1, handleListTransactions) }

// txnStates are Kafka's transaction state names (TransactionState), the
// only strings a state filter may hold.
var txnStates = map[string]bool{
	"Empty": true, "Ongoing": true, "PrepareCommit": true, "PrepareAbort": true,
	"CompleteCommit": true, "CompleteAbort": true, "Dead": true, "PrepareEpochFence": true,
}

func handleListTransactions(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	// Kafka takes the filters as a set.
	seen := map[string]bool{}
	for _, s := range req.StateFilters {
		if !txnStates[s] && !seen[s] {
			seen[s] = true
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, s)
		}
	}
	return c.send(h, resp)
}
