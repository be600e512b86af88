//! `ratelab replay --algo every` and `--algo sometimes`: the rest of
//! `golang.org/x/time/rate`'s public API.
//!
//! # `--algo every`
//! `rate.Every(interval)`, a pure function. Header `interval_ns` (a Go
//! `time.Duration`); output `interval_ns,limit,limit_bits,is_inf`: the
//! returned `Limit` printed as the shortest decimal that round-trips
//! (`Inf` for `rate.Inf`), its float64 bits (16 hex digits) and whether it
//! equals `rate.Inf`.
//!
//! # `--algo sometimes`
//! `rate.Sometimes{First: --first, Every: --every, Interval:
//! --interval-ns}` (each default 0); header `t_ns`, one `Do(f)` per row at
//! `time.Unix(0, t_ns)`; output `t_ns,ran` (whether `f` ran). See
//! [`crate::model::x_time_rate::sometimes`].

use super::csvio::{parse_i64, OutputCsv, TraceReader};
use super::ReplayArgs;
use crate::error::Result;
use crate::model::x_time_rate::sometimes::Sometimes;
use crate::model::x_time_rate::{every, INF};

fn open(args: &ReplayArgs, column: &str) -> Result<TraceReader> {
    let input = TraceReader::open(&args.trace)?;
    if input.header() != [column] {
        return Err(input.error_at(
            1,
            format!("header {:?}: expected {column}", input.header().join(",")),
        ));
    }
    Ok(input)
}

/// `--algo every`.
pub fn run_every(args: &ReplayArgs) -> Result<()> {
    super::reject_unused(args, "every", &[])?;
    let mut input = open(args, "interval_ns")?;
    let mut out = OutputCsv::create(&args.out)?;
    out.row(["interval_ns", "limit", "limit_bits", "is_inf"])?;
    while let Some((line, rec)) = input.next_row()? {
        let raw = rec.get(0).unwrap_or("").to_string();
        let d = parse_i64(&input, line, "interval_ns", &raw)?;
        let l = every(d);
        let shown = if l == INF {
            "Inf".to_string()
        } else {
            format!("{l}")
        };
        out.row([
            raw,
            shown,
            format!("{:016x}", l.to_bits()),
            (l == INF).to_string(),
        ])?;
    }
    out.commit()
}

/// `--algo sometimes`.
pub fn run_sometimes(args: &ReplayArgs) -> Result<()> {
    super::reject_unused(args, "sometimes", &["--first", "--every", "--interval-ns"])?;
    let mut s = Sometimes::new(
        args.first.unwrap_or(0),
        args.every.unwrap_or(0),
        args.interval_ns.unwrap_or(0),
    );
    let mut input = open(args, "t_ns")?;
    let mut out = OutputCsv::create(&args.out)?;
    out.row(["t_ns", "ran"])?;
    // Go's Sometimes reads the monotonic clock: a step back cannot happen
    // there, and its Interval arithmetic would go negative here.
    let mut last: Option<(i64, u64)> = None;
    while let Some((line, rec)) = input.next_row()? {
        let raw = rec.get(0).unwrap_or("").to_string();
        let t = parse_i64(&input, line, "t_ns", &raw)?;
        if let Some((prev, at)) = last
            && t < prev
        {
            return Err(input.error_at(
                line,
                format!("t_ns value {t}: before line {at}'s {prev}: expected times in order"),
            ));
        }
        last = Some((t, line));
        out.row([raw, s.do_at(t).to_string()])?;
    }
    out.commit()
}
