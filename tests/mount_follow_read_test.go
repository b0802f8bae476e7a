package tests

import (
	"strings"
	"testing"
)

// followRounds is a bash script: a follower opens data of a new topic $T
// before any writer
// (so it reads through the page cache) and reads the seed line; then, in
// lockstep, one line is appended ($APPEND, which sees the line as $1; the
// script waits until status counts it) and the follower tries once to
// read a line with `read` alone, without fstat, as `while read line <&4`
// loops and log shippers do, until it gets one (at most 50 rounds). It
// prints the line it got and the round.
const followRounds = `
mkdir "$M/$T"
d="$M/$T/0/data"
end() { sed -n 's/^log.end.offset=//p' "$M/$T/0/status"; }
echo seed >> "$d"
exec 4<"$d"
IFS= read -r line <&4 && [ "$line" = seed ] || { echo "seed not read: $line" >&2; exit 1; }
for round in $(seq 1 50); do
  want=$(( $(end) + 1 ))
  append "w$round" || exit 1
  for _ in $(seq 1 400); do [ "$(end)" -ge $want ] && break; sleep 0.05; done
  [ "$(end)" -ge $want ] || { echo "line $round never appended" >&2; exit 1; }
  if IFS= read -r line <&4; then echo "$line $round"; exit 0; fi
done
echo "nothing after $round rounds"
`

// TestMountFollowReadWhileAppending: a reader that follows data with
// read(2) alone sees a line appended while appends keep coming, from a
// writer that holds data open or from a Kafka producer. Each growth used
// to make the GETATTR that read(2) sends first drop the kernel's cached
// pages from the old end, and the kernel discards the attributes of a
// request during which the inode was invalidated: that read(2) saw the
// old size and returned end-of-file, at every try, for as long as every
// try found the file grown (in the wild: nothing for as long as a busy
// writer kept writing).
func TestMountFollowReadWhileAppending(t *testing.T) {
	addr := kafkaFreeAddr(t)
	kafkaNeedKcat(t)
	m := mntNew(t, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	for _, c := range []struct{ name, setup string }{
		{"writer", `exec 3>>"$d"; append() { echo "$1" >&3; }`},
		{"kafka", `append() { echo "$1" | kcat -b ` + addr + ` -t $T -p 0 -P; }`},
	} {
		t.Run(c.name, func(t *testing.T) {
			script := "T=" + c.name + "\n" + strings.Replace(followRounds, "for round in", c.setup+"\nfor round in", 1)
			out := strings.TrimSpace(m.ok(script, 120))
			if !strings.HasPrefix(out, "w1 ") {
				t.Fatalf("the follower read %q; want w1, the first line appended after it reached the end", out)
			}
			t.Logf("read %s", out)
		})
	}
}
