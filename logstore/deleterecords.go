package logstore

import (
	"fmt"
)

// HighWatermark is the offset DeleteRecords takes for "up to the high
// watermark" (Kafka's DeleteRecordsRequest.HIGH_WATERMARK).
const HighWatermark = -1

// DeleteRecords moves the log start offset up to offset (HighWatermark:
// the log end), as Kafka's Partition.deleteRecordsOnLeader and
// UnifiedLog.maybeIncrementLogStartOffset do for the DeleteRecords API,
// and returns the log start offset after it (the low watermark).
//
//   - A topic whose cleanup.policy lacks delete refuses it
//     (ErrPolicyViolation), as Kafka does.
//   - offset beyond the log end, or negative, is ErrOffsetOutOfRange and
//     changes nothing.
//   - offset at or below the current log start changes nothing.
//
// The new log start may lie inside a segment, even inside a batch: the
// records below it stay in the files until the retention pass deletes
// the whole segments below it (ApplyRetention), but nobody reads them
// any more (Read, Text, LookupTime all start at the log start). Changing
// the retained prefix starts a new text generation, as retention does,
// so that views already open (a `tail -f data`) keep their positions while
// new ones start at the new log start. The log-start checkpoint holding
// it is on disk before DeleteRecords returns, so the records stay gone
// after a crash.
func (p *Partition) DeleteRecords(offset int64) (int64, error) {
	cfg := p.config()
	if !cfg.Delete() {
		return -1, fmt.Errorf("%w: records of partition %s can not be deleted due to the configured policy (cleanup.policy=%s)", ErrPolicyViolation, p.name(), cfg.CleanupPolicy)
	}
	p.amu.Lock()
	if p.fenceErr != nil {
		p.amu.Unlock()
		return -1, &fencedError{cause: p.fenceErr}
	}
	if p.store.closed.Load() {
		p.amu.Unlock()
		return -1, ErrClosed
	}
	leo := p.leo.Load()
	if offset == HighWatermark {
		offset = leo
	}
	if offset < 0 {
		p.amu.Unlock()
		return -1, fmt.Errorf("%w: the offset %d for partition %s is not valid", ErrOffsetOutOfRange, offset, p.name())
	}
	if offset > leo {
		p.amu.Unlock()
		return -1, fmt.Errorf("%w: cannot increment the log start offset to %d of partition %s since it is larger than the high watermark %d", ErrOffsetOutOfRange, offset, p.name(), leo)
	}
	moved := offset > p.logStart.Load()
	if moved {
		// The log start first, then the generation, both under mu with
		// no segment change: a Text that read the old generation either
		// finds its from below the new start (checkRange) or sees the
		// generation move and retries.
		p.mu.Lock()
		p.logStart.Store(offset)
		p.gen.Add(1)
		p.mu.Unlock()
		p.log().Info("log start offset moved by DeleteRecords", "log_start_offset", offset)
	}
	start := p.logStart.Load()
	p.amu.Unlock()
	if moved {
		p.notify()
		p.truncateEpochsStart(start)
	}
	// Persist whenever the checkpoint may be behind, not only when the
	// start moved: a retry after a failed write finds the start moved
	// already and must still not answer before it is on disk.
	if moved || p.savedStart.Load() < start {
		if err := p.store.saveLogStarts(); err != nil {
			p.store.markDirty() // the background writer retries
			return -1, fmt.Errorf("writing %s: %w", logStartCheckpointFile, err)
		}
	}
	return start, nil
}
