package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kcat the way its manual shows it, against `segfs mount --kafka-listen`,
// compared with what the mount shows for the same partition: -K keys, -H
// headers and -Z nulls produce and print through -f's %k %K %s %S %h %o
// %p; a line appended with echo is the next record; -Q time queries
// agree with time/T (records stamped out of order: the first offset whose
// timestamp is >= T, -1 where time/T is the log end); -o s@T -o e@T reads
// that window.
func TestKafkaKcatAgainstMount(t *testing.T) {
	kafkaNeedKcat(t)
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/kv" && echo key.separator=: > "$M/kv/config"`)

	kcat(t, addr, "k1:v1\n:v2\nk3:\n", "-P", "-t", "kv", "-p", "0", "-K:", "-Z", "-H", "h1=x", "-H", "h2=")
	m.ok(`echo 'k4:v4' >> "$M/kv/0/data"`)
	if got, want := m.ok(`cat "$M/kv/0/data"`), "k1:v1\nv2\nk3:\nk4:v4\n"; got != want {
		t.Fatalf("data reads %q, want %q", got, want)
	}
	out := kcat(t, addr, "", "-C", "-t", "kv", "-e", "-q", "-Z", "-f", "%o %p %k(%K) %s(%S) [%h]\n")
	want := "0 0 k1(2) v1(2) [h1=x,h2=]\n" +
		"1 0 NULL(-1) v2(2) [h1=x,h2=]\n" +
		"2 0 k3(2) NULL(-1) [h1=x,h2=]\n" +
		"3 0 k4(2) v4(2) []\n"
	if out != want {
		t.Fatalf("kcat -C -f read\n%s\nwant\n%s", out, want)
	}

	// Records stamped out of order, one batch each, and one batch of two,
	// an hour ago (within retention and message.timestamp.*.max.ms).
	base := time.Now().Add(-time.Hour).UnixMilli()
	cl := kafkaClient(t, addr, kgo.AllowAutoTopicCreation())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, batch := range [][]int64{{1000}, {3000}, {2000, 4000}, {2500}} {
		var recs []*kgo.Record
		for _, d := range batch {
			recs = append(recs, &kgo.Record{Topic: "ts", Value: []byte(fmt.Sprint(d)), Timestamp: time.UnixMilli(base + d)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce %v: %v", batch, err)
		}
	}
	for _, d := range []int64{0, 1000, 1001, 2000, 2700, 3000, 3001, 4000, 4001} {
		ts := base + d
		link := strings.TrimSpace(m.ok(fmt.Sprintf(`readlink "$M/ts/0/time/%d"`, ts)))
		q := kcat(t, addr, "", "-Q", "-t", fmt.Sprintf("ts:0:%d", ts))
		var off int64
		if _, err := fmt.Sscanf(strings.TrimSpace(q), "ts [0] offset %d", &off); err != nil {
			t.Fatalf("kcat -Q at +%d: %q", d, q)
		}
		if off == -1 {
			off = 5 // no such record: time/T is the log end
		}
		if want := fmt.Sprintf("../offset/%d", off); link != want {
			t.Errorf("T=base+%d: time/T -> %s, kcat -Q says offset %s", d, link, strings.TrimSpace(q))
		}
	}
	out = kcat(t, addr, "", "-C", "-t", "ts", "-p", "0", "-o", fmt.Sprintf("s@%d", base+1500), "-o", fmt.Sprintf("e@%d", base+4000), "-q", "-f", "%o:%s:%T ")
	if want := fmt.Sprintf("1:3000:%d 2:2000:%d ", base+3000, base+2000); out != want {
		t.Fatalf("kcat -o s@ -o e@ read %q, want %q", out, want)
	}
}
