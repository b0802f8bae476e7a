package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cmdKfake runs a one-broker kfake cluster (in memory) on ADDR's port
// until SIGINT/SIGTERM; prints "ready".
func cmdKfake(args []string) error {
	if err := need(args, 1, "kfake ADDR"); err != nil {
		return err
	}
	_, port, err := net.SplitHostPort(args[0])
	if err != nil {
		return err
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(int(atoi(port))),
		kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(1))
	if err != nil {
		return err
	}
	defer c.Close()
	fmt.Println("ready")
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	<-sigc
	return nil
}

func producer(addr, topic string) (*kgo.Client, error) {
	// Defaults except a buffer large enough to keep batches full:
	// acks=all and idempotence are franz-go's defaults.
	return kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(1<<20),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.AllowAutoTopicCreation())
}

type errOnce struct{ err atomic.Pointer[error] }

func (e *errOnce) promise(_ *kgo.Record, err error) {
	if err != nil {
		e.err.CompareAndSwap(nil, &err)
	}
}

func (e *errOnce) get() error {
	if p := e.err.Load(); p != nil {
		return *p
	}
	return nil
}

// cmdFill produces every line of FILE (without its newline) as a record
// value to TOPIC partition 0, in large batches. Prints seconds and records.
func cmdFill(args []string) error {
	if err := need(args, 3, "fill ADDR TOPIC FILE"); err != nil {
		return err
	}
	cl, err := producer(args[0], args[1])
	if err != nil {
		return err
	}
	defer cl.Close()
	f, err := os.Open(args[2])
	if err != nil {
		return err
	}
	defer f.Close()
	ctx := context.Background()
	var eo errOnce
	start := time.Now()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var n int64
	for sc.Scan() {
		v := bytes.Clone(sc.Bytes())
		cl.Produce(ctx, &kgo.Record{Value: v}, eo.promise)
		n++
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if err := eo.get(); err != nil {
		return err
	}
	fmt.Printf("%.3f %d\n", time.Since(start).Seconds(), n)
	return nil
}

// cmdProduce sends COUNT records of SIZE bytes (acks=all, idempotent,
// franz-go's default batching) and prints seconds and records/s.
func cmdProduce(args []string) error {
	if err := need(args, 4, "produce ADDR TOPIC COUNT SIZE"); err != nil {
		return err
	}
	cl, err := producer(args[0], args[1])
	if err != nil {
		return err
	}
	defer cl.Close()
	count, size := atoi(args[2]), atoi(args[3])
	val := bytes.Repeat([]byte{'p'}, int(size))
	ctx := context.Background()
	// Connect and learn the metadata before the clock starts.
	if err := cl.Ping(ctx); err != nil {
		return err
	}
	var eo errOnce
	start := time.Now()
	for range count {
		cl.Produce(ctx, &kgo.Record{Value: val}, eo.promise)
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	el := time.Since(start).Seconds()
	if err := eo.get(); err != nil {
		return err
	}
	fmt.Printf("%.4f %.0f\n", el, float64(count)/el)
	return nil
}

// cmdConsume reads COUNT records of TOPIC partition 0 from the start with
// a franz-go consumer (defaults) and prints seconds and record bytes.
func cmdConsume(args []string) error {
	if err := need(args, 3, "consume ADDR TOPIC COUNT"); err != nil {
		return err
	}
	count := atoi(args[2])
	cl, err := kgo.NewClient(kgo.SeedBrokers(args[0]),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{args[1]: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		return err
	}
	start := time.Now()
	var n, bytes int64
	for n < count {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("after %d records: %w", n, err)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) { ferr = err })
		if ferr != nil {
			return ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			n++
			bytes += int64(len(r.Value))
		})
	}
	fmt.Printf("%.4f %d %d\n", time.Since(start).Seconds(), n, bytes)
	return nil
}

// cmdRawFetch reads TOPIC partition 0 from offset 0 to the high watermark
// with hand-made Fetch v11 requests of 8 MiB over one connection, as
// fetch/bench_test.go does: no client library in the way. Prints seconds
// and record bytes received.
func cmdRawFetch(args []string) error {
	if err := need(args, 2, "rawfetch ADDR TOPIC"); err != nil {
		return err
	}
	c, err := net.Dial("tcp", args[0])
	if err != nil {
		return err
	}
	defer c.Close()
	topic := args[1]
	var corr int32
	frame := make([]byte, 0, 9<<20)
	fetch := func(off int64) (*kmsg.FetchResponse, error) {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 11
		req.ReplicaID = -1
		req.MaxWaitMillis = 0
		req.MinBytes = 0
		req.MaxBytes = 8 << 20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = 0
		rp.FetchOffset = off
		rp.PartitionMaxBytes = 8 << 20
		rp.LogStartOffset = -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		corr++
		b := make([]byte, 4, 128)
		b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
		b = binary.BigEndian.AppendUint16(b, uint16(req.Version))
		b = binary.BigEndian.AppendUint32(b, uint32(corr))
		b = binary.BigEndian.AppendUint16(b, 5)
		b = append(b, "bench"...)
		b = req.AppendTo(b)
		binary.BigEndian.PutUint32(b, uint32(len(b)-4))
		if _, err := c.Write(b); err != nil {
			return nil, err
		}
		var sz [4]byte
		if _, err := io.ReadFull(c, sz[:]); err != nil {
			return nil, err
		}
		frame = frame[:binary.BigEndian.Uint32(sz[:])]
		if _, err := io.ReadFull(c, frame); err != nil {
			return nil, err
		}
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = 11
		if err := resp.ReadFrom(frame[4:]); err != nil {
			return nil, err
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return nil, errors.New("unexpected fetch response shape")
		}
		return resp, nil
	}
	start := time.Now()
	var total int64
	for off, hwm := int64(0), int64(1); off < hwm; {
		resp, err := fetch(off)
		if err != nil {
			return err
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			return fmt.Errorf("fetch at %d: error code %d", off, p.ErrorCode)
		}
		hwm = p.HighWatermark
		recs := p.RecordBatches
		total += int64(len(recs))
		next := off
		for len(recs) >= 61 {
			size := 12 + int(int32(binary.BigEndian.Uint32(recs[8:12])))
			if size > len(recs) {
				break
			}
			next = int64(binary.BigEndian.Uint64(recs[0:8])) + int64(int32(binary.BigEndian.Uint32(recs[23:27]))) + 1
			recs = recs[size:]
		}
		if next == off && off < hwm {
			return fmt.Errorf("no whole batch at offset %d", off)
		}
		off = next
	}
	fmt.Printf("%.4f %d\n", time.Since(start).Seconds(), total)
	return nil
}
