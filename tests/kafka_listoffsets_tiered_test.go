package tests

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestKafkaListOffsetsTiered: franz-go asks a mounted partition for its
// earliest local offset (-4, KIP-405) and its latest tiered offset (-5,
// KIP-1005), as kadm's ListLocalLogStartOffsets and ListLatestRemoteOffsets
// do. A Kafka 4 broker without remote storage answers -4 with the log
// start offset (the whole log is local) and -5 with offset -1, timestamp
// -1, leader epoch -1 and no error (nothing is tiered). segfs served
// ListOffsets only up to v7, so franz-go sent both at v7 and got
// UNSUPPORTED_VERSION.
func TestKafkaListOffsetsTiered(t *testing.T) {
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/tier" && for i in $(seq 1 10); do echo "line $i"; done >> "$M/tier/0/data"`)
	if low, code := kafkaDeleteRecords(t, addr, "tier", 4); code != 0 || low != 4 {
		t.Fatalf("DeleteRecords to 4: low watermark %d, error %v", low, kerr.ErrorForCode(code))
	}
	st := m.status("tier")
	if st["log.start.offset"] != 4 || st["log.end.offset"] != 10 {
		t.Fatalf("status log.start.offset=%d log.end.offset=%d, want 4, 10", st["log.start.offset"], st["log.end.offset"])
	}

	p := kafkaListOffsetAnswer(t, addr, "tier", -4)
	if p.ErrorCode != 0 || p.Offset != 4 || p.Timestamp != -1 {
		t.Errorf("earliest local (-4): %v, offset %d, timestamp %d; want the log start offset 4", kerr.ErrorForCode(p.ErrorCode), p.Offset, p.Timestamp)
	}
	p = kafkaListOffsetAnswer(t, addr, "tier", -5)
	if p.ErrorCode != 0 || p.Offset != -1 || p.Timestamp != -1 || p.LeaderEpoch != -1 {
		t.Errorf("latest tiered (-5): %v, offset %d, timestamp %d, epoch %d; want offset -1, timestamp -1, epoch -1", kerr.ErrorForCode(p.ErrorCode), p.Offset, p.Timestamp, p.LeaderEpoch)
	}
	// The others are unchanged at the new versions.
	if p := kafkaListOffsetAnswer(t, addr, "tier", -2); p.ErrorCode != 0 || p.Offset != 4 {
		t.Errorf("earliest (-2): %v, offset %d; want 4", kerr.ErrorForCode(p.ErrorCode), p.Offset)
	}
	if p := kafkaListOffsetAnswer(t, addr, "tier", -1); p.ErrorCode != 0 || p.Offset != 10 {
		t.Errorf("latest (-1): %v, offset %d; want 10", kerr.ErrorForCode(p.ErrorCode), p.Offset)
	}
	// What is left reads the same through the mount.
	if got := m.ok(`head -n1 "$M/tier/0/data"`); got != "line 5\n" {
		t.Errorf("head -n1 data = %q, want line 5", got)
	}
}
