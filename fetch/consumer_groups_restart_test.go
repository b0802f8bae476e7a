package fetch

import (
	"path/filepath"
	"reflect"
	"slices"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A KIP-848 consumer group comes back from a restart with its members, as
// Kafka's coordinator replays its ConsumerGroupMemberMetadata, target
// assignment and current assignment records: a static member A
// subscribed by regex with the "range" assignor, in the middle of
// revoking a partition (UNREVOKED_PARTITIONS at its old epoch), and a
// member B waiting for that partition (UNRELEASED_PARTITIONS at the new
// epoch). After the restart ConsumerGroupDescribe shows both as they
// were, B's heartbeat that changes nothing writes nothing, A's heartbeat
// without the revoked partition moves it to the new epoch (written), and
// B then gets the partition: nobody rejoins. segfs kept members in
// memory: both heartbeats got UNKNOWN_MEMBER_ID.
func TestConsumerGroupMembersSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	ts := startServerDir(t, dir, Config{})
	tp, err := ts.store.CreateTopic("t", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := tp.ID()
	names := map[[16]byte]string{id: "t"}
	c := dial(t, ts.addr)
	ia, rx, rng := kmsg.StringPtr("ia"), kmsg.StringPtr("t.*"), kmsg.StringPtr("range")

	a := c.cgh(cgh{group: "g", member: "A", instance: ia, regex: rx, assignor: rng, owned: map[[16]byte][]int32{}})
	if a.ErrorCode != 0 || !slices.Equal(assigned(a, names), []string{"t/0", "t/1"}) {
		t.Fatalf("A's join: %v, assigned %v", kerr.ErrorForCode(a.ErrorCode), assigned(a, names))
	}
	b := c.cgh(cgh{group: "g", member: "B", topics: []string{"t"}, owned: map[[16]byte][]int32{}})
	if b.ErrorCode != 0 || b.MemberEpoch != 2 || len(assigned(b, names)) != 0 {
		t.Fatalf("B's join: %v, epoch %d, assigned %v", kerr.ErrorForCode(b.ErrorCode), b.MemberEpoch, assigned(b, names))
	}
	// A is told to give up one partition; it keeps epoch 1 meanwhile.
	a2 := c.cgh(cgh{group: "g", member: "A", instance: ia, epoch: a.MemberEpoch, owned: ownedOf(a)})
	if a2.ErrorCode != 0 || a2.MemberEpoch != a.MemberEpoch || len(assigned(a2, names)) != 1 {
		t.Fatalf("A's heartbeat after B joined: %v, epoch %d, assigned %v", kerr.ErrorForCode(a2.ErrorCode), a2.MemberEpoch, assigned(a2, names))
	}
	// B waits for it (its first heartbeat since its join records its
	// previous epoch, as Kafka's CurrentAssignmentBuilder does).
	if r := c.cgh(cgh{group: "g", member: "B", epoch: b.MemberEpoch, owned: map[[16]byte][]int32{}}); r.ErrorCode != 0 || len(assigned(r, names)) != 0 {
		t.Fatalf("B's heartbeat: %v, assigned %v", kerr.ErrorForCode(r.ErrorCode), assigned(r, names))
	}
	describe := func(c *client) kmsg.ConsumerGroupDescribeResponseGroup {
		t.Helper()
		cd := kmsg.NewPtrConsumerGroupDescribeRequest()
		cd.Groups = []string{"g"}
		return c.roundTrip(cd).(*kmsg.ConsumerGroupDescribeResponse).Groups[0]
	}
	before := describe(c)
	if before.State != "Reconciling" || len(before.Members) != 2 {
		t.Fatalf("before the restart: state %q, %d members", before.State, len(before.Members))
	}
	ts.stop()

	ts = startServerDir(t, dir, Config{})
	c = dial(t, ts.addr)
	after := describe(c)
	if after.ErrorCode != 0 || after.State != before.State || after.Epoch != before.Epoch || after.AssignmentEpoch != before.AssignmentEpoch || after.AssignorName != "range" || len(after.Members) != 2 {
		t.Fatalf("after the restart: error %d, state %q, epochs %d/%d, assignor %q, %d members; before it %q, %d/%d, %d members",
			after.ErrorCode, after.State, after.Epoch, after.AssignmentEpoch, after.AssignorName, len(after.Members), before.State, before.Epoch, before.AssignmentEpoch, len(before.Members))
	}
	for i, m := range after.Members {
		w := before.Members[i]
		if m.MemberID != w.MemberID || m.MemberEpoch != w.MemberEpoch || !reflectEqual(m.InstanceID, w.InstanceID) ||
			!reflectEqual(m.SubscribedTopicRegex, w.SubscribedTopicRegex) || !slices.Equal(m.SubscribedTopics, w.SubscribedTopics) ||
			!reflectEqual(m.Assignment, w.Assignment) || !reflectEqual(m.TargetAssignment, w.TargetAssignment) || m.ClientID != w.ClientID {
			t.Errorf("member after the restart:\n%+v\nbefore it:\n%+v", m, w)
		}
	}

	path := filepath.Join(dir, OffsetsFile)
	inode := func() uint64 {
		t.Helper()
		var st syscall.Stat_t
		if err := syscall.Stat(path, &st); err != nil {
			t.Fatal(err)
		}
		return st.Ino // a rewrite renames a new file into place
	}
	ino := inode()
	// B still waits for the partition A holds: nothing changes, nothing
	// is written.
	if r := c.cgh(cgh{group: "g", member: "B", epoch: b.MemberEpoch, owned: map[[16]byte][]int32{}}); r.ErrorCode != 0 || r.MemberEpoch != b.MemberEpoch || len(assigned(r, names)) != 0 {
		t.Fatalf("B's heartbeat after the restart: %v, epoch %d, assigned %v", kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch, assigned(r, names))
	}
	if inode() != ino {
		t.Errorf("B's heartbeat that changed nothing rewrote the offsets file")
	}
	// A revokes: it moves to the new epoch, written before the answer.
	a3 := c.cgh(cgh{group: "g", member: "A", instance: ia, epoch: a.MemberEpoch, owned: ownedOf(a2)})
	if a3.ErrorCode != 0 || a3.MemberEpoch != b.MemberEpoch {
		t.Fatalf("A's heartbeat without the revoked partition after the restart: %v, epoch %d", kerr.ErrorForCode(a3.ErrorCode), a3.MemberEpoch)
	}
	if inode() == ino {
		t.Errorf("A's new epoch was not written before the answer")
	}
	r := c.cgh(cgh{group: "g", member: "B", epoch: b.MemberEpoch, owned: map[[16]byte][]int32{}})
	if r.ErrorCode != 0 || len(assigned(r, names)) != 1 || slices.Equal(assigned(r, names), assigned(a2, names)) {
		t.Fatalf("B's heartbeat once A revoked: %v, assigned %v (A kept %v)", kerr.ErrorForCode(r.ErrorCode), assigned(r, names), assigned(a2, names))
	}
	if d := describe(c); d.State != "Stable" {
		t.Errorf("once both reconciled: state %q, want Stable", d.State)
	}
}

func reflectEqual(a, b any) bool { return reflect.DeepEqual(a, b) }
