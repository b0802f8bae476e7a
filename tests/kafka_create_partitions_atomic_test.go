package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCreatePartitionsAllOrNothing: a CreatePartitions that fails part way
// (the daemon runs out of descriptors, RLIMIT_NOFILE 300, adding 199
// partitions at some three descriptors each) adds none, as Kafka's
// controller applies the request as one metadata change. The partitions
// made before the failure used to stay: the request answered
// UNKNOWN_SERVER_ERROR "adding partition 95 of ev: ... too many open
// files" and the topic had 95 partitions, in Metadata, in `ls T/` and in
// the data directory. Now the count, the mount and the data directory are
// as before the request, the error names the cause, and a
// CreatePartitions within the limit then works.
func TestCreatePartitionsAllOrNothing(t *testing.T) {
	mntRequireFuse(t)
	base := t.TempDir()
	m := &mnt{t: t, data: filepath.Join(base, "data"), dir: filepath.Join(base, "mnt"), nofile: 300}
	if err := os.Mkdir(m.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	addr := kafkaFreeAddr(t)
	m.mount("--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	cl := kafkaClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	ct := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "ev", 1, 1
	ct.Topics = append(ct.Topics, rt)
	ct.TimeoutMillis = 20000
	if cresp, err := ct.RequestWith(ctx, cl); err != nil || cresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics ev: %v %+v", err, cresp)
	}
	kafkaProduce(t, cl, "ev", 0, "kept")

	dataDirs := func() []string {
		ents, err := os.ReadDir(m.data)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "ev-") {
				names = append(names, e.Name())
			}
		}
		slices.Sort(names)
		return names
	}
	partitions := func(topic string) int {
		mreq := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(topic)
		mreq.Topics = append(mreq.Topics, mt)
		mresp, err := mreq.RequestWith(ctx, cl)
		if err != nil || len(mresp.Topics) != 1 || mresp.Topics[0].ErrorCode != 0 {
			t.Fatalf("Metadata %s: %v %+v", topic, err, mresp)
		}
		return len(mresp.Topics[0].Partitions)
	}
	grow := func(count int32) (int16, string) {
		t.Helper()
		cp := kmsg.NewPtrCreatePartitionsRequest()
		cpt := kmsg.NewCreatePartitionsRequestTopic()
		cpt.Topic, cpt.Count = "ev", count
		cp.Topics = append(cp.Topics, cpt)
		cp.TimeoutMillis = 20000
		resp, err := cp.RequestWith(ctx, cl)
		if err != nil || len(resp.Topics) != 1 {
			t.Fatalf("CreatePartitions ev to %d: %v %+v", count, err, resp)
		}
		msg := ""
		if resp.Topics[0].ErrorMessage != nil {
			msg = *resp.Topics[0].ErrorMessage
		}
		return resp.Topics[0].ErrorCode, msg
	}

	before := dataDirs()
	code, msg := grow(200)
	if code == 0 {
		t.Fatalf("CreatePartitions ev to 200 under RLIMIT_NOFILE 300 succeeded: the test needs it to run out of descriptors")
	}
	if code != kerr.UnknownServerError.Code || !strings.Contains(strings.ToLower(msg), "too many open files") {
		t.Errorf("CreatePartitions ev to 200: %v %q, want UNKNOWN_SERVER_ERROR naming \"too many open files\"", kerr.ErrorForCode(code), msg)
	}
	t.Logf("CreatePartitions ev to 200: %v %q", kerr.ErrorForCode(code), msg)
	if n := partitions("ev"); n != 1 {
		t.Errorf("after the failed CreatePartitions, Metadata shows ev with %d partitions, want 1", n)
	}
	if got := m.ok(`ls "$M/ev" | grep -c '^[0-9]'`); got != "1\n" {
		t.Errorf("after the failed CreatePartitions, ls ev shows %q partitions, want 1", strings.TrimSpace(got))
	}
	if after := dataDirs(); !slices.Equal(after, before) {
		t.Errorf("after the failed CreatePartitions the data directory has %d ev-N directories, want %v (first few: %v)", len(after), before, after[:min(len(after), 5)])
	}

	// Within the limit it works, and the new partitions take records.
	if code, msg := grow(4); code != 0 {
		t.Fatalf("CreatePartitions ev to 4: %v %q", kerr.ErrorForCode(code), msg)
	}
	if n := partitions("ev"); n != 4 {
		t.Fatalf("after CreatePartitions ev to 4, Metadata shows %d partitions", n)
	}
	kafkaProduce(t, kafkaClient(t, addr), "ev", 3, "new") // a client that knows of 4
	if got := m.ok(`ls -d "$M"/ev/[0-9]* | wc -l; cat "$M/ev/0/data" "$M/ev/3/data"`); got != "4\nkept\nnew\n" {
		t.Fatalf("mount after CreatePartitions ev to 4: %q", got)
	}
	if after := dataDirs(); len(after) != 4 {
		t.Fatalf("data directory after CreatePartitions ev to 4: %v", after)
	}
}

// TestCreatePartitionsKilledRolledBack: a daemon killed (SIGKILL) in the
// middle of a CreatePartitions, after some of the new partition
// directories exist but not all, comes back with the topic at the count
// it had before the request, which was never answered: `ls T/`, Metadata
// and the partitions' status files show one partition, the directories
// the request made are gone, and the client's retry of the same request
// succeeds. The partitions made before the kill used to be adopted at the
// restart: the topic had 3 of the 5 partitions asked for, a count nobody
// asked for, and the retry of "5" still had to add 2 more while the
// client's first answer was an error.
//
// The kill lands at a known point: partition 3's directory is made
// beforehand with a full FIFO where its metadata's temp file goes, so the
// daemon's write there blocks after partitions 1 and 2 are made.
func TestCreatePartitionsKilledRolledBack(t *testing.T) {
	mntRequireFuse(t)
	base := t.TempDir()
	m := &mnt{t: t, data: filepath.Join(base, "data"), dir: filepath.Join(base, "mnt")}
	if err := os.Mkdir(m.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	addr := kafkaFreeAddr(t)
	m.mount("--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := kafkaClient(t, addr)
	ct := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "ev", 1, 1
	ct.Topics = append(ct.Topics, rt)
	ct.TimeoutMillis = 20000
	if cresp, err := ct.RequestWith(ctx, cl); err != nil || cresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics ev: %v %+v", err, cresp)
	}
	kafkaProduce(t, cl, "ev", 0, "kept")

	trap := filepath.Join(m.data, "ev-3")
	if err := os.Mkdir(trap, 0o755); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(trap, "partition.metadata.tmp")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	// Held open (and so the daemon's open of it does not wait for a
	// reader) and full, so that the daemon's write blocks.
	pipe, err := syscall.Open(fifo, syscall.O_RDWR|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if pipe >= 0 {
			syscall.Close(pipe)
		}
	}()
	for chunk := make([]byte, 4096); ; {
		if _, err := syscall.Write(pipe, chunk); err != nil {
			if !errors.Is(err, syscall.EAGAIN) {
				t.Fatal(err)
			}
			break
		}
	}

	grow := func(cl *kgo.Client, count int32) (int16, error) {
		cp := kmsg.NewPtrCreatePartitionsRequest()
		cpt := kmsg.NewCreatePartitionsRequestTopic()
		cpt.Topic, cpt.Count = "ev", count
		cp.Topics = append(cp.Topics, cpt)
		cp.TimeoutMillis = 20000
		resp, err := cp.RequestWith(ctx, cl)
		if err != nil {
			return 0, err
		}
		if len(resp.Topics) != 1 {
			return 0, fmt.Errorf("CreatePartitions answered %d topics", len(resp.Topics))
		}
		return resp.Topics[0].ErrorCode, nil
	}
	inFlight := kafkaClient(t, addr, kgo.RequestRetries(0))
	answered := make(chan error, 1)
	go func() {
		code, err := grow(inFlight, 5)
		if err == nil {
			err = fmt.Errorf("answered with error code %d before the kill", code)
		}
		answered <- err
	}()
	made := filepath.Join(m.data, "ev-2", "00000000000000000000.log")
	if !mntWaitFor(30*time.Second, func() bool { _, err := os.Stat(made); return err == nil }) {
		t.Fatalf("partition ev-2 was never made\n%s", m.daemonLog())
	}
	m.kill9()
	select {
	case err := <-answered:
		t.Logf("the CreatePartitions in flight at the kill: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the CreatePartitions in flight got no answer nor error 30s after the kill")
	}
	syscall.Close(pipe)
	pipe = -1

	m.mount("--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	cl = kafkaClient(t, addr)
	partitions := func() int {
		t.Helper()
		mreq := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr("ev")
		mreq.Topics = append(mreq.Topics, mt)
		mresp, err := mreq.RequestWith(ctx, cl)
		if err != nil || len(mresp.Topics) != 1 || mresp.Topics[0].ErrorCode != 0 {
			t.Fatalf("Metadata ev: %v %+v", err, mresp)
		}
		return len(mresp.Topics[0].Partitions)
	}
	if n := partitions(); n != 1 {
		t.Errorf("after the restart Metadata shows ev with %d partitions, want the 1 it had before the unanswered CreatePartitions", n)
	}
	if got := m.ok(`ls "$M/ev" | grep -c '^[0-9]'; ls "$M"/ev/*/status | wc -l; grep '^log.end.offset=' "$M/ev/0/status"; cat "$M/ev/0/data"`); got != "1\n1\nlog.end.offset=1\nkept\n" {
		t.Errorf("after the restart the mount shows %q, want 1 partition (ls, status files), ev/0 ending at offset 1 with its record", got)
	}
	if r := m.sh(`cat "$M/ev/1/status"`); r.code == 0 || !strings.Contains(r.err, "No such file") {
		t.Errorf("after the restart cat ev/1/status: exit %d %q, want No such file or directory", r.code, r.err)
	}
	for _, d := range []string{"ev-1", "ev-2", "ev-3"} {
		if _, err := os.Stat(filepath.Join(m.data, d)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after the restart the data directory has %s (%v): the partitions of the interrupted request must be removed", d, err)
		}
	}
	if t.Failed() {
		t.Logf("daemon log:\n%s", m.daemonLog())
		return
	}

	// The client's retry of the same request does what it asked.
	if code, err := grow(cl, 5); err != nil || code != 0 {
		t.Fatalf("retrying CreatePartitions ev to 5 after the restart: %v, error code %d", err, code)
	}
	if n := partitions(); n != 5 {
		t.Fatalf("after the retried CreatePartitions Metadata shows %d partitions, want 5", n)
	}
	kafkaProduce(t, kafkaClient(t, addr), "ev", 4, "new")
	if got := m.ok(`ls "$M/ev" | grep -c '^[0-9]'; cat "$M/ev/0/data" "$M/ev/4/data"; grep '^log.end.offset=' "$M/ev/4/status"`); got != "5\nkept\nnew\nlog.end.offset=1\n" {
		t.Fatalf("mount after the retried CreatePartitions: %q", got)
	}
}
