//! Error statistics: how far estimates are from the exact oracle.
//!
//! Per key, error = estimate − true count. Over the keys of one run:
//! exact% (share of keys with error 0), mean, p99 by nearest rank, max, and the
//! share of keys whose error exceeds the count-min bound e·N/w. Over runs the
//! reports average each statistic (so p99 and max are per-run values
//! averaged); [`RunSummary`] also keeps the sample standard deviation.
//!
//! Percentiles are exact (selection over the per-key errors), not
//! histogram-approximated: a report's p99 is an exact nearest-rank value
//! and a CI baseline must not move with a histogram's bucket edges.

use serde::Serialize;

/// Statistics of per-key errors in one run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ErrorStats {
    /// Keys measured.
    pub keys: u64,
    /// Percentage of keys whose estimate is exact.
    pub exact_pct: f64,
    /// Mean error.
    pub mean: f64,
    /// 99th percentile of the error, nearest rank.
    pub p99: f64,
    /// Largest error.
    pub max: f64,
    /// Percentage of keys whose error exceeds the bound.
    pub over_bound_pct: f64,
}

/// Nearest-rank percentile `p` (0 < p <= 100) of `values`; reorders `values`.
/// Nearest rank: the smallest value with at least p% of values at or below it,
/// i.e. the element of rank ceil(p/100 · n) (1-based).
pub fn nearest_rank(values: &mut [i64], p: f64) -> Option<i64> {
    if values.is_empty() {
        return None;
    }
    let n = values.len();
    let rank = ((p / 100.0) * n as f64).ceil().clamp(1.0, n as f64) as usize;
    let (_, v, _) = values.select_nth_unstable(rank - 1);
    Some(*v)
}

/// Statistics of `errors` against the count-min bound `bound`.
pub fn error_stats(errors: &mut [i64], bound: f64) -> ErrorStats {
    let n = errors.len();
    if n == 0 {
        return ErrorStats {
            keys: 0,
            exact_pct: 0.0,
            mean: 0.0,
            p99: 0.0,
            max: 0.0,
            over_bound_pct: 0.0,
        };
    }
    let mut exact = 0u64;
    let mut over = 0u64;
    let mut sum = 0i128;
    let mut max = i64::MIN;
    for &e in errors.iter() {
        exact += u64::from(e == 0);
        over += u64::from(e as f64 > bound);
        sum += i128::from(e);
        max = max.max(e);
    }
    let p99 = nearest_rank(errors, 99.0).unwrap_or(0);
    ErrorStats {
        keys: n as u64,
        exact_pct: 100.0 * exact as f64 / n as f64,
        mean: sum as f64 / n as f64,
        p99: p99 as f64,
        max: max as f64,
        over_bound_pct: 100.0 * over as f64 / n as f64,
    }
}

/// The count-min bound e·N/w: with probability 1 − e^(−hashes) a key's
/// overcount is at most this (N events, w slots per row).
pub fn count_min_bound(events: u64, slots: usize) -> f64 {
    if slots == 0 {
        return f64::INFINITY;
    }
    std::f64::consts::E * events as f64 / slots as f64
}

/// The theory's ceiling on the share of keys whose overcount exceeds
/// [`count_min_bound`], in percent: `100 · e^(−hashes)`.
///
/// ```
/// let p = ratelab::metrics::over_bound_theory_pct(1);
/// assert!((p - 36.787944).abs() < 1e-6);
/// ```
pub fn over_bound_theory_pct(hashes: u64) -> f64 {
    100.0 * libm::exp(-(hashes as f64))
}

/// Mean and sample standard deviation (n − 1) of per-run values, summed in
/// run order so the result does not depend on which thread ran which run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MeanStd {
    /// Mean over runs.
    pub mean: f64,
    /// Sample standard deviation over runs (0 for one run).
    pub std: f64,
}

/// Mean and sample standard deviation of `values`.
pub fn mean_std(values: &[f64]) -> MeanStd {
    let n = values.len();
    if n == 0 {
        return MeanStd {
            mean: 0.0,
            std: 0.0,
        };
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let std = if n < 2 {
        0.0
    } else {
        (values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1) as f64).sqrt()
    };
    MeanStd { mean, std }
}

/// Per-statistic mean and std over runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RunSummary {
    /// exact% over runs.
    pub exact_pct: MeanStd,
    /// mean error over runs.
    pub mean: MeanStd,
    /// p99 over runs.
    pub p99: MeanStd,
    /// max over runs.
    pub max: MeanStd,
    /// over-bound% over runs.
    pub over_bound_pct: MeanStd,
}

/// Summarises per-run statistics.
pub fn summarize(runs: &[ErrorStats]) -> RunSummary {
    let pick = |f: fn(&ErrorStats) -> f64| mean_std(&runs.iter().map(f).collect::<Vec<_>>());
    RunSummary {
        exact_pct: pick(|s| s.exact_pct),
        mean: pick(|s| s.mean),
        p99: pick(|s| s.p99),
        max: pick(|s| s.max),
        over_bound_pct: pick(|s| s.over_bound_pct),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut v: Vec<i64> = (1..=100).collect();
        assert_eq!(nearest_rank(&mut v, 99.0), Some(99));
        assert_eq!(nearest_rank(&mut v, 100.0), Some(100));
        let mut v = vec![5, 1, 3];
        assert_eq!(nearest_rank(&mut v, 99.0), Some(5));
        assert_eq!(nearest_rank(&mut v, 50.0), Some(3));
        assert_eq!(nearest_rank(&mut [], 99.0), None);
    }

    #[test]
    fn error_stats_counts_exact_and_over_bound() {
        let mut e = vec![0, 0, 2, 10];
        let s = error_stats(&mut e, 5.0);
        assert_eq!(s.exact_pct, 50.0);
        assert_eq!(s.mean, 3.0);
        assert_eq!(s.max, 10.0);
        assert_eq!(s.p99, 10.0);
        assert_eq!(s.over_bound_pct, 25.0);
    }

    #[test]
    fn bound_and_mean_std() {
        assert!((count_min_bound(973_855, 1024) - 2585.2).abs() < 0.1);
        let m = mean_std(&[1.0, 3.0]);
        assert_eq!(m.mean, 2.0);
        assert!((m.std - std::f64::consts::SQRT_2).abs() < 1e-12);
        assert_eq!(mean_std(&[4.0]).std, 0.0);
    }
}
