#!/usr/bin/env python3
"""Writes the translated peer tests (tests/peers/<peer>/<test>/): args,
trace.csv and expect.csv / counts.txt. Every expected value below comes from
an assertion of the upstream test named by the folder (see README.md)."""
import os, shutil

ROOT = os.path.dirname(os.path.abspath(__file__))
cases = []

def case(peer, name, args, trace, expect=None, counts=None):
    cases.append((peer, name, args, trace, expect, counts))

def csv(rows):
    # A row of one empty field would be a blank line, which CSV skips.
    return "".join((",".join(str(x) for x in r) if any(str(x) for x in r) or len(r) > 1
                    else '""') + "\n" for r in rows)

# ---------------- pingora-limits ----------------
MAX, MIN = 9223372036854775807, -9223372036854775808
def est(name, args, rows):
    case("pingora", name, "--algo estimator " + args,
         [("op", "key", "value")] + [r[:3] for r in rows],
         [("result",)] + [(r[3],) for r in rows])
est("estimator_incr", "--hashes 8 --slots 8",
    [("incr", "a", 1, 1), ("incr", "b", 1, 1), ("incr", "a", 2, 3), ("incr", "b", 2, 3)])
est("estimator_incr_overflow", "--hashes 1 --slots 1",
    [("incr", "a", MAX, MAX), ("incr", "a", 1, MIN), ("get", "a", "", MIN)])
est("estimator_incr_underflow", "--hashes 1 --slots 1",
    [("incr", "a", MIN, MIN), ("incr", "a", -1, MAX), ("get", "a", "", MAX)])
est("estimator_desc", "--hashes 8 --slots 8",
    [("incr", "a", 3, ""), ("incr", "b", 3, ""), ("decr", "a", 1, ""), ("decr", "b", 1, ""),
     ("get", "a", "", 2), ("get", "b", "", 2)])
est("estimator_get", "--hashes 8 --slots 8",
    [("incr", "a", 1, ""), ("incr", "a", 2, ""), ("incr", "b", 1, ""), ("incr", "b", 2, ""),
     ("get", "a", "", 3), ("get", "b", "", 3)])
est("estimator_reset", "--hashes 8 --slots 8",
    [("incr", "a", 1, ""), ("incr", "a", 2, ""), ("incr", "b", 1, ""), ("incr", "b", 2, ""),
     ("decr", "b", 1, ""), ("reset", "", "", ""), ("get", "a", "", 0), ("get", "b", "", 0)])
case("pingora", "inflight_count", "--algo inflight",
     [("op", "key", "value"), ("incr", "a", 1), ("incr", "a", 2), ("drop", "g0", ""),
      ("get", "g1", ""), ("drop", "g1", ""), ("incr", "a", 1)],
     [("result",), (1,), (3,), ("",), (2,), ("",), (1,)])
# Rate: sleep(1 s) is t_ms + 1000 (a real sleep lasts a little longer; any
# overshoot below one interval gives the same answers).
case("pingora", "rate_test_observe_rate", "--algo rate --interval-ms 1000",
     [("t_ms", "key", "op", "n"), (0, 1, "observe", 3), (0, 1, "observe", 2), (0, 1, "rate", ""),
      (1000, 1, "observe", 4), (1000, 1, "rate", ""), (2000, 1, "rate", ""), (3000, 1, "rate", "")],
     [("value",), (3,), (5,), (0,), (4,), (5,), (4,), (0,)])
# 90/10 closure: (prev * 0.1 + curr * 0.9) / 1 s, asserted as 5*0.9,
# 5*0.1+4*0.9, 4*0.1 and 0: its inputs (prev, curr) are (0,5), (5,4), (4,0), (0,0).
case("pingora", "rate_test_observe_rate_custom_90_10", "--algo rate --interval-ms 1000 --internals",
     [("t_ms", "key", "op", "n"), (0, 1, "observe", 3), (0, 1, "observe", 2), (0, 1, "rate_proportional", ""),
      (1000, 1, "observe", 4), (1000, 1, "rate_proportional", ""), (2000, 1, "rate_proportional", ""),
      (3000, 1, "rate_proportional", "")],
     [("value", "prev", "curr"), (3, "", ""), (5, "", ""), ("", 0, 5), (4, "", ""), ("", 5, 4),
      ("", 4, 0), ("", 0, 0)])
E = "±0.15"
case("pingora", "rate_test_observe_rate_custom_proportional", "--algo rate --interval-ms 1000",
     [("t_ms", "key", "op", "n"), (0, 1, "observe", 3), (0, 1, "observe", 2), (0, 1, "rate_proportional", ""),
      (500, 1, "rate_proportional", ""), (500, 1, "rate", ""), (1000, 1, "observe", 4),
      (1000, 1, "rate_proportional", ""), (1750, 1, "rate_proportional", ""),
      (2000, 1, "rate_proportional", ""), (2000, 1, "rate", ""), (2500, 1, "rate_proportional", ""),
      (2500, 1, "rate", ""), (3500, 1, "rate_proportional", "")],
     [("value",), (3,), (5,), ("5" + E,), ("5" + E,), ("0" + E,), (4,), ("9" + E,), ("5.25" + E,),
      ("4" + E,), ("4" + E,), ("2" + E,), ("4" + E,), (0,)])

# ---------------- golang.org/x/time/rate ----------------
T0 = 1_700_000_000_000_000_000  # time.Now() in the tests
D = 100_000_000                 # const d = 100 * time.Millisecond
def t(k): return T0 + k * D
BITS = {1: "3ff0000000000000", 0: "0000000000000000", 2: "4000000000000000",
        3: "4008000000000000", -1: "bff0000000000000"}
def act(k):  # dSince(r.timeToAct) == k
    return f"{t(k) - D // 2}..{t(k) + D // 2 - 1}"

def allows(name, limit, burst, steps, extra=""):
    """run(): TokensAt(t) == toks, then AllowN(t, n) == ok."""
    trace, exp = [("t_ns", "n", "op")], [("ok", "tokens_bits")]
    for (k, toks, n, ok) in steps:
        trace += [(t(k), 0, "tokens"), (t(k), n, "allow")]
        exp += [("true", BITS[toks]), (str(ok).lower(), "")]
    case("x-time", name, f"--algo token-bucket --limit {limit} --burst {burst} --internals {extra}".strip(),
         trace, exp)

allows("TestLimiterBurst1", 10, 1, [(0, 1, 1, True), (0, 0, 1, False), (0, 0, 1, False),
       (1, 1, 1, True), (1, 0, 1, False), (1, 0, 1, False), (2, 1, 2, False), (2, 1, 1, True),
       (2, 0, 1, False)])
allows("TestLimiterBurst3", 10, 3, [(0, 3, 2, True), (0, 1, 2, False), (0, 1, 1, True),
       (0, 0, 1, False), (1, 1, 4, False), (2, 2, 1, True), (3, 2, 1, True), (4, 2, 1, True),
       (4, 1, 1, True), (4, 0, 1, False), (4, 0, 1, False), (9, 3, 3, True), (9, 0, 0, True)])
allows("TestLimiterJumpBackwards", 10, 3, [(1, 3, 1, True), (0, 2, 1, True), (0, 1, 1, True),
       (0, 0, 1, False), (0, 0, 1, False), (1, 1, 1, True), (1, 0, 1, False), (1, 0, 1, False),
       (2, 1, 1, True), (2, 0, 1, False), (2, 0, 1, False)], "--unsorted")
case("x-time", "TestLimiter_noTruncationErrors", "--algo token-bucket --limit 0.7692307692307693 --burst 1",
     [("t_ns", "n", "op"), (T0, 1, "allow")], [("ok",), ("true",)])
case("x-time", "TestSimultaneousRequests", "--algo token-bucket --limit 1 --burst 5",
     [("t_ns", "n", "op")] + [(T0, 1, "allow")] * 15, None, ["ok == true 5 5"])
# 5 s of AllowN every 2 ms: ideal = 100 + 100 * 5 = 600; numOK in
# [int32(0.999 * 600), int32(600 + 1)] = [599, 601].
case("x-time", "TestLongRunningQPS", "--algo token-bucket --limit 100 --burst 100",
     [("t_ns", "n", "op")] + [(T0 + i * 2_000_000, 1, "allow") for i in range(2500)], None,
     ["ok == true 599 601"])

def reserves(name, limit, burst, steps, extra=""):
    """Steps: ("r", k, n, act_k|None, ok[, max_wait, id]), ("c", k, id),
    ("a", k, toks, n, ok), ("sl", k, limit), ("sb", k, burst)."""
    trace = [("t_ns", "n", "op", "arg", "max_wait_ns", "id")]
    exp = [("ok", "act_ns", "tokens_bits")]
    for s in steps:
        if s[0] == "r":
            _, k, n, ak, ok, *rest = s
            mw = rest[0] if rest else ""
            rid = rest[1] if len(rest) > 1 else ""
            trace.append((t(k), n, "reserve", "", mw, rid))
            exp.append((str(ok).lower(), act(ak) if ok else "", ""))
        elif s[0] == "c":
            trace.append((t(s[1]), 0, "cancel_at", s[2], "", ""))
            exp.append(("", "", ""))
        elif s[0] == "a":
            _, k, toks, n, ok = s
            trace += [(t(k), 0, "tokens", "", "", ""), (t(k), n, "allow", "", "", "")]
            exp += [("", "", BITS[toks]), (str(ok).lower(), "", "")]
        elif s[0] == "sl":
            trace.append((t(s[1]), 0, "set_limit", s[2], "", ""))
            exp.append(("", "", ""))
        elif s[0] == "sb":
            trace.append((t(s[1]), 0, "set_burst", s[2], "", ""))
            exp.append(("", "", ""))
    case("x-time", name, f"--algo token-bucket --limit {limit} --burst {burst} --internals --act {extra}".strip(),
         trace, exp)

reserves("TestSimpleReserve", 10, 2, [("r", 0, 2, 0, True), ("r", 0, 2, 2, True), ("r", 3, 2, 4, True)])
reserves("TestMix", 10, 2, [("r", 0, 3, 1, False), ("r", 0, 2, 0, True), ("a", 1, 1, 2, False),
         ("r", 1, 2, 2, True), ("a", 1, -1, 1, False), ("a", 3, 1, 1, True)])
reserves("TestCancelInvalid", 10, 2, [("r", 0, 2, 0, True), ("r", 0, 3, 3, False, "", "r"),
         ("c", 0, "r"), ("r", 0, 2, 2, True)])
reserves("TestCancelLast", 10, 2, [("r", 0, 2, 0, True), ("r", 0, 2, 2, True, "", "r"),
         ("c", 1, "r"), ("r", 1, 2, 2, True)])
reserves("TestCancelTooLate", 10, 2, [("r", 0, 2, 0, True), ("r", 0, 2, 2, True, "", "r"),
         ("c", 3, "r"), ("r", 3, 2, 4, True)])
reserves("TestCancel0Tokens", 10, 2, [("r", 0, 2, 0, True), ("r", 0, 1, 1, True, "", "r"),
         ("r", 0, 1, 2, True), ("c", 0, "r"), ("r", 0, 1, 3, True)])
reserves("TestCancel1Token", 10, 2, [("r", 0, 2, 0, True), ("r", 0, 2, 2, True, "", "r"),
         ("r", 0, 1, 3, True), ("c", 2, "r"), ("r", 2, 2, 4, True)])
reserves("TestCancelMulti", 10, 4, [("r", 0, 4, 0, True), ("r", 0, 3, 3, True, "", "A"),
         ("r", 0, 1, 4, True), ("r", 0, 1, 5, True, "", "C"), ("c", 1, "C"), ("c", 1, "A"),
         ("r", 1, 3, 5, True)])
reserves("TestReserveJumpBack", 10, 2, [("r", 1, 2, 1, True), ("r", 0, 1, 1, True),
         ("r", 2, 2, 3, True), ("r", 0, 3, None, False), ("r", 2, 1, 4, True),
         ("r", 0, 2, None, False, D), ("r", 2, 1, 5, True)], "--unsorted")
reserves("TestReserveJumpBackCancel", 10, 2, [("r", 1, 2, 1, True), ("r", 1, 2, 3, True, "", "r"),
         ("r", 1, 1, 4, True), ("c", 0, "r"), ("r", 1, 2, 4, True)], "--unsorted")
reserves("TestReserveSetLimit", 5, 2, [("r", 0, 2, 0, True), ("r", 0, 2, 4, True), ("sl", 2, 10),
         ("r", 2, 1, 4, True)])
reserves("TestReserveSetBurst", 5, 2, [("r", 0, 2, 0, True), ("r", 0, 2, 4, True), ("sb", 3, 4),
         ("r", 0, 4, 9, True)], "--unsorted")
reserves("TestReserveSetLimitCancel", 5, 2, [("r", 0, 2, 0, True), ("r", 0, 2, 4, True, "", "r"),
         ("sl", 2, 10), ("c", 2, "r"), ("r", 2, 2, 3, True)])
reserves("TestReserveMax", 10, 2, [("r", 0, 2, 0, True, D), ("r", 0, 1, 1, True, D),
         ("r", 0, 1, 2, False, D)])

def delay_ok(want):  # waitDelayOk(wantD, got)
    hi = (want * 3 + 1) // 2
    lo = max(0, want * D - D // 2)
    return f"{lo}..{hi * D + D // 2 - 1}"

def waits(name, limit, burst, steps, pre=()):
    """Steps (k_start_ns_offset, n, deadline_ns, cancel_ns, wantD, nilErr):
    each wait starts at the fake clock's time, which the previous waits
    advanced (runWait is sequential; the fake timer moves the clock)."""
    trace = [("t_ns", "n", "op", "arg", "deadline_ns", "cancel_ns")]
    exp = [("ok", "act_ns")]
    now = T0
    for p in pre:
        trace.append((now,) + p)
        exp.append(("", ""))
    for (n, dl, cn, want, nil) in steps:
        trace.append((now, n, "wait", "", dl, cn))
        lo, hi = delay_ok(want).split("..")
        exp.append((str(nil).lower(), f"{now + int(lo)}..{now + int(hi)}"))
        now += want * D  # the fake clock after the wait returned
    case("x-time", name, f"--algo token-bucket --limit {limit} --burst {burst} --act", trace, exp)

waits("TestWaitSimple", 10, 3, [(1, "", 0, 0, False), (4, "", "", 0, False), (2, "", "", 0, True),
      (3, "", "", 2, True)])
waits("TestWaitCancel", 10, 3, [(2, "", "", 0, True), (3, "", D, 1, False), (2, "", "", 0, True)])
waits("TestWaitTimeout", 10, 3, [(2, D, "", 0, True), (3, D, "", 0, False)])
waits("TestWaitInf", "inf", 0, [(3, "", "", 0, True)])
case("x-time", "TestZeroLimit", "--algo token-bucket --limit 0 --burst 1",
     [("t_ns", "n", "op"), (T0, 1, "allow"), (T0, 1, "allow")], [("ok",), ("true",), ("false",)])
waits("TestSetAfterZeroLimit", 0, 1, [(1, "", "", 1, True)],
      pre=((1, "allow", "", "", ""), (1, "allow", "", "", ""), (0, "set_limit", 10, "", "")))
cases[-1][4][1] = ("true", "")
cases[-1][4][2] = ("false", "")
case("x-time", "TestTinyLimit", "--algo token-bucket --limit 1e-10 --burst 1",
     [("t_ns", "n", "op"), (T0, 1, "allow"), (T0, 1, "allow")], [("ok",), ("true",), ("false",)])
# TestEvery: closeEnough(Every(interval), lim): |a/b| - 1 < 1e-9.
every = [(0, None), (-1, None), (1, 1e9), (1000, 1e6), (1_000_000, 1e3), (10_000_000, 100),
         (100_000_000, 10), (1_000_000_000, 1), (2_000_000_000, 0.5), (2_500_000_000, 0.4),
         (4_000_000_000, 0.25), (10_000_000_000, 0.1), (MAX, 1e9 / MAX)]
case("x-time", "TestEvery", "--algo every", [("interval_ns",)] + [(i,) for i, _ in every],
     [("is_inf", "limit")] + [("true", "") if l is None else ("false", f"{l!r}±{l * 1e-9!r}") for _, l in every])
def some(name, args, times, ran):
    case("x-time", name, "--algo sometimes " + args, [("t_ns",)] + [(x,) for x in times],
         [("ran",)] + [(str(bool(r)).lower(),) for r in ran])
S = 1_000_000_000
some("ExampleSometimes_once", "", [T0] * 3, [1, 0, 0])
some("ExampleSometimes_first", "--first 2", [T0] * 3, [1, 1, 0])
some("ExampleSometimes_every", "--every 2", [T0] * 3, [1, 0, 1])
some("ExampleSometimes_interval", f"--interval-ns {S}", [T0, T0, T0 + S], [1, 0, 1])
some("ExampleSometimes_mix", f"--first 2 --every 2 --interval-ns {2 * S}",
     [T0] * 3 + [T0 + 2 * S] * 3, [1, 1, 1, 1, 1, 0])
some("TestSometimesZero", "--interval-ns 0", [T0, T0], [1, 0])
some("TestSometimesMax", f"--interval-ns {MAX}", [T0, T0], [1, 0])
some("TestSometimesNegative", "--interval-ns -1", [T0, T0], [1, 0])

# ---------------- uber-go/ratelimit ----------------
ORIGIN = "--unix-origin-ns 1700000000000000000"  # clockMock.Set(time.Now())
VARIANTS = ["mutex", "atomic", "atomic-int64"]
MS = 1_000_000
for v in VARIANTS:
    for label, slack in [("WithSlack", ""), ("WithoutSlack", " --slack 0")]:
        case("uber-go", f"TestInitial_{label}_{v}", f"--algo leaky-bucket --rate 10{slack} --variant {v} {ORIGIN}",
             [("t_ns",), (0,), (0,), (0,)], [("return_ns",), (0,), (100 * MS,), (200 * MS,)])
    case("uber-go", f"TestMaxSlack_{v}", f"--algo leaky-bucket --rate 1 --slack 1 --variant {v} {ORIGIN}",
         [("t_ns",), (1,), (2 * S + 1,), (2 * S + 2,), (2 * S + 3,), (2 * S + 4,)], None,
         [f"return_ns < {3 * S} 3 3", f"return_ns < {10 * S} 5 5"])
    def loop(callers, rows):
        tr = [("t_ns", "caller", "after_ns")]
        for c in callers:
            tr.append((0, c, ""))
            tr += [("", c, 0)] * (rows - 1)
        return tr
    case("uber-go", f"TestRateLimiter_{v}", f"--algo leaky-bucket --rate 100 --slack 0 --variant {v} {ORIGIN}",
         loop("abcd", 80), None,
         [f"return_ns < {S} 100 100", f"return_ns < {2 * S} 200 200", f"return_ns < {3 * S} 300 300"])
    case("uber-go", f"TestPer_{v}",
         f"--algo leaky-bucket --rate 7 --per-ns {60 * S} --slack 0 --variant {v} {ORIGIN}",
         loop("ab", 10), None,
         [f"return_ns < {S} 1 1", f"return_ns < {60 * S} 8 8", f"return_ns < {120 * S} 15 15"])
case("uber-go", "TestUnlimited", "--algo leaky-bucket --unlimited",
     [("t_ns",)] + [(0,)] * 1000, None, [f"return_ns < {MS} 1000 1000"])
# Example_default: Take at 0, time.Sleep(45ms) (real sleeps overshoot: the
# printed "4 4ms" needs the loop to start in (45, 47] ms; 46 ms here), then
# ten Takes in a loop; printed gaps 0,0,0,4ms,10ms x5 (rounded to 2 ms).
case("uber-go", "Example_default", f"--algo leaky-bucket --rate 100 {ORIGIN}",
     [("t_ns", "caller", "after_ns"), (0, "main", ""), (46 * MS, "main", "")] + [("", "main", 0)] * 9,
     [("return_ns",), ("",)] + [(f"{r * MS}±{MS}",) for r in [46, 46, 46, 46, 50, 60, 70, 80, 90, 100]])
case("uber-go", "Example_withoutSlack", f"--algo leaky-bucket --rate 100 --slack 0 {ORIGIN}",
     [("t_ns", "caller", "after_ns"), (0, "main", "")] + [("", "main", 0)] * 5,
     [("return_ns",)] + [(i * 10 * MS,) for i in range(6)])

for peer in ("pingora", "x-time", "uber-go"):
    shutil.rmtree(os.path.join(ROOT, peer), ignore_errors=True)
for (peer, name, args, trace, expect, counts) in cases:
    d = os.path.join(ROOT, peer, name)
    os.makedirs(d)
    open(os.path.join(d, "args"), "w").write(args + "\n")
    open(os.path.join(d, "trace.csv"), "w").write(csv(trace))
    if expect:
        open(os.path.join(d, "expect.csv"), "w").write(csv(expect))
    if counts:
        open(os.path.join(d, "counts.txt"), "w").write("\n".join(counts) + "\n")
print(len(cases), "cases")
