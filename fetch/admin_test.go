package fetch

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/segfs/segfs/logstore"
)

// Tests of the topic admin APIs: CreateTopics, CreatePartitions,
// DeleteTopics, DescribeConfigs, AlterConfigs, IncrementalAlterConfigs and
// DescribeCluster, sent as raw kmsg requests through a kgo client (which
// picks the highest version both sides know) or at a chosen version over a
// raw connection.

func adminClient(t *testing.T, addr string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func adminCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newTopic(name string, partitions int32, rf int16, configs ...string) kmsg.CreateTopicsRequestTopic {
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	for i := 0; i+1 < len(configs); i += 2 {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = configs[i], kmsg.StringPtr(configs[i+1])
		rt.Configs = append(rt.Configs, c)
	}
	return rt
}

func createTopics(t *testing.T, cl *kgo.Client, validateOnly bool, topics ...kmsg.CreateTopicsRequestTopic) map[string]kmsg.CreateTopicsResponseTopic {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Topics, req.ValidateOnly = topics, validateOnly
	resp, err := req.RequestWith(adminCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]kmsg.CreateTopicsResponseTopic{}
	for _, st := range resp.Topics {
		if _, dup := out[st.Topic]; dup {
			t.Errorf("topic %s answered twice", st.Topic)
		}
		out[st.Topic] = st
	}
	return out
}

func errName(code int16) string {
	if code == 0 {
		return "OK"
	}
	return kerr.ErrorForCode(code).Error()
}

// wantUnknownTopicNoMessage checks a CreatePartitions answer for a topic
// that does not exist: UNKNOWN_TOPIC_OR_PARTITION without a message, as
// Kafka's controller throws UnknownTopicOrPartitionException without one.
func wantUnknownTopicNoMessage(t *testing.T, what string, st kmsg.CreatePartitionsResponseTopic) {
	t.Helper()
	if st.ErrorCode != kerr.UnknownTopicOrPartition.Code || st.ErrorMessage != nil {
		m := "<nil>"
		if st.ErrorMessage != nil {
			m = *st.ErrorMessage
		}
		t.Errorf("%s: %s, message %q; want UNKNOWN_TOPIC_OR_PARTITION without a message", what, errName(st.ErrorCode), m)
	}
}

func wantAdminCode(t *testing.T, what string, got int16, msg *string, want *kerr.Error) {
	t.Helper()
	wantC := int16(0)
	if want != nil {
		wantC = want.Code
	}
	m := "<nil>"
	if msg != nil {
		m = *msg
	}
	if got != wantC {
		t.Errorf("%s: %s (%s), want %s", what, errName(got), m, errName(wantC))
	}
	if want != nil && msg == nil {
		t.Errorf("%s: %s without an error message", what, errName(got))
	}
}

func TestCreateTopics(t *testing.T) {
	ts := startServer(t, Config{})
	cl := adminClient(t, ts.addr)
	if _, err := ts.store.CreateTopic("taken", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.store.CreateTopic("a_b", 1, nil); err != nil {
		t.Fatal(err)
	}

	manual := newTopic("manual", -1, -1)
	for p := range int32(2) {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = p, []int32{0}
		manual.ReplicaAssignment = append(manual.ReplicaAssignment, a)
	}
	assign := func(name string, np int32, rf int16, parts ...[]int32) kmsg.CreateTopicsRequestTopic {
		rt := newTopic(name, np, rf)
		for i, r := range parts {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = int32(i), r
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
		}
		return rt
	}
	gap := assign("gap", -1, -1, []int32{0})
	gap.ReplicaAssignment[0].Partition = 1
	twice := assign("twice", -1, -1, []int32{0}, []int32{0})
	twice.ReplicaAssignment[1].Partition = 0
	nullCfg := newTopic("nullcfg", 1, 1)
	nullCfg.Configs = append(nullCfg.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: "retention.ms"})

	got := createTopics(t, cl, false,
		newTopic("orders", 3, 1, "retention.ms", "1000", "cleanup.policy", " compact ", "key.separator", " "),
		newTopic("dflt", -1, -1),
		manual,
		newTopic("taken", 1, 1),
		newTopic("bad/name", 1, 1),
		newTopic("a.b", 1, 1),
		newTopic("badcfg", 1, 1, "retention.ms", "abc"),
		newTopic("unknowncfg", 1, 1, "no.such.key", "1"),
		newTopic("emptycfg", 1, 1, "segment.bytes", ""),
		newTopic("lags", 1, 1, "min.compaction.lag.ms", "10", "max.compaction.lag.ms", "5"),
		nullCfg,
		newTopic("rf2", 1, 2),
		newTopic("rf0", 1, 0),
		newTopic("np0", 0, 1),
		newTopic("npneg", -2, 1),
		assign("broker1", -1, -1, []int32{1}),
		assign("dupreplica", -1, -1, []int32{0, 0}),
		assign("noreplica", -1, -1, []int32{}),
		assign("withcount", 1, -1, []int32{0}),
		assign("withrf", -1, 1, []int32{0}),
		gap, twice,
		newTopic("dup", 1, 1), newTopic("dup", 2, 1),
		newTopic("__cluster_metadata", 1, 1),
		newTopic("__consumer_offsets", 2, 1),
	)
	for name, want := range map[string]*kerr.Error{
		"orders": nil, "dflt": nil, "manual": nil, "__consumer_offsets": nil,
		"taken":    kerr.TopicAlreadyExists,
		"bad/name": kerr.InvalidTopicException, "a.b": kerr.InvalidTopicException,
		"badcfg": kerr.InvalidConfig, "unknowncfg": kerr.InvalidConfig, "emptycfg": kerr.InvalidConfig,
		"lags": kerr.InvalidConfig, "nullcfg": kerr.InvalidConfig,
		"rf2": kerr.InvalidReplicationFactor, "rf0": kerr.InvalidReplicationFactor,
		"np0": kerr.InvalidPartitions, "npneg": kerr.InvalidPartitions,
		"broker1": kerr.InvalidReplicaAssignment, "dupreplica": kerr.InvalidReplicaAssignment,
		"noreplica": kerr.InvalidReplicaAssignment, "gap": kerr.InvalidReplicaAssignment,
		"twice":     kerr.InvalidReplicaAssignment,
		"withcount": kerr.InvalidRequest, "withrf": kerr.InvalidRequest, "dup": kerr.InvalidRequest,
		"__cluster_metadata": kerr.TopicAuthorizationFailed,
	} {
		st, ok := got[name]
		if !ok {
			t.Errorf("%s: no answer", name)
			continue
		}
		wantAdminCode(t, name, st.ErrorCode, st.ErrorMessage, want)
		_, err := ts.store.Topic(name)
		if exists := err == nil; exists != (want == nil || name == "taken") {
			t.Errorf("%s: exists %v after %s", name, exists, errName(st.ErrorCode))
		}
	}
	if m := got["badcfg"].ErrorMessage; m == nil || !strings.Contains(*m, "retention.ms") {
		t.Errorf("bad config message %v does not name the key", m)
	}

	// The answer (v7, kgo's choice) carries what was created.
	o := got["orders"]
	topic, err := ts.store.Topic("orders")
	if err != nil {
		t.Fatal(err)
	}
	if o.TopicID != topic.ID() || o.TopicID == [16]byte{} {
		t.Errorf("topic id %x, store has %x", o.TopicID, topic.ID())
	}
	if o.NumPartitions != 3 || o.ReplicationFactor != 1 || topic.PartitionCount() != 3 {
		t.Errorf("orders: answer %d partitions rf %d, store %d partitions", o.NumPartitions, o.ReplicationFactor, topic.PartitionCount())
	}
	if ov := topic.Overrides(); ov["retention.ms"] != "1000" || ov["cleanup.policy"] != "compact" || ov["key.separator"] != " " {
		t.Errorf("overrides %v: want retention.ms=1000, cleanup.policy=compact (trimmed as the config file does), key.separator=' ' (verbatim)", ov)
	}
	cfgs := map[string]kmsg.CreateTopicsResponseTopicConfig{}
	for _, c := range o.Configs {
		cfgs[c.Name] = c
	}
	if len(cfgs) != len(logstore.ConfigKeys()) {
		t.Errorf("%d configs in the answer, want %d", len(cfgs), len(logstore.ConfigKeys()))
	}
	if c := cfgs["retention.ms"]; *c.Value != "1000" || c.Source != int8(kmsg.ConfigSourceDynamicTopicConfig) {
		t.Errorf("retention.ms: %s source %d", *c.Value, c.Source)
	}
	if c := cfgs["segment.bytes"]; *c.Value != "1073741824" || c.Source != int8(kmsg.ConfigSourceDefaultConfig) {
		t.Errorf("segment.bytes: %s source %d", *c.Value, c.Source)
	}
	if d := got["dflt"]; d.NumPartitions != int32(ts.store.DefaultPartitions()) {
		t.Errorf("-1 partitions: %d, want the default %d", d.NumPartitions, ts.store.DefaultPartitions())
	}
	if m, _ := ts.store.Topic("manual"); m == nil || m.PartitionCount() != 2 || got["manual"].NumPartitions != 2 {
		t.Errorf("manual assignment of 2 partitions: %+v", got["manual"])
	}
	if e := got["taken"]; e.NumPartitions != -1 || e.Configs != nil {
		t.Errorf("an error answer carries partitions %d, configs %v", e.NumPartitions, e.Configs)
	}
}

func TestCreateTopicsValidateOnly(t *testing.T) {
	ts := startServer(t, Config{})
	cl := adminClient(t, ts.addr)
	got := createTopics(t, cl, true,
		newTopic("dry", 4, 1, "retention.ms", "5000"),
		newTopic("drybad", 1, 1, "retention.ms", "-5"),
		newTopic("dryrf", 1, 3),
		newTopic("drydflt", -1, -1))
	d := got["dry"]
	// -1 partitions (kafka-topics.sh --create --validate-only without
	// --partitions) answers the broker's default, as the creation would
	// make; no test sent it with validate_only.
	if dd := got["drydflt"]; dd.ErrorCode != 0 || dd.NumPartitions != int32(ts.store.DefaultPartitions()) || dd.NumPartitions < 1 {
		t.Errorf("dry run of -1 partitions: %s, %d partitions; want the default %d", errName(dd.ErrorCode), dd.NumPartitions, ts.store.DefaultPartitions())
	}
	wantAdminCode(t, "dry", d.ErrorCode, d.ErrorMessage, nil)
	wantAdminCode(t, "drybad", got["drybad"].ErrorCode, got["drybad"].ErrorMessage, kerr.InvalidConfig)
	wantAdminCode(t, "dryrf", got["dryrf"].ErrorCode, got["dryrf"].ErrorMessage, kerr.InvalidReplicationFactor)
	if d.NumPartitions != 4 || d.TopicID != [16]byte{} {
		t.Errorf("dry run: %d partitions, id %x", d.NumPartitions, d.TopicID)
	}
	found := false
	for _, c := range d.Configs {
		if c.Name == "retention.ms" && *c.Value == "5000" && c.Source == int8(kmsg.ConfigSourceDynamicTopicConfig) {
			found = true
		}
	}
	if !found {
		t.Errorf("dry run configs lack retention.ms=5000: %+v", d.Configs)
	}
	if n := ts.store.TopicCount(); n != 0 {
		t.Fatalf("validate_only created %d topics", n)
	}
	// The same request for real creates it.
	if st := createTopics(t, cl, false, newTopic("dry", 4, 1, "retention.ms", "5000"))["dry"]; st.ErrorCode != 0 {
		t.Fatalf("create after the dry run: %s", errName(st.ErrorCode))
	}
	if st := createTopics(t, cl, true, newTopic("dry", 4, 1))["dry"]; st.ErrorCode != kerr.TopicAlreadyExists.Code {
		t.Fatalf("dry run of an existing topic: %s", errName(st.ErrorCode))
	}
}

// Versions: v0 has no error message nor validate_only (a v0 request
// creates), v4 no configs in the answer, v5 adds them, v7 the topic id.
func TestCreateTopicsVersions(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	for v := int16(0); v <= 7; v++ {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version = v
		req.ValidateOnly = true
		name := "v" + string(rune('0'+v))
		req.Topics = []kmsg.CreateTopicsRequestTopic{newTopic(name, 2, 1), newTopic("bad name", 1, 1)}
		resp := c.roundTrip(req).(*kmsg.CreateTopicsResponse)
		ok, bad := resp.Topics[0], resp.Topics[1]
		if ok.ErrorCode != 0 || bad.ErrorCode != kerr.InvalidTopicException.Code {
			t.Fatalf("v%d: %s, %s", v, errName(ok.ErrorCode), errName(bad.ErrorCode))
		}
		if (bad.ErrorMessage != nil) != (v >= 1) {
			t.Errorf("v%d: error message %v", v, bad.ErrorMessage)
		}
		_, err := ts.store.Topic(name)
		if created := err == nil; created != (v == 0) {
			t.Errorf("v%d with validate_only: created %v", v, created)
		}
		if (len(ok.Configs) > 0) != (v >= 5) || (ok.NumPartitions == 2) != (v >= 5) {
			t.Errorf("v%d: %d configs, %d partitions", v, len(ok.Configs), ok.NumPartitions)
		}
		if ok.TopicID != [16]byte{} {
			t.Errorf("v%d: a dry run has topic id %x", v, ok.TopicID)
		}
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 6
	req.Topics = []kmsg.CreateTopicsRequestTopic{newTopic("six", 1, 1)}
	if st := c.roundTrip(req).(*kmsg.CreateTopicsResponse).Topics[0]; st.ErrorCode != 0 || st.TopicID != [16]byte{} {
		t.Errorf("v6: %s, id %x (v6 has none)", errName(st.ErrorCode), st.TopicID)
	}
}

func createPartitions(t *testing.T, cl *kgo.Client, validateOnly bool, topics ...kmsg.CreatePartitionsRequestTopic) map[string]kmsg.CreatePartitionsResponseTopic {
	t.Helper()
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Topics, req.ValidateOnly, req.TimeoutMillis = topics, validateOnly, 5000
	resp, err := req.RequestWith(adminCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]kmsg.CreatePartitionsResponseTopic{}
	for _, st := range resp.Topics {
		out[st.Topic] = st
	}
	return out
}

func growTo(name string, count int32, assignment ...[]int32) kmsg.CreatePartitionsRequestTopic {
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = name, count
	for _, r := range assignment {
		a := kmsg.NewCreatePartitionsRequestTopicAssignment()
		a.Replicas = r
		rt.Assignment = append(rt.Assignment, a)
	}
	return rt
}

func TestCreatePartitions(t *testing.T) {
	ts := startServer(t, Config{})
	cl := adminClient(t, ts.addr)
	for _, name := range []string{"grow", "same", "shrink", "assigned", "short", "elsewhere", "dry", "dup"} {
		if _, err := ts.store.CreateTopic(name, 2, nil); err != nil {
			t.Fatal(err)
		}
	}
	got := createPartitions(t, cl, false,
		growTo("grow", 4),
		growTo("same", 2),
		growTo("shrink", 1),
		growTo("nosuch", 3),
		growTo("assigned", 4, []int32{0}, []int32{0}),
		growTo("short", 4, []int32{0}),
		growTo("elsewhere", 3, []int32{1}),
		growTo("dup", 3), growTo("dup", 4),
	)
	for name, want := range map[string]struct {
		err   *kerr.Error
		count int
	}{
		"grow": {nil, 4}, "same": {kerr.InvalidPartitions, 2}, "shrink": {kerr.InvalidPartitions, 2},
		"nosuch": {kerr.UnknownTopicOrPartition, 0}, "assigned": {nil, 4},
		"short": {kerr.InvalidReplicaAssignment, 2}, "elsewhere": {kerr.InvalidReplicaAssignment, 2},
		"dup": {kerr.InvalidRequest, 2},
	} {
		st := got[name]
		if name == "nosuch" {
			wantUnknownTopicNoMessage(t, name, st)
			continue
		}
		wantAdminCode(t, name, st.ErrorCode, st.ErrorMessage, want.err)
		if tp, err := ts.store.Topic(name); err == nil && tp.PartitionCount() != want.count {
			t.Errorf("%s: %d partitions, want %d", name, tp.PartitionCount(), want.count)
		}
	}
	// The new partitions take records.
	p, err := ts.store.Partition("grow", 3)
	if err != nil {
		t.Fatal(err)
	}
	if p.Num() != 3 {
		t.Fatalf("partition %d", p.Num())
	}

	if st := createPartitions(t, cl, true, growTo("dry", 5))["dry"]; st.ErrorCode != 0 {
		t.Fatalf("validate_only: %s", errName(st.ErrorCode))
	}
	if tp, _ := ts.store.Topic("dry"); tp.PartitionCount() != 2 {
		t.Fatalf("validate_only added partitions: %d", tp.PartitionCount())
	}
	if st := createPartitions(t, cl, true, growTo("dry", 2))["dry"]; st.ErrorCode != kerr.InvalidPartitions.Code {
		t.Fatalf("validate_only of no growth: %s", errName(st.ErrorCode))
	}
}

func deleteTopics(t *testing.T, c *client, version int16, names ...string) *kmsg.DeleteTopicsResponse {
	t.Helper()
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = version
	for _, n := range names {
		if version >= 6 {
			rt := kmsg.NewDeleteTopicsRequestTopic()
			rt.Topic = kmsg.StringPtr(n)
			req.Topics = append(req.Topics, rt)
		} else {
			req.TopicNames = append(req.TopicNames, n)
		}
	}
	return c.roundTrip(req).(*kmsg.DeleteTopicsResponse)
}

// DeleteTopics is refused as by a Kafka broker with
// delete.topic.enable=false: every topic, known or not, gets
// TOPIC_DELETION_DISABLED (INVALID_REQUEST before v3), and nothing is
// deleted.
func TestDeleteTopicsDisabled(t *testing.T) {
	ts := startServer(t, Config{})
	tp, err := ts.store.CreateTopic("keep", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, ts.addr)
	for v := int16(0); v <= 6; v++ {
		resp := deleteTopics(t, c, v, "keep", "nosuch")
		want := kerr.TopicDeletionDisabled.Code
		if v < 3 {
			want = kerr.InvalidRequest.Code
		}
		if len(resp.Topics) != 2 {
			t.Fatalf("v%d: %d answers", v, len(resp.Topics))
		}
		for _, st := range resp.Topics {
			if st.ErrorCode != want {
				t.Errorf("v%d %s: %s, want %s", v, *st.Topic, errName(st.ErrorCode), errName(want))
			}
			if (st.ErrorMessage != nil) != (v >= 5) {
				t.Errorf("v%d: message %v", v, st.ErrorMessage)
			}
		}
	}
	// By topic id (v6).
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = 6
	rt := kmsg.NewDeleteTopicsRequestTopic()
	rt.TopicID = tp.ID()
	req.Topics = append(req.Topics, rt)
	if st := c.roundTrip(req).(*kmsg.DeleteTopicsResponse).Topics[0]; st.ErrorCode != kerr.TopicDeletionDisabled.Code || st.TopicID != tp.ID() {
		t.Errorf("by id: %s, id %x", errName(st.ErrorCode), st.TopicID)
	}
	if _, err := ts.store.Partition("keep", 0); err != nil {
		t.Fatalf("the topic is gone: %v", err)
	}
}

func describeConfigs(t *testing.T, cl *kgo.Client, synonyms bool, resources ...kmsg.DescribeConfigsRequestResource) []kmsg.DescribeConfigsResponseResource {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Resources, req.IncludeSynonyms = resources, synonyms
	resp, err := req.RequestWith(adminCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Resources) != len(resources) {
		t.Fatalf("%d resources answered, want %d", len(resp.Resources), len(resources))
	}
	return resp.Resources
}

func resource(typ kmsg.ConfigResourceType, name string, keys ...string) kmsg.DescribeConfigsRequestResource {
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = typ, name, keys
	return r
}

func configMap(r kmsg.DescribeConfigsResponseResource) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range r.Configs {
		out[c.Name] = c
	}
	return out
}

// Every key the config file shows has its Kafka type and synonym here: a
// key added to logstore without them would be described as UNKNOWN type.
func TestTopicConfigMetasCoverConfig(t *testing.T) {
	for _, k := range logstore.ConfigKeys() {
		if _, ok := topicConfigMetas[k]; !ok {
			t.Errorf("config key %s has no entry in topicConfigMetas", k)
		}
	}
	if len(topicConfigMetas) != len(logstore.ConfigKeys()) {
		t.Errorf("topicConfigMetas has %d keys, the config %d", len(topicConfigMetas), len(logstore.ConfigKeys()))
	}
}

func TestDescribeConfigsTopic(t *testing.T) {
	ts := startServer(t, Config{})
	cl := adminClient(t, ts.addr)
	tp, err := ts.store.CreateTopic("orders", 1, map[string]string{"retention.ms": "1000", "cleanup.policy": "compact,delete"})
	if err != nil {
		t.Fatal(err)
	}
	rs := describeConfigs(t, cl, true,
		resource(kmsg.ConfigResourceTypeTopic, "orders"),
		resource(kmsg.ConfigResourceTypeTopic, "orders", "retention.ms", "segment.bytes", "no.such"),
		resource(kmsg.ConfigResourceTypeTopic, "nosuch"),
		resource(kmsg.ConfigResourceTypeTopic, "bad name"),
	)
	wantAdminCode(t, "orders", rs[0].ErrorCode, rs[0].ErrorMessage, nil)
	wantAdminCode(t, "nosuch", rs[2].ErrorCode, rs[2].ErrorMessage, kerr.UnknownTopicOrPartition)
	wantAdminCode(t, "bad name", rs[3].ErrorCode, rs[3].ErrorMessage, kerr.InvalidTopicException)

	// Every line of the config file, with the same value.
	all := configMap(rs[0])
	text := string(tp.Config().Text())
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		k, v, _ := strings.Cut(line, "=")
		c, ok := all[k]
		if !ok {
			t.Errorf("%s missing", k)
			continue
		}
		if *c.Value != v || c.ReadOnly || c.IsSensitive || c.Documentation != nil {
			t.Errorf("%s: value %q read-only %v sensitive %v doc %v; config file has %q", k, *c.Value, c.ReadOnly, c.IsSensitive, c.Documentation, v)
		}
		overridden := k == "retention.ms" || k == "cleanup.policy"
		wantSrc := kmsg.ConfigSourceDefaultConfig
		if overridden {
			wantSrc = kmsg.ConfigSourceDynamicTopicConfig
		}
		if c.Source != wantSrc { // is_default is v0's (TestDescribeConfigsVersions)
			t.Errorf("%s: source %v", k, c.Source)
		}
		if c.ConfigType == kmsg.ConfigTypeUnknown {
			t.Errorf("%s: no type", k)
		}
	}
	if len(all) != len(logstore.ConfigKeys()) {
		t.Errorf("%d configs, want %d", len(all), len(logstore.ConfigKeys()))
	}
	ret := all["retention.ms"]
	if len(ret.ConfigSynonyms) != 2 || ret.ConfigSynonyms[0].Name != "retention.ms" || *ret.ConfigSynonyms[0].Value != "1000" ||
		ret.ConfigSynonyms[0].Source != kmsg.ConfigSourceDynamicTopicConfig ||
		ret.ConfigSynonyms[1].Name != "log.retention.hours" || *ret.ConfigSynonyms[1].Value != "168" ||
		ret.ConfigSynonyms[1].Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("retention.ms synonyms %+v", ret.ConfigSynonyms)
	}
	if seg := all["segment.bytes"]; len(seg.ConfigSynonyms) != 1 || seg.ConfigSynonyms[0].Name != "log.segment.bytes" {
		t.Errorf("segment.bytes synonyms %+v", seg.ConfigSynonyms)
	}
	if all["cleanup.policy"].ConfigType != kmsg.ConfigTypeList {
		t.Errorf("cleanup.policy type %v", all["cleanup.policy"].ConfigType)
	}
	if f := configMap(rs[1]); len(f) != 2 || f["retention.ms"].Name == "" || f["segment.bytes"].Name == "" {
		t.Errorf("config_names filter: %v", f)
	}

	// Without include_synonyms: none.
	rs = describeConfigs(t, cl, false, resource(kmsg.ConfigResourceTypeTopic, "orders", "retention.ms"))
	if c := rs[0].Configs; len(c) != 1 || len(c[0].ConfigSynonyms) != 0 {
		t.Errorf("without synonyms: %+v", c)
	}
}

// v0 has no source, only is_default; each version decodes.
func TestDescribeConfigsVersions(t *testing.T) {
	ts := startServer(t, Config{})
	if _, err := ts.store.CreateTopic("t", 1, map[string]string{"segment.ms": "60000"}); err != nil {
		t.Fatal(err)
	}
	c := dial(t, ts.addr)
	for v := int16(0); v <= 4; v++ {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Version, req.IncludeSynonyms, req.IncludeDocumentation = v, true, true
		req.Resources = []kmsg.DescribeConfigsRequestResource{resource(kmsg.ConfigResourceTypeTopic, "t", "segment.ms", "segment.bytes")}
		resp := c.roundTrip(req).(*kmsg.DescribeConfigsResponse)
		cm := configMap(resp.Resources[0])
		ms, sb := cm["segment.ms"], cm["segment.bytes"]
		if *ms.Value != "60000" || ms.IsDefault || *sb.Value != "1073741824" {
			t.Errorf("v%d: %+v %+v", v, ms, sb)
		}
		if v == 0 && !sb.IsDefault {
			t.Errorf("v0: segment.bytes not flagged default")
		}
		if v >= 1 && (ms.Source != kmsg.ConfigSourceDynamicTopicConfig || sb.Source != kmsg.ConfigSourceDefaultConfig || len(ms.ConfigSynonyms) != 2) {
			t.Errorf("v%d: sources %v %v, synonyms %+v", v, ms.Source, sb.Source, ms.ConfigSynonyms)
		}
		if v >= 3 && (ms.ConfigType != kmsg.ConfigTypeLong || sb.ConfigType != kmsg.ConfigTypeInt) {
			t.Errorf("v%d: types %v %v", v, ms.ConfigType, sb.ConfigType)
		}
		// Documentation from v3, when asked (it is here).
		if (ms.Documentation != nil) != (v >= 3) || (v >= 3 && *ms.Documentation != topicConfigDocs["segment.ms"]) {
			t.Errorf("v%d: segment.ms documentation %v", v, ms.Documentation)
		}
	}
}

func TestDescribeConfigsBroker(t *testing.T) {
	ts := startServer(t, Config{})
	cl := adminClient(t, ts.addr)
	// kgo splits a request by the broker each resource names, and sends
	// names of no broker nowhere: one resource through kgo, the rest over
	// a raw connection.
	rs := describeConfigs(t, cl, true, resource(kmsg.ConfigResourceTypeBroker, "0"))
	raw := kmsg.NewPtrDescribeConfigsRequest()
	raw.Version, raw.IncludeSynonyms = 4, true
	raw.Resources = []kmsg.DescribeConfigsRequestResource{
		resource(kmsg.ConfigResourceTypeBroker, ""),
		resource(kmsg.ConfigResourceTypeBroker, "0", "num.partitions"),
		resource(kmsg.ConfigResourceTypeBroker, "1"),
		resource(kmsg.ConfigResourceTypeBroker, "x"),
		resource(kmsg.ConfigResourceTypeBrokerLogger, "0"),
	}
	rs = append(rs, dial(t, ts.addr).roundTrip(raw).(*kmsg.DescribeConfigsResponse).Resources...)
	wantAdminCode(t, "broker 0", rs[0].ErrorCode, rs[0].ErrorMessage, nil)
	wantAdminCode(t, "default broker", rs[1].ErrorCode, rs[1].ErrorMessage, nil)
	wantAdminCode(t, "broker 1", rs[3].ErrorCode, rs[3].ErrorMessage, kerr.InvalidRequest)
	wantAdminCode(t, "broker x", rs[4].ErrorCode, rs[4].ErrorMessage, kerr.InvalidRequest)
	wantAdminCode(t, "broker logger", rs[5].ErrorCode, rs[5].ErrorMessage, nil)
	if l := rs[5].Configs; len(l) != 1 || l[0].Name != "root" || *l[0].Value != "INFO" || l[0].Source != kmsg.ConfigSourceDynamicBrokerLoggerConfig {
		t.Errorf("broker logger: %+v, want root at INFO", l)
	}
	b := configMap(rs[0])
	for k, v := range map[string]string{
		"num.partitions": "1", "delete.topic.enable": "false", "auto.create.topics.enable": "false",
		"log.segment.bytes": "1073741824", "log.retention.hours": "168", "log.cleanup.policy": "delete",
		"message.max.bytes": "1048588", "socket.request.max.bytes": "104857600", "broker.id": "0",
		"group.initial.rebalance.delay.ms": "1000",
	} {
		c, ok := b[k]
		if !ok || *c.Value != v || !c.ReadOnly || c.IsSensitive {
			t.Errorf("broker %s: %+v, want %s read-only", k, c, v)
		}
	}
	if c := b["num.partitions"]; c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("num.partitions 1 (Kafka's default): source %v", c.Source)
	}
	if c := b["delete.topic.enable"]; c.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Errorf("delete.topic.enable=false (not Kafka's default): source %v", c.Source)
	}
	if len(rs[1].Configs) != 0 {
		t.Errorf("default broker resource: %+v, want an empty list", rs[1].Configs)
	}
	if f := rs[2].Configs; len(f) != 1 || f[0].Name != "num.partitions" {
		t.Errorf("filter: %+v", f)
	}
}

func alterConfigs(t *testing.T, cl *kgo.Client, validateOnly bool, typ kmsg.ConfigResourceType, name string, kv ...*string) kmsg.AlterConfigsResponseResource {
	t.Helper()
	req := kmsg.NewPtrAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = typ, name
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = *kv[i], kv[i+1]
		r.Configs = append(r.Configs, c)
	}
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(adminCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Resources[0]
}

var sp = kmsg.StringPtr

func TestAlterConfigs(t *testing.T) {
	dir := t.TempDir()
	ts := startServerDir(t, dir, Config{})
	cl := adminClient(t, ts.addr)
	tp, err := ts.store.CreateTopic("t", 1, map[string]string{"retention.ms": "1000", "segment.ms": "5000"})
	if err != nil {
		t.Fatal(err)
	}
	overrides := func() map[string]string { return tp.Overrides() }
	topic := kmsg.ConfigResourceTypeTopic

	r := alterConfigs(t, cl, true, topic, "t", sp("max.message.bytes"), sp("2000"))
	wantAdminCode(t, "validate_only", r.ErrorCode, r.ErrorMessage, nil)
	if ov := overrides(); len(ov) != 2 || ov["retention.ms"] != "1000" {
		t.Fatalf("validate_only changed the overrides: %v", ov)
	}
	for what, kv := range map[string][]*string{
		"bad value":    {sp("retention.ms"), sp("soon")},
		"unknown key":  {sp("no.such"), sp("1")},
		"empty int":    {sp("segment.bytes"), sp("")},
		"cross-key":    {sp("min.compaction.lag.ms"), sp("10"), sp("max.compaction.lag.ms"), sp("5")},
		"out of range": {sp("segment.bytes"), sp("10")},
	} {
		r := alterConfigs(t, cl, false, topic, "t", kv...)
		wantAdminCode(t, what, r.ErrorCode, r.ErrorMessage, kerr.InvalidConfig)
	}
	r = alterConfigs(t, cl, false, topic, "t", sp("retention.ms"), nil)
	wantAdminCode(t, "null value", r.ErrorCode, r.ErrorMessage, kerr.InvalidRequest)
	r = alterConfigs(t, cl, false, topic, "t", sp("retention.ms"), sp("1"), sp("retention.ms"), sp("2"))
	wantAdminCode(t, "key twice", r.ErrorCode, r.ErrorMessage, kerr.InvalidRequest)
	if ov := overrides(); len(ov) != 2 || ov["retention.ms"] != "1000" || ov["segment.ms"] != "5000" {
		t.Fatalf("a refused alteration changed the overrides: %v", ov)
	}
	r = alterConfigs(t, cl, false, topic, "nosuch", sp("retention.ms"), sp("1"))
	wantAdminCode(t, "unknown topic", r.ErrorCode, r.ErrorMessage, kerr.UnknownTopicOrPartition)

	// Replaces every override: segment.ms goes back to its default.
	r = alterConfigs(t, cl, false, topic, "t", sp("max.message.bytes"), sp("2000"), sp("retention.ms"), sp(" 7000 "))
	wantAdminCode(t, "alter", r.ErrorCode, r.ErrorMessage, nil)
	if ov := overrides(); len(ov) != 2 || ov["max.message.bytes"] != "2000" || ov["retention.ms"] != "7000" {
		t.Fatalf("overrides after AlterConfigs: %v", ov)
	}
	if v, _ := tp.Config().Get("segment.ms"); v != "604800000" {
		t.Fatalf("segment.ms %s, want the default", v)
	}

	broker := kmsg.ConfigResourceTypeBroker
	r = alterConfigs(t, cl, false, broker, "0", sp("num.partitions"), sp("3"))
	wantAdminCode(t, "broker setting", r.ErrorCode, r.ErrorMessage, kerr.InvalidRequest)
	r = alterConfigs(t, cl, false, broker, "0")
	wantAdminCode(t, "broker, no setting", r.ErrorCode, r.ErrorMessage, nil)
	r = alterConfigs(t, cl, false, broker, "", sp("log.retention.ms"), sp("3"))
	wantAdminCode(t, "default broker setting", r.ErrorCode, r.ErrorMessage, kerr.InvalidRequest)

	// Persisted: a new server over the same directory has them.
	ts.stop()
	ts2 := startServerDir(t, dir, Config{})
	tp2, err := ts2.store.Topic("t")
	if err != nil {
		t.Fatal(err)
	}
	if ov := tp2.Overrides(); len(ov) != 2 || ov["max.message.bytes"] != "2000" {
		t.Fatalf("after a restart: %v", ov)
	}
}

func incrementalAlter(t *testing.T, cl *kgo.Client, validateOnly bool, typ kmsg.ConfigResourceType, name string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) kmsg.IncrementalAlterConfigsResponseResource {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.Configs = typ, name, ops
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(adminCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Resources[0]
}

func op(o kmsg.IncrementalAlterConfigOp, name string, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Op, c.Name, c.Value = o, name, value
	return c
}

func TestIncrementalAlterConfigs(t *testing.T) {
	ts := startServer(t, Config{})
	cl := adminClient(t, ts.addr)
	tp, err := ts.store.CreateTopic("t", 1, map[string]string{"retention.ms": "1000", "segment.ms": "5000"})
	if err != nil {
		t.Fatal(err)
	}
	topic := kmsg.ConfigResourceTypeTopic
	const (
		set      = kmsg.IncrementalAlterConfigOpSet
		del      = kmsg.IncrementalAlterConfigOpDelete
		appendOp = kmsg.IncrementalAlterConfigOpAppend
		subtract = kmsg.IncrementalAlterConfigOpSubtract
	)
	get := func(k string) string { v, _ := tp.Config().Get(k); return v }

	r := incrementalAlter(t, cl, false, topic, "t", op(set, "retention.ms", sp("2000")), op(del, "segment.ms", nil))
	wantAdminCode(t, "set+delete", r.ErrorCode, r.ErrorMessage, nil)
	if ov := tp.Overrides(); len(ov) != 1 || ov["retention.ms"] != "2000" {
		t.Fatalf("overrides %v", ov)
	}
	r = incrementalAlter(t, cl, false, topic, "t", op(appendOp, "cleanup.policy", sp("compact")))
	wantAdminCode(t, "append", r.ErrorCode, r.ErrorMessage, nil)
	if v := get("cleanup.policy"); v != "compact,delete" {
		t.Fatalf("cleanup.policy after APPEND compact: %s", v)
	}
	r = incrementalAlter(t, cl, false, topic, "t", op(subtract, "cleanup.policy", sp("delete")))
	wantAdminCode(t, "subtract", r.ErrorCode, r.ErrorMessage, nil)
	if v := get("cleanup.policy"); v != "compact" {
		t.Fatalf("cleanup.policy after SUBTRACT delete: %s", v)
	}
	before := tp.Overrides()
	for what, tc := range map[string]struct {
		ops  []kmsg.IncrementalAlterConfigsRequestResourceConfig
		want *kerr.Error
	}{
		"subtract all":     {[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op(subtract, "cleanup.policy", sp("compact"))}, kerr.InvalidConfig},
		"append not list":  {[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op(appendOp, "retention.ms", sp("1"))}, kerr.InvalidConfig},
		"subtract no list": {[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op(subtract, "segment.bytes", sp("1"))}, kerr.InvalidConfig},
		"append bad item":  {[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op(appendOp, "cleanup.policy", sp("shred"))}, kerr.InvalidConfig},
		"bad value":        {[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op(set, "retention.ms", sp("x"))}, kerr.InvalidConfig},
		"unknown key":      {[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op(set, "no.such", sp("1"))}, kerr.InvalidConfig},
		"cross-key":        {[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op(set, "min.compaction.lag.ms", sp("10")), op(set, "max.compaction.lag.ms", sp("5"))}, kerr.InvalidConfig},
		"null set":         {[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op(set, "retention.ms", nil)}, kerr.InvalidRequest},
		"unknown op":       {[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op(9, "retention.ms", sp("1"))}, kerr.InvalidRequest},
		"key twice":        {[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op(set, "retention.ms", sp("1")), op(del, "retention.ms", nil)}, kerr.InvalidRequest},
		// All or nothing: the good SET is not applied either.
		"one bad of two": {[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op(set, "flush.ms", sp("10")), op(set, "segment.bytes", sp("1"))}, kerr.InvalidConfig},
	} {
		r := incrementalAlter(t, cl, false, topic, "t", tc.ops...)
		wantAdminCode(t, what, r.ErrorCode, r.ErrorMessage, tc.want)
	}
	if ov := tp.Overrides(); len(ov) != len(before) || ov["retention.ms"] != "2000" || ov["flush.ms"] != "" {
		t.Fatalf("refused alterations changed the overrides: %v, were %v", ov, before)
	}
	r = incrementalAlter(t, cl, true, topic, "t", op(set, "retention.ms", sp("9")))
	wantAdminCode(t, "validate_only", r.ErrorCode, r.ErrorMessage, nil)
	if get("retention.ms") != "2000" {
		t.Fatalf("validate_only changed retention.ms: %s", get("retention.ms"))
	}
	r = incrementalAlter(t, cl, false, topic, "nosuch", op(set, "retention.ms", sp("9")))
	wantAdminCode(t, "unknown topic", r.ErrorCode, r.ErrorMessage, kerr.UnknownTopicOrPartition)
	r = incrementalAlter(t, cl, false, kmsg.ConfigResourceTypeBroker, "0", op(set, "log.retention.ms", sp("9")))
	wantAdminCode(t, "broker", r.ErrorCode, r.ErrorMessage, kerr.InvalidRequest)
	raw := kmsg.NewPtrIncrementalAlterConfigsRequest()
	raw.Version = 1
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "7"
	rr.Configs = append(rr.Configs, op(set, "log.retention.ms", sp("9")))
	raw.Resources = append(raw.Resources, rr)
	r = dial(t, ts.addr).roundTrip(raw).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
	wantAdminCode(t, "broker 7", r.ErrorCode, r.ErrorMessage, kerr.InvalidRequest)
	if m := r.ErrorMessage; m == nil || !strings.Contains(*m, "broker id") {
		t.Errorf("broker 7 message %v", m)
	}
}

// A resource named twice in one alteration is refused, not applied twice.
func TestAlterConfigsDuplicateResource(t *testing.T) {
	ts := startServer(t, Config{})
	if _, err := ts.store.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	c := dial(t, ts.addr)
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	for _, v := range []string{"1", "2"} {
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
		r.Configs = append(r.Configs, op(kmsg.IncrementalAlterConfigOpSet, "retention.ms", sp(v)))
		req.Resources = append(req.Resources, r)
	}
	for _, sr := range c.roundTrip(req).(*kmsg.IncrementalAlterConfigsResponse).Resources {
		wantAdminCode(t, "twice", sr.ErrorCode, sr.ErrorMessage, kerr.InvalidRequest)
	}
	if tp, _ := ts.store.Topic("t"); len(tp.Overrides()) != 0 {
		t.Fatalf("applied: %v", tp.Overrides())
	}
}

// Authorized operations, when asked, are all that Kafka defines on the
// resource, as Kafka's AuthHelper.authorizedOperations answers without an
// authorizer: Metadata v8+ for topics (v8-v10 also the cluster),
// DescribeGroups v3+ and ConsumerGroupDescribe for groups answered without
// error. segfs answered "not provided" (-2147483648) to all of them.
func TestAuthorizedOperations(t *testing.T) {
	const (
		notProvided = int32(-2147483648)
		topicOps    = 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<10 | 1<<11 // READ WRITE CREATE DELETE ALTER DESCRIBE DESCRIBE_CONFIGS ALTER_CONFIGS
		groupOps    = 1<<3 | 1<<6 | 1<<8 | 1<<10 | 1<<11                      // READ DELETE DESCRIBE DESCRIBE_CONFIGS ALTER_CONFIGS
		clusterOps  = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12       // CREATE ALTER DESCRIBE CLUSTER_ACTION DESCRIBE_CONFIGS ALTER_CONFIGS IDEMPOTENT_WRITE
	)
	ts := startServer(t, Config{})
	createTopic(t, ts, "a", 1)
	c := dial(t, ts.addr)
	for v := int16(8); v <= 12; v++ {
		for _, ask := range []bool{false, true} {
			req := kmsg.NewPtrMetadataRequest()
			req.Version = v
			req.IncludeTopicAuthorizedOperations, req.IncludeClusterAuthorizedOperations = ask, ask
			for _, name := range []string{"a", "missing"} {
				rt := kmsg.NewMetadataRequestTopic()
				rt.Topic = kmsg.StringPtr(name)
				req.Topics = append(req.Topics, rt)
			}
			resp := c.roundTrip(req).(*kmsg.MetadataResponse)
			wantTopic, wantCluster := notProvided, notProvided
			if ask {
				wantTopic = topicOps
				if v <= 10 {
					wantCluster = clusterOps
				}
			}
			for _, mt := range resp.Topics {
				if mt.AuthorizedOperations != wantTopic {
					t.Errorf("metadata v%d ask=%v topic %s: operations %b, want %b", v, ask, *mt.Topic, mt.AuthorizedOperations, wantTopic)
				}
			}
			if resp.AuthorizedOperations != wantCluster {
				t.Errorf("metadata v%d ask=%v: cluster operations %b, want %b", v, ask, resp.AuthorizedOperations, wantCluster)
			}
		}
	}

	// A classic group known by its offsets, an unknown one (Dead, no
	// error before v6) and a consumer group with a member.
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Version, oc.Group, oc.Generation = 8, "classic", -1
	oct := kmsg.NewOffsetCommitRequestTopic()
	oct.Topic = "a"
	ocp := kmsg.NewOffsetCommitRequestTopicPartition()
	ocp.Offset = 0
	oct.Partitions = append(oct.Partitions, ocp)
	oc.Topics = append(oc.Topics, oct)
	if r := c.roundTrip(oc).(*kmsg.OffsetCommitResponse); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit: %s", errName(r.Topics[0].Partitions[0].ErrorCode))
	}
	if r := c.cgh(cgh{group: "consumer", member: "m1", topics: []string{"a"}}); r.ErrorCode != 0 {
		t.Fatalf("consumer group join: %s", errName(r.ErrorCode))
	}
	for v := int16(0); v <= 5; v++ {
		for _, ask := range []bool{false, true} {
			req := kmsg.NewPtrDescribeGroupsRequest()
			req.Version, req.Groups, req.IncludeAuthorizedOperations = v, []string{"classic", "unknown", "consumer"}, ask
			resp := c.roundTrip(req).(*kmsg.DescribeGroupsResponse)
			want := notProvided
			if ask && v >= 3 {
				want = groupOps
			}
			for _, g := range resp.Groups {
				if g.ErrorCode != 0 || g.AuthorizedOperations != want {
					t.Errorf("describe groups v%d ask=%v %s: %s, operations %b, want %b", v, ask, g.Group, errName(g.ErrorCode), g.AuthorizedOperations, want)
				}
			}
		}
	}
	for v := int16(0); v <= 1; v++ {
		for _, ask := range []bool{false, true} {
			req := kmsg.NewPtrConsumerGroupDescribeRequest()
			req.Version, req.Groups, req.IncludeAuthorizedOperations = v, []string{"consumer", "classic"}, ask
			resp := c.roundTrip(req).(*kmsg.ConsumerGroupDescribeResponse)
			for _, g := range resp.Groups {
				want := notProvided
				if ask && g.ErrorCode == 0 {
					want = groupOps
				}
				if g.AuthorizedOperations != want || (g.Group == "consumer") != (g.ErrorCode == 0) {
					t.Errorf("consumer group describe v%d ask=%v %s: %s, operations %b, want %b", v, ask, g.Group, errName(g.ErrorCode), g.AuthorizedOperations, want)
				}
			}
		}
	}
}

func TestDescribeCluster(t *testing.T) {
	ts := startServer(t, Config{ClusterID: "my-cluster"})
	c := dial(t, ts.addr)
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	mresp := c.roundTrip(md).(*kmsg.MetadataResponse)
	for v := int16(0); v <= 2; v++ {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version = v
		req.IncludeClusterAuthorizedOperations = v == 1
		resp := c.roundTrip(req).(*kmsg.DescribeClusterResponse)
		if resp.ErrorCode != 0 || resp.ClusterID != *mresp.ClusterID || resp.ClusterID != "my-cluster" || resp.ControllerID != 0 {
			t.Fatalf("v%d: %s cluster %q controller %d", v, errName(resp.ErrorCode), resp.ClusterID, resp.ControllerID)
		}
		if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 0 || resp.Brokers[0].Host != mresp.Brokers[0].Host || resp.Brokers[0].Port != mresp.Brokers[0].Port || resp.Brokers[0].IsFenced {
			t.Fatalf("v%d: brokers %+v, metadata %+v", v, resp.Brokers, mresp.Brokers)
		}
		// Asked for, every operation Kafka defines on a cluster (Kafka
		// without an authorizer allows all), by the codes of Kafka's
		// AclOperation: CREATE is 5 (segfs set bit 4, WRITE).
		want := int32(-2147483648)
		if v == 1 {
			want = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12
		}
		if ops := resp.ClusterAuthorizedOperations; ops != want {
			t.Errorf("v%d: authorized operations %b, want %b", v, ops, want)
		}
	}
	req := kmsg.NewPtrDescribeClusterRequest()
	req.Version, req.EndpointType = 1, 2
	if resp := c.roundTrip(req).(*kmsg.DescribeClusterResponse); resp.ErrorCode != kerr.MismatchedEndpointType.Code {
		t.Fatalf("controllers endpoint: %s", errName(resp.ErrorCode))
	}

	// Through kgo, as an admin client asks.
	cl := adminClient(t, ts.addr)
	resp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(adminCtx(t), cl)
	if err != nil || resp.ClusterID != "my-cluster" || len(resp.Brokers) != 1 {
		t.Fatalf("kgo: %v %+v", err, resp)
	}

}

// TestAdminTooLargeOp: a request that would make more than Kafka's 10000
// metadata records (QuorumController.MAX_RECORDS_PER_USER_OP) is refused
// whole with POLICY_VIOLATION, dry run or not, as Kafka's controller
// refuses it. Before, a typo such as a billion partitions had segfs create
// partition directories for hours, holding the topic lock.
func TestAdminTooLargeOp(t *testing.T) {
	ts := startServer(t, Config{})
	cl := adminClient(t, ts.addr)
	for _, name := range []string{"exists", "grow", "grow2"} {
		if _, err := ts.store.CreateTopic(name, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	policy := func(what string, code int16, msg *string) {
		t.Helper()
		wantAdminCode(t, what, code, msg, kerr.PolicyViolation)
		if code == kerr.PolicyViolation.Code && (msg == nil || *msg != tooLargeOpMessage) {
			t.Errorf("%s: message %v, want Kafka's %q", what, msg, tooLargeOpMessage)
		}
	}

	// A topic's record, one per config and one per partition: 10000 fit.
	if st := createTopics(t, cl, true, newTopic("edge", 9998, 1, "retention.ms", "1"))["edge"]; st.ErrorCode != 0 {
		t.Errorf("dry run of 10000 records: %s", errName(st.ErrorCode))
	}
	st := createTopics(t, cl, true, newTopic("over", 9999, 1, "retention.ms", "1"))["over"]
	policy("dry run of 10001 records", st.ErrorCode, st.ErrorMessage)
	st = createTopics(t, cl, true, newTopic("huge", 1<<31-1, -1))["huge"]
	policy("dry run of 2^31-1 partitions", st.ErrorCode, st.ErrorMessage)

	// A topic that exists makes no records, and is answered as such.
	st = createTopics(t, cl, false, newTopic("exists", 1<<31-1, 1))["exists"]
	wantAdminCode(t, "exists", st.ErrorCode, st.ErrorMessage, kerr.TopicAlreadyExists)
	// The whole request fails, the small topic with the large ones.
	got := createTopics(t, cl, false,
		newTopic("small", 1, 1), newTopic("half1", 5000, 1), newTopic("half2", 5000, 1))
	for _, name := range []string{"small", "half1", "half2"} {
		policy(name, got[name].ErrorCode, got[name].ErrorMessage)
		if _, err := ts.store.Topic(name); err == nil {
			t.Errorf("%s was created by a refused request", name)
		}
	}

	// CreatePartitions: one record per new partition, over every topic.
	if st := createPartitions(t, cl, true, growTo("grow", 10001))["grow"]; st.ErrorCode != 0 {
		t.Errorf("dry run adding 10000 partitions: %s", errName(st.ErrorCode))
	}
	sp := createPartitions(t, cl, true, growTo("grow", 10002))["grow"]
	policy("dry run adding 10001 partitions", sp.ErrorCode, sp.ErrorMessage)
	sp = createPartitions(t, cl, false, growTo("nosuch", 1<<31-1))["nosuch"]
	wantUnknownTopicNoMessage(t, "nosuch", sp)
	gotP := createPartitions(t, cl, false, growTo("grow", 5001), growTo("grow2", 5002))
	for _, name := range []string{"grow", "grow2"} {
		policy(name, gotP[name].ErrorCode, gotP[name].ErrorMessage)
		if tp, _ := ts.store.Topic(name); tp.PartitionCount() != 1 {
			t.Errorf("%s has %d partitions after a refused request", name, tp.PartitionCount())
		}
	}
	// A topic of a too large request that adds no partitions keeps its
	// own error, as Kafka's controller finds it before it makes a record:
	// an unknown topic, a count that does not grow, an assignment of the
	// wrong length. segfs answered them POLICY_VIOLATION.
	for _, validateOnly := range []bool{true, false} {
		odd := growTo("grow2", 4, []int32{0}) // 3 new partitions, 1 assignment
		gotP = createPartitions(t, cl, validateOnly, growTo("nosuch", 5), growTo("grow", 10002), growTo("exists", 1), odd)
		wantUnknownTopicNoMessage(t, "unknown topic in a too large request", gotP["nosuch"])
		policy("grow in a too large request", gotP["grow"].ErrorCode, gotP["grow"].ErrorMessage)
		wantAdminCode(t, "no increase in a too large request", gotP["exists"].ErrorCode, gotP["exists"].ErrorMessage, kerr.InvalidPartitions)
		wantAdminCode(t, "short assignment in a too large request", gotP["grow2"].ErrorCode, gotP["grow2"].ErrorMessage, kerr.InvalidReplicaAssignment)
		if tp, _ := ts.store.Topic("grow"); tp.PartitionCount() != 1 {
			t.Errorf("grow has %d partitions after a refused request", tp.PartitionCount())
		}
	}
	// A refused request leaves the server serving: a small one passes.
	if st := createPartitions(t, cl, false, growTo("grow", 3))["grow"]; st.ErrorCode != 0 {
		t.Errorf("adding 2 partitions: %s", errName(st.ErrorCode))
	}
}

// TestAdminConcurrent: admin requests from several clients at once answer
// as if one after the other, as Kafka's single-threaded controller does.
// Before, two CreatePartitions both checked the old count and then raced
// to add the same partitions: a valid request failed with "partition
// already exists"; and a legacy AlterConfigs, which resets every override
// it does not name, could leave another's overrides set beside its own.
func TestAdminConcurrent(t *testing.T) {
	ts := startServer(t, Config{})
	const clients = 4
	var cls [clients]*kgo.Client
	for i := range cls {
		cls[i] = adminClient(t, ts.addr)
	}
	for round := range 10 {
		name := fmt.Sprintf("grow%d", round)
		if _, err := ts.store.CreateTopic(name, 1, nil); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var answers [clients]kmsg.CreatePartitionsResponseTopic
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := kmsg.NewPtrCreatePartitionsRequest()
				req.Topics, req.TimeoutMillis = []kmsg.CreatePartitionsRequestTopic{growTo(name, int32(5*(i+1)))}, 5000
				resp, err := req.RequestWith(adminCtx(t), cls[i])
				if err != nil {
					t.Error(err)
					return
				}
				answers[i] = resp.Topics[0]
			}()
		}
		wg.Wait()
		// Whatever the order, the largest count grows the topic; a smaller
		// one either grows it or finds it already as large.
		for i, st := range answers {
			if st.ErrorCode == 0 {
				continue
			}
			if i == clients-1 || st.ErrorCode != kerr.InvalidPartitions.Code || st.ErrorMessage == nil ||
				strings.Contains(*st.ErrorMessage, "already exists") {
				t.Errorf("round %d: growing to %d: %s (%v)", round, 5*(i+1), errName(st.ErrorCode), st.ErrorMessage)
			}
		}
		if tp, _ := ts.store.Topic(name); tp.PartitionCount() != 5*clients {
			t.Errorf("round %d: %d partitions, want %d", round, tp.PartitionCount(), 5*clients)
		}
	}

	if _, err := ts.store.CreateTopic("configs", 1, nil); err != nil {
		t.Fatal(err)
	}
	keys := [clients]string{"retention.ms", "segment.ms", "flush.ms", "delete.retention.ms"}
	for round := range 20 {
		var wg sync.WaitGroup
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				value := strconv.Itoa(1000 + round)
				if st := alterConfigs(t, cls[i], false, kmsg.ConfigResourceTypeTopic, "configs", &keys[i], &value); st.ErrorCode != 0 {
					t.Errorf("round %d: setting %s: %s", round, keys[i], errName(st.ErrorCode))
				}
			}()
		}
		wg.Wait()
		// Each request replaces every override: one of them came last.
		tp, _ := ts.store.Topic("configs")
		if ov := tp.Overrides(); len(ov) != 1 {
			t.Fatalf("round %d: overrides %v after AlterConfigs that each set one and reset the rest", round, ov)
		}
	}
}

// TestAlterConfigsConcurrentConfigWrite: a change of the config file
// (Topic.SetConfig, the path of `echo k=v > MOUNT/T/config`) that lands
// after an alteration computed its changes from the topic's settings and
// before it applied them is not lost; testHookChangesBuilt forces that
// interleaving. Before, IncrementalAlterConfigs APPEND delete computed
// cleanup.policy from the value it had read (delete) and set it over the
// compact just written; and a legacy AlterConfigs, which resets every
// override it does not name, left the one just written set.
func TestAlterConfigsConcurrentConfigWrite(t *testing.T) {
	ts := startServer(t, Config{})
	cl := adminClient(t, ts.addr)
	tp, err := ts.store.CreateTopic("t", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	writeOnce := func(changes map[string]string) {
		var once sync.Once
		testHookChangesBuilt = func(hooked *logstore.Topic) {
			once.Do(func() {
				if err := hooked.SetConfig(changes); err != nil {
					t.Error(err)
				}
			})
		}
	}
	t.Cleanup(func() { testHookChangesBuilt = nil })
	topic := kmsg.ConfigResourceTypeTopic

	writeOnce(map[string]string{"cleanup.policy": "compact"})
	r := incrementalAlter(t, cl, false, topic, "t", op(kmsg.IncrementalAlterConfigOpAppend, "cleanup.policy", sp("delete")))
	wantAdminCode(t, "append", r.ErrorCode, r.ErrorMessage, nil)
	if v, _ := tp.Config().Get("cleanup.policy"); v != "compact,delete" {
		t.Errorf("cleanup.policy=compact written during an APPEND delete: now %s, want compact,delete", v)
	}

	writeOnce(map[string]string{"retention.ms": "5000"})
	r2 := alterConfigs(t, cl, false, topic, "t", sp("segment.ms"), sp("1000"))
	wantAdminCode(t, "alter", r2.ErrorCode, r2.ErrorMessage, nil)
	if ov := tp.Overrides(); len(ov) != 1 || ov["segment.ms"] != "1000" {
		t.Errorf("retention.ms written during an AlterConfigs that replaces every override: overrides %v, want segment.ms alone", ov)
	}
}

// TestConfigDocs: every setting DescribeConfigs lists for a topic, the
// broker or a group has documentation, sent when include_documentation
// asks for it (segfs sent null), one sentence; one segfs accepts and
// ignores says so.
func TestConfigDocs(t *testing.T) {
	ts := startServer(t, Config{})
	if missing := ts.srv.undocumentedConfigs(); len(missing) > 0 {
		t.Errorf("settings without documentation: %v", missing)
	}
	for _, docs := range []map[string]string{topicConfigDocs, brokerConfigDocs, groupConfigDocs} {
		for k, d := range docs {
			if !strings.HasSuffix(d, ".") || strings.Count(strings.TrimSuffix(d, inertNote), ". ") > 0 {
				t.Errorf("%s: %q is not one sentence", k, d)
			}
		}
	}
	for _, k := range logstore.InertConfigKeys() {
		if !strings.HasSuffix(topicConfigDocs[k], inertNote) {
			t.Errorf("%s is not applied, but its documentation does not say so: %q", k, topicConfigDocs[k])
		}
	}
}
