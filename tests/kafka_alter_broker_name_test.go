package tests

import (
	"context"
	"fmt"
	"testing"
	"time"

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
		ir, lr := kafkaAlterConfigsBoth(t, cl, kafkaAlterResource{kmsg.ConfigResourceTypeBroker, tc.name,
			[]kafkaAlterSetting{{"log.retention.ms", tc.value}}})
		kafkaWantInvalidRequest(t, fmt.Sprintf("IncrementalAlterConfigs broker %q", tc.name), ir[0].ErrorCode, ir[0].ErrorMessage, tc.msg)
		kafkaWantInvalidRequest(t, fmt.Sprintf("AlterConfigs broker %q", tc.name), lr[0].ErrorCode, lr[0].ErrorMessage, tc.msg)
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
	kafkaCreateTopic(t, cl, "dup", 1)
	const want = "Each resource must appear at most once."
	var rs []kafkaAlterResource
	for _, v := range []string{"1000", "2000"} {
		rs = append(rs, kafkaAlterResource{kmsg.ConfigResourceTypeTopic, "dup", []kafkaAlterSetting{{"retention.ms", kmsg.StringPtr(v)}}})
	}
	ir, lr := kafkaAlterConfigsBoth(t, cl, rs...)
	for i := range 2 {
		kafkaWantInvalidRequest(t, fmt.Sprintf("IncrementalAlterConfigs entry %d", i), ir[i].ErrorCode, ir[i].ErrorMessage, want)
		kafkaWantInvalidRequest(t, fmt.Sprintf("AlterConfigs entry %d", i), lr[i].ErrorCode, lr[i].ErrorMessage, want)
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
	kafkaCreateTopic(t, cl, "nv", 1)
	const want = "Null value not supported for : retention.ms, segment.ms"
	ir, lr := kafkaAlterConfigsBoth(t, cl, kafkaAlterResource{kmsg.ConfigResourceTypeTopic, "nv",
		[]kafkaAlterSetting{{"no.such", kmsg.StringPtr("1")}, {"retention.ms", nil}, {"segment.ms", nil}}})
	kafkaWantInvalidRequest(t, "IncrementalAlterConfigs", ir[0].ErrorCode, ir[0].ErrorMessage, want)
	kafkaWantInvalidRequest(t, "AlterConfigs", lr[0].ErrorCode, lr[0].ErrorMessage, want)
}
