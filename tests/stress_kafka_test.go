package tests

// TestStressEverything (stress_all_test.go): the Kafka clients, producers,
// consumers and admin requests, and what each checks.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// --- Kafka clients ---------------------------------------------------------

func (r *stressRig) client(opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(r.addr),
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.RetryTimeout(30 * time.Second),
		kgo.MetadataMinAge(100 * time.Millisecond),
		kgo.MetadataMaxAge(time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}, opts...)...)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(cl.Close)
	return cl
}

func (r *stressRig) startKafka() []*kgo.Client {
	// Batches well under segment.bytes (4096): a batch the broker
	// stores larger than a segment is refused (RECORD_LIST_TOO_LARGE, as
	// Kafka), and with compression.type=uncompressed it stores them
	// decompressed.
	prod := r.client(kgo.ProducerLinger(2*time.Millisecond), kgo.ProducerBatchMaxBytes(int32(max(512, min(2000, r.segMin*2/3)))))
	for _, tp := range []stressTP{{"del", 0}, {"del", 1}, {"cmp", 0}, {"cmp", 1}} {
		r.goLoop(func() { r.produceLoop(prod, tp) })
	}
	growProd := r.client(kgo.ProducerLinger(2 * time.Millisecond))
	r.goLoop(func() { r.produceGrow(growProd) })

	uncommitted := r.client(kgo.ConsumeTopics("del", "cmp", "grow"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	committed := r.client(kgo.ConsumeTopics("del", "cmp", "grow"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	r.goLoop(func() { r.consumeLoop(uncommitted, "read_uncommitted", true) })
	r.goLoop(func() { r.consumeLoop(committed, "read_committed", true) })

	group := r.client(kgo.ConsumeTopics("del", "cmp"), kgo.ConsumerGroup(stressGroup),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { r.count("group assignments", 1) }),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AutoCommitInterval(200*time.Millisecond),
		kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(500*time.Millisecond))
	r.goLoop(func() { r.consumeLoop(group, "group", false) })
	// A second member joins and leaves, so the group rebalances under load.
	r.goLoop(func() {
		for i := 0; ; i++ {
			cl, err := kgo.NewClient(kgo.SeedBrokers(r.addr), kgo.ConsumeTopics("del", "cmp"), kgo.ConsumerGroup(stressGroup),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AutoCommitInterval(200*time.Millisecond),
				kgo.FetchMaxWait(200*time.Millisecond), kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(500*time.Millisecond))
			if err != nil {
				r.fail("client", "%v", err)
				return
			}
			stop := time.After(time.Duration(1000+rand.IntN(2000)) * time.Millisecond)
		poll:
			for {
				select {
				case <-r.quit:
					cl.Close()
					return
				case <-stop:
					break poll
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				fs := cl.PollFetches(ctx)
				cancel()
				r.fetchChecks(fs, "group-2", nil)
			}
			cl.Close()
			r.count("group-2 rounds", 1)
			select {
			case <-r.quit:
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	})
	r.admin = r.client()
	return []*kgo.Client{prod, growProd, uncommitted, committed, group, r.admin}
}

func (r *stressRig) goLoop(f func()) {
	r.wg.Add(1)
	go func() { defer r.wg.Done(); f() }()
}

func (r *stressRig) stopping() bool {
	select {
	case <-r.quit:
		return true
	default:
		return false
	}
}

// produceLoop produces "pN SEQ" records (keyed as a cmp writer on cmp) to
// tp, up to 64 in flight, and records every ack.
func (r *stressRig) produceLoop(cl *kgo.Client, tp stressTP) {
	id := fmt.Sprintf("p%d", tp.part)
	sem := make(chan struct{}, 64)
	var inflight sync.WaitGroup
	for seq := 1; !r.stopping() && os.Getenv("SEGFS_STRESS_NOPRODUCE") == ""; seq++ {
		sem <- struct{}{}
		line := stressLine(id, seq, tp.keyed())
		rec := &kgo.Record{Topic: tp.topic, Partition: tp.part, Value: []byte(line)}
		if tp.keyed() {
			k, v, _ := strings.Cut(line, "=")
			rec.Key = []byte(k)
			rec.Value = []byte(v)
			if v == "" {
				rec.Value = nil
			}
		}
		inflight.Add(1)
		cl.Produce(context.Background(), rec, func(rec *kgo.Record, err error) {
			defer inflight.Done()
			defer func() { <-sem }()
			if err != nil {
				r.fail("produce failed", "%s seq %d: %v", tp, seq, err)
				return
			}
			r.mu.Lock()
			if r.acked[tp] == nil {
				r.acked[tp] = map[int64]string{}
			}
			r.acked[tp][rec.Offset] = line
			if seq > r.prodSeq[tp] {
				r.prodSeq[tp] = seq
			}
			r.mu.Unlock()
			r.observe(tp, rec.Offset, line, "produce ack")
			r.count("produced", 1)
		})
		if seq%50 == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		if seq%3000 == 0 {
			// Idle past --producer-id-expiration: the daemon drops
			// this producer's state, and it goes on.
			r.sleep(2500 * time.Millisecond)
		}
	}
	inflight.Wait()
}

// produceGrow produces to the grow partitions created so far.
func (r *stressRig) produceGrow(cl *kgo.Client) {
	for seq := 1; !r.stopping(); seq++ {
		p := rand.Int32N(r.growParts.Load())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		line := stressLine("q", seq, false)
		res := cl.ProduceSync(ctx, &kgo.Record{Topic: "grow", Partition: p, Value: []byte(line)})
		cancel()
		if err := res.FirstErr(); err != nil {
			// The client's metadata may not know a new partition yet:
			// kgo refuses on its own side, nothing was sent.
			if strings.Contains(err.Error(), "invalid record partitioning choice") {
				r.count("grow produce before metadata", 1)
				time.Sleep(50 * time.Millisecond)
				continue
			}
			r.fail("produce failed", "grow/%d seq %d: %v", p, seq, err)
			continue
		}
		r.observe(stressTP{"grow", p}, res[0].Record.Offset, line, "produce ack")
		r.mu.Lock()
		tp := stressTP{"grow", p}
		if r.acked[tp] == nil {
			r.acked[tp] = map[int64]string{}
		}
		r.acked[tp][res[0].Record.Offset] = line
		r.mu.Unlock()
		time.Sleep(2 * time.Millisecond)
	}
}

// stressRender is a record as its line in data.
func stressRender(topic string, rec *kgo.Record) string {
	if topic == "cmp" {
		return string(rec.Key) + "=" + string(rec.Value)
	}
	return string(rec.Value)
}

// consumeLoop polls cl and checks what it gets; ordered: offsets of a
// partition must increase (a group consumer may re-read after a
// rebalance).
func (r *stressRig) consumeLoop(cl *kgo.Client, name string, ordered bool) {
	last := map[stressTP]int64{}
	if !ordered {
		last = nil
	}
	for !r.stopping() {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		r.fetchChecks(fs, name, last)
	}
}

func (r *stressRig) fetchChecks(fs kgo.Fetches, name string, last map[stressTP]int64) {
	fs.EachError(func(topic string, p int32, err error) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed) {
			return
		}
		// A consumer behind the log start is moved there silently;
		// ErrDataLoss means the log ended below what it had consumed.
		r.fail("fetch error", "%s %s/%d: %v", name, topic, p, err)
	})
	fs.EachRecord(func(rec *kgo.Record) {
		tp := stressTP{rec.Topic, rec.Partition}
		line := stressRender(rec.Topic, rec)
		if _, _, _, ok := stressParse(line, tp.keyed()); !ok {
			r.fail("fetched record", "%s %s offset %d: %q is no writer's line", name, tp, rec.Offset, line)
		}
		if last != nil {
			if prev, ok := last[tp]; ok && rec.Offset <= prev {
				r.fail("fetch order", "%s %s: offset %d after %d", name, tp, rec.Offset, prev)
			}
			last[tp] = rec.Offset
		}
		r.observe(tp, rec.Offset, line, name)
		r.count(name+" records", 1)
	})
}

// --- admin -------------------------------------------------------------------

func (r *stressRig) startAdmin() {
	admin := r.admin
	// Config through the mount.
	r.goLoop(func() {
		for i := 0; !r.stopping(); i++ {
			pick := func(vs ...string) string { return vs[rand.IntN(len(vs))] }
			script := fmt.Sprintf(`
echo retention.ms=%s >> "$M/del/config" &&
printf 'segment.bytes=%s\nindex.interval.bytes=%s\nsegment.index.bytes=%s\n' >> "$M/del/config" &&
printf 'compression.type=%s\nmessage.timestamp.type=%s\nflush.messages=%s\n' >> "$M/del/config" &&
printf 'min.cleanable.dirty.ratio=%s\ndelete.retention.ms=%s\n' >> "$M/cmp/config" &&
printf 'segment.ms=%s\ncleanup.policy=%s\ncompression.type=%s\n' >> "$M/cmp/config"`,
				pick("1500", "3000", "6000"), pick(r.seg...), pick("0", "100", "4096"), pick("64", "4096", "10485760"),
				pick("producer", "gzip", "lz4", "zstd", "snappy", "uncompressed"), pick("CreateTime", "LogAppendTime"),
				pick("1", "100", "9223372036854775807"),
				pick("0.01", "0.2", "0"), pick("0", "300", "1000"),
				pick("500", "2000"), pick("compact,delete", "compact"), pick("producer", "zstd", "uncompressed"))
			out, errs, code := r.run(30, "bash", "-c", strings.ReplaceAll(script, "$M", r.m.dir))
			if code != 0 {
				r.fail("config write", "exit %d: %s %s", code, out, errs)
			}
			r.count("config writes", 1)
			r.sleep(300 * time.Millisecond)
		}
	})
	// Config through IncrementalAlterConfigs.
	r.goLoop(func() {
		for i := 0; !r.stopping(); i++ {
			r.alterConfigs(admin, "del", map[string]string{
				"retention.bytes":      []string{"32768", "65536", "-1"}[i%3],
				"file.delete.delay.ms": []string{"0", "50"}[i%2],
			})
			r.alterConfigs(admin, "cmp", map[string]string{
				"segment.bytes":         r.seg[i%len(r.seg)],
				"min.compaction.lag.ms": []string{"0", "100"}[i%2],
			})
			r.count("alter configs", 1)
			r.sleep(400 * time.Millisecond)
		}
	})
	// DeleteRecords a quarter of the way into what is retained.
	r.goLoop(func() {
		for i := 0; !r.stopping(); i++ {
			tp := []stressTP{{"del", 0}, {"del", 1}, {"cmp", 0}, {"cmp", 1}}[i%4]
			lo, hi := r.listOffset(admin, tp, -2), r.listOffset(admin, tp, -1)
			if lo < 0 || hi < 0 {
				continue
			}
			target := lo + (hi-lo)/4
			req := kmsg.NewPtrDeleteRecordsRequest()
			req.TimeoutMillis = 10000
			rt := kmsg.NewDeleteRecordsRequestTopic()
			rt.Topic = tp.topic
			rp := kmsg.NewDeleteRecordsRequestTopicPartition()
			rp.Partition, rp.Offset = tp.part, target
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			resp, err := req.RequestWith(ctx, admin)
			cancel()
			if err != nil {
				r.fail("DeleteRecords", "%s to %d: %v", tp, target, err)
				continue
			}
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode == kerr.PolicyViolation.Code && tp.topic == "cmp" {
				// cleanup.policy=compact (the config loop sets it now
				// and then): Kafka refuses DeleteRecords there.
				r.count("DeleteRecords on compact", 1)
				r.sleep(700 * time.Millisecond)
				continue
			}
			if p.ErrorCode != 0 {
				r.fail("DeleteRecords", "%s to %d: %v", tp, target, kerr.ErrorForCode(p.ErrorCode))
				continue
			}
			if p.LowWatermark < target {
				r.fail("DeleteRecords", "%s to %d: low watermark %d", tp, target, p.LowWatermark)
			}
			r.mu.Lock()
			r.drFloor[tp] = max(r.drFloor[tp], target)
			r.mu.Unlock()
			r.count("delete records", 1)
			r.sleep(700 * time.Millisecond)
		}
	})
	// The describe paths: ListOffsets by time, DescribeConfigs,
	// DescribeLogDirs.
	r.goLoop(func() {
		for !r.stopping() {
			tp := r.randTP()
			r.listOffset(admin, tp, time.Now().Add(-time.Duration(rand.IntN(4000))*time.Millisecond).UnixMilli())
			dc := kmsg.NewPtrDescribeConfigsRequest()
			for _, topic := range []string{"del", "cmp", "grow"} {
				res := kmsg.NewDescribeConfigsRequestResource()
				res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
				dc.Resources = append(dc.Resources, res)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			dresp, err := dc.RequestWith(ctx, admin)
			if err != nil {
				r.fail("DescribeConfigs", "%v", err)
			} else {
				for _, res := range dresp.Resources {
					if res.ErrorCode != 0 || len(res.Configs) < 10 {
						r.fail("DescribeConfigs", "%s: %v, %d configs", res.ResourceName, kerr.ErrorForCode(res.ErrorCode), len(res.Configs))
					}
				}
			}
			lresp, err := kmsg.NewPtrDescribeLogDirsRequest().RequestWith(ctx, admin)
			cancel()
			if err != nil {
				r.fail("DescribeLogDirs", "%v", err)
			} else {
				for _, d := range lresp.Dirs {
					if d.ErrorCode != 0 {
						r.fail("DescribeLogDirs", "%s: %v", d.Dir, kerr.ErrorForCode(d.ErrorCode))
					}
					for _, t := range d.Topics {
						for _, p := range t.Partitions {
							if p.Size < 0 {
								r.fail("DescribeLogDirs", "%s/%d: size %d", t.Topic, p.Partition, p.Size)
							}
						}
					}
				}
			}
			r.count("describes", 1)
			r.sleep(100 * time.Millisecond)
		}
	})
	// Raw fetches at random offsets with small, random byte limits: every
	// batch of the answer is whole and CRC-valid (segfs sends whole
	// batches, fetch/01_fetch.go; kgo would take a cut or garbled last
	// batch for a partial one and fetch again), the first one holds the
	// offset asked for or later, and offsets increase.
	r.goLoop(func() {
		castagnoli := crc32.MakeTable(crc32.Castagnoli)
		for !r.stopping() {
			tp := r.randTP()
			lo, hi := r.listOffset(admin, tp, -2), r.listOffset(admin, tp, -1)
			if lo < 0 || hi <= lo {
				continue
			}
			off := lo + rand.Int64N(hi-lo)
			req := kmsg.NewPtrFetchRequest()
			req.ReplicaID, req.MaxWaitMillis, req.MinBytes = -1, 0, 1
			req.MaxBytes = 1 + rand.Int32N(20000)
			req.IsolationLevel = int8(rand.IntN(2))
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = tp.topic
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = tp.part, off, 1+rand.Int32N(10000)
			rp.CurrentLeaderEpoch, rp.LogStartOffset = -1, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			resp, err := req.RequestWith(ctx, admin)
			cancel()
			if err != nil {
				r.fail("raw fetch", "%s at %d: %v", tp, off, err)
				continue
			}
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				r.fail("raw fetch", "%s at %d: answer %+v", tp, off, resp)
				continue
			}
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode == kerr.OffsetOutOfRange.Code {
				r.count("raw fetch below the moved start", 1)
				continue
			}
			if p.ErrorCode != 0 {
				r.fail("raw fetch", "%s at %d: %v", tp, off, kerr.ErrorForCode(p.ErrorCode))
				continue
			}
			b, pos, prevLast := p.RecordBatches, 0, int64(-1)
			for len(b) > 0 {
				if len(b) < 12 || len(b) < 12+int(binary.BigEndian.Uint32(b[8:12])) {
					r.fail("raw fetch", "%s at %d (max %d/%d): a partial batch at byte %d of %d", tp, off, req.MaxBytes, rp.PartitionMaxBytes, pos, len(p.RecordBatches))
					break
				}
				n := 12 + int(binary.BigEndian.Uint32(b[8:12]))
				var rb kmsg.RecordBatch
				if err := rb.ReadFrom(b[:n]); err != nil || n < 21 || crc32.Checksum(b[21:n], castagnoli) != uint32(rb.CRC) {
					r.fail("raw fetch", "%s at %d: the batch at byte %d does not parse or fails its CRC: %v", tp, off, pos, err)
					break
				}
				last := rb.FirstOffset + int64(rb.LastOffsetDelta)
				if prevLast < 0 && last < off || prevLast >= 0 && rb.FirstOffset <= prevLast {
					r.fail("raw fetch", "%s at %d: batch %d..%d after %d", tp, off, rb.FirstOffset, last, prevLast)
					break
				}
				prevLast = last
				b, pos = b[n:], pos+n
			}
			r.count("raw fetches", 1)
			r.sleep(20 * time.Millisecond)
		}
	})
	// Partitions of grow: mkdir and CreatePartitions race for the next one.
	r.goLoop(func() {
		for !r.stopping() && r.growParts.Load() < 8 {
			n := r.growParts.Load()
			out, errs, code := r.run(30, "mkdir", r.m.path("grow", strconv.Itoa(int(n))))
			switch {
			case code == 0:
				r.growCreated(n + 1)
			case strings.Contains(errs, "File exists") || strings.Contains(errs, "Invalid argument"):
				r.count("mkdir lost the race", 1)
			default:
				r.fail("mkdir", "grow/%d: exit %d: %s %s", n, code, out, errs)
			}
			r.sleep(time.Duration(500+rand.IntN(1500)) * time.Millisecond)
		}
	})
	r.goLoop(func() {
		for !r.stopping() && r.growParts.Load() < 8 {
			n := r.growParts.Load()
			req := kmsg.NewPtrCreatePartitionsRequest()
			req.TimeoutMillis = 10000
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = "grow", n+1
			req.Topics = append(req.Topics, rt)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			resp, err := req.RequestWith(ctx, admin)
			cancel()
			switch {
			case err != nil:
				r.fail("CreatePartitions", "%v", err)
			case resp.Topics[0].ErrorCode == 0:
				r.growCreated(n + 1)
			case resp.Topics[0].ErrorCode == kerr.InvalidPartitions.Code:
				r.count("CreatePartitions lost the race", 1)
			default:
				r.fail("CreatePartitions", "to %d: %v", n+1, kerr.ErrorForCode(resp.Topics[0].ErrorCode))
			}
			r.sleep(time.Duration(500+rand.IntN(1500)) * time.Millisecond)
		}
	})
}

func (r *stressRig) growCreated(n int32) {
	r.mu.Lock()
	if r.growBorn == nil {
		r.growBorn = map[int32]time.Time{}
	}
	if _, ok := r.growBorn[n-1]; !ok {
		r.growBorn[n-1] = time.Now()
	}
	r.mu.Unlock()
	for {
		cur := r.growParts.Load()
		if n <= cur || r.growParts.CompareAndSwap(cur, n) {
			break
		}
	}
	r.count("partitions created", 1)
}

func (r *stressRig) sleep(d time.Duration) {
	select {
	case <-r.quit:
	case <-time.After(d):
	}
}

func (r *stressRig) alterConfigs(cl *kgo.Client, topic string, set map[string]string) {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	for k, v := range set {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Op, c.Name, c.Value = kmsg.IncrementalAlterConfigOpSet, k, kmsg.StringPtr(v)
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		r.fail("IncrementalAlterConfigs", "%s: %v", topic, err)
		return
	}
	if c := resp.Resources[0].ErrorCode; c != 0 {
		r.fail("IncrementalAlterConfigs", "%s %v: %v", topic, set, kerr.ErrorForCode(c))
	}
}

// listOffset answers ListOffsets for tp at ts (-2 earliest, -1 latest), -1
// on failure.
func (r *stressRig) listOffset(cl *kgo.Client, tp stressTP, ts int64) int64 {
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = tp.topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = tp.part, ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err == nil && resp.Topics[0].Partitions[0].ErrorCode != 0 {
		err = kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
	}
	if err != nil {
		// kgo routes ListOffsets by its own metadata, and answers a
		// partition that metadata does not know yet (just created) with
		// UNKNOWN_TOPIC_OR_PARTITION itself (as the request's error when
		// it is the only partition), sending nothing, as it refuses a
		// produce to it (produceGrow).
		if tp.topic == "grow" && errors.Is(err, kerr.UnknownTopicOrPartition) {
			r.mu.Lock()
			born, ok := r.growBorn[tp.part]
			r.mu.Unlock()
			if ok && time.Since(born) < 10*time.Second {
				r.count("grow list offsets before metadata", 1)
				return -1
			}
		}
		r.fail("ListOffsets", "%s: %v", tp, err)
		return -1
	}
	return resp.Topics[0].Partitions[0].Offset
}
