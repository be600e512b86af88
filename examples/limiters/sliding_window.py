#!/usr/bin/env python3
"""An exact sliding-log limiter for ratelab's `exec` model (docs/book/src/protocol.md).

At most `limit` admitted weight per key in any window (t - interval, t],
counting admitted requests only: the lab's primary oracle, so its row shows
no wrong decision. Standard library only; stdout is the protocol, logs go
to stderr.
"""
import sys
from collections import deque

PROTOCOL = "ratelab-exec 1"


def main():
    inp, out = sys.stdin, sys.stdout
    hello = inp.readline().split()
    if hello[:2] != PROTOCOL.split() or hello[2] != "limiter":
        print(f"not a limiter hello: {hello[:3]}", file=sys.stderr)
        return 2
    fields = dict(f.split("=", 1) for f in hello[3:])
    limit = int(fields["limit"])
    interval = int(fields["interval_ns"])
    # A log entry is (t, w): 16 bytes in a compiled implementation.
    out.write(f"{PROTOCOL} ok state_bytes=16\n")
    out.flush()
    logs = {}  # key -> [deque of (t, w), admitted sum]
    for line in inp:
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "end":
            break
        if parts[0] != "batch":
            print(f"unexpected line: {line[:40]!r}", file=sys.stderr)
            return 2
        n = int(parts[2])
        nums = list(map(int, parts[3:]))
        res = []
        push = res.append
        for i in range(0, 3 * n, 3):
            t, k, w = nums[i], nums[i + 1], nums[i + 2]
            st = logs.get(k)
            if st is None:
                st = logs[k] = [deque(), 0]
            log = st[0]
            cut = t - interval
            while log and log[0][0] <= cut:
                st[1] -= log.popleft()[1]
            if st[1] + w > limit:
                push("0")
            else:
                log.append((t, w))
                st[1] += w
                push("1")
        out.write(" ".join(res))
        out.write("\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
