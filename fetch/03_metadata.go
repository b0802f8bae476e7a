package fetch

import (
	"errors"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/segfs/segfs/logstore"
)

// Metadata (key 3), versions 0-12.
//
// One broker (node 0, the advertised address), which is controller and the
// leader of every partition, replicas = ISR = [0], with the partition's
// current leader epoch (one more at each open of the partition:
// logstore/epochs.go).
// Topics: v0 with an empty list and v1+ with a null list mean all topics;
// an empty list at v1+ means none (kcat -L asks that first, P14). v10+
// carries the topic UUID (partition.metadata's); v12 may name topics by ID
// only, and a v12 request naming any topic by a non-zero ID is answered by
// its IDs alone (metadataByIDs). v10 and v11 have the fields but Kafka never served them: a request
// there naming a topic by ID or without a name is INVALID_REQUEST as a
// whole, as Kafka's handleTopicMetadataRequest refuses it (each topic of
// the request answered with that error and no partitions, no brokers).
// So is a v12 request naming a topic with neither name nor ID, and no
// topic by a non-zero ID (Kafka 4 refuses it as a whole too).
// Unknown topics are created when the server allows auto-creation and
// the request does (AllowAutoTopicCreation, v4+; implied before v4, as in
// Kafka), else UNKNOWN_TOPIC_OR_PARTITION, or INVALID_TOPIC_EXCEPTION for a
// name no topic can have, as Kafka answers. Kafka's internal topic names
// (__consumer_offsets, __transaction_state, __share_group_state) are never
// auto-created. Kafka's broker creates its internal topic on any Metadata
// request naming it, whatever auto.create.topics.enable says
// (KafkaApis.getTopicMetadata, AutoTopicCreationManager), with the
// offsets/transaction settings its coordinators run on, and a client's
// produce to it then fails at once with INVALID_TOPIC_EXCEPTION ("Cannot
// append to internal topic", ReplicaManager.appendToLocalLog). segfs keeps
// committed offsets in a file of its own (offsets.go): auto-creating would
// give a one-partition delete-policy topic nobody can produce to (`kcat -L
// -t __consumer_offsets` made one), and faking Kafka's 50 partitions would
// be a lie. So an unknown internal name is answered INVALID_TOPIC_EXCEPTION,
// is_internal set, no partitions: a producer fails at once on the error it
// would get from Kafka, and a consumer learns the topic will not appear.
// UNKNOWN_TOPIC_OR_PARTITION, answered before, is retriable: kcat -P
// waited topic.metadata.propagation.max.ms (30 s) before failing. mkdir and
// CreateTopics still create them, for data copied from Kafka. Authorized operations, when asked (v8+
// topics, v8-v10 the cluster), are every operation Kafka defines on them,
// as Kafka answers without an authorizer; segfs has none. v13 is not
// served: it only adds
// a top-level error for rebootstrapping.
func init() { register(3, 0, 12, handleMetadata) }

func handleMetadata(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	all := req.Topics == nil || (h.version == 0 && len(req.Topics) == 0)
	if !all && h.version < 12 && metadataNamesByID(req) {
		return c.send(h, metadataRefused(req, resp, kerr.InvalidRequest.Code))
	}
	if !all && h.version >= 12 && !metadataAnyID(req) && metadataNullName(req) {
		// A topic with neither name nor ID, and no topic by ID: Kafka
		// 4's handleTopicMetadataRequest takes the names as they are,
		// and its metadata cache's lookup of the null name throws
		// (KRaftMetadataCache.contains on an immutable map that takes
		// no null key), so the request is refused as a whole by
		// MetadataRequest.getErrorResponse, each topic with the error.
		// The code Kafka sends is that of the exception,
		// UNKNOWN_SERVER_ERROR; segfs sends INVALID_REQUEST, Kafka's
		// own code for a null name at v10-11, as the request is at
		// fault and nothing on the server failed. segfs answered this
		// entry alone UNKNOWN_TOPIC_ID and served (and auto-created)
		// the other names.
		return c.send(h, metadataRefused(req, resp, kerr.InvalidRequest.Code))
	}

	host, port := c.advertised()
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID, b.Host, b.Port = nodeID, host, port
	resp.Brokers = []kmsg.MetadataResponseBroker{b}
	cluster := c.s.cfg.ClusterID
	resp.ClusterID = &cluster
	resp.ControllerID = nodeID

	if all {
		for _, t := range c.s.store.Topics() {
			resp.Topics = append(resp.Topics, metadataTopic(t))
		}
		metadataOperations(h, req, resp)
		return c.send(h, resp)
	}
	if h.version >= 12 && metadataAnyID(req) {
		metadataByIDs(c, req, resp)
		metadataOperations(h, req, resp)
		return c.send(h, resp)
	}
	create := c.s.cfg.AutoCreateTopics && (h.version < 4 || req.AllowAutoTopicCreation)
	// Each name is answered once, as Kafka's handleTopicMetadataRequest
	// takes the request's names as a set.
	named := make(map[string]bool, len(req.Topics))
	for _, rt := range req.Topics {
		if rt.Topic != nil {
			if named[*rt.Topic] {
				continue
			}
			named[*rt.Topic] = true
		}
		t, err := c.s.topic(*rt.Topic, create)
		if err != nil {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = rt.Topic
			mt.ErrorCode = errorCode(err)
			// Kafka's getTopicMetadata answers a topic it does not
			// create by its name: INVALID_TOPIC_EXCEPTION when no topic
			// can have it, UNKNOWN_TOPIC_OR_PARTITION otherwise, and
			// is_internal for Kafka's internal names. A client that got
			// the retriable UNKNOWN_TOPIC_OR_PARTITION for "bad name"
			// kept asking for it instead of failing.
			if errors.Is(err, logstore.ErrUnknownTopic) && (logstore.ValidateTopicName(*rt.Topic) != nil || isInternalTopic(*rt.Topic)) {
				mt.ErrorCode = kerr.InvalidTopicException.Code
			}
			mt.IsInternal = isInternalTopic(*rt.Topic)
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, metadataTopic(t))
	}
	metadataOperations(h, req, resp)
	return c.send(h, resp)
}

// metadataAnyID reports whether a request names any topic by a non-zero
// topic ID.
func metadataAnyID(req *kmsg.MetadataRequest) bool {
	for _, rt := range req.Topics {
		if rt.TopicID != [16]byte{} {
			return true
		}
	}
	return false
}

// metadataByIDs answers a v12+ request naming some topic by ID as Kafka's
// handleTopicMetadataRequest does (useTopicId): only the non-zero IDs
// count, each once; every name in the request is ignored, so nothing is
// auto-created even when the request allows it. Unknown IDs come first,
// UNKNOWN_TOPIC_ID with the ID and a null name, then the known topics.
// segfs had answered the names too and created the unknown ones.
func metadataByIDs(c *conn, req *kmsg.MetadataRequest, resp *kmsg.MetadataResponse) {
	seen := make(map[[16]byte]bool, len(req.Topics))
	var known []*logstore.Topic
	for _, rt := range req.Topics {
		id := rt.TopicID
		if id == ([16]byte{}) || seen[id] {
			continue
		}
		seen[id] = true
		if t := c.s.topicByID(id); t != nil {
			known = append(known, t)
			continue
		}
		mt := kmsg.NewMetadataResponseTopic()
		mt.TopicID = id
		mt.ErrorCode = kerr.UnknownTopicID.Code
		resp.Topics = append(resp.Topics, mt)
	}
	for _, t := range known {
		resp.Topics = append(resp.Topics, metadataTopic(t))
	}
}

// metadataNamesByID reports whether a request names a topic by ID or
// without a name, which Kafka serves from v12 only.
func metadataNamesByID(req *kmsg.MetadataRequest) bool {
	for _, rt := range req.Topics {
		if rt.Topic == nil || rt.TopicID != [16]byte{} {
			return true
		}
	}
	return false
}

// metadataNullName reports whether a request names a topic without a name.
// An empty name is a name, an invalid one (Kafka's rule too).
func metadataNullName(req *kmsg.MetadataRequest) bool {
	for _, rt := range req.Topics {
		if rt.Topic == nil {
			return true
		}
	}
	return false
}

// metadataRefused turns resp into the answer Kafka gives a Metadata
// request it refuses as a whole (MetadataRequest.getErrorResponse): every
// topic asked for, by its name ("" when it had none) and ID, with code and
// no partitions; no brokers, no cluster ID, no controller.
func metadataRefused(req *kmsg.MetadataRequest, resp *kmsg.MetadataResponse, code int16) *kmsg.MetadataResponse {
	for _, rt := range req.Topics {
		mt := kmsg.NewMetadataResponseTopic()
		name := ""
		if rt.Topic != nil {
			name = *rt.Topic
		}
		mt.Topic = &name
		mt.TopicID = rt.TopicID
		mt.ErrorCode = code
		resp.Topics = append(resp.Topics, mt)
	}
	return resp
}

// metadataOperations fills the authorized operations a v8+ request asks
// for, as Kafka's handleTopicMetadataRequest does: every topic answered
// by name (not an unknown topic ID), and at v8-v10 the cluster. Without
// it admin clients (kadm's Metadata, the Java admin client's
// describeTopics with includeAuthorizedOperations) read "not provided".
func metadataOperations(h *reqHeader, req *kmsg.MetadataRequest, resp *kmsg.MetadataResponse) {
	if h.version < 8 {
		return
	}
	if req.IncludeClusterAuthorizedOperations && h.version <= 10 {
		resp.AuthorizedOperations = clusterOperations
	}
	if req.IncludeTopicAuthorizedOperations {
		for i := range resp.Topics {
			if resp.Topics[i].Topic != nil {
				resp.Topics[i].AuthorizedOperations = topicOperations
			}
		}
	}
}

func metadataTopic(t *logstore.Topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name()
	mt.Topic = &name
	mt.TopicID = t.ID()
	mt.IsInternal = isInternalTopic(name)
	for _, p := range t.Partitions() {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.Num()
		mp.Leader = nodeID
		mp.LeaderEpoch = p.LeaderEpoch()
		mp.Replicas = []int32{nodeID}
		mp.ISR = []int32{nodeID}
		mp.OfflineReplicas = []int32{}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// topic returns the named topic, creating it (with the store's default
// partition count) when create is set and it does not exist, unless the
// name is one of Kafka's internal topics (handleMetadata): auto-creation
// never makes those.
func (s *Server) topic(name string, create bool) (*logstore.Topic, error) {
	t, err := s.store.Topic(name)
	if err == nil || !create || isInternalTopic(name) || !errors.Is(err, logstore.ErrUnknownTopic) {
		return t, err
	}
	t, err = s.store.CreateTopic(name, 0, nil)
	if errors.Is(err, logstore.ErrTopicExists) { // lost a race with another creator
		return s.store.Topic(name)
	}
	if err == nil {
		s.log.Info("fetch: auto-created topic", "topic", name, "partitions", len(t.Partitions()))
	}
	return t, err
}

// topicByID finds a topic by UUID, nil if none has it. A linear scan: only
// Metadata v10+ requests by ID use it, and nobody has thousands of topics
// on one segfs.
func (s *Server) topicByID(id [16]byte) *logstore.Topic {
	if id == ([16]byte{}) {
		return nil
	}
	for _, t := range s.store.Topics() {
		if t.ID() == id {
			return t
		}
	}
	return nil
}

// advertised is the host and port clients should connect to: the
// configured address, else the local address this connection reached.
func (c *conn) advertised() (string, int32) {
	addr := c.s.cfg.Advertise
	if addr == "" {
		addr = c.nc.LocalAddr().String()
	}
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, 9092
	}
	port, err := strconv.ParseInt(portText, 10, 32)
	if err != nil {
		return host, 9092
	}
	return host, int32(port)
}
