//! What the count-min bound (overcount ≤ e·N/w with probability 1 − δ per
//! key, d = ceil(ln 1/δ) rows) would recommend for limit targets, to set
//! beside the measured pick.
//!
//! * `compliant_denied_pct<=X`: a compliant key at the lower near-limit
//!   count `lo` is denied only when its overcount passes `limit − lo`; so
//!   δ = X/100 and w = ceil(e·N / (limit − lo)), N the busiest window's
//!   requests (`limit − lo` < 1 means exact: w > e·N).
//! * `compliant_keys_denied<=K`: the same with δ = max(K, 0.5) / compliant keys.
//! * `excess_pct`: the bound says nothing about over-admission.
//! * error targets: the rules of [`crate::sizing::bound_pick`] with N the
//!   busiest window's requests and the near-limit keys as the keys.

use super::classes::{Classes, LimitPolicy};
use super::confirm::FirstSeed;
use super::replay::RateShape;
use super::search::{Ctx, ShapeEval};
use super::targets::{LimitMetric, LimitTarget};
use super::windows::Windows;
use crate::error::Result;
use crate::model::rate_limiter::RateMode;
use crate::sizing::bound::bound_pick;
use crate::sizing::targets::Target;
use serde::Serialize;

/// The bound's reading of the targets.
#[derive(Debug, Clone, Serialize)]
pub struct LimitBound {
    /// Rows.
    pub hashes: usize,
    /// Slots per row (None: unconstrained).
    pub slots: Option<u64>,
    /// Both windows' memory.
    pub memory_bytes: Option<u64>,
    /// One line per target: how d and w were derived.
    pub rules: Vec<String>,
}

/// The bound's pick for `targets`.
pub fn limit_bound(
    targets: &[LimitTarget],
    policy: LimitPolicy,
    near: (u64, u64),
    windows: &Windows,
    classes: Option<&Classes>,
) -> LimitBound {
    let e = std::f64::consts::E;
    let n = windows.max_events() as f64;
    let d_of = |delta: f64| (libm::log(1.0 / delta.max(1e-12)).ceil().max(1.0)) as usize;
    let headroom = policy.limit.saturating_sub(near.0) as f64;
    let w_for = |x: f64| -> u64 {
        if x < 1.0 {
            (e * n).floor() as u64 + 1
        } else {
            (e * n / x).ceil().max(1.0) as u64
        }
    };
    let mut hashes = 1usize;
    let mut slots: Option<u64> = None;
    let mut rules = Vec::new();
    let mut take = |d: usize, w: Option<u64>, rule: String| {
        hashes = hashes.max(d);
        if let Some(w) = w {
            slots = Some(slots.map_or(w, |s: u64| s.max(w)));
        }
        rules.push(rule);
    };
    for t in targets {
        match t.metric {
            LimitMetric::CompliantDeniedPct | LimitMetric::CompliantKeysDenied => {
                let delta = if t.metric == LimitMetric::CompliantDeniedPct {
                    t.threshold / 100.0
                } else {
                    let keys = classes.map_or(1, |c| c.compliant_keys.max(1));
                    t.threshold.max(0.5) / keys as f64
                };
                let (d, w) = (d_of(delta), w_for(headroom));
                take(
                    d,
                    Some(w),
                    format!(
                        "{}: δ={delta:.2e}, d=ceil(ln 1/δ)={d}; overcount < limit − {} = {headroom} for the keys at the low end of --near-limit, w=ceil(e·N/{headroom})={w} (N={n} requests in the busiest window)",
                        t.resolved(),
                        near.0
                    ),
                )
            }
            LimitMetric::ExcessPct => take(
                1,
                None,
                format!(
                    "{}: the bound says nothing about over-admission",
                    t.resolved()
                ),
            ),
            LimitMetric::Error(m) => {
                let target = Target {
                    text: t.text.clone(),
                    metric: m,
                    cmp: t.cmp,
                    threshold: t.threshold,
                };
                let keys = windows.near_pairs(near).max(1);
                let b = bound_pick(&[target], n as u64, keys);
                let term = &b.per_target[0];
                take(
                    b.hashes,
                    b.slots,
                    format!(
                        "{}: {} (N={n} requests in the busiest window)",
                        t.resolved(),
                        term.rule
                    ),
                );
            }
        }
    }
    LimitBound {
        hashes,
        slots,
        memory_bytes: slots.map(|w| RateShape { hashes, slots: w }.memory()),
        rules,
    }
}

/// The bound's shape when it fits the memory cap and the slot range: the
/// one the report measures.
pub fn shape(ctx: &Ctx<'_>, b: &LimitBound) -> Option<RateShape> {
    match (b.slots, b.memory_bytes) {
        (Some(w), Some(mem)) if mem <= ctx.max_memory && w <= super::search::SLOTS_RANGE.1 => {
            Some(RateShape {
                hashes: b.hashes,
                slots: w,
            })
        }
        _ => None,
    }
}

/// The bound's shape ([`shape`]) through the model on the first seed, per
/// mode, asked of `first` (replayed, or read from the shards' parts).
pub fn measure(
    b: &LimitBound,
    ctx: &Ctx<'_>,
    modes: &[RateMode],
    first: &dyn FirstSeed,
) -> Result<Vec<Option<ShapeEval>>> {
    let Some(s) = shape(ctx, b) else {
        return Ok(vec![None; modes.len()]);
    };
    modes
        .iter()
        .map(|&m| {
            let seed = first.model(m, s)?;
            Ok(Some(ShapeEval {
                shape: s,
                memory_bytes: s.memory(),
                phase: "bound",
                meets: seed.meets,
                seeds: vec![seed],
                exceedance: None,
            }))
        })
        .collect()
}
