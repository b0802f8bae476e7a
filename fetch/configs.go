package fetch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/segfs/segfs/logstore"
)

// Topic and broker configs as the admin APIs (CreateTopics v5+,
// DescribeConfigs, AlterConfigs, IncrementalAlterConfigs) show and change
// them. A topic's settings are exactly the mount's `config` file
// (logstore.Config); changes go through the same validation and
// persistence as writing that file (Topic.SetConfig).

// topicConfigMeta is what Kafka tells about a topic key besides its value:
// its type, and the broker setting whose default applies when the topic
// has no override (Kafka's ServerTopicConfigSynonyms), named as Kafka's
// DescribeConfigs names the synonym that carries a default: retention.ms
// falls back to log.retention.hours=168, as log.retention.ms and
// log.retention.minutes have none. segfs has no broker config file: these
// defaults are Kafka's, which is what logstore.DefaultConfig applies.
type topicConfigMeta struct {
	typ kmsg.ConfigType
	// synonym is the broker key, "" for segfs's own keys.
	synonym string
	// synonymValue is the synonym's default in its own unit; "" means the
	// topic default as it is.
	synonymValue string
}

var topicConfigMetas = map[string]topicConfigMeta{
	"segment.bytes":             {kmsg.ConfigTypeInt, "log.segment.bytes", ""},
	"segment.ms":                {kmsg.ConfigTypeLong, "log.roll.hours", "168"},
	"segment.jitter.ms":         {kmsg.ConfigTypeLong, "log.roll.jitter.hours", "0"},
	"segment.index.bytes":       {kmsg.ConfigTypeInt, "log.index.size.max.bytes", ""},
	"index.interval.bytes":      {kmsg.ConfigTypeInt, "log.index.interval.bytes", ""},
	"retention.ms":              {kmsg.ConfigTypeLong, "log.retention.hours", "168"},
	"retention.bytes":           {kmsg.ConfigTypeLong, "log.retention.bytes", ""},
	"cleanup.policy":            {kmsg.ConfigTypeList, "log.cleanup.policy", ""},
	"min.cleanable.dirty.ratio": {kmsg.ConfigTypeDouble, "log.cleaner.min.cleanable.ratio", ""},
	"delete.retention.ms":       {kmsg.ConfigTypeLong, "log.cleaner.delete.retention.ms", ""},
	"min.compaction.lag.ms":     {kmsg.ConfigTypeLong, "log.cleaner.min.compaction.lag.ms", ""},
	"max.compaction.lag.ms":     {kmsg.ConfigTypeLong, "log.cleaner.max.compaction.lag.ms", ""},
	"max.message.bytes":         {kmsg.ConfigTypeInt, "message.max.bytes", ""},
	"message.timestamp.type":    {kmsg.ConfigTypeString, "log.message.timestamp.type", ""},
	"flush.messages":            {kmsg.ConfigTypeLong, "log.flush.interval.messages", ""},
	"flush.ms":                  {kmsg.ConfigTypeLong, "log.flush.scheduler.interval.ms", ""},
	"file.delete.delay.ms":      {kmsg.ConfigTypeLong, "log.segment.delete.delay.ms", ""},
	"compression.type":          {kmsg.ConfigTypeString, "compression.type", ""},
	"key.separator":             {kmsg.ConfigTypeString, "", ""},
	"min.insync.replicas":       {kmsg.ConfigTypeInt, "min.insync.replicas", ""},

	"message.timestamp.before.max.ms": {kmsg.ConfigTypeLong, "log.message.timestamp.before.max.ms", ""},
	"message.timestamp.after.max.ms":  {kmsg.ConfigTypeLong, "log.message.timestamp.after.max.ms", ""},
	// Kafka 3.x's; 4.0 removed it, and its broker setting with it
	// (brokerConfigEntries lists none).
	"message.timestamp.difference.max.ms": {kmsg.ConfigTypeLong, "log.message.timestamp.difference.max.ms", ""},

	// Accepted and shown, not applied (logstore/config_inert.go).
	"unclean.leader.election.enable":          {kmsg.ConfigTypeBoolean, "unclean.leader.election.enable", ""},
	"preallocate":                             {kmsg.ConfigTypeBoolean, "log.preallocate", ""},
	"compression.gzip.level":                  {kmsg.ConfigTypeInt, "compression.gzip.level", ""},
	"compression.lz4.level":                   {kmsg.ConfigTypeInt, "compression.lz4.level", ""},
	"compression.zstd.level":                  {kmsg.ConfigTypeInt, "compression.zstd.level", ""},
	"message.downconversion.enable":           {kmsg.ConfigTypeBoolean, "log.message.downconversion.enable", ""},
	"message.format.version":                  {kmsg.ConfigTypeString, "log.message.format.version", ""},
	"leader.replication.throttled.replicas":   {kmsg.ConfigTypeList, "", ""},
	"follower.replication.throttled.replicas": {kmsg.ConfigTypeList, "", ""},
	"remote.storage.enable":                   {kmsg.ConfigTypeBoolean, "", ""},
	"local.retention.ms":                      {kmsg.ConfigTypeLong, "log.local.retention.ms", ""},
	"local.retention.bytes":                   {kmsg.ConfigTypeLong, "log.local.retention.bytes", ""},
	"remote.log.copy.disable":                 {kmsg.ConfigTypeBoolean, "", ""},
	"remote.log.delete.on.disable":            {kmsg.ConfigTypeBoolean, "", ""},
	"remote.copy.lag.ms":                      {kmsg.ConfigTypeLong, "", ""},
	"remote.copy.lag.bytes":                   {kmsg.ConfigTypeLong, "", ""},
}

// configEntry is one setting as DescribeConfigs and CreateTopics v5+ show
// it.
type configEntry struct {
	name     string
	value    string
	source   kmsg.ConfigSource
	readOnly bool
	typ      kmsg.ConfigType
	synonyms []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
}

func synonym(name, value string, src kmsg.ConfigSource) kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
	s.Name, s.Value, s.Source = name, kmsg.StringPtr(value), src
	return s
}

// topicConfigEntries lists every effective setting of t, sorted by name
// as the config file is: an override is DYNAMIC_TOPIC_CONFIG (Kafka's
// source for a topic-level setting), anything else DEFAULT_CONFIG. The
// synonyms are Kafka's chain: the override if any, then the broker
// default that applies without it.
func topicConfigEntries(cfg logstore.Config, overrides map[string]string) []configEntry {
	var out []configEntry
	for _, key := range logstore.ConfigKeys() {
		value, _ := cfg.Get(key)
		meta := topicConfigMetas[key]
		e := configEntry{name: key, value: value, source: kmsg.ConfigSourceDefaultConfig, typ: meta.typ}
		if _, ok := overrides[key]; ok {
			e.source = kmsg.ConfigSourceDynamicTopicConfig
			e.synonyms = append(e.synonyms, synonym(key, value, e.source))
		}
		if meta.synonym != "" {
			def, _ := logstore.DefaultConfig().Get(key)
			if meta.synonymValue != "" {
				def = meta.synonymValue
			}
			e.synonyms = append(e.synonyms, synonym(meta.synonym, def, kmsg.ConfigSourceDefaultConfig))
		}
		out = append(out, e)
	}
	return out
}

// brokerConfigEntries is broker 0's settings: only what segfs really
// applies. The topic defaults (log.segment.bytes, ...) are Kafka's, as
// logstore applies them; the rest comes from the command line or is
// segfs's own choice. A value that differs from Kafka's default is shown
// as STATIC_BROKER_CONFIG, as a server.properties setting would be.
// Everything is read-only: segfs has no dynamic broker configs.
func (s *Server) brokerConfigEntries() []configEntry {
	var out []configEntry
	add := func(name, value, kafkaDefault string, typ kmsg.ConfigType) {
		src := kmsg.ConfigSourceDefaultConfig
		if value != kafkaDefault {
			src = kmsg.ConfigSourceStaticBrokerConfig
		}
		out = append(out, configEntry{name: name, value: value, source: src, readOnly: true, typ: typ,
			synonyms: []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{synonym(name, value, src)}})
	}
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	add("auto.create.topics.enable", strconv.FormatBool(s.cfg.AutoCreateTopics), "true", kmsg.ConfigTypeBoolean)
	add("broker.id", itoa(nodeID), "-1", kmsg.ConfigTypeInt)
	add("connections.max.idle.ms", itoa(s.cfg.MaxWriteIdle.Milliseconds()), "600000", kmsg.ConfigTypeLong)
	// Topics cannot be deleted (20_delete_topics.go).
	add("delete.topic.enable", "false", "true", kmsg.ConfigTypeBoolean)
	add("group.initial.rebalance.delay.ms", itoa(max(s.cfg.GroupInitialRebalanceDelay, 0).Milliseconds()), "3000", kmsg.ConfigTypeInt)
	add("group.min.session.timeout.ms", itoa(s.cfg.GroupMinSessionTimeout.Milliseconds()), "6000", kmsg.ConfigTypeInt)
	add("group.max.session.timeout.ms", itoa(s.cfg.GroupMaxSessionTimeout.Milliseconds()), "1800000", kmsg.ConfigTypeInt)
	add("group.consumer.heartbeat.interval.ms", itoa(s.groups.cgInterval.Milliseconds()), "5000", kmsg.ConfigTypeInt)
	add("group.consumer.session.timeout.ms", itoa(s.groups.cgSession.Milliseconds()), "45000", kmsg.ConfigTypeInt)
	add("num.partitions", itoa(int64(s.store.DefaultPartitions())), "1", kmsg.ConfigTypeInt)
	add("offset.metadata.max.bytes", itoa(maxOffsetMetadata), "4096", kmsg.ConfigTypeInt)
	add("socket.request.max.bytes", itoa(int64(s.cfg.MaxRequestBytes)), "104857600", kmsg.ConfigTypeInt)
	def := logstore.DefaultConfig()
	inert := logstore.InertConfigKeys()
	for _, key := range logstore.ConfigKeys() {
		meta := topicConfigMetas[key]
		// The broker defaults of settings segfs takes but does not apply
		// would claim a behaviour it lacks: a topic shows them, not the
		// broker. A Kafka 4.0 broker has no
		// log.message.timestamp.difference.max.ms.
		if meta.synonym == "" || slices.Contains(inert, key) || key == "message.timestamp.difference.max.ms" {
			continue
		}
		value, _ := def.Get(key)
		if meta.synonymValue != "" {
			value = meta.synonymValue
		}
		add(meta.synonym, value, value, meta.typ)
	}
	slices.SortFunc(out, func(a, b configEntry) int { return strings.Compare(a.name, b.name) })
	return out
}

// brokerResource checks a broker resource name as Kafka does: "" is the
// cluster-wide default resource, else it must be this broker's id. The
// error is INVALID_REQUEST with Kafka's message.
func brokerResource(name string) (isDefault bool, code int16, msg string) {
	if name == "" {
		return true, 0, ""
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return false, kerr.InvalidRequest.Code, fmt.Sprintf("Broker id must be an integer, but it is: %s", name)
	}
	if id != nodeID {
		return false, kerr.InvalidRequest.Code, fmt.Sprintf("Unexpected broker id, expected %d or empty string, but received %s", nodeID, name)
	}
	return false, 0, ""
}

// alterBroker answers an alteration of a broker resource: segfs has no
// dynamic broker configs, so any setting is refused as Kafka refuses a
// static one (DynamicBrokerConfig.validateConfigs: a ConfigException
// "Cannot update these configs dynamically: Set(...)", which the admin
// manager turns into INVALID_REQUEST, not POLICY_VIOLATION: no
// alter.config.policy is involved). An empty change list changes nothing
// and succeeds. Before that, as Kafka's ConfigAdminManager.preprocess, a
// name other than "" must be this broker's id, with the alteration's
// wording (validateResourceNameIsCurrentNodeId), which is not
// DescribeConfigs' (brokerResource); segfs sent DescribeConfigs'.
func alterBroker(name string, keys []string) (int16, string) {
	if name != "" {
		id, err := strconv.ParseInt(name, 10, 32)
		if err != nil {
			return kerr.InvalidRequest.Code, "Node id must be an integer, but it is: " + name
		}
		if id != nodeID {
			return kerr.InvalidRequest.Code, fmt.Sprintf("Unexpected broker id, expected %d, but received %s", nodeID, name)
		}
	}
	if len(keys) == 0 {
		return 0, ""
	}
	return kerr.InvalidRequest.Code, fmt.Sprintf("Cannot update these configs dynamically: Set(%s) (segfs has no dynamic broker configs)", strings.Join(keys, ", "))
}

// configError is the code and message for an error from logstore's config
// validation or persistence.
func configError(err error) (int16, *string) {
	msg := err.Error()
	if errors.Is(err, logstore.ErrInvalidConfig) {
		return kerr.InvalidConfig.Code, &msg
	}
	return errorCode(err), &msg
}

// lookupTopicResource finds the topic a config resource names: Kafka's
// INVALID_TOPIC_EXCEPTION with Kafka's message for a name no topic can
// have (topicNameInvalid), else UNKNOWN_TOPIC_OR_PARTITION if there is
// none. alter: the resource of an AlterConfigs or IncrementalAlterConfigs,
// whose empty name Kafka's controller refuses first, INVALID_REQUEST
// (ControllerConfigurationValidator.validateTopicName).
func (s *Server) lookupTopicResource(name string, alter bool) (*logstore.Topic, int16, *string) {
	if alter && name == "" {
		return nil, kerr.InvalidRequest.Code, kmsg.StringPtr("Default topic resources are not allowed.")
	}
	if msg, bad := topicNameInvalid(name); bad {
		return nil, kerr.InvalidTopicException.Code, &msg
	}
	t, err := s.store.Topic(name)
	if err != nil {
		msg := fmt.Sprintf("Topic %s does not exist", name)
		return nil, errorCode(err), &msg
	}
	return t, 0, nil
}

// topicNameInvalid is Kafka's message for a name no topic can have, as
// its Topic.validate words it (InvalidTopicException), and whether the
// name is one: CreateTopics and the config APIs send it. The rule is
// logstore.ValidateTopicName's, whose own wording is for the mount and
// the CLI.
func topicNameInvalid(name string) (string, bool) {
	if logstore.ValidateTopicName(name) == nil {
		return "", false
	}
	var why string
	switch {
	case name == "":
		why = "the empty string is not allowed"
	case name == ".", name == "..":
		why = fmt.Sprintf("'%s' is not allowed", name)
	case len(name) > 249:
		why = fmt.Sprintf("the length of '%s' is longer than the max allowed length 249", name)
	default:
		why = fmt.Sprintf("'%s' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'", name)
	}
	return "Topic name is invalid: " + why, true
}

// resourceKey identifies a resource in a request, to find duplicates.
type resourceKey struct {
	typ  kmsg.ConfigResourceType
	name string
}

// unsupportedResource is Kafka's answer for a resource type it does not
// know: INVALID_REQUEST.
func unsupportedResource(typ kmsg.ConfigResourceType) (int16, *string) {
	msg := fmt.Sprintf("Unsupported resource type: %s", typ)
	return kerr.InvalidRequest.Code, &msg
}

// groupConfigs are the group configs (Kafka's GroupConfig) segfs applies,
// each with its broker synonym, Kafka's "group." prefix to it: a KIP-848
// consumer group's session timeout and heartbeat interval, the server's
// for every group. The share group configs are not listed: segfs has no
// share groups.
var groupConfigs = []string{"consumer.heartbeat.interval.ms", "consumer.session.timeout.ms"}

// groupConfigEntries is what DescribeConfigs lists for a group resource:
// Kafka lists its group configs for any group name, known or not, the
// broker's values where the group has no override; segfs has no per-group
// overrides, so each is read-only (Kafka's are not) and its source that of
// the broker setting it comes from (DEFAULT_CONFIG, or
// STATIC_BROKER_CONFIG when a command-line option changed it), as Kafka
// gives it without an override.
func (s *Server) groupConfigEntries() []configEntry {
	broker := s.brokerConfigEntries()
	var out []configEntry
	for _, name := range groupConfigs {
		i := slices.IndexFunc(broker, func(e configEntry) bool { return e.name == "group."+name })
		b := broker[i]
		out = append(out, configEntry{name: name, value: b.value, source: b.source, readOnly: true, typ: b.typ,
			synonyms: []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{synonym(b.name, b.value, b.source)}})
	}
	return out
}

// groupResource checks a group config resource's name as Kafka does: any
// non-empty name.
func groupResource(name string) (int16, string) {
	if name == "" {
		return kerr.InvalidRequest.Code, "Group name must not be empty"
	}
	return 0, ""
}

// rootLogger is the one logger segfs has, by Kafka's name for the root
// logger (LoggingController.ROOT_LOGGER).
const rootLogger = "root"

// brokerLoggerEntries is what DescribeConfigs lists for the broker logger
// resource: Kafka lists each log4j logger with its level
// (DYNAMIC_BROKER_LOGGER_CONFIG); segfs has one logger, its slog logger,
// shown as root at the level it logs from by Kafka's name for it
// (broker_logger.go). Changeable through Config.LogLevel, as Kafka's are;
// read-only without it.
func (s *Server) brokerLoggerEntries() []configEntry {
	var level slog.Level
	if s.cfg.LogLevel != nil {
		level = s.cfg.LogLevel.Level()
	} else {
		level = slog.Level(math.MaxInt32)
		for _, k := range kafkaLevels {
			if s.log.Enabled(context.Background(), k.level) {
				level = k.level
				break
			}
		}
	}
	return []configEntry{{name: rootLogger, value: levelName(level), source: kmsg.ConfigSourceDynamicBrokerLoggerConfig,
		readOnly: s.cfg.LogLevel == nil, typ: kmsg.ConfigTypeString}}
}

// brokerLoggerResource checks a broker logger resource's name as Kafka
// does: this broker's id, never empty.
func brokerLoggerResource(name string) (int16, string) {
	if name == "" {
		return kerr.InvalidRequest.Code, "Broker id must not be empty"
	}
	if _, code, msg := brokerResource(name); code != 0 {
		if _, err := strconv.ParseInt(name, 10, 32); err == nil {
			msg = fmt.Sprintf("Unexpected broker id, expected %d but received %s", nodeID, name)
		}
		return code, msg
	}
	return 0, ""
}

// clientMetricsResource checks a client metrics subscription's name as
// Kafka does: never empty.
func clientMetricsResource(name string) (int16, string) {
	if name == "" {
		return kerr.InvalidRequest.Code, "Client metrics subscription name must not be empty"
	}
	return 0, ""
}

// alterUnchangeable answers an alteration of a group, broker logger or
// client metrics resource, after the resource's own name check: segfs
// applies none of their settings per resource (the group settings and the
// log level are the server's, set at start; client metrics, KIP-714, are
// not collected), so any change is refused, INVALID_REQUEST as for a
// static broker setting (alterBroker). An empty change list changes
// nothing and succeeds.
func alterUnchangeable(typ kmsg.ConfigResourceType, name string, keys []string) (int16, string) {
	var code int16
	var msg, why string
	switch typ {
	case kmsg.ConfigResourceTypeGroupConfig:
		code, msg = groupResource(name)
		why = "segfs applies the server's group settings to every group"
	case kmsg.ConfigResourceTypeBrokerLogger:
		code, msg = brokerLoggerResource(name)
		why = "this server's log level is fixed"
	default:
		code, msg = clientMetricsResource(name)
		why = "segfs does not collect client metrics"
	}
	if code != 0 || len(keys) == 0 {
		return code, msg
	}
	return kerr.InvalidRequest.Code, fmt.Sprintf("Cannot update these configs of %s %q: Set(%s) (%s)", typ, name, strings.Join(keys, ", "), why)
}
