package fetch

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeConfigs (key 32), versions 0-4.
//
// A topic resource (type 2) lists every effective setting the mount's
// `config` file shows, with Kafka's source: DYNAMIC_TOPIC_CONFIG for an
// override, DEFAULT_CONFIG otherwise (is_default, v0's flag, says the
// same); none is read-only or sensitive. With include_synonyms (v1+) each
// carries Kafka's chain: the override, then the broker default that
// applies without it (retention.ms: log.retention.hours=168). v3's types
// are Kafka's, and so is its documentation when include_documentation asks
// for it: one sentence of Kafka's meaning a setting, with what segfs does
// differently (config_docs.go; a setting segfs ignores says so), null for
// the broker logger as in Kafka, and null when not asked. segfs sent null
// even when asked. An
// unknown topic is UNKNOWN_TOPIC_OR_PARTITION, a name no topic can have
// INVALID_TOPIC_EXCEPTION, per resource. Broker resource "0" (type 4)
// lists the few broker settings segfs really applies (configs.go), all
// read-only; "" (the cluster-wide dynamic defaults) lists none, as segfs
// has no dynamic broker configs; another id is INVALID_REQUEST. A group
// (type 32, any non-empty name, as in Kafka) lists the group configs segfs
// applies, the server's (groupConfigEntries); the broker logger resource
// (type 8, "0") its one logger, root, at segfs's log level; a client
// metrics subscription (type 16, any non-empty name) none, as segfs
// collects no client metrics (Kafka would list its defaults, interval.ms
// and the empty metrics and match lists, which segfs would not apply). An
// empty name of those is INVALID_REQUEST with Kafka's message, and so is
// an unknown resource type. segfs answered INVALID_REQUEST for those three
// types. config_names filters (null or empty: all).
func init() { register(32, 0, 4, handleDescribeConfigs) }

func handleDescribeConfigs(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	synonyms := req.IncludeSynonyms && h.version >= 1
	docs := req.IncludeDocumentation && h.version >= 3
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		var entries []configEntry
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			t, code, msg := c.s.lookupTopicResource(rr.ResourceName, false)
			if code != 0 {
				sr.ErrorCode, sr.ErrorMessage = code, msg
				break
			}
			entries = topicConfigEntries(t.ConfigSnapshot())
		case kmsg.ConfigResourceTypeBroker:
			isDefault, code, msg := brokerResource(rr.ResourceName)
			if code != 0 {
				sr.ErrorCode, sr.ErrorMessage = code, &msg
				break
			}
			if !isDefault {
				entries = c.s.brokerConfigEntries()
			}
		case kmsg.ConfigResourceTypeGroupConfig, kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeClientMetrics:
			var code int16
			var msg string
			switch rr.ResourceType {
			case kmsg.ConfigResourceTypeGroupConfig:
				if code, msg = groupResource(rr.ResourceName); code == 0 {
					entries = c.s.groupConfigEntries()
				}
			case kmsg.ConfigResourceTypeBrokerLogger:
				if code, msg = brokerLoggerResource(rr.ResourceName); code == 0 {
					entries = c.s.brokerLoggerEntries()
				}
			default:
				code, msg = clientMetricsResource(rr.ResourceName)
			}
			if code != 0 {
				sr.ErrorCode, sr.ErrorMessage = code, &msg
			}
		default:
			sr.ErrorCode, sr.ErrorMessage = unsupportedResource(rr.ResourceType)
		}
		for _, e := range entries {
			if len(rr.ConfigNames) > 0 && !slices.Contains(rr.ConfigNames, e.name) {
				continue
			}
			sc := kmsg.NewDescribeConfigsResponseResourceConfig()
			sc.Name, sc.Value, sc.ReadOnly = e.name, kmsg.StringPtr(e.value), e.readOnly
			sc.IsDefault = e.source == kmsg.ConfigSourceDefaultConfig
			sc.Source, sc.ConfigType = e.source, e.typ
			if synonyms {
				sc.ConfigSynonyms = e.synonyms
			}
			if docs {
				sc.Documentation = configDoc(rr.ResourceType, e.name)
			}
			sr.Configs = append(sr.Configs, sc)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return c.send(h, resp)
}
