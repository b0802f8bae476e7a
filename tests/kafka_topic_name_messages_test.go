package tests

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKafkaInvalidTopicNameMessages: an admin client creating a topic, or
// describing or altering the configs of one, under a name no topic can
// have gets INVALID_TOPIC_EXCEPTION with Kafka's message (Topic.validate:
// "Topic name is invalid: <reason>"), which confluent-kafka's AdminClient
// and kafka-topics.sh show to the user; segfs sent its own wording
// ("invalid topic name: ...: only [a-zA-Z0-9._-] are allowed"). Altering
// the configs of the empty topic name is INVALID_REQUEST "Default topic
// resources are not allowed.", as Kafka's controller answers it; segfs
// answered INVALID_TOPIC_EXCEPTION.
func TestKafkaInvalidTopicNameMessages(t *testing.T) {
	srv := kafkaServe(t, "")
	cl := kafkaClient(t, srv.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	long := strings.Repeat("n", 250)
	chars := "' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
	for name, want := range map[string]string{
		"bad name!": "Topic name is invalid: 'bad name!" + chars,
		"a/b":       "Topic name is invalid: 'a/b" + chars,
		"..":        "Topic name is invalid: '..' is not allowed",
		"":          "Topic name is invalid: the empty string is not allowed",
		long:        "Topic name is invalid: the length of '" + long + "' is longer than the max allowed length 249",
	} {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if st := resp.Topics[0]; st.ErrorCode != kerr.InvalidTopicException.Code || st.ErrorMessage == nil || *st.ErrorMessage != want {
			t.Errorf("CreateTopics %.20q: %v %v, want INVALID_TOPIC_EXCEPTION %.60q", name, kerr.ErrorForCode(st.ErrorCode), st.ErrorMessage, want)
		}
		if name == "" {
			continue
		}
		dreq := kmsg.NewPtrDescribeConfigsRequest()
		dr := kmsg.NewDescribeConfigsRequestResource()
		dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeTopic, name
		dreq.Resources = append(dreq.Resources, dr)
		dresp, err := dreq.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if r := dresp.Resources[0]; r.ErrorCode != kerr.InvalidTopicException.Code || r.ErrorMessage == nil || *r.ErrorMessage != want {
			t.Errorf("DescribeConfigs %.20q: %v %v, want INVALID_TOPIC_EXCEPTION %.60q", name, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, want)
		}
	}
	for _, tc := range []struct {
		name string
		code int16
		msg  string
	}{
		{"x y", kerr.InvalidTopicException.Code, "Topic name is invalid: 'x y" + chars},
		{"", kerr.InvalidRequest.Code, "Default topic resources are not allowed."},
	} {
		areq := kmsg.NewPtrIncrementalAlterConfigsRequest()
		ar := kmsg.NewIncrementalAlterConfigsRequestResource()
		ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeTopic, tc.name
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "retention.ms", kmsg.StringPtr("1000")
		ar.Configs = append(ar.Configs, c)
		areq.Resources = append(areq.Resources, ar)
		aresp, err := areq.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if r := aresp.Resources[0]; r.ErrorCode != tc.code || r.ErrorMessage == nil || *r.ErrorMessage != tc.msg {
			t.Errorf("IncrementalAlterConfigs %q: %v %v, want %v %q", tc.name, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, kerr.ErrorForCode(tc.code), tc.msg)
		}
		lreq := kmsg.NewPtrAlterConfigsRequest()
		lr := kmsg.NewAlterConfigsRequestResource()
		lr.ResourceType, lr.ResourceName = kmsg.ConfigResourceTypeTopic, tc.name
		lreq.Resources = append(lreq.Resources, lr)
		lresp, err := lreq.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if r := lresp.Resources[0]; r.ErrorCode != tc.code || r.ErrorMessage == nil || *r.ErrorMessage != tc.msg {
			t.Errorf("AlterConfigs %q: %v %v, want %v %q", tc.name, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, kerr.ErrorForCode(tc.code), tc.msg)
		}
	}
}

// TestKafkaCreateTopicCollisionMessage: creating a topic whose name
// differs from an existing one's only by '.' against '_' is
// INVALID_TOPIC_EXCEPTION "Topic 'a_b' collides with existing topic:
// a.b", as Kafka's controller words it, checked with the name, before the
// configs (validateNewTopicNames), with validate_only too. segfs sent its
// own wording, and a bad config of such a topic was INVALID_CONFIG.
func TestKafkaCreateTopicCollisionMessage(t *testing.T) {
	srv := kafkaServe(t, "")
	cl := kafkaClient(t, srv.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	create := func(name string, validateOnly bool, kv ...string) kmsg.CreateTopicsResponseTopic {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.ValidateOnly = validateOnly
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
		for i := 0; i+1 < len(kv); i += 2 {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = kv[i], kmsg.StringPtr(kv[i+1])
			rt.Configs = append(rt.Configs, c)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0]
	}
	if st := create("a.b", false); st.ErrorCode != 0 {
		t.Fatalf("create a.b: %v %v", kerr.ErrorForCode(st.ErrorCode), st.ErrorMessage)
	}
	want := "Topic 'a_b' collides with existing topic: a.b"
	for _, tc := range []struct {
		validateOnly bool
		kv           []string
	}{{false, nil}, {true, nil}, {false, []string{"retention.ms", "abc"}}} {
		st := create("a_b", tc.validateOnly, tc.kv...)
		if st.ErrorCode != kerr.InvalidTopicException.Code || st.ErrorMessage == nil || *st.ErrorMessage != want {
			t.Errorf("create a_b (validate only %v, configs %q): %v %v, want INVALID_TOPIC_EXCEPTION %q", tc.validateOnly, tc.kv, kerr.ErrorForCode(st.ErrorCode), st.ErrorMessage, want)
		}
	}
}
