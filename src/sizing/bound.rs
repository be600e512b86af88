//! What the count-min error bound (error ≤ e·N/w with probability 1-δ per
//! key, d = ceil(ln 1/δ) rows) would recommend for the targets, to set
//! beside the measured recommendation.

use super::evaluation::Candidate;
use super::targets::{Metric, Target};
use serde::Serialize;

/// What the count-min bound recommends for the targets.
#[derive(Debug, Clone, Serialize)]
pub struct BoundPick {
    /// d = ceil(ln(1/δ)) (largest over targets).
    pub hashes: usize,
    /// Smallest w meeting every target's error level (None: unconstrained).
    pub slots: Option<u64>,
    /// d × w × 8 (None when w is unconstrained).
    pub memory_bytes: Option<u64>,
    /// Per target: δ, d, w and how they were derived.
    pub per_target: Vec<BoundTerm>,
}

/// The bound's reading of one target.
#[derive(Debug, Clone, Serialize)]
pub struct BoundTerm {
    /// The target.
    pub target: String,
    /// Failure probability per key allowed.
    pub delta: f64,
    /// Rows.
    pub hashes: usize,
    /// Slots (None: any).
    pub slots: Option<u64>,
    /// The derivation in words.
    pub rule: String,
}

/// The count-min bound's recommendation. N events, `keys` keys seen. With
/// probability 1-δ per key, error ≤ e·N/w when d = ceil(ln(1/δ)):
/// * `p99<=X`: δ = 0.01, w = ceil(e·N/X);
/// * `max<=X`: all keys at once, δ = 1/keys (union bound), w = ceil(e·N/X);
/// * `exact_pct>=P`: error < 1 needs w > e·N; δ = max(1-P/100, 1/keys);
/// * `mean<=X`: the expectation bound E\[error\] ≤ N/w (any d): d = 1, w = ceil(N/X);
/// * `over_bound_pct<=X`: δ = X/100; the bound does not constrain w.
///
/// Thresholds below 1 on integer errors mean "exact" (w > e·N).
///
/// # Examples
///
/// ```
/// use ratelab::sizing::{bound_pick, Target};
///
/// let targets = [Target::parse("p99<=5", 97.0).unwrap()];
/// let pick = bound_pick(&targets, 973_855, 10_000);
/// // δ = 0.01: d = ceil(ln 100) = 5 rows, w = ceil(e·N/5).
/// assert_eq!(pick.hashes, 5);
/// assert_eq!(pick.slots, Some(529_443));
/// ```
pub fn bound_pick(targets: &[Target], events: u64, keys: u64) -> BoundPick {
    let n = events as f64;
    let keys = keys.max(1) as f64;
    let per_target: Vec<BoundTerm> = targets.iter().map(|t| bound_term(t, n, keys)).collect();
    let hashes = per_target.iter().map(|t| t.hashes).max().unwrap_or(1);
    let slots = per_target.iter().filter_map(|t| t.slots).max();
    BoundPick {
        hashes,
        slots,
        memory_bytes: slots.map(|w| Candidate::memory(hashes, w)),
        per_target,
    }
}

/// The bound's reading of one target, for `n` events over `keys` keys.
fn bound_term(t: &Target, n: f64, keys: f64) -> BoundTerm {
    let e = std::f64::consts::E;
    let d_of = |delta: f64| (libm::log(1.0 / delta).ceil().max(1.0)) as usize;
    let exact_w = (e * n).floor() as u64 + 1;
    let w_for = |x: f64| -> u64 {
        if x < 1.0 {
            exact_w
        } else {
            (e * n / x).ceil().max(1.0) as u64
        }
    };
    let x = t.threshold;
    let (delta, d, w, rule) = match t.metric {
        Metric::P99 => (
            0.01,
            d_of(0.01),
            Some(w_for(x)),
            "δ=0.01 (p99), w=ceil(e·N/X)".to_string(),
        ),
        Metric::Max => (
            1.0 / keys,
            d_of(1.0 / keys),
            Some(w_for(x)),
            "every key: δ=1/keys (union bound), w=ceil(e·N/X)".to_string(),
        ),
        Metric::ExactPct => {
            let delta = (1.0 - x / 100.0).max(1.0 / keys);
            (
                delta,
                d_of(delta),
                Some(exact_w),
                "error<1 needs w>e·N; δ=max(1-P/100, 1/keys)".to_string(),
            )
        }
        Metric::Mean => {
            if x < 1.0 / keys {
                (
                    1.0 / keys,
                    d_of(1.0 / keys),
                    Some(exact_w),
                    "mean≈0 needs every key exact: w>e·N, δ=1/keys".to_string(),
                )
            } else {
                (
                    1.0,
                    1,
                    Some((n / x).ceil().max(1.0) as u64),
                    "E[error]≤N/w: d=1, w=ceil(N/X)".to_string(),
                )
            }
        }
        Metric::OverBoundPct => {
            let delta = (x / 100.0).max(f64::MIN_POSITIVE);
            (
                delta,
                d_of(delta),
                None,
                "share over e·N/w ≤ e^-d: δ=X/100, w unconstrained".to_string(),
            )
        }
    };
    BoundTerm {
        target: t.resolved(),
        delta,
        hashes: d,
        slots: w,
        rule,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bound_pick_for_the_harmonic_workload() {
        let t = [Target::parse("p99<=5", 97.0).unwrap()];
        let b = bound_pick(&t, 973_855, 10_000);
        assert_eq!(b.hashes, 5);
        assert_eq!(
            b.slots,
            Some((std::f64::consts::E * 973_855.0 / 5.0).ceil() as u64)
        );
        let t = [Target::parse("exact_pct>=70", 97.0).unwrap()];
        let b = bound_pick(&t, 973_855, 10_000);
        assert_eq!(b.hashes, 2);
        assert!(b.slots.unwrap() as f64 > std::f64::consts::E * 973_855.0);
    }
}
