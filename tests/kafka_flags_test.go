package tests

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The Kafka door's flags, on the binaries: --advertise is the address
// Metadata hands out (kcat -L prints it), and must be HOST:PORT; --auto-create-topics=false makes
// a produce to an unknown topic fail with UNKNOWN_TOPIC_OR_PARTITION and
// creates nothing, on `serve` and on `mount --kafka-listen`;
// --max-request-bytes closes a connection whose frame claims more, and the
// server goes on serving.
func TestKafkaServeFlags(t *testing.T) {
	t.Run("advertise", func(t *testing.T) {
		kafkaNeedKcat(t)
		srv := kafkaServe(t, "", "--advertise", "kafka.example:1234")
		out := kcat(t, srv.addr, "", "-L", "-m", "5")
		if !strings.Contains(out, "broker 0 at kafka.example:1234") {
			t.Fatalf("kcat -L with --advertise:\n%s", out)
		}
	})
	t.Run("advertise-invalid", func(t *testing.T) {
		// Refused at startup with the reason, by serve and mount alike,
		// instead of handing clients HOST:9092.
		run := func(args ...string) (int, string) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, segfsBin, args...)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			switch {
			case err == nil:
				return 0, string(out)
			case errors.As(err, &ee):
				return ee.ExitCode(), string(out)
			}
			t.Fatalf("segfs %v: %v", args, err)
			return 0, ""
		}
		for _, bad := range []string{"kafka.example", "kafka.example:abc", ":1234"} {
			code, out := run("serve", "--listen", "127.0.0.1:0", "--advertise", bad, t.TempDir())
			if code == 0 || !strings.Contains(out, "--advertise") {
				t.Errorf("serve --advertise %q: exit %d, output %q", bad, code, out)
			}
			mp := t.TempDir()
			code, out = run("mount", "--kafka-listen", "127.0.0.1:0", "--advertise", bad, t.TempDir(), mp)
			if code == 0 {
				exec.Command("umount", mp).Run()
			}
			if code == 0 || !strings.Contains(out, "--advertise") {
				t.Errorf("mount --advertise %q: exit %d, output %q", bad, code, out)
			}
		}
	})
	t.Run("auto-create-topics=false/serve", func(t *testing.T) {
		srv := kafkaServe(t, "", "--auto-create-topics=false")
		kafkaRefusesUnknownTopic(t, srv.addr, srv.data)
	})
	t.Run("auto-create-topics=false/mount", func(t *testing.T) {
		addr := kafkaFreeAddr(t)
		m := mntNew(t, "--kafka-listen", addr, "--auto-create-topics=false")
		kafkaWaitListening(t, addr)
		kafkaRefusesUnknownTopic(t, addr, m.data)
		// A topic made with mkdir takes produced records.
		m.ok(`mkdir "$M/made"`)
		kafkaProduce(t, kafkaClient(t, addr), "made", 0, "hello")
		if !mntWaitFor(10*time.Second, func() bool { return m.ok(`cat "$M/made/0/data"`) == "hello\n" }) {
			t.Fatalf("produced record not in the mount: %q", m.ok(`cat "$M/made/0/data"`))
		}
	})

	// mount --partitions sizes auto-created topics too, and says so in its
	// help (it used to name mkdir only).
	t.Run("partitions/mount", func(t *testing.T) {
		addr := kafkaFreeAddr(t)
		m := mntNew(t, "--kafka-listen", addr, "--partitions", "2")
		kafkaWaitListening(t, addr)
		kcat(t, addr, "x\n", "-P", "-t", "auto", "-p", "1")
		if got := m.ok(`ls "$M/auto"; cat "$M/auto/1/data"`); got != "0\n1\nconfig\nx\n" {
			t.Fatalf("auto-created topic under mount --partitions 2: %q", got)
		}
		r := cliRun(t, "mount", "--help")
		if r.Code != 0 || !regexp.MustCompile(`--partitions N +N partitions for topics created with mkdir, and with --kafka-listen for auto-created ones`).MatchString(r.Stdout) {
			t.Fatalf("mount --help (exit %d) does not say --partitions applies to auto-created topics:\n%s", r.Code, r.Stdout)
		}
	})

	// serve's flag, and mount's for its --kafka-listen (which mount did
	// not have).
	t.Run("max-request-bytes", func(t *testing.T) {
		srv := kafkaServe(t, "", "--max-request-bytes", "4096")
		refusesOversize(t, srv.addr)
	})
	t.Run("mount max-request-bytes", func(t *testing.T) {
		addr := kafkaFreeAddr(t)
		mntNew(t, "--kafka-listen", addr, "--max-request-bytes", "4096")
		kafkaWaitListening(t, addr)
		refusesOversize(t, addr)
	})
}

// refusesOversize checks that the Kafka server at addr, started with
// --max-request-bytes 4096, closes a connection whose frame claims more
// and keeps serving others.
func refusesOversize(t *testing.T, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A frame claiming one byte more than allowed: closed unanswered.
	if _, err := c.Write(binary.BigEndian.AppendUint32(nil, 4097)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b [1]byte
	if n, err := c.Read(b[:]); n != 0 || !(errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isConnReset(err)) {
		t.Fatalf("oversize frame: read %d bytes, %v; want the connection closed", n, err)
	}
	// Other clients are still served.
	cl := kafkaClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl); err != nil {
		t.Fatalf("after an oversize frame: %v", err)
	}
}

func isConnReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

// kafkaRefusesUnknownTopic checks that producing to a topic that does not
// exist fails with UNKNOWN_TOPIC_OR_PARTITION and leaves no trace in data.
func kafkaRefusesUnknownTopic(t *testing.T, addr, data string) {
	t.Helper()
	cl := kafkaClient(t, addr, kgo.AllowAutoTopicCreation(), kgo.UnknownTopicRetries(2))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := cl.ProduceSync(ctx, &kgo.Record{Topic: "nobody", Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("produce to an unknown topic with auto-creation off: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
	if _, err := os.Stat(filepath.Join(data, "nobody-0")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the topic was created anyway: %v", err)
	}
}

// Acknowledged commits and records survive kill -9 of segfs serve: the
// committed offset is written durably before OffsetCommit is answered, and
// an acks=all record is in the log before Produce is.
func TestKafkaCommitSurvivesKill9(t *testing.T) {
	srv := kafkaServe(t, "")
	cl := kafkaClient(t, srv.addr, kgo.AllowAutoTopicCreation())
	kafkaProduce(t, cl, "k9", 0, "r0", "r1", "r2", "r3", "r4")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "g9", -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "k9"
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset = 0, 3
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	if cr, err := commit.RequestWith(ctx, cl); err != nil || cr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("OffsetCommit: %v %+v", err, cr)
	}
	cl.Close()
	srv.cmd.Process.Kill()
	<-srv.done // the process has exited: stop() in Cleanup does nothing

	srv = kafkaServe(t, srv.data)
	cl = kafkaClient(t, srv.addr)
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Group = "g9"
	ft := kmsg.NewOffsetFetchRequestTopic()
	ft.Topic, ft.Partitions = "k9", []int32{0}
	fetch.Topics = append(fetch.Topics, ft)
	fr, err := fetch.RequestWith(ctx, cl)
	if err != nil || fr.Topics[0].Partitions[0].Offset != 3 {
		t.Fatalf("committed offset after kill -9: %v %+v, want 3", err, fr)
	}
	if vals := recordValues(kafkaConsume(t, srv.addr, "k9", 0, 3, 2)); !slices.Equal(vals, []string{"r3", "r4"}) {
		t.Fatalf("resumed after kill -9 at %q", vals)
	}
}

// TestKafkaServeSighup: SIGHUP (the terminal of a `segfs serve` went away)
// stops the server cleanly, as SIGINT and SIGTERM do and as it does for
// mount: exit 0, the store closed with its clean-shutdown marker, so the
// next start does not recover every partition. By default it killed the
// process with the store open.
func TestKafkaServeSighup(t *testing.T) {
	s := kafkaServe(t, "")
	s.cmd.Process.Signal(syscall.SIGHUP)
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("segfs serve after SIGHUP: %v\n%s", err, s.stderr())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("segfs serve ignored SIGHUP for 20s:\n%s", s.stderr())
	}
	if _, err := os.Stat(filepath.Join(s.data, ".kafka_cleanshutdown")); err != nil {
		t.Fatalf("no clean-shutdown marker after SIGHUP: %v", err)
	}
}

// TestCLIMaxRequestBytesRefused: --max-request-bytes below 1 or above
// 2147483647 is refused by mount and serve, naming the flag, before
// anything is mounted or served, as Kafka refuses such a
// socket.request.max.bytes. 0 and negative values used to mean the 100 MiB
// default, and larger ones were cut to the int's maximum, silently.
func TestCLIMaxRequestBytesRefused(t *testing.T) {
	data, mp := t.TempDir(), t.TempDir()
	for _, v := range []string{"0", "-1", "2147483648"} {
		want := "--max-request-bytes must be between 1 and 2147483647 (Kafka's socket.request.max.bytes), not " + v
		cliRefused(t, mp, want, "mount", "--max-request-bytes", v, data, mp)
		cliRefused(t, mp, want, "mount", "--kafka-listen", "127.0.0.1:0", "--max-request-bytes", v, data, mp)
		// The old serve served: the timeout ends it.
		out, err := exec.Command("timeout", "-k", "5", "10", segfsBin, "serve", "--listen", "127.0.0.1:0", "--max-request-bytes", v, data).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "segfs: serve: "+want) {
			t.Errorf("segfs serve --max-request-bytes %s: %v %q; want it refused saying %q", v, err, out, want)
		}
	}
}

// TestCLIMountKafkaFlagsNeedListen: a flag of the Kafka server given to
// mount without --kafka-listen is refused, naming it, before anything is
// mounted; the old mount went ahead without a server and the flag did
// nothing (`--advertise` with --kafka-listen forgotten looked set up).
// With --kafka-listen the same flags mount (the daemon gets them).
func TestCLIMountKafkaFlagsNeedListen(t *testing.T) {
	data, mp := t.TempDir(), t.TempDir()
	for _, f := range [][]string{
		{"--advertise", "localhost:9092"},
		{"--auto-create-topics=false"},
		{"--max-request-bytes", "4096"},
		{"--group-initial-rebalance-delay", "0s"},
		{"--group-min-session-timeout", "1s"},
		{"--group-max-session-timeout", "1m"},
		{"--group-consumer-session-timeout", "45s"},
		{"--group-consumer-heartbeat-interval", "5s"},
		{"--offsets-retention", "1h"},
		{"--offsets-retention-check-interval", "1m"},
	} {
		name, _, _ := strings.Cut(f[0], "=")
		want := name + " configures the Kafka server, which runs only with --kafka-listen ADDR"
		cliRefused(t, mp, want, append(append([]string{"mount"}, f...), data, mp)...)
	}
	m := mntNew(t, "--kafka-listen", "127.0.0.1:0", "--auto-create-topics=false", "--group-initial-rebalance-delay", "0s",
		"--offsets-retention", "1h", "--max-request-bytes", "4096")
	m.ok(`mkdir "$M/k" && echo a >> "$M/k/0/data"`)
}
