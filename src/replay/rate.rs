//! `ratelab replay --algo rate`: pingora-limits' `Rate`, one call per row.
//!
//! # Input (`--trace`)
//!
//! CSV with the header row exactly `t_ms,key,op,n`, then one call per row:
//!
//! * `t_ms`: whole milliseconds since the `Rate` was created (what the real
//!   `maybe_reset` computes from `Instant::now()`), an unsigned integer,
//!   non-decreasing from row to row, at most `u64::MAX / 1_000_000` (the
//!   virtual clock counts nanoseconds in a `u64`).
//! * `key`: any UTF-8 text, used as the key's bytes (may be empty; CSV
//!   quoting applies).
//! * `op`: `observe` (`Rate::observe(&key, n)`), `rate` (`Rate::rate(&key)`)
//!   or `rate_proportional` (`Rate::rate_with(&key,
//!   PROPORTIONAL_RATE_ESTIMATE_CALC_FN)`), lower case.
//! * `n`: for `observe`, the events, an integer that fits the real `isize`
//!   (64-bit: `i64`; negative values are accepted, as the real crate does).
//!   For `rate` and `rate_proportional`, `n` is ignored: it may be empty, but
//!   if present it must still be such an integer (a typo is not silently
//!   accepted).
//!
//! # Output (`--out`)
//!
//! The input columns, re-emitted verbatim, plus `value`:
//!
//! * `observe`: the returned count as a decimal integer.
//! * `rate`, `rate_proportional`: the returned `f64` printed with Rust's
//!   `{}` (`Display`): the *shortest* decimal that parses back to exactly the
//!   same `f64`, never in exponent form. So `10.0` prints `10`, `5.98` prints
//!   `5.98`, and `10 × (1 − 0.402)` prints `5.98` only if that product *is*
//!   the double nearest 5.98 (otherwise e.g. `5.9799999999999995`). A checker
//!   should parse `value` as an `f64` and compare it bit for bit with the real
//!   crate's result: `value.parse::<f64>() == real` holds exactly when the
//!   model computed the same double. Non-finite results print `NaN`, `inf`,
//!   `-inf` (only reachable with `--flavor fixed` and a 0 ms interval, where
//!   the fixed fraction 0 leads to `0 / 0`); negative zero prints `-0`.
//! * A call that panics in the real crate (the modelled build decides which)
//!   writes `panic: <message>` (the real panic message) and the replay goes
//!   on with the state the steps before the panic left, as the surviving
//!   threads of a real process would see it (e.g. with a 0 ms interval,
//!   `rate_proportional` panics in `% 0` *after* its `maybe_reset` flipped
//!   and cleared the slots).
//!
//! With `--internals` the output adds `prev,curr,fraction`: the
//! `RateComponents` a `rate_with` closure would receive at that call (the
//! previous and current window's counts of the key and the elapsed fraction
//! of the current window), for `rate` and `rate_proportional` rows (empty
//! for `observe` and panicking calls). Any custom `rate_with` closure can be
//! checked from them (e.g. pingora's 90/10 test).
//!
//! # Options
//!
//! `--interval-ms` (required; `Duration::from_millis`), `--hasher exact`
//! (one exact counter per key, so collisions cannot blur a conformance check;
//! `--hashes`/`--slots` are then ignored) or `xxh3` (default) / `ahash`
//! sketches of `--hashes` × `--slots` (default 4 × 1024, `Rate::new`) seeded
//! from `--seed`, `--flavor faithful|fixed` (see `crate::model::rate::
//! RateFixes`), `--build release|debug`. Sketch counters wrap on overflow as
//! in 0.9.1 (the `Rate` code is identical in 0.9.0 and 0.9.1).
//!
//! An interval of 0 ms is accepted, because the real crate accepts
//! `Duration::ZERO` and behaves deterministically: every call flips and clears
//! both slots, so `observe` returns its own `n`, `rate` returns 0, and
//! `rate_proportional` panics ("attempt to calculate the remainder with a
//! divisor of zero") in every build.
//!
//! Bad input (wrong header, unknown op, non-numeric or out-of-range field,
//! decreasing time, missing option) is one error line naming the file, line
//! and value, exit code 2, and no output file: rows are streamed from the
//! input and written to a temporary file next to `--out`, which is renamed
//! over `--out` only after the last row.

use super::ReplayArgs;
use crate::clock::{Nanos, MILLI};
use crate::error::{Error, Result};
use crate::hash::HasherKind;
use crate::model::estimator::{
    Estimator, EstimatorConfig, ExactCounter, Fault, FrequencyEstimator,
};
use crate::model::rate::{proportional_rate_estimate, Build, Rate, RateFlavor};
use std::path::Path;
use std::time::Duration;

/// The required header.
pub const HEADER: [&str; 4] = ["t_ms", "key", "op", "n"];

/// Largest sketch (`hashes × slots × 8` bytes per slot, two slots) accepted.
const MAX_SKETCH_BYTES: u64 = 1 << 30;

/// One operation of the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `observe(key, n)`.
    Observe,
    /// `rate(key)`.
    Rate,
    /// `rate_with(key, PROPORTIONAL_RATE_ESTIMATE_CALC_FN)`.
    RateProportional,
}

impl Op {
    /// Parses the `op` column.
    pub fn parse(s: &str) -> Option<Op> {
        match s {
            "observe" => Some(Op::Observe),
            "rate" => Some(Op::Rate),
            "rate_proportional" => Some(Op::RateProportional),
            _ => None,
        }
    }
}

/// Formats a rate as the output's `value`: shortest round-trip decimal.
pub fn format_rate(v: f64) -> String {
    format!("{v}")
}

/// The value column of one call.
pub fn format_result<T>(r: Result<T, Fault>, f: impl FnOnce(T) -> String) -> String {
    match r {
        Ok(v) => f(v),
        Err(fault) => format!("panic: {}", fault.message),
    }
}

/// One call on a model.
pub fn apply<E: FrequencyEstimator>(
    rate: &mut Rate<E>,
    op: Op,
    key: &[u8],
    n: i64,
    now: Nanos,
) -> String {
    match op {
        Op::Observe => format_result(rate.observe(key, n, now), |v| v.to_string()),
        Op::Rate => format_result(rate.rate(key, now), format_rate),
        Op::RateProportional => format_result(
            rate.rate_with(key, now, proportional_rate_estimate),
            format_rate,
        ),
    }
}

/// The validated options.
#[derive(Debug, Clone, Copy)]
struct Options {
    interval_ms: u64,
    hasher: Option<HasherKind>,
    hashes: usize,
    slots: usize,
    flavor: RateFlavor,
    build: Build,
    seed: u64,
}

fn options(args: &ReplayArgs) -> Result<Options> {
    let interval_ms = args.interval_ms.ok_or_else(|| {
        Error::input("--interval-ms is required for --algo rate (the Rate's interval in ms)")
    })?;
    let hasher = match args.hasher.as_deref().unwrap_or("xxh3") {
        "exact" => None,
        "xxh3" => Some(HasherKind::Xxh3),
        "ahash" => Some(HasherKind::AHash),
        other => {
            return Err(Error::input(format!(
                "--hasher value {other:?}: expected exact, xxh3 or ahash"
            )))
        }
    };
    let flavor = match args.flavor.as_deref().unwrap_or("faithful") {
        "faithful" => RateFlavor::Faithful,
        "fixed" => RateFlavor::Fixed,
        other => {
            return Err(Error::input(format!(
                "--flavor value {other:?}: expected faithful or fixed"
            )))
        }
    };
    let build = match args.build.as_deref().unwrap_or("release") {
        "release" => Build::Release,
        "debug" => Build::Debug,
        other => {
            return Err(Error::input(format!(
                "--build value {other:?}: expected release or debug"
            )))
        }
    };
    let dim = |name: &str, v: Option<u64>, default: usize| -> Result<usize> {
        match v {
            None => Ok(default),
            Some(0) => Err(Error::input(format!(
                "--{name} value 0: expected at least 1"
            ))),
            Some(v) => usize::try_from(v)
                .map_err(|_| Error::input(format!("--{name} value {v}: too large"))),
        }
    };
    if hasher.is_none() {
        // One exact counter per key: no sketch to shape or seed.
        for (flag, given) in [
            ("--hashes", args.hashes.is_some()),
            ("--slots", args.slots.is_some()),
            ("--seed", args.seed.is_some()),
        ] {
            if given {
                return Err(Error::input(format!(
                    "{flag} does not apply to --hasher exact (one counter per key, no sketch)"
                )));
            }
        }
    }
    let hashes = dim("hashes", args.hashes, crate::model::rate::RATE_HASHES)?;
    let slots = dim("slots", args.slots, crate::model::rate::RATE_SLOTS)?;
    if hasher.is_some() {
        let bytes = EstimatorConfig::new(hashes, slots)
            .memory_bytes()
            .saturating_mul(2);
        if bytes > MAX_SKETCH_BYTES || u32::try_from(hashes.saturating_mul(slots)).is_err() {
            return Err(Error::input(format!(
                "--hashes {hashes} x --slots {slots}: two sketches of {bytes} bytes exceed the {MAX_SKETCH_BYTES}-byte limit"
            )));
        }
    }
    Ok(Options {
        interval_ms,
        hasher,
        hashes,
        slots,
        flavor,
        build,
        seed: args.seed(),
    })
}

/// Replays `args.trace` into `args.out`.
pub fn run(args: &ReplayArgs) -> Result<()> {
    super::reject_unused(
        args,
        "rate",
        &[
            "--interval-ms",
            "--hashes",
            "--slots",
            "--hasher",
            "--flavor",
            "--build",
            "--internals",
            "--seed",
        ],
    )?;
    let o = options(args)?;
    let interval = Duration::from_millis(o.interval_ms);
    match o.hasher {
        None => {
            let rate = Rate::from_slots(interval, 0, ExactCounter::new(), ExactCounter::new());
            replay_with(&args.trace, &args.out, configure(rate, &o), args.internals)
        }
        Some(kind) => {
            let mut cfg = EstimatorConfig::new(o.hashes, o.slots);
            cfg.hasher = kind;
            let rate: Rate<Estimator> = Rate::new_with_estimator_config(interval, 0, cfg, o.seed);
            replay_with(&args.trace, &args.out, configure(rate, &o), args.internals)
        }
    }
}

fn configure<E: FrequencyEstimator>(rate: Rate<E>, o: &Options) -> Rate<E> {
    rate.with_build(o.build).with_fixes(o.flavor.fixes())
}

/// `rate_with`'s inputs for a read at `now`, computed on a copy so the
/// replayed model is not touched: `prev,curr,fraction` (the
/// `RateComponents` the real closure would receive; the fraction printed as
/// the output's `value` is). Empty for `observe` and for a call that panics.
pub fn internals<E: FrequencyEstimator + Clone>(
    rate: &Rate<E>,
    op: Op,
    key: &[u8],
    now: Nanos,
) -> [String; 3] {
    if op == Op::Observe {
        return Default::default();
    }
    match rate.clone().components(key, now) {
        Ok(c) => [
            c.prev_samples.to_string(),
            c.curr_samples.to_string(),
            format_rate(c.current_interval_fraction),
        ],
        Err(_) => Default::default(),
    }
}

/// The header line must be `t_ms,key,op,n` (a UTF-8 byte order mark is
/// tolerated on the first field).
fn check_header(trace: &Path, line: u64, record: &csv::StringRecord) -> Result<()> {
    let got: Vec<&str> = record.iter().collect();
    let first = got.first().map(|s| s.trim_start_matches('\u{feff}'));
    if got.len() != HEADER.len() || first != Some(HEADER[0]) || got[1..] != HEADER[1..] {
        return Err(Error::input_at(
            trace,
            format!("line {line}"),
            format!("header {:?}: expected {}", got.join(","), HEADER.join(",")),
        ));
    }
    Ok(())
}

/// A row's field count and `t_ms`, as milliseconds and virtual ns.
fn parse_time(trace: &Path, at: &str, record: &csv::StringRecord) -> Result<(u64, Nanos)> {
    if record.len() != HEADER.len() {
        return Err(Error::input_at(
            trace,
            at,
            format!(
                "{} fields {:?}: expected 4 (t_ms,key,op,n)",
                record.len(),
                record.iter().collect::<Vec<_>>().join(",")
            ),
        ));
    }
    let t_raw = &record[0];
    let t_ms: u64 = t_raw.parse().map_err(|_| {
        Error::input_at(
            trace,
            at,
            format!("t_ms value {t_raw:?}: expected a whole number of milliseconds (0 or more)"),
        )
    })?;
    let now = t_ms.checked_mul(MILLI).ok_or_else(|| {
        Error::input_at(
            trace,
            at,
            format!(
                "t_ms value {t_ms}: expected at most {} (the virtual clock counts u64 nanoseconds)",
                u64::MAX / MILLI
            ),
        )
    })?;
    Ok((t_ms, now))
}

/// A row's `op` and `n` (empty `n` allowed for reads).
fn parse_op(trace: &Path, at: &str, record: &csv::StringRecord) -> Result<(Op, i64)> {
    let (op_raw, n_raw) = (&record[2], &record[3]);
    let op = Op::parse(op_raw).ok_or_else(|| {
        Error::input_at(
            trace,
            at,
            format!("op value {op_raw:?}: expected observe, rate or rate_proportional"),
        )
    })?;
    let n: i64 = if n_raw.is_empty() && op != Op::Observe {
        0
    } else {
        n_raw.parse::<isize>().map(|v| v as i64).map_err(|_| {
            let what = if op == Op::Observe {
                "expected the events, an integer in isize range"
            } else {
                "expected empty or an integer in isize range (ignored for reads)"
            };
            Error::input_at(
                trace,
                at,
                format!("n value {n_raw:?}: {what} [{}, {}]", isize::MIN, isize::MAX),
            )
        })?
    };
    Ok((op, n))
}

/// [`replay`]; with `internals`, the output adds the columns
/// `prev,curr,fraction` ([`internals`]).
pub fn replay_with<E: FrequencyEstimator + Clone>(
    trace: &Path,
    out: &Path,
    mut rate: Rate<E>,
    with_internals: bool,
) -> Result<()> {
    let file = std::fs::File::open(trace).map_err(|e| Error::io(trace, e))?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(super::csvio::LineBounded::new(std::io::BufReader::new(
            file,
        )));
    let mut writer = super::csvio::OutputCsv::create(out)?;

    let mut record = csv::StringRecord::new();
    let mut line = 1u64;
    let mut saw_header = false;
    let mut last: Option<(u64, u64)> = None; // (t_ms, line)
    loop {
        let more = reader.read_record(&mut record).map_err(|e| {
            let at = e
                .position()
                .map(|p| format!("line {}", p.line()))
                .unwrap_or_else(|| format!("line {}", line + 1));
            Error::input_at(trace, at, format!("unreadable CSV record: {e}"))
        })?;
        if !more {
            break;
        }
        line = record.position().map(|p| p.line()).unwrap_or(line + 1);
        if !saw_header {
            check_header(trace, line, &record)?;
            if with_internals {
                writer.row([
                    "t_ms", "key", "op", "n", "value", "prev", "curr", "fraction",
                ])?;
            } else {
                writer.row(["t_ms", "key", "op", "n", "value"])?;
            }
            saw_header = true;
            continue;
        }
        let at = format!("line {line}");
        let (t_ms, now) = parse_time(trace, &at, &record)?;
        if let Some((prev, prev_line)) = last
            && t_ms < prev
        {
            return Err(Error::input_at(
                    trace,
                    &at,
                    format!("t_ms value {t_ms} is before {prev} on line {prev_line}: expected non-decreasing times"),
                ));
        }
        last = Some((t_ms, line));
        let (op, n) = parse_op(trace, &at, &record)?;
        let (t_raw, key, op_raw, n_raw) = (&record[0], &record[1], &record[2], &record[3]);
        let inner = if with_internals {
            internals(&rate, op, key.as_bytes(), now)
        } else {
            Default::default()
        };
        let value = apply(&mut rate, op, key.as_bytes(), n, now);
        if with_internals {
            writer.row([
                t_raw,
                key,
                op_raw,
                n_raw,
                value.as_str(),
                &inner[0],
                &inner[1],
                &inner[2],
            ])?;
        } else {
            writer.row([t_raw, key, op_raw, n_raw, value.as_str()])?;
        }
    }
    if !saw_header {
        return Err(Error::input_at(
            trace,
            "line 1",
            format!("empty file: expected the header {}", HEADER.join(",")),
        ));
    }
    writer.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_shortest_round_trip() {
        assert_eq!(format_rate(10.0), "10");
        assert_eq!(format_rate(5.98), "5.98");
        assert_eq!(format_rate(0.0), "0");
        assert_eq!(format_rate(0.04), "0.04");
        let x = 10.0 * (1.0 - 402.0 / 1000.0);
        assert_eq!(
            format_rate(x).parse::<f64>().unwrap().to_bits(),
            x.to_bits()
        );
    }

    #[test]
    fn sequence_through_apply() {
        let mut r = Rate::from_slots(
            Duration::from_secs(1),
            0,
            ExactCounter::new(),
            ExactCounter::new(),
        );
        for i in 0..10u64 {
            assert_eq!(
                apply(&mut r, Op::Observe, b"k", 1, i * 50 * MILLI),
                (i + 1).to_string()
            );
        }
        let mut got = Vec::new();
        for t in [456u64, 902, 1108, 1510, 2104, 3208] {
            got.push(apply(&mut r, Op::Rate, b"k", 0, t * MILLI));
            got.push(apply(&mut r, Op::RateProportional, b"k", 0, t * MILLI));
        }
        assert_eq!(
            got,
            [
                "0",
                "10",
                "0",
                "10",
                "10",
                "10",
                "10",
                &format_rate(10.0 * (1.0 - 0.402)),
                "10",
                &format_rate(10.0 * (1.0 - 0.996)),
                "0",
                "0"
            ]
        );
    }
}
