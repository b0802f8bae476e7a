package fetch

import (
	"math"
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/segfs/segfs/logstore"
)

// Fetch (key 1), versions 4-12.
//
// v4 brings record batches and the isolation level, v7 sessions, v12 the
// flexible encoding; v13+ names topics by ID and is not served.
//
//   - Sessions are declined: a request with session epoch 0 (open a
//     session) gets a full answer with session id 0 (P7). As in Kafka's
//     FetchManager.newContext, epoch 0 or -1 (no session) makes a full
//     fetch whatever the session id (a full fetch closes the session it
//     names, and segfs has none to close); any other epoch continues a
//     session, and since segfs hands none out, that is
//     FETCH_SESSION_ID_NOT_FOUND, for session id 0 too.
//   - Per partition, the store returns whole batches from the one containing
//     the fetch offset (the client skips records below it, P15), up to
//     min(partition max_bytes, what is left of max_bytes); the first batch
//     of the response is always whole even if larger (KIP-74, P16); a later
//     partition whose first batch does not fit returns nothing this time.
//   - High watermark = log end offset: a single node has nothing to
//     replicate. A partition answering an error (unknown topic or
//     partition, OFFSET_OUT_OF_RANGE, a storage error) answers -1 for the
//     high watermark, last stable offset and log start offset, as Kafka
//     does. Last stable offset = HW too (P5), since segfs writes no
//     transactions, except in a data directory copied from Kafka that holds
//     a transaction left open (no COMMIT/ABORT marker): the LSO then stays
//     at its first offset, as Kafka's producer-state rebuild gives, and a
//     read_committed fetch returns only batches below it (Kafka's
//     FetchIsolation.TXN_COMMITTED).
//   - Isolation level: read_uncommitted (0) always gets an empty
//     AbortedTransactions list. read_committed (1) gets the aborted
//     transactions of the partition's imported .txnindex files that overlap
//     the batches sent (abortedTxns), so the consumer drops their records;
//     logs segfs wrote have none.
//   - A partition with no data has an empty, non-null record set (P4).
//   - Long poll: below min_bytes the request waits on every fetched
//     partition's change channel, the max_wait timer and shutdown, and reads
//     again the moment one fires. Any partition error answers at once, as
//     Kafka does, so clients refresh metadata promptly.
//   - CurrentLeaderEpoch (v9+) is checked (checkLeaderEpoch): each open of
//     a partition is a new leader epoch (logstore/epochs.go), and a client
//     whose metadata is older gets FENCED_LEADER_EPOCH and refreshes it.
//   - LastFetchedEpoch (v12+, sent by followers, -1 from consumers) is
//     checked as Kafka's Partition.readRecords does: an epoch the
//     partition cannot place is OFFSET_OUT_OF_RANGE, and one whose end
//     (OffsetForLeaderEpoch's answer) is below the fetch offset, or that
//     the log has no longer (the answer names an earlier epoch), gets no
//     records but DivergingEpoch with that answer, so the fetcher
//     truncates to it.
//   - Not done: Kafka refuses zstd data to Fetch < v10 with
//     UNSUPPORTED_COMPRESSION_TYPE; here such clients get the bytes as they
//     are (only pre-2.1 clients are affected).
func init() { register(1, 4, 12, handleFetch) }

func handleFetch(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.FetchRequest)
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if h.version >= 7 && req.SessionEpoch != 0 && req.SessionEpoch != -1 {
		// An incremental fetch: segfs has no session for it to continue.
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return c.send(h, resp)
	}

	deadline := time.Now().Add(time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		fr := c.s.readFetch(req)
		ready := fr.bytes >= int64(req.MinBytes) || fr.failed ||
			!time.Now().Before(deadline) || c.s.shuttingDown() || len(fr.waits) == 0
		if ready {
			err := c.sendFetch(h, fr)
			fr.release()
			return err
		}
		fr.release()
		if timer == nil {
			timer = time.NewTimer(time.Until(deadline))
		}
		c.s.waitAny(fr.waits, timer.C)
	}
}

// fetchRead is one pass over the partitions of a Fetch request.
type fetchRead struct {
	resp   *kmsg.FetchResponse
	data   []*logstore.ReadResult // index i fills the partition marked with marker(i)
	bytes  int64
	failed bool              // some partition has an error: answer now
	waits  []<-chan struct{} // taken before reading, so no append is missed
}

func (f *fetchRead) release() {
	for _, r := range f.data {
		r.Release()
	}
	f.data = nil
}

// readFetch reads every requested partition once, within the byte limits.
func (s *Server) readFetch(req *kmsg.FetchRequest) *fetchRead {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	fr := &fetchRead{resp: resp}
	remaining := int64(req.MaxBytes)
	minOne := true // KIP-74: until some partition returned data
	for _, rt := range req.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			sp.RecordBatches = []byte{}
			p, err := s.store.Partition(rt.Topic, rp.Partition)
			if err != nil {
				// No partition, no offsets: Kafka answers -1 for each
				// (FetchResponse.partitionResponse), and librdkafka
				// reads the high watermark before the error code.
				sp.ErrorCode = errorCode(err)
				sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
				fr.failed = true
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			code, diverging := fetchEpochs(p, &rp)
			if code != 0 {
				// As any failed read: Kafka's ReplicaManager answers
				// these with -1 for every offset.
				sp.ErrorCode = code
				sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
				fr.failed = true
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			fr.waits = append(fr.waits, p.Changed())
			limit := min(int64(rp.PartitionMaxBytes), remaining)
			if diverging != nil {
				// Answered at once, with no records.
				sp.DivergingEpoch = *diverging
				fr.failed = true
			} else if minOne || limit > 0 {
				// read_committed reads below the last stable offset,
				// as Kafka's FetchIsolation.TXN_COMMITTED does.
				upper := int64(math.MaxInt64)
				if req.IsolationLevel == 1 {
					upper = p.LastStableOffset()
				}
				res, err := p.ReadBelow(rp.FetchOffset, max(limit, 0), upper)
				switch {
				case err != nil:
					// A failed read (OFFSET_OUT_OF_RANGE, a storage
					// or I/O error) carries no offsets: Kafka's
					// ReplicaManager builds the LogReadResult of
					// every read exception with UnknownOffset (-1)
					// for the high watermark and log start and no
					// last stable offset (-1 on the wire). Clients
					// reset with ListOffsets, not from these.
					sp.ErrorCode = readErrorCode(err)
					sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
					fr.failed = true
					st.Partitions = append(st.Partitions, sp)
					continue
				case res.Bytes == 0 || (res.Bytes > limit && !minOne):
					res.Release()
				default:
					sp.RecordBatches = marker(len(fr.data))
					if req.IsolationLevel == 1 {
						sp.AbortedTransactions = abortedTxns(p, rp.FetchOffset, res.Next)
					}
					fr.data = append(fr.data, res)
					fr.bytes += res.Bytes
					remaining -= res.Bytes
					minOne = false
				}
			}
			// After the read, so the watermark covers everything returned.
			sp.HighWatermark = p.LogEndOffset()
			sp.LastStableOffset = min(p.LastStableOffset(), sp.HighWatermark)
			sp.LogStartOffset = p.LogStartOffset()
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return fr
}

// fetchEpochs checks a fetched partition's CurrentLeaderEpoch and
// LastFetchedEpoch as Kafka's Partition.fetchRecords and readRecords do:
// an error code, or where the fetcher's log diverged from this one.
func fetchEpochs(p *logstore.Partition, rp *kmsg.FetchRequestTopicPartition) (int16, *kmsg.FetchResponseTopicPartitionDivergingEpoch) {
	if code := checkLeaderEpoch(p, rp.CurrentLeaderEpoch); code != 0 {
		return code, nil
	}
	if rp.LastFetchedEpoch < 0 {
		return 0, nil
	}
	e, end, ok := p.EndOffsetForEpoch(rp.LastFetchedEpoch)
	if !ok || rp.FetchOffset < p.LogStartOffset() {
		return kerr.OffsetOutOfRange.Code, nil
	}
	if e < rp.LastFetchedEpoch || end < rp.FetchOffset {
		d := kmsg.NewFetchResponseTopicPartitionDivergingEpoch()
		d.Epoch, d.EndOffset = e, end
		return 0, &d
	}
	return 0, nil
}

// abortedTxns lists, for a read_committed fetch, the aborted transactions
// (from the imported .txnindex files) that overlap the batches sent:
// [fetchOffset, next), next being the offset after the last batch of the
// response. Kafka (LocalLog.read) bounds the lookup by the offset index
// entry past the bytes read, or the next segment's base, or the log end:
// a coarser bound that can list a few transactions the response does not
// reach. Ours is exact, and any transaction with a record in the response
// starts below next, so the consumer drops everything it should.
func abortedTxns(p *logstore.Partition, fetchOffset, next int64) []kmsg.FetchResponseTopicPartitionAbortedTransaction {
	txns := p.AbortedTxns(fetchOffset, next)
	out := make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, 0, len(txns))
	for _, t := range txns {
		a := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
		a.ProducerID = t.ProducerID
		a.FirstOffset = t.FirstOffset
		out = append(out, a)
	}
	return out
}

// sendFetch writes the response of one pass with the record sets spliced
// in from the segment files.
func (c *conn) sendFetch(h *reqHeader, fr *fetchRead) error {
	fr.resp.SetVersion(h.version)
	pieces, err := splicedFetch(h.corr, fr.resp, fr.data)
	if err != nil {
		return err
	}
	return c.writePieces(pieces)
}

// waitAny blocks until one of chans is closed, timeout fires or the server
// shuts down. reflect.Select takes any number of channels without a
// goroutine per partition.
func (s *Server) waitAny(chans []<-chan struct{}, timeout <-chan time.Time) {
	cases := make([]reflect.SelectCase, 0, len(chans)+2)
	cases = append(cases,
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timeout)},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(s.done)})
	for _, ch := range chans {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
	}
	reflect.Select(cases)
}
