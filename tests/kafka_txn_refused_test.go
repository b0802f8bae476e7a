package tests

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A transactional producer is refused at its first step, the lookup of its
// transaction coordinator, with an error every client takes as final and
// the server's reason: kcat and confluent-kafka-python (librdkafka) used to
// retry the lookup every 500 ms until init_transactions timed out with
// only "Timed out waiting for operation to finish", never saying why.
func TestKafkaTransactionalProducerRefused(t *testing.T) {
	kafkaNeedKcat(t)
	srv := kafkaServe(t, "")
	const reason = "segfs does not serve transactions"

	// kcat: init_transactions fails with the reason and kcat exits 1.
	_, errs, code := kcatRun(t, srv.addr, "x\n", "-P", "-t", "txn", "-p", "0", "-X", "transactional.id=tx-kcat")
	if code == 0 || !strings.Contains(errs, "init_transactions()") || !strings.Contains(errs, reason) ||
		!strings.Contains(errs, "Transactional Id authorization failed") {
		t.Fatalf("kcat with transactional.id: exit %d\n%s\nwant init_transactions() to fail with %q", code, errs, reason)
	}
	// The server says why too, naming the transactional id: the Java
	// producer shows only the code.
	if log := srv.stderr(); !strings.Contains(log, reason) || !strings.Contains(log, "tx-kcat") {
		t.Fatalf("server log does not name the refused transactional id:\n%s", log)
	}

	// confluent-kafka-python: the same, as a fatal KafkaException.
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import confluent_kafka").Run(); err == nil {
		script := `
import sys
from confluent_kafka import Producer, KafkaException
p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": "tx-py"})
try:
    p.init_transactions(60)
except KafkaException as e:
    err = e.args[0]
    print(err.name(), err.fatal(), err.str())
    sys.exit(0)
sys.exit("init_transactions succeeded")
`
		cmd := exec.Command("timeout", "-k", "5", "90", python, "-c", script, srv.addr)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("python: %v\nstdout: %s\nstderr: %s", err, out.String(), errb.String())
		}
		if got := out.String(); !strings.HasPrefix(got, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED True ") || !strings.Contains(got, reason) {
			t.Fatalf("python init_transactions: %q, want a fatal TRANSACTIONAL_ID_AUTHORIZATION_FAILED saying %q", got, reason)
		}
	} else {
		t.Log("confluent-kafka-python not installed: only kcat and franz-go checked")
	}

	// franz-go: BeginTransaction (which initialises the producer id)
	// fails with the same code (it stopped at any non-retriable one
	// already).
	cl := kafkaClient(t, srv.addr, kgo.TransactionalID("tx-kgo"), kgo.AllowAutoTopicCreation())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := cl.BeginTransaction()
	if err == nil {
		err = cl.ProduceSync(ctx, &kgo.Record{Topic: "txn", Value: []byte("x")}).FirstErr()
	}
	if !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Fatalf("kgo transactional producer: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", err)
	}
}
