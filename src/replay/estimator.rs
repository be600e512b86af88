//! `ratelab replay --algo estimator` and `--algo inflight`: pingora-limits'
//! `Estimator` ([`crate::model::estimator`]) and `Inflight`
//! ([`crate::model::inflight`]), one public call per row.
//!
//! # `--algo estimator`
//! Header `op,key,value`; `op`: `incr` (`Estimator::incr(key, value)`),
//! `decr` (`decr(key, value)`), `get` (`get(key)`, `value` ignored and may
//! be empty) or `reset` (`reset()`, `key` and `value` ignored). Output: the
//! input columns plus `result`: the returned `isize` for `incr` and `get`,
//! empty for `decr` and `reset`, `panic: <message>` for a call that panics
//! in the modelled build. Options: `--hashes`, `--slots` (the arguments of
//! `Estimator::new(hashes, slots)`, default 4 × 1024), `--hasher xxh3`
//! (default) / `ahash` / `exact` (one exact counter per key), `--seed`.
//!
//! # `--algo inflight`
//! Header `op,key,value`; `op`: `incr` (`Inflight::incr(key, value)`: the
//! output's `guard` column names the returned guard `g0`, `g1`, ... in
//! order, `result` is the estimate), `guard_incr` (`Guard::incr()` of the
//! guard named in `key`; result = the estimate), `get` (`Guard::get()` of the
//! guard named in `key`), `drop` (dropping the guard named in `key`; a
//! guard can be dropped once). Output: the input columns plus `guard,result`.
//! Options: `--hashes`/`--slots` (default 4 × 8192, `Inflight::new()`),
//! `--hasher xxh3|ahash|exact`, `--seed`.

use super::csvio::{parse_i64, OutputCsv, TraceReader};
use super::ReplayArgs;
use crate::error::{Error, Result};
use crate::hash::{HasherKind, RowHasher};
use crate::model::estimator::{Estimator, EstimatorConfig, ExactCounter, FrequencyEstimator};
use crate::model::inflight::{Guard, Inflight};

const TAKES: &[&str] = &["--hashes", "--slots", "--hasher", "--seed"];

/// `--hasher`; with `exact` (one counter per key, no sketch) the sketch's
/// `--hashes` and `--slots` are refused, and `--seed` where the exact
/// counters hash nothing (`seeded`: whether they do).
fn hasher(args: &ReplayArgs, seeded: bool) -> Result<Option<HasherKind>> {
    match args.hasher.as_deref().unwrap_or("xxh3") {
        "exact" => {
            for (flag, given) in [
                ("--hashes", args.hashes.is_some()),
                ("--slots", args.slots.is_some()),
                ("--seed", args.seed.is_some() && !seeded),
            ] {
                if given {
                    return Err(Error::input(format!(
                        "{flag} does not apply to --hasher exact (one counter per key, no sketch)"
                    )));
                }
            }
            Ok(None)
        }
        "xxh3" => Ok(Some(HasherKind::Xxh3)),
        "ahash" => Ok(Some(HasherKind::AHash)),
        other => Err(Error::input(format!(
            "--hasher value {other:?}: expected exact, xxh3 or ahash"
        ))),
    }
}

fn dims(args: &ReplayArgs, slots_default: usize) -> Result<EstimatorConfig> {
    let dim = |name: &str, v: Option<u64>, default: usize| -> Result<usize> {
        match v {
            None => Ok(default),
            Some(v) if (1..=(1 << 24)).contains(&v) => Ok(v as usize),
            Some(v) => Err(Error::input(format!(
                "--{name} value {v}: expected 1 ..= 16777216"
            ))),
        }
    };
    let hashes = dim("hashes", args.hashes, 4)?;
    let slots = dim("slots", args.slots, slots_default)?;
    if hashes * slots > 1 << 26 {
        return Err(Error::input(format!(
            "--hashes {hashes} x --slots {slots}: more than 2^26 counters"
        )));
    }
    Ok(EstimatorConfig::new(hashes, slots))
}

fn open(args: &ReplayArgs) -> Result<TraceReader> {
    let input = TraceReader::open(&args.trace)?;
    if input.header() != ["op", "key", "value"] {
        return Err(input.error_at(
            1,
            format!(
                "header {:?}: expected op,key,value",
                input.header().join(",")
            ),
        ));
    }
    Ok(input)
}

fn value_of(input: &TraceReader, line: u64, raw: &str, needed: bool) -> Result<i64> {
    if raw.is_empty() && !needed {
        return Ok(0);
    }
    let v = parse_i64(input, line, "value", raw)?;
    Ok(v)
}

/// `--algo estimator`.
pub fn run_estimator(args: &ReplayArgs) -> Result<()> {
    super::reject_unused(args, "estimator", TAKES)?;
    let cfg = dims(args, 1024)?;
    match hasher(args, false)? {
        None => replay_estimator(args, ExactCounter::new()),
        Some(kind) => {
            let mut cfg = cfg;
            cfg.hasher = kind;
            replay_estimator(args, Estimator::new(cfg, args.seed()))
        }
    }
}

fn replay_estimator<E: FrequencyEstimator>(args: &ReplayArgs, mut est: E) -> Result<()> {
    let mut input = open(args)?;
    let mut out = OutputCsv::create(&args.out)?;
    out.row(["op", "key", "value", "result"])?;
    while let Some((line, rec)) = input.next_row()? {
        let f: Vec<String> = rec.iter().map(str::to_string).collect();
        let (op, key, raw) = (f[0].as_str(), f[1].as_bytes(), f[2].as_str());
        let result = match op {
            "incr" => {
                let v = value_of(&input, line, raw, true)?;
                super::rate::format_result(est.incr(key, v), |v| v.to_string())
            }
            "decr" => {
                let v = value_of(&input, line, raw, true)?;
                est.decr(key, v);
                String::new()
            }
            "get" => {
                value_of(&input, line, raw, false)?;
                est.get(key).to_string()
            }
            "reset" => {
                value_of(&input, line, raw, false)?;
                est.reset();
                String::new()
            }
            other => {
                return Err(input.error_at(
                    line,
                    format!("op value {other:?}: expected incr, decr, get or reset"),
                ))
            }
        };
        out.row([f[0].as_str(), &f[1], &f[2], &result])?;
    }
    out.commit()
}

/// `--algo inflight`.
pub fn run_inflight(args: &ReplayArgs) -> Result<()> {
    super::reject_unused(args, "inflight", TAKES)?;
    let cfg = dims(args, crate::model::inflight::INFLIGHT_SLOTS)?;
    // The exact Inflight still hashes keys to guards: --seed applies.
    match hasher(args, true)? {
        None => {
            let key_hasher =
                RowHasher::new(HasherKind::Xxh3, crate::rng::derive_seed(args.seed(), &[1]));
            replay_inflight(args, Inflight::from_parts(ExactCounter::new(), key_hasher))
        }
        Some(kind) => {
            let mut cfg = cfg;
            cfg.hasher = kind;
            replay_inflight(args, Inflight::with_config(cfg, args.seed()))
        }
    }
}

fn replay_inflight<E: FrequencyEstimator>(args: &ReplayArgs, mut inf: Inflight<E>) -> Result<()> {
    let mut input = open(args)?;
    let mut out = OutputCsv::create(&args.out)?;
    out.row(["op", "key", "value", "guard", "result"])?;
    let mut guards: Vec<Option<Guard>> = Vec::new();
    while let Some((line, rec)) = input.next_row()? {
        let f: Vec<String> = rec.iter().map(str::to_string).collect();
        let (op, key, raw) = (f[0].as_str(), f[1].as_str(), f[2].as_str());
        let guard_index = |input: &TraceReader, guards: &Vec<Option<Guard>>| -> Result<usize> {
            let i = key
                .strip_prefix('g')
                .and_then(|s| s.parse::<usize>().ok())
                .filter(|&i| i < guards.len())
                .ok_or_else(|| {
                    input.error_at(
                        line,
                        format!("key value {key:?}: op {op} needs a guard name (g0, g1, ...) returned by an earlier incr"),
                    )
                })?;
            if guards[i].is_none() {
                return Err(input.error_at(line, format!("guard {key} was already dropped")));
            }
            Ok(i)
        };
        let (guard, result) = match op {
            "incr" => {
                let v = value_of(&input, line, raw, true)?;
                match inf.incr(key.as_bytes(), v) {
                    Ok((g, est)) => {
                        guards.push(Some(g));
                        (format!("g{}", guards.len() - 1), est.to_string())
                    }
                    Err(fault) => (String::new(), format!("panic: {}", fault.message)),
                }
            }
            "guard_incr" => {
                value_of(&input, line, raw, false)?;
                let i = guard_index(&input, &guards)?;
                let g = guards[i].as_ref().expect("checked");
                (
                    key.to_string(),
                    super::rate::format_result(inf.guard_incr(g), |v| v.to_string()),
                )
            }
            "get" => {
                value_of(&input, line, raw, false)?;
                let i = guard_index(&input, &guards)?;
                let g = guards[i].as_ref().expect("checked");
                (key.to_string(), inf.guard_get(g).to_string())
            }
            "drop" => {
                value_of(&input, line, raw, false)?;
                let i = guard_index(&input, &guards)?;
                let g = guards[i].take().expect("checked");
                inf.drop_guard(g);
                (key.to_string(), String::new())
            }
            other => {
                return Err(input.error_at(
                    line,
                    format!("op value {other:?}: expected incr, guard_incr, get or drop"),
                ))
            }
        };
        out.row([f[0].as_str(), &f[1], &f[2], &guard, &result])?;
    }
    out.commit()
}
