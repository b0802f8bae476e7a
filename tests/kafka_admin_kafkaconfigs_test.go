package tests

import "testing"

// Topic settings Kafka defines but segfs does not apply (preallocate,
// unclean.leader.election.enable, local.retention.ms, ...) and
// min.insync.replicas, from confluent-kafka-python's AdminClient, as
// kafka-topics.sh --config, Strimzi and Terraform send them: a single-node
// Kafka broker takes them, and segfs answered INVALID_CONFIG "unknown key",
// so such topics could not be created. They are taken with Kafka's value
// checks, stored as overrides the `config` file and describe_configs show
// (DYNAMIC_TOPIC_CONFIG, 1; describe_configs lists the others with their
// defaults, DEFAULT_CONFIG, 5, the config file does not), settable
// through `config` too, and they persist across a new mount. A name Kafka
// does not define is still refused.
func TestKafkaAdminKafkaOnlyConfigs(t *testing.T) {
	py := needAdminPython(t)
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)

	wantResult(t, py(addr, "create", "x1", "1", "min.insync.replicas=1", "unclean.leader.election.enable=false",
		"preallocate=true", "message.downconversion.enable=true", "local.retention.ms=1000",
		"message.timestamp.before.max.ms=60000"), "x1 OK")
	wantResult(t, py(addr, "create", "x2", "1", "min.insync.replicas=0"), "x2 INVALID_CONFIG", "min.insync.replicas")
	wantResult(t, py(addr, "create", "x3", "1", "preallocate=yes"), "x3 INVALID_CONFIG", "preallocate")
	wantResult(t, py(addr, "create", "x4", "1", "remote.storage.enable=true"), "x4 INVALID_CONFIG", "Tiered Storage")
	wantResult(t, py(addr, "create", "x5", "1", "min.insync.replica=1"), "x5 INVALID_CONFIG", "Unknown topic config name: min.insync.replica")
	if got := m.ok(`ls "$M"`); got != "x1\n" {
		t.Fatalf("topics after the refused creations: %q", got)
	}

	const shown = `grep -E '^(min.insync.replicas|unclean.leader.election.enable|preallocate|message.downconversion.enable|local.retention.ms|message.timestamp.before.max.ms|remote.storage.enable)=' "$M/x1/config"`
	// Set ones show; remote.storage.enable, not set, does not (the
	// config file shows the inert settings only once set).
	want := "local.retention.ms=1000\nmessage.downconversion.enable=true\nmessage.timestamp.before.max.ms=60000\n" +
		"min.insync.replicas=1\npreallocate=true\nunclean.leader.election.enable=false\n"
	if got := m.ok(shown); got != want {
		t.Fatalf("x1/config:\n%s\nwant:\n%s", got, want)
	}
	wantConfig(t, describeMap(t, py, addr, "topic", "x1"), map[string]string{
		"preallocate": "true source=1", "min.insync.replicas": "1 source=1", "local.retention.ms": "1000 source=1",
		"unclean.leader.election.enable": "false source=1", "remote.storage.enable": "false source=5",
		"compression.gzip.level": "-1 source=5", "leader.replication.throttled.replicas": " source=5",
	})

	// The config file door takes them and checks them alike.
	m.ok(`echo unclean.leader.election.enable=true >> "$M/x1/config"`)
	m.fails(`echo preallocate=maybe >> "$M/x1/config"`, "Invalid argument")
	m.fails(`echo no.such.setting=1 >> "$M/x1/config"`, "Invalid argument")
	wantConfig(t, describeMap(t, py, addr, "topic", "x1"), map[string]string{
		"unclean.leader.election.enable": "true source=1", "preallocate": "true source=1",
	})
	// AlterConfigs (which replaces every override) takes them too.
	wantResult(t, py(addr, "alter", "x1", "follower.replication.throttled.replicas=0:0", "preallocate=true"), "x1 OK")
	wantResult(t, py(addr, "alter", "x1", "follower.replication.throttled.replicas=0-0"), "x1 INVALID_CONFIG")

	m.unmount()
	addr2 := kafkaFreeAddr(t)
	m2 := mntAt(t, m.data, "--kafka-listen", addr2)
	kafkaWaitListening(t, addr2)
	if got := m2.ok(`grep -E '^(follower.replication.throttled.replicas|preallocate|unclean.leader.election.enable)=' "$M/x1/config"`); got != "follower.replication.throttled.replicas=0:0\npreallocate=true\n" {
		t.Fatalf("x1/config after a new mount:\n%s", got)
	}
	wantConfig(t, describeMap(t, py, addr2, "topic", "x1"), map[string]string{
		"follower.replication.throttled.replicas": "0:0 source=1", "preallocate": "true source=1",
		"unclean.leader.election.enable": "false source=5",
	})
}
