//! What a sizing promises, and how many fresh hash seeds back the promise.
//!
//! A sketch's errors depend on its hash seed, and the ones that matter for
//! a rate limit (a compliant key denied because every one of its cells is
//! shared with busy keys) are rare all-or-nothing events: across seeds
//! their spread is heavy-tailed, so "mean + 3 sd over ten seeds" does not
//! bound what a user meets with their own seed. What can be stated and
//! checked is a share of seeds: the pick **meets the target on at least
//! `coverage` of hash seeds, with `confidence`**. A [`Plan`] says how many
//! fresh seeds must be evaluated and how many of them may fail for that
//! claim to follow from the one-sided Clopper–Pearson bound: with `f`
//! failures among `n` seeds, the exceedance probability is at most the `p`
//! solving `P(Binomial(n, p) <= f) = 1 − confidence`. For no failure this
//! is the "rule of three" `1 − (1 − confidence)^(1/n)`: 299 passing seeds
//! for 99% coverage at 95% confidence.
//!
//! Verification stops a shape at the first failure beyond what the plan
//! allows ([`Plan::rejects`]), so a shape that is too small costs a few
//! seeds, and a shape that keeps its word costs the whole plan.
//!
//! # Examples
//!
//! ```
//! use ratelab::sizing::guarantee::Plan;
//!
//! let plan = Plan::new(99.0, 95.0, 0).unwrap();
//! assert_eq!((plan.seeds, plan.allowed_failures), (299, 0));
//! // Two failures among 299 seeds: the exceedance may be up to ~2.1%.
//! let ub = ratelab::sizing::guarantee::upper_bound(2, 299, 95.0);
//! assert!(ub > 0.02 && ub < 0.022);
//! ```

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// Default share of hash seeds on which the pick must meet the targets, %.
pub const DEFAULT_COVERAGE_PCT: f64 = 99.0;
/// Default confidence of that claim, %.
pub const DEFAULT_CONFIDENCE_PCT: f64 = 95.0;
/// Most verification seeds a plan may ask for (99.9% coverage at 99.9%
/// confidence needs 6,905).
pub const MAX_PLAN_SEEDS: u32 = 20_000;
/// Seeds evaluated at once: a verification stops after the first chunk
/// whose failures exceed the plan (the same seeds at any thread count).
pub const VERIFY_CHUNK: usize = 8;

/// How many fresh seeds a claim needs and how many of them may fail.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Plan {
    /// Share of seeds claimed, %.
    pub coverage_pct: f64,
    /// Confidence of the claim, %.
    pub confidence_pct: f64,
    /// Seeds evaluated.
    pub seeds: u32,
    /// Failures allowed among them.
    pub allowed_failures: u32,
}

impl Plan {
    /// The plan for `coverage_pct` of seeds at `confidence_pct`, on at
    /// least `min_seeds` seeds (more seeds allow some failures).
    ///
    /// # Examples
    ///
    /// ```
    /// use ratelab::sizing::guarantee::Plan;
    /// assert_eq!(Plan::new(90.0, 90.0, 0).unwrap().seeds, 22);
    /// // 473 seeds allow one failure for 99% / 95%.
    /// assert_eq!(Plan::new(99.0, 95.0, 473).unwrap().allowed_failures, 1);
    /// assert!(Plan::new(100.0, 95.0, 0).is_err());
    /// ```
    pub fn new(coverage_pct: f64, confidence_pct: f64, min_seeds: u32) -> Result<Plan> {
        let pct_ok = |v: f64| v.is_finite() && v > 0.0 && v < 100.0;
        if !pct_ok(coverage_pct) {
            return Err(Error::input(format!(
                "--coverage {coverage_pct:?}: expected a share of seeds in % strictly between 0 and 100, e.g. 99"
            )));
        }
        if !pct_ok(confidence_pct) {
            return Err(Error::input(format!(
                "--confidence {confidence_pct:?}: expected a % strictly between 0 and 100, e.g. 95"
            )));
        }
        let alpha = 1.0 - confidence_pct / 100.0;
        let cov = coverage_pct / 100.0;
        let need = libm::ceil(libm::log(alpha) / libm::log(cov));
        let mut n = if need.is_finite() && need >= 1.0 {
            need as u64
        } else {
            1
        };
        // Guard the rounding of the closed form with the bound itself.
        while upper_bound(0, n.min(u64::from(u32::MAX)) as u32, confidence_pct) > 1.0 - cov
            && n <= u64::from(MAX_PLAN_SEEDS)
        {
            n += 1;
        }
        let n = n.max(u64::from(min_seeds));
        if n > u64::from(MAX_PLAN_SEEDS) {
            return Err(Error::input(format!(
                "--coverage {coverage_pct} --confidence {confidence_pct} (or --seeds {min_seeds}): the claim needs {n} verification seeds per shape, over the {MAX_PLAN_SEEDS} allowed"
            )));
        }
        let n = n as u32;
        let mut allowed = 0u32;
        while allowed < n && upper_bound(allowed + 1, n, confidence_pct) <= 1.0 - cov {
            allowed += 1;
        }
        Ok(Plan {
            coverage_pct,
            confidence_pct,
            seeds: n,
            allowed_failures: allowed,
        })
    }

    /// Whether `failures` so far already break the plan.
    pub fn rejects(&self, failures: u32) -> bool {
        failures > self.allowed_failures
    }

    /// The claim in words, for a target written `target`.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratelab::sizing::guarantee::Plan;
    /// let p = Plan::new(99.0, 95.0, 0).unwrap();
    /// assert_eq!(
    ///     p.claim("compliant_denied_pct<=0.05"),
    ///     "meets compliant_denied_pct<=0.05 on >= 99% of hash seeds (95% confidence)"
    /// );
    /// ```
    pub fn claim(&self, target: &str) -> String {
        format!(
            "meets {target} on >= {}% of hash seeds ({}% confidence)",
            trim(self.coverage_pct),
            trim(self.confidence_pct)
        )
    }
}

fn trim(v: f64) -> String {
    crate::sizing::targets::trim_float(v)
}

/// What a verification measured: failures among the seeds evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Exceedance {
    /// Seeds on which a target was not met.
    pub failures: u32,
    /// Seeds evaluated (fewer than the plan when it stopped early).
    pub seeds: u32,
    /// `failures / seeds`.
    pub rate: f64,
    /// The one-sided Clopper–Pearson upper bound on the exceedance
    /// probability at the plan's confidence.
    pub upper_bound: f64,
    /// The plan held: every planned seed evaluated, failures within it.
    pub holds: bool,
}

impl Exceedance {
    /// The tally of `outcomes` (true: the seed met every target) under `plan`.
    pub fn of(plan: &Plan, outcomes: &[bool]) -> Exceedance {
        let seeds = outcomes.len() as u32;
        let failures = outcomes.iter().filter(|&&ok| !ok).count() as u32;
        Exceedance {
            failures,
            seeds,
            rate: if seeds == 0 {
                0.0
            } else {
                f64::from(failures) / f64::from(seeds)
            },
            upper_bound: upper_bound(failures, seeds, plan.confidence_pct),
            holds: seeds >= plan.seeds && !plan.rejects(failures),
        }
    }

    /// `failures/seeds fresh seeds exceed (≤ x% at c% confidence)`.
    pub fn text(&self, plan: &Plan) -> String {
        format!(
            "exceedance {}/{} fresh hash seeds ({:.2}%; <= {:.2}% at {}% confidence)",
            self.failures,
            self.seeds,
            100.0 * self.rate,
            100.0 * self.upper_bound,
            trim(plan.confidence_pct)
        )
    }
}

/// `P(Binomial(n, p) <= f)`, summed in log space with `libm` (portable).
pub fn binomial_cdf(f: u32, n: u32, p: f64) -> f64 {
    if f >= n || p <= 0.0 {
        return 1.0;
    }
    if p >= 1.0 {
        return 0.0;
    }
    let (lp, lq) = (libm::log(p), libm::log1p(-p));
    let mut log_term = f64::from(n) * lq; // i = 0
    let mut sum = libm::exp(log_term);
    for i in 1..=f {
        // C(n, i) = C(n, i-1) (n - i + 1) / i
        log_term += libm::log(f64::from(n - i + 1)) - libm::log(f64::from(i)) + lp - lq;
        sum += libm::exp(log_term);
    }
    sum.min(1.0)
}

/// The one-sided Clopper–Pearson upper bound on the failure probability
/// after `f` failures in `n` trials, at `confidence_pct`: the `p` with
/// `P(Binomial(n, p) <= f) = 1 − confidence` (1 when `n` is 0 or `f >= n`).
///
/// # Examples
///
/// ```
/// use ratelab::sizing::guarantee::upper_bound;
/// // The rule of three: 0 of 299 => below 1% at 95%.
/// let ub = upper_bound(0, 299, 95.0);
/// assert!((ub - (1.0 - 0.05f64.powf(1.0 / 299.0))).abs() < 1e-9 && ub < 0.01);
/// assert_eq!(upper_bound(3, 3, 95.0), 1.0);
/// ```
pub fn upper_bound(f: u32, n: u32, confidence_pct: f64) -> f64 {
    if n == 0 || f >= n {
        return 1.0;
    }
    let alpha = 1.0 - confidence_pct / 100.0;
    if f == 0 {
        return 1.0 - libm::pow(alpha, 1.0 / f64::from(n));
    }
    // The CDF falls as p grows: bisect.
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if binomial_cdf(f, n, mid) > alpha {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// Evaluates seed indexes `seeds` of a plan in fixed chunks of
/// [`VERIFY_CHUNK`] (in parallel within a chunk), stopping after the first
/// chunk whose failures break the plan. `eval(r)` returns the seed's result
/// and whether it met every target. Results in seed order.
pub fn verify_chunked<T: Send>(
    plan: &Plan,
    seeds: impl Iterator<Item = u64>,
    eval: impl Fn(u64) -> Result<(T, bool)> + Sync,
) -> Result<(Vec<T>, Exceedance)> {
    use rayon::prelude::*;
    let all: Vec<u64> = seeds.take(plan.seeds as usize).collect();
    let mut out = Vec::with_capacity(all.len());
    let mut ok = Vec::with_capacity(all.len());
    for chunk in all.chunks(VERIFY_CHUNK) {
        let got: Vec<(T, bool)> = chunk.par_iter().map(|&r| eval(r)).collect::<Result<_>>()?;
        for (t, met) in got {
            out.push(t);
            ok.push(met);
        }
        if plan.rejects(ok.iter().filter(|&&m| !m).count() as u32) {
            break;
        }
    }
    let ex = Exceedance::of(plan, &ok);
    Ok((out, ex))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_is_where_the_cdf_crosses_alpha() {
        for (f, n) in [(1u32, 50u32), (2, 299), (5, 1000)] {
            let ub = upper_bound(f, n, 95.0);
            assert!((binomial_cdf(f, n, ub) - 0.05).abs() < 1e-6, "{f}/{n}");
            assert!(ub > f64::from(f) / f64::from(n));
        }
        // Known value: 1 of 100 at 95% -> 4.66%.
        assert!((upper_bound(1, 100, 95.0) - 0.0466).abs() < 0.0005);
    }

    #[test]
    fn plans_need_the_rule_of_three_and_allow_failures_on_more_seeds() {
        let p = Plan::new(99.0, 95.0, 10).unwrap();
        assert_eq!((p.seeds, p.allowed_failures), (299, 0));
        assert!(upper_bound(0, 298, 95.0) > 0.01);
        let p = Plan::new(99.0, 95.0, 1000).unwrap();
        assert!(p.allowed_failures >= 4);
        assert!(upper_bound(p.allowed_failures, 1000, 95.0) <= 0.01);
        assert!(upper_bound(p.allowed_failures + 1, 1000, 95.0) > 0.01);
        assert!(Plan::new(99.99, 99.99, 0).is_err());
        assert!(Plan::new(f64::NAN, 95.0, 0).is_err());
        assert!(Plan::new(99.0, 0.0, 0).is_err());
    }

    #[test]
    fn verification_stops_after_the_first_chunk_over_the_plan() {
        let plan = Plan::new(99.0, 95.0, 0).unwrap();
        let (got, ex) = verify_chunked(&plan, 0..1000, |r| Ok((r, r != 11))).unwrap();
        assert_eq!(got.len(), 2 * VERIFY_CHUNK);
        assert_eq!((ex.failures, ex.seeds, ex.holds), (1, 16, false));
        let (got, ex) = verify_chunked(&plan, 0..1000, |r| Ok((r, true))).unwrap();
        assert_eq!((got.len(), ex.holds, ex.failures), (299, true, 0));
    }
}
