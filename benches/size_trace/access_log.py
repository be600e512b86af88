#!/usr/bin/env python3
"""Writes scenarios/traces/access-log.csv: 15 s of a small API's access log
for a 100 requests per second limit (columns ts = Unix ms, ip).

5 steady clients at about 75 req/s (near the limit, never over it), one
abuser at about 250 req/s from 5 s to 9 s, and 1,500 occasional clients
with one or two requests each. Deterministic: Python's Mersenne Twister
with a fixed seed; gaps are uniform in (0.5, 1.5) / rate.
"""
import random
import sys

rng = random.Random(17)
T0 = 1_764_583_200_000  # 2025-12-01T10:00:00Z, ms
events = []

def client(ip, rate, start_s, end_s):
    t = start_s + rng.random() / rate
    while t < end_s:
        events.append((T0 + int(t * 1000), ip))
        t += (0.5 + rng.random()) / rate

for i in range(5):
    client(f"10.0.0.{i + 1}", 75.0, 0.0, 15.0)
client("203.0.113.9", 250.0, 5.0, 9.0)
for i in range(1500):
    ip = f"172.16.{i // 250}.{i % 250 + 1}"
    for _ in range(1 + (rng.random() < 0.5)):
        events.append((T0 + int(rng.random() * 15000), ip))

events.sort()
out = sys.argv[1] if len(sys.argv) > 1 else "scenarios/traces/access-log.csv"
with open(out, "w") as f:
    f.write("ts,ip\n")
    for t, ip in events:
        f.write(f"{t},{ip}\n")
