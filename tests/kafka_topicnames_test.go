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
