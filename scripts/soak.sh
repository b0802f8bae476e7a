#!/usr/bin/env bash
# Long fault loops of the fault suite (tests/fault_*_test.go, FUSE-NOTES.md
# §7.7), with the figures issue 7 asks for:
#
#   bash scripts/soak.sh [F1_COUNT [F2_COUNT]]      # defaults: 1000 100
#
# F1 is kill -9 of the mount daemon mid-append, F2 a power cut (xfs
# shutdown of the backing filesystem, then kill -9 and a remount), both
# under the mixed load: bash `echo >>` loops, a batching line writer, a
# writer of 1 to 300,000-byte lines, a Kafka producer with acks=-1, tail -f,
# grep -c and a Kafka consumer, plus a topic under time retention and a
# compacted topic (keys, tombstones) with their own writers and tail -f,
# the daemon running both cleaners every 100 ms. After every fault the
# oracle checks every acknowledged line (on the cleaned topics: every one
# still retained, or accounted for by the log start or by a later write of
# its key). Needs root, /dev/fuse, loop devices, mkfs.ext4
# (e2fsprogs), mkfs.xfs and xfs_io (xfsprogs). Exit status 0 only if no
# acknowledged line was lost and no restart needed a manual step.
#
# Figures printed: faults injected; acknowledged lines checked (summed over
# all checks: a line acknowledged before fault k is checked again after
# every later fault of its epoch); lines lost; recovery truncations (each
# is one segment whose torn or corrupt tail, a batch or a part of one, was
# cut at startup) and the bytes they dropped; restarts that needed a
# manual step; records deleted by retention (the log start offsets of the
# retention topics) and removed by compaction (offsets missing from the
# compacted topics), as the oracle last saw them, summed over the topics;
# cut lines: a write(2) the kill cut between two of its WRITEs leaves the
# acknowledged start of its line, which the next mount stores as a record
# (logstore doc, "Unfinished lines"); the oracle accepts such a prefix
# when it is followed by the whole line or is the writer's last record.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

f1=${1:-${SEGFS_SOAK_F1:-1000}}
f2=${2:-${SEGFS_SOAK_F2:-100}}
log=$(mktemp -t segfs-soak.XXXXXX)
echo "soak: F1 x$f1, F2 x$f2; go test output in $log"

start=$SECONDS
SEGFS_FAULT_F1=$f1 SEGFS_FAULT_F2=$f2 go test ./tests -count=1 -v -timeout 0 \
	-run '^(TestFaultKill9|TestFaultPowerCut)$' >"$log" 2>&1
status=$?

grep -E '^(--- |FAIL|ok )' "$log"
awk -v secs=$((SECONDS - start)) '
/FAULT-FIGURES/ {
	for (i = 1; i <= NF; i++) {
		split($i, kv, "=")
		if (kv[2] != "") sum[kv[1]] += kv[2]
	}
	runs++
}
END {
	printf "faults injected:                       %d\n", sum["faults"]
	printf "acknowledged lines checked:            %d\n", sum["acked"]
	printf "lines lost:                            %d\n", sum["lost"]
	printf "recovery truncations (bytes dropped):  %d (%d)\n", sum["truncations"], sum["dropped_bytes"]
	printf "restarts that needed a manual step:    %d\n", sum["manual"]
	printf "records deleted by retention:          %d\n", sum["retention_deleted"]
	printf "records removed by compaction:         %d\n", sum["compaction_removed"]
	printf "cut lines recovered as their prefix:   %d\n", sum["cut_lines"]
	printf "test runs reporting figures:           %d of 2, %d s\n", runs, secs
	if (runs != 2 || sum["lost"] != 0 || sum["manual"] != 0) exit 1
}' "$log" || status=1
if [ "$status" -ne 0 ]; then
	echo "soak: FAILED (see $log)" >&2
	grep -E '^\s+fault_.*_test.go:[0-9]+:' "$log" | grep -v FAULT-FIGURES | head -20 >&2
fi
exit "$status"
