// Command faultwriter is the writer and reader side of the fault suite
// (tests/fault_*_test.go, scripts/soak.sh). It always runs as its own
// process, so that killing or hanging the daemon under test never touches
// the test binary, and it keeps a manifest of what was acknowledged on a
// filesystem other than the one under test.
//
//	faultwriter lines  -id ID -file DATA -manifest M [-start N] [-count C] [-big] [-keys K] [-batch K] [-fsync] [-pause D]
//	faultwriter kafka  -id ID -addr A -topic T -manifest M [-start N] [-count C]
//	faultwriter consume -addr A -topic T -out F
//
// lines appends the lines Line(ID, seq) for seq = start, start+1, ... to
// DATA (opened O_WRONLY|O_APPEND), up to K lines per write(2) with -batch,
// and after each write (and its fsync with -fsync) returns, appends the
// seqs it carried to M, one per line. It stops at the first error, which
// it prints with its errno name on stderr (exit status 3). With -keys K the
// lines are faultline.Keyed(ID, seq, K), for a compacted topic with
// key.separator "=": K keys, some writes tombstones.
//
// kafka produces the same lines (without the newline) as records to
// partition 0 of T with acks=-1, one at a time, and appends a seq to M
// after its produce response arrives. It stops at the first error.
//
// consume reads partition 0 of T from offset 0 and appends "offset value"
// for every record to F until it is killed or an error occurs.
//
// The content of every line is a pure function of (ID, seq) (see faultline.Line), so
// the oracle in the tests regenerates what each acknowledged seq must look
// like and finds partial, torn or foreign lines by exact comparison.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/segfs/segfs/tests/faultwriter/faultline"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: faultwriter lines|kafka|consume [flags]")
		os.Exit(2)
	}
	fl := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	id := fl.String("id", "g1", "writer id (the first field of every line)")
	file := fl.String("file", "", "data file to append to")
	manifest := fl.String("manifest", "", "manifest of acknowledged seqs")
	start := fl.Int64("start", 1, "first seq")
	count := fl.Int64("count", 0, "number of lines (0 = until an error)")
	big := fl.Bool("big", false, "lines of 1 to 300,000 bytes instead of short ones")
	keys := fl.Int("keys", 0, "keyed lines \"id.kK=...\" with this many keys, some tombstones (0 = unkeyed)")
	batch := fl.Int("batch", 1, "up to this many lines per write(2)")
	fsync := fl.Bool("fsync", false, "fsync after every write; acknowledge only after it")
	pause := fl.Duration("pause", 0, "sleep between writes")
	addr := fl.String("addr", "", "Kafka bootstrap address")
	topic := fl.String("topic", "", "Kafka topic")
	out := fl.String("out", "", "consume: file for the records seen")
	fl.Parse(os.Args[2:])

	var err error
	switch os.Args[1] {
	case "lines":
		err = writeLines(*id, *file, *manifest, *start, *count, *big, *keys, *batch, *fsync, *pause)
	case "kafka":
		err = produce(*id, *addr, *topic, *manifest, *start, *count)
	case "consume":
		err = consume(*addr, *topic, *out)
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		var en syscall.Errno
		name := ""
		if errors.As(err, &en) {
			name = " errno=" + errnoName(en)
		}
		fmt.Fprintf(os.Stderr, "faultwriter %s: %v%s\n", os.Args[1], err, name)
		os.Exit(3)
	}
}

func errnoName(en syscall.Errno) string {
	for _, e := range []struct {
		n  string
		en syscall.Errno
	}{{"EIO", syscall.EIO}, {"ENOSPC", syscall.ENOSPC}, {"EROFS", syscall.EROFS}, {"ENOTCONN", syscall.ENOTCONN},
		{"ECONNABORTED", syscall.ECONNABORTED}, {"EMSGSIZE", syscall.EMSGSIZE}, {"EPERM", syscall.EPERM},
		{"EDQUOT", syscall.EDQUOT}, {"EINTR", syscall.EINTR}} {
		if e.en == en {
			return e.n
		}
	}
	return strconv.Itoa(int(en))
}

func openManifest(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
}

func writeLines(id, file, manifest string, start, count int64, big bool, keys, batch int, fsync bool, pause time.Duration) error {
	man, err := openManifest(manifest)
	if err != nil {
		return err
	}
	defer man.Close()
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	r := rand.New(rand.NewPCG(uint64(start), 7))
	var buf, ack []byte
	for seq := start; count == 0 || seq < start+count; {
		k := 1
		if batch > 1 {
			k = 1 + r.IntN(batch)
		}
		if count > 0 {
			k = int(min(int64(k), start+count-seq))
		}
		buf, ack = buf[:0], ack[:0]
		for i := range int64(k) {
			if keys > 0 {
				buf = append(append(buf, faultline.Keyed(id, seq+i, keys)...), '\n')
			} else {
				buf = append(append(buf, faultline.Line(id, seq+i, big)...), '\n')
			}
			ack = strconv.AppendInt(ack, seq+i, 10)
			ack = append(ack, '\n')
		}
		// One write(2): os.File.Write only loops on a short write, which
		// FUSE turns into an error anyway.
		if _, err := f.Write(buf); err != nil {
			return err
		}
		if fsync {
			if err := f.Sync(); err != nil {
				return err
			}
		}
		if _, err := man.Write(ack); err != nil {
			return fmt.Errorf("manifest: %w", err)
		}
		seq += int64(k)
		time.Sleep(pause)
	}
	return nil
}

func produce(id, addr, topic, manifest string, start, count int64) error {
	man, err := openManifest(manifest)
	if err != nil {
		return err
	}
	defer man.Close()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		// Give up soon after the broker dies: the harness restarts the
		// daemon only after every writer has exited, so a retry can never
		// reach the next daemon.
		kgo.RecordDeliveryTimeout(3*time.Second),
		kgo.RequestTimeoutOverhead(2*time.Second),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	for seq := start; count == 0 || seq < start+count; seq++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		rec := &kgo.Record{Topic: topic, Partition: 0, Value: faultline.Line(id, seq, false)}
		err := cl.ProduceSync(ctx, rec).FirstErr()
		cancel()
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(man, "%d\n", seq); err != nil {
			return fmt.Errorf("manifest: %w", err)
		}
	}
	return nil
}

func consume(addr, topic, out string) error {
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.RetryTimeout(3*time.Second),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		var b []byte
		for _, r := range fs.Records() {
			b = fmt.Appendf(b, "%d %s\n", r.Offset, r.Value)
		}
		if _, err := f.Write(b); err != nil {
			return err
		}
		if ferr != nil {
			return ferr
		}
	}
}
