package tests

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// pythonAutoCommit subscribes with auto-commit every 300 ms and prints a
// line per record ("rec OFFSET VALUE"), per commit callback ("commit ok
// OFFSET" or "commit ERROR OFFSET"), and per rebalance callback; it stops
// once it has read the value 7.
const pythonAutoCommit = `
import sys
from confluent_kafka import Consumer
addr, topic, group, instance = sys.argv[1:5]

def on_commit(err, parts):
    for p in parts:
        print("commit %s %d" % ("ok" if err is None else err.name(), p.offset), flush=True)

conf = {"bootstrap.servers": addr, "group.id": group, "auto.offset.reset": "earliest",
        "enable.auto.commit": True, "auto.commit.interval.ms": 300, "on_commit": on_commit}
if instance:
    conf["group.instance.id"] = instance
c = Consumer(conf)
c.subscribe([topic], on_assign=lambda c, ps: print("assign", flush=True),
            on_revoke=lambda c, ps: print("revoke", flush=True))
while True:
    m = c.poll(1)
    if m is None:
        continue
    if m.error():
        print("error %s" % m.error().name(), flush=True)
        continue
    print("rec %d %s" % (m.offset(), m.value().decode()), flush=True)
    if m.value() == b"7":
        break
c.close()
`

// lineLog collects a process's output lines and lets the test wait for
// one.
type lineLog struct {
	mu      sync.Mutex
	lines   []string
	changed chan struct{} // closed and replaced at every line
	closed  bool
}

func newLineLog() *lineLog { return &lineLog{changed: make(chan struct{})} }

func (l *lineLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, s)
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *lineLog) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *lineLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

// waitLine waits up to a minute for a line equal to want.
func (l *lineLog) waitLine(t *testing.T, want string, diag func() string) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		l.mu.Lock()
		found, closed, ch := slices.Contains(l.lines, want), l.closed, l.changed
		l.mu.Unlock()
		if found {
			return
		}
		if closed {
			t.Fatalf("no line %q before the process ended:\n%s", want, diag())
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no line %q after a minute:\n%s", want, diag())
		}
	}
}

// The colleague's reproduction: a confluent-kafka consumer with
// auto-commit reads 3 records, the mount restarts (umount, mount), 3 more
// are appended. The consumer's commit after the restart is accepted (the
// group came back with its member), nothing is rebalanced and nothing is
// read twice. segfs forgot the group at the restart: the commit of 6
// failed with UNKNOWN_MEMBER_ID, the member was revoked, rejoined and
// read 3-5 again (with group.instance.id); without it the final commit
// could be lost.
func TestKafkaPythonGroupCommitAcrossMountRestart(t *testing.T) {
	// It mostly waits (timers, clients) on a server, data dir and
	// port of its own: it runs beside the other tests that do (t.Parallel).
	t.Parallel()
	pythonNeedKafka(t)
	for _, instance := range []string{"w1", ""} {
		name := "static"
		if instance == "" {
			name = "dynamic"
		}
		t.Run(name, func(t *testing.T) {
			addr := kafkaFreeAddr(t)
			// The consumer joins alone: no initial rebalance delay
			// to wait out.
			flags := []string{"--kafka-listen", addr, "--group-initial-rebalance-delay", "0"}
			m := mntNew(t, flags...)
			kafkaWaitListening(t, addr)
			m.ok(`mkdir "$M/st1" && seq 1 3 >> "$M/st1/0/data"`)

			script := pythonScript(t, "autocommit.py", pythonAutoCommit)
			cmd := exec.Command("timeout", "-k", "5", "150", pythonBin, script, addr, "st1", "g-"+name, instance)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var errb bytes.Buffer
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			log := newLineLog()
			exited := make(chan struct{})
			var waitErr error
			go func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					log.add(sc.Text())
				}
				waitErr = cmd.Wait()
				close(exited)
				log.end()
			}()
			t.Cleanup(func() {
				// timeout(1) passes the signal on to python.
				cmd.Process.Signal(syscall.SIGTERM)
				<-exited
			})
			diag := func() string {
				return "stdout:\n" + strings.Join(log.all(), "\n") + "\nstderr:\n" + errb.String() + "\ndaemon log:\n" + m.daemonLog()
			}

			log.waitLine(t, "rec 2 3", diag)
			log.waitLine(t, "commit ok 3", diag) // committed before the restart
			m.unmount()
			m.mount(flags...)
			kafkaWaitListening(t, addr)
			m.ok(`seq 4 6 >> "$M/st1/0/data"`)
			log.waitLine(t, "rec 5 6", diag)
			log.waitLine(t, "commit ok 6", diag)
			// A last record ends the consumer: whatever it read twice
			// is before it.
			m.ok(`echo 7 >> "$M/st1/0/data"`)
			<-exited
			if waitErr != nil {
				t.Fatalf("python: %v\n%s", waitErr, diag())
			}

			var recs, rebalances, failed []string
			for _, l := range log.all() {
				switch {
				case strings.HasPrefix(l, "rec "):
					recs = append(recs, l)
				case l == "assign" || l == "revoke":
					rebalances = append(rebalances, l)
				case strings.HasPrefix(l, "commit ") && !strings.HasPrefix(l, "commit ok "):
					failed = append(failed, l)
				}
				if l == "rec 6 7" {
					break // close() revokes
				}
			}
			want := []string{"rec 0 1", "rec 1 2", "rec 2 3", "rec 3 4", "rec 4 5", "rec 5 6", "rec 6 7"}
			if !slices.Equal(recs, want) {
				t.Errorf("records read %q, want each once: %q\n%s", recs, want, diag())
			}
			if !slices.Equal(rebalances, []string{"assign"}) {
				t.Errorf("rebalance callbacks %q, want the first assignment only\n%s", rebalances, diag())
			}
			if len(failed) > 0 {
				t.Errorf("failed commits %q\n%s", failed, diag())
			}
		})
	}
}

// kgoGroupMember is a franz-go group consumer (kgo.ConsumerGroup, eager
// range balancer) that commits synchronously what each poll returned,
// recording what it read, its commits' errors and its assignments. It
// retries soon (kgoQuickRetry): a member told NOT_COORDINATOR or cut off
// by a restart is back within half a second of the server.
type kgoGroupMember struct {
	name string
	cl   *kgo.Client
	logb *bytes.Buffer
	mu   *sync.Mutex
	done chan struct{}

	// guarded by mu
	read       []string // "partition value"
	committed  []string // read and committed
	commitErrs []error
	assigns    []map[string][]int32
	kick       chan struct{} // buffered (1): something changed
}

func startKgoGroupMember(t *testing.T, addr, group, topic, name string, kick chan struct{}, opts ...kgo.Opt) *kgoGroupMember {
	t.Helper()
	m := &kgoGroupMember{name: name, logb: new(bytes.Buffer), mu: new(sync.Mutex), done: make(chan struct{}), kick: kick}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.Balancers(kgo.RangeBalancer()), kgo.DisableAutoCommit(),
		kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(300 * time.Millisecond),
		kgo.RetryTimeout(30 * time.Second),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(300 * time.Millisecond),
		kgo.WithLogger(kgo.BasicLogger(lockedWriter{m.mu, m.logb}, kgo.LogLevelInfo, nil)),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.assigns = append(m.assigns, ps)
			wake(m.kick)
		})}, append(kgoQuickRetry(), opts...)...)...)
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	go m.run()
	t.Cleanup(m.close)
	return m
}

func (m *kgoGroupMember) run() {
	defer close(m.done)
	for {
		fs := m.cl.PollFetches(context.Background())
		if fs.IsClientClosed() {
			return
		}
		var recs []*kgo.Record
		var vals []string
		fs.EachRecord(func(r *kgo.Record) {
			recs = append(recs, r)
			vals = append(vals, fmt.Sprintf("%d %s", r.Partition, r.Value))
		})
		if len(recs) == 0 {
			continue
		}
		m.mu.Lock()
		m.read = append(m.read, vals...)
		m.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := m.cl.CommitRecords(ctx, recs...)
		cancel()
		m.mu.Lock()
		if err != nil {
			m.commitErrs = append(m.commitErrs, err)
		} else {
			m.committed = append(m.committed, vals...)
		}
		wake(m.kick)
		m.mu.Unlock()
	}
}

func (m *kgoGroupMember) close() {
	m.cl.Close()
	<-m.done
}

func (m *kgoGroupMember) snapshot() (read, committed []string, errs []error, assigns []map[string][]int32, log string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.read), slices.Clone(m.committed), slices.Clone(m.commitErrs), slices.Clone(m.assigns), m.logb.String()
}

// waitKgoMembers waits up to a minute until cond holds, looking again
// at every change of a member (kick).
func waitKgoMembers(t *testing.T, what string, kick chan struct{}, cond func() bool, ms ...*kgoGroupMember) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for !cond() {
		select {
		case <-kick:
		case <-deadline:
			var b strings.Builder
			for _, m := range ms {
				read, committed, errs, assigns, log := m.snapshot()
				fmt.Fprintf(&b, "member %s: read %q, committed %q, commit errors %v, assignments %v\nlog:\n%s\n", m.name, read, committed, errs, assigns, log)
			}
			t.Fatalf("%s: not after a minute\n%s", what, b.String())
		}
	}
}

// kgoGroupRounds is a group of kgoGroupMembers reading rounds of records
// from a topic's two partitions: a round is one record to each
// partition, and want holds every record produced so far as the members
// record what they read ("partition value").
type kgoGroupRounds struct {
	t                  *testing.T
	addr, group, topic string
	prod               *kgo.Client
	kick               chan struct{}
	members            []*kgoGroupMember
	want               []string
}

func newKgoGroupRounds(t *testing.T, addr, group, topic string, prod *kgo.Client) *kgoGroupRounds {
	return &kgoGroupRounds{t: t, addr: addr, group: group, topic: topic, prod: prod, kick: make(chan struct{}, 1)}
}

// join starts a member of the group, consuming the topic.
func (g *kgoGroupRounds) join(name string, opts ...kgo.Opt) *kgoGroupMember {
	g.t.Helper()
	m := startKgoGroupMember(g.t, g.addr, g.group, g.topic, name, g.kick, opts...)
	g.members = append(g.members, m)
	return m
}

// produce produces round's records: ROUND-p0 to partition 0, ROUND-p1
// to partition 1.
func (g *kgoGroupRounds) produce(round string) {
	g.t.Helper()
	for p := range int32(2) {
		v := fmt.Sprintf("%s-p%d", round, p)
		kafkaProduce(g.t, g.prod, g.topic, p, v)
		g.want = append(g.want, fmt.Sprintf("%d %s", p, v))
	}
}

// wait waits up to a minute until cond holds (see waitKgoMembers).
func (g *kgoGroupRounds) wait(what string, cond func() bool) {
	g.t.Helper()
	waitKgoMembers(g.t, what, g.kick, cond, g.members...)
}

// allCommitted: the members together read and committed as many records
// as were produced.
func (g *kgoGroupRounds) allCommitted() bool { return g.total(true) >= len(g.want) }

// allRead: the members together read as many records as were produced.
func (g *kgoGroupRounds) allRead() bool { return g.total(false) >= len(g.want) }

// total is how many records the members together read, or read and
// committed.
func (g *kgoGroupRounds) total(committed bool) int {
	n := 0
	for _, m := range g.members {
		read, c, _, _, _ := m.snapshot()
		if committed {
			read = c
		}
		n += len(read)
	}
	return n
}

// assigned is how many assignments that named partitions each member has
// had (partsGiven).
func (g *kgoGroupRounds) assigned() []int {
	var n []int
	for _, m := range g.members {
		_, _, _, as, _ := m.snapshot()
		n = append(n, partsGiven(as))
	}
	return n
}

// partsGiven is how many of a member's OnPartitionsAssigned calls named
// partitions. franz-go's KIP-848 consumer (cooperative) calls it at the
// start of every session of its heartbeat loop with the partitions added
// since the last, usually none, and starts a new session whenever a
// transient error ends one: an offset fetch that fails while the server
// restarts ends it at once, and the next starts without a backoff, so a
// member can see hundreds of empty calls while the server is down. They
// say nothing about the group; an eager (classic) member's calls always
// name what it holds.
func partsGiven(as []map[string][]int32) int {
	n := 0
	for _, a := range as {
		for _, ps := range a {
			if len(ps) > 0 {
				n++
				break
			}
		}
	}
	return n
}

// logMarks is how long each member's log is, so that checkNotTold can
// look at what was logged since.
func (g *kgoGroupRounds) logMarks() map[string]int {
	marks := map[string]int{}
	for _, m := range g.members {
		_, _, _, _, log := m.snapshot()
		marks[m.name] = len(log)
	}
	return marks
}

// checkNotTold checks that no member's log since marks (nil: the whole
// log) has any of bad.
func (g *kgoGroupRounds) checkNotTold(what string, marks map[string]int, bad ...string) {
	g.t.Helper()
	for _, m := range g.members {
		_, _, _, _, log := m.snapshot()
		log = log[marks[m.name]:]
		for _, b := range bad {
			if strings.Contains(log, b) {
				g.t.Errorf("%s: member %s was told %s:\n%s", what, m.name, b, log)
			}
		}
	}
}

// checkReadOnce checks that the members together read every record
// produced, each once.
func (g *kgoGroupRounds) checkReadOnce(what string) {
	g.t.Helper()
	var got []string
	for _, m := range g.members {
		read, _, _, _, _ := m.snapshot()
		got = append(got, read...)
	}
	slices.Sort(got)
	if w := slices.Sorted(slices.Values(g.want)); !slices.Equal(got, w) {
		g.t.Errorf("%s: records read %q, want each once: %q", what, got, w)
	}
}

// checkCarriedOn checks that the members carried on across restarts:
// no commit failed, none was told any of bad since marks (nil: ever), each
// record was read once, and none was assigned partitions again since
// it had assigned assignments (g.assigned).
func (g *kgoGroupRounds) checkCarriedOn(what string, marks map[string]int, assigned []int, bad ...string) {
	g.t.Helper()
	for i, m := range g.members {
		_, _, errs, as, log := m.snapshot()
		if len(errs) > 0 {
			g.t.Errorf("%s: member %s's commits failed: %v", what, m.name, errs)
		}
		if n := partsGiven(as); n != assigned[i] {
			g.t.Errorf("%s: member %s was assigned partitions %d times, %d before: %v\nits log since:\n%s", what, m.name, n, assigned[i], as, log[marks[m.name]:])
		}
	}
	g.checkNotTold(what, marks, bad...)
	g.checkReadOnce(what)
}

// serveRestarts restarts srv (serving data with flags) twice, with
// SIGTERM and then with kill -9; after each restart check looks at the
// group (how: "SIGTERM", "SIGKILL"), then a round is produced (r1, r2),
// which the members must read and commit. It returns the server last
// started.
func (g *kgoGroupRounds) serveRestarts(srv *kafkaServer, data string, flags []string, check func(how string)) *kafkaServer {
	g.t.Helper()
	for i, how := range []string{"SIGTERM", "SIGKILL"} {
		if how == "SIGKILL" {
			srv.cmd.Process.Kill()
			<-srv.done
		} else {
			srv.stop()
		}
		srv = kafkaServe(g.t, data, flags...)
		check(how)
		g.produce(fmt.Sprintf("r%d", i+1))
		g.wait(fmt.Sprintf("round r%d read and committed after the %s restart", i+1, how), g.allCommitted)
	}
	return srv
}

// describeClassic is DescribeGroups of group, through a fresh client.
func describeClassic(t *testing.T, addr, group string) kmsg.DescribeGroupsResponseGroup {
	t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	resp := freshRequest[*kmsg.DescribeGroupsResponse](t, addr, req)
	if len(resp.Groups) != 1 {
		t.Fatalf("DescribeGroups %s: %+v", group, resp)
	}
	return resp.Groups[0]
}

// franz-go group consumers that commit synchronously carry on across
// restarts of `segfs serve`, SIGTERM and kill -9: the group comes back
// with both members at their generation, so their heartbeats and commits
// are accepted, nobody is rebalanced and nothing is read twice; and
// DescribeGroups shows the members right after the restart. Then one
// member (static, so its Close does not leave) is gone while the server
// restarts: it is removed once its session times out, and the other
// takes over its partition from what it committed. segfs forgot the
// members at a restart: heartbeats got UNKNOWN_MEMBER_ID and both
// rejoined.
func TestKafkaKgoGroupAcrossServeRestarts(t *testing.T) {
	// It mostly waits (group timers, clients) on a server, data dir and
	// port of its own: it runs beside the other tests that do (t.Parallel).
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	addr := kafkaFreeAddr(t)
	// The test waits out b's session once: 3 s, below Kafka's 6 s
	// minimum, is still 6 times what a member needs to be back after a
	// restart (kgoQuickRetry). The initial rebalance delay stays: it
	// gathers a and b into one generation, so that nobody's commit meets
	// a rebalance before the restarts.
	flags := []string{"--listen", addr, "--partitions", "2", "--group-min-session-timeout", "1s"}
	srv := kafkaServe(t, data, flags...)
	const topic = "restarts"
	g := newKgoGroupRounds(t, addr, "kgo-restarts", topic, kafkaClient(t, addr, kgo.AllowAutoTopicCreation()))
	g.produce("r0")
	a := g.join("a")
	b := g.join("b", kgo.InstanceID("kgo-b"), kgo.SessionTimeout(3*time.Second))
	g.wait("a partition each", func() bool {
		_, _, _, aa, _ := a.snapshot()
		_, _, _, ba, _ := b.snapshot()
		return len(aa) > 0 && len(ba) > 0 && len(aa[len(aa)-1][topic]) == 1 && len(ba[len(ba)-1][topic]) == 1
	})
	g.wait("round r0 read and committed", g.allCommitted)
	assigned := g.assigned()

	srv = g.serveRestarts(srv, data, flags, func(how string) {
		if d := describeClassic(t, addr, g.group); d.State != "Stable" || len(d.Members) != 2 {
			t.Errorf("DescribeGroups after the %s restart: state %q, %d members; want Stable with both", how, d.State, len(d.Members))
		}
	})
	g.checkCarriedOn("after the restarts", nil, assigned, "UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS")
	if t.Failed() {
		return
	}

	// b is gone while the server restarts (a static member's Close
	// sends no LeaveGroup): a's heartbeats learn of the rebalance its
	// session timeout starts, and a takes both partitions, b's from
	// where b committed.
	srv.stop()
	b.close()
	srv = kafkaServe(t, data, flags...)
	if d := describeClassic(t, addr, g.group); d.State != "Stable" || len(d.Members) != 2 {
		t.Errorf("DescribeGroups after the restart without b: state %q, %d members; want Stable with both, until b's session ends", d.State, len(d.Members))
	}
	g.produce("r3")
	g.wait("a alone with both partitions", func() bool {
		_, _, _, as, _ := a.snapshot()
		return partsGiven(as) > assigned[0] && len(as[len(as)-1][topic]) == 2
	})
	g.wait("round r3 read and committed by a", g.allRead)
	g.checkReadOnce("after b's departure")
	if d := describeClassic(t, addr, g.group); d.State != "Stable" || len(d.Members) != 1 {
		t.Errorf("DescribeGroups after b's session ended: state %q, %d members; want Stable with a alone", d.State, len(d.Members))
	}
}
