package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupReadHook counts the responses of one API key a kgo client reads,
// and its FindCoordinator responses, and kicks the test's waiter at
// each.
type groupReadHook struct {
	key        int16
	n          atomic.Int64
	findCoords atomic.Int64
	kick       chan struct{}
}

func (h *groupReadHook) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
	switch key {
	case h.key:
		h.n.Add(1)
	case 10:
		h.findCoords.Add(1)
	default:
		return
	}
	wake(h.kick)
}

// fillDisk leaves no free block on the filesystem of dir: fallocate
// takes most of the free space at once, 4 KiB writes the rest until
// ENOSPC. It returns the filler files.
func fillDisk(t *testing.T, dir string) []string {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	big, small := filepath.Join(dir, "filler-0"), filepath.Join(dir, "filler-1")
	if free := int64(st.Bavail)*st.Bsize - 8<<20; free > 0 {
		faultMust(t, 60, "fallocate", "-l", fmt.Sprint(free), big)
	}
	f, err := os.Create(small)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 4096)
	for {
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the disk: %v", err)
			}
			break
		}
	}
	f.Sync()
	return []string{big, small}
}

// groupFileRecord is what the offsets file on the disk holds of group:
// the member ids of its classic generation or consumer group, and that
// generation or group epoch.
func groupFileRecord(t *testing.T, data, group string) (members []string, epoch int32) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(data, "segfs-consumer-offsets.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Classic map[string]struct {
			Generation int32 `json:"generation"`
			Members    []struct {
				ID string `json:"member_id"`
			} `json:"members"`
		} `json:"classic_groups"`
		Consumer map[string]struct {
			Epoch   int32 `json:"epoch"`
			Members []struct {
				ID string `json:"member_id"`
			} `json:"members"`
		} `json:"consumer_groups"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if c, ok := f.Classic[group]; ok {
		for _, m := range c.Members {
			members = append(members, m.ID)
		}
		return members, c.Generation
	}
	c := f.Consumer[group]
	for _, m := range c.Members {
		members = append(members, m.ID)
	}
	return members, c.Epoch
}

// TestKafkaGroupRebalanceOnFullDisk: franz-go group consumers of a
// `segfs mount --kafka-listen` whose data directory is a loop-mounted
// xfs, with the classic protocol and with KIP-848's (ServerSideBalancer).
// Member a holds both partitions and has committed what it read; the
// disk fills; member b joins. The rebalance's records cannot be written
// to the offsets file, so, as on Kafka, whose coordinator answers a
// failed append to __consumer_offsets NOT_COORDINATOR and keeps nothing
// of it, b is never handed a partition while the disk is full (a simple
// OffsetCommit is refused with NOT_COORDINATOR too). Once space returns
// both members rejoin and split the partitions; what is produced then is
// read once, and after kill -9 and a restart the group the file holds is
// the one the members have: they read on without rejoining, nothing
// twice, nothing lost. segfs logged
// the failed writes and answered success: b read from a generation (or
// epoch) the file did not hold, and a restart brought back a, alone.
func TestKafkaGroupRebalanceOnFullDisk(t *testing.T) {
	for _, proto := range []string{"classic", "consumer"} {
		t.Run(proto, func(t *testing.T) {
			disk := faultLoopDisk(t, "xfs", 320)
			data := filepath.Join(disk.dir, "data")
			addr := kafkaFreeAddr(t)
			// a joins alone, then b: no initial rebalance delay
			// (classic) to wait out.
			args := []string{"--kafka-listen", addr, "--partitions", "2", "--group-initial-rebalance-delay", "0",
				"--group-consumer-heartbeat-interval", "300ms", "--group-consumer-session-timeout", "6s"}
			m := mntAt(t, data, args...)
			kafkaWaitListening(t, addr)
			const topic, group = "gfull", "gfull-group"
			m.ok(`mkdir "$M/` + topic + `"`)
			prod := kafkaClient(t, addr)
			g := newKgoGroupRounds(t, addr, group, topic, prod)
			g.produce("r0")

			key := int16(14) // SyncGroup
			var opts []kgo.Opt
			if proto == "consumer" {
				key = 68 // ConsumerGroupHeartbeat
				opts = append(opts, kgo.ServerSideBalancer())
			}
			a := g.join("a", opts...)
			g.wait("round r0 read and committed by a", g.allCommitted)
			aID, _ := a.cl.GroupMetadata()
			if ids, _ := groupFileRecord(t, data, group); !slices.Equal(ids, []string{aID}) {
				t.Fatalf("offsets file before the disk fills: members %q, want a (%s)", ids, aID)
			}

			fillers := fillDisk(t, disk.dir)
			hook := &groupReadHook{key: key, kick: g.kick}
			b := g.join("b", append(opts, kgo.WithHooks(hook))...)
			// b's rebalance is answered a few times, or b is assigned
			// partitions: either way the server has decided.
			assignedB := func() bool { return assignedAny(b, topic) }
			g.wait("b's rebalance answered on the full disk", func() bool { return assignedB() || hook.n.Load() >= 6 })
			if assignedB() {
				_, _, _, as, _ := b.snapshot()
				ids, epoch := groupFileRecord(t, data, group)
				t.Fatalf("b was assigned %v while the disk was full; the offsets file holds generation/epoch %d with members %q", as, epoch, ids)
			}
			// It was told NOT_COORDINATOR: it looked the coordinator up
			// again (kgo retries the request there, and then rejoins).
			if n := hook.findCoords.Load(); n < 2 {
				t.Errorf("b looked the coordinator up %d times on the full disk, want again after NOT_COORDINATOR", n)
			}
			if _, _, _, _, log := b.snapshot(); proto == "consumer" && !strings.Contains(log, "NOT_COORDINATOR") {
				t.Errorf("b's heartbeats on the full disk were not answered NOT_COORDINATOR:\n%s", log)
			}
			// OffsetCommit: Kafka's answer to a failed append.
			req := kmsg.NewPtrOffsetCommitRequest()
			req.Group, req.Generation = group+"-simple", -1
			req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: topic, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}}}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			resp, err := req.RequestWith(ctx, prod.Broker(0))
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.NotCoordinator.Code {
				t.Errorf("OffsetCommit on the full disk: %v, want NOT_COORDINATOR", kerr.ErrorForCode(code))
			}

			// Space is back: b joins (a keeps or gets back the other
			// partition), and what is produced then is read once.
			for _, f := range fillers {
				if err := os.Remove(f); err != nil {
					t.Fatal(err)
				}
			}
			g.wait("b assigned a partition once the disk has space", assignedB)
			g.produce("r1")
			g.wait("round r1 read and committed", g.allCommitted)
			bID, _ := b.cl.GroupMetadata()
			ids, _ := groupFileRecord(t, data, group)
			slices.Sort(ids)
			wantIDs := []string{aID, bID}
			slices.Sort(wantIDs)
			if !slices.Equal(ids, wantIDs) {
				t.Errorf("offsets file after the rebalance: members %q, want a and b %q", ids, wantIDs)
			}

			// kill -9 and a restart bring back the group the members
			// hold: they carry on, none is told it is unknown or stale.
			logBefore := g.logMarks()
			m.kill9()
			m.mount(args...)
			kafkaWaitListening(t, addr)
			g.produce("r2")
			g.wait("round r2 read and committed after kill -9 and a restart", g.allCommitted)
			g.checkNotTold("after the restart", logBefore, "UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "FENCED_MEMBER_EPOCH")
			for _, m := range g.members {
				if _, _, errs, _, _ := m.snapshot(); len(errs) > 0 {
					t.Logf("member %s's commit errors (retried): %v", m.name, errs)
				}
			}
			g.checkReadOnce("after the restart")
		})
	}
}

// TestKafkaGroupFirstJoinOnFullDisk: a classic group whose consumer
// committed what it read and left (the group Empty, its record and
// offsets in the offsets file) on a `segfs mount --kafka-listen` whose
// loop-mounted xfs then fills. A JoinGroup that would give the group
// its first member cannot have the group's record written: it is
// answered NOT_COORDINATOR, as Kafka 4 answers a join whose new group's
// record fails to be written, and the group stays Empty; a franz-go
// consumer joining meanwhile is never handed a partition. Once space
// returns it joins and reads on from the committed offsets: every
// record once. segfs answered the join with a generation the offsets
// file did not hold.
func TestKafkaGroupFirstJoinOnFullDisk(t *testing.T) {
	disk := faultLoopDisk(t, "xfs", 320)
	data := filepath.Join(disk.dir, "data")
	addr := kafkaFreeAddr(t)
	// Its members join alone: no initial rebalance delay to wait out.
	args := []string{"--kafka-listen", addr, "--partitions", "2", "--group-initial-rebalance-delay", "0"}
	m := mntAt(t, data, args...)
	kafkaWaitListening(t, addr)
	const topic, group = "gfirst", "gfirst-group"
	m.ok(`mkdir "$M/` + topic + `"`)
	prod := kafkaClient(t, addr)
	g := newKgoGroupRounds(t, addr, group, topic, prod)
	g.produce("r0")
	a := g.join("a")
	g.wait("round r0 read and committed by a", g.allCommitted)
	a.close() // it leaves: the group is Empty, and so is its record
	ids, emptyGen := groupFileRecord(t, data, group)
	if len(ids) != 0 || emptyGen < 2 {
		t.Fatalf("offsets file once a left: generation %d with members %q, want Empty", emptyGen, ids)
	}

	fillers := fillDisk(t, disk.dir)
	// A JoinGroup of its own: MEMBER_ID_REQUIRED (nothing to write),
	// then the join with that id, whose record cannot be written.
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType = group, "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 10000, 10000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
	var resp *kmsg.JoinGroupResponse
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		r, err := join.RequestWith(ctx, prod.Broker(0))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		resp = r
		if r.ErrorCode != kerr.MemberIDRequired.Code {
			break
		}
		join.MemberID = r.MemberID
	}
	if resp.ErrorCode != kerr.NotCoordinator.Code {
		t.Errorf("JoinGroup of the Empty group on the full disk: %v (generation %d, member %q), want NOT_COORDINATOR", kerr.ErrorForCode(resp.ErrorCode), resp.Generation, resp.MemberID)
	}
	// A franz-go consumer joins: it is told NOT_COORDINATOR (and looks
	// the coordinator up again) and gets nothing.
	hook := &groupReadHook{key: 11, kick: g.kick}
	b := g.join("b", kgo.WithHooks(hook))
	assignedB := func() bool { return assignedAny(b, topic) }
	g.wait("b's joins answered on the full disk", func() bool { return assignedB() || hook.n.Load() >= 3 })
	if assignedB() {
		_, _, _, as, _ := b.snapshot()
		t.Fatalf("b was assigned %v while the disk was full", as)
	}
	if n := hook.findCoords.Load(); n < 2 {
		t.Errorf("b looked the coordinator up %d times on the full disk, want again after NOT_COORDINATOR", n)
	}
	if ids, gen := groupFileRecord(t, data, group); len(ids) != 0 || gen != emptyGen {
		t.Errorf("offsets file on the full disk: generation %d with members %q, want Empty at generation %d", gen, ids, emptyGen)
	}

	for _, f := range fillers {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	g.wait("b assigned once the disk has space", assignedB)
	g.produce("r1")
	g.wait("round r1 read and committed by b", g.allCommitted)
	g.checkReadOnce("after the disk had space again")
}

// assignedAny reports whether m's last assignment holds a partition of
// topic.
func assignedAny(m *kgoGroupMember, topic string) bool {
	_, _, _, as, _ := m.snapshot()
	for _, ps := range as {
		if len(ps[topic]) > 0 {
			return true
		}
	}
	return false
}
