package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/segfs/segfs/logstore/record"
)

// Transaction markers (KAFKA-FORMAT.md, control batches). segfs has no
// transaction coordinator, but an operator can end a transaction a data
// directory copied from Kafka left open (kafka-transactions.sh abort,
// WriteTxnMarkers): WriteTxnMarker appends the COMMIT or ABORT control
// batch Kafka's coordinator would have sent, through the ordinary append
// path, and ends the producer's transaction, so the last stable offset
// moves on. An ABORT that ends a transaction also gets its .txnindex
// entry, so read_committed consumers skip the aborted records.

// Control record types (KAFKA-FORMAT.md): the key is version 0 and the type.
const (
	controlAbort  int16 = 0
	controlCommit int16 = 1
)

// markerSize bounds a marker batch: the header and one small record.
const markerSize = 128

// buildMarker encodes the control batch of a COMMIT/ABORT marker: magic 2,
// transactional and control attributes, the producer id and epoch, no
// sequence, and one record whose key is (version 0, type) and value
// (version 0, coordinator epoch), as Kafka's EndTransactionMarker.
func buildMarker(pid int64, epoch int16, coordEpoch int32, commit bool, ts int64) ([]byte, error) {
	spec := record.DefaultSpec()
	spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence = pid, epoch, -1
	spec.Transactional, spec.Control = true, true
	typ := controlAbort
	if commit {
		typ = controlCommit
	}
	key := binary.BigEndian.AppendUint16([]byte{0, 0}, uint16(typ))
	value := binary.BigEndian.AppendUint32([]byte{0, 0}, uint32(coordEpoch))
	var bl record.Builder
	bl.Reset(spec)
	bl.Add(ts, key, value, nil)
	return bl.Build(make([]byte, 0, markerSize))
}

// parseMarker returns the type and coordinator epoch of the control batch
// b (whole), ok=false if its first record is not an end-transaction marker.
func parseMarker(b []byte) (typ int16, coordEpoch int32, ok bool) {
	var dec record.Decoder
	errStop := errors.New("stop")
	dec.Records(b, func(r *record.Record) error {
		if len(r.Key) >= 4 && len(r.Value) >= 6 && binary.BigEndian.Uint16(r.Key) == 0 {
			typ = int16(binary.BigEndian.Uint16(r.Key[2:]))
			coordEpoch = int32(binary.BigEndian.Uint32(r.Value[2:]))
			ok = typ == controlAbort || typ == controlCommit
		}
		return errStop
	})
	return typ, coordEpoch, ok
}

// WriteTxnMarker appends a COMMIT (commit) or ABORT marker of producer pid
// at epoch, written by coordinator epoch coordEpoch, as Kafka's partition
// leader does for WriteTxnMarkers, and returns its offset. The checks are
// Kafka's (producerState.checkMarker): an older epoch is
// ErrProducerFenced, an older coordinator epoch ErrCoordinatorFenced; a
// producer without an ongoing transaction gets the marker all the same,
// and it ends nothing. When the marker ends a transaction the log is
// flushed, then (for an ABORT) the transaction's .txnindex entry is
// written and fsynced, and only then does the last stable offset move: a
// read_committed reader never passes the transaction before its fate is
// on disk. Should the process die between the marker and the entry, the
// next load writes the entry (loadProducers).
func (p *Partition) WriteTxnMarker(pid int64, epoch int16, coordEpoch int32, commit bool) (int64, error) {
	if pid < 0 || epoch < 0 {
		return -1, fmt.Errorf("%w: a transaction marker needs a producer id and epoch, got %d/%d", ErrInvalidRecord, pid, epoch)
	}
	cfg := p.config()
	p.amu.Lock()
	defer p.amu.Unlock()
	// Unfinished lines the open could not recover go first (unfinished.go).
	if err := p.recoverPendingLocked(); err != nil {
		return -1, err
	}
	if err := p.producers.checkMarker(pid, epoch, coordEpoch); err != nil {
		return -1, err
	}
	now := p.store.now().UnixMilli()
	b, err := buildMarker(pid, epoch, coordEpoch, commit, now)
	if err != nil {
		return -1, err
	}
	if cfg.MessageTimestampType == "LogAppendTime" {
		record.SetLogAppendTime(b, now)
	}
	h, err := record.ParseHeader(b)
	if err != nil {
		return -1, err
	}
	off, err := p.appendLocked(b, &h, record.TextStats{}, cfg)
	if err != nil {
		return -1, err
	}
	lso := p.producers.stableAfter(pid, off)
	ended, ok := p.producers.endTxn(pid, epoch, coordEpoch, h.MaxTimestamp, off)
	if !ok {
		return off, nil
	}
	if err := p.flushLocked(); err != nil {
		return -1, err
	}
	if !commit {
		t := AbortedTxn{ProducerID: pid, FirstOffset: ended.first, LastOffset: off, LastStableOffset: lso}
		if err := p.addAbortedLocked(p.active(), t); err != nil {
			// The marker is in the log, the index entry is not: the
			// next load writes it. Until then no append may follow.
			return -1, p.failLocked(fmt.Errorf("writing the .txnindex entry of producer %d's aborted transaction: %w", pid, err))
		}
	}
	p.publishOngoingLocked()
	p.log().Info("transaction ended by a marker", "producer_id", pid, "epoch", epoch,
		"coordinator_epoch", coordEpoch, "commit", commit, "first_offset", ended.first, "marker_offset", off)
	return off, nil
}

// publishOngoingLocked makes the producer state's ongoing transactions the
// ones the last stable offset rests on, and wakes readers (amu held).
func (p *Partition) publishOngoingLocked() {
	if spans := p.producers.ongoing(); spans != nil {
		p.unstable.Store(&spans)
	} else {
		p.unstable.Store(nil)
	}
	p.notify()
}

// addAbortedLocked adds t to the in-memory and on-disk .txnindex of s,
// the segment holding t's ABORT marker, unless an entry with its marker
// offset is there already; the file is replaced atomically and fsynced.
func (p *Partition) addAbortedLocked(s *segment, t AbortedTxn) error {
	p.mu.RLock()
	i := sort.Search(len(s.txns), func(i int) bool { return s.txns[i].LastOffset >= t.LastOffset })
	have := i < len(s.txns) && s.txns[i].LastOffset == t.LastOffset
	txns := append(append(append([]AbortedTxn(nil), s.txns[:i]...), t), s.txns[i:]...)
	p.mu.RUnlock()
	if have {
		return nil
	}
	if err := WriteFileAtomic(s.path(txnIndexSuffix), encodeTxnIndex(txns)); err != nil {
		return err
	}
	p.mu.Lock()
	s.txns = txns
	p.mu.Unlock()
	p.hasTxns.Store(true)
	return nil
}
