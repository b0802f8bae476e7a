package tests

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKafkaUnknownTopicConfigName: CreateTopics and legacy AlterConfigs
// naming a topic config there is no such thing as are INVALID_CONFIG
// "Unknown topic config name: X", as Kafka's LogConfig.validateNames
// words it (and as segfs's IncrementalAlterConfigs already answered), with
// names checked before values: a bad value of a known config after the
// unknown name does not decide. segfs sent logstore's wording ("invalid
// config: unknown key ..."), or the value's error.
func TestKafkaUnknownTopicConfigName(t *testing.T) {
	srv := kafkaServe(t, "")
	cl := kafkaClient(t, srv.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	want := "Unknown topic config name: no.such"

	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "uc", 1, 1
	for _, kv := range [][2]string{{"retention.ms", "abc"}, {"no.such", "1"}} {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = kv[0], kmsg.StringPtr(kv[1])
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if st := resp.Topics[0]; st.ErrorCode != kerr.InvalidConfig.Code || st.ErrorMessage == nil || *st.ErrorMessage != want {
		t.Errorf("CreateTopics with no.such: %v %v, want INVALID_CONFIG %q", kerr.ErrorForCode(st.ErrorCode), st.ErrorMessage, want)
	}

	req.Topics[0].Configs = nil
	if resp, err := req.RequestWith(ctx, cl); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create uc: %v %+v", err, resp)
	}
	areq := kmsg.NewPtrAlterConfigsRequest()
	ar := kmsg.NewAlterConfigsRequestResource()
	ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeTopic, "uc"
	for _, kv := range [][2]string{{"retention.ms", "abc"}, {"no.such", "1"}} {
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kv[0], kmsg.StringPtr(kv[1])
		ar.Configs = append(ar.Configs, c)
	}
	areq.Resources = append(areq.Resources, ar)
	aresp, err := areq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if r := aresp.Resources[0]; r.ErrorCode != kerr.InvalidConfig.Code || r.ErrorMessage == nil || *r.ErrorMessage != want {
		t.Errorf("AlterConfigs with no.such: %v %v, want INVALID_CONFIG %q", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, want)
	}
}
