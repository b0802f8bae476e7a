package fetch

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/segfs/segfs/logstore/record"
)

func offsetForLeaderEpoch(c *client, version int16, topic string, part, current, epoch int32) kmsg.OffsetForLeaderEpochResponseTopicPartition {
	c.t.Helper()
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version = version
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = part, current, epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := c.roundTrip(req).(*kmsg.OffsetForLeaderEpochResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		c.t.Fatalf("OffsetForLeaderEpoch answer %+v", resp)
	}
	return resp.Topics[0].Partitions[0]
}

func listOffsetEpoch(c *client, ts int64, current int32, isolation ...int8) kmsg.ListOffsetsResponseTopicPartition {
	c.t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 7
	if len(isolation) > 0 {
		req.IsolationLevel = isolation[0]
	}
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp, rp.CurrentLeaderEpoch = ts, current
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return c.roundTrip(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
}

// Each open of the store is a new leader epoch, and the protocol shows it
// as Kafka's leader does: Metadata's epoch, batches stamped with it,
// OffsetForLeaderEpoch's end offsets, ListOffsets' epochs, and
// CurrentLeaderEpoch / LastFetchedEpoch checked in Fetch, ListOffsets and
// OffsetForLeaderEpoch.
func TestLeaderEpochsServed(t *testing.T) {
	dir := t.TempDir()
	ts := startServerDir(t, dir, Config{})
	if _, err := ts.store.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	c := dial(t, ts.addr)
	for _, vs := range [][]string{{"a", "b"}, {"c", "d", "e"}} {
		if r := c.produce(9, "t", 0, produceBatch(t, vs...)); r.ErrorCode != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(r.ErrorCode))
		}
	}
	ts.stop()
	ts = startServerDir(t, dir, Config{})
	c = dial(t, ts.addr)
	if r := c.produce(9, "t", 0, produceBatch(t, "f", "g")); r.ErrorCode != 0 || r.BaseOffset != 5 {
		t.Fatalf("produce: %v at %d", kerr.ErrorForCode(r.ErrorCode), r.BaseOffset)
	}

	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 12
	mt := kmsg.NewMetadataRequestTopic()
	name := "t"
	mt.Topic = &name
	meta.Topics = append(meta.Topics, mt)
	if got := c.roundTrip(meta).(*kmsg.MetadataResponse).Topics[0].Partitions[0].LeaderEpoch; got != 1 {
		t.Errorf("Metadata leader epoch %d, want 1", got)
	}

	// The batches carry their leadership's epoch.
	f := fetchReq(12, "t", 0, 0, 0, 0, 1<<20, 1<<20)
	fp := c.roundTrip(f).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	var epochs []int32
	for b := fp.RecordBatches; len(b) > 0; {
		h, err := record.ParseHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		epochs = append(epochs, h.PartitionLeaderEpoch)
		b = b[h.Size():]
	}
	if len(epochs) != 3 || epochs[0] != 0 || epochs[1] != 0 || epochs[2] != 1 {
		t.Errorf("batch epochs %v, want [0 0 1]", epochs)
	}

	for _, v := range []int16{2, 3, 4} {
		for _, tc := range []struct {
			current, epoch int32
			code           int16
			wantEpoch      int32
			wantEnd        int64
		}{
			{-1, 0, 0, 0, 5}, // epoch 0 ends where epoch 1 starts
			{1, 0, 0, 0, 5},
			{1, 1, 0, 1, 7}, // the current epoch ends at the log end
			{1, 2, 0, -1, -1},
			{1, -1, 0, -1, -1},
			{0, 0, kerr.FencedLeaderEpoch.Code, -1, -1},
			{2, 0, kerr.UnknownLeaderEpoch.Code, -1, -1},
		} {
			got := offsetForLeaderEpoch(c, v, "t", 0, tc.current, tc.epoch)
			if got.ErrorCode != tc.code || got.LeaderEpoch != tc.wantEpoch || got.EndOffset != tc.wantEnd {
				t.Errorf("v%d OffsetForLeaderEpoch(current %d, epoch %d) = %v %d %d, want %v %d %d", v, tc.current, tc.epoch,
					kerr.ErrorForCode(got.ErrorCode), got.LeaderEpoch, got.EndOffset, kerr.ErrorForCode(tc.code), tc.wantEpoch, tc.wantEnd)
			}
		}
	}
	if got := offsetForLeaderEpoch(c, 4, "t", 1, -1, 0); got.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown partition: %v", kerr.ErrorForCode(got.ErrorCode))
	}

	for _, tc := range []struct {
		ts        int64
		current   int32
		code      int16
		offset    int64
		wantEpoch int32
	}{
		{-1, -1, 0, 7, 1},
		{-1, 1, 0, 7, 1},
		{-2, 1, 0, 0, 0},
		{0, 1, 0, 0, 0}, // the first record at or after time 0
		{-1, 0, kerr.FencedLeaderEpoch.Code, -1, -1},
		{-1, 2, kerr.UnknownLeaderEpoch.Code, -1, -1},
	} {
		got := listOffsetEpoch(c, tc.ts, tc.current)
		if got.ErrorCode != tc.code || got.Offset != tc.offset || got.LeaderEpoch != tc.wantEpoch {
			t.Errorf("ListOffsets(%d, current %d) = %v offset %d epoch %d, want %v %d %d", tc.ts, tc.current,
				kerr.ErrorForCode(got.ErrorCode), got.Offset, got.LeaderEpoch, kerr.ErrorForCode(tc.code), tc.offset, tc.wantEpoch)
		}
	}
	// read_committed: the last stable offset, with the current epoch.
	if got := listOffsetEpoch(c, -1, -1, 1); got.ErrorCode != 0 || got.Offset != 7 || got.LeaderEpoch != 1 {
		t.Errorf("read_committed ListOffsets(-1) = %v offset %d epoch %d", kerr.ErrorForCode(got.ErrorCode), got.Offset, got.LeaderEpoch)
	}
	if got := listOffsetEpoch(c, -3, -1); got.Offset < 0 || got.LeaderEpoch != map[bool]int32{true: 1, false: 0}[got.Offset >= 5] {
		t.Errorf("ListOffsets(-3) = offset %d epoch %d", got.Offset, got.LeaderEpoch)
	}

	fetch := func(offset int64, current, last int32) kmsg.FetchResponseTopicPartition {
		t.Helper()
		f := fetchReq(12, "t", 0, offset, 0, 0, 1<<20, 1<<20)
		f.Topics[0].Partitions[0].CurrentLeaderEpoch = current
		f.Topics[0].Partitions[0].LastFetchedEpoch = last
		return c.roundTrip(f).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	}
	for _, tc := range []struct {
		current int32
		code    int16
	}{{-1, 0}, {1, 0}, {0, kerr.FencedLeaderEpoch.Code}, {2, kerr.UnknownLeaderEpoch.Code}} {
		got := fetch(5, tc.current, -1)
		if got.ErrorCode != tc.code {
			t.Errorf("Fetch with current epoch %d: %v, want %v", tc.current, kerr.ErrorForCode(got.ErrorCode), kerr.ErrorForCode(tc.code))
		}
		if tc.code != 0 && (got.HighWatermark != -1 || len(got.RecordBatches) != 0) {
			t.Errorf("Fetch fenced: high watermark %d, %d bytes", got.HighWatermark, len(got.RecordBatches))
		}
	}
	// A follower that fetched epoch 0 up to 7 diverged at 5.
	got := fetch(7, 1, 0)
	if got.ErrorCode != 0 || got.DivergingEpoch.Epoch != 0 || got.DivergingEpoch.EndOffset != 5 || len(got.RecordBatches) != 0 || got.HighWatermark != 7 {
		t.Errorf("Fetch(7, last epoch 0) = %v diverging %+v, %d bytes, hw %d", kerr.ErrorForCode(got.ErrorCode), got.DivergingEpoch, len(got.RecordBatches), got.HighWatermark)
	}
	// One that fetched it up to 5 is in line, and so is one in epoch 1.
	for _, tc := range [][2]int64{{5, 0}, {7, 1}, {6, 1}} {
		got := fetch(tc[0], 1, int32(tc[1]))
		if got.ErrorCode != 0 || got.DivergingEpoch.Epoch != -1 || got.DivergingEpoch.EndOffset != -1 {
			t.Errorf("Fetch(%d, last epoch %d) = %v diverging %+v", tc[0], tc[1], kerr.ErrorForCode(got.ErrorCode), got.DivergingEpoch)
		}
	}
	if got := fetch(5, 1, 4); got.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Errorf("Fetch with an unknown last epoch: %v", kerr.ErrorForCode(got.ErrorCode))
	}
}

// A committed offset keeps its leader epoch (OffsetCommit v6+,
// OffsetFetch v5+) across a restart: the epoch a consumer resumes with
// and checks with OffsetForLeaderEpoch.
func TestCommittedLeaderEpochRoundTrip(t *testing.T) {
	dir := t.TempDir()
	ts := startServerDir(t, dir, Config{})
	createTopic(t, ts, "t", 1)
	c := dial(t, ts.addr)
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation = 8, "g", -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = 0, 10, 4
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if code := c.roundTrip(req).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(code))
	}
	ts.stop()
	ts = startServerDir(t, dir, Config{})
	c = dial(t, ts.addr)
	for _, v := range []int16{5, 7} {
		f := kmsg.NewPtrOffsetFetchRequest()
		f.Version, f.Group = v, "g"
		ft := kmsg.NewOffsetFetchRequestTopic()
		ft.Topic, ft.Partitions = "t", []int32{0}
		f.Topics = append(f.Topics, ft)
		got := c.roundTrip(f).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0]
		if got.ErrorCode != 0 || got.Offset != 10 || got.LeaderEpoch != 4 {
			t.Errorf("OffsetFetch v%d: %v offset %d epoch %d, want 10 4", v, kerr.ErrorForCode(got.ErrorCode), got.Offset, got.LeaderEpoch)
		}
	}
}
