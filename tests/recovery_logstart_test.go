package tests

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRecoveryLogEndBelowLogStart: the log-start checkpoint says 20 (a
// DeleteRecords to 20 was checkpointed) but the segments end at 10 (a
// power cut took the unflushed records 10-19). As Kafka does, the mount
// deletes every segment and restarts the log at 20, and says so in its
// log: status shows start and end 20, data reads empty, offset/10 is
// ENOENT, the next line gets offset 20 and ListOffsets answers 20 as the
// earliest offset. It used to move the log start back to 10 and hand out
// offsets 10-19 a second time, under a consumer that had committed 15.
func TestRecoveryLogEndBelowLogStart(t *testing.T) {
	addr := kafkaFreeAddr(t)
	flags := []string{"--kafka-listen", addr}
	m := mntNew(t, flags...)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/lost" && seq 0 9 >> "$M/lost/0/data"`)
	m.kill9()
	// What DeleteRecords(20) wrote before the power cut.
	ck := filepath.Join(m.data, "log-start-offset-checkpoint")
	if err := os.WriteFile(ck, []byte("0\n1\nlost 0 20\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m.mount(flags...)
	kafkaWaitListening(t, addr)

	warned := false
	for _, l := range mntLines(m.daemonLog()) {
		if strings.Contains(l, "level=WARN") && strings.Contains(l, "topic=lost partition=0") &&
			strings.Contains(l, "log_end_offset=10") && strings.Contains(l, "log_start_offset=20") {
			warned = true
		}
	}
	if !warned {
		t.Errorf("no warning naming lost/0 and offsets 10 and 20 in the daemon log:\n%s", m.daemonLog())
	}
	st := m.status("lost")
	if st["log.start.offset"] != 20 || st["log.end.offset"] != 20 || st["segments"] != 1 || st["size.bytes"] != 0 {
		t.Fatalf("status after the load: %v, want the log restarted empty at 20", st)
	}
	if got := m.ok(`cat "$M/lost/0/data"; wc -c < "$M/lost/0/data"`); got != "0\n" {
		t.Errorf("data reads %q, want nothing", got)
	}
	for _, n := range []string{"0", "10", "19"} {
		m.fails(`cat "$M/lost/0/offset/`+n+`"`, "No such file or directory")
	}
	if e, l := kafkaListOffset(t, addr, "lost", -2), kafkaListOffset(t, addr, "lost", -1); e != 20 || l != 20 {
		t.Errorf("ListOffsets earliest %d latest %d, want 20 20", e, l)
	}
	if _, err := os.Stat(filepath.Join(m.data, "lost-0", "00000000000000000000.log")); err == nil {
		t.Error("the segment below the log start is still on disk")
	}

	m.ok(`echo next >> "$M/lost/0/data"`)
	if got := m.ok(`cat "$M/lost/0/data"; head -n1 "$M/lost/0/offset/20"`); got != "next\nnext\n" {
		t.Errorf("after an append: data and offset/20 read %q", got)
	}
	if e, l := kafkaListOffset(t, addr, "lost", -2), kafkaListOffset(t, addr, "lost", -1); e != 20 || l != 21 {
		t.Errorf("after an append: ListOffsets earliest %d latest %d, want 20 21", e, l)
	}
	if got := recordValues(kafkaConsumeAll(t, addr, "lost", 20, 20)); !slices.Equal(got, []string{"next"}) {
		t.Errorf("a consumer at 20 read %q", got)
	}
	// And it holds across a clean remount.
	m.unmount()
	m.mount(flags...)
	kafkaWaitListening(t, addr)
	if st := m.status("lost"); st["log.start.offset"] != 20 || st["log.end.offset"] != 21 {
		t.Errorf("after a remount: status %v", st)
	}
	if got := m.ok(`cat "$M/lost/0/data"`); got != "next\n" {
		t.Errorf("after a remount: data reads %q", got)
	}
}
