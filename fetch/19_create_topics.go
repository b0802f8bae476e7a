package fetch

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/segfs/segfs/logstore"
)

// CreateTopics (key 19), versions 0-7.
//
// The same path as `mkdir MOUNT/T` and auto-creation (Store.CreateTopic):
// Kafka's name rules (INVALID_TOPIC_EXCEPTION, also for a name that
// collides with a topic's in '.' against '_'), TOPIC_ALREADY_EXISTS, and
// config overrides checked key by key as a line of the mount's `config`
// file is (INVALID_CONFIG with the reason in ErrorMessage; a null value is
// Kafka's INVALID_CONFIG too). The checks run in the order of Kafka's
// ReplicationControlManager: name, existence, configs, then the layout:
// with a manual assignment both counts must be -1 (INVALID_REQUEST), the
// partitions 0..n-1, each once, each on node 0 alone
// (INVALID_REPLICA_ASSIGNMENT); without one the replication factor is -1
// or 1 (INVALID_REPLICATION_FACTOR otherwise: there is one broker) and the
// partition count -1 (the server's default, --partitions) or positive
// (INVALID_PARTITIONS). A name given twice is INVALID_REQUEST and neither
// is created; __cluster_metadata, KRaft's own log, is refused as Kafka's
// controller does (TOPIC_AUTHORIZATION_FAILED); Kafka's other internal
// topics are created like any other, as Kafka's controller creates them.
// validate_only (v1+) runs every check and creates nothing. v5+ answers
// with the partition count, replication factor 1 and every effective
// config; v7 with the topic's persistent UUID (all zero for a dry run, as
// no topic has it). TimeoutMillis is moot: the answer waits for the
// creation, which is durable before it is sent. A request that would make
// more than maxRecordsPerOp of Kafka's metadata records (a topic, its
// config overrides and each of its partitions) is POLICY_VIOLATION for
// every topic in it, validate_only too, as Kafka's controller refuses it
// (tooLargeOp): without the bound, a typo such as 1000000000 partitions
// had segfs create partition directories for hours, holding the topic
// lock that every mkdir, topic lookup and auto-creation takes.
func init() { register(19, 0, 7, handleCreateTopics) }

// maxRecordsPerOp is Kafka's QuorumController.MAX_RECORDS_PER_USER_OP: the
// most metadata records one admin request may make. Kafka's controller
// counts them in a bounded list and fails the whole request when it
// overflows (BoundedListTooLongException, answered as POLICY_VIOLATION).
const maxRecordsPerOp = 10000

// tooLargeOpMessage is Kafka's message for such a request.
const tooLargeOpMessage = "Unable to perform excessively large batch operation."

func handleCreateTopics(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	validateOnly := req.ValidateOnly && h.version >= 1

	count := map[string]int{}
	for _, rt := range req.Topics {
		count[rt.Topic]++
	}
	tooLarge := c.s.createTopicsRecords(req.Topics, count) > maxRecordsPerOp
	done := map[string]bool{}
	for i := range req.Topics {
		rt := &req.Topics[i]
		if done[rt.Topic] {
			continue
		}
		done[rt.Topic] = true
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		if count[rt.Topic] > 1 {
			st.ErrorCode, st.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("Duplicate topic name.")
		} else if tooLarge {
			st.ErrorCode, st.ErrorMessage = kerr.PolicyViolation.Code, kmsg.StringPtr(tooLargeOpMessage)
		} else {
			c.s.createTopic(rt, &st, validateOnly)
		}
		if h.version < 1 {
			st.ErrorMessage = nil
		}
		resp.Topics = append(resp.Topics, st)
	}
	return c.send(h, resp)
}

// createTopicsRecords counts the metadata records Kafka's controller
// would make for a CreateTopics request: for each topic named once that
// can be created (a valid, free name, a valid layout), its TopicRecord,
// one ConfigRecord per config and one PartitionRecord per partition.
// Topics refused on those grounds make none, as in Kafka.
func (s *Server) createTopicsRecords(topics []kmsg.CreateTopicsRequestTopic, count map[string]int) int64 {
	var records int64
	for i := range topics {
		rt := &topics[i]
		if count[rt.Topic] > 1 || logstore.CheckNewTopicName(rt.Topic) != nil {
			continue
		}
		if _, err := s.store.Topic(rt.Topic); err == nil {
			continue
		}
		n, code, _ := createPartitionCount(rt)
		if code != 0 {
			continue
		}
		if n <= 0 {
			n = int32(s.store.DefaultPartitions())
		}
		records += 1 + int64(len(rt.Configs)) + int64(n)
	}
	return records
}

// createTopic creates (or with validateOnly checks) one topic and fills
// its answer.
func (s *Server) createTopic(rt *kmsg.CreateTopicsRequestTopic, st *kmsg.CreateTopicsResponseTopic, validateOnly bool) {
	fail := func(code int16, format string, args ...any) {
		st.ErrorCode, st.ErrorMessage = code, kmsg.StringPtr(fmt.Sprintf(format, args...))
	}
	name := rt.Topic
	// The name first, as Kafka's controller checks it, by the rule of
	// `mkdir MOUNT/T` (CreateTopic applies it again): INVALID_TOPIC_EXCEPTION
	// with Kafka's message (segfs sent its own wording), or
	// TOPIC_AUTHORIZATION_FAILED for __cluster_metadata.
	if msg, bad := topicNameInvalid(name); bad {
		fail(kerr.InvalidTopicException.Code, "%s", msg)
		return
	}
	if err := logstore.CheckNewTopicName(name); err != nil {
		fail(errorCode(err), "%v", err)
		return
	}
	if _, err := s.store.Topic(name); err == nil {
		fail(kerr.TopicAlreadyExists.Code, "Topic '%s' already exists.", name)
		return
	}
	// A name that differs from an existing topic's only by '.' against
	// '_': Kafka's controller refuses it with the names checked, before
	// configs and partitions (validateNewTopicNames), in its words.
	// (CreateTopic refuses it too, should one be created meanwhile.)
	if other := s.store.CollidingTopic(name); other != "" {
		fail(kerr.InvalidTopicException.Code, "Topic '%s' collides with existing topic: %s", name, other)
		return
	}
	overrides, code, msg := createOverrides(rt.Configs)
	if code != 0 {
		st.ErrorCode, st.ErrorMessage = code, &msg
		return
	}
	n, code, msg := createPartitionCount(rt)
	if code != 0 {
		st.ErrorCode, st.ErrorMessage = code, &msg
		return
	}

	var (
		cfg logstore.Config
		ovr map[string]string
		err error
	)
	if validateOnly {
		cfg, err = s.store.CheckCreateTopic(name, overrides)
		ovr = map[string]string{}
		for k, v := range overrides {
			if v != "" { // an empty value is the default, as CreateTopic takes it
				ovr[k] = v
			}
		}
		if n <= 0 {
			n = int32(s.store.DefaultPartitions())
		}
	} else {
		var t *logstore.Topic
		t, err = s.store.CreateTopic(name, int(n), overrides)
		if err == nil {
			cfg, ovr = t.ConfigSnapshot()
			n, st.TopicID = int32(t.PartitionCount()), t.ID()
			s.log.Info("fetch: created topic", "topic", name, "partitions", n, "overrides", ovr)
		}
	}
	if err != nil {
		st.ErrorCode, st.ErrorMessage = configError(err)
		if st.ErrorCode == kerr.UnknownServerError.Code {
			s.log.Error("fetch: creating topic", "topic", name, "err", err)
		}
		return
	}
	st.NumPartitions, st.ReplicationFactor = n, 1
	for _, e := range topicConfigEntries(cfg, ovr) {
		sc := kmsg.NewCreateTopicsResponseTopicConfig()
		sc.Name, sc.Value, sc.Source, sc.ReadOnly = e.name, kmsg.StringPtr(e.value), int8(e.source), e.readOnly
		st.Configs = append(st.Configs, sc)
	}
}

// checkConfigValues checks the values of configs one by one, as a line of
// the `config` file is checked, and returns them normalized, with the
// names given no value (null), which each request answers its own way.
// The first invalid value is the error.
func checkConfigValues[C any](configs []C, nameValue func(C) (string, *string)) (map[string]string, []string, error) {
	var nulls []string
	values := map[string]string{}
	// Kafka's order (ControllerConfigurationValidator.validate, then
	// LogConfig.validate): null values, then every name, then the
	// values. An unknown name is refused in Kafka's words, as
	// IncrementalAlterConfigs refuses it; segfs sent logstore's ("invalid
	// config: unknown key ...").
	for _, c := range configs {
		if name, value := nameValue(c); value == nil {
			nulls = append(nulls, name)
		}
	}
	if len(nulls) > 0 {
		return nil, nulls, nil
	}
	defaults := logstore.DefaultConfig()
	for _, c := range configs {
		if name, _ := nameValue(c); !knownTopicConfig(defaults, name) {
			return nil, nil, fmt.Errorf("Unknown topic config name: %s", name)
		}
	}
	for _, c := range configs {
		name, value := nameValue(c)
		v := logstore.NormalizeConfigValue(name, *value)
		if err := logstore.CheckConfigValue(name, v); err != nil {
			return nil, nil, err
		}
		values[name] = v
	}
	return values, nulls, nil
}

// knownTopicConfig reports whether name is a topic config segfs knows.
func knownTopicConfig(defaults logstore.Config, name string) bool {
	_, ok := defaults.Get(name)
	return ok
}

// createOverrides checks a new topic's configs one by one as a line of
// the `config` file is checked, and returns them as overrides.
func createOverrides(configs []kmsg.CreateTopicsRequestTopicConfig) (map[string]string, int16, string) {
	overrides, nulls, err := checkConfigValues(configs, func(c kmsg.CreateTopicsRequestTopicConfig) (string, *string) { return c.Name, c.Value })
	if err != nil {
		return nil, kerr.InvalidConfig.Code, err.Error()
	}
	if len(nulls) > 0 {
		return nil, kerr.InvalidConfig.Code, "Null value not supported for topic configs: " + strings.Join(nulls, ",")
	}
	return overrides, 0, ""
}

// createPartitionCount checks the layout a CreateTopics entry asks for
// and returns its partition count, -1 for the default.
func createPartitionCount(rt *kmsg.CreateTopicsRequestTopic) (int32, int16, string) {
	if len(rt.ReplicaAssignment) > 0 {
		if rt.ReplicationFactor != -1 {
			return 0, kerr.InvalidRequest.Code, "A manual partition assignment was specified, but replication factor was not set to -1."
		}
		if rt.NumPartitions != -1 {
			return 0, kerr.InvalidRequest.Code, "A manual partition assignment was specified, but numPartitions was not set to -1."
		}
		seen := map[int32]bool{}
		for _, a := range rt.ReplicaAssignment {
			if seen[a.Partition] {
				return 0, kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("Found multiple manual partition assignments for partition %d", a.Partition)
			}
			seen[a.Partition] = true
			if code, msg := checkReplicas(a.Replicas); code != 0 {
				return 0, code, msg
			}
		}
		n := int32(len(rt.ReplicaAssignment))
		for p := range n {
			if !seen[p] {
				parts := make([]int32, 0, n)
				for q := range seen {
					parts = append(parts, q)
				}
				slices.Sort(parts)
				return 0, kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("partitions should be a consecutive 0-based integer sequence, but it is %v.", parts)
			}
		}
		return n, 0, ""
	}
	switch rf := rt.ReplicationFactor; {
	case rf < -1 || rf == 0:
		return 0, kerr.InvalidReplicationFactor.Code, "Replication factor must be larger than 0, or -1 to use the default value."
	case rf > 1:
		return 0, kerr.InvalidReplicationFactor.Code, fmt.Sprintf("Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only 1 broker(s) are registered.", rf, rf)
	}
	if np := rt.NumPartitions; np < -1 || np == 0 {
		return 0, kerr.InvalidPartitions.Code, "Number of partitions was set to an invalid non-positive value."
	}
	return rt.NumPartitions, 0, ""
}

// checkReplicas checks one partition's manual assignment: node 0 and
// nothing else, as Kafka checks that every broker named is registered.
// The replicas are checked in ascending order of broker id, as Kafka's
// ReplicationControlManager.validateManualPartitionAssignment walks them,
// so the error that wins when several apply is Kafka's: [0, 0, 5] names
// broker 0 twice, [5, 0, 0] too, and [0, 0, -1] names the unregistered
// broker -1. segfs walked them in request order and answered "broker 5"
// for [5, 0, 0] and "more than once" for [0, 0, -1]. (Kafka's last check,
// that every partition has as many replicas as the first, cannot fail
// here: the only valid list is [0].)
func checkReplicas(replicas []int32) (int16, string) {
	if len(replicas) == 0 {
		return kerr.InvalidReplicaAssignment.Code, "The manual partition assignment includes an empty replica list."
	}
	sorted := slices.Sorted(slices.Values(replicas))
	for i, b := range sorted {
		if b != nodeID {
			return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("The manual partition assignment includes broker %d, but no such broker is registered (this is a single broker, node %d).", b, nodeID)
		}
		if i > 0 && sorted[i-1] == b {
			return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("The manual partition assignment includes the broker %d more than once.", b)
		}
	}
	return 0, ""
}
