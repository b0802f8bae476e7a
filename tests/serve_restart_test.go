package tests

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestServeRestartAtOnce: `segfs serve` started again right after a
// SIGTERM to the running one (a supervisor's restart, `kill -TERM $old;
// segfs serve ...` without waiting) comes up once the old one has closed
// its store, on the same address. It used to fail at once, the data
// directory still locked (and the address still bound) by the old server
// while it closed its partitions; `segfs mount` already waited for a
// holder on its way out. A holder that keeps serving is still refused,
// named.
func TestServeRestartAtOnce(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	addr := kafkaFreeAddr(t)
	// Many partitions: closing the store seals and fsyncs each, which
	// keeps the old server holding the directory for a while.
	flags := []string{"--listen", addr, "--partitions", "64"}
	s := kafkaServe(t, data, flags...)
	const rounds = 8
	for round := 0; round < rounds; round++ {
		cl := kafkaClient(t, addr, kgo.AllowAutoTopicCreation())
		for p := int32(0); p < 64; p += 8 {
			kafkaProduce(t, cl, "r", p, fmt.Sprintf("round %d", round))
		}
		cl.Close()
		old := s
		old.cmd.Process.Signal(syscall.SIGTERM)
		s = kafkaServe(t, data, flags...)
		select {
		case err := <-old.done:
			if err != nil {
				t.Fatalf("round %d: the old server exited with %v:\n%s", round, err, old.stderr())
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d: the old server still runs 20s after SIGTERM, beside the new one:\n%s", round, old.stderr())
		}
	}
	var want []string
	for round := 0; round < rounds; round++ {
		want = append(want, fmt.Sprintf("round %d", round))
	}
	if got := recordValues(kafkaConsume(t, addr, "r", 56, 0, rounds)); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("after %d restarts, r/56 holds %q; want %q", rounds, got, want)
	}

	// A server that is not shutting down keeps the directory.
	r := cliRun(t, "serve", "--listen", "127.0.0.1:0", data)
	msg := fmt.Sprintf("serve: data directory %s is in use by process %d (segfs serve)", data, s.cmd.Process.Pid)
	if r.Code == 0 || !strings.Contains(r.Stderr, msg) {
		t.Fatalf("a second serve beside a live one: exit %d, stderr %q; want %q", r.Code, r.Stderr, msg)
	}
}
