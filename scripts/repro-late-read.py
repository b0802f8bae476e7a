#!/usr/bin/env python3
"""Reproduces the "one read late" behaviour of a cached data reader.

A reader that follows `data` with read(2) alone (no fstat first; a log
shipper, `while read line <&4`, a program woken by an event) sees each
new line one read(2) late: after an acknowledged append, its first read(2)
returns end-of-file and the second returns the line. The GETATTR that the
first read(2) sends finds the size grown while the reader's last cached
READ ended short inside the tail page, so it drops that page
(textNode.report: NotifyContent(off, 0) from inside GETATTR), and the
kernel discards the attributes of a request during which the inode was
invalidated: the read(2) still sees the old size. fstat-first readers
(coreutils tail -f) are not affected: fstat fills its answer from the
GETATTR reply even when the kernel does not keep it.

Fixed in the twenty-first session (fs/data.go announce, dropTail): the
page goes when the append is announced (the WRITE through the mount, or
the notifier's round for other appends), so the GETATTR keeps its size.
A read(2) that comes before the round of a Kafka append (at most 50 ms)
is still one read late; with SETTLE_S past the round every line needs one
read(2) (TestDataPageCacheReadAfterAppend).

Usage: repro-late-read.py MOUNT/TOPIC/0/data N mount|kafka [SETTLE_S]

Opens data read-only (a cached handle: no writer may have it open), reads
to the end, then N times: appends one line (mount: `echo >> data` in a
separate bash; kafka: kcat -P to 127.0.0.1:$KAFKA_PORT, default 19304),
sleeps SETTLE_S (default 0.2, past the notifier's round), and read(2)s
every 10 ms until the line shows (at most 3 s). It prints how many read(2)s
each line needed: 1 is on time, 2 is one read late.
"""
import collections
import os
import subprocess
import sys
import time

path, n, via = sys.argv[1], int(sys.argv[2]), sys.argv[3]
settle = float(sys.argv[4]) if len(sys.argv) > 4 else 0.2
topic = path.rstrip("/").split("/")[-3]
broker = "127.0.0.1:" + os.environ.get("KAFKA_PORT", "19304")
fd = os.open(path, os.O_RDONLY)
while os.read(fd, 1 << 16):
    pass
needed, late_ms, lost = collections.Counter(), [], 0
for i in range(n):
    line = b"line-%d\n" % i
    if via == "mount":
        subprocess.run(["bash", "-c", 'echo "$1" >> "$0"', path, line.decode().strip()], check=True)
    else:
        subprocess.run(["kcat", "-P", "-b", broker, "-t", topic, "-p", "0"], input=line, check=True)
    time.sleep(settle)
    t0, k, got = time.monotonic(), 0, b""
    while not got.endswith(line) and time.monotonic() - t0 < 3:
        got += os.read(fd, 1 << 16)
        k += 1
        if not got.endswith(line):
            time.sleep(0.01)
    if got.endswith(line):
        needed[k] += 1
        late_ms.append((time.monotonic() - t0) * 1000)
    else:
        lost += 1
print("appends via %s, read %.2fs after the ack: read(2)s needed %s; not within 3 s: %d; max %.0f ms"
      % (via, settle, dict(sorted(needed.items())), lost, max(late_ms, default=0)))
