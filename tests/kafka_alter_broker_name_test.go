package tests

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKafkaAlterBrokerConfigsResourceName: IncrementalAlterConfigs and
// AlterConfigs of a broker resource answer as Kafka's
// ConfigAdminManager.preprocess does, before looking at the settings: a
// null value is INVALID_REQUEST "Null value not supported for : X"; a
// name that is not a number is "Node id must be an integer, but it is:
// X", and another broker's id "Unexpected broker id, expected 0, but
// received 5" (the alteration's wording, with a comma; DescribeConfigs
// has its own). segfs answered these with DescribeConfigs' messages and
// refused a null value as a static setting.
func TestKafkaAlterBrokerConfigsResourceName(t *testing.T) {
	srv := kafkaServe(t, "")
	cl := kafkaClient(t, srv.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name  string
		value *string
		msg   string
	}{
		{"5", kmsg.StringPtr("1000"), "Unexpected broker id, expected 0, but received 5"},
		{"x", kmsg.StringPtr("1000"), "Node id must be an integer, but it is: x"},
		{"0", nil, "Null value not supported for : log.retention.ms"},
		{"", nil, "Null value not supported for : log.retention.ms"},
	} {
		ireq := kmsg.NewPtrIncrementalAlterConfigsRequest()
		ir := kmsg.NewIncrementalAlterConfigsRequestResource()
		ir.ResourceType, ir.ResourceName = kmsg.ConfigResourceTypeBroker, tc.name
		ic := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		ic.Name, ic.Value = "log.retention.ms", tc.value
		ir.Configs = append(ir.Configs, ic)
		ireq.Resources = append(ireq.Resources, ir)
		iresp, err := cl.Broker(0).RetriableRequest(ctx, ireq)
		if err != nil {
			t.Fatal(err)
		}
		if r := iresp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0]; r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil || *r.ErrorMessage != tc.msg {
			t.Errorf("IncrementalAlterConfigs broker %q: %v %v, want INVALID_REQUEST %q", tc.name, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, tc.msg)
		}

		lreq := kmsg.NewPtrAlterConfigsRequest()
		lr := kmsg.NewAlterConfigsRequestResource()
		lr.ResourceType, lr.ResourceName = kmsg.ConfigResourceTypeBroker, tc.name
		lc := kmsg.NewAlterConfigsRequestResourceConfig()
		lc.Name, lc.Value = "log.retention.ms", tc.value
		lr.Configs = append(lr.Configs, lc)
		lreq.Resources = append(lreq.Resources, lr)
		lresp, err := cl.Broker(0).RetriableRequest(ctx, lreq)
		if err != nil {
			t.Fatal(err)
		}
		if r := lresp.(*kmsg.AlterConfigsResponse).Resources[0]; r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil || *r.ErrorMessage != tc.msg {
			t.Errorf("AlterConfigs broker %q: %v %v, want INVALID_REQUEST %q", tc.name, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, tc.msg)
		}
	}
}

// TestKafkaAlterConfigsDuplicateResource: a resource named twice in one
// IncrementalAlterConfigs or AlterConfigs is refused, both times,
// INVALID_REQUEST "Each resource must appear at most once.", Kafka's
// ConfigAdminManager message; segfs sent its own ("Duplicate resource:
// each may appear once in a request."). Nothing is changed.
func TestKafkaAlterConfigsDuplicateResource(t *testing.T) {
	srv := kafkaServe(t, "")
	cl := kafkaClient(t, srv.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ct := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "dup", 1, 1
	ct.Topics = append(ct.Topics, rt)
	if resp, err := ct.RequestWith(ctx, cl); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create dup: %v %+v", err, resp)
	}
	const want = "Each resource must appear at most once."
	ireq := kmsg.NewPtrIncrementalAlterConfigsRequest()
	lreq := kmsg.NewPtrAlterConfigsRequest()
	for _, v := range []string{"1000", "2000"} {
		ir := kmsg.NewIncrementalAlterConfigsRequestResource()
		ir.ResourceType, ir.ResourceName = kmsg.ConfigResourceTypeTopic, "dup"
		ic := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		ic.Name, ic.Value = "retention.ms", kmsg.StringPtr(v)
		ir.Configs = append(ir.Configs, ic)
		ireq.Resources = append(ireq.Resources, ir)
		lr := kmsg.NewAlterConfigsRequestResource()
		lr.ResourceType, lr.ResourceName = kmsg.ConfigResourceTypeTopic, "dup"
		lc := kmsg.NewAlterConfigsRequestResourceConfig()
		lc.Name, lc.Value = "retention.ms", kmsg.StringPtr(v)
		lr.Configs = append(lr.Configs, lc)
		lreq.Resources = append(lreq.Resources, lr)
	}
	iresp, err := ireq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	lresp, err := lreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if r := iresp.Resources[i]; r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil || *r.ErrorMessage != want {
			t.Errorf("IncrementalAlterConfigs entry %d: %v %v, want INVALID_REQUEST %q", i, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, want)
		}
		if r := lresp.Resources[i]; r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil || *r.ErrorMessage != want {
			t.Errorf("AlterConfigs entry %d: %v %v, want INVALID_REQUEST %q", i, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, want)
		}
	}
	dreq := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName, dr.ConfigNames = kmsg.ConfigResourceTypeTopic, "dup", []string{"retention.ms"}
	dreq.Resources = append(dreq.Resources, dr)
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if c := dresp.Resources[0].Configs; len(c) != 1 || c[0].Value == nil || *c[0].Value != "604800000" {
		t.Errorf("retention.ms after the refused changes: %+v, want the default 604800000", c)
	}
}

// TestKafkaAlterConfigsNullValuesFirst: null values in an
// (Incremental)AlterConfigs of a topic are refused before anything else
// about the settings, all of them named, as Kafka's
// ConfigAdminManager.preprocess does for every resource type:
// INVALID_REQUEST "Null value not supported for : a, b". segfs looked at
// a topic's settings in order (an unknown name before them was
// INVALID_CONFIG) and named the nulls joined by ",", or only the first.
func TestKafkaAlterConfigsNullValuesFirst(t *testing.T) {
	srv := kafkaServe(t, "")
	cl := kafkaClient(t, srv.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ct := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "nv", 1, 1
	ct.Topics = append(ct.Topics, rt)
	if resp, err := ct.RequestWith(ctx, cl); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create nv: %v %+v", err, resp)
	}
	const want = "Null value not supported for : retention.ms, segment.ms"
	settings := []struct {
		name  string
		value *string
	}{{"no.such", kmsg.StringPtr("1")}, {"retention.ms", nil}, {"segment.ms", nil}}
	ireq := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ir := kmsg.NewIncrementalAlterConfigsRequestResource()
	ir.ResourceType, ir.ResourceName = kmsg.ConfigResourceTypeTopic, "nv"
	lreq := kmsg.NewPtrAlterConfigsRequest()
	lr := kmsg.NewAlterConfigsRequestResource()
	lr.ResourceType, lr.ResourceName = kmsg.ConfigResourceTypeTopic, "nv"
	for _, s := range settings {
		ic := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		ic.Name, ic.Value = s.name, s.value
		ir.Configs = append(ir.Configs, ic)
		lc := kmsg.NewAlterConfigsRequestResourceConfig()
		lc.Name, lc.Value = s.name, s.value
		lr.Configs = append(lr.Configs, lc)
	}
	ireq.Resources = append(ireq.Resources, ir)
	lreq.Resources = append(lreq.Resources, lr)
	iresp, err := ireq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if r := iresp.Resources[0]; r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil || *r.ErrorMessage != want {
		t.Errorf("IncrementalAlterConfigs: %v %v, want INVALID_REQUEST %q", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, want)
	}
	lresp, err := lreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if r := lresp.Resources[0]; r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil || *r.ErrorMessage != want {
		t.Errorf("AlterConfigs: %v %v, want INVALID_REQUEST %q", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, want)
	}
}
