package fetch

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/segfs/segfs/logstore"
)

// IncrementalAlterConfigs (key 44), versions 0-1.
//
// Changes the named settings of a topic and leaves the others: SET (a
// value checked as a line of the mount's `config` file is), DELETE (back
// to the default), and for list settings (cleanup.policy, segfs's only
// one) APPEND and SUBTRACT of comma-separated items, from the effective
// value, as Kafka does; APPEND or SUBTRACT on any other setting is
// INVALID_CONFIG, as is a SUBTRACT that leaves cleanup.policy empty (segfs
// has no "no cleanup" policy). All changes of a resource are computed
// from the settings they replace and applied and persisted with them as
// one step (Topic.UpdateConfig), or none: a `config` file write can come
// before or after an APPEND, not be lost in between. validate_only checks
// and changes nothing. A key named twice, a null value for SET, APPEND or
// SUBTRACT, an unknown operation or a resource named twice is
// INVALID_REQUEST. Unknown topic: UNKNOWN_TOPIC_OR_PARTITION. Broker
// resources: INVALID_REQUEST for any change, as AlterConfigs. The broker
// logger resource (8) sets the level of segfs's one logger, root, live
// (broker_logger.go, alterBrokerLogger). Group and client metrics
// resources (32, 16): their names are checked as DescribeConfigs checks
// them, and any change is INVALID_REQUEST, as segfs applies none of their
// settings per resource (configs.go, alterUnchangeable).
func init() { register(44, 0, 1, handleIncrementalAlterConfigs) }

func handleIncrementalAlterConfigs(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	count := map[resourceKey]int{}
	for _, rr := range req.Resources {
		count[resourceKey{rr.ResourceType, rr.ResourceName}]++
	}
	for _, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		keys := make([]string, 0, len(rr.Configs))
		var nulls []string
		for _, rc := range rr.Configs {
			keys = append(keys, rc.Name)
			if rc.Op != kmsg.IncrementalAlterConfigOpDelete && rc.Value == nil {
				nulls = append(nulls, rc.Name)
			}
		}
		other := func() (int16, string) {
			if rr.ResourceType == kmsg.ConfigResourceTypeBrokerLogger {
				return c.s.alterBrokerLogger(rr.ResourceName, rr.Configs, req.ValidateOnly)
			}
			return alterUnchangeable(rr.ResourceType, rr.ResourceName, keys)
		}
		sr.ErrorCode, sr.ErrorMessage = c.s.alterResource(rr.ResourceType, rr.ResourceName, count[resourceKey{rr.ResourceType, rr.ResourceName}] > 1,
			keys, nulls, req.ValidateOnly, func(cfg logstore.Config, _ map[string]string) (map[string]string, int16, string) {
				return incrementalChanges(cfg, rr.Configs)
			}, other)
		resp.Resources = append(resp.Resources, sr)
	}
	return c.send(h, resp)
}

// incrementalChanges turns the operations on one topic into SetConfig
// changes.
func incrementalChanges(cfg logstore.Config, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) (map[string]string, int16, string) {
	changes := map[string]string{}
	for _, op := range ops {
		if op.Op != kmsg.IncrementalAlterConfigOpDelete && op.Value == nil {
			return nil, kerr.InvalidRequest.Code, fmt.Sprintf("Null value not supported for : %s", op.Name)
		}
		if _, known := cfg.Get(op.Name); !known {
			return nil, kerr.InvalidConfig.Code, fmt.Sprintf("Unknown topic config name: %s", op.Name)
		}
		var v string
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			v = logstore.NormalizeConfigValue(op.Name, *op.Value)
		case kmsg.IncrementalAlterConfigOpDelete:
			changes[op.Name] = "" // back to the default
			continue
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			verb := "append"
			if op.Op == kmsg.IncrementalAlterConfigOpSubtract {
				verb = "subtract"
			}
			if topicConfigMetas[op.Name].typ != kmsg.ConfigTypeList {
				return nil, kerr.InvalidConfig.Code, fmt.Sprintf("Config value %s is not allowed for config key: %s", verb, op.Name)
			}
			cur, _ := cfg.Get(op.Name)
			have, items := listItems(cur), listItems(*op.Value)
			var next []string
			if op.Op == kmsg.IncrementalAlterConfigOpAppend {
				next = have
				for _, it := range items {
					if !slices.Contains(next, it) {
						next = append(next, it)
					}
				}
			} else {
				for _, it := range have {
					if !slices.Contains(items, it) {
						next = append(next, it)
					}
				}
				if len(next) == 0 {
					return nil, kerr.InvalidConfig.Code, fmt.Sprintf("%s: subtracting %q leaves no value; segfs needs at least one of delete, compact", op.Name, *op.Value)
				}
			}
			v = strings.Join(next, ",")
		default:
			return nil, kerr.InvalidRequest.Code, fmt.Sprintf("Unknown alter config operation %d for %s", op.Op, op.Name)
		}
		if err := logstore.CheckConfigValue(op.Name, v); err != nil {
			return nil, kerr.InvalidConfig.Code, err.Error()
		}
		changes[op.Name] = v
	}
	return changes, 0, ""
}

// listItems splits a list setting's value at commas, without blanks.
func listItems(v string) []string {
	var out []string
	for _, it := range strings.Split(v, ",") {
		if it = strings.TrimSpace(it); it != "" {
			out = append(out, it)
		}
	}
	return out
}
