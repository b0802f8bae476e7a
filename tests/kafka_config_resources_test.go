package tests

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKafkaConfigResourcesGroupLoggerMetrics: DescribeConfigs and
// IncrementalAlterConfigs of the resource types Kafka 4 added besides
// topics and brokers, against `segfs serve --debug` started with its own
// consumer group session timeout. segfs answered INVALID_REQUEST
// ("Unsupported resource type") for all three. Now, as a Kafka 4 broker:
// a group (any name) lists its KIP-848 session timeout and heartbeat
// interval, the server's values, with the broker setting as synonym; the
// broker logger resource "0" lists root at the level segfs logs from; a
// client metrics subscription lists nothing (segfs collects no client
// metrics, so it advertises none of Kafka's defaults). Empty names are
// INVALID_REQUEST with Kafka's messages. segfs applies none of the group
// and client metrics settings per resource, so their entries are
// read-only and a change is refused, INVALID_REQUEST, while an empty
// change succeeds (changing the broker logger: kafka_broker_logger_test.go).
func TestKafkaConfigResourcesGroupLoggerMetrics(t *testing.T) {
	srv := kafkaServe(t, "", "--debug", "--group-consumer-session-timeout", "20s")
	cl := kafkaClient(t, srv.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	describe := func(typ kmsg.ConfigResourceType, name string) kmsg.DescribeConfigsResponseResource {
		t.Helper()
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.IncludeSynonyms = true
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = typ, name
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Resources[0]
	}
	configs := func(r kmsg.DescribeConfigsResponseResource) map[string]kmsg.DescribeConfigsResponseResourceConfig {
		m := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
		for _, c := range r.Configs {
			m[c.Name] = c
		}
		return m
	}

	g := describe(kmsg.ConfigResourceTypeGroupConfig, "no-such-group")
	if g.ErrorCode != 0 || len(g.Configs) != 2 {
		t.Fatalf("group: error %v, configs %+v; want the two consumer group configs", kerr.ErrorForCode(g.ErrorCode), g.Configs)
	}
	gc := configs(g)
	if c := gc["consumer.session.timeout.ms"]; c.Value == nil || *c.Value != "20000" || !c.ReadOnly || c.Source != kmsg.ConfigSourceStaticBrokerConfig ||
		len(c.ConfigSynonyms) != 1 || c.ConfigSynonyms[0].Name != "group.consumer.session.timeout.ms" {
		t.Errorf("group consumer.session.timeout.ms: %+v, want 20000 read-only from the static group.consumer.session.timeout.ms", c)
	}
	if c := gc["consumer.heartbeat.interval.ms"]; c.Value == nil || *c.Value != "5000" || !c.ReadOnly || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("group consumer.heartbeat.interval.ms: %+v, want Kafka's default 5000, read-only", c)
	}
	l := describe(kmsg.ConfigResourceTypeBrokerLogger, "0")
	if lc := configs(l)["root"]; l.ErrorCode != 0 || len(l.Configs) != 1 || lc.Value == nil || *lc.Value != "DEBUG" || lc.Source != kmsg.ConfigSourceDynamicBrokerLoggerConfig {
		t.Errorf("broker logger: error %v, configs %+v; want root at DEBUG", kerr.ErrorForCode(l.ErrorCode), l.Configs)
	}
	if m := describe(kmsg.ConfigResourceTypeClientMetrics, "sub"); m.ErrorCode != 0 || len(m.Configs) != 0 {
		t.Errorf("client metrics: error %v, configs %+v; want none", kerr.ErrorForCode(m.ErrorCode), m.Configs)
	}
	for typ, msg := range map[kmsg.ConfigResourceType]string{
		kmsg.ConfigResourceTypeGroupConfig:   "Group name must not be empty",
		kmsg.ConfigResourceTypeBrokerLogger:  "Broker id must not be empty",
		kmsg.ConfigResourceTypeClientMetrics: "Client metrics subscription name must not be empty",
	} {
		// kgo sends a broker logger resource to the broker it names, and
		// one without a name nowhere: ask over the raw connection.
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType = typ
		req.Resources = append(req.Resources, rr)
		resp, err := cl.Broker(0).RetriableRequest(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		r := resp.(*kmsg.DescribeConfigsResponse).Resources[0]
		if r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil || *r.ErrorMessage != msg {
			t.Errorf("%s without a name: %v %v, want INVALID_REQUEST %q", typ, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, msg)
		}
	}

	alter := func(typ kmsg.ConfigResourceType, name string, kv ...string) kmsg.IncrementalAlterConfigsResponseResource {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = typ, name
		for i := 0; i+1 < len(kv); i += 2 {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value = kv[i], kmsg.StringPtr(kv[i+1])
			rr.Configs = append(rr.Configs, c)
		}
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Resources[0]
	}
	for _, tc := range []struct {
		typ  kmsg.ConfigResourceType
		name string
		kv   []string
	}{
		{kmsg.ConfigResourceTypeGroupConfig, "g", []string{"consumer.session.timeout.ms", "30000"}},
		{kmsg.ConfigResourceTypeClientMetrics, "sub", []string{"interval.ms", "60000"}},
	} {
		if r := alter(tc.typ, tc.name, tc.kv...); r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil {
			t.Errorf("alter %s %q: %v %v, want INVALID_REQUEST with a reason", tc.typ, tc.name, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
		}
		if r := alter(tc.typ, tc.name); r.ErrorCode != 0 {
			t.Errorf("empty alter of %s %q: %v, want success", tc.typ, tc.name, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	// Nothing changed.
	if c := configs(describe(kmsg.ConfigResourceTypeGroupConfig, "g"))["consumer.session.timeout.ms"]; c.Value == nil || *c.Value != "20000" {
		t.Errorf("group g after the refused change: %+v", c)
	}
}

// TestKafkaLegacyAlterConfigsOtherResources: legacy AlterConfigs (key 33)
// of group, client metrics and broker logger resources answers as a Kafka
// 4 broker's ConfigAdminManager does. segfs answered INVALID_REQUEST
// "Unsupported resource type" for all three. Kafka passes group and
// client metrics resources on as IncrementalAlterConfigs does (segfs:
// an empty change succeeds, a setting is refused with its reason), and
// refuses a broker logger, INVALID_REQUEST "Unknown resource type 8",
// after its null value check.
func TestKafkaLegacyAlterConfigsOtherResources(t *testing.T) {
	srv := kafkaServe(t, "")
	cl := kafkaClient(t, srv.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	alter := func(typ kmsg.ConfigResourceType, name string, kv ...*string) kmsg.AlterConfigsResponseResource {
		t.Helper()
		req := kmsg.NewPtrAlterConfigsRequest()
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = typ, name
		for i := 0; i+1 < len(kv); i += 2 {
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = *kv[i], kv[i+1]
			rr.Configs = append(rr.Configs, c)
		}
		req.Resources = append(req.Resources, rr)
		resp, err := cl.Broker(0).RetriableRequest(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.AlterConfigsResponse).Resources[0]
	}
	s := kmsg.StringPtr
	for _, tc := range []struct {
		typ  kmsg.ConfigResourceType
		name string
		kv   []*string
		code int16
		msg  string // "" = any reason
	}{
		{kmsg.ConfigResourceTypeGroupConfig, "g", nil, 0, ""},
		{kmsg.ConfigResourceTypeClientMetrics, "sub", nil, 0, ""},
		{kmsg.ConfigResourceTypeGroupConfig, "g", []*string{s("consumer.session.timeout.ms"), s("30000")}, kerr.InvalidRequest.Code, ""},
		{kmsg.ConfigResourceTypeClientMetrics, "sub", []*string{s("interval.ms"), s("60000")}, kerr.InvalidRequest.Code, ""},
		{kmsg.ConfigResourceTypeGroupConfig, "", nil, kerr.InvalidRequest.Code, "Group name must not be empty"},
		{kmsg.ConfigResourceTypeGroupConfig, "g", []*string{s("consumer.session.timeout.ms"), nil}, kerr.InvalidRequest.Code, "Null value not supported for : consumer.session.timeout.ms"},
		{kmsg.ConfigResourceTypeBrokerLogger, "0", []*string{s("root"), s("DEBUG")}, kerr.InvalidRequest.Code, "Unknown resource type 8"},
		{kmsg.ConfigResourceTypeBrokerLogger, "0", nil, kerr.InvalidRequest.Code, "Unknown resource type 8"},
		{kmsg.ConfigResourceTypeBrokerLogger, "0", []*string{s("root"), nil}, kerr.InvalidRequest.Code, "Null value not supported for : root"},
	} {
		r := alter(tc.typ, tc.name, tc.kv...)
		if r.ErrorCode != tc.code || (tc.code != 0 && r.ErrorMessage == nil) || (tc.msg != "" && *r.ErrorMessage != tc.msg) {
			t.Errorf("AlterConfigs %s %q %d settings: %v %v, want %v %q", tc.typ, tc.name, len(tc.kv)/2, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, kerr.ErrorForCode(tc.code), tc.msg)
		}
	}
}
