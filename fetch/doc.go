// Package fetch is segfs's fetch server: a single-node Kafka broker over a
// logstore data directory.
//
// # Protocol
//
// Requests are decoded and responses encoded with
// github.com/twmb/franz-go/pkg/kmsg. The advertised API keys and version
// ranges live in one table (apis.go), from which ApiVersions is built, so
// the server never advertises what it does not serve, with one exception
// Kafka 4.0 makes too: Produce is listed from v0 although v0-v2 are
// refused, because librdkafka before 2.10 compresses only for brokers that
// list v0 (00_produce.go). One file per API,
// named by key as in franz-go's kfake (00_produce.go, 01_fetch.go, ...),
// opens with a comment on versions and behaviour.
//
// # Leader epochs
//
// The server is the leader of every partition, and each open of a
// partition is a new leader epoch (logstore/epochs.go), as a Kafka
// broker's restart is. Metadata answers it, batches carry it, Fetch,
// ListOffsets and OffsetForLeaderEpoch fence requests made with another
// (FENCED_LEADER_EPOCH for an older one: the client refreshes its
// metadata), and OffsetForLeaderEpoch (23_offset_for_leader_epoch.go)
// answers where an epoch ends, by which kgo and librdkafka 2.1+ consumers
// resuming from a committed offset detect a log truncated under them.
//
// # Zero copy
//
// A Fetch response is encoded by kmsg with a unique marker in place of each
// partition's record set; the encoder then cuts the output at the markers
// and sends the record bytes straight from the segment files with
// sendfile(2) at an explicit file offset (sendfile.go), so the shared
// *os.File position is never used and no record byte passes through user
// space. Only the few bytes of each records size prefix are written by
// hand (fetch_response.go).
//
// # Connections
//
// Each connection is served by one goroutine that reads a frame, handles
// it, and writes the response, in order, as Kafka does (clients that want
// concurrency open more connections). A long-poll Fetch blocks only its
// connection. Frames are read into buffers sized by the bytes that actually
// arrived, so a hostile size prefix costs nothing and an idle connection
// holds no buffer at all. A response that moves no byte to its client for
// Config.MaxWriteIdle (Kafka's connections.max.idle.ms, 10 minutes) closes
// the connection, so a client that stops reading does not hold its
// goroutine and the segment files of its Fetch forever.
//
// # Transactions
//
// segfs writes no transactions: transactional Produce is refused. A data
// directory copied from a Kafka broker may still hold transactional batches,
// COMMIT/ABORT control batches and .txnindex files. For read_committed
// fetches the partition's aborted transactions, read from those .txnindex
// files when the partition loads (logstore/txnindex.go), fill each
// partition's AbortedTransactions, so consumers drop the aborted records;
// read_uncommitted fetches get an empty list, as always. The last stable
// offset equals the high watermark, except when the directory holds a
// transaction left open (no marker; found at load from the producer
// snapshot and the log after it, or from the log start without a
// snapshot after an unclean shutdown, logstore/producer.go): then it stays at
// that transaction's first offset, and read_committed Fetch and ListOffsets
// stop there, as in Kafka. segfs has no transaction coordinator to time
// it out, and Kafka's partition leader never ends one by itself either:
// as on Kafka, an operator finds it with `kafka-transactions.sh
// find-hanging` or `describe-producers` and ends it with `abort`
// (KIP-664). DescribeProducers (61_describe_producers.go) lists each
// partition's producers with the start offset of their ongoing
// transaction. ListTransactions (66_list_transactions.go) and
// DescribeTransactions (65_describe_transactions.go) answer as a
// transaction coordinator that knows no transactional id: an empty list,
// TRANSACTIONAL_ID_NOT_FOUND; find-hanging therefore reports every open
// transaction older than its timeout as hanging, which a transaction left
// in a copied directory is. FindCoordinator for a transactional id stays
// refused (10_find_coordinator.go), so transactional producers fail at
// once. WriteTxnMarkers (27_write_txn_markers.go) appends the COMMIT or
// ABORT control batch Kafka's coordinator would, through the append
// path, with Kafka's leader's checks (INVALID_PRODUCER_EPOCH,
// TRANSACTION_COORDINATOR_FENCED).
// The transaction then ends: an ABORT gets its .txnindex entry, on disk
// before the answer, so read_committed consumers skip its records; the
// last stable offset moves on. Control batches never render in the
// mount's data files. Transactional Produce, AddPartitionsToTxn and
// EndTxn stay unserved.
//
// # Deleting records
//
// DeleteRecords (21_delete_records.go) moves a partition's log start up to
// an offset, as kafka-delete-records.sh does on Kafka: the log-start
// checkpoint is on disk before the answer; Fetch below the new start is
// OFFSET_OUT_OF_RANGE, ListOffsets earliest answers it, and the mounted
// view starts a new generation of data there, as after retention (open
// readers keep theirs). The segments wholly below it are deleted by the
// next retention pass, whatever the cleanup policy; a topic whose
// cleanup.policy lacks delete refuses the request (POLICY_VIOLATION), as
// Kafka does.
//
// # A single broker's cluster answers
//
// The cluster tools get what a one-broker Kafka cluster without an
// authorizer answers, never an unsupported API: ElectLeaders
// (43_elect_leaders.go) finds no election needed; AlterPartitionReassignments
// (45) accepts only node 0, the current replica, and completes at once, so
// ListPartitionReassignments (46) lists none in progress; the ACL APIs
// (29-31) are SECURITY_DISABLED; DescribeClientQuotas (48) and
// DescribeUserScramCredentials (50) find no quotas and no users.
//
// # Committed offsets
//
// OffsetCommit stores offsets in a JSON file of segfs's own name in the data
// directory (offsets.go), replaced atomically (and fsynced) before the
// commit is answered; DeleteGroups and OffsetDelete remove offsets the
// same way. A change is first staged in memory, in the same critical
// section of the group coordinator that validated it (so a commit and a
// rebalance or a group's deletion are ordered, never interleaved), and
// written after, outside the coordinator's lock: a slow fsync delays only
// the requests that wait for it, never the heartbeats or joins of other
// groups, and concurrent changes share one write. Readers (OffsetFetch,
// ListGroups, DescribeGroups) wait for staged changes first and see only
// what is on disk.
//
// Offsets and groups expire as on a Kafka broker (expiry.go; KIP-211).
// Every Config.OffsetsRetentionCheckInterval
// (offsets.retention.check.interval.ms, 10 minutes;
// `--offsets-retention-check-interval`) the offsets are removed that are
// Config.OffsetsRetention (offsets.retention.minutes, 7 days;
// `--offsets-retention`) old: for an Empty classic group, counted from
// the later of the commit and the moment the group became Empty (Kafka
// counts from the Empty time alone); for a group with members, only the
// offsets of topics no member subscribes to, counted from the commit,
// and for a classic group only if it is a Stable "consumer" group whose
// subscriptions are known (any other keeps everything); for a KIP-848
// consumer group and for commits without a group, from the commit. An
// OffsetCommit v2-v4 retention time sets an offset's expiry instead; a
// v1 commit timestamp is the time it counts from. An Empty group left
// without offsets is then deleted (one that never committed at the
// first check after its last member left), so the throwaway group ids
// of `kcat -G`, tests and console consumers do not pile up in the file
// and in ListGroups. A check that removes something writes the file
// once; one that removes nothing writes nothing. The times are in the
// file: each offset's commit time, and for a classic group with offsets
// the time it became Empty (0 while it has members; written when it
// empties and when its first member joins). A group recorded with
// members lost them at the restart and is Empty from the load; an
// offset without a commit time (a file segfs did not write) gets the
// load time; either is written back at once, so no restart puts an
// expiry off. The load time is the safe guess: nothing expires sooner
// than a full retention after this server first saw it.
//
// # Consumer groups
//
// Classic consumer groups (JoinGroup, SyncGroup, Heartbeat, LeaveGroup;
// groups.go) behave as Kafka's group coordinator: members join, a
// rebalance waits for every known member to rejoin (or its rebalance
// timeout), the leader's assignments are handed to every member, members
// that stop heartbeating are removed after their session timeout, and
// OffsetCommit from a member is checked against its member id and
// generation. The first rebalance of an empty group waits
// Config.GroupInitialRebalanceDelay (1 s; Kafka's
// group.initial.rebalance.delay.ms is 3 s) for more members to arrive.
// A member's session timeout must lie within Config.GroupMinSessionTimeout
// and GroupMaxSessionTimeout (6 s and 30 min, as Kafka's
// group.min/max.session.timeout.ms), or its JoinGroup gets
// INVALID_SESSION_TIMEOUT.
// Membership survives a restart of the server, as Kafka's
// GroupMetadata record in __consumer_offsets makes it survive a
// coordinator's: when the leader's SyncGroup hands out a generation's
// assignments (and when a static member's rejoin replaces a member id
// in a Stable group) the group's generation, protocol, leader and
// members (ids, instance ids, client ids and hosts, timeouts, protocols,
// assignments) are written to the offsets file, which the SyncGroup
// answers wait for; an Empty group's record replaces it. Nothing is
// written at heartbeats or when a rebalance starts. At load the group is
// Stable with those members, each member's session starting then, so
// their heartbeats and commits go on being accepted with no rejoin (a
// member that does not come back times out and the others rebalance);
// a group that was rebalancing comes back at the last generation it
// completed, as in Kafka, and one that had not completed any is Empty.
// Static members (group.instance.id, KIP-345) keep their place across
// their own restarts: one that rejoins a Stable group with an unknown
// member id takes a new one and the current generation and assignment,
// with no rebalance, unless the group's selected protocol would change
// (a v9 leader gets the members with SkipAssignment, KIP-814). A member
// that has not sent SyncGroup within the rebalance timeout after its
// generation formed is removed, even once the group is Stable, as in
// Kafka. DescribeGroups and ListGroups show groups for admin tools;
// DeleteGroups deletes a group without members (its membership state and
// committed offsets), OffsetDelete some partitions' offsets, refusing
// those of topics the current generation subscribes to.
//
// KIP-848 consumer groups (group type "consumer"; ConsumerGroupHeartbeat
// and ConsumerGroupDescribe, consumer_groups.go) behave as Kafka 4's: the
// server computes each member's target assignment with the assignor the
// members ask for ("uniform", the default, sticky and balanced; or
// "range", per-topic contiguous ranges), bumping the group epoch when a
// member joins, leaves, is fenced, changes its subscription (topic names,
// or a regex matched against whole names), or when a subscribed topic
// gains a partition or a new topic matches (checked at every heartbeat:
// `mkdir T/N`, CreatePartitions, CreateTopics and auto-creation all
// count). Members reach their target on their own heartbeats: a partition
// leaves its member (which keeps its epoch until it reports the
// partition gone) before any other member is given it. A member is
// removed when its heartbeats stop for Config.ConsumerGroupSessionTimeout
// (45 s, group.consumer.session.timeout.ms) or it does not revoke within
// its rebalance timeout; members are told to heartbeat every
// Config.ConsumerGroupHeartbeatInterval (5 s). Epoch -1 leaves; a static
// member (instance id) leaving with -2 keeps its partitions reserved
// until its session expires or a member with its instance id replaces it
// (UNRELEASED_INSTANCE_ID before it left). Epoch 0 from a known member
// rejoins it in place. OffsetCommit (v9) and OffsetFetch (v9) from members
// carry the member epoch: STALE_MEMBER_EPOCH for another than the
// current one, UNKNOWN_MEMBER_ID for a member the group does not have.
// ListGroups v5 lists such groups with type "consumer"; DescribeGroups
// shows them with protocol type "consumer" and the assignor as protocol;
// DeleteGroups and OffsetDelete apply the classic rules to their members'
// subscriptions. Groups and their members survive a restart, as Kafka
// 4's coordinator replays its ConsumerGroup* records from
// __consumer_offsets: the offsets file records every consumer group (its
// group and assignment epochs, committed offsets or not) with each
// member's metadata (instance and rack id, client id and host,
// subscribed topic names and regex, server assignor, rebalance timeout),
// current assignment (member epoch, previous epoch, state, assigned and
// pending-revocation partitions) and target assignment. It is written when
// any of it changes (a join, a leave or fence, a new target, a member's
// epoch or partitions), before the heartbeat that changed it is answered,
// never at a heartbeat that changes nothing. After a restart the members
// carry on with their epochs, without rejoining, their sessions starting
// at the load; one that does not come back is removed when its session
// times out and the others take its partitions. ListGroups, DescribeGroups
// and ConsumerGroupDescribe show the group as it was, until DeleteGroups
// removes it or it expires (Empty, without offsets). An offsets file
// written before segfs kept members loads its groups Empty at their
// epochs, as it did. The assignor they name is that of the current members,
// the default ("uniform") for an Empty group, as in Kafka, which keeps
// no group-level assignor. A group name is a classic or a consumer
// group: an empty group converts when a member of the other protocol
// joins (Kafka's offline migration), one with members refuses the other
// protocol with GROUP_ID_NOT_FOUND (INCONSISTENT_GROUP_PROTOCOL for a
// classic protocol type other than "consumer"), which is Kafka's answer
// when online migration is disabled: segfs does not run classic members
// inside a consumer group (Kafka 4's default, group.consumer.migration.policy
// bidirectional, does). Clients still use the classic protocol unless told
// otherwise (franz-go kgo.ServerSideBalancer(), Java group.protocol=consumer).
//
// A change of the offsets file that cannot be written (a full disk, a
// read-only or failed filesystem) is answered as Kafka 4 answers a failed
// append to __consumer_offsets, NOT_COORDINATOR, and is not kept: in
// memory the coordinator goes back to what the file holds (offsets.go).
// A classic generation's SyncGroups get the error and the group
// rebalances; a static member's replacing JoinGroup gets it and the
// member keeps its old id; a consumer group's heartbeat gets it and the
// group is as the file has it; OffsetCommit, DeleteGroups and
// OffsetDelete get it and nothing changes. Every change staged while the
// failed write was under way fails with it, having been decided on the
// failed state. Clients retry, and carry on once the disk takes writes
// again; a restart finds the group its members were told of. A JoinGroup
// that creates a classic group, gives an Empty one its first member or
// converts an empty consumer group gets it, and so does every join held
// since; the group is back as it was (gone, Empty at its generation, or
// the consumer group), as Kafka reverts a new group whose record it
// could not write. A KIP-848 heartbeat that converts an empty classic
// group gets it and the classic group stays. A classic group left Empty
// stays Empty, as in Kafka, which only logs the failed write of an
// Empty group's metadata; the LeaveGroup that emptied it gets the error,
// as on Kafka, and a timer that emptied it logs it.
//
// # Topic admin
//
// CreateTopics, CreatePartitions, DescribeConfigs, AlterConfigs,
// IncrementalAlterConfigs and DescribeCluster let admin clients
// (confluent-kafka's AdminClient, franz-go's kadm, Kafka's CLI tools)
// manage topics as they would on a single-node Kafka broker (node 0, the
// controller). They take the mount's paths: a topic is created by
// Store.CreateTopic as `mkdir MOUNT/T` and auto-creation are, partitions
// are added by Topic.AddPartitions (all or none; `mkdir MOUNT/T/N` is
// Topic.AddPartition, one), and a config value is checked as a line
// written to `config` is and applied by the same Topic.SetConfig, so what
// one door changes the other shows at once and it persists alike. validate_only runs the same checks through
// logstore's dry runs (Store.CheckCreateTopic, Topic.CheckConfigUpdate). A
// topic's settings are the config file's, described with Kafka's sources
// (an override is DYNAMIC_TOPIC_CONFIG, else DEFAULT_CONFIG) and Kafka's
// broker synonyms. Every topic config Kafka defines is taken, checked as
// Kafka checks it (INVALID_CONFIG with the reason), so kafka-topics.sh
// --config, Strimzi and Terraform can create topics; those segfs does not
// apply (unclean.leader.election.enable, preallocate, tiered storage and
// throttle settings, ...: logstore/config_inert.go) are stored and shown
// as overrides and do nothing. min.insync.replicas above 1 makes acks=all
// produces NOT_ENOUGH_REPLICAS, as on a Kafka cluster with fewer in-sync
// replicas (00_produce.go); on a CreateTime topic a record stamped further
// from the broker's clock than message.timestamp.before.max.ms (unbounded
// by default) or message.timestamp.after.max.ms (1 h, Kafka 4.0's
// default) fails its batch with INVALID_TIMESTAMP, with the deprecated
// message.timestamp.difference.max.ms as their fallback, as in Kafka 3.x
// (logstore.Config.TimestampBounds). Broker 0 describes only the settings segfs applies
// (configs.go), read-only, as segfs has no dynamic broker configs: altering
// one is INVALID_REQUEST, as Kafka answers for a static one. segfs does
// not delete topics: DeleteTopics answers as a broker with
// delete.topic.enable=false (TOPIC_DELETION_DISABLED, or INVALID_REQUEST
// before v3) for every topic named, and deletes nothing. As Kafka's
// controller, a request that would make more than 10000 metadata records
// (a topic, its configs, each partition) is POLICY_VIOLATION whole, and
// the requests that read a topic's state to change it are atomic:
// CreatePartitions are serialized (Server.adminMu), and a config
// alteration is computed and applied as one Topic.UpdateConfig, so that
// neither another alteration nor a write to the `config` file between its
// read and its write is lost.
//
// # Log directories
//
// DescribeLogDirs (35_describe_log_dirs.go) shows the data directory as
// the broker's one log directory, with each partition's size (the bytes
// of its .log files, Kafka's log.size, read live as appends, retention
// and compaction change it) and, v4+, the file system's total and usable
// bytes, for `kafka-log-dirs.sh --describe` and the topic sizes of admin
// UIs.
package fetch
