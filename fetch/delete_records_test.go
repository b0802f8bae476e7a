package fetch

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

func deleteRecordsReq(version int16, topic string, parts map[int32]int64) *kmsg.DeleteRecordsRequest {
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.Version = version
	req.TimeoutMillis = 5000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	for p, off := range parts {
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition, rp.Offset = p, off
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// onlyPartition returns the single partition of a DeleteRecords response.
func onlyPartition(t *testing.T, resp *kmsg.DeleteRecordsResponse) kmsg.DeleteRecordsResponseTopicPartition {
	t.Helper()
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("DeleteRecords response %+v: want one topic with one partition", resp)
	}
	return resp.Topics[0].Partitions[0]
}

// TestDeleteRecordsKgo sends DeleteRecords at v0, v1 and v2 with a kgo
// client (which picks the version ApiVersions allows it): the log start
// moves, is on disk at once, and Fetch and ListOffsets see it. It failed
// with "broker does not support" before key 21 was served.
func TestDeleteRecordsKgo(t *testing.T) {
	ts := startServer(t, Config{})
	createTopic(t, ts, "dr", 1)
	raw := dial(t, ts.addr)
	for range 10 {
		raw.produce(9, "dr", 0, produceBatch(t, "a", "b", "c", "d", "e")) // offsets 0-49
	}
	steps := []struct {
		version int16
		offset  int64
		low     int64
		code    int16
	}{
		{0, 12, 12, 0}, // inside a batch
		{1, 7, 12, 0},  // below the log start: nothing happens
		{2, 51, -1, kerr.OffsetOutOfRange.Code},
		{2, 30, 30, 0},
		{1, -1, 50, 0}, // the high watermark
	}
	for _, st := range steps {
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(21, st.version)
		cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.MaxVersions(vs))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		req := deleteRecordsReq(st.version, "dr", map[int32]int64{0: st.offset})
		resp, err := req.RequestWith(ctx, cl)
		cancel()
		cl.Close()
		if err != nil {
			t.Fatalf("v%d DeleteRecords to %d: %v", st.version, st.offset, err)
		}
		if resp.Version != st.version {
			t.Errorf("sent at v%d, want v%d", resp.Version, st.version)
		}
		p := onlyPartition(t, resp)
		if p.ErrorCode != st.code || p.LowWatermark != st.low {
			t.Errorf("v%d DeleteRecords to %d: error %v, low watermark %d; want %v, %d", st.version, st.offset,
				kerr.ErrorForCode(p.ErrorCode), p.LowWatermark, kerr.ErrorForCode(st.code), st.low)
		}
		if st.code != 0 {
			continue
		}
		// The new log start is on disk before the answer.
		b, err := os.ReadFile(filepath.Join(ts.dir, "log-start-offset-checkpoint"))
		if err != nil || !strings.Contains(string(b), "dr 0 "+itoa(st.low)+"\n") {
			t.Errorf("after DeleteRecords to %d the log-start checkpoint holds %q (%v)", st.offset, b, err)
		}
		// ListOffsets earliest answers it; a Fetch below it is out of
		// range and one at it is served.
		lo := kmsg.NewPtrListOffsetsRequest()
		lo.Version, lo.ReplicaID = 7, -1
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = "dr"
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Timestamp = -2
		lt.Partitions = append(lt.Partitions, lp)
		lo.Topics = append(lo.Topics, lt)
		if got := raw.roundTrip(lo).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; got.ErrorCode != 0 || got.Offset != st.low {
			t.Errorf("ListOffsets earliest after DeleteRecords to %d: %+v, want offset %d", st.offset, got, st.low)
		}
		if st.low > 0 {
			fp := raw.roundTrip(fetchReq(12, "dr", 0, st.low-1, 0, 0, 1<<20, 1<<20)).(*kmsg.FetchResponse).Topics[0].Partitions[0]
			// Kafka answers -1 for the offsets of a partition in
			// error: the consumer learns the new start from
			// ListOffsets (above), not from the Fetch.
			if fp.ErrorCode != kerr.OffsetOutOfRange.Code || fp.HighWatermark != -1 || fp.LastStableOffset != -1 || fp.LogStartOffset != -1 {
				t.Errorf("Fetch at %d below the log start %d: error %v, high watermark %d, last stable %d, log start %d; want OFFSET_OUT_OF_RANGE, -1, -1, -1",
					st.low-1, st.low, kerr.ErrorForCode(fp.ErrorCode), fp.HighWatermark, fp.LastStableOffset, fp.LogStartOffset)
			}
		}
		if st.low < 50 {
			fp := raw.roundTrip(fetchReq(12, "dr", 0, st.low, 0, 0, 1<<20, 1<<20)).(*kmsg.FetchResponse).Topics[0].Partitions[0]
			if fp.ErrorCode != 0 || fp.LogStartOffset != st.low || len(fp.RecordBatches) == 0 {
				t.Errorf("Fetch at the log start %d: error %v, log start %d, %d bytes", st.low, kerr.ErrorForCode(fp.ErrorCode), fp.LogStartOffset, len(fp.RecordBatches))
			}
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestDeleteRecordsErrors sends raw DeleteRecords the way Kafka's broker
// answers them: unknown topics and partitions, a compacted topic, an
// internal topic, an offset below -1, and a partition named twice (done
// once at the last offset and answered once, as Kafka's map of partitions
// does).
func TestDeleteRecordsErrors(t *testing.T) {
	ts := startServer(t, Config{})
	createTopic(t, ts, "dr", 2)
	if _, err := ts.store.CreateTopic("compacted", 1, map[string]string{"cleanup.policy": "compact", "key.separator": ":"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.store.CreateTopic("__consumer_offsets", 1, nil); err != nil {
		t.Fatal(err)
	}
	c := dial(t, ts.addr)
	c.produce(9, "dr", 0, produceBatch(t, "a", "b", "c", "d"))
	for v := int16(0); v <= 2; v++ {
		for _, tt := range []struct {
			topic string
			part  int32
			off   int64
			want  *kerr.Error
		}{
			{"nope", 0, 1, kerr.UnknownTopicOrPartition},
			{"dr", 2, 1, kerr.UnknownTopicOrPartition},
			{"dr", -1, 1, kerr.UnknownTopicOrPartition},
			{"compacted", 0, 0, kerr.PolicyViolation},
			{"__consumer_offsets", 0, 0, kerr.InvalidTopicException},
			{"dr", 0, -2, kerr.OffsetOutOfRange},
			{"dr", 1, 1, kerr.OffsetOutOfRange}, // an empty partition's high watermark is 0
		} {
			resp := c.roundTrip(deleteRecordsReq(v, tt.topic, map[int32]int64{tt.part: tt.off})).(*kmsg.DeleteRecordsResponse)
			p := onlyPartition(t, resp)
			if resp.Topics[0].Topic != tt.topic || p.Partition != tt.part || p.ErrorCode != tt.want.Code || p.LowWatermark != -1 {
				t.Errorf("v%d %s/%d to %d: %s/%d error %v low %d; want %s, low -1", v, tt.topic, tt.part, tt.off,
					resp.Topics[0].Topic, p.Partition, kerr.ErrorForCode(p.ErrorCode), p.LowWatermark, tt.want.Message)
			}
		}
	}
	p, _ := ts.store.Partition("dr", 0)
	if p.LogStartOffset() != 0 {
		t.Fatalf("refused requests moved the log start to %d", p.LogStartOffset())
	}
	// The same partition twice, in two topic entries: the last offset wins
	// (3, not 1), one answer.
	req := deleteRecordsReq(2, "dr", map[int32]int64{0: 1})
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = "dr"
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = 0, 3
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := c.roundTrip(req).(*kmsg.DeleteRecordsResponse)
	if got := onlyPartition(t, resp); got.ErrorCode != 0 || got.LowWatermark != 3 || p.LogStartOffset() != 3 {
		t.Errorf("a partition named twice: %+v, log start %d; want low watermark 3", got, p.LogStartOffset())
	}
}
