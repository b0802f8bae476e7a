package logstore

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/segfs/segfs/logstore/record"
)

// Config is a topic's effective configuration, with Kafka's topic-level
// names and defaults plus segfs's key.separator. Every topic config Kafka
// defines is a key; those segfs does not apply are listed in
// config_inert.go.
type Config struct {
	SegmentBytes           int64
	SegmentMs              int64
	SegmentJitterMs        int64
	SegmentIndexBytes      int64
	IndexIntervalBytes     int64
	RetentionMs            int64
	RetentionBytes         int64
	CleanupPolicy          string // "delete", "compact" or "compact,delete"
	MinCleanableDirtyRatio float64
	DeleteRetentionMs      int64
	MinCompactionLagMs     int64
	MaxCompactionLagMs     int64
	MaxMessageBytes        int64
	MessageTimestampType   string // CreateTime or LogAppendTime
	FlushMessages          int64
	FlushMs                int64
	FileDeleteDelayMs      int64
	CompressionType        string // producer, uncompressed, gzip, snappy, lz4, zstd
	MinInsyncReplicas      int64  // applied by the Kafka server's Produce, acks=all
	KeySeparator           string // segfs: "" = no keys

	// How far a produced record's CreateTime may lie before and after the
	// broker's clock (TimestampBounds applies them, with
	// message.timestamp.difference.max.ms, Kafka 3.x's setting for both,
	// as their fallback).
	MessageTimestampBeforeMaxMs     int64
	MessageTimestampAfterMaxMs      int64
	MessageTimestampDifferenceMaxMs int64

	// inert holds Kafka's topic settings that segfs takes and shows but
	// does not apply (config_inert.go), "" for the default.
	inert [len(inertKeys)]string
	// afterSet and differenceSet record an override of
	// message.timestamp.after.max.ms and of
	// message.timestamp.difference.max.ms, which TimestampBounds needs:
	// an after.max.ms left at Kafka 4.0's default gives way to a
	// difference.max.ms that is set, as it did in 3.x, whose default was
	// unbounded.
	afterSet, differenceSet bool
}

// DefaultConfig returns Kafka's defaults (KAFKA-FORMAT.md §12).
func DefaultConfig() Config {
	return Config{
		SegmentBytes:           1 << 30,
		SegmentMs:              604800000,
		SegmentJitterMs:        0,
		SegmentIndexBytes:      10485760,
		IndexIntervalBytes:     4096,
		RetentionMs:            604800000,
		RetentionBytes:         -1,
		CleanupPolicy:          "delete",
		MinCleanableDirtyRatio: 0.5,
		DeleteRetentionMs:      86400000,
		MinCompactionLagMs:     0,
		MaxCompactionLagMs:     math.MaxInt64,
		MaxMessageBytes:        1048588,
		MessageTimestampType:   "CreateTime",
		FlushMessages:          math.MaxInt64,
		FlushMs:                math.MaxInt64,
		FileDeleteDelayMs:      60000,
		CompressionType:        "producer",
		MinInsyncReplicas:      1,
		KeySeparator:           "",

		// Kafka 4.0's defaults (KIP-1030 bounded after.max.ms to 1 h);
		// difference.max.ms, which 4.0 removed, defaulted to unbounded.
		MessageTimestampBeforeMaxMs:     math.MaxInt64,
		MessageTimestampAfterMaxMs:      3600000,
		MessageTimestampDifferenceMaxMs: math.MaxInt64,
	}
}

// configKey describes one setting: how to read it from a Config, and how to
// validate and store a new value.
type configKey struct {
	get func(c *Config) string
	set func(c *Config, v string) error
	// doomed reports a value, still being written, that no continuation
	// can make valid (nil: no check before the line is complete). It must
	// never refuse a prefix of a valid value.
	doomed func(v string) bool
}

// intPrefix matches every prefix of what an int key accepts once
// complete: strconv.ParseInt of the trimmed value.
var intPrefix = regexp.MustCompile(`^[ \t]*[+-]?[0-9]*[ \t]*$`)

// choicePrefix reports whether v, with blanks around it as
// ParseConfigText trims them, is or may become one of choices.
func choicePrefix(v string, choices ...string) bool {
	v = strings.TrimLeft(v, " \t")
	for _, c := range choices {
		if strings.HasPrefix(c, v) || strings.HasPrefix(v, c) && strings.TrimSpace(v[len(c):]) == "" {
			return true
		}
	}
	return false
}

func intKey(field func(c *Config) *int64, min, max int64) configKey {
	return configKey{
		get: func(c *Config) string { return strconv.FormatInt(*field(c), 10) },
		set: func(c *Config, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("not an integer: %q", v)
			}
			if n < min || n > max {
				return fmt.Errorf("%d is outside [%d, %d]", n, min, max)
			}
			*field(c) = n
			return nil
		},
		doomed: func(v string) bool { return !intPrefix.MatchString(v) },
	}
}

// markSet is k, which also calls mark once a value is set: for the keys
// whose being overridden, not only their value, matters.
func markSet(k configKey, mark func(c *Config)) configKey {
	set := k.set
	k.set = func(c *Config, v string) error {
		if err := set(c, v); err != nil {
			return err
		}
		mark(c)
		return nil
	}
	return k
}

func enumKey(field func(c *Config) *string, allowed ...string) configKey {
	return configKey{
		get: func(c *Config) string { return *field(c) },
		set: func(c *Config, v string) error {
			for _, a := range allowed {
				if v == a {
					*field(c) = v
					return nil
				}
			}
			return fmt.Errorf("%q is not one of %s", v, strings.Join(allowed, ", "))
		},
		doomed: func(v string) bool { return !choicePrefix(v, allowed...) },
	}
}

var configKeys = map[string]configKey{
	"segment.bytes":        intKey(func(c *Config) *int64 { return &c.SegmentBytes }, 14, math.MaxInt32),
	"segment.ms":           intKey(func(c *Config) *int64 { return &c.SegmentMs }, 1, math.MaxInt64),
	"segment.jitter.ms":    intKey(func(c *Config) *int64 { return &c.SegmentJitterMs }, 0, math.MaxInt64),
	"segment.index.bytes":  intKey(func(c *Config) *int64 { return &c.SegmentIndexBytes }, 4, math.MaxInt32),
	"index.interval.bytes": intKey(func(c *Config) *int64 { return &c.IndexIntervalBytes }, 0, math.MaxInt32),
	"retention.ms":         intKey(func(c *Config) *int64 { return &c.RetentionMs }, -1, math.MaxInt64),
	// Kafka gives retention.bytes no validator: any long, and any negative
	// one turns size retention off (cleanupSegmentsToMaintainSize), as
	// retention.go reads it. retention.ms takes -1 and up only.
	"retention.bytes":       intKey(func(c *Config) *int64 { return &c.RetentionBytes }, math.MinInt64, math.MaxInt64),
	"delete.retention.ms":   intKey(func(c *Config) *int64 { return &c.DeleteRetentionMs }, 0, math.MaxInt64),
	"min.compaction.lag.ms": intKey(func(c *Config) *int64 { return &c.MinCompactionLagMs }, 0, math.MaxInt64),
	"max.compaction.lag.ms": intKey(func(c *Config) *int64 { return &c.MaxCompactionLagMs }, 1, math.MaxInt64),
	"max.message.bytes":     intKey(func(c *Config) *int64 { return &c.MaxMessageBytes }, 0, math.MaxInt32),
	"flush.messages":        intKey(func(c *Config) *int64 { return &c.FlushMessages }, 1, math.MaxInt64),
	"flush.ms":              intKey(func(c *Config) *int64 { return &c.FlushMs }, 0, math.MaxInt64),
	"file.delete.delay.ms":  intKey(func(c *Config) *int64 { return &c.FileDeleteDelayMs }, 0, math.MaxInt64),
	"min.insync.replicas":   intKey(func(c *Config) *int64 { return &c.MinInsyncReplicas }, 1, math.MaxInt32),
	"message.timestamp.type": enumKey(func(c *Config) *string { return &c.MessageTimestampType },
		"CreateTime", "LogAppendTime"),

	"message.timestamp.before.max.ms": intKey(func(c *Config) *int64 { return &c.MessageTimestampBeforeMaxMs }, 0, math.MaxInt64),
	"message.timestamp.after.max.ms": markSet(intKey(func(c *Config) *int64 { return &c.MessageTimestampAfterMaxMs }, 0, math.MaxInt64),
		func(c *Config) { c.afterSet = true }),
	"message.timestamp.difference.max.ms": markSet(intKey(func(c *Config) *int64 { return &c.MessageTimestampDifferenceMaxMs }, 0, math.MaxInt64),
		func(c *Config) { c.differenceSet = true }),
	"compression.type": enumKey(func(c *Config) *string { return &c.CompressionType },
		"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"),
	"cleanup.policy": {
		get: func(c *Config) string { return c.CleanupPolicy },
		set: func(c *Config, v string) error {
			var del, comp bool
			for _, p := range strings.Split(v, ",") {
				switch strings.TrimSpace(p) {
				case "delete":
					del = true
				case "compact":
					comp = true
				default:
					return fmt.Errorf("%q is not a list of delete, compact", v)
				}
			}
			switch {
			case del && comp:
				c.CleanupPolicy = "compact,delete"
			case comp:
				c.CleanupPolicy = "compact"
			default:
				c.CleanupPolicy = "delete"
			}
			return nil
		},
		doomed: func(v string) bool {
			parts := strings.Split(v, ",")
			for _, p := range parts[:len(parts)-1] {
				if p := strings.TrimSpace(p); p != "delete" && p != "compact" {
					return true
				}
			}
			return !choicePrefix(parts[len(parts)-1], "delete", "compact")
		},
	},
	"min.cleanable.dirty.ratio": {
		get: func(c *Config) string { return strconv.FormatFloat(c.MinCleanableDirtyRatio, 'g', -1, 64) },
		set: func(c *Config, v string) error {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 || f > 1 || math.IsNaN(f) {
				return fmt.Errorf("%q is not a number in [0, 1]", v)
			}
			c.MinCleanableDirtyRatio = f
			return nil
		},
	},
	"key.separator": {
		get: func(c *Config) string { return c.KeySeparator },
		set: func(c *Config, v string) error {
			if strings.ContainsAny(v, "\n\x00") || len(v) > 64 {
				return fmt.Errorf("a separator may not contain a newline or NUL and is at most 64 bytes")
			}
			c.KeySeparator = v
			return nil
		},
		doomed: func(v string) bool { return strings.Contains(v, "\x00") || len(v) > 64 },
	},
}

// ConfigKeys lists every settable key, sorted.
func ConfigKeys() []string {
	keys := make([]string, 0, len(configKeys))
	for k := range configKeys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Get returns the value of key as text, and whether the key exists.
func (c Config) Get(key string) (string, bool) {
	k, ok := configKeys[key]
	if !ok {
		return "", false
	}
	return k.get(&c), true
}

// Text renders, as sorted key=value lines, every setting segfs applies and
// each of Kafka's inert ones (config_inert.go) that is set: `cat config`
// shows what governs the topic and what was asked of it, not twenty
// settings that change nothing at their defaults. DescribeConfigs lists
// those too, with their defaults, as Kafka's does.
// message.timestamp.difference.max.ms is applied but shows only once set
// too: Kafka 4.0 has no such setting, and unset it changes nothing
// (TimestampBounds).
func (c Config) Text() []byte {
	var b bytes.Buffer
	for _, k := range ConfigKeys() {
		if i, ok := inertIndex[k]; ok && c.inert[i] == "" {
			continue
		}
		if k == "message.timestamp.difference.max.ms" && !c.differenceSet {
			continue
		}
		fmt.Fprintf(&b, "%s=%s\n", k, configKeys[k].get(&c))
	}
	return b.Bytes()
}

// TimestampBounds is how far before and after the broker's clock a
// produced record's CreateTime may lie (AppendBatch refuses the batch
// otherwise, as Kafka's LogValidator does): Kafka 3.6-3.9's rule
// (LogConfig.getMessageTimestampBeforeMaxMs and ...AfterMaxMs) with Kafka
// 4.0's defaults. Each of before.max.ms and after.max.ms applies unless it
// is unbounded (Long.MAX, 3.x's default for both), when the deprecated
// difference.max.ms (unbounded by default) takes its place. after.max.ms
// not set at all counts as unbounded too when difference.max.ms is set,
// since that was its 3.x default: a topic a 3.x tool made with only
// difference.max.ms=D is bounded by D both ways, as on the broker it was
// made for, and one with none of the three is bounded by 4.0's defaults
// (before unbounded, after 1 h).
func (c *Config) TimestampBounds() (before, after int64) {
	before, after = c.MessageTimestampBeforeMaxMs, c.MessageTimestampAfterMaxMs
	if before == math.MaxInt64 {
		before = c.MessageTimestampDifferenceMaxMs
	}
	if after == math.MaxInt64 || (!c.afterSet && c.differenceSet) {
		after = c.MessageTimestampDifferenceMaxMs
	}
	return before, after
}

// Compact reports whether cleanup.policy includes compact.
func (c Config) Compact() bool { return strings.Contains(c.CleanupPolicy, "compact") }

// MaxSegmentMs is how old the active segment may grow before a roll
// (Kafka's LogConfig.maxSegmentMs): segment.ms, or on a compacted topic
// max.compaction.lag.ms when that is shorter. The cleaner never touches
// the active segment, so without the shorter roll a record there would
// wait up to segment.ms (a week) for compaction, past the bound
// max.compaction.lag.ms promises (KIP-354).
func (c *Config) MaxSegmentMs() int64 {
	if c.Compact() && c.MaxCompactionLagMs > 0 {
		return min(c.SegmentMs, c.MaxCompactionLagMs)
	}
	return c.SegmentMs
}

// MaxLineBytes is the longest line (without its '\n') the mount takes: one
// sure to fit a batch of its own under both max.message.bytes and
// segment.bytes, with the batch header and the most framing a record can
// have subtracted. The mount refuses a longer line at write(2), so that no
// line it accepted can be refused later, when an unfinished one is stored
// at close and no error can reach the writer.
func (c Config) MaxLineBytes() int64 {
	return max(min(c.MaxMessageBytes, c.SegmentBytes)-record.HeaderSize-record.MaxRecordOverhead, 1)
}

// KeyError reports why line (without its '\n') can never be a record of
// this topic: on a compacted topic, a line without key.separator has no key.
// A pointer receiver: the append's line walk calls it for every line.
func (c *Config) KeyError(line []byte) error {
	if c.Compact() && (c.KeySeparator == "" || !bytes.Contains(line, []byte(c.KeySeparator))) {
		return fmt.Errorf("%w: line without a key on a compacted topic", ErrInvalidRecord)
	}
	return nil
}

// Delete reports whether cleanup.policy includes delete.
func (c Config) Delete() bool { return strings.Contains(c.CleanupPolicy, "delete") }

// Codec is the codec compression.type has appends written with, as a
// broker recompresses what producers send; false for "producer", which
// keeps the producer's codec (segfs's own line appends are then
// uncompressed).
func (c Config) Codec() (record.Codec, bool) {
	if c.CompressionType == "producer" {
		return record.CodecNone, false
	}
	codec, err := record.ParseCodec(c.CompressionType)
	return codec, err == nil
}

// checkValues is Kafka's LogConfig.validateValues, the check across keys
// that a new topic config must pass: min.compaction.lag.ms may not exceed
// max.compaction.lag.ms. It is not applied to overrides already stored,
// which load as they are.
func checkValues(c *Config) error {
	if c.MinCompactionLagMs > c.MaxCompactionLagMs {
		return fmt.Errorf("%w: min.compaction.lag.ms (%d) > max.compaction.lag.ms (%d)",
			ErrInvalidConfig, c.MinCompactionLagMs, c.MaxCompactionLagMs)
	}
	return nil
}

// withOverrides returns DefaultConfig with every override applied, or an
// error wrapping ErrInvalidConfig naming the first bad key.
func withOverrides(overrides map[string]string) (Config, error) {
	c := DefaultConfig()
	keys := make([]string, 0, len(overrides))
	for k := range overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ck, ok := configKeys[k]
		if !ok {
			return Config{}, fmt.Errorf("%w: unknown key %q", ErrInvalidConfig, k)
		}
		if err := ck.set(&c, overrides[k]); err != nil {
			return Config{}, fmt.Errorf("%w: %s: %v", ErrInvalidConfig, k, err)
		}
	}
	return c, nil
}

// applicableOverrides splits overrides into those withOverrides applies,
// each on its own, and the sorted keys of the others.
func applicableOverrides(overrides map[string]string) (kept map[string]string, dropped []string) {
	kept = map[string]string{}
	for k, v := range overrides {
		if _, err := withOverrides(map[string]string{k: v}); err != nil {
			dropped = append(dropped, k)
		} else {
			kept[k] = v
		}
	}
	sort.Strings(dropped)
	return kept, dropped
}

// CheckUnfinishedConfigLine reports an unfinished config line (no '\n'
// yet) that no continuation can make valid: its key, complete once the
// '=' is there, is unknown, or its value already holds what the key can
// never take (`retention.ms=abc`, `compression.type=brotli`). A writer
// learns it from that write(2), not only from close(2), whose error
// `printf 'k=v' > config` in a shell ignores. Values are checked as far
// as a prefix can be: a number's range only once the line is complete.
// Before the '=', the key is refused once no key starts with it (or,
// ended by a blank, it is no key): `printf bogus > config` exited 0
// and changed nothing, as its close(2) alone refused it.
func CheckUnfinishedConfigLine(line []byte) error {
	k, v, ok := strings.Cut(strings.TrimSuffix(string(line), "\r"), "=")
	if strings.HasPrefix(strings.TrimSpace(k), "#") {
		return nil
	}
	if !ok {
		return checkUnfinishedKey(strings.TrimLeftFunc(k, unicode.IsSpace))
	}
	k = strings.TrimSpace(k)
	key, known := configKeys[k]
	if !known {
		return fmt.Errorf("%w: unknown key %q", ErrInvalidConfig, k)
	}
	if key.doomed != nil && key.doomed(v) {
		return fmt.Errorf("%w: %s: %q cannot become a valid value", ErrInvalidConfig, k, v)
	}
	return nil
}

// checkUnfinishedKey is CheckUnfinishedConfigLine for a line whose '='
// has not come: what is typed of the key, leading blanks removed.
func checkUnfinishedKey(k string) error {
	if k == "" {
		return nil // a blank line so far
	}
	if key := strings.TrimRightFunc(k, unicode.IsSpace); key != k {
		// Only blanks and the '=' may follow a complete key.
		if _, known := configKeys[key]; !known {
			return fmt.Errorf("%w: unknown key %q", ErrInvalidConfig, key)
		}
		return nil
	}
	for name := range configKeys {
		if strings.HasPrefix(name, k) {
			return nil
		}
	}
	return fmt.Errorf("%w: no key starts with %q", ErrInvalidConfig, k)
}

// NormalizeConfigValue is value as the config file takes it for key: the
// separator verbatim, so that " " or "\t" can be set; other values are
// trimmed, as a properties file (and Kafka's ConfigDef) would.
func NormalizeConfigValue(key, value string) string {
	if key == "key.separator" {
		return value
	}
	return strings.TrimSpace(value)
}

// CheckConfigValue reports why value (normalized) can never be key's
// value, with ErrInvalidConfig: an unknown key, or a value the key does
// not take. Unlike a config file line, an empty value is checked like any
// other (only key.separator takes it): the Kafka protocol names the keys
// to reset separately. Checks across keys are SetConfig's.
func CheckConfigValue(key, value string) error {
	ck, ok := configKeys[key]
	if !ok {
		return fmt.Errorf("%w: unknown key %q", ErrInvalidConfig, key)
	}
	c := DefaultConfig()
	if err := ck.set(&c, value); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInvalidConfig, key, err)
	}
	return nil
}

// ParseConfigText parses key=value lines (blank lines and # comments
// skipped) into changes for SetConfig; a malformed line is ErrInvalidConfig
// naming its line number.
func ParseConfigText(text []byte) (map[string]string, error) {
	changes := map[string]string{}
	for i, line := range strings.Split(string(text), "\n") {
		line = strings.TrimSuffix(line, "\r")
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%w: line %d: want key=value, got %q", ErrInvalidConfig, i+1, line)
		}
		k = strings.TrimSpace(k)
		if _, known := configKeys[k]; !known {
			return nil, fmt.Errorf("%w: line %d: unknown key %q", ErrInvalidConfig, i+1, k)
		}
		changes[k] = NormalizeConfigValue(k, v)
	}
	return changes, nil
}
