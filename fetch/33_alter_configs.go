package fetch

import (
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/segfs/segfs/logstore"
)

// AlterConfigs (key 33), versions 0-2.
//
// Replaces every override of a topic with the ones given, as Kafka's
// legacy AlterConfigs does: a key not named goes back to its default.
// Values are checked as a line of the mount's `config` file is
// (INVALID_CONFIG with the reason), and the whole set, with the resets
// of the overrides current then, is applied and persisted at once through
// the same Topic.SetConfig checks (Topic.UpdateConfig), or not at all;
// validate_only checks and changes nothing. A null value, a key named
// twice or a resource named twice is INVALID_REQUEST, as in Kafka. Unknown
// topic: UNKNOWN_TOPIC_OR_PARTITION. Broker resources: segfs has no
// dynamic broker configs, so any setting is INVALID_REQUEST, Kafka's
// answer for a static broker config (configs.go, alterBroker). Group,
// client metrics and broker logger resources: legacyOther.
func init() { register(33, 0, 2, handleAlterConfigs) }

func handleAlterConfigs(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	count := map[resourceKey]int{}
	for _, rr := range req.Resources {
		count[resourceKey{rr.ResourceType, rr.ResourceName}]++
	}
	for _, rr := range req.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		keys := make([]string, 0, len(rr.Configs))
		var nulls []string
		for _, rc := range rr.Configs {
			keys = append(keys, rc.Name)
			if rc.Value == nil {
				nulls = append(nulls, rc.Name)
			}
		}
		sr.ErrorCode, sr.ErrorMessage = c.s.alterResource(rr.ResourceType, rr.ResourceName, count[resourceKey{rr.ResourceType, rr.ResourceName}] > 1,
			keys, nulls, req.ValidateOnly, func(_ logstore.Config, overrides map[string]string) (map[string]string, int16, string) {
				return replaceOverrides(overrides, rr.Configs)
			}, func() (int16, string) { return legacyOther(rr.ResourceType, rr.ResourceName, rr.Configs) })
		resp.Resources = append(resp.Resources, sr)
	}
	return c.send(h, resp)
}

// alterResource answers one resource of AlterConfigs or
// IncrementalAlterConfigs, whose checks are the same: dup says the
// request names the resource twice, keys are its config names, nulls
// those with a null value where one is not allowed, change
// turns the request into a topic's SetConfig changes, and other answers a
// group, broker logger or client metrics resource.
func (s *Server) alterResource(typ kmsg.ConfigResourceType, name string, dup bool, keys, nulls []string, validateOnly bool,
	change buildChanges, other func() (int16, string)) (int16, *string) {
	var code int16
	var msg string
	switch {
	case dup:
		code, msg = kerr.InvalidRequest.Code, "Each resource must appear at most once."
	case hasDuplicate(keys):
		code, msg = kerr.InvalidRequest.Code, "Error due to duplicate config keys"
	case len(nulls) > 0:
		// Kafka's ConfigAdminManager.preprocess, for every resource
		// type, before anything else is looked at: segfs checked a
		// topic's null values among its other settings, in order, and
		// joined the names with "," where Kafka joins them with ", ".
		code, msg = kerr.InvalidRequest.Code, "Null value not supported for : "+strings.Join(nulls, ", ")
	case typ == kmsg.ConfigResourceTypeTopic:
		code, msg = s.alterTopicConfigs(name, validateOnly, change)
	case typ == kmsg.ConfigResourceTypeBroker:
		code, msg = alterBroker(name, keys)
	case typ == kmsg.ConfigResourceTypeGroupConfig || typ == kmsg.ConfigResourceTypeBrokerLogger || typ == kmsg.ConfigResourceTypeClientMetrics:
		code, msg = other()
	default:
		return unsupportedResource(typ)
	}
	if code == 0 {
		return 0, nil
	}
	return code, &msg
}

// legacyOther answers a legacy AlterConfigs of a group, broker logger or
// client metrics resource as a Kafka 4 broker does
// (ConfigAdminManager.preprocess for AlterConfigs): a broker logger
// resource is INVALID_REQUEST
// "Unknown resource type 8", since KIP-412 log levels are only changed
// through IncrementalAlterConfigs (null values are refused before, by
// alterResource); group and client metrics resources go
// on as IncrementalAlterConfigs' do (alterUnchangeable: any change
// refused, none succeeds). segfs refused all three as unsupported types.
func legacyOther(typ kmsg.ConfigResourceType, name string, configs []kmsg.AlterConfigsRequestResourceConfig) (int16, string) {
	var keys []string
	for _, c := range configs {
		keys = append(keys, c.Name)
	}
	if typ == kmsg.ConfigResourceTypeBrokerLogger {
		return kerr.InvalidRequest.Code, fmt.Sprintf("Unknown resource type %d", typ)
	}
	return alterUnchangeable(typ, name, keys)
}

// replaceOverrides turns a legacy AlterConfigs set into SetConfig changes:
// the values given, and a reset of every other override (of overrides,
// the topic's current ones).
func replaceOverrides(overrides map[string]string, configs []kmsg.AlterConfigsRequestResourceConfig) (map[string]string, int16, string) {
	changes, nulls, err := checkConfigValues(configs, func(c kmsg.AlterConfigsRequestResourceConfig) (string, *string) { return c.Name, c.Value })
	if err != nil {
		return nil, kerr.InvalidConfig.Code, err.Error()
	}
	if len(nulls) > 0 {
		return nil, kerr.InvalidRequest.Code, "Null value not supported for : " + strings.Join(nulls, ",")
	}
	for k := range overrides {
		if _, ok := changes[k]; !ok {
			changes[k] = "" // back to the default
		}
	}
	return changes, 0, ""
}

// buildChanges computes the SetConfig changes of an alteration from a
// topic's current settings (logstore.ConfigUpdate), or refuses it with a
// Kafka error code and message.
type buildChanges func(cfg logstore.Config, overrides map[string]string) (map[string]string, int16, string)

// refusal carries a buildChanges refusal out of Topic.UpdateConfig.
type refusal struct {
	code int16
	msg  string
}

func (r *refusal) Error() string { return r.msg }

// testHookChangesBuilt, when set by a test, runs after an alteration's
// changes are computed from the topic's settings and before they are
// applied: where a concurrent change of the config file must not be lost.
var testHookChangesBuilt func(t *logstore.Topic)

// alterTopicConfigs applies (or with validateOnly checks) the changes
// build computes for the named topic. The changes depend on the current
// settings (the overrides AlterConfigs resets, the list APPEND extends),
// so they are computed and applied as one step by Topic.UpdateConfig,
// against other alterations and the mount's `config` file alike, whose
// checks and persistence (Topic.SetConfig) they share.
func (s *Server) alterTopicConfigs(name string, validateOnly bool, build buildChanges) (int16, string) {
	t, code, msg := s.lookupTopicResource(name, true)
	if code != 0 {
		return code, *msg
	}
	var changes map[string]string
	update := func(cfg logstore.Config, overrides map[string]string) (map[string]string, error) {
		c, code, msg := build(cfg, overrides)
		if code != 0 {
			return nil, &refusal{code, msg}
		}
		if testHookChangesBuilt != nil {
			testHookChangesBuilt(t)
		}
		changes = c
		return c, nil
	}
	var err error
	if validateOnly {
		err = t.CheckConfigUpdate(update)
	} else {
		err = t.UpdateConfig(update)
	}
	var r *refusal
	if errors.As(err, &r) {
		return r.code, r.msg
	}
	if err != nil {
		code, msg := configError(err)
		if code != kerr.InvalidConfig.Code {
			s.log.Error("fetch: storing topic config", "topic", name, "err", err)
		}
		return code, *msg
	}
	if !validateOnly && len(changes) > 0 {
		s.log.Info("fetch: config changed", "topic", name, "changes", changes)
	}
	return 0, ""
}

func hasDuplicate(keys []string) bool {
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if seen[k] {
			return true
		}
		seen[k] = true
	}
	return false
}
