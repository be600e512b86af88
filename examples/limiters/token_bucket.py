#!/usr/bin/env python3
"""A token bucket for ratelab's `exec` model (docs/book/src/protocol.md), written as
golang.org/x/time/rate's `Limiter.AllowN` computes it, so it decides as the
decision lab's `token_bucket` model does, request for request.

Policy: `rate = limit / interval` tokens per second and `burst = limit`;
the entry's `params` may set `rate_per_s` and `burst`. One bucket per key,
created full at the key's first request.

The arithmetic follows x/time/rate (v0.10.0 and later):
* `advance`: elapsed = t - last (last clamped to t; Go's zero time before
  the first request, so the first elapsed saturates at the largest
  Duration); tokens += elapsed.Seconds() * rate, where Seconds() converts
  whole seconds and the remainder separately; capped at burst.
* `reserveN(t, n, 0)`: tokens -= n; if negative, the wait is
  `Duration(1e9 * (-tokens / rate))`, truncated toward zero (InfDuration
  when it overflows). Admitted iff n <= burst and the wait is <= 0 (a tiny
  deficit whose wait truncates to 0 ns is admitted, as in Go); only an
  admitted request updates the bucket.

Standard library only; stdout is the protocol, logs go to stderr.
"""
import sys

PROTOCOL = "ratelab-exec 1"
NS = 1_000_000_000
MAX_DURATION = (1 << 63) - 1
TWO_63 = 2.0**63
# Go's zero time.Time (year 1) in Unix nanoseconds.
GO_ZERO = -62_135_596_800 * NS


def seconds(d):
    """time.Duration.Seconds() for d >= 0."""
    return float(d // NS) + float(d % NS) / 1e9


def main():
    inp, out = sys.stdin, sys.stdout
    hello = inp.readline().split()
    if hello[:2] != PROTOCOL.split() or hello[2:3] != ["limiter"]:
        print(f"not a limiter hello: {hello[:3]}", file=sys.stderr)
        return 2
    fields = dict(f.split("=", 1) for f in hello[3:] if "=" in f)
    limit = int(fields["limit"])
    rate = float(limit) / seconds(int(fields["interval_ns"]))
    if "rate_per_s" in fields:
        rate = float(fields["rate_per_s"])
    burst = int(fields.get("burst", limit))
    if not rate > 0.0:
        print(f"rate must be positive, got {rate}", file=sys.stderr)
        return 2
    fburst = float(burst)
    # limit 8, burst 8, tokens 8, last 8 in a compiled implementation.
    out.write(f"{PROTOCOL} ok state_bytes=32\n")
    out.flush()
    buckets = {}  # key -> [tokens, last_ns]
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
        get = buckets.get
        for i in range(0, 3 * n, 3):
            t, k, w = nums[i], nums[i + 1], nums[i + 2]
            b = get(k)
            if b is None:
                b = buckets[k] = [fburst, GO_ZERO]
            last = b[1]
            if t < last:
                last = t
            elapsed = t - last
            if elapsed > MAX_DURATION:
                elapsed = MAX_DURATION
            tokens = b[0] + (float(elapsed // NS) + float(elapsed % NS) / 1e9) * rate
            if tokens > fburst:
                tokens = fburst
            tokens -= w
            ok = w <= burst
            if ok and tokens < 0.0:
                wait = (-tokens / rate) * 1e9
                # Duration(wait) truncates toward zero, so it is <= 0 iff
                # wait < 1; above 2^63 it is InfDuration; exactly 2^63
                # converts to MinInt64 on amd64 (admitted).
                ok = wait < 1.0 or wait == TWO_63
            if ok:
                b[0] = tokens
                b[1] = t
                push("1")
            else:
                push("0")
        out.write(" ".join(res))
        out.write("\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
