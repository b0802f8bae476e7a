package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/segfs/segfs/logstore/record"
)

// producerBatch is the sequence range and offsets of one idempotent batch.
type producerBatch struct {
	firstSeq, lastSeq int32
	firstOff, lastOff int64
	ts                int64
}

// producerEntry keeps a producer's epoch and its last five batches, the
// window Kafka uses to recognise retries, and the first offset of its
// ongoing transaction (-1: none). segfs refuses transactional batches, so
// an ongoing transaction only comes from a data directory written by
// Kafka (a snapshot's current_txn_first_offset, or a transactional batch
// after the snapshot without its COMMIT/ABORT marker): it stays open until
// a marker ends it, as in Kafka, where only the transaction coordinator
// (or an admin's abort, WriteTxnMarkers: WriteTxnMarker) writes one.
// coordEpoch is the coordinator epoch of its last marker (-1: none) and
// lastTs the timestamp of its last batch or marker (-1: none), as Kafka's
// ProducerStateEntry keeps them (DescribeProducers shows both).
type producerEntry struct {
	epoch      int16
	batches    []producerBatch
	txnFirst   int64
	coordEpoch int32
	lastTs     int64
}

func newProducerEntry(epoch int16) *producerEntry {
	return &producerEntry{epoch: epoch, txnFirst: -1, coordEpoch: -1, lastTs: -1}
}

// producerState is the idempotence state of one partition (amu held).
type producerState struct {
	m     map[int64]*producerEntry
	dirty bool
}

const producerWindow = 5

func seqAdd(seq int32, n int32) int32 {
	v := int64(seq) + int64(n)
	if v > math.MaxInt32 {
		v -= math.MaxInt32 + 1
	}
	return int32(v)
}

// check classifies an incoming idempotent batch: a retry of a stored batch
// (returned), a valid next batch (nil, nil), or an error.
func (ps *producerState) check(h *record.Header) (*producerBatch, error) {
	e := ps.m[h.ProducerID]
	if e == nil {
		return nil, nil // first batch we know of: any sequence starts it
	}
	if h.ProducerEpoch < e.epoch {
		return nil, fmt.Errorf("%w: epoch %d is older than %d", ErrProducerFenced, h.ProducerEpoch, e.epoch)
	}
	if h.ProducerEpoch > e.epoch {
		if h.BaseSequence != 0 {
			return nil, fmt.Errorf("%w: a new epoch must start at sequence 0, got %d", ErrOutOfOrderSeq, h.BaseSequence)
		}
		return nil, nil
	}
	last := seqAdd(h.BaseSequence, h.LastOffsetDelta)
	for i := range e.batches {
		if e.batches[i].firstSeq == h.BaseSequence && e.batches[i].lastSeq == last {
			return &e.batches[i], nil
		}
	}
	if len(e.batches) > 0 {
		want := seqAdd(e.batches[len(e.batches)-1].lastSeq, 1)
		if h.BaseSequence != want {
			return nil, fmt.Errorf("%w: expected %d, got %d", ErrOutOfOrderSeq, want, h.BaseSequence)
		}
	}
	return nil, nil
}

func (ps *producerState) update(h *record.Header) {
	if ps.m == nil {
		ps.m = map[int64]*producerEntry{}
	}
	e := ps.m[h.ProducerID]
	if e == nil {
		e = newProducerEntry(h.ProducerEpoch)
		ps.m[h.ProducerID] = e
	} else if h.ProducerEpoch > e.epoch {
		// A new epoch starts a new sequence window; an ongoing
		// transaction stays open until its marker, as in Kafka.
		e = &producerEntry{epoch: h.ProducerEpoch, txnFirst: e.txnFirst, coordEpoch: e.coordEpoch, lastTs: e.lastTs}
		ps.m[h.ProducerID] = e
	}
	e.lastTs = max(e.lastTs, h.MaxTimestamp)
	if len(e.batches) == producerWindow {
		copy(e.batches, e.batches[1:])
		e.batches = e.batches[:producerWindow-1]
	}
	e.batches = append(e.batches, producerBatch{
		firstSeq: h.BaseSequence, lastSeq: seqAdd(h.BaseSequence, h.LastOffsetDelta),
		firstOff: h.BaseOffset, lastOff: h.LastOffset(), ts: h.MaxTimestamp,
	})
	ps.dirty = true
}

// load applies one batch header read back from the log at load, as
// Kafka's producer-state rebuild does: data batches of idempotent producers
// update their window, a transactional one opens its producer's
// transaction if none is open, and a COMMIT/ABORT control batch ends it
// (coordEpoch is its coordinator epoch, -1 if unknown) and returns the
// transaction it ended, if any.
func (ps *producerState) load(h *record.Header, coordEpoch int32) (ended txnSpan, ok bool) {
	if h.ProducerID < 0 {
		return txnSpan{}, false
	}
	if h.Control() {
		return ps.endTxn(h.ProducerID, h.ProducerEpoch, coordEpoch, h.MaxTimestamp, h.BaseOffset)
	}
	ps.update(h)
	if e := ps.m[h.ProducerID]; h.Transactional() && e.txnFirst < 0 {
		e.txnFirst = h.BaseOffset
	}
	return txnSpan{}, false
}

// checkMarker validates a COMMIT/ABORT marker as Kafka's leader does
// (ProducerAppendInfo.appendEndTxnMarker, transaction versions 0 and 1):
// an epoch below the producer's is ErrProducerFenced (INVALID_PRODUCER_EPOCH),
// a coordinator epoch below its last marker's ErrCoordinatorFenced. An
// unknown producer, or one without an ongoing transaction, is no error:
// Kafka writes that marker too, and it ends nothing.
func (ps *producerState) checkMarker(pid int64, epoch int16, coordEpoch int32) error {
	e := ps.m[pid]
	if e == nil {
		return nil
	}
	if epoch < e.epoch {
		return fmt.Errorf("%w: marker epoch %d of producer %d is older than %d", ErrProducerFenced, epoch, pid, e.epoch)
	}
	if coordEpoch < e.coordEpoch {
		return fmt.Errorf("%w: coordinator epoch %d of producer %d's marker is older than %d", ErrCoordinatorFenced, coordEpoch, pid, e.coordEpoch)
	}
	return nil
}

// endTxn applies a COMMIT/ABORT marker at offset: the producer (created
// if unknown, as Kafka does) takes the marker's epoch, coordinator epoch
// and timestamp, and its ongoing transaction, if any, ends and is
// returned (first offset, and the marker's offset as last).
func (ps *producerState) endTxn(pid int64, epoch int16, coordEpoch int32, ts, offset int64) (ended txnSpan, ok bool) {
	if ps.m == nil {
		ps.m = map[int64]*producerEntry{}
	}
	e := ps.m[pid]
	if e == nil {
		e = newProducerEntry(epoch)
		ps.m[pid] = e
	} else if epoch > e.epoch {
		e.epoch, e.batches = epoch, nil
	}
	if e.txnFirst >= 0 {
		ended, ok = txnSpan{first: e.txnFirst, last: offset}, true
	}
	e.txnFirst = -1
	e.coordEpoch = coordEpoch
	e.lastTs = max(e.lastTs, ts)
	ps.dirty = true
	return ended, ok
}

// stableAfter is the last stable offset Kafka records in the .txnindex
// entry of a transaction of pid aborted at marker offset
// (ProducerStateManager.lastStableOffset): the first offset of the
// earliest other ongoing transaction, or the offset after the marker.
func (ps *producerState) stableAfter(pid, marker int64) int64 {
	lso := marker + 1
	for id, e := range ps.m {
		if id != pid && e.txnFirst >= 0 && e.txnFirst < lso {
			lso = e.txnFirst
		}
	}
	return lso
}

// ProducerInfo is one active producer of a partition, as DescribeProducers
// shows it.
type ProducerInfo struct {
	ID               int64
	Epoch            int16
	LastSequence     int32 // -1: no batch known
	LastTimestamp    int64 // -1: none
	CoordinatorEpoch int32 // -1: no marker seen
	TxnStartOffset   int64 // -1: no ongoing transaction
}

// ActiveProducers lists the producers the partition keeps state for
// (Kafka's UnifiedLog.activeProducers), by id.
func (p *Partition) ActiveProducers() []ProducerInfo {
	p.amu.Lock()
	defer p.amu.Unlock()
	out := make([]ProducerInfo, 0, len(p.producers.m))
	for id, e := range p.producers.m {
		pi := ProducerInfo{ID: id, Epoch: e.epoch, LastSequence: -1, LastTimestamp: e.lastTs,
			CoordinatorEpoch: e.coordEpoch, TxnStartOffset: e.txnFirst}
		if n := len(e.batches); n > 0 {
			pi.LastSequence = e.batches[n-1].lastSeq
		}
		out = append(out, pi)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// ongoing lists the ongoing transactions, each with the last offset of
// its producer's data (Kafka evicts the producer once the log start passes
// it), nil if none.
func (ps *producerState) ongoing() []txnSpan {
	var spans []txnSpan
	for _, e := range ps.m {
		if e.txnFirst < 0 {
			continue
		}
		last := e.txnFirst
		if n := len(e.batches); n > 0 {
			last = max(last, e.batches[n-1].lastOff)
		}
		spans = append(spans, txnSpan{first: e.txnFirst, last: last})
	}
	return spans
}

// expire drops the producers whose last batch's (or marker's) timestamp is at least exp
// before now (ms), as Kafka's removeExpiredProducers does, and reports how
// many. Like Kafka it never drops a producer with an ongoing transaction:
// the last stable offset rests on it. A retry from one of them is then taken as a new producer's batch;
// clients give up retrying long before (delivery.timeout.ms, 2 minutes).
func (ps *producerState) expire(nowMs, expMs int64) int {
	n := 0
	for id, e := range ps.m {
		if e.txnFirst >= 0 {
			continue
		}
		if nowMs-e.lastTs >= expMs {
			delete(ps.m, id)
			n++
		}
	}
	if n > 0 {
		ps.dirty = true
	}
	return n
}

// expireProducers drops expired idempotent producers in every partition;
// the next snapshot (a roll, the close) leaves them out.
func (s *Store) expireProducers(now time.Time) {
	exp := s.opts.ProducerIDExpiration.Milliseconds()
	for _, t := range s.topicsSnapshot() {
		for _, p := range t.Partitions() {
			p.amu.Lock()
			n := p.producers.expire(now.UnixMilli(), exp)
			left := len(p.producers.m)
			p.amu.Unlock()
			if n > 0 {
				p.log().Info("expired idempotent producers", "expired", n, "left", left)
			}
		}
	}
}

// Producer snapshots use Kafka's .snapshot format (KAFKA-FORMAT.md §9.7):
// version 1, CRC-32C, count, then 46-byte entries. Kafka writes one entry
// per producer, its last batch; here each producer has one entry per batch
// of its window (up to 5), oldest first, so that a restart keeps
// recognising retries of every batch a client may still have in flight,
// not only of the last one. Kafka's loader keeps the last entry it reads
// for a producer id, which is the same last batch it would have written.
// Named after the end offset they capture.
const snapshotEntrySize = 46

func (ps *producerState) encode() []byte {
	ids := make([]int64, 0, len(ps.m))
	for id := range ps.m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	b := make([]byte, 10, 10+len(ids)*snapshotEntrySize)
	binary.BigEndian.PutUint16(b, 1)
	binary.BigEndian.PutUint32(b[6:], uint32(len(ids)))
	for _, id := range ids {
		e := ps.m[id]
		batches := e.batches
		if len(batches) == 0 {
			// A producer known by its markers only: Kafka writes it
			// with last sequence and offset -1.
			batches = []producerBatch{{firstSeq: -1, lastSeq: -1, firstOff: -1, lastOff: -1, ts: e.lastTs}}
		}
		for i, l := range batches {
			ts := l.ts
			if i == len(batches)-1 {
				ts = e.lastTs // a marker after the last batch
			}
			b = binary.BigEndian.AppendUint64(b, uint64(id))
			b = binary.BigEndian.AppendUint16(b, uint16(e.epoch))
			b = binary.BigEndian.AppendUint32(b, uint32(l.lastSeq))
			b = binary.BigEndian.AppendUint64(b, uint64(l.lastOff))
			b = binary.BigEndian.AppendUint32(b, uint32(l.lastOff-l.firstOff))
			b = binary.BigEndian.AppendUint64(b, uint64(ts))
			b = binary.BigEndian.AppendUint32(b, uint32(e.coordEpoch))
			b = binary.BigEndian.AppendUint64(b, uint64(e.txnFirst)) // -1: no ongoing transaction
		}
	}
	binary.BigEndian.PutUint32(b[6:], uint32((len(b)-10)/snapshotEntrySize))
	binary.BigEndian.PutUint32(b[2:], crc32.Checksum(b[6:], castagnoli))
	return b
}

func decodeSnapshot(b []byte) (map[int64]*producerEntry, error) {
	if len(b) < 10 || binary.BigEndian.Uint16(b) != 1 {
		return nil, errors.New("bad producer snapshot header")
	}
	if crc32.Checksum(b[6:], castagnoli) != binary.BigEndian.Uint32(b[2:]) {
		return nil, errors.New("producer snapshot checksum mismatch")
	}
	n := int(binary.BigEndian.Uint32(b[6:]))
	if n < 0 || len(b) != 10+n*snapshotEntrySize {
		return nil, errors.New("producer snapshot length mismatch")
	}
	m := make(map[int64]*producerEntry, n)
	for p := b[10:]; len(p) >= snapshotEntrySize; p = p[snapshotEntrySize:] {
		id := int64(binary.BigEndian.Uint64(p))
		epoch := int16(binary.BigEndian.Uint16(p[8:]))
		lastSeq := int32(binary.BigEndian.Uint32(p[10:]))
		lastOff := int64(binary.BigEndian.Uint64(p[14:]))
		delta := int32(binary.BigEndian.Uint32(p[22:]))
		ts := int64(binary.BigEndian.Uint64(p[26:]))
		coordEpoch := int32(binary.BigEndian.Uint32(p[34:]))
		txnFirst := int64(binary.BigEndian.Uint64(p[38:]))
		pb := producerBatch{
			firstSeq: seqAdd(lastSeq, -delta+0), lastSeq: lastSeq,
			firstOff: lastOff - int64(delta), lastOff: lastOff, ts: ts,
		}
		// Several entries of one producer are its window, oldest first
		// (encode); a snapshot written by Kafka has one.
		e := m[id]
		if e == nil || epoch != e.epoch {
			e = newProducerEntry(epoch)
			m[id] = e
		}
		e.txnFirst = max(txnFirst, -1)
		e.coordEpoch = max(coordEpoch, -1)
		e.lastTs = max(e.lastTs, ts)
		if lastOff < 0 {
			continue // a producer known by its markers only (encode)
		}
		if len(e.batches) == producerWindow {
			e.batches = append(e.batches[:0], e.batches[1:]...)
		}
		e.batches = append(e.batches, pb)
	}
	return m, nil
}

// snapshot writes the producer state at offset (what the batches below
// it left) and removes older snapshots. As Kafka's roll, close and
// recovery do, it writes one even with no producers: load rebuilds from
// the newest snapshot, and from the log start without one after an
// unclean shutdown (loadProducers), so a partition only the mount writes,
// which never has producers, would otherwise scan every batch header of
// every segment after each kill -9. A state with producers is written
// durably (WriteFileAtomic). An empty one, with nothing changed since the
// last snapshot written, skips the fsyncs (a roll holds the append lock): a power
// cut can lose or tear it (its checksum fails), and load then starts from
// an older snapshot or the log start, slower but as correct.
func (ps *producerState) snapshot(dir string, offset int64) {
	path := filepath.Join(dir, segmentName(offset)+snapshotSuffix)
	write := WriteFileAtomic
	if !ps.dirty && len(ps.m) == 0 {
		write = writeFileUnsynced
	}
	if err := write(path, ps.encode()); err != nil {
		return // snapshots only shorten the scan at load; losing one is safe
	}
	ps.dirty = false
	for _, old := range listSnapshots(dir) {
		if old < offset {
			os.Remove(filepath.Join(dir, segmentName(old)+snapshotSuffix))
		}
	}
}

func listSnapshots(dir string) []int64 {
	ents, _ := os.ReadDir(dir)
	var out []int64
	for _, e := range ents {
		n := e.Name()
		if !strings.HasSuffix(n, snapshotSuffix) || len(n) != 20+len(snapshotSuffix) {
			continue
		}
		if off, err := strconv.ParseInt(n[:20], 10, 64); err == nil {
			out = append(out, off)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// AppendResult describes a stored produce batch.
type AppendResult struct {
	BaseOffset     int64
	LastOffset     int64
	LogAppendTime  int64 // -1 unless the topic uses LogAppendTime
	LogStartOffset int64
	Duplicate      bool // an idempotent retry of one of the producer's last 5 batches: nothing written, offsets are the original ones
}

// AppendBatch validates a produced batch like Kafka's leader (magic 2, base
// offset 0, CRC, sizes, count vs last offset delta, keys on compacted
// topics, record timestamps (timestampRule), idempotent sequence/epoch),
// assigns offsets by rewriting the base offset (and the leader epoch), and
// appends it as it came (compressed batches stay compressed), but for the
// timestamp fields Kafka sets too: on a CreateTime topic MaxTimestamp is
// its records' largest timestamp and the type CreateTime, on a
// LogAppendTime topic both are the store's clock. The slice is modified
// in place.
func (p *Partition) AppendBatch(batch []byte) (AppendResult, error) {
	res := AppendResult{LogAppendTime: -1}
	cfg := p.config()
	size, err := record.PeekSize(batch)
	if err != nil {
		return res, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if size > int64(len(batch)) {
		return res, fmt.Errorf("%w: batch claims %d bytes, the request holds %d", ErrCorrupt, size, len(batch))
	}
	if size != int64(len(batch)) {
		return res, fmt.Errorf("%w: request holds %d bytes, the batch claims %d (one batch per partition)", ErrInvalidRecord, len(batch), size)
	}
	h, err := record.ParseHeader(batch)
	if err != nil {
		return res, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if err := record.Validate(batch); err != nil {
		return res, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	switch {
	case h.BaseOffset != 0:
		return res, fmt.Errorf("%w: base offset %d, producers must send 0", ErrInvalidRecord, h.BaseOffset)
	case h.Control():
		return res, fmt.Errorf("%w: clients may not produce control batches", ErrInvalidRecord)
	case h.RecordCount <= 0 || int64(h.RecordCount) != int64(h.LastOffsetDelta)+1:
		return res, fmt.Errorf("%w: %d records but last offset delta %d", ErrInvalidRecord, h.RecordCount, h.LastOffsetDelta)
	case h.ProducerID >= 0 && h.BaseSequence < 0:
		return res, fmt.Errorf("%w: idempotent batch without a sequence", ErrInvalidRecord)
	case size > cfg.MaxMessageBytes:
		return res, fmt.Errorf("%w: batch of %d bytes exceeds max.message.bytes=%d", ErrMessageTooLarge, size, cfg.MaxMessageBytes)
	case size > cfg.SegmentBytes:
		return res, fmt.Errorf("%w: batch of %d bytes exceeds segment.bytes=%d", ErrBatchTooLarge, size, cfg.SegmentBytes)
	}
	// Walk every record: the layout must be valid (so the text view can
	// always render it), compacted topics need keys, and timestamps must
	// pass Kafka's check (timestampRule). Like Kafka's LogValidator,
	// every refused record is listed, not only the first: Produce v8+
	// answers each with its index. A record without a key on a compacted
	// topic is listed for that only, as Kafka checks the key first.
	//
	// The timestamps are compared record by record, in the walk that
	// decodes them anyway (and that decompresses a compressed batch, once),
	// not bounded by the header's BaseTimestamp and MaxTimestamp: those
	// are the producer's claims, which Kafka does not trust (it recomputes
	// MaxTimestamp), and a record's timestamp delta is signed, so a record
	// may lie outside both. Two comparisons a record cost nothing beside
	// its varints, and allocate nothing unless the record is refused.
	//
	// The same walk sums the batch's text statistics and keeps its
	// records decompressed (record.Walked), so that a compressed batch is
	// decompressed once, here, and not again for the statistics or for a
	// recompression to the topic's compression.type. The decoder comes
	// from a pool, with the buffers and readers its codecs grew, and goes
	// back once the recompression no longer needs its buffer.
	dec := produceDecoders.Get().(*record.Decoder)
	defer produceDecoders.Put(dec)
	compact := cfg.Compact()
	tr := newTimestampRule(cfg, &h, p.store.now().UnixMilli())
	// The batches that pass, nearly all, take WalkProduced's single loop,
	// which makes the same checks without a call per record; any other
	// goes through Walk below, which finds what is wrong and words it.
	walked, maxTs, ok := dec.WalkProduced(batch, &record.ProduceRules{NeedKey: compact,
		CheckTimestamps: tr.createTime, Now: tr.now, Before: tr.before, After: tr.after})
	var renumber bool
	if !ok {
		// The codec the batch is stored with: the topic's
		// compression.type, or the producer's.
		target, set := cfg.Codec()
		if !set {
			target = h.Codec()
		}
		// Kafka's LogValidator renumbers records whose offset deltas
		// are not 0, 1, 2, ... only where it may rebuild the batch: on
		// its compressed path, taken unless both the batch and the
		// stored codec are uncompressed. Its uncompressed path never
		// looks at the deltas and stores them as they came, which
		// segfs does not (offset/N, the index and the text view go by
		// them): it refuses that batch instead.
		mayRenumber := h.Codec() != record.CodecNone || target != record.CodecNone
		if walked, maxTs, renumber, err = p.walkProduced(dec, batch, compact, &tr, mayRenumber); err != nil {
			return res, err
		}
		if renumber {
			if batch, h, err = renumberProduced(batch, target, cfg); err != nil {
				return res, err
			}
		}
	}
	// On a CreateTime topic Kafka's LogValidator sets the batch's
	// MaxTimestamp to the largest record timestamp it has just checked,
	// and its timestamp type to CreateTime (setMaxTimestamp). The time
	// index, time/T, ListOffsets and retention go by MaxTimestamp: they
	// must see a timestamp the check saw, not the producer's header, which
	// nothing else checks. The CRC is redone only if a byte changes, which
	// for the clients that fill the header right (franz-go, librdkafka,
	// Kafka's own) is never. A LogAppendTime topic's batches get the
	// store's clock below instead.
	if tr.createTime && (h.LogAppendTime() || h.MaxTimestamp != maxTs) {
		record.SetCreateTime(batch, maxTs)
		if h, err = record.ParseHeader(batch); err != nil {
			return res, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
	}
	// The walk counted every record, and every one has an offset of at
	// least 0 (its delta, checked above): these are Stats(batch, 0).
	// SetCreateTime touched the header only.
	st := walked.Stats

	p.amu.Lock()
	defer p.amu.Unlock()
	// Unfinished lines the open could not recover go first (a full disk:
	// the batch fails like any append then; unfinished.go).
	if err := p.recoverPendingLocked(); err != nil {
		return res, err
	}
	if h.ProducerID >= 0 {
		dup, err := p.producers.check(&h)
		if err != nil {
			return res, err
		}
		if dup != nil {
			// A retry of a batch that reached the log but whose flush
			// failed (which fenced the partition) must fail like the
			// first attempt: answering it as a duplicate would
			// acknowledge records that may never reach the disk.
			if p.fenceErr != nil {
				return res, &fencedError{cause: p.fenceErr}
			}
			res.BaseOffset, res.LastOffset, res.Duplicate = dup.firstOff, dup.lastOff, true
			res.LogStartOffset = p.logStart.Load()
			return res, nil
		}
	}
	if codec, ok := cfg.Codec(); ok && codec != h.Codec() {
		// A broker recompresses a batch whose codec is not the topic's
		// compression.type; producer id, epoch and sequence stay. It
		// compresses the records the walk decompressed, into zbuf
		// (amu's, like the batch AppendLines recompresses there), which
		// appendLocked is done with when it returns.
		if p.zbuf, err = p.rc.RecompressRegion(p.zbuf[:0], batch, walked.Region, codec); err != nil {
			return res, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		batch = p.zbuf
		if h, err = record.ParseHeader(batch); err != nil {
			return res, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		switch size := h.Size(); {
		case size > cfg.MaxMessageBytes:
			return res, fmt.Errorf("%w: batch of %d bytes as %v exceeds max.message.bytes=%d", ErrMessageTooLarge, size, codec, cfg.MaxMessageBytes)
		case size > cfg.SegmentBytes:
			return res, fmt.Errorf("%w: batch of %d bytes as %v exceeds segment.bytes=%d", ErrBatchTooLarge, size, codec, cfg.SegmentBytes)
		}
	}
	if cfg.MessageTimestampType == "LogAppendTime" {
		now := p.store.now().UnixMilli()
		record.SetLogAppendTime(batch, now)
		h.MaxTimestamp = now
		res.LogAppendTime = now
	}
	base, err := p.appendLocked(batch, &h, st, cfg)
	if err != nil {
		return res, err
	}
	res.BaseOffset = base
	res.LastOffset = base + int64(h.LastOffsetDelta)
	res.LogStartOffset = p.logStart.Load()
	return res, nil
}

// walkProduced is AppendBatch's walk of a batch that WalkProduced did not
// pass: Walk, with the produce rules applied record by record, every
// refused record listed. It returns what WalkProduced would have for a
// batch that passes (a batch it refused may still pass here: one with the
// LogAppendTime attribute on a CreateTime topic, or, if mayRenumber, one
// whose offset deltas are not 0, 1, 2, ..., for which renumber is true),
// else the error to answer.
func (p *Partition) walkProduced(dec *record.Decoder, batch []byte, compact bool, tr *timestampRule, mayRenumber bool) (walked record.Walked, maxTs int64, renumber bool, err error) {
	var n int32
	var refused []RecordError
	var badTimestamp bool
	maxTs = -1 // the largest record timestamp; -1 (none) if all are below
	walked, err = dec.Walk(batch, func(r *record.Record) error {
		if r.OffsetDelta != n {
			if !mayRenumber {
				return fmt.Errorf("%w: record %d has offset delta %d", ErrInvalidRecord, n, r.OffsetDelta)
			}
			renumber = true
		}
		switch {
		case compact && r.Key == nil:
			refused = append(refused, RecordError{Index: n,
				Message: "Compacted topic cannot accept message without key in topic partition " + p.name() + "."})
		case tr.refuses(r.Timestamp):
			refused = append(refused, RecordError{Index: n, Message: tr.message(r)})
			badTimestamp = true
		}
		maxTs = max(maxTs, r.Timestamp)
		n++
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrInvalidRecord) {
			return walked, 0, false, err
		}
		if errors.Is(err, record.ErrTooBig) {
			// Valid, but more than a decoder takes: refuse it as too
			// large (MESSAGE_TOO_LARGE), not as corrupt.
			return walked, 0, false, fmt.Errorf("%w: %v", ErrMessageTooLarge, err)
		}
		return walked, 0, false, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if refused != nil {
		// As in Kafka, a refused record fails the batch whatever the
		// offset deltas.
		return walked, 0, false, &RecordErrors{Records: refused, Timestamp: badTimestamp}
	}
	return walked, maxTs, renumber, nil
}

// renumberProduced rebuilds a produced batch that passed every check but
// whose records' offset deltas are not 0, 1, 2, ..., as Kafka's
// LogValidator does rather than refuse it (some clients numbered the
// records of a compressed batch wrong; Kafka has rebuilt those since the
// v1 format): the records renumbered and compressed with target, the
// producer fields, timestamps, keys, values and headers kept
// (record.Recompressor.Renumber). It returns the new batch and its header,
// which, as the size may have changed, must again fit max.message.bytes
// and segment.bytes. Only such batches come here, so the Recompressor is
// the call's own: it is not worth holding one per partition.
func renumberProduced(batch []byte, target record.Codec, cfg *Config) ([]byte, record.Header, error) {
	var rc record.Recompressor
	nb, err := rc.Renumber(nil, batch, target)
	if err != nil {
		return nil, record.Header{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	h, err := record.ParseHeader(nb)
	if err != nil {
		return nil, record.Header{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	switch size := h.Size(); {
	case size > cfg.MaxMessageBytes:
		return nil, h, fmt.Errorf("%w: batch of %d bytes renumbered as %v exceeds max.message.bytes=%d", ErrMessageTooLarge, size, target, cfg.MaxMessageBytes)
	case size > cfg.SegmentBytes:
		return nil, h, fmt.Errorf("%w: batch of %d bytes renumbered as %v exceeds segment.bytes=%d", ErrBatchTooLarge, size, target, cfg.SegmentBytes)
	}
	return nb, h, nil
}

// produceDecoders are the decoders AppendBatch walks produced batches
// with, outside the append lock, so that concurrent produces to one
// partition validate in parallel, each reusing a decoder's decompression
// buffer and gzip and lz4 readers rather than growing new ones per batch.
var produceDecoders = sync.Pool{New: func() any { return new(record.Decoder) }}

// timestampRule is the check Kafka's LogValidator.validateTimestamp makes
// of each record of a produced batch (KAFKA-FORMAT.md §2.9). On a
// CreateTime topic a record's timestamp, unless -1 (none), must lie within
// [now - before, now + after] (Config.TimestampBounds). A batch with the
// LogAppendTime attribute is refused on a LogAppendTime topic, and on a
// CreateTime topic if its records have no timestamp: such a batch's
// records all have its MaxTimestamp as their timestamp (the decoder's
// Record.Timestamp, as Kafka's record.timestamp()), which is checked like
// any other on a CreateTime topic. Records appended through the mount
// never meet it: the store stamps them with its own clock.
type timestampRule struct {
	createTime    bool // the topic's message.timestamp.type
	logAppendTime bool // the batch's attribute bit 3
	now           int64
	before, after int64
}

func newTimestampRule(cfg *Config, h *record.Header, now int64) timestampRule {
	tr := timestampRule{createTime: cfg.MessageTimestampType != "LogAppendTime", logAppendTime: h.LogAppendTime(), now: now}
	tr.before, tr.after = cfg.TimestampBounds()
	return tr
}

// refuses reports whether a record with timestamp ts fails the rule. The
// arithmetic wraps as Java's long does, so the extremes (a bound of
// Long.MAX, a timestamp near Long.MIN) decide as in Kafka: a bound of
// Long.MAX takes everything on its side.
func (tr *timestampRule) refuses(ts int64) bool {
	if tr.createTime && ts != -1 {
		diff := tr.now - ts
		return diff > tr.before || -diff > tr.after
	}
	return tr.logAppendTime
}

// message is Kafka's RecordError message for a record that refuses
// refused. The bounds are printed as Kafka prints them: now + Long.MAX
// wraps to a negative number there too. Kafka names the record by its toString, which for a record of
// a compressed batch kept as it is reads PartialDefaultRecord; segfs says
// DefaultRecord always.
func (tr *timestampRule) message(r *record.Record) string {
	if tr.createTime && r.Timestamp != -1 {
		return fmt.Sprintf("Timestamp %d of message with offset %d is out of range. The timestamp should be within [%d, %d]",
			r.Timestamp, r.Offset, tr.now-tr.before, tr.now+tr.after)
	}
	return fmt.Sprintf("Invalid timestamp type in message DefaultRecord(offset=%d, timestamp=%d, key=%d bytes, value=%d bytes). Producer should not set timestamp type to LogAppendTime.",
		r.Offset, r.Timestamp, len(r.Key), len(r.Value))
}

// loadBatch applies the batch at pos of s, read back at load, to the
// producer state. An ABORT marker that ends a transaction must have its
// .txnindex entry (Kafka rebuilds the index when it recovers a segment):
// WriteTxnMarker writes it right after the marker, and if the process died
// in between, it is written here, or read_committed consumers would get
// the aborted records once the marker has moved the last stable offset
// past them.
func (p *Partition) loadBatch(s *segment, pos int64, h *record.Header) {
	t, ok := replayBatch(&p.producers, s, pos, h)
	if !ok {
		return
	}
	if err := p.addAbortedLocked(s, t); err != nil {
		p.log().Warn("cannot write the .txnindex entry of an aborted transaction; read_committed fetches will not skip it",
			"segment", segmentName(s.base), "producer_id", h.ProducerID, "first_offset", t.FirstOffset, "err", err)
	}
}

// replayBatch applies the batch at pos of s to ps and returns the aborted
// transaction it completes, if it is an ABORT marker that ends one, as
// the .txnindex entry Kafka writes for it. A marker's coordinator epoch
// is read from its record.
func replayBatch(ps *producerState, s *segment, pos int64, h *record.Header) (AbortedTxn, bool) {
	coordEpoch, typ := int32(-1), int16(-1)
	if h.Control() && h.ProducerID >= 0 && h.Size() <= 1<<20 {
		b := make([]byte, h.Size())
		if s.readFull(b, pos) == nil {
			if t, ce, ok := parseMarker(b); ok {
				typ, coordEpoch = t, ce
			}
		}
	}
	lso := int64(-1)
	if typ == controlAbort {
		lso = ps.stableAfter(h.ProducerID, h.BaseOffset)
	}
	ended, ok := ps.load(h, coordEpoch)
	if !ok || typ != controlAbort {
		return AbortedTxn{}, false
	}
	return AbortedTxn{ProducerID: h.ProducerID, FirstOffset: ended.first, LastOffset: h.BaseOffset, LastStableOffset: lso}, true
}

// loadProducers restores the producer state (idempotence windows, open
// transactions) as Kafka's UnifiedLog.rebuildProducerState does: from the
// newest snapshot at or below the log end, then the batch headers from
// there to the end. Without a snapshot, after an unclean shutdown (a
// directory copied from a broker that died, or whose snapshots were
// deleted), Kafka rebuilds from the log start, and so does this: a
// transaction begun in an older segment and never ended must hold the
// last stable offset back and show in DescribeProducers. It used to scan
// the active segment only, and missed it. After a clean shutdown without
// a snapshot Kafka scans nothing (a broker writes one at every clean
// shutdown, as segfs does now, so there was no state to keep); this scans
// the active segment, which costs little and finds an ABORT marker whose
// .txnindex entry is missing (loadBatch). Only batch headers are read,
// through a buffer (walkHeaders); records only for a transaction marker.
// A scan that began below the active segment ends with a snapshot at the
// log end, as Kafka's recovery writes one, so the next crash does not
// scan those segments again.
func (p *Partition) loadProducers(clean bool) {
	leo := p.leo.Load()
	from := int64(-1)
	for _, off := range listSnapshots(p.dir) {
		path := filepath.Join(p.dir, segmentName(off)+snapshotSuffix)
		if off > leo {
			os.Remove(path)
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if m, err := decodeSnapshot(b); err == nil {
			p.producers.m = m
			from = off
		}
	}
	if from < 0 {
		from = p.active().base
		if !clean {
			from = p.logStart.Load()
		}
	}
	for _, s := range p.acquireSegments(from) {
		// A batch holding from is applied whole, as Kafka reads a
		// segment from the batch that holds its start offset.
		if pos, limit, ok := s.walkStart(from); ok {
			s.walkHeaders(pos, limit, func(pos int64, h *record.Header) { p.loadBatch(s, pos, h) })
		}
		s.release()
	}
	if from < p.active().base {
		p.producers.snapshot(p.dir, leo)
	}
	if spans := p.producers.ongoing(); spans != nil {
		p.unstable.Store(&spans)
	}
	for id, e := range p.producers.m {
		if e.txnFirst >= 0 {
			// Kafka's leader keeps it open too; only its transaction
			// coordinator or an admin's abort would end it, and segfs
			// has neither. Retention past the producer's last batch
			// ends it (firstUnstable).
			p.log().Warn("ongoing transaction without a COMMIT/ABORT marker: read_committed consumers stop at its first offset until retention passes it",
				"producer_id", id, "first_offset", e.txnFirst)
		}
	}
}
