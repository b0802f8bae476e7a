package fetch

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestListTransactions: at v0 and v1, the coordinator knows no
// transactional id: no error, an empty list whatever the filters, and
// the state filters that are not Kafka state names (case matters) echoed
// once each, in request order. This is find-hanging's lookup: the open
// transaction DescribeProducers shows (producer 500 of txo-0) has no
// transactional id, so it is hanging. Before this API was served, the
// request got UNSUPPORTED_VERSION and find-hanging failed.
func TestListTransactions(t *testing.T) {
	ts := startServerDir(t, hangingTxnDir(t), Config{})
	c := dial(t, ts.addr)
	ap := describeProducers(t, c, "txo", 0).Partitions[0].ActiveProducers
	if len(ap) != 1 || ap[0].ProducerID != 500 || ap[0].CurrentTxnStartOffset != 1 {
		t.Fatalf("DescribeProducers txo-0: %+v, want producer 500's transaction at 1", ap)
	}
	for v := int16(0); v <= 1; v++ {
		for _, tc := range []struct {
			states  []string
			pids    []int64
			unknown []string
		}{
			{nil, nil, nil},
			{nil, []int64{500}, nil},
			{[]string{"Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Empty", "Dead", "PrepareEpochFence"}, []int64{500}, nil},
			{[]string{"Ongoing", "Bogus", "ongoing", "Bogus", ""}, nil, []string{"Bogus", "ongoing", ""}},
		} {
			req := kmsg.NewPtrListTransactionsRequest()
			req.Version, req.StateFilters, req.ProducerIDFilters = v, tc.states, tc.pids
			if v >= 1 {
				req.DurationFilterMillis = 0
			}
			resp := c.roundTrip(req).(*kmsg.ListTransactionsResponse)
			if resp.ErrorCode != 0 || len(resp.TransactionStates) != 0 {
				t.Errorf("v%d %v %v: error %d, transactions %+v; want none", v, tc.states, tc.pids, resp.ErrorCode, resp.TransactionStates)
			}
			if !slices.Equal(resp.UnknownStateFilters, tc.unknown) {
				t.Errorf("v%d %v: unknown state filters %q, want %q", v, tc.states, resp.UnknownStateFilters, tc.unknown)
			}
		}
	}
}

// TestDescribeTransactions: every transactional id is
// TRANSACTIONAL_ID_NOT_FOUND, an empty one INVALID_REQUEST, each answered
// in request order, a repeated id twice, with no state. Before this API
// was served, the request got UNSUPPORTED_VERSION.
func TestDescribeTransactions(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{"app-1", "", "app-1", "other"}
	resp := c.roundTrip(req).(*kmsg.DescribeTransactionsResponse)
	want := []int16{kerr.TransactionalIDNotFound.Code, kerr.InvalidRequest.Code, kerr.TransactionalIDNotFound.Code, kerr.TransactionalIDNotFound.Code}
	if len(resp.TransactionStates) != len(want) {
		t.Fatalf("answered %+v, want %d entries", resp.TransactionStates, len(want))
	}
	for i, st := range resp.TransactionStates {
		if st.TransactionalID != req.TransactionalIDs[i] || st.ErrorCode != want[i] || st.State != "" || len(st.Topics) != 0 {
			t.Errorf("entry %d: %+v, want %q with error %d and no state", i, st, req.TransactionalIDs[i], want[i])
		}
	}
	if resp := c.roundTrip(kmsg.NewPtrDescribeTransactionsRequest()).(*kmsg.DescribeTransactionsResponse); len(resp.TransactionStates) != 0 {
		t.Errorf("no ids: answered %+v", resp.TransactionStates)
	}
}
