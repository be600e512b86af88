//! `ratelab replay --algo leaky-bucket`: one uber-go/ratelimit `Take()` per
//! row ([`crate::model::uber_ratelimit`], commit 3e5300c).
//!
//! ```text
//! ratelab replay --algo leaky-bucket --rate 100 [--per-ns 1000000000] [--slack 10]
//!                [--variant atomic|atomic-int64|mutex] [--unix-origin-ns 0]
//!                --trace in.csv --out out.csv
//! ```
//!
//! Input: header `t_ns`, one `Take()` per row by a separate caller arriving
//! at `t_ns` (non-decreasing; `--unsorted` accepts
//! a clock that steps back, as Go does). Output: `t_ns,return_ns`, where `return_ns`
//! is the `time.Time` Take returns (the `last` it computes), on the same
//! scale as `t_ns`; `--internals` adds `sleep_ns` (what Take passed to
//! `clock.Sleep`), the format of `tests/golden/pacers/lb_*.csv`.
//!
//! `--rate` is `New(rate)` (> 0), `--per-ns` is `Per(d)` (> 0, default one
//! second), `--slack` is `WithSlack(n)` (default 10; 0 = `WithoutSlack`;
//! negative values are accepted, as Go does). `--variant` picks the
//! implementation: `atomic-int64` (what `New` returns, default), `atomic`
//! or `mutex` (callers that arrive while another sleeps holding the lock
//! queue FIFO and read the clock when they get it).
//!
//! # Which instant is `t_ns = 0`
//! `t_ns` is read as the clock value `time.Unix(0, unix_origin_ns + t_ns)`.
//! The default `--unix-origin-ns 0` is what a Go harness sees when it drives
//! the real library with `WithClock(clock.NewMock())` and moves the mock to
//! `t_ns` (`mock.Add` / `mock.Set(time.Unix(0, t_ns))`): `NewMock()` starts at
//! the Unix epoch. For the default `atomic-int64` implementation this matters:
//! its state is `UnixNano()` of the last permission with **0 meaning "never
//! called"**, so every call at exactly `t_ns = 0` passes at once, and the
//! first call after them is again treated as a first call. The pointer-based
//! implementations test `time.Time{}.IsZero()` (year 1) and do not notice.
//! Pass e.g. `--unix-origin-ns 1700000000000000000` to model a real wall
//! clock (or a mock `Set` to `time.Now()`, as upstream's own tests do);
//! `return_ns` stays relative to the origin.
//!
//! # `--unlimited`
//! `ratelimit.NewUnlimited()`: `Take()` returns `time.Now()` at once
//! (`return_ns = t_ns`, `sleep_ns` 0); no other option applies.
//!
//! # Closed loop (callers)
//! Header `t_ns,caller,after_ns`: each row is one `Take()` by goroutine
//! `caller` (any text). A row with `after_ns` set (and `t_ns` empty) is
//! called when the *same caller's previous* `Take()` returned, plus
//! `after_ns` (a `for { rl.Take() }` loop is `after_ns = 0`); a row with
//! `t_ns` set (and `after_ns` empty) is called at `t_ns`. Calls run in time
//! order across callers (ties in file order), as goroutines on a mock clock
//! would, so a caller's loop interleaves with the others. The output keeps
//! the file order and adds `call_ns` (when the call was made) before
//! `return_ns` (`t_ns,caller,after_ns,call_ns,return_ns[,sleep_ns]`).

use super::csvio::{parse_i64, OutputCsv, TraceReader};
use super::ReplayArgs;
use crate::error::{Error, Result};
use crate::model::uber_ratelimit::{LeakyBucket, LeakyBucketConfig, LeakyVariant, Take};

/// Replays `args.trace` into `args.out`.
pub fn run(args: &ReplayArgs) -> Result<()> {
    if args.unlimited {
        super::reject_unused(
            args,
            "leaky-bucket --unlimited",
            &["--internals", "--unlimited", "--unsorted"],
        )?;
        return replay(args, &mut |t| Take {
            now_ns: t,
            return_ns: t,
            sleep_ns: 0,
            wake_ns: t,
        });
    }
    super::reject_unused(
        args,
        "leaky-bucket",
        &[
            "--rate",
            "--per-ns",
            "--slack",
            "--variant",
            "--unix-origin-ns",
            "--internals",
            "--unsorted",
        ],
    )?;
    let rate = match args.rate {
        Some(r) if r > 0 => r,
        Some(r) => {
            return Err(Error::input(format!(
                "--rate {r}: expected a positive number of calls per --per-ns (--unlimited for NewUnlimited)"
            )))
        }
        None => return Err(Error::input("--rate is required for --algo leaky-bucket (or --unlimited)")),
    };
    let per_ns = match args.per_ns {
        None => 1_000_000_000,
        Some(p) if p > 0 => p,
        Some(p) => {
            return Err(Error::input(format!(
                "--per-ns {p}: expected a positive period in nanoseconds"
            )))
        }
    };
    let variant = match &args.variant {
        None => LeakyVariant::AtomicInt64,
        Some(v) => LeakyVariant::parse(v).ok_or_else(|| {
            Error::input(format!(
                "--variant {v}: expected atomic, atomic-int64 or mutex"
            ))
        })?,
    };
    let cfg = LeakyBucketConfig {
        rate,
        per_ns,
        slack: args.slack.unwrap_or(10),
        variant,
        unix_origin_ns: args.unix_origin_ns.unwrap_or(0),
    };
    let mut lim = LeakyBucket::new(cfg).map_err(|e| Error::input(format!("--rate {rate}: {e}")))?;
    replay(args, &mut |t| lim.take(t))
}

fn replay(args: &ReplayArgs, take: &mut dyn FnMut(i64) -> Take) -> Result<()> {
    let mut input = TraceReader::open(&args.trace)?;
    if input.header() == ["t_ns", "caller", "after_ns"] {
        return replay_callers(args, input, take);
    }
    if input.header() != ["t_ns"] {
        return Err(input.error_at(
            1,
            format!(
                "header {:?}: expected t_ns (or t_ns,caller,after_ns)",
                input.header().join(",")
            ),
        ));
    }
    let mut out = OutputCsv::create(&args.out)?;
    if args.internals {
        out.row(["t_ns", "return_ns", "sleep_ns"])?;
    } else {
        out.row(["t_ns", "return_ns"])?;
    }
    let mut prev: Option<i64> = None;
    while let Some((line, rec)) = input.next_row()? {
        let raw = rec.get(0).unwrap_or("").to_string();
        let t = parse_i64(&input, line, "t_ns", &raw)?;
        if let Some(p) = prev.filter(|_| !args.unsorted)
            && t < p
        {
            return Err(input.error_at(
                line,
                format!("t_ns value {t}: times must be non-decreasing (previous t_ns {p})"),
            ));
        }
        prev = Some(t);
        let take = take(t);
        let ret = take.return_ns.to_string();
        if args.internals {
            out.row([raw.as_str(), &ret, &take.sleep_ns.to_string()])?;
        } else {
            out.row([raw.as_str(), &ret])?;
        }
    }
    out.commit()
}

/// One row of a closed-loop trace.
struct CallerRow {
    fields: [String; 3],
    /// Absolute time, or the delay after the caller's previous return.
    at: When,
    result: Option<Take>,
}

enum When {
    At(i64),
    After(i64),
}

fn replay_callers(
    args: &ReplayArgs,
    mut input: TraceReader,
    take: &mut dyn FnMut(i64) -> Take,
) -> Result<()> {
    let mut rows: Vec<CallerRow> = Vec::new();
    // Per caller, its rows in file order.
    let mut by_caller: Vec<(String, Vec<usize>)> = Vec::new();
    while let Some((line, rec)) = input.next_row()? {
        let f: Vec<String> = rec.iter().map(str::to_string).collect();
        let at = match (f[0].is_empty(), f[2].is_empty()) {
            (false, true) => When::At(parse_i64(&input, line, "t_ns", &f[0])?),
            (true, false) => When::After(parse_i64(&input, line, "after_ns", &f[2])?),
            _ => {
                return Err(input.error_at(
                    line,
                    "expected exactly one of t_ns (an absolute call time) and after_ns (after the caller's previous Take returned)",
                ))
            }
        };
        let caller = f[1].as_str();
        let idx = rows.len();
        match by_caller.iter_mut().find(|(c, _)| *c == caller) {
            Some((_, v)) => v.push(idx),
            None => {
                if matches!(at, When::After(_)) {
                    return Err(input.error_at(
                        line,
                        format!("caller {caller:?}: its first row needs a t_ns (after_ns refers to a previous call)"),
                    ));
                }
                by_caller.push((caller.to_string(), vec![idx]));
            }
        }
        rows.push(CallerRow {
            fields: [f[0].clone(), f[1].clone(), f[2].clone()],
            at,
            result: None,
        });
    }
    // Next row index into each caller's list.
    let mut next = vec![0usize; by_caller.len()];
    let mut last_wake: Vec<Option<i64>> = vec![None; by_caller.len()];
    loop {
        // The ready call with the earliest time (ties: file order).
        let mut best: Option<(i64, usize, usize)> = None;
        for (c, (_, list)) in by_caller.iter().enumerate() {
            let Some(&idx) = list.get(next[c]) else {
                continue;
            };
            let t = match rows[idx].at {
                When::At(t) => t,
                When::After(d) => last_wake[c].expect("not a first row").saturating_add(d),
            };
            if best.is_none_or(|(bt, bi, _)| (t, idx) < (bt, bi)) {
                best = Some((t, idx, c));
            }
        }
        let Some((t, idx, c)) = best else { break };
        let r = take(t);
        last_wake[c] = Some(r.wake_ns);
        next[c] += 1;
        rows[idx].result = Some(r);
    }
    let mut out = OutputCsv::create(&args.out)?;
    let mut header = vec!["t_ns", "caller", "after_ns", "call_ns", "return_ns"];
    if args.internals {
        header.push("sleep_ns");
    }
    out.row(&header)?;
    for row in &rows {
        let r = row.result.expect("every row runs");
        let mut f: Vec<String> = row.fields.to_vec();
        f.push(r.now_ns.to_string());
        f.push(r.return_ns.to_string());
        if args.internals {
            f.push(r.sleep_ns.to_string());
        }
        out.row(&f)?;
    }
    out.commit()
}
