package logstore

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Kafka's other topic-level settings. Kafka's LogConfig defines more topic
// configs than a single-node log store can apply; tools that create topics
// (kafka-topics.sh --config, Strimzi, Terraform) send them routinely, and
// Kafka refuses only names it does not define. So segfs takes every topic
// config Kafka defines (LogConfig's ConfigDef, Kafka 3.9 and 4.x: the 3.x
// names 4.0 dropped are still what 3.x tooling sends), checks its value by
// Kafka's type and validator, and stores it as an override like any other:
// the `config` file and DescribeConfigs show it, and it persists. These are
// inert: nothing in segfs reads them.
//
//   - unclean.leader.election.enable, leader.replication.throttled.replicas,
//     follower.replication.throttled.replicas: replication, of which one
//     node has none.
//   - preallocate: segfs never preallocates segment files.
//   - compression.gzip.level, compression.lz4.level, compression.zstd.level:
//     segfs compresses (compression.type) at its codecs' default levels.
//   - message.format.version, message.downconversion.enable: segfs writes
//     and serves record batches v2 only (Kafka 4.0 removed both).
//   - remote.storage.enable and the local.retention.*, remote.log.*,
//     remote.copy.lag.* settings: segfs has no tiered storage, so
//     remote.storage.enable=true is refused as a broker with tiered storage
//     disabled refuses it; the others only matter when it is on.
//
// min.insync.replicas is not among them: it is a field of Config, as a
// single Kafka broker applies it (a Produce with acks=all to a topic
// whose min.insync.replicas exceeds its one in-sync replica fails with
// NOT_ENOUGH_REPLICAS; the mount's own appends are not Kafka produces and
// are not refused). Nor are message.timestamp.before.max.ms,
// message.timestamp.after.max.ms and message.timestamp.difference.max.ms:
// a Produce whose records' CreateTime lies outside them is refused
// (Config.TimestampBounds, AppendBatch).
type inertKey struct {
	name string
	// def is Kafka's default, as DescribeConfigs shows it.
	def string
	// parse returns the value as it is stored and shown, or why the key
	// cannot take it.
	parse func(v string) (string, error)
	// doomed is configKey.doomed.
	doomed func(v string) bool
}

// inertKeys is in the order of Config.inert.
var inertKeys = [...]inertKey{
	boolInert("unclean.leader.election.enable", false),
	boolInert("preallocate", false),
	intInert("compression.gzip.level", -1, 1, 9, -1),
	intInert("compression.lz4.level", 9, 1, 17, 1),
	intInert("compression.zstd.level", 3, -131072, 22, -131072),
	boolInert("message.downconversion.enable", true),
	{
		name: "message.format.version", def: "3.0-IV1",
		parse: func(v string) (string, error) {
			if !formatVersion.MatchString(v) {
				return "", fmt.Errorf("%q is not a Kafka version such as 2.8 or 3.0-IV1", v)
			}
			return v, nil
		},
	},
	throttledInert("leader.replication.throttled.replicas"),
	throttledInert("follower.replication.throttled.replicas"),
	{
		name: "remote.storage.enable", def: "false",
		parse: func(v string) (string, error) {
			b, err := parseBool(v)
			if err != nil {
				return "", err
			}
			if b {
				// Kafka's message, when the broker's remote.log.storage.system.enable is off.
				return "", fmt.Errorf("Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage. (segfs has no tiered storage)")
			}
			return "false", nil
		},
		doomed: func(v string) bool { return !choicePrefix(strings.ToLower(v), "true", "false") },
	},
	intInert("local.retention.ms", -2, -2, math.MaxInt64, -2),
	intInert("local.retention.bytes", -2, -2, math.MaxInt64, -2),
	boolInert("remote.log.copy.disable", false),
	boolInert("remote.log.delete.on.disable", false),
	intInert("remote.copy.lag.ms", 0, -1, math.MaxInt64, -1),
	intInert("remote.copy.lag.bytes", 0, -1, math.MaxInt64, -1),
}

// formatVersion is what Kafka 3.x's message.format.version validator
// (MetadataVersion names) looks like: 0.10.2, 2.8, 3.0-IV1.
var formatVersion = regexp.MustCompile(`^[0-9]+\.[0-9]+(\.[0-9]+)?(-IV[0-9]+)?$`)

// parseBool is Kafka's ConfigDef BOOLEAN: true or false, in any case.
func parseBool(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("expected true or false, got %q", v)
}

func boolInert(name string, def bool) inertKey {
	return inertKey{
		name: name, def: strconv.FormatBool(def),
		parse: func(v string) (string, error) {
			b, err := parseBool(v)
			return strconv.FormatBool(b), err
		},
		doomed: func(v string) bool { return !choicePrefix(strings.ToLower(v), "true", "false") },
	}
}

// intInert is an INT or LONG key taking [min, max] and also alsoOK, as
// Kafka's gzip level takes 1 to 9 or -1 (alsoOK = min where there is no
// exception).
func intInert(name string, def, min, max, alsoOK int64) inertKey {
	return inertKey{
		name: name, def: strconv.FormatInt(def, 10),
		parse: func(v string) (string, error) {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return "", fmt.Errorf("not an integer: %q", v)
			}
			if (n < min || n > max) && n != alsoOK {
				if alsoOK != min {
					return "", fmt.Errorf("%d is outside [%d, %d] and not %d", n, min, max, alsoOK)
				}
				return "", fmt.Errorf("%d is outside [%d, %d]", n, min, max)
			}
			return strconv.FormatInt(n, 10), nil
		},
		doomed: func(v string) bool { return !intPrefix.MatchString(v) },
	}
}

// throttledReplica is one item of a throttled replica list: partition:broker.
var throttledReplica = regexp.MustCompile(`^[0-9]+:[0-9]+$`)

// throttledInert is a throttled replica list, as Kafka's
// ThrottledReplicaListValidator takes it: "*", or comma-separated
// partition:broker pairs (empty by default).
func throttledInert(name string) inertKey {
	return inertKey{
		name: name, def: "",
		parse: func(v string) (string, error) {
			if strings.TrimSpace(v) == "*" {
				return "*", nil
			}
			var items []string
			for _, it := range strings.Split(v, ",") {
				it = strings.TrimSpace(it)
				if it == "" {
					continue
				}
				if !throttledReplica.MatchString(it) {
					return "", fmt.Errorf("must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")
				}
				items = append(items, it)
			}
			return strings.Join(items, ","), nil
		},
	}
}

// inertConfigKey makes the configKey of inertKeys[i]: its value lives in
// Config.inert[i], "" standing for the default.
func inertConfigKey(i int) configKey {
	k := &inertKeys[i]
	return configKey{
		get: func(c *Config) string {
			if c.inert[i] == "" {
				return k.def
			}
			return c.inert[i]
		},
		set: func(c *Config, v string) error {
			canon, err := k.parse(v)
			if err != nil {
				return err
			}
			c.inert[i] = canon
			if canon == "" {
				c.inert[i] = k.def
			}
			return nil
		},
		doomed: k.doomed,
	}
}

// InertConfigKeys lists the settings segfs accepts, stores and shows but
// does not apply (see inertKeys).
func InertConfigKeys() []string {
	out := make([]string, len(inertKeys))
	for i := range inertKeys {
		out[i] = inertKeys[i].name
	}
	return out
}

// inertIndex is the index in inertKeys (and Config.inert) of each name.
var inertIndex = map[string]int{}

func init() {
	for i := range inertKeys {
		configKeys[inertKeys[i].name] = inertConfigKey(i)
		inertIndex[inertKeys[i].name] = i
	}
}
