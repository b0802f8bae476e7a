package tests

import (
	"os"
	"strings"
	"testing"
)

// Invalid topic names get Kafka's INVALID_TOPIC_EXCEPTION from Metadata and
// Produce, which librdkafka names "Broker: Invalid topic" — the empty name
// too. segfs took an empty name for a lookup by topic ID, which does not
// exist before Metadata v10: librdkafka (v4) got UNKNOWN_TOPIC_ID and
// printed "Err-100?". Nothing is created for any of them.
//
// kcat produces through kcatProduceQueued: librdkafka reports the broker's
// error only for a message queued before the Metadata answer, and says
// "Local: Unknown topic" for one produced after it, against Kafka too.
func TestKafkaInvalidTopicNames(t *testing.T) {
	kafkaNeedKcat(t)
	srv := kafkaServe(t, "")
	for _, name := range []string{"", "bad topic", "..", strings.Repeat("n", 250)} {
		stderr, code := kcatProduceQueued(t, srv.addr, "x", "-t", name, "-p", "0")
		if code == 0 || !strings.Contains(stderr, "Broker: Invalid topic") {
			t.Errorf("kcat -P -t %.20q: exit %d, stderr %q; want a failure \"Broker: Invalid topic\"", name, code, stderr)
		}
		out, _, _ := kcatRun(t, srv.addr, "", "-L", "-t", name)
		if !strings.Contains(out, "Broker: Invalid topic") {
			t.Errorf("kcat -L -t %.20q:\n%s\nwant the topic listed with \"Broker: Invalid topic\"", name, out)
		}
	}
	ents, err := os.ReadDir(srv.data)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() {
			t.Errorf("a directory was created for an invalid topic: %q", e.Name())
		}
	}
}

// Without auto-creation, Metadata still tells an invalid name from an
// unknown one, as Kafka's getTopicMetadata does: `kcat -L -t 'bad topic'`
// reads "Broker: Invalid topic", where segfs answered "Unknown topic or
// partition", which clients treat as retriable and keep asking about.
func TestKafkaInvalidTopicNamesNoAutoCreate(t *testing.T) {
	kafkaNeedKcat(t)
	srv := kafkaServe(t, "", "--auto-create-topics=false")
	for _, tc := range []struct{ name, want string }{
		{"bad topic", "Broker: Invalid topic"},
		{"..", "Broker: Invalid topic"},
		{strings.Repeat("n", 250), "Broker: Invalid topic"},
		{"missing", "Broker: Unknown topic or partition"},
	} {
		out, _, _ := kcatRun(t, srv.addr, "", "-L", "-t", tc.name)
		if !strings.Contains(out, tc.want) {
			t.Errorf("kcat -L -t %.20q:\n%s\nwant the topic listed with %q", tc.name, out, tc.want)
		}
	}
	ents, err := os.ReadDir(srv.data)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() {
			t.Errorf("a directory was created: %q", e.Name())
		}
	}
}
