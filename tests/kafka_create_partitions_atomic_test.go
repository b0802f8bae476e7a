package tests

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
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
