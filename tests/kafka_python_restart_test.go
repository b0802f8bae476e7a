package tests

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// pythonLive is one confluent-kafka-python (librdkafka) process that
// keeps an idempotent producer and a subscribe() consumer with auto-commit
// (and the auto.offset.reset given) open for as long as the test talks
// to it: each line on stdin is a command, and the answer ends with a line
// "done".
//
//	produce V...  produce the values to partition 0 and flush: a line
//	              "acked OFFSET VALUE" per delivery, "derr VALUE ERROR" per
//	              failed one
//	consume N     poll until N records came: "rec OFFSET VALUE" each;
//	              with N = 0, poll once for 200 ms, where a record or error
//	              is unexpected ("err unexpected ...")
//
// Before it subscribes it commits offset 0 for its group, so the consumer
// starts there with no offset reset; any reset librdkafka logs later
// (debug "consumer,fetch": "offset reset (at offset ...") is printed as a
// line "reset ...". Errors other than the lost connections of a restart
// are printed as "err ...".
const pythonLive = `
import sys, logging
from confluent_kafka import Producer, Consumer, TopicPartition, KafkaError

addr, topic, group, reset = sys.argv[1:5]
out = sys.stdout
def say(s):
    out.write(s + "\n"); out.flush()

class Resets(logging.Handler):
    def emit(self, r):
        m = r.getMessage()
        if "offset reset" in m:
            say("reset " + m)
log = logging.getLogger("rdkafka")
log.addHandler(Resets()); log.setLevel(logging.DEBUG)

quiet = (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN)
def on_error(e):
    if e.code() not in quiet:
        say("err %s %s" % (e.name(), e.str()))

# Reconnect soon after a restart (librdkafka backs off to 10 s).
fast = {"bootstrap.servers": addr, "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 200,
        "error_cb": on_error}
p = Producer(dict(fast, **{"enable.idempotence": True, "acks": "all", "linger.ms": 0}))
c = Consumer(dict(fast, **{"group.id": group, "auto.offset.reset": reset, "enable.auto.commit": True,
                           "auto.commit.interval.ms": 100, "fetch.wait.max.ms": 100,
                           "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                           "debug": "consumer,fetch"}), logger=log)
c.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
c.subscribe([topic])

for line in sys.stdin:
    cmd, *args = line.split()
    if cmd == "produce":
        res = []
        def dr(e, m):
            if e:
                res.append("derr %s %s" % (m.value().decode(), e.name()))
            else:
                res.append("acked %d %s" % (m.offset(), m.value().decode()))
        for v in args:
            p.produce(topic, v.encode(), partition=0, on_delivery=dr)
        left = p.flush(60)
        for r in res:
            say(r)
        if left:
            say("err flush left %d" % left)
    elif cmd == "consume":
        n = int(args[0])
        if n == 0:
            # Serves the logs (a reset) and callbacks.
            m = c.poll(0.2)
            if m is not None:
                say("err unexpected %s" % (m.error() or "rec %d" % m.offset()))
        while n > 0:
            m = c.poll(60)
            if m is None:
                say("err poll timed out")
                break
            if m.error():
                say("err %s" % m.error())
                continue
            say("rec %d %s" % (m.offset(), m.value().decode()))
            n -= 1
    say("done")
c.close()
`

// pythonLiveProc is a running pythonLive.
type pythonLiveProc struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	mu    *sync.Mutex // guards errb while python writes it
	errb  *bytes.Buffer
}

func (p *pythonLiveProc) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.errb.String()
}

func startPythonLive(t *testing.T, addr, topic, group, reset string) *pythonLiveProc {
	t.Helper()
	script := pythonScript(t, "live.py", pythonLive)
	cmd := exec.Command("timeout", "-k", "5", "120", pythonBin, script, addr, topic, group, reset)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &pythonLiveProc{t: t, cmd: cmd, in: in, lines: make(chan string, 100), mu: new(sync.Mutex), errb: new(bytes.Buffer)}
	cmd.Stderr = lockedWriter{p.mu, p.errb}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	t.Cleanup(func() { p.close() })
	return p
}

// close ends the commands (EOF): python closes its consumer, which commits
// and leaves the group, and exits. It returns what python printed since
// the last command; the server must still be up, or the consumer's close
// waits for it (until timeout(1) ends python): a test registers a cleanup
// that closes python after each server it starts. Idempotent.
func (p *pythonLiveProc) close() []string {
	if p.in.Close() != nil {
		return nil // closed before
	}
	var rest []string
	for l := range p.lines {
		rest = append(rest, l)
	}
	p.cmd.Wait()
	return rest
}

// do sends a command and returns the lines of its answer.
func (p *pythonLiveProc) do(command string) []string {
	p.t.Helper()
	if _, err := fmt.Fprintln(p.in, command); err != nil {
		p.t.Fatalf("python: %s: %v", command, err)
	}
	var got []string
	for l := range p.lines {
		if l == "done" {
			return got
		}
		got = append(got, l)
	}
	p.t.Fatalf("python exited during %q; it printed %q\nstderr: %s", command, got, p.stderr())
	return nil
}

// A librdkafka producer (idempotent) and group consumer keep running while
// segfs serve is stopped and started again on the same port, by SIGTERM
// and by kill -9, the producer's messages sent while the server is down.
// Each restart is a new leader epoch (librdkafka 2.0 does not use it:
// Metadata v4, Fetch v11, no OffsetForLeaderEpoch; KIP-320 is listed as
// unsupported in its INTRODUCTION.md). Each message must be acked at the
// next offset, once; the consumer must go on at exactly the next offset,
// from its position and its group membership, with no offset reset
// (earliest would read r0 again, latest would skip) and no error; the log
// holds each message once, in order.
func TestKafkaPythonLiveAcrossRestarts(t *testing.T) {
	t.Parallel()
	pythonNeedKafka(t)
	addr := kafkaFreeAddr(t)
	data := filepath.Join(t.TempDir(), "data")
	flags := []string{"--listen", addr, "--group-initial-rebalance-delay", "0"}
	srv := kafkaServe(t, data, flags...)
	kafkaCreateTopic(t, kafkaClient(t, addr), "live", 1)

	py := startPythonLive(t, addr, "live", "live-readers", "earliest")
	var all []string // the values produced, in order
	check := func(what, kind string, got []string, values []string) {
		t.Helper()
		var want []string
		for i, v := range values {
			want = append(want, fmt.Sprintf("%s %d %s", kind, len(all)+i, v))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: python printed\n%s\nwant\n%s\npython stderr: %s\nserver log:\n%s", what,
				strings.Join(got, "\n"), strings.Join(want, "\n"), py.stderr(), srv.stderr())
		}
	}

	first := []string{"r0", "r1", "r2"}
	check("first produce", "acked", py.do("produce "+strings.Join(first, " ")), first)
	check("first consume", "rec", py.do("consume 3"), first)
	all = append(all, first...)
	for i, how := range []string{"SIGKILL", "SIGTERM", "SIGKILL"} {
		what := fmt.Sprintf("restart %d (%s)", i+1, how)
		if how == "SIGKILL" {
			srv.cmd.Process.Kill()
			<-srv.done
		} else {
			srv.cmd.Process.Signal(syscall.SIGTERM)
			if err := <-srv.done; err != nil {
				t.Fatalf("%s: serve exited with %v:\n%s", what, err, srv.stderr())
			}
		}
		// The producer sends while the server is down; its flush
		// waits for the restart.
		vals := []string{fmt.Sprintf("s%d-a", i), fmt.Sprintf("s%d-b", i)}
		acks := make(chan []string, 1)
		go func() {
			// Not py.do: no t.Fatal off the test goroutine.
			var got []string
			if _, err := fmt.Fprintln(py.in, "produce "+strings.Join(vals, " ")); err == nil {
				for l := range py.lines {
					if l == "done" {
						break
					}
					got = append(got, l)
				}
			}
			acks <- got
		}()
		srv = kafkaServe(t, data, flags...)
		// Cleanups run last first: python closes before this server
		// stops, even if the test fails.
		t.Cleanup(func() { py.close() })
		check(what+", produce", "acked", <-acks, vals)
		check(what+", consume", "rec", py.do("consume 2"), vals)
		all = append(all, vals...)
	}
	if rest := py.close(); len(rest) > 0 || py.cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("python's close printed %q and exited %v\nstderr: %s", rest, py.cmd.ProcessState, py.stderr())
	}
	got := recordValues(kafkaConsume(t, addr, "live", 0, 0, len(all)))
	if end := kafkaListOffset(t, addr, "live", -1); !slices.Equal(got, all) || end != int64(len(all)) {
		t.Fatalf("the log holds %q up to %d, want %q", got, end, all)
	}
}

// A kill -9 whose recovery truncates a torn tail takes records a live
// librdkafka consumer had read: its position is past the new log end. As
// against Kafka (librdkafka 2.0 has no KIP-320 truncation detection), its
// next fetch gets OFFSET_OUT_OF_RANGE and it resets by auto.offset.reset,
// logging "offset reset (at offset 10, ...) to BEGINNING|END ... Offset
// out of range": earliest reads the log again from 0, latest waits at the
// new end and reads the next record produced there. Nothing else: no
// error, no record the truncation took.
func TestKafkaPythonResetAfterTruncation(t *testing.T) {
	t.Parallel()
	pythonNeedKafka(t)
	for _, reset := range []string{"earliest", "latest"} {
		t.Run(reset, func(t *testing.T) {
			addr := kafkaFreeAddr(t)
			data := filepath.Join(t.TempDir(), "data")
			flags := []string{"--listen", addr, "--group-initial-rebalance-delay", "0"}
			srv := kafkaServe(t, data, flags...)
			cl := kafkaClient(t, addr)
			kafkaCreateTopic(t, cl, "torn", 1)
			var values []string
			for i := range 10 {
				values = append(values, fmt.Sprintf("v%d", i))
			}
			// A batch each, the last one the torn tail.
			for _, v := range values {
				kafkaProduce(t, cl, "torn", 0, v)
			}
			cl.Close()
			py := startPythonLive(t, addr, "torn", "torn-readers", reset)
			diag := func() string { return "python stderr: " + py.stderr() + "\nserver log:\n" + srv.stderr() }
			var want []string
			for i, v := range values {
				want = append(want, fmt.Sprintf("rec %d %s", i, v))
			}
			if got := py.do("consume 10"); !slices.Equal(got, want) {
				t.Fatalf("before the kill: %q, want %q\n%s", got, want, diag())
			}

			srv.cmd.Process.Kill()
			<-srv.done
			seg := filepath.Join(data, "torn-0", "00000000000000000000.log")
			fi, err := os.Stat(seg)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(seg, fi.Size()-5); err != nil {
				t.Fatal(err)
			}
			srv = kafkaServe(t, data, flags...)
			t.Cleanup(func() { py.close() }) // before the server stops
			if !strings.Contains(srv.stderr(), "truncated torn or corrupt tail") {
				t.Fatalf("recovery did not truncate:\n%s", srv.stderr())
			}

			var got []string
			if reset == "earliest" {
				want = append([]string{"reset to BEGINNING"}, want[:9]...)
				got = py.do("consume 9")
			} else {
				// The reset comes with the first fetch after the restart,
				// before anything is produced: wait for it.
				want = []string{"reset to END", "acked 9 w9", "rec 9 w9"}
				for i := 0; len(got) == 0 && i < 150; i++ {
					got = py.do("consume 0")
				}
				if len(got) == 0 {
					t.Fatalf("no offset reset in 150 polls after the truncation\n%s", diag())
				}
				got = append(got, py.do("produce w9")...)
				got = append(got, py.do("consume 1")...)
			}
			if len(got) > 0 && strings.HasPrefix(got[0], "reset ") {
				// librdkafka's line names the position and the cause.
				l := got[0]
				if strings.Contains(l, "offset reset (at offset 10, broker 0)") && strings.Contains(l, "Offset out of range") {
					_, to, _ := strings.Cut(l, ") to ")
					to, _, _ = strings.Cut(to, ":")
					got[0] = "reset to " + to
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("after the truncation python printed\n%s\nwant\n%s\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), diag())
			}
			if rest := py.close(); len(rest) > 0 {
				t.Fatalf("python's close printed %q\n%s", rest, diag())
			}
		})
	}
}
