package logstore

import (
	"errors"
	"strings"
	"testing"
)

// kafkaTopicConfigs is every topic-level config Kafka's LogConfig defines
// (3.9 and 4.x), with a value Kafka takes and one it refuses.
var kafkaTopicConfigs = map[string][2]string{
	"cleanup.policy":                          {"compact", "shred"},
	"compression.type":                        {"zstd", "brotli"},
	"compression.gzip.level":                  {"-1", "0"},
	"compression.lz4.level":                   {"17", "18"},
	"compression.zstd.level":                  {"-131072", "23"},
	"delete.retention.ms":                     {"0", "-1"},
	"file.delete.delay.ms":                    {"0", "-1"},
	"flush.messages":                          {"1", "0"},
	"flush.ms":                                {"0", "-1"},
	"follower.replication.throttled.replicas": {"0:0,1:0", "0-0"},
	"index.interval.bytes":                    {"0", "-1"},
	"leader.replication.throttled.replicas":   {"*", "x"},
	"local.retention.bytes":                   {"-2", "-3"},
	"local.retention.ms":                      {"-2", "-3"},
	"max.compaction.lag.ms":                   {"1", "0"},
	"max.message.bytes":                       {"0", "-1"},
	"message.downconversion.enable":           {"FALSE", "no"},
	"message.format.version":                  {"3.0-IV1", "three"},
	"message.timestamp.after.max.ms":          {"0", "-1"},
	"message.timestamp.before.max.ms":         {"0", "-1"},
	"message.timestamp.difference.max.ms":     {"0", "-1"},
	"message.timestamp.type":                  {"LogAppendTime", "Now"},
	"min.cleanable.dirty.ratio":               {"1", "1.5"},
	"min.compaction.lag.ms":                   {"0", "-1"},
	"min.insync.replicas":                     {"1", "0"},
	"preallocate":                             {"true", "yes"},
	"remote.copy.lag.bytes":                   {"-1", "-2"},
	"remote.copy.lag.ms":                      {"-1", "-2"},
	"remote.log.copy.disable":                 {"false", "1"},
	"remote.log.delete.on.disable":            {"true", "0"},
	// segfs has no tiered storage: true is refused as by a broker
	// with remote.log.storage.system.enable=false.
	"remote.storage.enable":          {"false", "true"},
	"retention.bytes":                {"-5", "x"},
	"retention.ms":                   {"-1", "-2"},
	"segment.bytes":                  {"1048576", "13"},
	"segment.index.bytes":            {"4", "3"},
	"segment.jitter.ms":              {"0", "-1"},
	"segment.ms":                     {"1", "0"},
	"unclean.leader.election.enable": {"false", "maybe"},
}

// TestKafkaTopicConfigKeys: every topic config Kafka defines is a key (so
// kafka-topics.sh --config min.insync.replicas=1 and Strimzi can create
// topics), each value checked as Kafka's validator checks it; a name
// Kafka does not define stays unknown; the settings segfs does not apply
// persist as overrides, in the config file text like any other.
func TestKafkaTopicConfigKeys(t *testing.T) {
	keys := map[string]bool{}
	for _, k := range ConfigKeys() {
		keys[k] = true
	}
	for k, vals := range kafkaTopicConfigs {
		if !keys[k] {
			t.Errorf("Kafka's topic config %s is not a key", k)
			continue
		}
		if err := CheckConfigValue(k, vals[0]); err != nil {
			t.Errorf("%s=%s refused: %v", k, vals[0], err)
		}
		err := CheckConfigValue(k, vals[1])
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: err %v, want ErrInvalidConfig naming the key", k, vals[1], err)
		}
		line := k + "=" + vals[0]
		for i := 0; i <= len(line); i++ {
			if err := CheckUnfinishedConfigLine([]byte(line[:i])); err != nil {
				t.Errorf("prefix %q of the valid line %q refused: %v", line[:i], line, err)
			}
		}
	}
	for _, k := range InertConfigKeys() {
		if _, ok := kafkaTopicConfigs[k]; !ok {
			t.Errorf("inert key %s is not one of Kafka's", k)
		}
	}
	for _, k := range []string{"min.insync.replica", "no.such.key", "log.retention.hours", "replication.factor"} {
		if err := CheckConfigValue(k, "1"); err == nil || !strings.Contains(err.Error(), "unknown key") {
			t.Errorf("%s: err %v, want unknown key", k, err)
		}
	}
	if err := CheckUnfinishedConfigLine([]byte("preallocate=yes")); err == nil {
		t.Error("preallocate=yes not refused while unfinished")
	}
	if err := CheckConfigValue("remote.storage.enable", "true"); err == nil || !strings.Contains(err.Error(), "Tiered Storage") {
		t.Errorf("remote.storage.enable=true: %v", err)
	}

	// Defaults as Kafka's. The config text shows min.insync.replicas,
	// which segfs applies, and none of the inert ones until set.
	def := DefaultConfig()
	for _, kv := range []string{"min.insync.replicas=1", "unclean.leader.election.enable=false", "preallocate=false",
		"message.downconversion.enable=true", "local.retention.ms=-2", "leader.replication.throttled.replicas=",
		"compression.gzip.level=-1", "remote.storage.enable=false"} {
		k, v, _ := strings.Cut(kv, "=")
		if got, ok := def.Get(k); !ok || got != v {
			t.Errorf("default %s: %q %v, want %q", k, got, ok, v)
		}
	}
	text := string(def.Text())
	if !strings.Contains(text, "\nmin.insync.replicas=1\n") {
		t.Errorf("default config text lacks min.insync.replicas=1:\n%s", text)
	}
	for _, k := range InertConfigKeys() {
		if strings.Contains(text, "\n"+k+"=") {
			t.Errorf("default config text shows the inert %s:\n%s", k, text)
		}
	}

	// Stored, shown and persisted like any override.
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	overrides := map[string]string{"min.insync.replicas": "2", "preallocate": "TRUE", "local.retention.bytes": "100",
		"follower.replication.throttled.replicas": " 0:0 , 1:0 "}
	if _, err := s.CreateTopic("t", 1, overrides); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, nil)
	defer s.Close()
	tp, err := s.Topic("t")
	if err != nil {
		t.Fatal(err)
	}
	cfg, ovr := tp.ConfigSnapshot()
	if len(ovr) != len(overrides) {
		t.Errorf("overrides after reopen %v, want %v", ovr, overrides)
	}
	if cfg.MinInsyncReplicas != 2 {
		t.Errorf("min.insync.replicas %d after reopen", cfg.MinInsyncReplicas)
	}
	text = string(cfg.Text())
	for _, kv := range []string{"min.insync.replicas=2", "preallocate=true", "local.retention.bytes=100",
		"follower.replication.throttled.replicas=0:0,1:0"} {
		if !strings.Contains(text, "\n"+kv+"\n") {
			t.Errorf("config text after reopen lacks %s:\n%s", kv, text)
		}
	}
	// The config file door: set, reset to the default.
	changes, err := ParseConfigText([]byte("unclean.leader.election.enable=true\npreallocate=\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.SetConfig(changes); err != nil {
		t.Fatal(err)
	}
	if v, _ := tp.Config().Get("unclean.leader.election.enable"); v != "true" {
		t.Errorf("unclean.leader.election.enable=%s after a config write", v)
	}
	if v, _ := tp.Config().Get("preallocate"); v != "false" {
		t.Errorf("preallocate=%s after a reset", v)
	}
	if _, ok := tp.Overrides()["preallocate"]; ok {
		t.Error("preallocate still an override after a reset")
	}
	text = string(tp.Config().Text())
	if !strings.Contains(text, "\nunclean.leader.election.enable=true\n") || strings.Contains(text, "\npreallocate=") {
		t.Errorf("config text after setting unclean.leader.election.enable and resetting preallocate:\n%s", text)
	}
}
