#!/usr/bin/env python3
"""A ratelab exec adapter (docs/book/src/protocol.md) for a limiter living in Redis:
every request is one EVALSHA of `gcra.lua` (beside this file) on the key
`ratelab:<key>`, with the virtual time as an argument. A batch is sent as
one pipeline (all its EVALSHAs in one write, then their replies in order),
so the requests are decided one by one, in order, as live traffic would
be, without a round trip each.

Policy: emission interval T = interval_ns // limit and burst = limit (the
decision lab's `gcra` model); `params` may set `burst`. Redis is reached
on 127.0.0.1 at `params.redis_port` (default 6379); the database is used
as it is (start a fresh server, or FLUSHDB, before a run). Standard library
only: the RESP protocol is spoken directly on a socket.
"""
import os
import socket
import sys

PROTOCOL = "ratelab-exec 1"


def command(*args):
    """One RESP command as bytes."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Replies:
    """Reads RESP replies from a socket."""

    def __init__(self, sock):
        self.f = sock.makefile("rb", buffering=1 << 20)

    def one(self):
        line = self.f.readline()
        if not line:
            raise ConnectionError("redis closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind in (b":", b"+"):
            return rest
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self.f.read(n + 2)[:-2]
        if kind == b"-":
            raise RuntimeError("redis: " + rest.decode(errors="replace"))
        raise RuntimeError(f"redis: unexpected reply {line[:40]!r}")


def main():
    inp, out = sys.stdin, sys.stdout
    hello = inp.readline().split()
    if hello[:2] != PROTOCOL.split() or hello[2:3] != ["limiter"]:
        print(f"not a limiter hello: {hello[:3]}", file=sys.stderr)
        return 2
    fields = dict(f.split("=", 1) for f in hello[3:] if "=" in f)
    limit = int(fields["limit"])
    t = int(fields["interval_ns"]) // limit
    burst = int(fields.get("burst", limit))
    tau = t * (burst - 1)
    port = int(fields.get("redis_port", 6379))
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    replies = Replies(sock)
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "gcra.lua"), "rb") as f:
        sock.sendall(command("SCRIPT", "LOAD", f.read()))
    sha = replies.one()
    # A string key and its TAT: about 64 bytes in Redis per key.
    out.write(f"{PROTOCOL} ok state_bytes=64\n")
    out.flush()
    ts, taus = str(t).encode(), str(tau).encode()
    for line in inp:
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "end":
            break
        n = int(parts[2])
        nums = parts[3:]
        batch = []
        for i in range(0, 3 * n, 3):
            now, k, w = nums[i], nums[i + 1], nums[i + 2]
            batch.append(command(b"EVALSHA", sha, b"1", b"ratelab:" + k.encode(), now, ts, taus, w))
        sock.sendall(b"".join(batch))
        res = [b"1" if replies.one() == b"1" else b"0" for _ in range(n)]
        out.write(b" ".join(res).decode())
        out.write("\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
