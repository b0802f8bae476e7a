package tests

// Helpers for the Kafka interop tests: run `segfs serve` as the built
// binary, talk to it with franz-go (kgo) in-process and with kcat as a
// separate process, always under timeouts.

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaServer is one `segfs serve` process.
type kafkaServer struct {
	t    testing.TB
	data string
	addr string
	cmd  *exec.Cmd
	log  *bytes.Buffer // stderr
	mu   *sync.Mutex   // guards log while the process writes it
	done chan error
	// exited is closed once the process has been waited for: stop must
	// not look at cmd.ProcessState, which Wait sets in another goroutine.
	exited chan struct{}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// kafkaServe starts `segfs serve DATA --listen 127.0.0.1:0 extra...` and
// waits for its "listening on" line. The server is stopped with SIGTERM in
// t.Cleanup (and must exit 0).
func kafkaServe(t testing.TB, data string, extra ...string) *kafkaServer {
	t.Helper()
	if data == "" {
		data = filepath.Join(t.TempDir(), "data")
	}
	args := append([]string{"serve", data, "--listen", "127.0.0.1:0"}, extra...)
	cmd := exec.Command(segfsBin, args...)
	s := &kafkaServer{t: t, data: data, cmd: cmd, log: new(bytes.Buffer), mu: new(sync.Mutex), done: make(chan error, 1), exited: make(chan struct{})}
	cmd.Stderr = lockedWriter{s.mu, s.log}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				addrc <- a
			}
		}
		close(addrc)
		err := cmd.Wait()
		close(s.exited)
		s.done <- err
	}()
	t.Cleanup(func() { s.stop() })
	select {
	case a, ok := <-addrc:
		if !ok {
			t.Fatalf("segfs serve exited before listening:\n%s", s.stderr())
		}
		s.addr = a
	case <-time.After(30 * time.Second):
		t.Fatalf("segfs serve not listening after 30s:\n%s", s.stderr())
	}
	return s
}

func (s *kafkaServer) stderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// stop sends SIGTERM and waits for a clean exit (idempotent).
func (s *kafkaServer) stop() {
	select {
	case <-s.exited:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		if err != nil {
			s.t.Errorf("segfs serve exited with %v:\n%s", err, s.stderr())
		}
	case <-time.After(20 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
		s.t.Errorf("segfs serve ignored SIGTERM for 20s:\n%s", s.stderr())
	}
}

// kafkaClient returns a kgo client for addr, closed in t.Cleanup.
func kafkaClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.RetryTimeout(20 * time.Second),
		// Records go to the partition they name (the default partitioner
		// would pick one).
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// kgoQuickRetry makes a franz-go client retry sooner than its default
// backoff (250 ms doubling to 5 s), which leaves a client that met a
// refused connection, NOT_COORDINATOR or another retryable error idle for
// seconds after the server is back: 100 ms doubling to 500 ms. The retry
// count grows to match, so that a request still gives up only at its
// RetryTimeout, as before, and a KIP-848 heartbeat loop not much sooner
// than the default's 20 retries (about 50 s instead of 80 s).
func kgoQuickRetry() []kgo.Opt {
	return []kgo.Opt{
		kgo.RetryBackoffFn(func(fails int) time.Duration {
			return min(100*time.Millisecond<<min(max(fails-1, 0), 3), 500*time.Millisecond)
		}),
		kgo.RequestRetries(100),
	}
}

// kafkaProduce produces values to topic/partition synchronously and fails
// the test on any error. It returns the offsets assigned.
func kafkaProduce(t testing.TB, cl *kgo.Client, topic string, partition int32, values ...string) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recs := make([]*kgo.Record, len(values))
	for i, v := range values {
		recs[i] = &kgo.Record{Topic: topic, Partition: partition, Value: []byte(v)}
	}
	res := cl.ProduceSync(ctx, recs...)
	if err := res.FirstErr(); err != nil {
		t.Fatalf("produce to %s/%d: %v", topic, partition, err)
	}
	offs := make([]int64, len(res))
	for i, r := range res {
		offs[i] = r.Record.Offset
	}
	return offs
}

// kafkaConsume reads n records of topic/partition from offset with a
// direct (group-less) consumer.
func kafkaConsume(t testing.TB, addr, topic string, partition int32, offset int64, n int) []*kgo.Record {
	t.Helper()
	cl := kafkaClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {partition: kgo.NewOffset().At(offset)},
	}))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records from %s/%d at %d before timeout", len(out), n, topic, partition, offset)
		}
		fs.EachError(func(tp string, p int32, err error) {
			t.Fatalf("fetch %s/%d: %v", tp, p, err)
		})
		out = append(out, fs.Records()...)
	}
	return out
}

func recordValues(recs []*kgo.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r.Value)
	}
	return out
}

// kafkaNeedKcat skips when kcat is not installed (.ci/run installs it,
// and there it fails: needProgram).
func kafkaNeedKcat(t testing.TB) string {
	t.Helper()
	return needProgram(t, "kcat", "kcat")
}

// kcat runs kcat with args against addr, stdin as given, under a timeout.
func kcat(t testing.TB, addr, stdin string, args ...string) string {
	t.Helper()
	out, errs, code := kcatRun(t, addr, stdin, args...)
	if code != 0 {
		t.Fatalf("kcat %s: exit status %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// kcatRun runs kcat like kcat() but returns its output and exit code
// instead of failing on a non-zero exit.
func kcatRun(t testing.TB, addr, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	bin := kafkaNeedKcat(t)
	cmd := exec.Command("timeout", append([]string{"-k", "5", "60", bin, "-b", addr}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("kcat %s: %v", strings.Join(args, " "), err)
	}
	if code == 124 || code == 137 {
		t.Fatalf("kcat %s timed out\nstderr: %s", strings.Join(args, " "), errb.String())
	}
	return out.String(), errb.String(), code
}

// kafkaFreeAddr returns a loopback address with a port free right now,
// for commands that take a fixed --kafka-listen.
func kafkaFreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// kafkaWaitListening waits until addr accepts connections.
func kafkaWaitListening(t testing.TB, addr string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kcatProduceQueued runs `kcat -b addr -P args...` with the one-line
// message value on stdin, like kcatRun, but makes sure librdkafka has
// queued the message before it hears from the broker, and returns kcat's
// stderr and exit code.
//
// It exists for producing to a topic the broker refuses (an invalid name:
// INVALID_TOPIC_EXCEPTION in Metadata), where librdkafka's message depends
// on timing, against Kafka as against segfs: a message already waiting when
// the Metadata answer arrives fails with the broker's error ("Broker:
// Invalid topic"), but once the answer has marked the topic non-existent,
// which librdkafka does at once for INVALID_TOPIC_EXCEPTION (no
// topic.metadata.propagation.max.ms grace), rd_kafka_producev refuses the
// next message locally with "Local: Unknown topic" and the broker's code is
// lost. kcat creates the topic handle, and so asks for its metadata, before
// it reads stdin, so on a loaded machine the answer sometimes came first.
//
// So kcat connects through a gate that holds the connection (nothing
// reaches segfs, nothing comes back) until kcat has produced: -T makes it
// copy each message to stdout right after rd_kafka_producev accepted it,
// and -u unbuffers that. If kcat exits first (it refused the message), the
// gate opens anyway and the caller sees kcat's error.
func kcatProduceQueued(t testing.TB, addr, value string, args ...string) (stderr string, code int) {
	t.Helper()
	bin := kafkaNeedKcat(t)
	if value == "" || strings.Contains(value, "\n") {
		t.Fatalf("kcatProduceQueued: value %q must be one non-empty line", value)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	open := make(chan struct{})
	openGate := sync.OnceFunc(func() { close(open) })
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	track := func(c net.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			track(c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-open
				s, err := net.Dial("tcp", addr)
				if err != nil {
					c.Close()
					return
				}
				track(s)
				wg.Add(1)
				go func() {
					defer wg.Done()
					io.Copy(s, c)
				}()
				io.Copy(c, s)
			}()
		}
	}()
	// On return kcat has exited: closing every connection the gate
	// accepted or dialled ends its goroutines, which are then waited for.
	defer func() {
		openGate()
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}()

	cmd := exec.Command("timeout", append([]string{"-k", "5", "60", bin, "-b", ln.Addr().String(), "-P", "-T", "-u"}, args...)...)
	cmd.Stdin = strings.NewReader(value + "\n")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// kcat's copy of the message, or EOF if it refused the message and
	// exited: either way the broker may answer now.
	tee, _ := io.ReadAll(io.LimitReader(stdout, int64(len(value))))
	openGate()
	io.Copy(io.Discard, stdout)
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("kcat %s: %v", strings.Join(args, " "), err)
	}
	if code == 124 || code == 137 {
		t.Fatalf("kcat %s timed out\nstderr: %s", strings.Join(args, " "), errb.String())
	}
	if string(tee) != value {
		t.Logf("kcat %s refused the message before hearing from the broker", strings.Join(args, " "))
	}
	return errb.String(), code
}

// kafkaCreateTopic creates topic with partitions partitions by a
// CreateTopics request and fails the test unless it was created.
func kafkaCreateTopic(t *testing.T, cl *kgo.Client, topic string, partitions int32) {
	t.Helper()
	ct := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 1
	ct.Topics = append(ct.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if resp, err := ct.RequestWith(ctx, cl); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create topic %s: %v %+v", topic, err, resp)
	}
}

// kafkaAlterSetting is a setting of an (Incremental)AlterConfigs
// resource; a nil value is a null.
type kafkaAlterSetting struct {
	name  string
	value *string
}

// kafkaAlterResource is a resource of an (Incremental)AlterConfigs
// request.
type kafkaAlterResource struct {
	typ      kmsg.ConfigResourceType
	name     string
	settings []kafkaAlterSetting
}

// kafkaAlterConfigsBoth sends the resources as an IncrementalAlterConfigs
// (each setting a SET) and then as an AlterConfigs, both to broker 0 (a
// broker resource naming another id must not be routed to it), and
// returns the two answers' resources.
func kafkaAlterConfigsBoth(t *testing.T, cl *kgo.Client, rs ...kafkaAlterResource) ([]kmsg.IncrementalAlterConfigsResponseResource, []kmsg.AlterConfigsResponseResource) {
	t.Helper()
	ireq := kmsg.NewPtrIncrementalAlterConfigsRequest()
	lreq := kmsg.NewPtrAlterConfigsRequest()
	for _, r := range rs {
		ir := kmsg.NewIncrementalAlterConfigsRequestResource()
		ir.ResourceType, ir.ResourceName = r.typ, r.name
		lr := kmsg.NewAlterConfigsRequestResource()
		lr.ResourceType, lr.ResourceName = r.typ, r.name
		for _, s := range r.settings {
			ic := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			ic.Name, ic.Value = s.name, s.value
			ir.Configs = append(ir.Configs, ic)
			lc := kmsg.NewAlterConfigsRequestResourceConfig()
			lc.Name, lc.Value = s.name, s.value
			lr.Configs = append(lr.Configs, lc)
		}
		ireq.Resources = append(ireq.Resources, ir)
		lreq.Resources = append(lreq.Resources, lr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	iresp, err := cl.Broker(0).RetriableRequest(ctx, ireq)
	if err != nil {
		t.Fatal(err)
	}
	lresp, err := cl.Broker(0).RetriableRequest(ctx, lreq)
	if err != nil {
		t.Fatal(err)
	}
	return iresp.(*kmsg.IncrementalAlterConfigsResponse).Resources, lresp.(*kmsg.AlterConfigsResponse).Resources
}

// kafkaWantInvalidRequest fails the test (and goes on) unless an answer's
// code and message are INVALID_REQUEST and want; what names the answer.
func kafkaWantInvalidRequest(t *testing.T, what string, code int16, msg *string, want string) {
	t.Helper()
	if code != kerr.InvalidRequest.Code || msg == nil || *msg != want {
		got := "null"
		if msg != nil {
			got = strconv.Quote(*msg)
		}
		t.Errorf("%s: %v %s, want INVALID_REQUEST %q", what, kerr.ErrorForCode(code), got, want)
	}
}
