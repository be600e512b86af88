//! The log cut by time: the part a setting is chosen on and the later
//! slices it is confirmed on.

use crate::error::{Error, Result};
use crate::sizing::input::TimedTrace;
use crate::sizing::limit::{Classes, LimitPolicy};

/// Each part of the log (the choosing part and every held-out slice) must
/// span at least this many intervals: fewer, and a slice says little about
/// the traffic's shape.
pub const MIN_INTERVALS_PER_PART: u64 = 10;

/// A time range of the log, rebased to start at 0, with its exact verdicts.
pub struct Part {
    /// The requests in the range, times since its start.
    pub trace: TimedTrace,
    /// The exact sliding log's classes on them.
    pub classes: Classes,
    /// Start, seconds after the log's first request.
    pub start_s: f64,
    /// End (exclusive), seconds after the log's first request.
    pub end_s: f64,
    /// Keys with at least one request in the range.
    pub keys: u64,
    /// End (exclusive), ns after the log's first request.
    pub end_ns: u64,
}

/// The log cut by time: the first part chooses, the later slices confirm.
pub struct Split {
    /// The part the setting is chosen on.
    pub choose: Part,
    /// The later slices, in time order.
    pub held_out: Vec<Part>,
}

fn part(trace: &TimedTrace, policy: LimitPolicy, from: u64, to: u64) -> Part {
    let lo = trace.t.partition_point(|&t| t < from);
    let hi = trace.t.partition_point(|&t| t < to);
    let mut seen = vec![false; trace.names.len()];
    let mut keys = 0u64;
    for &k in &trace.key[lo..hi] {
        if !std::mem::replace(&mut seen[k as usize], true) {
            keys += 1;
        }
    }
    let sub = TimedTrace {
        t: trace.t[lo..hi].iter().map(|&t| t - from).collect(),
        key: trace.key[lo..hi].to_vec(),
        weight: if trace.weight.is_empty() {
            Vec::new()
        } else {
            trace.weight[lo..hi].to_vec()
        },
        names: trace.names.clone(),
        t0: trace.t0 + from,
        note: String::new(),
    };
    let classes = Classes::of(&sub, policy);
    Part {
        trace: sub,
        classes,
        start_s: from as f64 / 1e9,
        end_s: to as f64 / 1e9,
        keys,
        end_ns: to,
    }
}

/// Cuts `trace` (times in order) into the first `choose_pct` % of its time
/// span and `slices` equal later slices; refuses a log too short for every
/// part to span [`MIN_INTERVALS_PER_PART`] intervals, and a choosing part
/// without limited keys.
pub fn split(
    trace: &TimedTrace,
    policy: LimitPolicy,
    choose_pct: u32,
    slices: u32,
) -> Result<Split> {
    if !(1..=99).contains(&choose_pct) {
        return Err(Error::input(format!(
            "--choose-pct {choose_pct}: expected 1..=99 (the share of the log's time span the setting is chosen on)"
        )));
    }
    if slices == 0 || slices > 1000 {
        return Err(Error::input(format!(
            "--slices {slices}: expected 1..=1000 held-out slices"
        )));
    }
    let span = trace.t.last().map_or(0, |&t| t + 1);
    let cut = (u128::from(span) * u128::from(choose_pct) / 100) as u64;
    let slice = (span - cut) / u64::from(slices);
    let need = MIN_INTERVALS_PER_PART * policy.interval_ns();
    if cut < need || slice < need {
        // The shortest log that gives every part its intervals.
        let shortest = (need as f64 * 100.0 / f64::from(choose_pct))
            .max(need as f64 * f64::from(slices) * 100.0 / f64::from(100 - choose_pct));
        return Err(Error::input(format!(
            "the log spans {:.1} s: too short to choose on its first {choose_pct}% and confirm on {slices} later slices of at least {MIN_INTERVALS_PER_PART} intervals ({} ms) each; it needs at least {:.1} s (a longer log, fewer --slices or a shorter --interval-ms)",
            span as f64 / 1e9,
            policy.interval_ms,
            shortest / 1e9
        )));
    }
    let choose = part(trace, policy, 0, cut);
    if choose.classes.limited_keys == 0 {
        return Err(Error::input(format!(
            "no key sends more than {} requests per {} ms in the first {choose_pct}% of the log ({} keys, {} requests): there is nothing to limit, so no setting can be told from another (check --limit and --interval-ms)",
            policy.limit,
            policy.interval_ms,
            choose.keys,
            choose.trace.len()
        )));
    }
    let held_out = (0..u64::from(slices))
        .map(|i| {
            let from = cut + i * slice;
            let to = if i + 1 == u64::from(slices) {
                span
            } else {
                from + slice
            };
            part(trace, policy, from, to)
        })
        .collect();
    Ok(Split { choose, held_out })
}
