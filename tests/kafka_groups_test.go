package tests

// Classic consumer groups (JoinGroup, SyncGroup, Heartbeat, LeaveGroup)
// with every client's default consumer: kcat -G, franz-go's
// kgo.ConsumerGroup, confluent-kafka-python's subscribe().

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kcatMember is a `kcat -G` consumer running in the background.
type kcatMember struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd

	mu       sync.Mutex
	records  []string // "PARTITION VALUE"
	assigned string   // partitions of the last "assigned:" line
	assigns  int      // "assigned:" lines so far: rebalances this member took part in
	stderr   bytes.Buffer
	changed  chan struct{} // a new line arrived (capacity 1)
	exited   chan struct{}
}

// kcatJoin starts kcat as a member of group consuming topic from the
// earliest offset where the group has no commit; extra are more kcat
// options. It is stopped (SIGTERM) in t.Cleanup if still running.
//
// It heartbeats every 300 ms instead of librdkafka's 3 s: a member learns
// of a rebalance (another joined or left) only from a heartbeat's
// REBALANCE_IN_PROGRESS, so each rebalance cost up to 3 s of waiting.
func kcatJoin(t *testing.T, addr, group, topic, name string, extra ...string) *kcatMember {
	t.Helper()
	bin := kafkaNeedKcat(t)
	m := &kcatMember{t: t, name: name, changed: make(chan struct{}, 1), exited: make(chan struct{})}
	args := []string{"-b", addr, "-G", group, "-u", "-f", "%p %s\n", "-X", "auto.offset.reset=earliest",
		"-X", "heartbeat.interval.ms=300"}
	args = append(append(args, extra...), topic)
	m.cmd = exec.Command(bin, args...)
	stdout, err := m.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := m.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			m.mu.Lock()
			m.records = append(m.records, sc.Text())
			m.mu.Unlock()
			wake(m.changed)
		}
	}()
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			m.mu.Lock()
			m.stderr.WriteString(line + "\n")
			if _, list, ok := strings.Cut(line, "assigned: "); ok && strings.Contains(line, "rebalanced") {
				m.assigned = list
				m.assigns++
			}
			m.mu.Unlock()
			wake(m.changed)
		}
	}()
	go func() {
		wg.Wait()
		m.cmd.Wait()
		close(m.exited)
		wake(m.changed)
	}()
	t.Cleanup(func() { m.stop() })
	return m
}

// wake wakes whoever waits on ch, a channel of capacity 1, without
// blocking: a wake-up already pending says as much.
func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// stop ends kcat with SIGTERM, on which it commits, leaves the group and
// exits; it waits for that.
func (m *kcatMember) stop() {
	select {
	case <-m.exited:
		return
	default:
	}
	m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.exited:
	case <-time.After(30 * time.Second):
		m.cmd.Process.Kill()
		<-m.exited
		m.t.Errorf("kcat %s ignored SIGTERM for 30s:\n%s", m.name, m.log())
	}
}

func (m *kcatMember) log() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stderr.String()
}

// waitUntil waits for cond (checked under m.mu) on every new line, for at
// most a minute.
func (m *kcatMember) waitUntil(what string, cond func() bool) {
	m.t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		m.mu.Lock()
		ok := cond()
		m.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-m.changed:
		case <-m.exited:
			m.mu.Lock()
			ok := cond()
			m.mu.Unlock()
			if !ok {
				m.t.Fatalf("kcat %s exited before %s:\n%s", m.name, what, m.log())
			}
			return
		case <-deadline:
			m.t.Fatalf("kcat %s: no %s after 60s:\n%s", m.name, what, m.log())
		}
	}
}

// assignedPartitions returns the partitions of kcat's last assignment
// ("T [0], T [2]" → "0,2"); call with m.mu held.
func (m *kcatMember) assignedPartitions() string {
	var ps []string
	for _, f := range strings.Split(m.assigned, ",") {
		if _, p, ok := strings.Cut(f, "["); ok {
			ps = append(ps, strings.TrimSuffix(strings.TrimSpace(p), "]"))
		}
	}
	sort.Strings(ps)
	return strings.Join(ps, ",")
}

// recordsWith is how many records m read whose value has sub; call with
// m.mu held.
func (m *kcatMember) recordsWith(sub string) int {
	n := 0
	for _, r := range m.records {
		if strings.Contains(r, sub) {
			n++
		}
	}
	return n
}

// kcatSplit waits until b has joined a's group and the two share the 4
// partitions; it fails the test unless each holds two. It returns a's
// and b's partitions.
func kcatSplit(t *testing.T, a, b *kcatMember) (pa, pb string) {
	t.Helper()
	b.waitUntil("a share of the partitions", func() bool { pb = b.assignedPartitions(); return pb != "" })
	a.waitUntil("its share after B joined", func() bool { pa = a.assignedPartitions(); return len(pa) == 3 })
	if len(pb) != 3 || pa == pb {
		t.Fatalf("partitions split as A %q, B %q; want two each", pa, pb)
	}
	return pa, pb
}

func (m *kcatMember) got() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.records)
}

// produceRound produces n values to each partition of topic, named by
// round, and returns them as consumers print them: "PARTITION VALUE".
func produceRound(t *testing.T, cl *kgo.Client, topic string, partitions int32, round string, n int) []string {
	t.Helper()
	var all []string
	for p := range partitions {
		var vals []string
		for i := range n {
			v := fmt.Sprintf("%s-p%d-%d", round, p, i)
			vals = append(vals, v)
			all = append(all, fmt.Sprintf("%d %s", p, v))
		}
		kafkaProduce(t, cl, topic, p, vals...)
	}
	return all
}

// Two kcat -G consumers in one group split the partitions of a
// 4-partition topic and together consume every record exactly once; when
// one exits, the other takes over its partitions from the committed
// offsets. Before segfs served JoinGroup, kcat said "JoinGroup failed:
// Local: Required feature not supported by broker" and consumed nothing.
func TestKafkaKcatConsumerGroup(t *testing.T) {
	// It mostly waits (group timers, clients) on a server, data dir and
	// port of its own: it runs beside the other tests that do (t.Parallel).
	t.Parallel()
	kafkaNeedKcat(t)
	// Its members join one at a time: no initial rebalance delay to wait out.
	srv := kafkaServe(t, "", "--partitions", "4", "--group-initial-rebalance-delay", "0")
	const topic, group = "events", "kcat-workers"
	cl := kafkaClient(t, srv.addr, kgo.AllowAutoTopicCreation())
	// Produced before anyone joins: the first member reads them alone.
	want := produceRound(t, cl, topic, 4, "early", 3)

	a := kcatJoin(t, srv.addr, group, topic, "A")
	a.waitUntil("assignment of all 4 partitions", func() bool { return a.assignedPartitions() == "0,1,2,3" })
	a.waitUntil("the 12 early records", func() bool { return len(a.records) >= 12 })

	b := kcatJoin(t, srv.addr, group, topic, "B")
	// The group rebalances: A rejoins, each gets two partitions.
	kcatSplit(t, a, b)
	want = append(want, produceRound(t, cl, topic, 4, "split", 5)...)
	for _, m := range []*kcatMember{a, b} {
		m.waitUntil("its records of the split round", func() bool { return m.recordsWith("split-") >= 10 })
	}
	for _, m := range []*kcatMember{a, b} {
		mine := map[string]bool{}
		m.mu.Lock()
		for _, p := range strings.Split(m.assignedPartitions(), ",") {
			mine[p] = true
		}
		m.mu.Unlock()
		for _, r := range m.got() {
			if p, v, _ := strings.Cut(r, " "); strings.Contains(v, "split-") && !mine[p] {
				t.Errorf("kcat %s got %q from partition %s, which is not its own", m.name, r, p)
			}
		}
	}

	// B exits (commits, leaves): A gets all partitions and continues
	// where B's commits say.
	b.stop()
	a.waitUntil("all 4 partitions back", func() bool { return a.assignedPartitions() == "0,1,2,3" })
	want = append(want, produceRound(t, cl, topic, 4, "late", 4)...)
	a.waitUntil("every record of the late round", func() bool { return a.recordsWith("late-") >= 16 })

	got := append(a.got(), b.got()...)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("A and B consumed %d records (%d expected), not each exactly once:\nA: %q\nB: %q\nA log:\n%s\nB log:\n%s",
			len(got), len(want), a.got(), b.got(), a.log(), b.log())
	}
}

// franz-go's group consumer (kgo.ConsumerGroup, cooperative-sticky,
// autocommit) consumes everything and commits as a group member on close; a second run of the group resumes at
// the offsets the first committed. Before, kgo failed with "broker is too
// old".
func TestKafkaKgoConsumerGroup(t *testing.T) {
	// It mostly waits (group timers, clients) on a server, data dir and
	// port of its own: it runs beside the other tests that do (t.Parallel).
	t.Parallel()
	// Its members join one at a time: no initial rebalance delay to wait out.
	srv := kafkaServe(t, "", "--partitions", "3", "--group-initial-rebalance-delay", "0")
	const topic, group = "orders", "kgo-workers"
	prod := kafkaClient(t, srv.addr, kgo.AllowAutoTopicCreation())
	first := produceRound(t, prod, topic, 3, "first", 10)

	consume := func(n int) []string {
		t.Helper()
		// Greedy: kgo's default autocommit lags one poll behind (it is
		// at-least-once by design), so a run that closes right after its
		// last poll would commit nothing of it and the next run would
		// re-read it; greedy commits everything polled, on close too.
		cl, err := kgo.NewClient(kgo.SeedBrokers(srv.addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond),
			kgo.GreedyAutoCommit())
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close() // leaves the group, committing what was consumed
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var got []string
		for len(got) < n {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("group consumer read %d of %d records: %q", len(got), n, got)
			}
			fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
			fs.EachRecord(func(r *kgo.Record) { got = append(got, fmt.Sprintf("%d %s", r.Partition, r.Value)) })
		}
		return got
	}
	got := consume(len(first))
	slices.Sort(got)
	slices.Sort(first)
	if !slices.Equal(got, first) {
		t.Fatalf("first run read %q, want %q", got, first)
	}
	second := produceRound(t, prod, topic, 3, "second", 2)
	got = consume(len(second))
	slices.Sort(got)
	slices.Sort(second)
	if !slices.Equal(got, second) {
		t.Fatalf("second run read %q, want only the new records %q", got, second)
	}
}

// pythonSubscribe consumes N records with subscribe() (librdkafka's
// balanced consumer, auto commit) and closes, which commits and leaves.
const pythonSubscribe = `
import sys
from confluent_kafka import Consumer

bootstrap, topic, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = Consumer({"bootstrap.servers": bootstrap, "group.id": "py-group",
              "auto.offset.reset": "earliest"})
c.subscribe([topic])
got = []
while len(got) < n:
    m = c.poll(60)
    if m is None:
        sys.exit("timed out after %d records: %s" % (len(got), got))
    if m.error():
        sys.exit("consume error: %s" % m.error())
    got.append("%d %s" % (m.partition(), m.value().decode()))
c.close()
print("\n".join(got))
`

// confluent-kafka-python's subscribe() joins the group, consumes, commits
// on close, and a second run resumes after the commit. Before, it failed:
// the broker did not serve the group APIs.
func TestKafkaPythonSubscribe(t *testing.T) {
	// It mostly waits (group timers, clients) on a server, data dir and
	// port of its own: it runs beside the other tests that do (t.Parallel).
	t.Parallel()
	pythonNeedKafka(t)
	script := pythonScript(t, "subscribe.py", pythonSubscribe)
	// Its members join one at a time: no initial rebalance delay to wait out.
	srv := kafkaServe(t, "", "--partitions", "2", "--group-initial-rebalance-delay", "0")
	prod := kafkaClient(t, srv.addr, kgo.AllowAutoTopicCreation())
	run := func(n int) []string {
		t.Helper()
		out, _ := pythonRun(t, 90, script, srv.addr, "jobs", fmt.Sprint(n))
		lines := strings.Split(strings.TrimSpace(out), "\n")
		slices.Sort(lines)
		return lines
	}
	want := produceRound(t, prod, "jobs", 2, "a", 3)
	slices.Sort(want)
	if got := run(len(want)); !slices.Equal(got, want) {
		t.Fatalf("first run read %q, want %q", got, want)
	}
	want = produceRound(t, prod, "jobs", 2, "b", 2)
	slices.Sort(want)
	if got := run(len(want)); !slices.Equal(got, want) {
		t.Fatalf("second run read %q, want only the new records %q", got, want)
	}
}

// TestKafkaConsumerGroupThroughMount: a consumer group served by `segfs
// mount --kafka-listen` (the mount's own fetch server, not `serve`): a
// `kcat -G` member reads what the shell appended to two partitions, and
// the next member of the group resumes from what the first committed,
// getting only the lines appended since.
func TestKafkaConsumerGroupThroughMount(t *testing.T) {
	// It mostly waits (group timers, clients) on a server, data dir and
	// port of its own: it runs beside the other tests that do (t.Parallel).
	t.Parallel()
	kafkaNeedKcat(t)
	addr := kafkaFreeAddr(t)
	// Its members join one at a time: no initial rebalance delay to wait out.
	m := mntNew(t, "--kafka-listen", addr, "--partitions", "2", "--group-initial-rebalance-delay", "0")
	m.ok(`mkdir "$M/gt" && seq 1 30 >> "$M/gt/0/data" && seq 31 60 >> "$M/gt/1/data"`)
	read := func(n int) []string {
		t.Helper()
		out := kcat(t, addr, "", "-G", "grp", "-c", strconv.Itoa(n), "-X", "auto.offset.reset=earliest", "-q", "gt")
		got := mntLines(out)
		sort.Slice(got, func(i, j int) bool { return len(got[i]) < len(got[j]) || len(got[i]) == len(got[j]) && got[i] < got[j] })
		return got
	}
	if got := read(60); len(got) != 60 || got[0] != "1" || got[59] != "60" {
		t.Fatalf("first member read %d lines (%v ... ), want 1..60", len(got), got[:min(3, len(got))])
	}
	m.ok(`seq 61 65 >> "$M/gt/0/data"`)
	if got := read(5); strings.Join(got, " ") != "61 62 63 64 65" {
		t.Fatalf("the next member read %q, want 61..65 (resumed from the commit)", got)
	}
}
