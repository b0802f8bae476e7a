package fetch

import (
	"encoding/hex"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KIP-848 consumer groups (group type "consumer"): the broker, not a
// leader member, assigns partitions. ConsumerGroupHeartbeat
// (68_consumer_group_heartbeat.go) is a thin wrapper around the methods
// here, which follow Kafka's GroupMetadataManager, CurrentAssignmentBuilder
// and TargetAssignmentBuilder:
//
//   - The group epoch goes up whenever what the assignment depends on
//     changes: a member joins, leaves or is fenced, a member's
//     subscription (topic names or regex) changes, or the subscribed
//     topics' metadata changes (a new partition, a new topic matching a
//     subscription; checked at every heartbeat, where Kafka looks at its
//     metadata image).
//   - When the group epoch is ahead of the target assignment's epoch, the
//     next heartbeat computes a new target assignment for every member with
//     the server-side assignor (consumer_assignors.go): "uniform" (the
//     default) or "range", as the members ask in ServerAssignor (the most
//     asked for wins, as in Kafka).
//   - Each member then moves towards its target on its own heartbeats.
//     Partitions it must give up are first revoked: it keeps its member
//     epoch and is UNREVOKED_PARTITIONS until a heartbeat no longer lists
//     them as owned. Only then does it take the new epoch and the
//     partitions it gains. A partition still held (assigned or being
//     revoked) by any member is never handed to another: the gaining
//     member is UNRELEASED_PARTITIONS and gets it on a later heartbeat,
//     once it is free. A member that does not revoke within its rebalance
//     timeout is fenced (removed).
//   - A member whose heartbeats stop for the session timeout
//     (Config.ConsumerGroupSessionTimeout, Kafka's
//     group.consumer.session.timeout.ms) is removed; its partitions go to
//     the others. Epoch -1 leaves at once. A static member (instance id)
//     leaving with epoch -2 keeps its place and partitions until its
//     session expires; a new member with the same instance id takes them
//     over without a new group epoch (UNRELEASED_INSTANCE_ID while the old
//     one has not left).
//
// State lives in memory under the classic coordinator's mutex (groups.mu),
// so that a commit is validated against the group in the same critical
// section that stages it (groups.commit), as for classic groups. A group
// name is either a classic group (groups.byName) or a consumer group
// (groups.consumers), never both: as in Kafka, a group without members
// converts from one type to the other when a member of the other protocol
// joins it, and a group with members refuses the other protocol
// (GROUP_ID_NOT_FOUND, Kafka's answer with group.consumer.migration.policy
// disabled: segfs does not run classic members inside a consumer group).
// Committed offsets are persisted (offsets.go), and, as Kafka keeps its
// ConsumerGroup* records, every consumer group with its group and
// assignment epochs and its members, each with its subscription, current
// assignment (member epoch, previous epoch, state, assigned and
// pending-revocation partitions) and target assignment, committed offsets
// or not (persistType: written when the group is created and whenever any
// of it changes, before the heartbeat that changed it is answered, not at
// a heartbeat that changes nothing). After a restart the group is a
// consumer group again, with its members at their epochs, their sessions
// starting at the load (restoreConsumers), until DeleteGroups removes it
// or it expires, Empty and without offsets (expiry.go).

const (
	// DefaultConsumerGroupSessionTimeout is Kafka's
	// group.consumer.session.timeout.ms.
	DefaultConsumerGroupSessionTimeout = 45 * time.Second
	// DefaultConsumerGroupHeartbeatInterval is Kafka's
	// group.consumer.heartbeat.interval.ms.
	DefaultConsumerGroupHeartbeatInterval = 5 * time.Second
)

// serverAssignors are the assignors of group.consumer.assignors, the first
// being the default.
var serverAssignors = []string{"uniform", "range"}

// topicPart is one partition of a topic named by ID, as KIP-848 names them.
type topicPart struct {
	id [16]byte
	p  int32
}

// tpSet is a set of partitions.
type tpSet map[topicPart]struct{}

func (s tpSet) clone() tpSet {
	out := make(tpSet, len(s))
	for tp := range s {
		out[tp] = struct{}{}
	}
	return out
}

func (s tpSet) has(tp topicPart) bool { _, ok := s[tp]; return ok }

func (s tpSet) equal(o tpSet) bool {
	if len(s) != len(o) {
		return false
	}
	for tp := range s {
		if !o.has(tp) {
			return false
		}
	}
	return true
}

// byTopic groups the set by topic ID, partitions sorted, topics in ID order.
func (s tpSet) byTopic() ([][16]byte, map[[16]byte][]int32) {
	m := map[[16]byte][]int32{}
	for tp := range s {
		m[tp.id] = append(m[tp.id], tp.p)
	}
	ids := make([][16]byte, 0, len(m))
	for id, ps := range m {
		slices.Sort(ps)
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b [16]byte) int { return strings.Compare(string(a[:]), string(b[:])) })
	return ids, m
}

// memberState is Kafka's MemberState of a consumer group member.
type memberState int8

const (
	memberStable     memberState = iota // reconciled, or moving on without revocations
	memberUnrevoked                     // must revoke partitions before it moves on
	memberUnreleased                    // waits for partitions other members still hold
)

func (s memberState) String() string {
	switch s {
	case memberUnrevoked:
		return "UNREVOKED_PARTITIONS"
	case memberUnreleased:
		return "UNRELEASED_PARTITIONS"
	}
	return "STABLE"
}

// epochs of ConsumerGroupHeartbeat with a meaning.
const (
	leaveGroupEpoch       = -1
	leaveGroupStaticEpoch = -2
)

// cgroup is one consumer group.
type cgroup struct {
	name            string
	epoch           int32 // group epoch
	assignmentEpoch int32 // epoch of target
	members         map[string]*cmember
	static          map[string]string // instance id → member id
	// target is each member's target assignment as of assignmentEpoch.
	target map[string]tpSet
	// owners is who holds each partition, assigned or pending revocation
	// (Kafka's partition epochs): a partition is only assigned once it is
	// absent here.
	owners map[topicPart]string
	// metadata is the fingerprint of the subscribed topics' metadata at
	// the last check; a change bumps the group epoch.
	metadata string
}

// cmember is one member of a consumer group.
type cmember struct {
	id                 string
	instanceID, rackID *string
	clientID, host     string
	rebalance          time.Duration
	assignor           string // ServerAssignor asked for; "" = none
	topics             []string
	regex              string // "" = none
	re                 *regexp.Regexp
	epoch, prevEpoch   int32
	state              memberState
	assigned, revoking tpSet
	session            *time.Timer
	revocation         *time.Timer
}

// reconciledTo is Kafka's ConsumerGroupMember.isReconciledTo.
func (m *cmember) reconciledTo(epoch int32) bool {
	return m.state == memberStable && m.epoch == epoch
}

// state is Kafka's ConsumerGroup state, by its DescribeGroups name.
func (g *cgroup) state() string {
	switch {
	case len(g.members) == 0:
		return "Empty"
	case g.epoch != g.assignmentEpoch:
		return "Assigning"
	}
	for _, m := range g.members {
		if !m.reconciledTo(g.assignmentEpoch) {
			return "Reconciling"
		}
	}
	return "Stable"
}

// ordered returns the members sorted by id (stable output, deterministic
// assignments).
func (g *cgroup) ordered() []*cmember {
	out := make([]*cmember, 0, len(g.members))
	for _, m := range g.members {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b *cmember) int { return strings.Compare(a.id, b.id) })
	return out
}

// topicMeta is what an assignor needs of a topic.
type topicMeta struct {
	name  string
	id    [16]byte
	parts int32
}

// topicsNow returns every topic of the store, by name.
func (gs *groups) topicsNow() map[string]topicMeta {
	out := map[string]topicMeta{}
	for _, t := range gs.s.store.Topics() {
		out[t.Name()] = topicMeta{name: t.Name(), id: t.ID(), parts: int32(t.PartitionCount())}
	}
	return out
}

// subscribed returns the existing topics m subscribes to, by name or regex.
func (m *cmember) subscribed(all map[string]topicMeta) map[string]bool {
	out := map[string]bool{}
	for _, name := range m.topics {
		if _, ok := all[name]; ok {
			out[name] = true
		}
	}
	if m.re != nil {
		for name := range all {
			if m.re.MatchString(name) {
				out[name] = true
			}
		}
	}
	return out
}

// subscribedTopics is the union of the members' subscriptions.
func (g *cgroup) subscribedTopics(all map[string]topicMeta) map[string]bool {
	out := map[string]bool{}
	for _, m := range g.members {
		for name := range m.subscribed(all) {
			out[name] = true
		}
	}
	return out
}

// fingerprint identifies the metadata of the subscribed topics: a new
// partition or a new (or recreated) matching topic changes it.
func fingerprint(subscribed map[string]bool, all map[string]topicMeta) string {
	var b strings.Builder
	for _, name := range sortedKeys(subscribed) {
		t := all[name]
		fmt.Fprintf(&b, "%s/%s/%d;", name, hex.EncodeToString(t.id[:]), t.parts)
	}
	return b.String()
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// cgHeartbeat is a ConsumerGroupHeartbeat that passed the request checks.
type cgHeartbeat struct {
	group, memberID    string
	epoch              int32
	instanceID, rackID *string
	rebalance          int32    // -1: unchanged
	topics             []string // nil: unchanged
	regex              *string  // nil: unchanged
	re                 *regexp.Regexp
	assignor           *string // nil: unchanged
	owned              []kmsg.ConsumerGroupHeartbeatRequestTopic
	ownedGiven         bool // owned was sent (not null)
	clientID, host     string
}

// cgResult is the answer to a ConsumerGroupHeartbeat.
type cgResult struct {
	err        int16
	msg        string
	memberID   string
	epoch      int32
	assignment tpSet // with sendAssignment
	send       bool
}

func cgErr(code *kerr.Error, format string, args ...any) cgResult {
	return cgResult{err: code.Code, msg: fmt.Sprintf(format, args...)}
}

// consumerHeartbeat handles a ConsumerGroupHeartbeat (Kafka's
// GroupMetadataManager.consumerGroupHeartbeat and consumerGroupLeave).
func (gs *groups) consumerHeartbeat(r cgHeartbeat) cgResult {
	gs.mu.Lock()
	cl := gs.byName[r.group]
	res := gs.consumerHeartbeatLocked(r)
	// A new epoch, or a classic group converted, is written before the
	// answer, as Kafka writes its records before it answers.
	op := gs.persistType(r.group)
	if op != nil && cl != nil && gs.byName[r.group] == nil {
		// The empty classic group this heartbeat converted comes back,
		// at its generation, once revertConsumer (added next, so run
		// first) has taken the consumer group away: Kafka's runtime
		// reverts the group's removal with the rest. segfs forgot it:
		// a group without offsets was unknown to ListGroups and
		// DescribeGroups, and its next classic member started it over
		// at generation 1.
		name := r.group
		op.addUndo(func() {
			if gs.byName[name] == nil && gs.consumers[name] == nil {
				gs.byName[name] = cl
				gs.s.log.Warn("fetch: classic group conversion not written to the offsets file: it stays a classic group", "group", name, "generation", cl.generation)
			}
		})
	}
	gs.undoConsumerOnFailure(r.group, op)
	gs.mu.Unlock()
	if err := gs.waitPersistType(r.group, op); err != nil {
		// Kafka's coordinator runtime reverts the group to its last
		// written state and answers the failed write's error
		// (KAFKA_STORAGE_ERROR as NOT_COORDINATOR): the member retries
		// the heartbeat from what it had, and the group goes on from
		// what the file holds. segfs answered the change as made, and a
		// restart brought back an older group than its members held.
		return cgResult{err: offsetsWriteErrorCode(err)}
	}
	return res
}

// undoConsumerOnFailure makes op's failure put consumer group group back
// as the offsets file holds it (gs.mu held, as when op was staged).
func (gs *groups) undoConsumerOnFailure(group string, op *offsetsOp) {
	if op != nil && gs.consumers[group] != nil {
		op.addUndo(func() { gs.revertConsumer(group) })
	}
}

// revertConsumer puts consumer group name back as the offsets file holds
// it, after a write of its records failed (gs.mu held): its members, at
// their epochs and with their assignments, their sessions starting now,
// as after a restart; a group the file does not record is gone. A member
// the file does not hold, or holds at an older epoch, learns it from its
// next heartbeat (UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH) and rejoins.
func (gs *groups) revertConsumer(name string) {
	if g := gs.consumers[name]; g != nil {
		gs.forgetConsumer(g)
	}
	meta, ok := gs.s.offsets.durableConsumer(name)
	if !ok || gs.byName[name] != nil {
		return
	}
	gs.restoreConsumer(name, meta)
	gs.s.log.Warn("fetch: consumer group put back as the offsets file holds it: a write of its records failed", "group", name, "epoch", meta.Epoch, "members", len(meta.Members))
}

// consumerHeartbeatLocked is consumerHeartbeat with gs.mu held.
func (gs *groups) consumerHeartbeatLocked(r cgHeartbeat) cgResult {
	if r.epoch == leaveGroupEpoch || r.epoch == leaveGroupStaticEpoch {
		return gs.consumerLeave(r)
	}

	g := gs.consumers[r.group]
	if g == nil {
		if cl := gs.byName[r.group]; cl != nil {
			if cl.state != groupEmpty {
				return cgErr(kerr.GroupIDNotFound, "Group %s is a classic group with members: it cannot be upgraded to a consumer group while they are in it.", r.group)
			}
			if r.epoch != 0 {
				return cgErr(kerr.UnknownMemberID, "Member %s is not a member of group %s.", r.memberID, r.group)
			}
			// Kafka's offline upgrade: an empty classic group becomes a
			// consumer group; its committed offsets stay.
			gs.forget(cl)
			gs.s.log.Info("fetch: empty classic group converted to a consumer group", "group", r.group)
		}
		if r.epoch != 0 {
			// Kafka answers GROUP_ID_NOT_FOUND for a group it does not
			// know. A member of a group segfs no longer knows (deleted,
			// or from an offsets file written before segfs kept
			// consumer groups) is better told that it is unknown:
			// clients then rejoin at once, without surfacing an error.
			return cgErr(kerr.UnknownMemberID, "Member %s is not a member of group %s.", r.memberID, r.group)
		}
		g = &cgroup{
			name:    r.group,
			members: map[string]*cmember{},
			static:  map[string]string{},
			target:  map[string]tpSet{},
			owners:  map[topicPart]string{},
		}
		gs.consumers[r.group] = g
	}

	m, isNew, res := gs.consumerMember(g, r)
	if res.err != 0 {
		return res
	}

	// 1. Update the member; a new subscription bumps the group epoch.
	oldTopics, oldRegex := m.topics, m.regex
	if r.instanceID != nil {
		m.instanceID = r.instanceID
	}
	if r.rackID != nil {
		m.rackID = r.rackID
	}
	if r.rebalance >= 0 {
		m.rebalance = time.Duration(r.rebalance) * time.Millisecond
	}
	if r.assignor != nil {
		m.assignor = *r.assignor
	}
	if r.topics != nil {
		m.topics = slices.Sorted(slices.Values(r.topics))
		m.topics = slices.Compact(m.topics)
	}
	if r.regex != nil {
		m.regex, m.re = *r.regex, r.re
	}
	m.clientID, m.host = r.clientID, r.host
	if isNew {
		g.members[m.id] = m
		if m.instanceID != nil {
			g.static[*m.instanceID] = m.id
		}
		gs.s.log.Info("fetch: consumer group member joined", "group", g.name, "member", m.id)
	}
	bump := g.epoch == 0 || !slices.Equal(oldTopics, m.topics) || oldRegex != m.regex

	// The subscribed topics' metadata: a new partition or topic is a new
	// epoch, as Kafka's metadata image update.
	all := gs.topicsNow()
	if fp := fingerprint(g.subscribedTopics(all), all); fp != g.metadata {
		g.metadata, bump = fp, true
	}
	if bump {
		g.epoch++
	}

	// 2. A new target assignment when the group epoch moved.
	if g.epoch > g.assignmentEpoch {
		gs.computeTarget(g, all)
	}

	// 3. Reconcile the member towards its target.
	before := m.assigned.clone()
	gs.reconcile(g, m, r.owned, r.ownedGiven)
	gs.armSession(g, m)

	res = cgResult{memberID: m.id, epoch: m.epoch}
	full := r.rebalance != -1 && (r.topics != nil || r.regex != nil) && r.ownedGiven
	if r.epoch == 0 || full || !before.equal(m.assigned) {
		res.assignment, res.send = m.assigned.clone(), true
	}
	return res
}

// consumerMember finds or creates the member a heartbeat is from, with
// Kafka's checks (getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember).
func (gs *groups) consumerMember(g *cgroup, r cgHeartbeat) (*cmember, bool, cgResult) {
	newMember := func() *cmember {
		return &cmember{id: r.memberID, assigned: tpSet{}, revoking: tpSet{}}
	}
	if r.instanceID == nil {
		m := g.members[r.memberID]
		if m == nil {
			if r.epoch != 0 {
				return nil, false, cgErr(kerr.UnknownMemberID, "Member %s is not a member of group %s.", r.memberID, g.name)
			}
			return newMember(), true, cgResult{}
		}
		if res := checkMemberEpoch(m, r); res.err != 0 {
			return nil, false, res
		}
		return m, false, cgResult{}
	}

	inst := *r.instanceID
	old := g.members[g.static[inst]]
	if r.epoch != 0 {
		switch {
		case old == nil:
			return nil, false, cgErr(kerr.UnknownMemberID, "Instance id %s is unknown.", inst)
		case old.id != r.memberID:
			return nil, false, cgErr(kerr.FencedInstanceID, "Static member %s with instance id %s was fenced by member %s.", r.memberID, inst, old.id)
		}
		if res := checkMemberEpoch(old, r); res.err != 0 {
			return nil, false, res
		}
		return old, false, cgResult{}
	}
	switch {
	case old == nil:
		if m := g.members[r.memberID]; m != nil {
			return m, false, cgResult{}
		}
		return newMember(), true, cgResult{}
	case old.id == r.memberID:
		// The same member rejoining (epoch 0 after a lost response or a
		// fence): it keeps its place, as a dynamic member does.
		return old, false, cgResult{}
	case old.epoch != leaveGroupStaticEpoch:
		return nil, false, cgErr(kerr.UnreleasedInstanceID, "Static member %s with instance id %s cannot join the group because the instance id is owned by %s member.", r.memberID, inst, old.id)
	}
	// A static member that left with epoch -2 is replaced: the new member
	// takes over its subscription and target assignment, without a new
	// group epoch; the partitions the old one held are released to it.
	m := newMember()
	m.instanceID, m.rackID = old.instanceID, old.rackID
	m.rebalance, m.assignor = old.rebalance, old.assignor
	m.topics, m.regex, m.re = old.topics, old.regex, old.re
	if t, ok := g.target[old.id]; ok {
		g.target[m.id] = t
	}
	gs.dropConsumer(g, old)
	g.members[m.id] = m
	g.static[inst] = m.id
	gs.s.log.Info("fetch: static consumer group member replaced", "group", g.name, "instance_id", inst, "old_member", old.id, "member", m.id)
	return m, false, cgResult{}
}

// checkMemberEpoch is Kafka's throwIfConsumerGroupMemberEpochIsInvalid:
// epoch 0 rejoins; a newer epoch, or an older one that is not the previous
// epoch with owned partitions within the assignment (a lost response), is
// fenced.
func checkMemberEpoch(m *cmember, r cgHeartbeat) cgResult {
	switch {
	case r.epoch == 0:
		return cgResult{}
	case r.epoch > m.epoch:
		return cgErr(kerr.FencedMemberEpoch, "The consumer group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", r.epoch, m.epoch)
	case r.epoch < m.epoch:
		if r.epoch != m.prevEpoch || !ownedWithin(r.owned, r.ownedGiven, m.assigned) {
			return cgErr(kerr.FencedMemberEpoch, "The consumer group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", r.epoch, m.epoch)
		}
	}
	return cgResult{}
}

// ownedWithin reports whether every owned partition is in set (Kafka's
// isSubset; unknown owned partitions are not).
func ownedWithin(owned []kmsg.ConsumerGroupHeartbeatRequestTopic, given bool, set tpSet) bool {
	if !given {
		return false
	}
	for _, t := range owned {
		for _, p := range t.Partitions {
			if !set.has(topicPart{t.TopicID, p}) {
				return false
			}
		}
	}
	return true
}

// ownsAny reports whether the member may still own one of set: it does
// when it did not say what it owns.
func ownsAny(owned []kmsg.ConsumerGroupHeartbeatRequestTopic, given bool, set tpSet) bool {
	if !given {
		return true
	}
	for _, t := range owned {
		for _, p := range t.Partitions {
			if set.has(topicPart{t.TopicID, p}) {
				return true
			}
		}
	}
	return false
}

// preferredAssignor is Kafka's: the server assignor most members ask for
// (ties to the first of serverAssignors), else the default. It is also the
// assignor ConsumerGroupDescribe and DescribeGroups name, as Kafka's
// ConsumerGroup.asDescribedGroup does: that of the current members, so
// the default for an Empty group. Kafka keeps no assignor of its own for
// a group (its ConsumerGroupMetadata record has the epoch alone; each
// member's record has the assignor it asks for), and named the default
// for an Empty group before a restart and after it alike. segfs named
// the one its last target assignment used, which an Empty group kept
// until a restart turned it into the default.
func (g *cgroup) preferredAssignor() string {
	counts := map[string]int{}
	for _, m := range g.members {
		if m.assignor != "" {
			counts[m.assignor]++
		}
	}
	best, n := serverAssignors[0], 0
	for _, a := range serverAssignors {
		if counts[a] > n {
			best, n = a, counts[a]
		}
	}
	return best
}

// computeTarget computes the target assignment of the group epoch (Kafka's
// TargetAssignmentBuilder). Members are handed the previous target so the
// assignor can keep partitions where they are.
func (gs *groups) computeTarget(g *cgroup, all map[string]topicMeta) {
	var in []assignMember
	for _, m := range g.ordered() {
		in = append(in, assignMember{id: m.id, topics: m.subscribed(all), prev: g.target[m.id]})
	}
	subscribed := g.subscribedTopics(all)
	topics := make([]topicMeta, 0, len(subscribed))
	for _, name := range sortedKeys(subscribed) {
		topics = append(topics, all[name])
	}
	assignor := g.preferredAssignor()
	var out map[string]tpSet
	switch assignor {
	case "range":
		out = assignRange(in, topics)
	default:
		out = assignUniform(in, topics)
	}
	g.target = out
	g.assignmentEpoch = g.epoch
	gs.s.log.Info("fetch: consumer group target assignment", "group", g.name, "epoch", g.epoch, "assignor", assignor, "members", len(g.members), "topics", len(topics))
}

// reconcile moves a member towards its target assignment (Kafka's
// CurrentAssignmentBuilder).
func (gs *groups) reconcile(g *cgroup, m *cmember, owned []kmsg.ConsumerGroupHeartbeatRequestTopic, ownedGiven bool) {
	if m.reconciledTo(g.assignmentEpoch) {
		return
	}
	switch m.state {
	case memberUnrevoked:
		// It moves on once its heartbeat no longer lists a partition
		// pending revocation.
		if ownsAny(owned, ownedGiven, m.revoking) {
			return
		}
	}
	target := g.target[m.id]
	assigned, revoking := tpSet{}, tpSet{}
	for tp := range m.assigned {
		if target.has(tp) {
			assigned[tp] = struct{}{}
		} else {
			revoking[tp] = struct{}{}
		}
	}
	pending, unreleased := tpSet{}, false
	for tp := range target {
		if assigned.has(tp) {
			continue
		}
		if _, held := g.owners[tp]; held {
			unreleased = true
			continue
		}
		pending[tp] = struct{}{}
	}

	oldState, oldEpoch := m.state, m.epoch
	newEpoch, state := g.assignmentEpoch, memberStable
	switch {
	case len(revoking) > 0:
		// Revoke first, in the current epoch.
		newEpoch, state = m.epoch, memberUnrevoked
	case unreleased:
		state = memberUnreleased
	}
	if len(revoking) == 0 {
		for tp := range pending {
			assigned[tp] = struct{}{}
		}
	}
	gs.setOwned(g, m, assigned, revoking)
	m.prevEpoch, m.epoch, m.state = m.epoch, newEpoch, state
	if state == memberUnrevoked {
		if oldState != memberUnrevoked || oldEpoch != newEpoch || m.revocation == nil {
			gs.armRevocation(g, m)
		}
	} else if m.revocation != nil {
		m.revocation.Stop()
		m.revocation = nil
	}
	if oldState != state || oldEpoch != m.epoch {
		gs.s.log.Debug("fetch: consumer group member reconciled", "group", g.name, "member", m.id, "epoch", m.epoch, "state", state.String(), "assigned", len(m.assigned), "revoking", len(m.revoking))
	}
}

// setOwned replaces a member's partitions and keeps owners in step.
func (gs *groups) setOwned(g *cgroup, m *cmember, assigned, revoking tpSet) {
	for _, s := range []tpSet{m.assigned, m.revoking} {
		for tp := range s {
			if g.owners[tp] == m.id {
				delete(g.owners, tp)
			}
		}
	}
	m.assigned, m.revoking = assigned, revoking
	for _, s := range []tpSet{assigned, revoking} {
		for tp := range s {
			g.owners[tp] = m.id
		}
	}
}

// armSession restarts a member's session timer.
func (gs *groups) armSession(g *cgroup, m *cmember) {
	if m.session != nil {
		m.session.Stop()
	}
	var t *time.Timer
	t = time.AfterFunc(gs.cgSession, func() {
		var op *offsetsOp
		defer func() { gs.waitPersistType(g.name, op) }()
		gs.mu.Lock()
		defer gs.mu.Unlock()
		if gs.s.shuttingDown() || gs.consumers[g.name] != g || g.members[m.id] != m || m.session != t {
			return
		}
		gs.s.log.Info("fetch: consumer group member removed: session timeout", "group", g.name, "member", m.id, "timeout", gs.cgSession)
		gs.fenceConsumer(g, m)
		op = gs.persistType(g.name)
		// Not on disk, not done: the member is back, with a new
		// session, and the next expiry tries again.
		gs.undoConsumerOnFailure(g.name, op)
	})
	m.session = t
}

// armRevocation fences a member that has not revoked its partitions within
// its rebalance timeout (Kafka's consumer group rebalance timeout).
func (gs *groups) armRevocation(g *cgroup, m *cmember) {
	if m.revocation != nil {
		m.revocation.Stop()
	}
	epoch := m.epoch
	d := m.rebalance
	if d <= 0 {
		d = gs.cgSession
	}
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		var op *offsetsOp
		defer func() { gs.waitPersistType(g.name, op) }()
		gs.mu.Lock()
		defer gs.mu.Unlock()
		if gs.s.shuttingDown() || gs.consumers[g.name] != g || g.members[m.id] != m || m.revocation != t || m.state != memberUnrevoked || m.epoch != epoch {
			return
		}
		gs.s.log.Info("fetch: consumer group member fenced: partitions not revoked within the rebalance timeout", "group", g.name, "member", m.id, "epoch", epoch, "timeout", d)
		gs.fenceConsumer(g, m)
		op = gs.persistType(g.name)
		// Not on disk, not done: the member is back, with a new
		// session, and the next expiry tries again.
		gs.undoConsumerOnFailure(g.name, op)
	})
	m.revocation = t
}

// dropConsumer removes a member and releases its partitions.
func (gs *groups) dropConsumer(g *cgroup, m *cmember) {
	if m.session != nil {
		m.session.Stop()
	}
	if m.revocation != nil {
		m.revocation.Stop()
	}
	gs.setOwned(g, m, tpSet{}, tpSet{})
	delete(g.members, m.id)
	delete(g.target, m.id)
	if m.instanceID != nil && g.static[*m.instanceID] == m.id {
		delete(g.static, *m.instanceID)
	}
}

// fenceConsumer removes a member (left, timed out or fenced) and starts a
// new group epoch, so the others take its partitions.
func (gs *groups) fenceConsumer(g *cgroup, m *cmember) {
	gs.dropConsumer(g, m)
	g.epoch++
	// The subscriptions changed with it: record the metadata they now
	// cover, so the next heartbeat does not take it for a topic change.
	all := gs.topicsNow()
	g.metadata = fingerprint(g.subscribedTopics(all), all)
}

// consumerLeave is a heartbeat with epoch -1 (leave) or -2 (a static
// member leaving for now).
func (gs *groups) consumerLeave(r cgHeartbeat) cgResult {
	g := gs.consumers[r.group]
	if g == nil {
		return cgErr(kerr.GroupIDNotFound, "Consumer group %s not found.", r.group)
	}
	var m *cmember
	if r.instanceID == nil {
		m = g.members[r.memberID]
		if m == nil {
			return cgErr(kerr.UnknownMemberID, "Member %s is not a member of group %s.", r.memberID, g.name)
		}
	} else {
		m = g.members[g.static[*r.instanceID]]
		switch {
		case m == nil:
			return cgErr(kerr.UnknownMemberID, "Instance id %s is unknown.", *r.instanceID)
		case m.id != r.memberID:
			return cgErr(kerr.FencedInstanceID, "Static member %s with instance id %s was fenced by member %s.", r.memberID, *r.instanceID, m.id)
		}
	}
	if r.epoch == leaveGroupStaticEpoch && m.instanceID != nil {
		// It keeps its partitions until it comes back or its session
		// expires.
		if m.revocation != nil {
			m.revocation.Stop()
			m.revocation = nil
		}
		m.prevEpoch, m.epoch = m.epoch, leaveGroupStaticEpoch
		gs.armSession(g, m)
		gs.s.log.Info("fetch: static consumer group member left temporarily", "group", g.name, "member", m.id, "instance_id", *m.instanceID)
		return cgResult{memberID: m.id, epoch: leaveGroupStaticEpoch}
	}
	gs.s.log.Info("fetch: consumer group member left", "group", g.name, "member", m.id)
	gs.fenceConsumer(g, m)
	return cgResult{memberID: r.memberID, epoch: r.epoch}
}

// validateConsumerCommit is OffsetCommit's check against a consumer group
// (Kafka's ConsumerGroup.validateOffsetCommit): a member commits with its
// current member epoch, from OffsetCommit v9 on; anyone may commit into
// a group without members with a negative epoch.
func (g *cgroup) validateCommit(r commitRequest) int16 {
	if r.generation < 0 && len(g.members) == 0 {
		return 0
	}
	m := g.members[r.memberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code
	case r.version < 9:
		return kerr.UnsupportedVersion.Code
	case r.generation != m.epoch:
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// validateConsumerFetch is OffsetFetch v9's check (Kafka's
// ConsumerGroup.validateOffsetFetch): a request with a member id or epoch
// must come from a member at its current epoch.
func (gs *groups) validateConsumerFetch(group string, memberID *string, epoch int32) int16 {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	g := gs.consumers[group]
	if g == nil || memberID == nil && epoch < 0 {
		return 0
	}
	id := ""
	if memberID != nil {
		id = *memberID
	}
	m := g.members[id]
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code
	case epoch != m.epoch:
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// consumerSubscribed is the set of topics a consumer group's members
// subscribe to, which OffsetDelete keeps.
func (gs *groups) consumerSubscribed(g *cgroup) map[string]bool {
	out := map[string]bool{}
	all := gs.topicsNow()
	for _, m := range g.members {
		for _, name := range m.topics {
			out[name] = true
		}
		for name := range m.subscribed(all) {
			out[name] = true
		}
	}
	return out
}

// meta is what the offsets file keeps of the group (nil for none: a
// classic group, or no group): its epochs, the metadata its target was
// computed from, and its members with their current and target
// assignments. It is built at every heartbeat and compared with the
// record staged, so a heartbeat that changes none of it writes nothing.
func (g *cgroup) meta() *consumerGroupMeta {
	if g == nil {
		return nil
	}
	out := &consumerGroupMeta{Epoch: g.epoch, AssignmentEpoch: g.assignmentEpoch, Metadata: g.metadata}
	for _, m := range g.ordered() {
		mm := consumerMemberMeta{
			MemberID: m.id, InstanceID: m.instanceID, RackID: m.rackID,
			ClientID: m.clientID, ClientHost: m.host,
			RebalanceTimeoutMs: m.rebalance.Milliseconds(), ServerAssignor: m.assignor,
			SubscribedRegex: m.regex, MemberEpoch: m.epoch, PreviousMemberEpoch: m.prevEpoch,
			State: m.state.String(), Assigned: partsMeta(m.assigned),
			PendingRevocation: partsMeta(m.revoking), Target: partsMeta(g.target[m.id]),
		}
		if len(m.topics) > 0 {
			mm.SubscribedTopics = slices.Clone(m.topics)
		}
		out.Members = append(out.Members, mm)
	}
	return out
}

// partsMeta is a set as the offsets file keeps it (nil when empty).
func partsMeta(s tpSet) []topicPartsMeta {
	if len(s) == 0 {
		return nil
	}
	ids, parts := s.byTopic()
	out := make([]topicPartsMeta, 0, len(ids))
	for _, id := range ids {
		out = append(out, topicPartsMeta{TopicID: hex.EncodeToString(id[:]), Partitions: parts[id]})
	}
	return out
}

// partsSet reads a set back from the offsets file; a malformed topic ID
// is skipped (the file was edited by hand: the member reconciles without
// it).
func partsSet(ps []topicPartsMeta) tpSet {
	out := tpSet{}
	for _, t := range ps {
		b, err := hex.DecodeString(t.TopicID)
		if err != nil || len(b) != 16 {
			continue
		}
		var id [16]byte
		copy(id[:], b)
		for _, p := range t.Partitions {
			out[topicPart{id, p}] = struct{}{}
		}
	}
	return out
}

// parseMemberState is memberState.String's inverse; an unknown name is
// STABLE.
func parseMemberState(s string) memberState {
	switch s {
	case memberUnrevoked.String():
		return memberUnrevoked
	case memberUnreleased.String():
		return memberUnreleased
	}
	return memberStable
}

// persistType stages the record of group's type and epochs in the offsets
// file if it changed (gs.mu held): a consumer group's epochs, or none for
// a classic group or a group that is gone. The caller writes it with
// waitPersistType once it has let go of gs.mu. The record changes when the
// group is created and at each new group or assignment epoch (a member
// joins, leaves or is fenced, a subscription or a subscribed topic
// changes), as Kafka writes its ConsumerGroupMetadata record, not at
// every heartbeat: each change costs one rewrite of the offsets file (a
// temp file, two fsyncs and a rename), which the heartbeat that made it
// waits for, as it did before for a group with committed offsets.
//
// It also keeps a classic group's record (classicGroupMeta, group.record)
// in step: its last completed generation (set by SyncGroup and a static
// member's rejoin, which stage it here), or, for a group with committed
// offsets, the time it became Empty when it becomes Empty or gets its
// first member (which its offsets' retention counts from); removed when
// the group becomes a consumer group, or is Empty without offsets. A
// classic group known only from the file (after a restart, until a
// member joins) keeps its record.
func (gs *groups) persistType(group string) *offsetsOp {
	var change func(offsetsState) offsetsState
	add := func(op func(offsetsState) offsetsState) {
		if change == nil {
			change = op
		} else {
			change = thenOp(change, op)
		}
	}
	want := gs.consumers[group].meta()
	have, ok := gs.s.offsets.consumerMetaStaged(group)
	if !(want == nil && !ok || want != nil && ok && reflect.DeepEqual(have, *want)) {
		add(consumerMetaOp(group, want))
	}
	st := gs.s.offsets.staged()
	rec, recorded := st.classics[group]
	switch g := gs.byName[group]; {
	case g != nil:
		want := g.record(len(st.groups[group]) > 0)
		if want == nil && recorded || want != nil && (!recorded || !reflect.DeepEqual(rec, *want)) {
			add(classicMetaOp(group, want))
		}
	case gs.consumers[group] != nil && recorded:
		add(classicMetaOp(group, nil))
	}
	if change == nil {
		return nil
	}
	return gs.s.offsets.stage(change)
}

// persistAsync stages, like persistType, what group's records need (gs.mu
// held) and writes it in the background: for a classic group that a
// timer (a session, a rebalance or sync deadline) left Empty, where no
// request waits. Shutdown waits for the write.
func (gs *groups) persistAsync(group string) {
	op := gs.persistType(group)
	if op == nil {
		return
	}
	// Once shutting down, the change stays staged: it is written with
	// the next change, if any; a restart finds the group without
	// members anyway.
	gs.s.background(func() { gs.waitPersistType(group, op) })
}

// waitPersistType writes a change persistType staged and returns the
// write's error, which is logged. The answers whose change Kafka reverts
// when its write fails (a consumer group's heartbeat, a classic
// generation's SyncGroup, a static member's replacing JoinGroup, a join
// that creates a classic group, gives an Empty one its first member or
// converts an empty consumer group) answer it, and so does a LeaveGroup
// that leaves a classic group Empty, which Kafka answers with the error
// though it keeps the group Empty; a group a timer left Empty only logs
// it, as Kafka does: the next change of the group stages the record
// again.
func (gs *groups) waitPersistType(group string, op *offsetsOp) error {
	if op == nil {
		return nil
	}
	err := gs.s.offsets.wait(op)
	if err != nil {
		gs.s.log.Warn("fetch: group record not written to the offsets file", "group", group, "err", err)
	}
	return err
}

// restoreConsumers recreates, once the offsets file is loaded, the
// consumer groups it records, as Kafka's coordinator replays its
// ConsumerGroup* records: at their epochs, with their members, each
// member's current assignment (epoch, previous epoch, state, assigned
// and pending-revocation partitions) and target assignment, every
// session starting now. A member that heartbeats with its epoch carries
// on as if nothing happened; one that does not come back is removed when
// its session times out, and the others take its partitions. A member
// that was revoking partitions is fenced if it has not revoked them
// within its rebalance timeout from now. A group without members (or
// from an older file) is Empty at its epochs, so ListGroups,
// ConsumerGroupDescribe and DescribeGroups go on answering for a consumer
// group rather than a classic one, or none for a group that never
// committed; a classic JoinGroup converts it, as any empty consumer group.
func (gs *groups) restoreConsumers(metas map[string]consumerGroupMeta) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	for name, meta := range metas {
		if gs.consumers[name] != nil || gs.byName[name] != nil {
			continue
		}
		if g := gs.restoreConsumer(name, meta); len(g.members) > 0 {
			gs.s.log.Info("fetch: consumer group restored", "group", name, "epoch", g.epoch, "assignment_epoch", g.assignmentEpoch, "members", len(g.members))
		}
	}
}

// restoreConsumer recreates consumer group name from its record (gs.mu
// held): restoreConsumers at a load, revertConsumer after a failed write.
func (gs *groups) restoreConsumer(name string, meta consumerGroupMeta) *cgroup {
	g := &cgroup{
		name:            name,
		epoch:           meta.Epoch,
		assignmentEpoch: meta.AssignmentEpoch,
		metadata:        meta.Metadata,
		members:         map[string]*cmember{},
		static:          map[string]string{},
		target:          map[string]tpSet{},
		owners:          map[topicPart]string{},
	}
	gs.consumers[name] = g
	for _, mm := range meta.Members {
		if mm.MemberID == "" || g.members[mm.MemberID] != nil {
			continue
		}
		m := &cmember{
			id: mm.MemberID, clientID: mm.ClientID, host: mm.ClientHost,
			rebalance: time.Duration(mm.RebalanceTimeoutMs) * time.Millisecond,
			assignor:  mm.ServerAssignor, topics: slices.Clone(mm.SubscribedTopics),
			epoch: mm.MemberEpoch, prevEpoch: mm.PreviousMemberEpoch,
			state: parseMemberState(mm.State), assigned: tpSet{}, revoking: tpSet{},
		}
		if mm.InstanceID != nil {
			id := *mm.InstanceID
			m.instanceID = &id
		}
		if mm.RackID != nil {
			r := *mm.RackID
			m.rackID = &r
		}
		if mm.SubscribedRegex != "" {
			// As the heartbeat compiled it (Kafka matches the
			// whole name); one that no longer compiles (a file
			// edited by hand) subscribes to nothing.
			re, err := regexp.Compile(`^(?:` + mm.SubscribedRegex + `)$`)
			if err != nil {
				gs.s.log.Warn("fetch: consumer group member's regex from the offsets file does not compile", "group", name, "member", m.id, "regex", mm.SubscribedRegex, "err", err)
			} else {
				m.regex, m.re = mm.SubscribedRegex, re
			}
		}
		g.members[m.id] = m
		if m.instanceID != nil {
			g.static[*m.instanceID] = m.id
		}
		if mm.Target != nil {
			g.target[m.id] = partsSet(mm.Target)
		}
		gs.setOwned(g, m, partsSet(mm.Assigned), partsSet(mm.PendingRevocation))
	}
	for _, m := range g.members {
		gs.armSession(g, m)
		if m.state == memberUnrevoked {
			gs.armRevocation(g, m)
		}
	}
	return g
}

// forgetConsumer drops an empty consumer group's state (DeleteGroups, or
// a classic member joining it).
func (gs *groups) forgetConsumer(g *cgroup) {
	for _, m := range g.members {
		gs.dropConsumer(g, m)
	}
	delete(gs.consumers, g.name)
}

// topicNames maps topic IDs to names for the describe answers.
func (gs *groups) topicNames() map[[16]byte]string {
	out := map[[16]byte]string{}
	for _, t := range gs.s.store.Topics() {
		out[t.ID()] = t.Name()
	}
	return out
}

// describeAssignment renders a set for ConsumerGroupDescribe.
func describeAssignment(s tpSet, names map[[16]byte]string) kmsg.Assignment {
	var a kmsg.Assignment
	ids, parts := s.byTopic()
	a.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	for _, id := range ids {
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID, tp.Topic, tp.Partitions = id, names[id], parts[id]
		a.TopicPartitions = append(a.TopicPartitions, tp)
	}
	return a
}

// consumerDescribe is ConsumerGroupDescribe's view of one group.
func (gs *groups) consumerDescribe(name string) kmsg.ConsumerGroupDescribeResponseGroup {
	d := kmsg.NewConsumerGroupDescribeResponseGroup()
	d.Group = name
	gs.mu.Lock()
	defer gs.mu.Unlock()
	g := gs.consumers[name]
	if g == nil {
		d.ErrorCode = kerr.GroupIDNotFound.Code
		msg := fmt.Sprintf("Group %s not found.", name)
		if gs.byName[name] != nil || gs.s.offsets.hasGroupStaged(name) {
			msg = fmt.Sprintf("Group %s is not a consumer group.", name)
		}
		d.ErrorMessage = &msg
		return d
	}
	names := gs.topicNames()
	d.State, d.Epoch, d.AssignmentEpoch = g.state(), g.epoch, g.assignmentEpoch
	d.AssignorName = g.preferredAssignor()
	for _, m := range g.ordered() {
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.RackID = m.id, m.instanceID, m.rackID
		dm.MemberEpoch, dm.ClientID, dm.ClientHost = m.epoch, m.clientID, m.host
		dm.SubscribedTopics = slices.Clone(m.topics)
		if dm.SubscribedTopics == nil {
			dm.SubscribedTopics = []string{}
		}
		if m.regex != "" {
			re := m.regex
			dm.SubscribedTopicRegex = &re
		}
		dm.Assignment = describeAssignment(m.assigned, names)
		dm.TargetAssignment = describeAssignment(g.target[m.id], names)
		dm.MemberType = 1 // a consumer-protocol member
		d.Members = append(d.Members, dm)
	}
	return d
}
