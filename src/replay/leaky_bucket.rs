//! `ratelab replay --algo leaky-bucket`: one uber-go/ratelimit `Take()` per
//! row ([`crate::model::leaky_bucket`], commit 3e5300c).
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

use super::csvio::{parse_i64, OutputCsv, TraceReader};
use super::ReplayArgs;
use crate::error::{Error, Result};
use crate::model::leaky_bucket::{LeakyBucket, LeakyBucketConfig, LeakyVariant};

/// Parses a `--variant` value.
pub fn parse_variant(s: &str) -> Option<LeakyVariant> {
    match s.trim() {
        "atomic" => Some(LeakyVariant::Atomic),
        "atomic-int64" | "int64" | "atomic_int64" => Some(LeakyVariant::AtomicInt64),
        "mutex" => Some(LeakyVariant::Mutex),
        _ => None,
    }
}

/// Replays `args.trace` into `args.out`.
pub fn run(args: &ReplayArgs) -> Result<()> {
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
        ],
    )?;
    let rate = match args.rate {
        Some(r) if r > 0 => r,
        Some(r) => {
            return Err(Error::input(format!(
                "--rate {r}: expected a positive number of calls per --per-ns"
            )))
        }
        None => return Err(Error::input("--rate is required for --algo leaky-bucket")),
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
        Some(v) => parse_variant(v).ok_or_else(|| {
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

    let mut input = TraceReader::open(&args.trace)?;
    if input.header() != ["t_ns"] {
        return Err(input.error_at(
            1,
            format!("header {:?}: expected t_ns", input.header().join(",")),
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
        if let Some(p) = prev.filter(|_| !args.unsorted) {
            if t < p {
                return Err(input.error_at(
                    line,
                    format!("t_ns value {t}: times must be non-decreasing (previous t_ns {p})"),
                ));
            }
        }
        prev = Some(t);
        let take = lim.take(t);
        let ret = take.return_ns.to_string();
        if args.internals {
            out.row([raw.as_str(), &ret, &take.sleep_ns.to_string()])?;
        } else {
            out.row([raw.as_str(), &ret])?;
        }
    }
    out.commit()
}
