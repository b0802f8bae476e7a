package logstore

import (
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/segfs/segfs/logstore/record"
)

// Aborted transactions (KAFKA-FORMAT.md §9.8). segfs never writes
// transactions, but a data directory copied from a Kafka broker may hold
// them: transactional batches, COMMIT/ABORT control batches and, per
// segment, a .txnindex listing the aborted transactions whose ABORT marker
// lies in that segment. read_committed consumers need that list in Fetch
// responses to drop the aborted records. segfs only reads the files: they
// are loaded once when the partition opens and kept in memory (a few
// entries per segment at most, and nothing at all for logs segfs wrote).
//
// A .txnindex that fails Kafka's sanity check (version 0, whole 34-byte
// entries, LastOffset >= the segment base and strictly increasing), or is
// not a regular file, is rebuilt from the log at load, as Kafka recovers
// such a segment (rebuildTxnIndexes): the log is the truth, the index is
// derived from its ABORT markers. Only regular files are read (a FIFO is
// refused without blocking, then replaced).
const (
	txnIndexSuffix = ".txnindex"
	txnEntrySize   = 34
)

// AbortedTxn is one .txnindex entry: the producer's aborted transaction
// spanned [FirstOffset, LastOffset], LastOffset being its ABORT marker.
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

// ParseTxnIndex decodes the entries of the .txnindex of the segment at
// base and checks them as Kafka's sanity check does (version 0, whole
// entries, LastOffset >= base and strictly increasing, FirstOffset <=
// LastOffset). segfs verify uses it too.
func ParseTxnIndex(b []byte, base int64) ([]AbortedTxn, error) {
	if len(b)%txnEntrySize != 0 {
		return nil, fmt.Errorf("size %d is not a multiple of %d", len(b), txnEntrySize)
	}
	be := binary.BigEndian
	out := make([]AbortedTxn, 0, len(b)/txnEntrySize)
	for i := 0; i < len(b); i += txnEntrySize {
		e := b[i : i+txnEntrySize]
		if v := int16(be.Uint16(e)); v != 0 {
			return nil, fmt.Errorf("entry %d: unknown version %d", i/txnEntrySize, v)
		}
		t := AbortedTxn{
			ProducerID:       int64(be.Uint64(e[2:])),
			FirstOffset:      int64(be.Uint64(e[10:])),
			LastOffset:       int64(be.Uint64(e[18:])),
			LastStableOffset: int64(be.Uint64(e[26:])),
		}
		if t.LastOffset < base {
			return nil, fmt.Errorf("entry %d: last offset %d below the segment base %d", i/txnEntrySize, t.LastOffset, base)
		}
		if n := len(out); n > 0 && t.LastOffset <= out[n-1].LastOffset {
			return nil, fmt.Errorf("entry %d: last offset %d not above the previous %d", i/txnEntrySize, t.LastOffset, out[n-1].LastOffset)
		}
		if t.FirstOffset > t.LastOffset {
			return nil, fmt.Errorf("entry %d: first offset %d above the last %d", i/txnEntrySize, t.FirstOffset, t.LastOffset)
		}
		out = append(out, t)
	}
	return out, nil
}

// readRegularFile reads path if it is a regular file. A missing file is
// (nil, nil).
func readRegularFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW, 0)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	return io.ReadAll(io.LimitReader(f, fi.Size()))
}

// loadTxnIndex reads the segment's .txnindex into s.txns. Entries whose
// FirstOffset is at or past leo (left over from a tail that recovery
// truncated) are dropped: offsets from leo on will be new, non-transactional
// records. It reports a file that is there but bad (logged), which the
// caller rebuilds (rebuildTxnIndexes).
func (s *segment) loadTxnIndex(leo int64, log *slog.Logger) (damaged bool) {
	s.txns = nil
	b, err := readRegularFile(s.path(txnIndexSuffix))
	if err == nil && b == nil {
		return false
	}
	var txns []AbortedTxn
	if err == nil {
		txns, err = ParseTxnIndex(b, s.base)
	}
	if err != nil {
		log.Warn("damaged transaction index; rebuilding it from the log",
			"segment", segmentName(s.base), "err", err)
		return true
	}
	kept := txns[:0]
	for _, t := range txns {
		if t.FirstOffset < leo {
			kept = append(kept, t)
		}
	}
	if len(kept) < len(txns) {
		log.Warn("ignoring transaction index entries past the log end", "segment", segmentName(s.base),
			"dropped", len(txns)-len(kept), "log_end", leo)
	}
	if len(kept) > 0 {
		s.txns = kept
	}
	return false
}

// rebuildTxnIndexes rebuilds the .txnindex of each damaged segment (in
// log order) from the log, as Kafka's recovery of such a segment does: a
// replay of the batch headers from the log start through the last of
// them, with a producer state of its own, gives each ABORT marker in a
// damaged segment that ends a transaction its entry (the transaction's
// first offset may lie in any earlier segment, hence the start). Only the
// damaged segments' files are written, replaced whole; one with no entry
// is removed, as Kafka creates the file only for an entry. It runs at
// load, before the partition is shared, and only when an index is
// damaged. Until it was, a damaged index was ignored, and the load's
// repair of a missing entry (loadBatch) wrote that one entry as the whole
// file, losing the others for good.
func (p *Partition) rebuildTxnIndexes(damaged []*segment) {
	rebuilt := make(map[*segment][]AbortedTxn, len(damaged))
	for _, s := range damaged {
		rebuilt[s] = nil
	}
	last := damaged[len(damaged)-1].base
	from := p.logStart.Load()
	var ps producerState
	for _, s := range p.acquireSegments(from) {
		if s.base > last {
			s.release()
			continue
		}
		pos, limit, ok := s.walkStart(from)
		if !ok {
			s.release()
			continue
		}
		_, want := rebuilt[s]
		s.walkHeaders(pos, limit, func(pos int64, h *record.Header) {
			if t, ok := replayBatch(&ps, s, pos, h); ok && want {
				rebuilt[s] = append(rebuilt[s], t)
			}
		})
		s.release()
	}
	for _, s := range damaged {
		txns := rebuilt[s]
		var err error
		if len(txns) == 0 {
			err = os.Remove(s.path(txnIndexSuffix))
		} else {
			err = WriteFileAtomic(s.path(txnIndexSuffix), encodeTxnIndex(txns))
		}
		if err != nil && !os.IsNotExist(err) {
			// The entries are served from memory all the same; the
			// next load tries the file again.
			p.log().Warn("cannot replace the damaged transaction index", "segment", segmentName(s.base), "err", err)
		}
		s.txns = txns
		p.log().Warn("rebuilt the transaction index from the log", "segment", segmentName(s.base), "entries", len(txns))
	}
}

// AbortedTxns returns the aborted transactions a read_committed consumer
// fetching [fetchOffset, upperBound) needs to know about, as Kafka's
// LocalLog.collectAbortedTransactions does: from the segment holding
// fetchOffset on, every entry with LastOffset >= fetchOffset and
// FirstOffset < upperBound, stopping after the first entry whose
// LastStableOffset >= upperBound (no transaction aborted later can have
// started below upperBound). Like Kafka it does not stop at the segment
// holding upperBound: an entry lives in the segment of its ABORT marker,
// which may be far past the transaction's first record. Without any
// .txnindex in the partition it returns nil at the cost of one atomic load.
func (p *Partition) AbortedTxns(fetchOffset, upperBound int64) []AbortedTxn {
	if !p.hasTxns.Load() || fetchOffset >= upperBound {
		return nil
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	i := sort.Search(len(p.segs), func(i int) bool { return p.segs[i].base > fetchOffset }) - 1
	var out []AbortedTxn
	for _, s := range p.segs[max(i, 0):] {
		for _, t := range s.txns {
			if t.LastOffset >= fetchOffset && t.FirstOffset < upperBound {
				out = append(out, t)
			}
			if t.LastStableOffset >= upperBound {
				return out
			}
		}
	}
	return out
}

// updateHasTxns recomputes the partition's fast-path flag; call with mu
// held or before the partition is shared.
func (p *Partition) updateHasTxnsLocked() {
	has := false
	for _, s := range p.segs {
		if len(s.txns) > 0 {
			has = true
			break
		}
	}
	p.hasTxns.Store(has)
}

// encodeTxnIndex is the .txnindex file holding txns.
func encodeTxnIndex(txns []AbortedTxn) []byte {
	b := make([]byte, 0, len(txns)*txnEntrySize)
	be := binary.BigEndian
	for _, t := range txns {
		b = be.AppendUint16(b, 0)
		b = be.AppendUint64(b, uint64(t.ProducerID))
		b = be.AppendUint64(b, uint64(t.FirstOffset))
		b = be.AppendUint64(b, uint64(t.LastOffset))
		b = be.AppendUint64(b, uint64(t.LastStableOffset))
	}
	return b
}
