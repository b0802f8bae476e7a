package fetch

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Classic consumer groups: the membership half of Kafka's group
// coordinator (GroupCoordinator / ClassicGroup). JoinGroup, SyncGroup,
// Heartbeat and LeaveGroup (11_join_group.go ...) are thin wrappers around
// the methods here; OffsetCommit, DeleteGroups and OffsetDelete validate
// and stage their change of the committed offsets here, under the same
// lock as every membership change (commit, deleteGroup, deleteOffsets),
// and wait for its write outside it (offsets.go).
//
// A group moves through Kafka's states:
//
//	Empty → PreparingRebalance → CompletingRebalance → Stable
//	           ↑_____________________|_____________________|
//
// A join (new member, a known member with changed protocols, or the
// leader; a static member's restart only if it changes the selected
// protocol), a leave, a session timeout, or a member that did not send
// SyncGroup within the rebalance timeout starts a rebalance
// (PreparingRebalance). Every member's JoinGroup is then held until all
// known members have rejoined or the largest rebalance timeout passes
// (members that did not rejoin are removed); then the generation goes up,
// the protocol every member supports is chosen, every waiting JoinGroup is
// answered and the leader gets everyone's metadata (CompletingRebalance).
// Followers' SyncGroups wait for the leader's, whose assignments are then
// handed to everyone (Stable). Members learn of a new rebalance from
// Heartbeat (REBALANCE_IN_PROGRESS) and rejoin.
//
// All state is in memory behind one mutex. Held requests wait on a
// channel in their connection's goroutine, so they block only their own
// connection; timers (sessions, rebalance deadlines) run as time.AfterFunc
// callbacks that take the mutex and recheck that they still apply.
// Each completed generation is also written to the offsets file
// (group.stored, classicGroupMeta in offsets.go), as Kafka's storeGroup:
// a restart restores the group Stable with its members
// (restoreClassics), so they carry on without rejoining.

// groupState is a classic group's state (Kafka's names).
type groupState int8

const (
	groupEmpty groupState = iota
	groupPreparingRebalance
	groupCompletingRebalance
	groupStable
)

func (s groupState) String() string {
	switch s {
	case groupEmpty:
		return "Empty"
	case groupPreparingRebalance:
		return "PreparingRebalance"
	case groupCompletingRebalance:
		return "CompletingRebalance"
	case groupStable:
		return "Stable"
	}
	return "Dead"
}

const (
	// DefaultGroupInitialRebalanceDelay is how long the first rebalance of
	// an empty group waits for more members, extended by the same again
	// while new members keep arriving (up to the rebalance timeout).
	// Kafka's group.initial.rebalance.delay.ms is 3 s; a single-node
	// server used from scripts and tests is better served by a shorter
	// wait: 1 s still gathers consumers started together into one
	// generation, while a lone consumer starts 2 s sooner.
	DefaultGroupInitialRebalanceDelay = time.Second
	// DefaultGroupMinSessionTimeout and DefaultGroupMaxSessionTimeout are
	// Kafka's group.min.session.timeout.ms and group.max.session.timeout.ms
	// (Config.GroupMinSessionTimeout, GroupMaxSessionTimeout): JoinGroup
	// with a session timeout outside them gets INVALID_SESSION_TIMEOUT.
	DefaultGroupMinSessionTimeout = 6 * time.Second
	DefaultGroupMaxSessionTimeout = 30 * time.Minute
)

// groups is the coordinator of every classic group of the server.
type groups struct {
	s *Server

	mu     sync.Mutex
	byName map[string]*group
	// consumers are the KIP-848 consumer groups (consumer_groups.go); a
	// name is in byName or here, never both.
	consumers map[string]*cgroup
	// Settings, read under mu; tests shorten them.
	initialDelay           time.Duration
	minSession, maxSession time.Duration
	// Consumer groups' session timeout and heartbeat interval.
	cgSession, cgInterval time.Duration
	// replaced is set by a join that replaced a static member's id in a
	// Stable group (replaceStatic): what undoes it if the group's record
	// with the new id is not written. Only join's critical section uses
	// it.
	replaced func()
}

func newGroups(s *Server, initialDelay time.Duration) *groups {
	return &groups{
		s:            s,
		byName:       map[string]*group{},
		consumers:    map[string]*cgroup{},
		initialDelay: initialDelay,
		minSession:   s.cfg.GroupMinSessionTimeout,
		maxSession:   s.cfg.GroupMaxSessionTimeout,
		cgSession:    s.cfg.ConsumerGroupSessionTimeout,
		cgInterval:   s.cfg.ConsumerGroupHeartbeatInterval,
	}
}

// group is one classic group. A group stays in memory, its generations
// counting up as in Kafka, until DeleteGroups or the expiry deletes it
// (Empty, with no committed offsets left: expiry.go); a member joining
// afterwards starts a new group.
type group struct {
	name         string
	state        groupState
	generation   int32
	protocolType string
	protocol     string // chosen protocol of the current generation
	leader       string
	members      map[string]*member
	// pending are member ids handed out with MEMBER_ID_REQUIRED whose
	// owner has not joined with them yet (KIP-394); each expires after the
	// session timeout. A rebalance waits for them, as Kafka's does.
	pending map[string]*time.Timer
	static  map[string]string // group.instance.id → member id
	seq     uint64            // join order, for leader choice and member lists
	// epoch changes with every state change and group timer; a group
	// timer only acts if the epoch it was set in is still current.
	epoch uint64
	timer *time.Timer
	// initial is set during the delayed first rebalance of an empty group;
	// newJoins records a join since the delay was last (re)armed.
	initial  bool
	newJoins bool
	// syncTimer removes the members that have not sent SyncGroup within
	// the rebalance timeout after a generation formed (Kafka's pending
	// sync); it survives the move to Stable, unlike the group timer.
	syncTimer *time.Timer
	// subscribed are the topics the members of the current generation
	// subscribe to (consumer protocol only; nil when unknown or Empty),
	// whose offsets OffsetDelete refuses to delete and the expiry keeps.
	subscribed map[string]bool
	// emptySince is when the group became Empty, in Unix milliseconds
	// (Kafka's currentStateTimestamp of an Empty group), 0 while it has
	// members: an Empty group's offsets expire a retention after it
	// (expiry.go). The file keeps it for a group with offsets
	// (classicGroupMeta).
	emptySince int64
	// stored is the record of the last completed generation (members,
	// assignments), what the offsets file keeps and a restart restores;
	// nil while the group has never completed one since it was last
	// Empty. It changes only when a generation's assignments are handed
	// out and when a static member's rejoin replaces a member id in a
	// Stable group, as Kafka's storeGroup; storeOp is its write, which
	// SyncGroup answers wait for.
	stored  *classicGroupMeta
	storeOp *offsetsOp
}

// member is one joined member.
type member struct {
	id             string
	instanceID     *string
	clientID, host string
	session        time.Duration
	rebalance      time.Duration
	protocols      []kmsg.JoinGroupRequestProtocol
	seq            uint64
	assignment     []byte
	synced         bool      // sent SyncGroup in the current generation
	deadline       time.Time // session expiry
	timer          *time.Timer
	joinWait       chan joinResult // non-nil while its JoinGroup is held
	syncWait       chan syncResult // non-nil while its SyncGroup is held
}

// joinResult is the outcome of a JoinGroup, independent of version.
type joinResult struct {
	err          int16
	generation   int32
	memberID     string
	protocolType string
	protocol     string
	leader       string
	members      []kmsg.JoinGroupResponseMember // the leader's answer only
	// skipAssignment (v9+, KIP-814) tells a static leader that rejoined
	// without a rebalance not to compute an assignment.
	skipAssignment bool
}

// syncResult is the outcome of a SyncGroup.
type syncResult struct {
	err          int16
	protocolType string
	protocol     string
	assignment   []byte
	// stored is the write of the generation's record: the answer waits
	// for it, so that a member holding its assignment finds its
	// generation again after a restart.
	stored *offsetsOp
}

func errJoin(code int16, memberID string) joinResult {
	return joinResult{err: code, generation: -1, memberID: memberID}
}

// joinRequest is a JoinGroup, independent of version.
type joinRequest struct {
	group              string
	memberID           string
	instanceID         *string
	clientID, host     string
	session            time.Duration
	rebalance          time.Duration
	protocolType       string
	protocols          []kmsg.JoinGroupRequestProtocol
	requireKnownMember bool // v4+: a new dynamic member first gets MEMBER_ID_REQUIRED
	skipAssignment     bool // v9+: the answer can carry SkipAssignment
}

// newMemberID is Kafka's member id: the client id (or the group instance
// id of a static member), a dash and a random UUID.
func newMemberID(prefix string) string {
	var u [16]byte
	rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", prefix, u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// join handles a JoinGroup. It returns either the answer or, for a join
// that must wait for the rebalance to complete, a channel that delivers
// it.
func (gs *groups) join(r joinRequest) (joinResult, <-chan joinResult) {
	gs.mu.Lock()
	gs.replaced = nil
	before := gs.beforeJoin(r.group)
	res, ch := gs.joinLocked(r)
	undo := gs.replaced
	gs.replaced = nil
	if undo == nil && before != nil {
		undo = gs.undoJoin(r.group, *before)
	}
	// An empty consumer group this join converted is classic from now
	// on, after a restart too.
	op := gs.persistType(r.group)
	if op != nil && undo != nil {
		op.addUndo(undo)
	}
	gs.mu.Unlock()
	if err := gs.waitPersistType(r.group, op); err != nil && undo != nil &&
		(res.err == 0 || res.err == kerr.MemberIDRequired.Code) {
		// Kafka's answer when the group's record fails to be written:
		// for the record with a static member's new id, the member
		// keeps its old id; for a group this join created (or gave its
		// first member, or converted from an empty consumer group),
		// the group is back as it was, without this member or any
		// that joined since. The join is answered with the write's
		// error and no member id; the client joins again. A join
		// refused anyway keeps its refusal.
		res, ch = errJoin(offsetsWriteErrorCode(err), ""), nil
	}
	return res, ch
}

// joinBefore is what a join finds of a group that it may create, give
// its first member, or convert from an empty consumer group: what a
// failed write of the group's record puts back (undoJoin).
type joinBefore struct {
	g            *group // the Empty classic group; nil: none
	consumer     bool   // an empty consumer group by that name
	generation   int32
	emptySince   int64
	protocolType string
	stored       *classicGroupMeta
}

// beforeJoin is joinBefore for a join of group (gs.mu held); nil when
// the group is a classic one with members or a consumer group with
// members, which a join neither creates nor converts.
func (gs *groups) beforeJoin(group string) *joinBefore {
	if cg := gs.consumers[group]; cg != nil {
		if len(cg.members) > 0 {
			return nil
		}
		return &joinBefore{consumer: true}
	}
	g := gs.byName[group]
	switch {
	case g == nil:
		return &joinBefore{}
	case g.state != groupEmpty:
		return nil
	}
	return &joinBefore{g: g, generation: g.generation, emptySince: g.emptySince, protocolType: g.protocolType, stored: g.stored}
}

// undoJoin is what puts group back as b found it, after a join created
// it, gave it its first member or converted it, if the write of its
// record fails (gs.mu held, as Kafka's coordinator runtime reverts a
// failed write of a new group's record, removing the group): every
// member that joined since is dropped, its held JoinGroup or SyncGroup
// answered NOT_COORDINATOR, and the group is Empty as it was, gone if
// the join created it, or the consumer group the file holds if the
// join converted one. segfs logged the failure and carried on with a
// group the file did not hold.
func (gs *groups) undoJoin(name string, b joinBefore) func() {
	g := gs.byName[name] // the group the join left (nil: it refused)
	return func() {
		if g != nil && gs.byName[name] == g {
			for _, m := range g.members {
				gs.dropMember(g, m, kerr.NotCoordinator.Code)
			}
			g.setState(groupEmpty)
			if g.syncTimer != nil {
				g.syncTimer.Stop()
			}
			g.protocol, g.leader, g.subscribed = "", "", nil
			g.initial, g.newJoins, g.storeOp = false, false, nil
			g.generation, g.emptySince, g.protocolType, g.stored = b.generation, b.emptySince, b.protocolType, b.stored
			if b.g == nil {
				gs.forget(g)
			}
			gs.s.log.Warn("fetch: group record not written to the offsets file: the group is back as it was before its first member joined", "group", name, "generation", g.generation)
		}
		if b.consumer && gs.byName[name] == nil && gs.consumers[name] == nil {
			gs.revertConsumer(name)
		}
	}
}

// joinLocked is join with gs.mu held.
func (gs *groups) joinLocked(r joinRequest) (joinResult, <-chan joinResult) {
	if r.group == "" {
		return errJoin(kerr.InvalidGroupID.Code, r.memberID), nil
	}
	if r.session < gs.minSession || r.session > gs.maxSession {
		return errJoin(kerr.InvalidSessionTimeout.Code, r.memberID), nil
	}
	if cg := gs.consumers[r.group]; cg != nil {
		if len(cg.members) > 0 {
			// Kafka would run this member inside the consumer group
			// (KIP-848's online migration); segfs does not, and answers
			// as Kafka does when it cannot: a consumer-protocol member
			// finds no classic group by that name, any other protocol
			// is inconsistent with the group's.
			if r.protocolType != "consumer" {
				return errJoin(kerr.InconsistentGroupProtocol.Code, r.memberID), nil
			}
			return errJoin(kerr.GroupIDNotFound.Code, r.memberID), nil
		}
		// Kafka's offline downgrade: an empty consumer group becomes a
		// classic one; its committed offsets stay.
		gs.forgetConsumer(cg)
		gs.s.log.Info("fetch: empty consumer group converted to a classic group", "group", r.group)
	}
	g := gs.byName[r.group]
	if g == nil {
		// A refused join creates no group: it would turn a later
		// OffsetCommit's GROUP_ID_NOT_FOUND into UNKNOWN_MEMBER_ID, and
		// cost memory for nothing.
		if r.memberID != "" {
			return errJoin(kerr.UnknownMemberID.Code, r.memberID), nil
		}
		if r.protocolType == "" || len(r.protocols) == 0 {
			return errJoin(kerr.InconsistentGroupProtocol.Code, r.memberID), nil
		}
		g = &group{name: r.group, members: map[string]*member{}, pending: map[string]*time.Timer{}, static: map[string]string{},
			emptySince: gs.s.now().UnixMilli()}
		if rec, ok := gs.s.offsets.staged().classics[r.group]; ok && rec.EmptySinceMs != 0 {
			// A group known from the offsets file only (after a
			// restart) has been Empty since then, not since now, and
			// goes on from the generation it reached.
			g.emptySince, g.generation = rec.EmptySinceMs, rec.Generation
		}
		gs.byName[r.group] = g
	}
	if !g.supportsProtocols(r.protocolType, r.protocols) {
		return errJoin(kerr.InconsistentGroupProtocol.Code, r.memberID), nil
	}

	if r.memberID == "" {
		switch {
		case r.instanceID != nil:
			// A static member (re)joining: a new member id replaces the
			// one its instance id had (KIP-345).
			if old := g.members[g.static[*r.instanceID]]; old != nil {
				return gs.replaceStatic(g, old, newMemberID(*r.instanceID), r)
			}
			return joinResult{}, gs.addMember(g, newMemberID(*r.instanceID), r)
		case r.requireKnownMember:
			id := newMemberID(r.clientID)
			var t *time.Timer
			t = time.AfterFunc(r.session, func() {
				gs.mu.Lock()
				defer gs.mu.Unlock()
				if g.pending[id] == t {
					delete(g.pending, id)
					gs.maybeCompleteJoin(g)
					gs.persistAsync(g.name)
				}
			})
			g.pending[id] = t
			return errJoin(kerr.MemberIDRequired.Code, id), nil
		default:
			return joinResult{}, gs.addMember(g, newMemberID(r.clientID), r)
		}
	}

	if t, ok := g.pending[r.memberID]; ok {
		t.Stop()
		delete(g.pending, r.memberID)
		return joinResult{}, gs.addMember(g, r.memberID, r)
	}
	if g.fenced(r.memberID, r.instanceID) {
		return errJoin(kerr.FencedInstanceID.Code, r.memberID), nil
	}
	m := g.members[r.memberID]
	if m == nil {
		return errJoin(kerr.UnknownMemberID.Code, r.memberID), nil
	}
	switch g.state {
	case groupPreparingRebalance:
		ch := gs.updateMember(g, m, r)
		gs.maybeCompleteJoin(g)
		return joinResult{}, ch
	case groupCompletingRebalance:
		if m.sameProtocols(r.protocols) {
			// A retry of a join already answered: answer it again.
			gs.touch(g, m)
			return g.currentJoin(m), nil
		}
		ch := gs.updateMember(g, m, r)
		gs.prepareRebalance(g, "member "+m.id+" changed its protocols")
		return joinResult{}, ch
	case groupStable:
		// A follower rejoining unchanged gets the current generation. The
		// leader's join always rebalances: it is how a consumer leader
		// asks for one when topic metadata changed.
		if m.id != g.leader && m.sameProtocols(r.protocols) {
			gs.touch(g, m)
			return g.currentJoin(m), nil
		}
		ch := gs.updateMember(g, m, r)
		gs.prepareRebalance(g, "member "+m.id+" rejoined")
		return joinResult{}, ch
	}
	return errJoin(kerr.UnknownMemberID.Code, r.memberID), nil
}

// replaceStatic is Kafka's answer to a known static member joining with
// an unknown member id, typically a restarted consumer with the same
// group.instance.id: the member keeps its place, metadata and assignment
// under a new member id, and requests still held for the old id are
// fenced. In a Stable group a rejoin that leaves the group's protocol as
// it is completes at once with the current generation, and the other
// members notice nothing: that is the point of static membership. Only a
// change of the selected protocol rebalances (changed metadata alone does
// not, as in Kafka: the member's new metadata is kept for the next
// rebalance). Before v9 the answer names the leader as it was before the
// replacement, so a restarted leader does not take itself for the leader
// and compute an assignment nobody would receive; from v9 a leader gets
// the members with SkipAssignment (KIP-814). During CompletingRebalance
// the leader may already be assigning to the old id, so the group
// rebalances; during PreparingRebalance the join waits as any other.
func (gs *groups) replaceStatic(g *group, m *member, newID string, r joinRequest) (joinResult, <-chan joinResult) {
	oldID, prevLeader := m.id, g.leader
	if m.joinWait != nil {
		m.joinWait <- errJoin(kerr.FencedInstanceID.Code, oldID)
		m.joinWait = nil
	}
	if m.syncWait != nil {
		m.syncWait <- syncResult{err: kerr.FencedInstanceID.Code}
		m.syncWait = nil
	}
	delete(g.members, oldID)
	m.id = newID
	g.members[newID] = m
	g.static[*r.instanceID] = newID
	if g.leader == oldID {
		g.leader = newID
	}
	gs.s.log.Info("fetch: static group member rejoined", "group", g.name, "instance_id", *r.instanceID, "old_member", oldID, "member", newID, "state", g.state.String())

	switch g.state {
	case groupStable:
		oldProtocols, oldSession, oldRebalance := m.protocols, m.session, m.rebalance
		oldClient, oldHost := m.clientID, m.host
		m.protocols = slices.Clone(r.protocols)
		m.session, m.rebalance = r.session, r.rebalance
		m.clientID, m.host = r.clientID, r.host
		if g.selectProtocol() == g.protocol {
			gs.touch(g, m)
			// The stored generation names the new member id (join
			// writes it before the answer), or the member's next
			// heartbeat after a restart would be fenced.
			g.stored = g.snapshot()
			// If that write fails, the member goes back to its old id,
			// as in Kafka, and the group to the record the file holds.
			gs.replaced = func() {
				if gs.byName[g.name] != g || g.members[newID] != m {
					return
				}
				delete(g.members, newID)
				m.id = oldID
				g.members[oldID] = m
				g.static[*r.instanceID] = oldID
				if g.leader == newID {
					g.leader = oldID
				}
				m.protocols, m.session, m.rebalance = oldProtocols, oldSession, oldRebalance
				m.clientID, m.host = oldClient, oldHost
				gs.touch(g, m)
				gs.storedFromFile(g)
				gs.s.log.Warn("fetch: static group member's new id not written to the offsets file: it keeps its old one", "group", g.name, "instance_id", *r.instanceID, "member", oldID, "refused_member", newID)
			}
			res := g.currentJoin(m)
			if r.skipAssignment {
				res.skipAssignment = m.id == g.leader
			} else {
				res.leader, res.members = prevLeader, nil
			}
			return res, nil
		}
		ch := gs.updateMember(g, m, r)
		gs.prepareRebalance(g, "static member "+newID+" changed the group's protocol")
		return joinResult{}, ch
	case groupCompletingRebalance:
		ch := gs.updateMember(g, m, r)
		gs.prepareRebalance(g, "static member "+newID+" rejoined while the assignment was computed")
		return joinResult{}, ch
	case groupPreparingRebalance:
		ch := gs.updateMember(g, m, r)
		gs.maybeCompleteJoin(g)
		return joinResult{}, ch
	}
	// An Empty group has no members, so no static member to replace.
	return errJoin(kerr.UnknownMemberID.Code, r.memberID), nil
}

// currentJoin is the answer for the current generation.
func (g *group) currentJoin(m *member) joinResult {
	res := joinResult{
		generation:   g.generation,
		memberID:     m.id,
		protocolType: g.protocolType,
		protocol:     g.protocol,
		leader:       g.leader,
	}
	if m.id == g.leader {
		res.members = g.memberList()
	}
	return res
}

// memberList is the leader's view: every member's metadata for the chosen
// protocol, in join order.
func (g *group) memberList() []kmsg.JoinGroupResponseMember {
	out := make([]kmsg.JoinGroupResponseMember, 0, len(g.members))
	for _, m := range g.ordered() {
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID, jm.InstanceID = m.id, m.instanceID
		for _, p := range m.protocols {
			if p.Name == g.protocol {
				jm.ProtocolMetadata = p.Metadata
				break
			}
		}
		out = append(out, jm)
	}
	return out
}

// ordered returns the members in join order.
func (g *group) ordered() []*member {
	out := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b *member) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	return out
}

// supportsProtocols is Kafka's check: a first member must name a protocol
// type and at least one protocol; later ones the group's type and a
// protocol every current member supports.
func (g *group) supportsProtocols(ptype string, protocols []kmsg.JoinGroupRequestProtocol) bool {
	if len(g.members) == 0 {
		return ptype != "" && len(protocols) > 0
	}
	if ptype != g.protocolType {
		return false
	}
	for _, p := range protocols {
		if g.supportedByAll(p.Name) {
			return true
		}
	}
	return false
}

func (g *group) supportedByAll(name string) bool {
	for _, m := range g.members {
		if !slices.ContainsFunc(m.protocols, func(p kmsg.JoinGroupRequestProtocol) bool { return p.Name == name }) {
			return false
		}
	}
	return true
}

// selectProtocol picks, among the protocols every member supports, the one
// most members prefer (each votes for its first supported one), as Kafka
// does; ties go to the protocol listed first by the earliest member.
func (g *group) selectProtocol() string {
	members := g.ordered()
	var candidates []string
	for _, p := range members[0].protocols {
		if g.supportedByAll(p.Name) && !slices.Contains(candidates, p.Name) {
			candidates = append(candidates, p.Name)
		}
	}
	votes := map[string]int{}
	for _, m := range members {
		for _, p := range m.protocols {
			if slices.Contains(candidates, p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best := ""
	for _, c := range candidates {
		if best == "" || votes[c] > votes[best] {
			best = c
		}
	}
	return best
}

// fenced reports whether instanceID belongs to another member id (Kafka's
// isStaticMemberFenced).
func (g *group) fenced(memberID string, instanceID *string) bool {
	if instanceID == nil {
		return false
	}
	id, ok := g.static[*instanceID]
	return ok && id != memberID
}

func (m *member) sameProtocols(ps []kmsg.JoinGroupRequestProtocol) bool {
	return slices.EqualFunc(m.protocols, ps, func(a, b kmsg.JoinGroupRequestProtocol) bool {
		return a.Name == b.Name && bytes.Equal(a.Metadata, b.Metadata)
	})
}

// addMember adds a member whose JoinGroup waits for the rebalance it
// starts (or joins).
func (gs *groups) addMember(g *group, id string, r joinRequest) <-chan joinResult {
	if len(g.members) == 0 {
		g.protocolType = r.protocolType
	}
	g.seq++
	m := &member{id: id, instanceID: r.instanceID, seq: g.seq}
	g.members[id] = m
	if r.instanceID != nil {
		g.static[*r.instanceID] = id
	}
	if g.leader == "" {
		g.leader = id
	}
	g.newJoins = true
	ch := gs.updateMember(g, m, r)
	if g.state == groupPreparingRebalance {
		gs.maybeCompleteJoin(g)
	} else {
		gs.prepareRebalance(g, "member "+id+" joined")
	}
	return ch
}

// updateMember takes a member's (re)join: its protocols and timeouts, and
// holds its JoinGroup.
func (gs *groups) updateMember(g *group, m *member, r joinRequest) <-chan joinResult {
	m.protocols = slices.Clone(r.protocols)
	m.session, m.rebalance = r.session, r.rebalance
	m.clientID, m.host = r.clientID, r.host
	if m.joinWait != nil {
		// The same member joined again on another connection: the older
		// request is superseded; its client, if still waiting, rejoins.
		m.joinWait <- errJoin(kerr.RebalanceInProgress.Code, m.id)
	}
	m.joinWait = make(chan joinResult, 1)
	gs.touch(g, m)
	return m.joinWait
}

// touch restarts a member's session timer.
func (gs *groups) touch(g *group, m *member) {
	m.deadline = time.Now().Add(m.session)
	if m.timer == nil {
		m.timer = time.AfterFunc(m.session, func() { gs.sessionExpired(g, m) })
		return
	}
	m.timer.Reset(m.session)
}

// sessionExpired runs from m's timer; a heartbeat since it was armed has
// moved the deadline, and a member whose JoinGroup or SyncGroup is held
// is alive by definition (Kafka's shouldKeepAlive).
func (gs *groups) sessionExpired(g *group, m *member) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if g.members[m.id] != m {
		return
	}
	now := time.Now()
	if now.Before(m.deadline) {
		m.timer.Reset(m.deadline.Sub(now))
		return
	}
	if m.joinWait != nil || m.syncWait != nil {
		m.deadline = now.Add(m.session)
		m.timer.Reset(m.session)
		return
	}
	gs.s.log.Info("fetch: group member removed: no heartbeat within its session timeout", "group", g.name, "member", m.id, "session_timeout", m.session)
	gs.removeMember(g, m, "session timeout of "+m.id)
	gs.persistAsync(g.name) // it may have left the group Empty
}

// dropMember takes m out of g without changing g's state. A held request
// of m is answered with code.
func (gs *groups) dropMember(g *group, m *member, code int16) {
	delete(g.members, m.id)
	if m.instanceID != nil && g.static[*m.instanceID] == m.id {
		delete(g.static, *m.instanceID)
	}
	if m.timer != nil {
		m.timer.Stop()
	}
	if m.joinWait != nil {
		m.joinWait <- errJoin(code, m.id)
		m.joinWait = nil
	}
	if m.syncWait != nil {
		m.syncWait <- syncResult{err: code}
		m.syncWait = nil
	}
	if g.leader == m.id {
		g.leader = ""
		if first := g.ordered(); len(first) > 0 {
			g.leader = first[0].id
		}
	}
}

// removeMember drops m (left, or session expired) and rebalances.
func (gs *groups) removeMember(g *group, m *member, reason string) {
	gs.dropMember(g, m, kerr.UnknownMemberID.Code)
	switch g.state {
	case groupStable, groupCompletingRebalance:
		gs.prepareRebalance(g, reason)
	case groupPreparingRebalance:
		gs.maybeCompleteJoin(g)
	}
}

// setState changes state and invalidates the group timer.
func (g *group) setState(s groupState) {
	g.state = s
	g.epoch++
	if g.timer != nil {
		g.timer.Stop()
		g.timer = nil
	}
}

// setTimer arms the group timer: fn runs after d unless the state or the
// timer changes first.
func (gs *groups) setTimer(g *group, d time.Duration, fn func()) {
	if g.timer != nil {
		g.timer.Stop()
	}
	g.epoch++
	epoch := g.epoch
	g.timer = time.AfterFunc(d, func() {
		gs.mu.Lock()
		defer gs.mu.Unlock()
		if g.epoch == epoch {
			fn()
			gs.persistAsync(g.name) // a rebalance may have left the group Empty
		}
	})
}

// maxRebalance is the largest rebalance timeout of the members: how long
// a rebalance waits for everyone to rejoin, and the leader to sync.
func (g *group) maxRebalance() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalance)
	}
	return d
}

// prepareRebalance starts a rebalance: members learn of it from Heartbeat
// (or their held SyncGroup) and rejoin.
func (gs *groups) prepareRebalance(g *group, reason string) {
	if g.state == groupCompletingRebalance {
		// The assignment the leader was computing is void: everyone
		// waiting for it rejoins (Kafka's resetAndPropagateAssignmentError).
		for _, m := range g.members {
			m.assignment = nil
			if m.syncWait != nil {
				m.syncWait <- syncResult{err: kerr.RebalanceInProgress.Code}
				m.syncWait = nil
			}
		}
	}
	wasEmpty := g.state == groupEmpty
	g.setState(groupPreparingRebalance)
	if wasEmpty {
		// Only a join starts a rebalance of an Empty group: join's
		// persistType writes the record before the answer.
		g.emptySince = 0
	}
	gs.s.log.Debug("fetch: group rebalancing", "group", g.name, "generation", g.generation, "reason", reason)
	rebalance := g.maxRebalance()
	if wasEmpty && gs.initialDelay > 0 {
		// Kafka's InitialDelayedJoin: a new group waits a little for more
		// members, as long as more keep coming, up to the rebalance timeout.
		g.initial = true
		g.newJoins = false
		deadline := time.Now().Add(rebalance)
		var tick func()
		tick = func() {
			if left := time.Until(deadline); g.newJoins && left > 0 {
				g.newJoins = false
				gs.setTimer(g, min(gs.initialDelay, left), tick)
				return
			}
			g.initial = false
			gs.completeJoin(g)
		}
		gs.setTimer(g, min(gs.initialDelay, rebalance), tick)
		return
	}
	g.initial = false
	gs.setTimer(g, rebalance, func() { gs.completeJoin(g) })
	gs.maybeCompleteJoin(g)
}

// maybeCompleteJoin completes the rebalance once every member has rejoined
// and no MEMBER_ID_REQUIRED id is outstanding.
func (gs *groups) maybeCompleteJoin(g *group) {
	if g.state != groupPreparingRebalance || g.initial || len(g.pending) > 0 {
		return
	}
	for _, m := range g.members {
		if m.joinWait == nil {
			return
		}
	}
	gs.completeJoin(g)
}

// completeJoin ends PreparingRebalance: members that did not rejoin are
// removed (static ones stay until their session expires, as in Kafka),
// the generation goes up and every held JoinGroup is answered.
func (gs *groups) completeJoin(g *group) {
	if g.state != groupPreparingRebalance {
		return
	}
	for _, m := range g.members {
		if m.joinWait == nil && m.instanceID == nil {
			gs.s.log.Info("fetch: group member removed: did not rejoin within the rebalance timeout", "group", g.name, "member", m.id)
			gs.dropMember(g, m, kerr.UnknownMemberID.Code)
		}
	}
	g.generation++
	if len(g.members) == 0 {
		g.protocol, g.leader, g.subscribed = "", "", nil
		g.stored = nil
		g.setState(groupEmpty)
		// Written by whoever made the group Empty once it is done:
		// LeaveGroup before its answer, a timer in the background.
		g.emptySince = gs.s.now().UnixMilli()
		return
	}
	// The leader should be a member that is here to receive the metadata.
	if l := g.members[g.leader]; l == nil || l.joinWait == nil {
		for _, m := range g.ordered() {
			if m.joinWait != nil {
				g.leader = m.id
				break
			}
		}
	}
	g.protocol = g.selectProtocol()
	g.subscribed = g.subscriptions()
	g.setState(groupCompletingRebalance)
	gs.s.log.Info("fetch: group rebalanced", "group", g.name, "generation", g.generation, "members", len(g.members), "protocol", g.protocol, "leader", g.leader)
	for _, m := range g.members {
		m.synced = false
		m.assignment = nil
		if m.joinWait != nil {
			m.joinWait <- g.currentJoin(m)
			m.joinWait = nil
			gs.touch(g, m)
		}
	}
	gs.armPendingSync(g)
}

// armPendingSync starts Kafka's pending-sync timeout for the generation
// just formed: a member that has not sent its SyncGroup within the
// rebalance timeout is removed, and the rest rebalance. It applies in
// CompletingRebalance (a leader that never syncs would leave everyone
// waiting) and in Stable (a follower that never syncs holds no
// assignment, yet would keep the group from reassigning its share for as
// long as it heartbeats).
func (gs *groups) armPendingSync(g *group) {
	if g.syncTimer != nil {
		g.syncTimer.Stop()
	}
	gen := g.generation
	g.syncTimer = time.AfterFunc(g.maxRebalance(), func() {
		gs.mu.Lock()
		defer gs.mu.Unlock()
		gs.expirePendingSync(g, gen)
		gs.persistAsync(g.name)
	})
}

// expirePendingSync runs from the pending-sync timer of generation gen.
func (gs *groups) expirePendingSync(g *group, gen int32) {
	if g.generation != gen || g.state != groupCompletingRebalance && g.state != groupStable {
		return
	}
	removed := 0
	for _, m := range g.ordered() {
		if !m.synced {
			gs.s.log.Info("fetch: group member removed: no SyncGroup within the rebalance timeout", "group", g.name, "member", m.id, "generation", gen)
			gs.dropMember(g, m, kerr.UnknownMemberID.Code)
			removed++
		}
	}
	if removed > 0 {
		gs.prepareRebalance(g, "members did not sync")
	}
}

// subscriptions are the topics the members subscribe to in the selected
// protocol, read from their consumer-protocol metadata; nil unless the
// group uses the consumer protocol and every member's metadata parses
// (Kafka's computeSubscribedTopics).
func (g *group) subscriptions() map[string]bool {
	if g.protocolType != "consumer" || g.protocol == "" {
		return nil
	}
	out := map[string]bool{}
	for _, m := range g.members {
		i := slices.IndexFunc(m.protocols, func(p kmsg.JoinGroupRequestProtocol) bool { return p.Name == g.protocol })
		if i < 0 {
			return nil
		}
		var md kmsg.ConsumerMemberMetadata
		if err := md.ReadFrom(m.protocols[i].Metadata); err != nil {
			return nil
		}
		for _, t := range md.Topics {
			out[t] = true
		}
	}
	return out
}

// sync handles a SyncGroup; like join it returns the answer or a channel
// that delivers it once the leader has sent the assignments.
func (gs *groups) sync(req *kmsg.SyncGroupRequest) (syncResult, <-chan syncResult) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if req.Group == "" {
		return syncResult{err: kerr.InvalidGroupID.Code}, nil
	}
	g := gs.byName[req.Group]
	if g == nil {
		return syncResult{err: kerr.UnknownMemberID.Code}, nil
	}
	if g.fenced(req.MemberID, req.InstanceID) {
		return syncResult{err: kerr.FencedInstanceID.Code}, nil
	}
	m := g.members[req.MemberID]
	if m == nil {
		return syncResult{err: kerr.UnknownMemberID.Code}, nil
	}
	if req.Generation != g.generation {
		return syncResult{err: kerr.IllegalGeneration.Code}, nil
	}
	if req.ProtocolType != nil && *req.ProtocolType != g.protocolType || req.Protocol != nil && *req.Protocol != g.protocol {
		return syncResult{err: kerr.InconsistentGroupProtocol.Code}, nil
	}
	switch g.state {
	case groupPreparingRebalance:
		return syncResult{err: kerr.RebalanceInProgress.Code}, nil
	case groupStable:
		m.synced = true
		gs.touch(g, m)
		return g.syncAnswer(m), nil
	case groupCompletingRebalance:
		m.synced = true
		gs.touch(g, m)
		if m.syncWait != nil {
			m.syncWait <- syncResult{err: kerr.RebalanceInProgress.Code}
		}
		m.syncWait = make(chan syncResult, 1)
		ch := m.syncWait
		if m.id == g.leader {
			for _, mm := range g.members {
				mm.assignment = []byte{}
			}
			for _, a := range req.GroupAssignment {
				if mm := g.members[a.MemberID]; mm != nil {
					mm.assignment = a.MemberAssignment
				}
			}
			g.setState(groupStable)
			// The generation is complete: its record is staged here
			// and every answer waits for its write (Kafka's storeGroup
			// before the SyncGroup responses).
			g.stored = g.snapshot()
			g.storeOp = gs.persistType(g.name)
			if op := g.storeOp; op != nil {
				gen := g.generation
				op.addUndo(func() { gs.storeFailed(g, op, gen) })
			}
			for _, mm := range g.members {
				if mm.syncWait != nil {
					mm.syncWait <- g.syncAnswer(mm)
					mm.syncWait = nil
				}
			}
		}
		return syncResult{}, ch
	}
	return syncResult{err: kerr.UnknownMemberID.Code}, nil
}

// storeFailed undoes, under gs.mu, a generation whose record (op) was
// not written, as Kafka's SyncGroup does when its storeGroup fails: the
// assignments are void, every SyncGroup waiting for them is answered the
// write's error (their handlers see op fail), and the group rebalances;
// its members learn it from their next Heartbeat or SyncGroup
// (REBALANCE_IN_PROGRESS) and rejoin. The group's record is again what
// the file holds. segfs answered the SyncGroups with their assignments
// and carried on in a generation the file did not hold.
func (gs *groups) storeFailed(g *group, op *offsetsOp, gen int32) {
	if gs.byName[g.name] != g || g.storeOp != op {
		return
	}
	g.storeOp = nil
	gs.storedFromFile(g)
	if g.generation != gen || g.state != groupStable {
		return // a rebalance has already started
	}
	for _, m := range g.members {
		m.assignment = nil
	}
	gs.s.log.Warn("fetch: group generation not written to the offsets file: rebalancing", "group", g.name, "generation", gen)
	gs.prepareRebalance(g, "the generation's record was not written")
}

// storedFromFile sets g's record of its last completed generation to the
// one the offsets file holds (none if it holds no generation), after a
// write of a newer one failed (gs.mu held).
func (gs *groups) storedFromFile(g *group) {
	g.stored = nil
	if rec, ok := gs.s.offsets.durableClassic(g.name); ok && len(rec.Members) > 0 {
		g.stored = &rec
	}
}

func (g *group) syncAnswer(m *member) syncResult {
	return syncResult{protocolType: g.protocolType, protocol: g.protocol, assignment: m.assignment, stored: g.storeOp}
}

// snapshot is the record of g's current generation (Stable): what a
// restart restores.
func (g *group) snapshot() *classicGroupMeta {
	rec := &classicGroupMeta{Generation: g.generation, ProtocolType: g.protocolType, Protocol: g.protocol, Leader: g.leader}
	for _, m := range g.ordered() {
		mm := classicMemberMeta{
			MemberID:           m.id,
			ClientID:           m.clientID,
			ClientHost:         m.host,
			SessionTimeoutMs:   m.session.Milliseconds(),
			RebalanceTimeoutMs: m.rebalance.Milliseconds(),
			Assignment:         slices.Clone(m.assignment),
		}
		if mm.Assignment == nil {
			mm.Assignment = []byte{}
		}
		if m.instanceID != nil {
			id := *m.instanceID
			mm.InstanceID = &id
		}
		for _, p := range m.protocols {
			mm.Protocols = append(mm.Protocols, classicProtoMeta{Name: p.Name, Metadata: slices.Clone(p.Metadata)})
		}
		rec.Members = append(rec.Members, mm)
	}
	return rec
}

// restoreClassics recreates, once the offsets file is loaded, the classic
// groups it records with members, as Kafka's coordinator loads a group
// from its GroupMetadata record: Stable at the stored generation, with
// its protocol, leader, members and their assignments, every member's
// session starting now. A member that heartbeats or commits in that
// generation carries on as if nothing happened; one that does not come
// back is removed when its session times out, and the others rebalance.
// A group that was rebalancing at the restart comes back at the last
// generation it completed: its members learn of the restart from
// ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID, as in Kafka, and rejoin.
func (gs *groups) restoreClassics(recs map[string]classicGroupMeta) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	for name, rec := range recs {
		if len(rec.Members) == 0 || gs.byName[name] != nil || gs.consumers[name] != nil {
			continue
		}
		g := &group{name: name, state: groupStable, generation: rec.Generation, protocolType: rec.ProtocolType,
			protocol: rec.Protocol, leader: rec.Leader, members: map[string]*member{},
			pending: map[string]*time.Timer{}, static: map[string]string{}}
		for _, mm := range rec.Members {
			if mm.MemberID == "" || g.members[mm.MemberID] != nil {
				continue
			}
			g.seq++
			m := &member{id: mm.MemberID, clientID: mm.ClientID, host: mm.ClientHost, seq: g.seq,
				session:    time.Duration(mm.SessionTimeoutMs) * time.Millisecond,
				rebalance:  time.Duration(mm.RebalanceTimeoutMs) * time.Millisecond,
				assignment: mm.Assignment, synced: true}
			if m.assignment == nil {
				m.assignment = []byte{}
			}
			if mm.InstanceID != nil {
				id := *mm.InstanceID
				m.instanceID = &id
				g.static[id] = m.id
			}
			for _, p := range mm.Protocols {
				jp := kmsg.NewJoinGroupRequestProtocol()
				jp.Name, jp.Metadata = p.Name, p.Metadata
				m.protocols = append(m.protocols, jp)
			}
			g.members[m.id] = m
		}
		if len(g.members) == 0 {
			continue
		}
		if g.members[g.leader] == nil {
			g.leader = g.ordered()[0].id
		}
		g.subscribed = g.subscriptions()
		stored := rec
		g.stored = &stored
		for _, m := range g.members {
			gs.touch(g, m)
		}
		gs.byName[name] = g
		gs.s.log.Info("fetch: classic group restored", "group", name, "generation", g.generation, "members", len(g.members), "protocol", g.protocol, "leader", g.leader)
	}
}

// heartbeat handles a Heartbeat: Kafka's checks and answers.
func (gs *groups) heartbeat(req *kmsg.HeartbeatRequest) int16 {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if req.Group == "" {
		return kerr.InvalidGroupID.Code
	}
	g := gs.byName[req.Group]
	if g == nil {
		return kerr.UnknownMemberID.Code
	}
	if g.fenced(req.MemberID, req.InstanceID) {
		return kerr.FencedInstanceID.Code
	}
	m := g.members[req.MemberID]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	if req.Generation != g.generation {
		return kerr.IllegalGeneration.Code
	}
	switch g.state {
	case groupPreparingRebalance:
		gs.touch(g, m)
		return kerr.RebalanceInProgress.Code
	case groupCompletingRebalance, groupStable:
		// Heartbeats may start right after the JoinGroup answer.
		gs.touch(g, m)
		return 0
	}
	return kerr.UnknownMemberID.Code
}

// leaveMember is one member named by a LeaveGroup.
type leaveMember struct {
	id         string
	instanceID *string
}

// leave handles a LeaveGroup: a top-level error, or one per member. A
// group the leave made Empty has its record (the time it became Empty)
// written before the answer; if it cannot be, the answer is the write's
// error.
func (gs *groups) leave(name string, ms []leaveMember) (int16, []int16) {
	gs.mu.Lock()
	code, codes := gs.leaveLocked(name, ms)
	op := gs.persistType(name)
	gs.mu.Unlock()
	if err := gs.waitPersistType(name, op); err != nil && code == 0 && slices.Contains(codes, 0) {
		// Kafka 4 answers a LeaveGroup whose record (the group Empty)
		// fails to be written with the write's error, and no member
		// answers; the members stay gone and the group Empty, as
		// Kafka keeps its classic members outside the state its
		// runtime reverts (the failure is only logged, as for a group
		// a timer left Empty): the file's older generation comes back
		// only with a restart, and its members then time out. A leave
		// that removed nobody writes nothing in Kafka and is answered
		// as it is, whatever became of the record staged with it.
		return offsetsWriteErrorCode(err), nil
	}
	return code, codes
}

// leaveLocked is leave with gs.mu held.
func (gs *groups) leaveLocked(name string, ms []leaveMember) (int16, []int16) {
	if name == "" {
		return kerr.InvalidGroupID.Code, nil
	}
	codes := make([]int16, len(ms))
	g := gs.byName[name]
	for i, lm := range ms {
		if g == nil {
			codes[i] = kerr.UnknownMemberID.Code
			continue
		}
		id := lm.id
		if lm.instanceID != nil {
			sid, ok := g.static[*lm.instanceID]
			switch {
			case !ok:
				codes[i] = kerr.UnknownMemberID.Code
				continue
			case id != "" && id != sid:
				codes[i] = kerr.FencedInstanceID.Code
				continue
			}
			id = sid
		}
		if t, ok := g.pending[id]; ok {
			t.Stop()
			delete(g.pending, id)
			gs.maybeCompleteJoin(g)
			continue
		}
		m := g.members[id]
		if m == nil {
			codes[i] = kerr.UnknownMemberID.Code
			continue
		}
		gs.removeMember(g, m, "member "+id+" left")
	}
	return 0, codes
}

// commitRequest is an OffsetCommit, independent of version, with the
// partitions that passed their own checks.
type commitRequest struct {
	group      string
	generation int32
	memberID   string
	instanceID *string
	version    int16
	entries    []commitEntry
}

// commit validates an OffsetCommit against the group (Kafka's
// ClassicGroup.validateOffsetCommit, or the offsets-only rules for a group
// without membership state) and, if it is accepted, stages its offsets in
// the same critical section: a rebalance, a member's removal or a
// DeleteGroups is then ordered entirely before the commit (which it
// refuses) or after it. The caller waits for the returned change to be
// written outside the lock: holding the coordinator's lock across an
// fsync would stall the heartbeats of every group.
func (gs *groups) commit(r commitRequest) (int16, *offsetsOp) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	code := gs.validateCommit(r)
	if code != 0 || len(r.entries) == 0 {
		return code, nil
	}
	// The group's type goes with its offsets too (persistType records
	// it when it changes; this catches a record whose write failed), so
	// that a restart finds a consumer group still one; and so does a
	// classic group's record, which the file keeps for a group with
	// offsets (a commit without a group leaves the record of a classic
	// group known only from the file as it is).
	op := thenOp(onOffsets(commitOp(r.group, r.entries)), consumerMetaOp(r.group, gs.consumers[r.group].meta()))
	if g := gs.byName[r.group]; g != nil {
		op = thenOp(op, classicMetaOp(r.group, g.record(true)))
	}
	return 0, gs.s.offsets.stage(op)
}

// record is what the offsets file keeps of g (nil: nothing): its last
// completed generation, offsets or not; otherwise, for a group with
// offsets (hasOffsets), the time it became Empty (0 while it has
// members), which its offsets' retention counts from, and the
// generation an Empty group reached.
func (g *group) record(hasOffsets bool) *classicGroupMeta {
	switch {
	case g.stored != nil:
		return g.stored
	case !hasOffsets:
		return nil
	case g.state == groupEmpty:
		return &classicGroupMeta{EmptySinceMs: g.emptySince, Generation: g.generation}
	}
	return &classicGroupMeta{}
}

// validateCommit is commit's check; gs.mu is held.
//
// The empty group id is a group like any other here: Kafka 4's
// GroupCoordinatorService.commitOffsets refuses only a null one ("for
// backwards compatibility"), so a simple commit (generation -1) to ""
// is stored, and one naming a generation is refused as for any group
// nobody joined. segfs answered INVALID_GROUP_ID. JoinGroup, SyncGroup,
// Heartbeat, LeaveGroup and OffsetDelete refuse "" as Kafka does.
func (gs *groups) validateCommit(r commitRequest) int16 {
	if cg := gs.consumers[r.group]; cg != nil {
		// Unlike a classic member's, a consumer group member's commit does
		// not extend its session: only heartbeats do, as in Kafka.
		return cg.validateCommit(r)
	}
	g := gs.byName[r.group]
	if g == nil {
		if r.generation < 0 {
			return 0
		}
		switch {
		case gs.s.offsets.hasGroupStaged(r.group):
			return kerr.UnknownMemberID.Code
		case r.version >= 9:
			return kerr.GroupIDNotFound.Code
		}
		return kerr.IllegalGeneration.Code
	}
	if g.fenced(r.memberID, r.instanceID) {
		return kerr.FencedInstanceID.Code
	}
	if r.generation < 0 && g.state == groupEmpty {
		// A consumer with manual assignment (or an admin tool) commits
		// into a group nobody is a member of.
		return 0
	}
	m := g.members[r.memberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code
	case r.generation != g.generation:
		return kerr.IllegalGeneration.Code
	case g.state == groupCompletingRebalance:
		// The member has its new generation but not its assignment yet.
		return kerr.RebalanceInProgress.Code
	}
	// Commits during PreparingRebalance are allowed: members commit
	// before they rejoin. A commit is a sign of life, as in Kafka.
	gs.touch(g, m)
	return 0
}

// deleteGroup is DeleteGroups for one group (Kafka's
// validateDeleteGroup): only a group without members goes, with its
// membership state, its committed offsets and, for a consumer group, its
// record in the offsets file. The offsets' removal is
// staged under the lock, so no commit or join can slip between the check
// and the deletion; the caller waits for it outside the lock.
//
// The empty group id can be deleted like any other (its offsets come from
// simple commits, validateCommit): Kafka 4's
// GroupCoordinatorService.deleteGroups refuses only a null one.
func (gs *groups) deleteGroup(name string) (int16, *offsetsOp) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	g := gs.byName[name]
	cg := gs.consumers[name]
	hasOffsets := gs.s.offsets.hasGroupStaged(name)
	if g == nil && cg == nil && !hasOffsets {
		return kerr.GroupIDNotFound.Code, nil
	}
	if cg != nil {
		if len(cg.members) > 0 {
			return kerr.NonEmptyGroup.Code, nil
		}
		gs.forgetConsumer(cg)
	}
	if g != nil {
		if g.state != groupEmpty {
			return kerr.NonEmptyGroup.Code, nil
		}
		gs.forget(g)
	}
	gs.s.log.Info("fetch: group deleted", "group", name)
	// A group's record goes with it, offsets or not, so that a restart
	// does not bring it back.
	_, recorded := gs.s.offsets.consumerMetaStaged(name)
	_, classic := gs.s.offsets.staged().classics[name]
	if !hasOffsets && !recorded && !classic {
		return 0, nil
	}
	op := gs.s.offsets.stage(thenOp(thenOp(onOffsets(deleteGroupOp(name)), consumerMetaOp(name, nil)), classicMetaOp(name, nil)))
	// Not deleted from the file, not deleted: the group is back in
	// memory as the file holds it (Kafka's runtime reverts its state).
	// segfs forgot it anyway: it was unknown (a retried DeleteGroups
	// answered GROUP_ID_NOT_FOUND) until a restart brought it back.
	op.addUndo(func() {
		if gs.byName[name] != nil || gs.consumers[name] != nil {
			return // a member joined meanwhile
		}
		if cg != nil {
			gs.revertConsumer(name)
		}
		if g != nil {
			gs.byName[name] = g // Empty, as it was
		}
	})
	return 0, op
}

// forget drops an Empty group's membership state: it is Dead, and a later
// join starts a new group at generation 0. Its timers find nothing to do.
func (gs *groups) forget(g *group) {
	for id, t := range g.pending {
		t.Stop()
		delete(g.pending, id)
	}
	g.setState(groupEmpty)
	if g.syncTimer != nil {
		g.syncTimer.Stop()
	}
	delete(gs.byName, g.name)
}

// deleteOffsets is OffsetDelete (Kafka's OffsetMetadataManager.deleteOffsets):
// a group-level error, or one code per requested partition, and the
// staged removal of the partitions' offsets. A group with members keeps
// the offsets of the topics its current generation subscribes to
// (GROUP_SUBSCRIBED_TO_TOPIC); one with members whose subscriptions are
// unknown (not the consumer protocol) keeps all (NON_EMPTY_GROUP).
func (gs *groups) deleteOffsets(name string, topics []kmsg.OffsetDeleteRequestTopic) (int16, [][]int16, *offsetsOp) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if name == "" {
		return kerr.InvalidGroupID.Code, nil, nil
	}
	g := gs.byName[name]
	cg := gs.consumers[name]
	if g == nil && cg == nil && !gs.s.offsets.hasGroupStaged(name) {
		return kerr.GroupIDNotFound.Code, nil, nil
	}
	if g != nil && g.state != groupEmpty && g.protocolType != "consumer" {
		return kerr.NonEmptyGroup.Code, nil, nil
	}
	var subscribed map[string]bool
	switch {
	case g != nil && g.state != groupEmpty:
		subscribed = g.subscribed
	case cg != nil && len(cg.members) > 0:
		subscribed = gs.consumerSubscribed(cg)
	}
	codes := make([][]int16, len(topics))
	var tps []topicPartition
	for i, t := range topics {
		codes[i] = make([]int16, len(t.Partitions))
		for j, p := range t.Partitions {
			if subscribed[t.Topic] {
				codes[i][j] = kerr.GroupSubscribedToTopic.Code
				continue
			}
			tps = append(tps, topicPartition{t.Topic, p.Partition})
		}
	}
	if g == nil && cg == nil {
		// A group of commits only (Kafka's simple group, made by an
		// admin or group-less commit): Kafka keeps it, Empty, after
		// its offsets are deleted, until the expiry check removes an
		// Empty group without offsets; it stays listed, described and
		// deletable till then. segfs knew it from its offsets alone,
		// and it vanished with the last one (DeleteGroups answered
		// GROUP_ID_NOT_FOUND). Held here as an Empty classic group with
		// no protocol type; its remaining offsets still expire from
		// their commits (emptySince 0), as a simple group's do.
		g = &group{name: name, members: map[string]*member{}, pending: map[string]*time.Timer{}, static: map[string]string{}}
		if rec, ok := gs.s.offsets.staged().classics[name]; ok {
			// A classic group known from the file (its members gone
			// at a restart): as it was recorded.
			g.emptySince, g.generation, g.protocolType = rec.EmptySinceMs, rec.Generation, rec.ProtocolType
		}
		gs.byName[name] = g
	}
	if len(tps) == 0 {
		return 0, codes, nil
	}
	return 0, codes, gs.s.offsets.stage(onOffsets(deletePartitionsOp(name, tps)))
}

// describe is DescribeGroups' view of one group, as Kafka's
// GroupMetadata.summary: members with their metadata and assignment only
// when Stable. A group that has only committed offsets is Empty; one that
// does not exist is Dead.
func (gs *groups) describe(name string) kmsg.DescribeGroupsResponseGroup {
	d := kmsg.NewDescribeGroupsResponseGroup()
	d.Group = name
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if gs.consumers[name] != nil {
		// A KIP-848 consumer group is not a classic group: Kafka's
		// describeGroups looks the name up as one (classicGroup), fails,
		// and answers Dead with nothing else, as for an unknown group
		// (v6 would add GROUP_ID_NOT_FOUND "Group ... is not a classic
		// group."). Admin clients describe it with ConsumerGroupDescribe.
		// segfs answered it as a classic group: its state, protocol type
		// "consumer", the assignor as protocol and the members.
		d.State = "Dead"
		return d
	}
	g := gs.byName[name]
	if g == nil {
		d.State = "Dead"
		if gs.s.offsets.hasGroup(name) {
			d.State = groupEmpty.String()
		}
		return d
	}
	d.State, d.ProtocolType = g.state.String(), g.protocolType
	if g.state == groupStable {
		d.Protocol = g.protocol
	}
	for _, m := range g.ordered() {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.ClientID, dm.ClientHost = m.id, m.instanceID, m.clientID, m.host
		if g.state == groupStable {
			for _, p := range m.protocols {
				if p.Name == g.protocol {
					dm.ProtocolMetadata = p.Metadata
					break
				}
			}
			dm.MemberAssignment = m.assignment
		}
		d.Members = append(d.Members, dm)
	}
	return d
}

// list is ListGroups: every group with membership state or committed
// offsets, sorted by name.
func (gs *groups) list() []kmsg.ListGroupsResponseGroup {
	names := gs.s.offsets.groupNames()
	gs.mu.Lock()
	defer gs.mu.Unlock()
	for name := range gs.byName {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	for name := range gs.consumers {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	out := make([]kmsg.ListGroupsResponseGroup, 0, len(names))
	for _, name := range names {
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.GroupState, lg.GroupType = name, groupEmpty.String(), "classic"
		if g := gs.byName[name]; g != nil {
			lg.ProtocolType, lg.GroupState = g.protocolType, g.state.String()
		}
		if cg := gs.consumers[name]; cg != nil {
			lg.ProtocolType, lg.GroupState, lg.GroupType = "consumer", cg.state(), "consumer"
		}
		out = append(out, lg)
	}
	return out
}
