#!/usr/bin/env python3
"""A count-min sketch for ratelab's `exec` estimator entries
(docs/book/src/protocol.md, the `estimator` role). Standard library only; stdout is
the protocol, logs go to stderr.

The hello gives the shape (`hashes` rows of `slots` counters), the update
rule (`variant`: count_min adds to every row; conservative raises each row
only up to the new minimum) and a `seed`: row i hashes a key id with
splitmix64 seeded from (seed, i), so a run is deterministic and each run
(a fresh seed) draws fresh hashes, as the lab's model rows do.
"""
import sys

PROTOCOL = "ratelab-exec 1"
MASK = (1 << 64) - 1


def mix64(z):
    """splitmix64's finalizer."""
    z = (z + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE5E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def main():
    inp, out = sys.stdin, sys.stdout
    hello = inp.readline().split()
    if hello[:2] != PROTOCOL.split() or hello[2:3] != ["estimator"]:
        print(f"not an estimator hello: {hello[:3]}", file=sys.stderr)
        return 2
    fields = dict(f.split("=", 1) for f in hello[3:] if "=" in f)
    hashes, slots = int(fields["hashes"]), int(fields["slots"])
    seed = int(fields["seed"])
    conservative = fields.get("variant") == "conservative"
    row_seeds = [mix64(seed ^ mix64(i + 1)) for i in range(hashes)]
    # One flat array: row i's counters are [i*slots, (i+1)*slots).
    counters = [0] * (hashes * slots)
    cells = {}  # key id -> its counter indices, hashed once

    def cells_of(k):
        c = cells.get(k)
        if c is None:
            c = cells[k] = [i * slots + mix64(s ^ k) % slots for i, s in enumerate(row_seeds)]
        return c

    out.write(f"{PROTOCOL} ok\n")
    out.flush()
    for line in inp:
        parts = line.split()
        if not parts:
            continue
        op = parts[0]
        if op == "end":
            break
        n = int(parts[2])
        nums = list(map(int, parts[3:]))
        if op == "incr":
            for j in range(0, 2 * n, 2):
                c = cells_of(nums[j])
                v = nums[j + 1]
                if conservative:
                    new = min(counters[x] for x in c) + v
                    for x in c:
                        if counters[x] < new:
                            counters[x] = new
                else:
                    for x in c:
                        counters[x] += v
            out.write("ok\n")
        elif op == "get":
            out.write(" ".join(str(min(counters[x] for x in cells_of(k))) for k in nums[:n]))
            out.write("\n")
        else:
            print(f"unexpected line: {line[:40]!r}", file=sys.stderr)
            return 2
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
