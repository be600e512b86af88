#!/usr/bin/env python3
"""How much the decision lab's answer depends on --spread.

Replays scenarios/traces/access-log.csv (millisecond times) and the same
requests logged by nginx in `combined` format (whole seconds,
scenarios/traces/access-log.combined.log.gz) with each spread rule through
the default candidates (limit 100/s), and prints each candidate's share of
compliant requests denied: with millisecond times, with whole seconds as
logged, spread evenly, and spread uniformly (the range over five seeds).
Usage: benches/access_logs/spread.py [BIN] (default: ratelab on the PATH, else
target/release/ratelab).
Takes a few seconds.
"""
import json, os, shutil, subprocess, sys, tempfile

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The binary: the argument, else `ratelab` on the PATH, else the release build.
binary = sys.argv[1] if len(sys.argv) > 1 else (
    shutil.which("ratelab") or os.path.join(root, "target/release/ratelab"))
traces = os.path.join(root, "scenarios/traces")
runs = [("milliseconds (CSV)", {"path": os.path.join(traces, "access-log.csv"), "unit": "ms"}, None)]
runs.append(("whole seconds, none", {"format": "combined", "spread": "none"}, 1))
runs.append(("whole seconds, even", {"format": "combined", "spread": "even"}, 1))
for seed in range(1, 6):
    runs.append((f"whole seconds, uniform seed {seed}", {"format": "combined", "spread": "uniform"}, seed))

def lab(trace, seed):
    with tempfile.TemporaryDirectory() as d:
        if "format" in trace:
            trace = dict(trace, path=os.path.join(traces, "access-log.combined.log.gz"))
        else:
            # The CSV's columns are ts (ms) and ip: a renamed copy.
            text = open(trace["path"]).read().replace("ts,ip", "t_ms,key", 1)
            p = os.path.join(d, "t.csv")
            open(p, "w").write(text)
            trace = {"path": p}
        sc = {"name": "spread", "kind": "decision_accuracy", "seed": seed or 1,
              "policy": {"limit": 100, "interval_ms": 1000}, "trace": trace}
        path = os.path.join(d, "s.json")
        json.dump(sc, open(path, "w"))
        subprocess.run([binary, "run", path, "--out", os.path.join(d, "out"), "--no-progress"],
                       check=True, stdout=subprocess.DEVNULL)
        return json.load(open(os.path.join(d, "out", "spread", "report.json")))

results = [(name, lab(t, s)) for name, t, s in runs]
names = [r["algorithm"] for r in results[0][1]["rows"]]
pct = lambda r, i: r["rows"][i]["harm"]["compliant_denied_pct"]
by = dict(results)
uniform = [r for n, r in results if n.startswith("whole seconds, uniform")]
print("compliant requests denied (%), limit 100/s:")
print("| candidate | ms times | whole s, none | whole s, even | whole s, uniform (5 seeds) |")
print("|---|---|---|---|---|")
for i, a in enumerate(names):
    u = sorted(pct(r, i) for r in uniform)
    span = f"{u[0]:.3f}" if u[0] == u[-1] else f"{u[0]:.3f}-{u[-1]:.3f}"
    cells = [f"{pct(by[n], i):.3f}" for n in ("milliseconds (CSV)", "whole seconds, none", "whole seconds, even")]
    print(f"| {a} | " + " | ".join(cells) + f" | {span} |")
