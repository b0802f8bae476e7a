package tests

// KIP-848 ("next-gen") consumer groups with the real client: franz-go
// members with kgo.ServerSideBalancer(), whose partitions the server
// assigns through ConsumerGroupHeartbeat.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// nextGenLog collects what the members of one group consumed.
type nextGenLog struct {
	mu   sync.Mutex
	seen map[string][]string // "partition value" → members that consumed it
	by   map[string]map[int32]bool
}

func newNextGenLog() *nextGenLog {
	return &nextGenLog{seen: map[string][]string{}, by: map[string]map[int32]bool{}}
}

func (l *nextGenLog) add(member string, r *kgo.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := fmt.Sprintf("%d %s", r.Partition, r.Value)
	l.seen[k] = append(l.seen[k], member)
	if l.by[member] == nil {
		l.by[member] = map[int32]bool{}
	}
	l.by[member][r.Partition] = true
}

// has reports whether every one of want was consumed.
func (l *nextGenLog) has(want []string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range want {
		if len(l.seen[k]) == 0 {
			return false
		}
	}
	return true
}

// check fails on a record consumed twice or one of want never consumed.
func (l *nextGenLog) check(t *testing.T, want []string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, ms := range l.seen {
		if len(ms) > 1 {
			t.Errorf("record %q consumed %d times, by %v", k, len(ms), ms)
		}
	}
	for _, k := range want {
		if len(l.seen[k]) == 0 {
			t.Errorf("record %q never consumed", k)
		}
	}
}

// partitionsOf returns the partitions member consumed records of, since
// the last reset.
func (l *nextGenLog) partitionsOf(member string) []int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int32
	for p := range l.by[member] {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

func (l *nextGenLog) resetPartitions() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.by = map[string]map[int32]bool{}
}

func (l *nextGenLog) waitFor(t *testing.T, what string, want []string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !l.has(want) {
		if time.Now().After(deadline) {
			l.mu.Lock()
			n := 0
			for _, k := range want {
				if len(l.seen[k]) > 0 {
					n++
				}
			}
			l.mu.Unlock()
			t.Fatalf("%s: consumed %d of %d records after 60s", what, n, len(want))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cuttableDialer lets a test sever a client from the server without the
// client knowing: its connections are closed and new ones refused, as if
// its process had been killed (no LeaveGroup heartbeat reaches the
// server).
type cuttableDialer struct {
	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func (d *cuttableDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut {
		return nil, errors.New("cut off by the test")
	}
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, host)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *cuttableDialer) sever() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = true
	for _, c := range d.conns {
		c.Close()
	}
}

// nextGenMember is one franz-go member of a KIP-848 group. It commits what
// it consumed after every poll, synchronously, before it lets a rebalance
// take partitions away (BlockRebalanceOnPoll), so that a record is only
// consumed twice if the server handed a partition to a second member
// before the first revoked it, or refused a commit.
type nextGenMember struct {
	name   string
	cl     *kgo.Client
	dialer *cuttableDialer
	cancel context.CancelFunc
	done   chan struct{}
	killed bool
	mu     sync.Mutex
	errs   []error
}

func startNextGenMember(t *testing.T, addr, group, topic, name string, log *nextGenLog, extra ...kgo.Opt) *nextGenMember {
	t.Helper()
	m := &nextGenMember{name: name, dialer: &cuttableDialer{}, done: make(chan struct{})}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.Dialer(m.dialer.dial),
		kgo.ClientID(name),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ServerSideBalancer(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, _ map[string][]int32) {
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				m.fail(fmt.Errorf("commit on revoke: %w", err))
			}
		}),
	}, extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() {
		defer close(m.done)
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil || fs.IsClientClosed() {
				cl.AllowRebalance()
				return
			}
			fs.EachError(func(tp string, p int32, err error) {
				if !errors.Is(err, context.Canceled) {
					m.fail(fmt.Errorf("fetch %s/%d: %w", tp, p, err))
				}
			})
			recs := fs.Records()
			for _, r := range recs {
				log.add(name, r)
			}
			if len(recs) > 0 {
				if err := cl.CommitRecords(ctx, recs...); err != nil && ctx.Err() == nil {
					m.fail(fmt.Errorf("commit: %w", err))
				}
			}
			cl.AllowRebalance()
		}
	}()
	t.Cleanup(m.close)
	return m
}

func (m *nextGenMember) fail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.errs = append(m.errs, err)
}

func (m *nextGenMember) check(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, err := range m.errs {
		t.Errorf("member %s: %v", m.name, err)
	}
}

// close stops polling and closes the client, which leaves the group
// (epoch -1) after committing.
func (m *nextGenMember) close() {
	m.cancel()
	<-m.done
	if !m.killed {
		m.cl.Close()
	}
}

// kill severs the member from the server: no leave reaches it.
func (m *nextGenMember) kill() {
	m.killed = true
	m.dialer.sever()
	m.cancel()
	<-m.done
	go m.cl.Close() // its leave cannot be sent; do not wait for its retries
}

// nextGenRound produces n records to each of partitions partitions of
// topic, named round-i, and returns them as "partition value".
func nextGenRound(t *testing.T, cl *kgo.Client, topic string, partitions int32, round string, n int) []string {
	t.Helper()
	var want []string
	for p := range partitions {
		vals := make([]string, n)
		for i := range vals {
			vals[i] = fmt.Sprintf("%s-%d-%d", round, p, i)
			want = append(want, fmt.Sprintf("%d %s", p, vals[i]))
		}
		kafkaProduce(t, cl, topic, p, vals...)
	}
	return want
}

// TestKafkaNextGenGroupMembership: franz-go consumers with the KIP-848
// protocol (ServerSideBalancer, uniform assignor) share a topic's
// partitions through segfs: two members, then three, split the partitions
// between them; a member that leaves hands its partitions over; a member
// killed without leaving loses them after the session timeout; and no
// record is consumed twice or lost along the way, each member committing
// as it goes. A restarted group resumes at the committed offsets, after a
// restart of the server. Before, the members failed: segfs did not
// advertise ConsumerGroupHeartbeat, and franz-go's ServerSideBalancer fell
// back to the classic protocol, which nextGenCheckType catches (the group
// was not of type consumer).
func TestKafkaNextGenGroupMembership(t *testing.T) {
	// It mostly waits (group timers, clients) on a server, data dir and
	// port of its own: it runs beside the other tests that do (t.Parallel).
	t.Parallel()
	data := t.TempDir() + "/data"
	// c's session, which the test waits out, is ten heartbeats.
	flags := []string{"--partitions", "6", "--group-consumer-heartbeat-interval", "200ms", "--group-consumer-session-timeout", "2s"}
	srv := kafkaServe(t, data, flags...)
	const topic, group, parts = "events", "nextgen", 6
	prod := kafkaClient(t, srv.addr, kgo.AllowAutoTopicCreation())
	log := newNextGenLog()
	var want []string

	// Two members share the six partitions.
	a := startNextGenMember(t, srv.addr, group, topic, "a", log)
	b := startNextGenMember(t, srv.addr, group, topic, "b", log)
	want = append(want, nextGenRound(t, prod, topic, parts, "r1", 5)...)
	log.waitFor(t, "two members", want)
	nextGenWaitShared(t, srv.addr, group, log, []string{"a", "b"}, func(i string) []string {
		return nextGenRound(t, prod, topic, parts, "r1x."+i, 1)
	}, &want)
	nextGenCheckType(t, srv.addr, group)

	// A third member joins: all three get partitions.
	c := startNextGenMember(t, srv.addr, group, topic, "c", log)
	nextGenWaitShared(t, srv.addr, group, log, []string{"a", "b", "c"}, func(i string) []string {
		return nextGenRound(t, prod, topic, parts, "r2."+i, 2)
	}, &want)

	// b leaves: a and c consume everything.
	b.close()
	nextGenWaitShared(t, srv.addr, group, log, []string{"a", "c"}, func(i string) []string {
		return nextGenRound(t, prod, topic, parts, "r3."+i, 2)
	}, &want)

	// c is killed: after the session timeout a takes all partitions.
	c.kill()
	start := time.Now()
	nextGenWaitShared(t, srv.addr, group, log, []string{"a"}, func(i string) []string {
		return nextGenRound(t, prod, topic, parts, "r4."+i, 1)
	}, &want)
	if got := log.partitionsOf("a"); len(got) != parts {
		t.Fatalf("after c was killed, a consumed partitions %v, want all %d", got, parts)
	}
	t.Logf("a took over c's partitions %v after c was killed", time.Since(start).Round(time.Millisecond))
	a.close()
	for _, m := range []*nextGenMember{a, b} {
		m.check(t)
	}
	log.check(t, want)
	if t.Failed() {
		return
	}

	// The server restarts; the group's next member starts from the
	// committed offsets: it reads only what was produced since.
	srv.stop()
	srv = kafkaServe(t, data, flags...)
	prod = kafkaClient(t, srv.addr)
	fresh := newNextGenLog()
	next := nextGenRound(t, prod, topic, parts, "r5", 3)
	d := startNextGenMember(t, srv.addr, group, topic, "d", fresh)
	fresh.waitFor(t, "after the restart", next)
	nextGenCheckResumed(t, d, fresh, next)
}

// nextGenCheckResumed closes m, a member that joined its group after a
// restart, and checks what the group read since (log): each of next once
// and nothing else, as it resumed from the commits.
func nextGenCheckResumed(t *testing.T, m *nextGenMember, log *nextGenLog, next []string) {
	t.Helper()
	m.close()
	m.check(t)
	log.check(t, next)
	if n := len(log.seen); n != len(next) {
		t.Fatalf("after the restart the group read %d records, want only the %d produced since the commits", n, len(next))
	}
}

// nextGenWaitShared produces rounds until every one of members has
// consumed from at least one partition since the call, and no member
// outside them has, then waits for every record produced.
func nextGenWaitShared(t *testing.T, addr, group string, log *nextGenLog, members []string, round func(string) []string, want *[]string) {
	t.Helper()
	log.resetPartitions()
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; ; i++ {
		recs := round(fmt.Sprint(i))
		*want = append(*want, recs...)
		log.waitFor(t, fmt.Sprintf("members %v", members), *want)
		log.mu.Lock()
		var active []string
		for m, ps := range log.by {
			if len(ps) > 0 {
				active = append(active, m)
			}
		}
		log.mu.Unlock()
		slices.Sort(active)
		if slices.Equal(active, members) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("members consuming: %v, want %v (group %s)", active, members, group)
		}
		log.resetPartitions()
		time.Sleep(100 * time.Millisecond)
	}
}

// nextGenCheckType asserts that the group is a KIP-848 consumer group
// (ListGroups v5 type "consumer"), not a classic one the client fell back
// to.
func nextGenCheckType(t *testing.T, addr, group string) {
	t.Helper()
	if got := nextGenListed(t, addr, group); !strings.HasPrefix(got, "consumer consumer ") {
		t.Fatalf("ListGroups: %s is %q, want type consumer, protocol type consumer", group, got)
	}
}

// TestKafkaNextGenGroupNewPartitionThroughMount: a partition added through
// the mount (`mkdir T/N`) while a KIP-848 group consumes T is assigned to a
// member (a new group epoch and target assignment), which then consumes
// the lines appended to it; the two members (range assignor, chosen by
// franz-go's RangeBalancer) split the partitions and read every line once.
// Before, the members fell back to the classic protocol (segfs did not
// serve ConsumerGroupHeartbeat) and the group was not of type consumer.
func TestKafkaNextGenGroupNewPartitionThroughMount(t *testing.T) {
	// It mostly waits (group timers, clients) on a server, data dir and
	// port of its own: it runs beside the other tests that do (t.Parallel).
	t.Parallel()
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr, "--partitions", "2", "--group-consumer-heartbeat-interval", "200ms")
	m.ok(`mkdir "$M/np"`)
	const group = "np-group"
	log := newNextGenLog()
	range_ := kgo.Balancers(kgo.RangeBalancer())
	// The member given partition 2 reads it once its metadata has it,
	// which franz-go refreshes at most every 5 s by default
	// (metadata.min.age): 200 ms here.
	minAge := kgo.MetadataMinAge(200 * time.Millisecond)
	a := startNextGenMember(t, addr, group, "np", "a", log, range_, minAge)
	b := startNextGenMember(t, addr, group, "np", "b", log, range_, minAge)
	var want []string
	round := 0
	appendLines := func(parts ...int) {
		round++
		for _, p := range parts {
			m.ok(fmt.Sprintf(`for i in 1 2 3; do echo "r%d-p%d-$i"; done >> "$M/np/%d/data"`, round, p, p))
			for i := 1; i <= 3; i++ {
				want = append(want, fmt.Sprintf("%d r%d-p%d-%d", p, round, p, i))
			}
		}
	}
	// Wait until both members have their partition.
	for deadline := time.Now().Add(60 * time.Second); ; {
		log.resetPartitions()
		appendLines(0, 1)
		log.waitFor(t, "partitions 0 and 1", want)
		if len(log.partitionsOf("a")) == 1 && len(log.partitionsOf("b")) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a consumed %v and b %v, want one partition each", log.partitionsOf("a"), log.partitionsOf("b"))
		}
	}
	nextGenCheckType(t, addr, group)

	m.ok(`mkdir "$M/np/2"`)
	appendLines(2, 0, 1)
	log.waitFor(t, "the new partition 2", want)
	a.close()
	b.close()
	a.check(t)
	b.check(t)
	log.check(t, want)
}
