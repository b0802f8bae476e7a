package fetch

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/segfs/segfs/logstore"
)

// Documentation of the configs DescribeConfigs lists, sent when the
// request asks for it (include_documentation, v3+), as Kafka sends its
// ConfigDef's documentation of each (ConfigHelper: documentationOf,
// brokerDocumentation). One sentence each, Kafka's meaning in substance,
// with what segfs does differently where it does. A setting segfs takes
// but does not apply (logstore/config_inert.go) says so: its doc must not
// promise Kafka's behaviour. Broker loggers have none, as in Kafka.

// inertNote ends the doc of a setting segfs accepts and ignores.
const inertNote = " segfs accepts this setting but does not apply it."

var topicConfigDocs = map[string]string{
	"cleanup.policy":                  "The retention policy of old log segments: \"delete\" discards them by time or size, \"compact\" keeps the latest record of each key; both may be given.",
	"compression.type":                "The compression of the topic's batches: \"producer\" keeps the producer's codec; \"uncompressed\" or a codec (gzip, snappy, lz4, zstd) has every batch stored with it.",
	"delete.retention.ms":             "How long a tombstone (delete marker) of a compacted topic is kept after the cleaner first reaches it, so that consumers reading from the start see the deletion.",
	"file.delete.delay.ms":            "How long a segment removed from the log waits before its files are deleted.",
	"flush.messages":                  "The number of records after which the log is forced to disk (fsync); by default flushing is left to the operating system.",
	"flush.ms":                        "The time after which the log is forced to disk (fsync); by default flushing is left to the operating system.",
	"index.interval.bytes":            "How many bytes of records lie between two entries of the offset index: smaller is denser and quicker to seek.",
	"key.separator":                   "segfs's own setting: the separator that splits a line appended to the mounted data file into key and value (empty: lines have no key).",
	"max.compaction.lag.ms":           "The longest time a record stays uncompacted in the log.",
	"max.message.bytes":               "The largest record batch the topic accepts, after compression.",
	"message.timestamp.after.max.ms":  "How far a record's timestamp may lie ahead of the broker's clock on a CreateTime topic; a batch beyond it is refused.",
	"message.timestamp.before.max.ms": "How far a record's timestamp may lie behind the broker's clock on a CreateTime topic; a batch beyond it is refused.",
	"message.timestamp.difference.max.ms": "Kafka 3.x's bound on the difference between a record's timestamp and the broker's clock, " +
		"both ways, on a CreateTime topic; Kafka 4.0 replaced it with message.timestamp.before.max.ms and message.timestamp.after.max.ms.",
	"message.timestamp.type":    "Whether a record's timestamp is the producer's (CreateTime) or the time the broker appended it (LogAppendTime).",
	"min.cleanable.dirty.ratio": "The share of the log not yet compacted above which the cleaner compacts it.",
	"min.compaction.lag.ms":     "The shortest time a record stays uncompacted in the log.",
	"min.insync.replicas":       "The number of in-sync replicas an acks=all produce needs; segfs has one, so a value above 1 refuses acks=all produces with NOT_ENOUGH_REPLICAS.",
	"retention.bytes":           "The size a partition's log may grow to before its oldest segments are deleted under the \"delete\" policy; -1 means no limit.",
	"retention.ms":              "How long a segment is kept before it is deleted under the \"delete\" policy; -1 means no limit.",
	"segment.bytes":             "The size of a segment file, at which the log rolls to a new one.",
	"segment.index.bytes":       "The size of the offset and time index files of a segment.",
	"segment.jitter.ms":         "The largest random amount subtracted from segment.ms, so that segments do not all roll at once.",
	"segment.ms":                "The time after which the log rolls to a new segment even if the current one is not full, so that retention and compaction can act on it.",

	"unclean.leader.election.enable":          "Whether a replica out of sync may become leader, at the risk of losing data." + inertNote,
	"preallocate":                             "Whether segment files are preallocated when created." + inertNote,
	"compression.gzip.level":                  "The compression level used when compression.type is gzip." + inertNote,
	"compression.lz4.level":                   "The compression level used when compression.type is lz4." + inertNote,
	"compression.zstd.level":                  "The compression level used when compression.type is zstd." + inertNote,
	"message.downconversion.enable":           "Whether the broker converts record batches for consumers of old fetch versions." + inertNote,
	"message.format.version":                  "The message format version the broker writes, deprecated since Kafka 3.0." + inertNote,
	"leader.replication.throttled.replicas":   "The replicas whose log replication is throttled on the leader side." + inertNote,
	"follower.replication.throttled.replicas": "The replicas whose log replication is throttled on the follower side." + inertNote,
	"remote.storage.enable":                   "Whether the topic's segments are copied to tiered (remote) storage." + inertNote,
	"local.retention.ms":                      "How long a segment is kept locally once copied to tiered storage." + inertNote,
	"local.retention.bytes":                   "How large the local log may grow once segments are copied to tiered storage." + inertNote,
	"remote.log.copy.disable":                 "Whether copying segments to tiered storage is stopped." + inertNote,
	"remote.log.delete.on.disable":            "Whether the tiered copies are deleted when tiered storage is turned off for the topic." + inertNote,
	"remote.copy.lag.ms":                      "How long a segment waits before it is copied to tiered storage." + inertNote,
	"remote.copy.lag.bytes":                   "How many bytes of segments wait before they are copied to tiered storage." + inertNote,
}

var brokerConfigDocs = map[string]string{
	"auto.create.topics.enable":               "Whether a topic is created when a client produces to it or asks its metadata (segfs: --auto-create-topics).",
	"broker.id":                               "The broker's id; segfs is the one broker, 0.",
	"connections.max.idle.ms":                 "How long a connection may stay idle before the broker closes it.",
	"delete.topic.enable":                     "Whether topics may be deleted; segfs does not delete topics (remove the directory instead).",
	"group.initial.rebalance.delay.ms":        "How long the first rebalance of an empty classic consumer group waits for more members to join (segfs: --group-initial-rebalance-delay).",
	"group.min.session.timeout.ms":            "The shortest session timeout a member of a classic consumer group may ask for (segfs: --group-min-session-timeout).",
	"group.max.session.timeout.ms":            "The longest session timeout a member of a classic consumer group may ask for (segfs: --group-max-session-timeout).",
	"group.consumer.heartbeat.interval.ms":    "The interval at which members of a consumer group (KIP-848) are told to heartbeat.",
	"group.consumer.session.timeout.ms":       "How long a member of a consumer group (KIP-848) may go without a heartbeat before it is removed and its partitions reassigned.",
	"num.partitions":                          "The number of partitions of an auto-created topic (segfs: --partitions).",
	"offset.metadata.max.bytes":               "The largest metadata string a committed offset may carry.",
	"socket.request.max.bytes":                "The largest request the broker accepts (segfs: --max-request-bytes).",
	"log.segment.bytes":                       "The default segment.bytes of a topic: the size of a segment file.",
	"log.roll.hours":                          "The default segment.ms of a topic, in hours: when the log rolls to a new segment.",
	"log.roll.jitter.hours":                   "The default segment.jitter.ms of a topic, in hours.",
	"log.index.size.max.bytes":                "The default segment.index.bytes of a topic: the size of a segment's index files.",
	"log.index.interval.bytes":                "The default index.interval.bytes of a topic: the bytes between two offset index entries.",
	"log.retention.hours":                     "The default retention.ms of a topic, in hours: how long a segment is kept under the \"delete\" policy.",
	"log.retention.bytes":                     "The default retention.bytes of a topic: the size a partition's log may grow to under the \"delete\" policy.",
	"log.cleanup.policy":                      "The default cleanup.policy of a topic: delete, compact, or both.",
	"log.cleaner.min.cleanable.ratio":         "The default min.cleanable.dirty.ratio of a topic: the uncompacted share above which the cleaner compacts a log.",
	"log.cleaner.delete.retention.ms":         "The default delete.retention.ms of a topic: how long tombstones are kept.",
	"log.cleaner.min.compaction.lag.ms":       "The default min.compaction.lag.ms of a topic: the shortest time a record stays uncompacted.",
	"log.cleaner.max.compaction.lag.ms":       "The default max.compaction.lag.ms of a topic: the longest time a record stays uncompacted.",
	"message.max.bytes":                       "The default max.message.bytes of a topic: the largest record batch accepted.",
	"log.message.timestamp.type":              "The default message.timestamp.type of a topic: CreateTime or LogAppendTime.",
	"log.message.timestamp.before.max.ms":     "The default message.timestamp.before.max.ms of a topic: how far a record's timestamp may lie behind the broker's clock.",
	"log.message.timestamp.after.max.ms":      "The default message.timestamp.after.max.ms of a topic: how far a record's timestamp may lie ahead of the broker's clock.",
	"log.flush.interval.messages":             "The default flush.messages of a topic: the records after which the log is forced to disk.",
	"log.flush.scheduler.interval.ms":         "The default flush.ms of a topic: the time after which the log is forced to disk.",
	"log.segment.delete.delay.ms":             "The default file.delete.delay.ms of a topic: how long a removed segment waits before its files are deleted.",
	"compression.type":                        "The default compression.type of a topic: \"producer\" keeps the producer's codec.",
	"min.insync.replicas":                     "The default min.insync.replicas of a topic: the in-sync replicas an acks=all produce needs.",
	"log.message.timestamp.difference.max.ms": "Kafka 3.x's default message.timestamp.difference.max.ms; Kafka 4.0 removed it.",
}

var groupConfigDocs = map[string]string{
	"consumer.heartbeat.interval.ms": "The interval at which the group's members (KIP-848) are told to heartbeat; segfs applies the server's group.consumer.heartbeat.interval.ms to every group.",
	"consumer.session.timeout.ms":    "How long a member of the group (KIP-848) may go without a heartbeat before it is removed; segfs applies the server's group.consumer.session.timeout.ms to every group.",
}

// configDoc is the documentation DescribeConfigs sends for a setting of a
// resource of type typ, nil (Kafka's null) when there is none.
func configDoc(typ kmsg.ConfigResourceType, name string) *string {
	var docs map[string]string
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		docs = topicConfigDocs
	case kmsg.ConfigResourceTypeBroker:
		docs = brokerConfigDocs
	case kmsg.ConfigResourceTypeGroupConfig:
		docs = groupConfigDocs
	}
	if d, ok := docs[name]; ok {
		return &d
	}
	return nil
}

// undocumentedConfigs lists the settings DescribeConfigs shows for a topic,
// broker or group without documentation: a test keeps it empty.
func (s *Server) undocumentedConfigs() []string {
	var out []string
	for _, key := range logstore.ConfigKeys() {
		if _, ok := topicConfigDocs[key]; !ok {
			out = append(out, "topic "+key)
		}
	}
	for _, e := range s.brokerConfigEntries() {
		if _, ok := brokerConfigDocs[e.name]; !ok {
			out = append(out, "broker "+e.name)
		}
	}
	for _, e := range s.groupConfigEntries() {
		if _, ok := groupConfigDocs[e.name]; !ok {
			out = append(out, "group "+e.name)
		}
	}
	slices.Sort(out)
	return out
}
