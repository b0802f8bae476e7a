package fetch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/segfs/segfs/logstore"
)

// OffsetsFile holds committed consumer-group offsets in the data directory.
// The name is segfs's own (Kafka keeps them in the __consumer_offsets
// topic), so Kafka's tools never mistake it for a partition directory.
const OffsetsFile = "segfs-consumer-offsets.json"

// offsetsFileVersion is bumped on incompatible changes of the file.
const offsetsFileVersion = 1

// committedOffset is one committed position of a group in a partition.
// CommitTimeMs is when it was committed (or the explicit time of an
// OffsetCommit v1), which its retention counts from (expiry.go).
// ExpireTimeMs is the explicit expiry an OffsetCommit v2-v4 asked for
// with its retention time, Kafka's expire timestamp; 0 is none (an
// explicit expiry is at least 1, long past, when asked for one before
// 1970). Both were added without a version bump: every file segfs wrote
// has commit_time_ms, and an older segfs ignores expire_time_ms.
type committedOffset struct {
	Offset       int64  `json:"offset"`
	LeaderEpoch  int32  `json:"leader_epoch"`
	Metadata     string `json:"metadata"`
	CommitTimeMs int64  `json:"commit_time_ms"`
	ExpireTimeMs int64  `json:"expire_time_ms,omitempty"`
}

// commitTimeUnknown marks, while a file is loaded, an offset whose entry
// has no commit_time_ms (a file written by hand or by another tool: segfs
// always wrote it). load gives it the load time.
const commitTimeUnknown = math.MinInt64

// UnmarshalJSON tells a missing commit_time_ms from an explicit 0.
func (c *committedOffset) UnmarshalJSON(b []byte) error {
	type plain committedOffset // without this method
	p := plain{CommitTimeMs: commitTimeUnknown}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*c = committedOffset(p)
	return nil
}

// consumerGroupMeta is what the file keeps of a KIP-848 consumer group
// (group type "consumer"), as Kafka keeps its ConsumerGroupMetadata (the
// group epoch), target assignment metadata (the assignment epoch) and
// partition metadata records in __consumer_offsets, written when the
// group is created and whenever either epoch changes: without it, a
// restart turned an empty consumer group into a classic one (ListGroups
// type "classic", ConsumerGroupDescribe "not a consumer group") until a
// member heartbeated again, and forgot a group that never committed an
// offset.
//
// Members are the group's members, sorted by id, as Kafka keeps each in
// its ConsumerGroupMemberMetadata, ConsumerGroupTargetAssignmentMember
// and ConsumerGroupCurrentMemberAssignment records: written whenever one
// of them changes (a join, a leave or fence, a subscription, a new target,
// a member's epoch, state or partitions), before the heartbeat that
// changed it is answered, and not at a heartbeat that changes nothing. At
// load the group comes back with them, at their epochs, each session
// starting then (groups.restoreConsumers), so they carry on without
// rejoining. Metadata is the fingerprint of the subscribed topics'
// metadata the target was computed from (Kafka's
// ConsumerGroupPartitionMetadata), so that the first heartbeat after a
// restart does not take unchanged topics for a change and start a new
// epoch. Both were added without a version bump: an older file has
// neither, and its groups load Empty at their epochs, as they did; an
// older segfs ignores them.
type consumerGroupMeta struct {
	Epoch           int32                `json:"epoch"`
	AssignmentEpoch int32                `json:"assignment_epoch"`
	Metadata        string               `json:"subscription_metadata,omitempty"`
	Members         []consumerMemberMeta `json:"members,omitempty"`
}

// consumerMemberMeta is one member of a consumer group: its metadata, its
// current assignment and its target assignment. State is Kafka's
// MemberState name (STABLE, UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS).
// Empty lists are left out (nil), so that a record built from memory and
// one read back compare equal.
type consumerMemberMeta struct {
	MemberID            string           `json:"member_id"`
	InstanceID          *string          `json:"instance_id,omitempty"`
	RackID              *string          `json:"rack_id,omitempty"`
	ClientID            string           `json:"client_id"`
	ClientHost          string           `json:"client_host"`
	RebalanceTimeoutMs  int64            `json:"rebalance_timeout_ms"`
	ServerAssignor      string           `json:"server_assignor,omitempty"`
	SubscribedTopics    []string         `json:"subscribed_topic_names,omitempty"`
	SubscribedRegex     string           `json:"subscribed_topic_regex,omitempty"`
	MemberEpoch         int32            `json:"member_epoch"`
	PreviousMemberEpoch int32            `json:"previous_member_epoch"`
	State               string           `json:"state"`
	Assigned            []topicPartsMeta `json:"assigned_partitions,omitempty"`
	PendingRevocation   []topicPartsMeta `json:"partitions_pending_revocation,omitempty"`
	Target              []topicPartsMeta `json:"target_assignment,omitempty"`
}

// topicPartsMeta is the partitions of one topic, named by its ID in hex,
// as KIP-848 names topics.
type topicPartsMeta struct {
	TopicID    string  `json:"topic_id"`
	Partitions []int32 `json:"partitions"`
}

// classicGroupMeta is what the file keeps of a classic group (one that
// members joined with JoinGroup), as Kafka keeps its GroupMetadata record
// in __consumer_offsets.
//
// EmptySinceMs is Kafka's currentStateTimestamp of an Empty group, which
// its offsets' retention counts from (expiry.go): when the group became
// Empty, 0 while it has members. An Empty group's record (with the
// generation it reached) is kept for a group with committed offsets only
// (a group without any has nothing to expire), written when the group
// becomes Empty and when its first member joins.
//
// Generation, ProtocolType, Protocol, Leader and Members are the group's
// membership as of its last completed generation: written, offsets or
// not, when the leader's SyncGroup hands out a generation's assignments
// and when a static member's rejoin replaces a member id in a Stable
// group, as Kafka stores the group then, and nowhere else: not at
// heartbeats, not when a rebalance starts. A group whose members all
// leave gets the Empty record (or none, without offsets). A record with
// members is loaded as a Stable group with those members, so that their
// heartbeats and commits in that generation go on being accepted after a
// restart (groups.restoreClassics); a group that was rebalancing comes
// back at the last generation it completed, as in Kafka. A record with
// neither members nor EmptySinceMs (the group had members but had not
// completed a generation, or an older segfs wrote it) is Empty from the
// load. These fields were added without a version bump: an older file
// has none and loads as it did, and an older segfs ignores them.
type classicGroupMeta struct {
	EmptySinceMs int64               `json:"empty_since_ms,omitempty"`
	Generation   int32               `json:"generation,omitempty"`
	ProtocolType string              `json:"protocol_type,omitempty"`
	Protocol     string              `json:"protocol,omitempty"`
	Leader       string              `json:"leader,omitempty"`
	Members      []classicMemberMeta `json:"members,omitempty"`
}

// classicMemberMeta is one member of a stored generation, in join order.
// Protocols are every protocol the member joined with, not only the
// selected one Kafka keeps: a member rejoining unchanged after a restart
// then gets the current generation instead of a rebalance. Metadata and
// assignment are base64 in the JSON.
type classicMemberMeta struct {
	MemberID           string             `json:"member_id"`
	InstanceID         *string            `json:"instance_id,omitempty"`
	ClientID           string             `json:"client_id"`
	ClientHost         string             `json:"client_host"`
	SessionTimeoutMs   int64              `json:"session_timeout_ms"`
	RebalanceTimeoutMs int64              `json:"rebalance_timeout_ms"`
	Protocols          []classicProtoMeta `json:"protocols"`
	Assignment         []byte             `json:"assignment"`
}

// classicProtoMeta is one protocol a member supports, with its metadata.
type classicProtoMeta struct {
	Name     string `json:"name"`
	Metadata []byte `json:"metadata"`
}

// offsetsFileData is the file's JSON document. ConsumerGroups lists the
// consumer groups, with offsets or not; ClassicGroups the classic groups
// with a completed generation, and those with offsets that members joined
// (a group with offsets in neither is a simple group: commits without
// membership). A file written before segfs
// kept them has none, and one written before segfs kept consumer groups
// without offsets lists only those with some: both load as they did (a
// classic group without a record expires its offsets by commit time, as
// Kafka does for a group whose record has no state timestamp). An older
// segfs reading a newer file ignores the fields, or the groups without
// offsets in it, and sees what it always did, so the version stays.
type offsetsFileData struct {
	Version        int                                             `json:"version"`
	Groups         map[string]map[string]map[int32]committedOffset `json:"groups"`
	ConsumerGroups map[string]consumerGroupMeta                    `json:"consumer_groups,omitempty"`
	ClassicGroups  map[string]classicGroupMeta                     `json:"classic_groups,omitempty"`
}

// offsetsMap is group → topic → partition → offset. A map once published
// in offsetStore is never modified: changes copy what they touch.
type offsetsMap = map[string]map[string]map[int32]committedOffset

// offsetsState is what the file holds: the offsets, the consumer groups
// and the classic groups' records. Like offsetsMap, a published state is
// never modified.
type offsetsState struct {
	groups    offsetsMap
	consumers map[string]consumerGroupMeta
	classics  map[string]classicGroupMeta
}

// onOffsets lifts a change of the offsets to one of the state. A
// consumer group's record does not go with its offsets: the group exists
// until DeleteGroups (or a classic member's join) removes it, offsets or
// not, as it does in memory.
func onOffsets(f func(offsetsMap) offsetsMap) func(offsetsState) offsetsState {
	return func(st offsetsState) offsetsState {
		st.groups = f(st.groups)
		return st
	}
}

// consumerMetaOp is the change that records group's type: a consumer
// group with meta, or, with nil, none (a classic group, or no group).
func consumerMetaOp(group string, meta *consumerGroupMeta) func(offsetsState) offsetsState {
	return func(st offsetsState) offsetsState {
		old, had := st.consumers[group]
		switch {
		case meta == nil && !had:
			return st
		case meta != nil && had && reflect.DeepEqual(old, *meta):
			return st
		}
		st.consumers = maps.Clone(st.consumers)
		if st.consumers == nil {
			st.consumers = map[string]consumerGroupMeta{}
		}
		if meta == nil {
			delete(st.consumers, group)
		} else {
			st.consumers[group] = *meta
		}
		return st
	}
}

// classicMetaOp is the change that sets group's classic group record to
// meta, or, with nil, removes it.
func classicMetaOp(group string, meta *classicGroupMeta) func(offsetsState) offsetsState {
	return func(st offsetsState) offsetsState {
		old, had := st.classics[group]
		switch {
		case meta == nil && !had:
			return st
		case meta != nil && had && reflect.DeepEqual(old, *meta):
			return st
		}
		st.classics = maps.Clone(st.classics)
		if st.classics == nil {
			st.classics = map[string]classicGroupMeta{}
		}
		if meta == nil {
			delete(st.classics, group)
		} else {
			st.classics[group] = *meta
		}
		return st
	}
}

// thenOp is a followed by b, as one change.
func thenOp(a, b func(offsetsState) offsetsState) func(offsetsState) offsetsState {
	return func(st offsetsState) offsetsState { return b(a(st)) }
}

// offsetStore keeps committed offsets in memory and persists every change
// before acknowledging it: the whole map is written with
// logstore.WriteFileAtomic (temp file, fsync, rename, fsync of the
// directory), so a crash leaves either the old or the new file. Commits
// are rare (clients commit every few seconds), so rewriting the file each
// time costs less than the complexity of a log.
//
// A change happens in two steps, so that the group coordinator can order
// it against membership without waiting for the disk:
//
//   - stage applies it to latest, the map with every change accepted so
//     far, and queues it. It takes only mu and does no I/O: the
//     coordinator calls it under its own lock, in the same critical
//     section that validated the change, so a commit and a rebalance are
//     ordered one way or the other, never interleaved.
//   - wait writes the file (every change queued by then, in one write),
//     then publishes the written map as durable and reports the outcome.
//     It takes writeMu, which only serialises writers, across the fsync;
//     neither the coordinator's lock nor mu is held meanwhile, so
//     heartbeats and joins of every group carry on.
//
// Readers (OffsetFetch, ListGroups, DescribeGroups) first settle (wait
// for whatever is queued) and then read durable: they see every change
// acknowledged before they asked and nothing a restart could lose.
//
// If a write fails (a full disk, a read-only or shut-down filesystem, an
// I/O error), every change in it fails, and so does every change queued
// since: the coordinator decided those on a state that held the failed
// ones (a member's heartbeat answered from a group epoch that is not on
// disk, a commit validated against a generation that is not), as Kafka's
// coordinator runtime fails a failed batch and reverts its state to the
// last written one, on which later operations then run. latest goes back
// to durable, and each failed change's undo runs with the coordinator's
// lock (lock) held, in the same critical section, so the coordinator
// puts back in memory what the file holds before anyone decides on it
// again. Nothing failed was ever visible to a reader.
type offsetStore struct {
	path string
	// writeFile writes the file (logstore.WriteFileAtomic); tests
	// replace it to make writes fail.
	writeFile func(path string, b []byte) error
	// lock is the coordinator's lock (groups.mu), taken when a write
	// fails to run the failed changes' undo. Lock order: writeMu, lock,
	// mu.
	lock sync.Locker

	writeMu sync.Mutex // held across a file write; never taken under mu or groups.mu

	mu      sync.Mutex
	durable offsetsState // what the file holds
	latest  offsetsState // durable with every queued change applied
	queue   []*offsetsOp // staged, not yet written, in order

	writes atomic.Int64 // files written, for tests
}

// offsetsOp is one staged change.
type offsetsOp struct {
	apply func(offsetsState) offsetsState // returns a changed copy
	// undo, if set, puts back in the coordinator's memory what the file
	// holds if the change fails. It is set under the coordinator's lock
	// in the critical section that staged the change, and runs under
	// that lock, after latest went back to durable.
	undo func()
	done chan struct{} // closed once written (or failed)
	err  error
}

func newOffsetStore(dir string) *offsetStore {
	return &offsetStore{
		path:      filepath.Join(dir, OffsetsFile),
		writeFile: logstore.WriteFileAtomic,
		durable:   offsetsState{groups: offsetsMap{}},
		latest:    offsetsState{groups: offsetsMap{}},
	}
}

// load reads the file; a missing file is an empty store. now is the load
// time, given to what the file lacks a time for: an offset without a
// commit time, and a classic group recorded as having members without
// them (it had not completed a generation: it is Empty from now on). fixed reports that it did,
// so the caller writes the file once: the next restart then finds those
// times, instead of giving them its own load time again, which would put
// the expiry off at every restart.
func (o *offsetStore) load(now int64) (fixed bool, err error) {
	b, err := os.ReadFile(o.path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("committed offsets: %w", err)
	}
	var d offsetsFileData
	if err := json.Unmarshal(b, &d); err != nil {
		return false, fmt.Errorf("committed offsets: %s: %w", o.path, err)
	}
	if d.Version != offsetsFileVersion {
		return false, fmt.Errorf("committed offsets: %s: unknown version %d", o.path, d.Version)
	}
	for _, topics := range d.Groups {
		for _, parts := range topics {
			for p, c := range parts {
				if c.CommitTimeMs == commitTimeUnknown {
					c.CommitTimeMs, fixed = now, true
					parts[p] = c
				}
			}
		}
	}
	for g, c := range d.ClassicGroups {
		if c.EmptySinceMs == 0 && len(c.Members) == 0 {
			// Members joined, no generation completed: Empty since now.
			c.EmptySinceMs, fixed = now, true
			d.ClassicGroups[g] = c
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	st := offsetsState{groups: d.Groups, consumers: d.ConsumerGroups, classics: d.ClassicGroups}
	if st.groups == nil {
		st.groups = offsetsMap{}
	}
	o.durable, o.latest = st, st
	return fixed, nil
}

// rewrite writes the file as it is (after load fixed times in it).
func (o *offsetStore) rewrite() error {
	return o.wait(o.stage(func(st offsetsState) offsetsState { return st }))
}

// stage applies a change to latest and queues it for the next write. It
// does no I/O; the caller then calls wait.
func (o *offsetStore) stage(apply func(offsetsState) offsetsState) *offsetsOp {
	op := &offsetsOp{apply: apply, done: make(chan struct{})}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.latest = apply(o.latest)
	o.queue = append(o.queue, op)
	return op
}

// wait returns once op is on disk, or failed to get there. Whoever holds
// writeMu writes everything queued so far, so concurrent changes share
// one fsync.
func (o *offsetStore) wait(op *offsetsOp) error {
	o.writeMu.Lock()
	defer o.writeMu.Unlock()
	select {
	case <-op.done:
		return op.err
	default:
	}
	o.mu.Lock()
	batch, snap := o.queue, o.latest
	o.queue = nil
	o.mu.Unlock()

	b, err := json.MarshalIndent(offsetsFileData{Version: offsetsFileVersion, Groups: snap.groups, ConsumerGroups: snap.consumers, ClassicGroups: snap.classics}, "", " ")
	if err == nil {
		err = o.writeFile(o.path, b)
	}
	if err == nil {
		o.writes.Add(1)
		o.mu.Lock()
		o.durable = snap
		o.mu.Unlock()
	} else {
		err = fmt.Errorf("committed offsets: %w", err)
		batch = o.fail(batch)
	}
	for _, q := range batch {
		q.err = err
		close(q.done)
	}
	return op.err
}

// addUndo adds fn to what op's failure undoes (the coordinator's lock
// held, as in the critical section that staged op).
func (op *offsetsOp) addUndo(fn func()) {
	if prev := op.undo; prev != nil {
		op.undo = func() { fn(); prev() } // the last change first
		return
	}
	op.undo = fn
}

// fail handles a failed write of batch: it and every change queued since
// fail, latest goes back to durable, and their undo runs, last change
// first, all under the coordinator's lock (see offsetStore). It returns
// the failed changes.
func (o *offsetStore) fail(batch []*offsetsOp) []*offsetsOp {
	if o.lock != nil {
		o.lock.Lock()
		defer o.lock.Unlock()
	}
	o.mu.Lock()
	failed := append(batch, o.queue...)
	o.queue = nil
	o.latest = o.durable
	o.mu.Unlock()
	// The last change is undone first, so each undo finds the state its
	// change left (a static member's id replaced twice goes back to the
	// first id).
	for i := len(failed) - 1; i >= 0; i-- {
		if u := failed[i].undo; u != nil {
			u()
		}
	}
	return failed
}

// last is the change staged last, not yet written (nil: none). Waiting
// for it (settle) waits for every change staged before it.
func (o *offsetStore) last() *offsetsOp {
	o.mu.Lock()
	defer o.mu.Unlock()
	if n := len(o.queue); n > 0 {
		return o.queue[n-1]
	}
	return nil
}

// durableConsumer is group's consumer group record as the file holds it
// (false: none).
func (o *offsetStore) durableConsumer(group string) (consumerGroupMeta, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	m, ok := o.durable.consumers[group]
	return m, ok
}

// durableClassic is group's classic group record as the file holds it
// (false: none).
func (o *offsetStore) durableClassic(group string) (classicGroupMeta, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	m, ok := o.durable.classics[group]
	return m, ok
}

// settle waits until every change staged so far is written (or failed),
// so that a reader sees what was acknowledged before it asked.
func (o *offsetStore) settle() {
	if last := o.last(); last != nil {
		o.wait(last)
	}
}

// commitEntry is one offset to store.
type commitEntry struct {
	topic     string
	partition int32
	offset    committedOffset
}

// commit stores entries for group and waits until they are durable. On a
// write error nothing changes, in memory either, so readers never see an
// offset that a restart would lose.
func (o *offsetStore) commit(group string, entries []commitEntry) error {
	if len(entries) == 0 {
		return nil
	}
	return o.wait(o.stage(onOffsets(commitOp(group, entries))))
}

// commitOp is the change that stores entries for group.
func commitOp(group string, entries []commitEntry) func(offsetsMap) offsetsMap {
	return func(m offsetsMap) offsetsMap {
		next := maps.Clone(m)
		topics := maps.Clone(next[group])
		if topics == nil {
			topics = map[string]map[int32]committedOffset{}
		}
		cloned := map[string]bool{}
		for _, e := range entries {
			if !cloned[e.topic] {
				cloned[e.topic] = true
				parts := maps.Clone(topics[e.topic])
				if parts == nil {
					parts = map[int32]committedOffset{}
				}
				topics[e.topic] = parts
			}
			topics[e.topic][e.partition] = e.offset
		}
		next[group] = topics
		return next
	}
}

// deleteGroupOp is the change that forgets every offset of group
// (DeleteGroups).
func deleteGroupOp(group string) func(offsetsMap) offsetsMap {
	return func(m offsetsMap) offsetsMap {
		if _, ok := m[group]; !ok {
			return m
		}
		next := maps.Clone(m)
		delete(next, group)
		return next
	}
}

// topicPartition names one partition.
type topicPartition struct {
	topic     string
	partition int32
}

// deletePartitionsOp is the change that forgets group's offsets of tps
// (OffsetDelete). A group left without offsets is gone from the file.
func deletePartitionsOp(group string, tps []topicPartition) func(offsetsMap) offsetsMap {
	return func(m offsetsMap) offsetsMap {
		topics := maps.Clone(m[group])
		for _, tp := range tps {
			parts, ok := topics[tp.topic]
			if !ok {
				continue
			}
			if _, ok := parts[tp.partition]; !ok {
				continue
			}
			parts = maps.Clone(parts)
			delete(parts, tp.partition)
			if len(parts) == 0 {
				delete(topics, tp.topic)
			} else {
				topics[tp.topic] = parts
			}
		}
		next := maps.Clone(m)
		if len(topics) == 0 {
			delete(next, group)
		} else {
			next[group] = topics
		}
		return next
	}
}

// hasGroup reports whether group has committed offsets: the group exists,
// as Kafka's simple group created by its first commit does. It reads
// durable state: callers settle first.
func (o *offsetStore) hasGroup(group string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.durable.groups[group]) > 0
}

// hasGroupStaged is hasGroup including changes not yet written: what the
// coordinator decides on, under its lock, in the order it stages changes.
func (o *offsetStore) hasGroupStaged(group string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.latest.groups[group]) > 0
}

// get returns the committed offset of group in topic/partition.
func (o *offsetStore) get(group, topic string, partition int32) (committedOffset, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	c, ok := o.durable.groups[group][topic][partition]
	return c, ok
}

// topics returns the topics group has committed offsets for, sorted, with
// their partitions sorted.
func (o *offsetStore) topics(group string) map[string][]int32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string][]int32{}
	for t, parts := range o.durable.groups[group] {
		out[t] = slices.Sorted(maps.Keys(parts))
	}
	return out
}

// groupNames returns the groups that have committed offsets.
func (o *offsetStore) groupNames() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for g, topics := range o.durable.groups {
		if len(topics) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// consumerMetaStaged is group's consumer group record including changes
// not yet written (false: none, a classic group or no group).
func (o *offsetStore) consumerMetaStaged(group string) (consumerGroupMeta, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	m, ok := o.latest.consumers[group]
	return m, ok
}

// staged is the state with every change staged so far (not necessarily
// written): what the coordinator decides on, under its lock. Its maps
// are never modified, so the caller reads them after o.mu is let go.
func (o *offsetStore) staged() offsetsState {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.latest
}

// classicGroups returns the classic groups the file records (read once
// loaded, to restore those with members).
func (o *offsetStore) classicGroups() map[string]classicGroupMeta {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.durable.classics)
}

// consumerGroups returns the consumer groups the file records (read once
// loaded, to restore them).
func (o *offsetStore) consumerGroups() map[string]consumerGroupMeta {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.durable.consumers)
}
