package fetch

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func createTopic(t testing.TB, ts *testServer, name string, partitions int) {
	t.Helper()
	if _, err := ts.store.CreateTopic(name, partitions, nil); err != nil {
		t.Fatal(err)
	}
}

// Produce at every version, then fetch at every version: offsets are
// assigned, empty partitions are non-null, HWM = LSO = LEO.
func TestProduceFetchAllVersions(t *testing.T) {
	ts := startServer(t, Config{})
	createTopic(t, ts, "orders", 1)
	c := dial(t, ts.addr)
	var want []string
	next := int64(0)
	for v := int16(3); v <= 12; v++ {
		vals := []string{fmt.Sprintf("v%d-a", v), fmt.Sprintf("v%d-b", v)}
		sp := c.produce(v, "orders", 0, produceBatch(t, vals...))
		if sp.ErrorCode != 0 || sp.BaseOffset != next {
			t.Fatalf("produce v%d: error %d base %d, want base %d", v, sp.ErrorCode, sp.BaseOffset, next)
		}
		next += 2
		want = append(want, vals...)
	}
	for v := int16(4); v <= 12; v++ {
		for _, from := range []int64{0, 5, next} {
			resp := c.roundTrip(fetchReq(v, "orders", 0, from, 0, 0, 1<<20, 1<<20)).(*kmsg.FetchResponse)
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode != 0 || p.HighWatermark != next || p.LastStableOffset != next || (v >= 5 && p.LogStartOffset != 0) {
				t.Fatalf("fetch v%d from %d: %+v", v, from, p)
			}
			if p.RecordBatches == nil {
				t.Fatalf("fetch v%d from %d: null record set", v, from)
			}
			if got := values(t, p.RecordBatches, from); !slices.Equal(got, want[from:]) {
				t.Fatalf("fetch v%d from %d: %q, want %q", v, from, got, want[from:])
			}
			if resp.SessionID != 0 {
				t.Fatalf("session id %d, want 0 (sessions declined)", resp.SessionID)
			}
		}
	}
}

func TestFetchErrors(t *testing.T) {
	ts := startServer(t, Config{})
	createTopic(t, ts, "t", 1)
	c := dial(t, ts.addr)
	c.produce(9, "t", 0, produceBatch(t, "a", "b"))

	// A partition in error carries no offsets: Kafka answers -1 for the
	// high watermark, last stable offset and log start offset of every
	// read error (ReplicaManager's LogReadResult of an exception), out
	// of range as much as unknown.
	for _, tc := range []struct {
		what      string
		topic     string
		partition int32
		offset    int64
		code      int16
	}{
		{"offset past the end", "t", 0, 3, kerr.OffsetOutOfRange.Code},
		{"negative offset", "t", 0, -1, kerr.OffsetOutOfRange.Code},
		{"unknown topic", "nope", 0, 0, kerr.UnknownTopicOrPartition.Code},
		{"unknown partition", "t", 7, 0, kerr.UnknownTopicOrPartition.Code},
	} {
		for _, v := range []int16{4, 11, 12} {
			resp := c.roundTrip(fetchReq(v, tc.topic, tc.partition, tc.offset, 5000, 1, 1<<20, 1<<20)).(*kmsg.FetchResponse)
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode != tc.code {
				t.Errorf("v%d %s: error %v, want %v", v, tc.what, kerr.ErrorForCode(p.ErrorCode), kerr.ErrorForCode(tc.code))
			}
			if p.HighWatermark != -1 || p.LastStableOffset != -1 || (v >= 5 && p.LogStartOffset != -1) {
				t.Errorf("v%d %s: high watermark %d, last stable %d, log start %d; want -1 for each, as Kafka answers",
					v, tc.what, p.HighWatermark, p.LastStableOffset, p.LogStartOffset)
			}
			if len(p.RecordBatches) != 0 {
				t.Errorf("v%d %s: %d bytes of records, want none", v, tc.what, len(p.RecordBatches))
			}
		}
	}
	// Sessions as Kafka's FetchManager.newContext sees them: epoch 0 (open
	// a session) and -1 (none) make a full fetch whatever the session id,
	// which a full fetch closes; any other epoch continues a session, and
	// there is none, not even session 0. segfs refused every non-zero id
	// and served session 0 at any epoch.
	notFound := kerr.FetchSessionIDNotFound.Code
	for _, tc := range []struct {
		id, epoch int32
		code      int16
	}{
		{0, 0, 0}, {0, -1, 0}, {42, 0, 0}, {42, -1, 0},
		{42, 1, notFound}, {0, 1, notFound}, {0, 7, notFound}, {0, -2, notFound}, {42, -2, notFound},
	} {
		for _, v := range []int16{7, 11, 12} {
			req := fetchReq(v, "t", 0, 0, 0, 0, 1<<20, 1<<20)
			req.SessionID, req.SessionEpoch = tc.id, tc.epoch
			resp := c.roundTrip(req).(*kmsg.FetchResponse)
			if resp.ErrorCode != tc.code || resp.SessionID != 0 {
				t.Errorf("v%d session %d epoch %d: error %v, session id %d; want %v, 0",
					v, tc.id, tc.epoch, kerr.ErrorForCode(resp.ErrorCode), resp.SessionID, kerr.ErrorForCode(tc.code))
				continue
			}
			switch {
			case tc.code != 0 && len(resp.Topics) != 0:
				t.Errorf("v%d session %d epoch %d: %d topics with the session error, want none", v, tc.id, tc.epoch, len(resp.Topics))
			case tc.code == 0 && (len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 ||
				resp.Topics[0].Partitions[0].ErrorCode != 0 || len(batchOffsets(resp.Topics[0].Partitions[0].RecordBatches)) != 1):
				t.Errorf("v%d session %d epoch %d: %+v, want the partition's batch", v, tc.id, tc.epoch, resp.Topics)
			}
		}
	}
}

// max_bytes and partition max_bytes cut at batch boundaries, except that
// the response's first batch is whole (KIP-74); a later partition whose
// first batch does not fit gives nothing.
func TestFetchByteLimits(t *testing.T) {
	ts := startServer(t, Config{})
	createTopic(t, ts, "t", 2)
	c := dial(t, ts.addr)
	big := strings.Repeat("x", 5000)
	var size int
	for i := range 4 {
		b := produceBatch(t, fmt.Sprint(big, i))
		size = len(b)
		c.produce(9, "t", 0, b)
		c.produce(9, "t", 1, produceBatch(t, fmt.Sprint(big, i)))
	}
	twoParts := func(maxBytes, partMax int32) *kmsg.FetchRequest {
		req := fetchReq(12, "t", 0, 0, 0, 0, maxBytes, partMax)
		rp := req.Topics[0].Partitions[0]
		rp.Partition = 1
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
		return req
	}
	batches := func(resp *kmsg.FetchResponse) []int {
		var out []int
		for _, p := range resp.Topics[0].Partitions {
			out = append(out, len(batchOffsets(p.RecordBatches)))
		}
		return out
	}
	cases := []struct {
		name              string
		maxBytes, partMax int32
		want              []int
	}{
		{"no limits", 1 << 20, 1 << 20, []int{4, 4}},
		{"partition max 2.5 batches", 1 << 20, int32(size * 5 / 2), []int{2, 2}},
		{"max bytes 3 batches", int32(size * 3), 1 << 20, []int{3, 0}},
		{"max bytes 5 batches", int32(size * 5), 1 << 20, []int{4, 1}},
		{"limits below one batch: first whole (KIP-74), second none", 100, 100, []int{1, 0}},
		{"partition max 0", 1 << 20, 0, []int{1, 0}},
	}
	for _, tc := range cases {
		resp := c.roundTrip(twoParts(tc.maxBytes, tc.partMax)).(*kmsg.FetchResponse)
		if got := batches(resp); !slices.Equal(got, tc.want) {
			t.Errorf("%s: batches per partition %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A fetch at the end waits; an append wakes it at once (well before
// max_wait), and an empty long poll ends after max_wait.
func TestFetchLongPoll(t *testing.T) {
	ts := startServer(t, Config{})
	createTopic(t, ts, "t", 1)
	c := dial(t, ts.addr)

	start := time.Now()
	resp := c.roundTrip(fetchReq(12, "t", 0, 0, 200, 1, 1<<20, 1<<20)).(*kmsg.FetchResponse)
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Errorf("empty long poll returned after %v, want about max_wait 200ms", el)
	}
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.RecordBatches == nil {
		t.Fatalf("empty long poll: %+v", p)
	}

	// A minute-long poll, woken by a produce on another connection.
	corr := c.send(fetchReq(12, "t", 0, 0, 60000, 1, 1<<20, 1<<20))
	time.Sleep(50 * time.Millisecond) // let it park (no assertion depends on it)
	dial(t, ts.addr).produce(9, "t", 0, produceBatch(t, "wake"))
	frame, err := c.readFrame()
	if err != nil {
		t.Fatal(err)
	}
	resp = decodeResponse(t, frame, corr, &kmsg.FetchResponse{Version: 12}).(*kmsg.FetchResponse)
	if got := values(t, resp.Topics[0].Partitions[0].RecordBatches, 0); !slices.Equal(got, []string{"wake"}) {
		t.Fatalf("woken fetch: %q", got)
	}

	// An append through the store's own path (the mount's) wakes it too.
	p, _ := ts.store.Partition("t", 0)
	corr = c.send(fetchReq(12, "t", 0, 1, 60000, 1, 1<<20, 1<<20))
	time.Sleep(50 * time.Millisecond)
	if _, _, err := p.AppendLines([]byte("line\n")); err != nil {
		t.Fatal(err)
	}
	frame, err = c.readFrame()
	if err != nil {
		t.Fatal(err)
	}
	resp = decodeResponse(t, frame, corr, &kmsg.FetchResponse{Version: 12}).(*kmsg.FetchResponse)
	if got := values(t, resp.Topics[0].Partitions[0].RecordBatches, 1); !slices.Equal(got, []string{"line"}) {
		t.Fatalf("woken fetch: %q", got)
	}
}

// The record bytes of a large fetch go by sendfile; user-space writes stay
// at the size of the framing. With CopyRecords they all go through user
// space (the benchmark's comparison).
func TestZeroCopy(t *testing.T) {
	for _, copyRecords := range []bool{false, true} {
		t.Run(fmt.Sprintf("copy=%v", copyRecords), func(t *testing.T) {
			ts := startServer(t, Config{CopyRecords: copyRecords})
			createTopic(t, ts, "big", 1)
			c := dial(t, ts.addr)
			val := strings.Repeat("z", 100<<10)
			for range 40 { // 4 MB
				c.produce(9, "big", 0, produceBatch(t, val, val))
			}
			before := ts.srv.Stats()
			resp := c.roundTrip(fetchReq(11, "big", 0, 0, 0, 0, 64<<20, 64<<20)).(*kmsg.FetchResponse)
			recBytes := int64(len(resp.Topics[0].Partitions[0].RecordBatches))
			// The server counts a sendfile's bytes when the call returns,
			// which may be after the client has read them all: wait (a
			// bounded wait, for liveness) until the count covers them.
			after := ts.srv.Stats()
			for deadline := time.Now().Add(10 * time.Second); !copyRecords && after.SendfileBytes-before.SendfileBytes < recBytes && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
				after = ts.srv.Stats()
			}
			if len(batchOffsets(resp.Topics[0].Partitions[0].RecordBatches)) != 40 {
				t.Fatalf("fetched %d batches", len(batchOffsets(resp.Topics[0].Partitions[0].RecordBatches)))
			}
			user := after.UserBytes - before.UserBytes
			sent := after.SendfileBytes - before.SendfileBytes
			t.Logf("records %d bytes: user-space %d, sendfile %d", recBytes, user, sent)
			if copyRecords {
				if sent != 0 || user < recBytes {
					t.Fatalf("copy mode: user %d sendfile %d for %d record bytes", user, sent, recBytes)
				}
				return
			}
			if sent != recBytes {
				t.Fatalf("sendfile carried %d bytes, want %d", sent, recBytes)
			}
			if user > 256 {
				t.Fatalf("user-space wrote %d bytes for a %d-byte fetch; want only the framing", user, recBytes)
			}
		})
	}
}

func TestListOffsets(t *testing.T) {
	ts := startServer(t, Config{})
	createTopic(t, ts, "t", 1)
	c := dial(t, ts.addr)
	t0 := time.Now().UnixMilli()
	for range 3 {
		c.produce(9, "t", 0, produceBatch(t, "a", "b"))
	}
	list := func(v int16, topic string, ts int64) kmsg.ListOffsetsResponseTopicPartition {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version = v
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = ts
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return c.roundTrip(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	}
	for v := int16(1); v <= 9; v++ {
		if p := list(v, "t", -1); p.ErrorCode != 0 || p.Offset != 6 {
			t.Errorf("v%d latest: %+v", v, p)
		}
		if p := list(v, "t", -2); p.ErrorCode != 0 || p.Offset != 0 {
			t.Errorf("v%d earliest: %+v", v, p)
		}
		if p := list(v, "t", t0-1000); p.ErrorCode != 0 || p.Offset != 0 {
			t.Errorf("v%d by old time: %+v", v, p)
		}
		if p := list(v, "t", time.Now().UnixMilli()+60000); p.ErrorCode != 0 || p.Offset != -1 {
			t.Errorf("v%d by future time: %+v", v, p)
		}
		if p := list(v, "nope", -1); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("v%d unknown topic: %+v", v, p)
		}
	}
	// -3 at every version, as Kafka 3.x's broker: librdkafka 2.0 sends it at v2.
	for _, v := range []int16{1, 2, 7} {
		if p := list(v, "t", -3); p.ErrorCode != 0 || p.Offset < 0 || p.Timestamp < t0 {
			t.Errorf("v%d max timestamp: %+v", v, p)
		}
	}
	// Other negative timestamps are UNSUPPORTED_VERSION, as Kafka's
	// ReplicaManager answers them, before the partition is looked up: -4
	// below v8, -5 below v9, and the rest (which mean nothing) at every
	// version. segfs answered INVALID_REQUEST.
	for v := int16(1); v <= 9; v++ {
		for _, ts := range []int64{-4, -5, -6, -100, math.MinInt64} {
			if (ts == -4 && v >= 8) || (ts == -5 && v >= 9) {
				continue
			}
			for _, topic := range []string{"t", "nope"} {
				if p := list(v, topic, ts); p.ErrorCode != kerr.UnsupportedVersion.Code || p.Offset != -1 || p.Timestamp != -1 {
					t.Errorf("v%d %s timestamp %d: %+v, want UNSUPPORTED_VERSION", v, topic, ts, p)
				}
			}
		}
	}
}

// TestListOffsetsTiered: v8's -4 (earliest local, KIP-405) and v9's -5
// (latest tiered, KIP-1005) are answered as Kafka answers them for a topic
// without remote storage: -4 is the log start offset, as -2, also after
// DeleteRecords moved it and under read_committed; -5 is offset -1,
// timestamp -1, leader epoch -1 and no error. An unknown topic is
// UNKNOWN_TOPIC_OR_PARTITION for both. segfs served ListOffsets up to v7
// only, so kadm's ListLocalLogStartOffsets and ListLatestRemoteOffsets got
// UNSUPPORTED_VERSION.
func TestListOffsetsTiered(t *testing.T) {
	ts := startServer(t, Config{})
	createTopic(t, ts, "t", 1)
	c := dial(t, ts.addr)
	for range 3 {
		c.produce(9, "t", 0, produceBatch(t, "a", "b"))
	}
	list := func(v int16, topic string, ts int64, isolation int8) kmsg.ListOffsetsResponseTopicPartition {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version = v
		req.ReplicaID = -1
		req.IsolationLevel = isolation
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = ts
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return c.roundTrip(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	}
	check := func(start int64) {
		t.Helper()
		for _, iso := range []int8{0, 1} {
			for v := int16(8); v <= 9; v++ {
				if p := list(v, "t", -4, iso); p.ErrorCode != 0 || p.Offset != start || p.Timestamp != -1 {
					t.Errorf("v%d isolation %d earliest local: %+v, want offset %d", v, iso, p, start)
				}
				if p := list(v, "t", -2, iso); p.ErrorCode != 0 || p.Offset != start {
					t.Errorf("v%d isolation %d earliest: %+v, want offset %d", v, iso, p, start)
				}
				if p := list(v, "nope", -4, iso); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
					t.Errorf("v%d unknown topic, earliest local: %+v", v, p)
				}
			}
			if p := list(9, "t", -5, iso); p.ErrorCode != 0 || p.Offset != -1 || p.Timestamp != -1 || p.LeaderEpoch != -1 {
				t.Errorf("v9 isolation %d latest tiered: %+v, want offset -1, timestamp -1, epoch -1", iso, p)
			}
			if p := list(9, "nope", -5, iso); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
				t.Errorf("v9 unknown topic, latest tiered: %+v", p)
			}
			if p := list(9, "t", -1, iso); p.ErrorCode != 0 || p.Offset != 6 {
				t.Errorf("v9 isolation %d latest: %+v", iso, p)
			}
		}
	}
	check(0)
	dr := c.roundTrip(deleteRecordsReq(2, "t", map[int32]int64{0: 3})).(*kmsg.DeleteRecordsResponse)
	if p := onlyPartition(t, dr); p.ErrorCode != 0 || p.LowWatermark != 3 {
		t.Fatalf("DeleteRecords to 3: %+v", p)
	}
	check(3)
}

func TestMetadata(t *testing.T) {
	ts := startServer(t, Config{AutoCreateTopics: true})
	createTopic(t, ts, "a", 3)
	c := dial(t, ts.addr)
	meta := func(v int16, topics []string, auto bool) *kmsg.MetadataResponse {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = v
		req.AllowAutoTopicCreation = auto
		if topics != nil {
			req.Topics = []kmsg.MetadataRequestTopic{}
			for _, name := range topics {
				rt := kmsg.NewMetadataRequestTopic()
				rt.Topic = kmsg.StringPtr(name)
				req.Topics = append(req.Topics, rt)
			}
		}
		return c.roundTrip(req).(*kmsg.MetadataResponse)
	}
	for v := int16(0); v <= 12; v++ {
		r := meta(v, nil, false)
		if v == 0 {
			r = meta(v, []string{}, false) // v0: empty = all
		}
		if len(r.Brokers) != 1 || r.Brokers[0].Host != "127.0.0.1" || fmt.Sprintf("%s:%d", r.Brokers[0].Host, r.Brokers[0].Port) != ts.addr {
			t.Fatalf("v%d brokers %+v", v, r.Brokers)
		}
		if len(r.Topics) != 1 || *r.Topics[0].Topic != "a" || len(r.Topics[0].Partitions) != 3 {
			t.Fatalf("v%d topics %+v", v, r.Topics)
		}
		if v >= 10 && r.Topics[0].TopicID == ([16]byte{}) {
			t.Fatalf("v%d: zero topic id", v)
		}
		for _, p := range r.Topics[0].Partitions {
			if p.Leader != 0 || !slices.Equal(p.ISR, []int32{0}) {
				t.Fatalf("v%d partition %+v", v, p)
			}
		}
	}
	if r := meta(12, []string{}, false); len(r.Topics) != 0 {
		t.Fatalf("empty list: %d topics", len(r.Topics))
	}
	if r := meta(12, []string{"missing"}, false); r.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic without auto-create: %+v", r.Topics[0])
	}
	if r := meta(12, []string{"made"}, true); r.Topics[0].ErrorCode != 0 || len(r.Topics[0].Partitions) != 1 {
		t.Fatalf("auto-created topic: %+v", r.Topics[0])
	}
	if r := meta(12, []string{"bad/name"}, true); r.Topics[0].ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("invalid name: %+v", r.Topics[0])
	}
	// The empty name is an invalid name, not a lookup by a (zero) topic
	// id: there are no ids before v10.
	for _, v := range []int16{4, 12} {
		if r := meta(v, []string{""}, true); r.Topics[0].ErrorCode != kerr.InvalidTopicException.Code {
			t.Fatalf("v%d empty name: %+v", v, r.Topics[0])
		}
	}
	// Metadata by topic id (v10+).
	topic, _ := ts.store.Topic("a")
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	rt := kmsg.NewMetadataRequestTopic()
	rt.TopicID = topic.ID()
	req.Topics = append(req.Topics, rt)
	if r := c.roundTrip(req).(*kmsg.MetadataResponse); r.Topics[0].ErrorCode != 0 || *r.Topics[0].Topic != "a" {
		t.Fatalf("by id: %+v", r.Topics[0])
	}
}

// TestMetadataByIDBeforeV12: v10 and v11 carry topic IDs and nullable
// names, but Kafka serves lookups by ID from v12 only; a v10/v11 request
// naming any topic by ID, or without a name, is refused as a whole
// (handleTopicMetadataRequest's InvalidRequestException): every topic of
// the request answered INVALID_REQUEST by its name ("" for none) and ID,
// with no partitions, no brokers, no cluster ID, controller -1. segfs
// served them, as at v12.
func TestMetadataByIDBeforeV12(t *testing.T) {
	ts := startServer(t, Config{AutoCreateTopics: true})
	createTopic(t, ts, "a", 2)
	c := dial(t, ts.addr)
	topic, _ := ts.store.Topic("a")
	id := topic.ID()
	byID := kmsg.NewMetadataRequestTopic()
	byID.TopicID = id
	byName := kmsg.NewMetadataRequestTopic()
	byName.Topic = kmsg.StringPtr("a")
	both := kmsg.NewMetadataRequestTopic()
	both.Topic, both.TopicID = kmsg.StringPtr("a"), id
	noName := kmsg.NewMetadataRequestTopic() // null name, zero ID
	made := kmsg.NewMetadataRequestTopic()
	made.Topic = kmsg.StringPtr("made")
	meta := func(v int16, topics ...kmsg.MetadataRequestTopic) *kmsg.MetadataResponse {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = v
		req.AllowAutoTopicCreation = true
		req.IncludeTopicAuthorizedOperations = true
		req.Topics = topics
		return c.roundTrip(req).(*kmsg.MetadataResponse)
	}
	for _, v := range []int16{10, 11} {
		for _, tc := range []struct {
			name   string
			topics []kmsg.MetadataRequestTopic
			names  []string
		}{
			{"by id", []kmsg.MetadataRequestTopic{byID}, []string{""}},
			{"by name and id", []kmsg.MetadataRequestTopic{both}, []string{"a"}},
			{"null name", []kmsg.MetadataRequestTopic{noName}, []string{""}},
			// One topic by ID refuses the others too, and nothing
			// is auto-created.
			{"by name, then by id", []kmsg.MetadataRequestTopic{byName, made, byID}, []string{"a", "made", ""}},
		} {
			r := meta(v, tc.topics...)
			if len(r.Brokers) != 0 || r.ClusterID != nil || r.ControllerID != -1 || len(r.Topics) != len(tc.topics) {
				t.Errorf("v%d %s: brokers %+v, cluster %v, controller %d, %d topics; want a refusal of the %d topics", v, tc.name, r.Brokers, r.ClusterID, r.ControllerID, len(r.Topics), len(tc.topics))
				continue
			}
			for i, mt := range r.Topics {
				if mt.ErrorCode != kerr.InvalidRequest.Code || mt.Topic == nil || *mt.Topic != tc.names[i] || mt.TopicID != tc.topics[i].TopicID || len(mt.Partitions) != 0 || mt.IsInternal || mt.AuthorizedOperations != math.MinInt32 {
					t.Errorf("v%d %s: topic %d %+v; want INVALID_REQUEST for %q", v, tc.name, i, mt, tc.names[i])
				}
			}
		}
		if _, err := ts.store.Topic("made"); err == nil {
			t.Fatalf("v%d: a refused request auto-created a topic", v)
		}
		// By name only: served.
		if r := meta(v, byName); len(r.Brokers) != 1 || len(r.Topics) != 1 || r.Topics[0].ErrorCode != 0 || len(r.Topics[0].Partitions) != 2 || r.Topics[0].TopicID != id {
			t.Errorf("v%d by name: %+v", v, r)
		}
	}
	// v12 serves IDs.
	if r := meta(12, byID); len(r.Topics) != 1 || r.Topics[0].ErrorCode != 0 || r.Topics[0].Topic == nil || *r.Topics[0].Topic != "a" {
		t.Errorf("v12 by id: %+v", r.Topics)
	}
}

func TestAdvertise(t *testing.T) {
	ts := startServer(t, Config{Advertise: "kafka.example:1234"})
	c := dial(t, ts.addr)
	r := c.roundTrip(kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse)
	if b := r.Brokers[0]; b.Host != "kafka.example" || b.Port != 1234 {
		t.Fatalf("broker %+v", b)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version = 2
	fc.CoordinatorKey = "g"
	if r := c.roundTrip(fc).(*kmsg.FindCoordinatorResponse); r.ErrorCode != 0 || r.Host != "kafka.example" || r.Port != 1234 {
		t.Fatalf("coordinator %+v", r)
	}
}

func TestProduceErrors(t *testing.T) {
	ts := startServer(t, Config{AutoCreateTopics: false})
	createTopic(t, ts, "t", 1)
	c := dial(t, ts.addr)
	good := produceBatch(t, "x")
	corrupt := slices.Clone(good)
	corrupt[len(corrupt)-1] ^= 0xff
	txn := slices.Clone(good)
	txn[22] |= 0x10
	cases := []struct {
		name  string
		topic string
		part  int32
		batch []byte
		want  *kerr.Error
	}{
		{"unknown topic, no auto-create", "nope", 0, good, kerr.UnknownTopicOrPartition},
		{"unknown partition", "t", 3, good, kerr.UnknownTopicOrPartition},
		{"crc mismatch", "t", 0, corrupt, kerr.CorruptMessage},
		{"short", "t", 0, good[:30], kerr.CorruptMessage},
		// Without a transactional id, refused as unauthorized (see
		// TestProduceTransactionalWithoutID).
		{"transactional", "t", 0, txn, kerr.TransactionalIDAuthorizationFailed},
	}
	for _, tc := range cases {
		sp := c.produce(9, tc.topic, tc.part, tc.batch)
		if sp.ErrorCode != tc.want.Code {
			t.Errorf("%s: error %d (%v), want %s", tc.name, sp.ErrorCode, kerr.ErrorForCode(sp.ErrorCode), tc.want.Message)
		}
	}
	// acks=0: no response; the next request's answer comes next.
	req := kmsg.NewPtrProduceRequest()
	req.Version = 7
	req.Acks = 0
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = produceBatch(t, "fire and forget")
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	c.send(req)
	if r := c.roundTrip(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
		t.Fatal(r.ErrorCode)
	}
	p, _ := ts.store.Partition("t", 0)
	if p.LogEndOffset() != 1 {
		t.Fatalf("acks=0 record not appended: end %d", p.LogEndOffset())
	}
	// acks=0 into a partition that fails: no response can carry the
	// error, so the connection is closed (Kafka does the same).
	bad := dial(t, ts.addr)
	req.Topics[0].Topic = "nope"
	req.Topics[0].Partitions[0].Records = produceBatch(t, "into nothing")
	bad.send(req)
	bad.send(kmsg.NewPtrApiVersionsRequest())
	if _, err := bad.readFrame(); err == nil {
		t.Fatal("acks=0 into an unknown topic: the connection stayed open")
	}
	req.Topics[0].Topic = "t"
	// Invalid acks.
	req.Acks = 2
	resp := c.roundTrip(req).(*kmsg.ProduceResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.InvalidRequiredAcks.Code {
		t.Fatalf("acks=2: error %d", code)
	}
}

func TestInitProducerID(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	seen := map[int64]bool{}
	for v := int16(0); v <= 4; v++ {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version = v
		r := c.roundTrip(req).(*kmsg.InitProducerIDResponse)
		if r.ErrorCode != 0 || r.ProducerID < 0 || r.ProducerEpoch != 0 || seen[r.ProducerID] {
			t.Fatalf("v%d: %+v", v, r)
		}
		seen[r.ProducerID] = true
	}
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = kmsg.StringPtr("txn")
	if r := c.roundTrip(req).(*kmsg.InitProducerIDResponse); r.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("transactional id: error %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", kerr.ErrorForCode(r.ErrorCode))
	}
}

// Committed offsets survive a restart of server and store.
func TestOffsetCommitFetch(t *testing.T) {
	dir := t.TempDir()
	ts := startServerDir(t, dir, Config{})
	createTopic(t, ts, "t", 2)
	c := dial(t, ts.addr)

	commit := func(c *client, v int16, group string, gen int32, member string, part int32, off int64) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = v
		req.Group, req.Generation, req.MemberID = group, gen, member
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.Metadata = part, off, kmsg.StringPtr("m")
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return c.roundTrip(req).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	for v := int16(0); v <= 9; v++ {
		if code := commit(c, v, "g", -1, "", 0, int64(10+v)); code != 0 {
			t.Fatalf("commit v%d: error %d", v, code)
		}
	}
	if code := commit(c, 9, "g", 3, "member-1", 0, 1); code != kerr.UnknownMemberID.Code {
		t.Errorf("commit with a generation: error %d, want 25", code)
	}
	// Kafka's ClassicGroup.validateOffsetCommit: generation -1 on an empty
	// group is accepted whatever member and instance id come with it
	// (librdkafka sends its group.instance.id with assign()+commit).
	if code := commit(c, 9, "g", -1, "member-1", 0, 19); code != 0 {
		t.Errorf("generation -1 with a member id: error %d, want 0", code)
	}
	static := kmsg.NewPtrOffsetCommitRequest()
	static.Version, static.Group, static.Generation, static.InstanceID = 7, "g", -1, kmsg.StringPtr("inst-1")
	st := kmsg.NewOffsetCommitRequestTopic()
	st.Topic = "t"
	sp := kmsg.NewOffsetCommitRequestTopicPartition()
	sp.Partition, sp.Offset, sp.Metadata = 0, 19, kmsg.StringPtr("m")
	st.Partitions = append(st.Partitions, sp)
	static.Topics = append(static.Topics, st)
	if code := c.roundTrip(static).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Errorf("generation -1 with a group instance id: error %d, want 0", code)
	}
	// A generation for a group that does not exist (OffsetMetadataManager).
	if code := commit(c, 9, "nogroup", 3, "member-1", 0, 1); code != kerr.GroupIDNotFound.Code {
		t.Errorf("generation for an unknown group at v9: error %d, want 69", code)
	}
	if code := commit(c, 8, "nogroup", 3, "member-1", 0, 1); code != kerr.IllegalGeneration.Code {
		t.Errorf("generation for an unknown group at v8: error %d, want 22", code)
	}
	// The empty group id is a group (Kafka 4 refuses only a null one).
	if code := commit(c, 9, "", -1, "", 0, 1); code != 0 {
		t.Errorf("simple commit to the empty group id: error %d, want 0", code)
	}
	if code := commit(c, 9, "g", -1, "", 9, 1); code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown partition: error %d, want 3", code)
	}
	// Kafka's handleOffsetCommitRequest answers a partition that does not
	// exist before the group coordinator sees the commit, so the group's
	// error goes to the other partitions only; segfs gave it to all.
	for _, tc := range []struct {
		group string
		gen   int32
		want  *kerr.Error
	}{{"nogroup", 3, kerr.GroupIDNotFound}, {"", 3, kerr.UnknownMemberID}} {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.Generation, req.MemberID = 9, tc.group, tc.gen, "member-1"
		for _, topic := range []string{"t", "nope"} {
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = topic
			for _, part := range []int32{0, 9} {
				rp := kmsg.NewOffsetCommitRequestTopicPartition()
				rp.Partition, rp.Offset = part, 1
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		resp := c.roundTrip(req).(*kmsg.OffsetCommitResponse)
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				want := kerr.UnknownTopicOrPartition
				if rt.Topic == "t" && rp.Partition == 0 {
					want = tc.want
				}
				if rp.ErrorCode != want.Code {
					t.Errorf("group %q commit of %s/%d: %v, want %s", tc.group, rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode), want.Message)
				}
			}
		}
	}
	commit(c, 9, "g", -1, "", 1, 7)

	ts.stop()
	ts = startServerDir(t, dir, Config{})
	c = dial(t, ts.addr)

	fetchOld := func(v int16, group string, all bool) map[int32]int64 {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = v
		req.Group = group
		if !all {
			rt := kmsg.NewOffsetFetchRequestTopic()
			rt.Topic = "t"
			rt.Partitions = []int32{0, 1}
			req.Topics = append(req.Topics, rt)
		}
		r := c.roundTrip(req).(*kmsg.OffsetFetchResponse)
		out := map[int32]int64{}
		for _, tp := range r.Topics {
			for _, p := range tp.Partitions {
				if p.ErrorCode != 0 {
					t.Fatalf("v%d: error %d", v, p.ErrorCode)
				}
				out[p.Partition] = p.Offset
			}
		}
		return out
	}
	for v := int16(0); v <= 7; v++ {
		if got := fetchOld(v, "g", false); got[0] != 19 || got[1] != 7 {
			t.Errorf("offset fetch v%d: %v", v, got)
		}
		if got := fetchOld(v, "unknown-group", false); got[0] != -1 || got[1] != -1 {
			t.Errorf("unknown group v%d: %v (want -1, no error: P9)", v, got)
		}
	}
	if got := fetchOld(7, "g", true); got[0] != 19 || got[1] != 7 {
		t.Errorf("all topics: %v", got)
	}
	for v := int16(8); v <= 9; v++ {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = v
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = "g"
		req.Groups = append(req.Groups, g) // null topics: all
		r := c.roundTrip(req).(*kmsg.OffsetFetchResponse)
		if len(r.Groups) != 1 || len(r.Groups[0].Topics) != 1 || len(r.Groups[0].Topics[0].Partitions) != 2 ||
			r.Groups[0].Topics[0].Partitions[0].Offset != 19 || *r.Groups[0].Topics[0].Partitions[0].Metadata != "m" {
			t.Errorf("offset fetch v%d: %+v", v, r.Groups)
		}
	}
	// FindCoordinator at every version names this node.
	for v := int16(0); v <= 4; v++ {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version = v
		req.CoordinatorKey = "g"
		req.CoordinatorKeys = []string{"g", "h"}
		r := c.roundTrip(req).(*kmsg.FindCoordinatorResponse)
		if v < 4 && (r.ErrorCode != 0 || r.NodeID != 0 || fmt.Sprintf("%s:%d", r.Host, r.Port) != ts.addr) {
			t.Errorf("find coordinator v%d: %+v", v, r)
		}
		if v == 4 && (len(r.Coordinators) != 2 || r.Coordinators[1].Key != "h" || r.Coordinators[1].NodeID != 0) {
			t.Errorf("find coordinator v4: %+v", r.Coordinators)
		}
	}
	// A transaction coordinator is refused with the one error every
	// client takes as final: with COORDINATOR_NOT_AVAILABLE a
	// transactional producer looped on FindCoordinator until its own
	// timeout, and librdkafka loops on INVALID_REQUEST too. (v0 has no
	// coordinator type: it always asks for a group.)
	for v := int16(1); v <= 4; v++ {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version = v
		req.CoordinatorType = 1
		req.CoordinatorKey = "tx"
		req.CoordinatorKeys = []string{"tx"}
		r := c.roundTrip(req).(*kmsg.FindCoordinatorResponse)
		code, msg, node := r.ErrorCode, r.ErrorMessage, r.NodeID
		if v == 4 {
			if len(r.Coordinators) != 1 || r.Coordinators[0].Key != "tx" {
				t.Fatalf("txn coordinator v4: %+v", r.Coordinators)
			}
			code, msg, node = r.Coordinators[0].ErrorCode, r.Coordinators[0].ErrorMessage, r.Coordinators[0].NodeID
		}
		err := kerr.ErrorForCode(code)
		if err != kerr.TransactionalIDAuthorizationFailed || node != -1 {
			t.Errorf("txn coordinator v%d: error %v node %d, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED and node -1", v, err, node)
		}
		if msg == nil || !strings.Contains(*msg, "transactions") {
			t.Errorf("txn coordinator v%d: error message %v does not say why", v, msg)
		}
	}
}

// Shutdown answers a parked long poll at once, closes idle connections,
// and Serve returns nil.
func TestShutdownGraceful(t *testing.T) {
	ts := startServer(t, Config{})
	createTopic(t, ts, "t", 1)
	busy := dial(t, ts.addr)
	idle := dial(t, ts.addr)
	idle.roundTrip(kmsg.NewPtrApiVersionsRequest())
	corr := busy.send(fetchReq(12, "t", 0, 0, 60000, 1, 1<<20, 1<<20))
	waitFor(t, func() bool { return ts.srv.Stats().Requests >= 2 })
	time.Sleep(50 * time.Millisecond)

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		done <- ts.srv.Shutdown(ctx)
	}()
	frame, err := busy.readFrame()
	if err != nil {
		t.Fatalf("in-flight fetch not answered: %v", err)
	}
	decodeResponse(t, frame, corr, &kmsg.FetchResponse{Version: 12})
	expectClosed(t, idle, "idle connection")
	expectClosed(t, busy, "busy connection after its response")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// An advertised address must be HOST:PORT with a real port: anything else
// used to become port 9092 silently.
func TestCheckAdvertise(t *testing.T) {
	for _, ok := range []string{"kafka.example:1234", "127.0.0.1:9092", "[::1]:29092", "h:65535"} {
		if err := CheckAdvertise(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "kafka.example", "kafka.example:", "kafka.example:abc", "h:0", "h:65536", "h:-1", ":9092", "::1:9092"} {
		if err := CheckAdvertise(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestProduceCreatesOnlyReachablePartitions: a Produce to an unknown topic
// creates it (auto-creation on, issue #4) only if the partition asked for
// is one the new topic will have; past the default partition count it
// answers UNKNOWN_TOPIC_OR_PARTITION and creates nothing (it used to create
// the topic, then refuse the partition). With auto-creation off nothing is
// created.
func TestProduceCreatesOnlyReachablePartitions(t *testing.T) {
	ts := startServer(t, Config{AutoCreateTopics: true})
	c := dial(t, ts.addr)
	if sp := c.produce(9, "ghost", 5, produceBatch(t, "x")); sp.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("produce to unknown topic ghost/5: error %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(sp.ErrorCode))
	}
	if _, err := ts.store.Topic("ghost"); err == nil {
		t.Fatal("produce to ghost/5, past the default partition count, created the topic")
	}
	if sp := c.produce(9, "ghost", 0, produceBatch(t, "x")); sp.ErrorCode != 0 || sp.BaseOffset != 0 {
		t.Fatalf("produce to unknown topic ghost/0: %+v, want it created and appended at 0", sp)
	}
	if sp := c.produce(9, "ghost", 5, produceBatch(t, "x")); sp.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("produce past the partition count: error %v", kerr.ErrorForCode(sp.ErrorCode))
	}

	off := startServer(t, Config{AutoCreateTopics: false})
	c = dial(t, off.addr)
	if sp := c.produce(9, "ghost", 0, produceBatch(t, "x")); sp.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("auto-creation off: produce to unknown ghost/0: error %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(sp.ErrorCode))
	}
	if _, err := off.store.Topic("ghost"); err == nil {
		t.Fatal("auto-creation off: produce created the topic")
	}
}

// A ListOffsets naming a partition twice is INVALID_REQUEST at both of its
// entries (Kafka's ListOffsetsRequest.duplicatePartitions), whether the
// two are in one topic entry or two; the other partitions are answered.
// segfs answered every entry.
func TestListOffsetsDuplicatePartitions(t *testing.T) {
	ts := startServer(t, Config{})
	createTopic(t, ts, "t", 2)
	c := dial(t, ts.addr)
	c.produce(9, "t", 0, produceBatch(t, "a", "b"))
	part := func(p int32, ts int64) kmsg.ListOffsetsRequestTopicPartition {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p, ts
		return rp
	}
	for v := int16(1); v <= 7; v++ {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version, req.ReplicaID = v, -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "t"
		rt.Partitions = append(rt.Partitions, part(0, -1), part(1, -1), part(0, -2))
		rt2 := kmsg.NewListOffsetsRequestTopic()
		rt2.Topic = "t"
		rt2.Partitions = append(rt2.Partitions, part(1, -2))
		rt3 := kmsg.NewListOffsetsRequestTopic()
		rt3.Topic = "nope" // once: answered as unknown
		rt3.Partitions = append(rt3.Partitions, part(0, -1))
		req.Topics = append(req.Topics, rt, rt2, rt3)
		resp := c.roundTrip(req).(*kmsg.ListOffsetsResponse)
		type ans struct {
			topic     string
			part      int32
			code      int16
			offset    int64
			timestamp int64
		}
		var got []ans
		for _, st := range resp.Topics {
			for _, sp := range st.Partitions {
				got = append(got, ans{st.Topic, sp.Partition, sp.ErrorCode, sp.Offset, sp.Timestamp})
			}
		}
		inv, unk := kerr.InvalidRequest.Code, kerr.UnknownTopicOrPartition.Code
		want := []ans{{"t", 0, inv, -1, -1}, {"t", 1, inv, -1, -1}, {"t", 0, inv, -1, -1}, {"t", 1, inv, -1, -1}, {"nope", 0, unk, -1, -1}}
		if !slices.Equal(got, want) {
			t.Errorf("v%d: answered %+v, want %+v", v, got, want)
		}
		// Alone, each partition is answered.
		one := kmsg.NewPtrListOffsetsRequest()
		one.Version, one.ReplicaID = v, -1
		rt = kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "t"
		rt.Partitions = append(rt.Partitions, part(0, -1), part(1, -1))
		one.Topics = append(one.Topics, rt)
		ps := c.roundTrip(one).(*kmsg.ListOffsetsResponse).Topics[0].Partitions
		if ps[0].ErrorCode != 0 || ps[0].Offset != 2 || ps[1].ErrorCode != 0 || ps[1].Offset != 0 {
			t.Errorf("v%d: distinct partitions answered %+v", v, ps)
		}
	}
}

// TestMetadataNoInternalAutoCreate: with auto-creation on, a Metadata
// request (v0, where it is implied, and v12 asking for it) or a Produce
// naming one of Kafka's internal topics does not create it: the answer is
// INVALID_TOPIC_EXCEPTION (what Kafka answers a client's produce to its
// internal topic, which it creates on a Metadata request), and
// UNKNOWN_TOPIC_OR_PARTITION to a produce from Kafka's admin client id,
// which may write there. segfs created a one-partition delete-policy
// __consumer_offsets nobody could produce to, then answered the retriable
// UNKNOWN_TOPIC_OR_PARTITION, on which kcat -P waited 30 s.
func TestMetadataNoInternalAutoCreate(t *testing.T) {
	ts := startServer(t, Config{AutoCreateTopics: true})
	c := dial(t, ts.addr)
	for _, name := range []string{"__consumer_offsets", "__transaction_state", "__share_group_state"} {
		for _, v := range []int16{0, 12} {
			req := kmsg.NewPtrMetadataRequest()
			req.Version, req.AllowAutoTopicCreation = v, true
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(name)
			req.Topics = append(req.Topics, rt)
			r := c.roundTrip(req).(*kmsg.MetadataResponse)
			if len(r.Topics) != 1 || r.Topics[0].ErrorCode != kerr.InvalidTopicException.Code || r.Topics[0].IsInternal != (v >= 1) {
				t.Errorf("metadata v%d for %s: %+v, want INVALID_TOPIC_EXCEPTION, internal from v1", v, name, r.Topics)
			}
		}
		if sp := c.produce(9, name, 0, produceBatch(t, "x")); sp.ErrorCode != kerr.InvalidTopicException.Code {
			t.Errorf("produce to %s: %v, want INVALID_TOPIC_EXCEPTION", name, kerr.ErrorForCode(sp.ErrorCode))
		}
		preq := kmsg.NewPtrProduceRequest()
		preq.Version, preq.Acks, preq.TimeoutMillis = 9, -1, 5000
		prt := kmsg.NewProduceRequestTopic()
		prt.Topic = name
		prp := kmsg.NewProduceRequestTopicPartition()
		prp.Records = produceBatch(t, "x")
		prt.Partitions = append(prt.Partitions, prp)
		preq.Topics = append(preq.Topics, prt)
		c.corr++
		if _, err := c.conn.Write(encodeRequest(preq, c.corr, adminClientID)); err != nil {
			t.Fatal(err)
		}
		frame, err := c.readFrame()
		if err != nil {
			t.Fatal(err)
		}
		presp := decodeResponse(t, frame, c.corr, preq.ResponseKind()).(*kmsg.ProduceResponse)
		if code := presp.Topics[0].Partitions[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("admin client's produce to %s: %v, want UNKNOWN_TOPIC_OR_PARTITION", name, kerr.ErrorForCode(code))
		}
		if _, err := ts.store.Topic(name); err == nil {
			t.Errorf("%s was auto-created", name)
		}
	}
}

// TestMetadataInvalidNameNotCreated: a topic Metadata does not create is
// answered as Kafka's getTopicMetadata answers it: INVALID_TOPIC_EXCEPTION
// for a name no topic can have (segfs said UNKNOWN_TOPIC_OR_PARTITION,
// which clients retry), UNKNOWN_TOPIC_OR_PARTITION for a valid one, and
// is_internal set for Kafka's internal names.
func TestMetadataInvalidNameNotCreated(t *testing.T) {
	for _, auto := range []bool{false, true} {
		ts := startServer(t, Config{AutoCreateTopics: auto})
		c := dial(t, ts.addr)
		for _, v := range []int16{1, 4, 9, 12} {
			if auto && v < 4 {
				continue // before v4 the request cannot refuse creation
			}
			for _, tc := range []struct {
				name     string
				want     *kerr.Error
				internal bool
			}{
				{"bad name", kerr.InvalidTopicException, false},
				{strings.Repeat("n", 250), kerr.InvalidTopicException, false},
				{"..", kerr.InvalidTopicException, false},
				{"missing", kerr.UnknownTopicOrPartition, false},
				{"__consumer_offsets", kerr.InvalidTopicException, true},
			} {
				req := kmsg.NewPtrMetadataRequest()
				req.Version, req.AllowAutoTopicCreation = v, false
				rt := kmsg.NewMetadataRequestTopic()
				rt.Topic = kmsg.StringPtr(tc.name)
				req.Topics = append(req.Topics, rt)
				r := c.roundTrip(req).(*kmsg.MetadataResponse)
				if len(r.Topics) != 1 {
					t.Fatalf("auto=%v v%d %.20q: %d topics", auto, v, tc.name, len(r.Topics))
				}
				mt := r.Topics[0]
				if mt.ErrorCode != tc.want.Code || mt.IsInternal != tc.internal || mt.Topic == nil || *mt.Topic != tc.name {
					t.Errorf("auto=%v v%d %.20q: error %v internal %v, want %s internal %v",
						auto, v, tc.name, kerr.ErrorForCode(mt.ErrorCode), mt.IsInternal, tc.want.Message, tc.internal)
				}
			}
		}
		if n := len(ts.store.Topics()); n != 0 {
			t.Errorf("auto=%v: %d topics created", auto, n)
		}
	}
}

// TestFetchUnknownOffsets: a partition that does not exist answers
// UNKNOWN_TOPIC_OR_PARTITION with high watermark, last stable offset and
// log start offset -1, as Kafka's FetchResponse.partitionResponse does;
// librdkafka reads the high watermark before the error code. segfs sent a
// high watermark of 0. A known partition in the same request is unchanged.
func TestFetchUnknownOffsets(t *testing.T) {
	ts := startServer(t, Config{})
	createTopic(t, ts, "t", 1)
	c := dial(t, ts.addr)
	c.produce(9, "t", 0, produceBatch(t, "a", "b"))
	for _, v := range []int16{4, 5, 11, 12} {
		req := fetchReq(v, "nope", 0, 0, 0, 0, 1<<20, 1<<20)
		for _, tp := range [][2]any{{"t", int32(7)}, {"t", int32(0)}} {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = tp[0].(string)
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = tp[1].(int32), 0, 1<<20
			rp.LogStartOffset = -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		resp := c.roundTrip(req).(*kmsg.FetchResponse)
		if len(resp.Topics) != 3 {
			t.Fatalf("v%d: %d topics", v, len(resp.Topics))
		}
		for i, name := range []string{"nope/0", "t/7"} {
			p := resp.Topics[i].Partitions[0]
			const wantStart = -1 // before v5 not on the wire, and kmsg's default
			if p.ErrorCode != kerr.UnknownTopicOrPartition.Code || p.HighWatermark != -1 || p.LastStableOffset != -1 || p.LogStartOffset != wantStart {
				t.Errorf("v%d %s: error %v high watermark %d last stable %d log start %d; want UNKNOWN_TOPIC_OR_PARTITION, -1, -1, %d",
					v, name, kerr.ErrorForCode(p.ErrorCode), p.HighWatermark, p.LastStableOffset, p.LogStartOffset, wantStart)
			}
		}
		if p := resp.Topics[2].Partitions[0]; p.ErrorCode != 0 || p.HighWatermark != 2 || p.LastStableOffset != 2 {
			t.Errorf("v%d t/0: %+v", v, p)
		}
	}
}

// Produce frames are reused (produceFrames): batches of shrinking and
// growing sizes on one connection, a refused one among them, and other
// connections producing at the same time, each store exactly their own
// records, and a fetch returns every value as produced.
func TestProduceFramesReused(t *testing.T) {
	ts := startServer(t, Config{})
	createTopic(t, ts, "reuse", 3)
	sizes := []int{300, 3, 120, 1, 600, 40}
	errs := make(chan error, 3)
	for part := range int32(3) {
		go func() {
			c := dial(t, ts.addr)
			var want []string
			for round, n := range sizes {
				vals := make([]string, n)
				for i := range vals {
					vals[i] = fmt.Sprintf("p%d-r%d-%d-%s", part, round, i, strings.Repeat(string(rune('a'+round)), 200+i%7))
				}
				bad := produceBatch(t, "x")
				bad[len(bad)-1] ^= 1 // CRC no longer matches: refused, nothing stored
				if sp := c.produce(9, "reuse", part, bad); sp.ErrorCode != kerr.CorruptMessage.Code {
					errs <- fmt.Errorf("partition %d round %d: corrupt batch answered %d", part, round, sp.ErrorCode)
					return
				}
				if sp := c.produce(9, "reuse", part, produceBatch(t, vals...)); sp.ErrorCode != 0 || sp.BaseOffset != int64(len(want)) {
					errs <- fmt.Errorf("partition %d round %d: error %d base %d, want base %d", part, round, sp.ErrorCode, sp.BaseOffset, len(want))
					return
				}
				want = append(want, vals...)
			}
			resp := c.roundTrip(fetchReq(12, "reuse", part, 0, 0, 0, 16<<20, 16<<20)).(*kmsg.FetchResponse)
			if got := values(t, resp.Topics[0].Partitions[0].RecordBatches, 0); !slices.Equal(got, want) {
				errs <- fmt.Errorf("partition %d: fetched %d values, want %d (or they differ)", part, len(got), len(want))
				return
			}
			errs <- nil
		}()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
