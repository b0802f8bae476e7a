package fetch

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchAfterStoreClose: a fetch or a time lookup (ListOffsets) of a
// partition whose store has closed under the server is answered
// NOT_LEADER_OR_FOLLOWER (logstore.ErrClosed): the client refreshes its
// metadata and retries, here after a restart. The read took a segment
// whose file the close had closed and the partition was answered
// UNKNOWN_SERVER_ERROR ("read ...: file already closed"). The daemon stops
// the server before it closes the store; a program that serves a store it
// closes meets this.
func TestFetchAfterStoreClose(t *testing.T) {
	ts := startServer(t, Config{})
	tp, err := ts.store.CreateTopic("closing", 1, map[string]string{"segment.bytes": "200"})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tp.Partition(0)
	for i := 0; i < 20; i++ {
		if _, _, err := p.AppendLines([]byte(fmt.Sprintf("line %04d\n", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := ts.store.Close(); err != nil {
		t.Fatal(err)
	}
	c := dial(t, ts.addr)
	fr := c.roundTrip(fetchReq(11, "closing", 0, 5, 0, 1, 1<<20, 1<<20)).(*kmsg.FetchResponse)
	if got := fr.Topics[0].Partitions[0].ErrorCode; got != kerr.NotLeaderForPartition.Code {
		t.Errorf("fetch after the close: %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(got))
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.Version = 4
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "closing"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = 0 // a time lookup
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	lr := c.roundTrip(lo).(*kmsg.ListOffsetsResponse)
	if got := lr.Topics[0].Partitions[0].ErrorCode; got != kerr.NotLeaderForPartition.Code {
		t.Errorf("time lookup after the close: %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(got))
	}
}
