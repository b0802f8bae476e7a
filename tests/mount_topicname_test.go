package tests

import (
	"os/exec"
	"strings"
	"testing"
)

// TestMountTopicNameCollision: as in Kafka, a topic whose name differs from
// an existing one only by '.' against '_' cannot be created (the two would
// share Kafka's metric names): mkdir fails with EINVAL and a producer's
// auto-create with INVALID_TOPIC_EXCEPTION, and nothing is created. Both
// used to succeed, so `a.b` and `a_b` lived side by side, a pair a Kafka
// broker refuses to make.
func TestMountTopicNameCollision(t *testing.T) {
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/a.b_c-1" && echo x >> "$M/a.b_c-1/0/data"`)
	m.fails(`mkdir "$M/a_b_c-1"`, "Invalid argument")
	m.fails(`mkdir "$M/a.b.c-1"`, "Invalid argument")
	// The same name without '.' or '_' differing elsewhere is a topic of
	// its own, and the existing one is untouched.
	m.ok(`mkdir "$M/a.b_c-2"`)

	// A producer that auto-creates is refused too.
	bin := kafkaNeedKcat(t)
	cmd := exec.Command("timeout", "-k", "5", "60", bin, "-b", addr, "-P", "-t", "a_b.c-1")
	cmd.Stdin = strings.NewReader("y\n")
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "Invalid topic") {
		t.Fatalf("kcat produce to a colliding topic: %s", out)
	}

	if got := m.ok(`ls "$M"; ls "$D" | grep -c '^a.b.c-1-' || true`); got != "a.b_c-1\na.b_c-2\n1\n" {
		t.Fatalf("topics after the refused creates:\n%s", got)
	}
	if got := m.ok(`cat "$M/a.b_c-1/0/data"`); got != "x\n" {
		t.Fatalf("the existing topic reads %q", got)
	}
}
