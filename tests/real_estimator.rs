//! The model against the real `pingora_limits::estimator::Estimator` on the
//! document's workload. The real crate seeds its ahash rows randomly, so the
//! comparison is of distributions: each statistic's mean over runs must agree
//! within the run-to-run noise of both.

use pingora_limits::estimator::Estimator as RealEstimator;
use ratelab::lab::estimator_accuracy::sweep;
use ratelab::metrics::{error_stats, mean_std, MeanStd};
use ratelab::model::estimator::EstimatorConfig;
use ratelab::workload::Workload;

fn harmonic() -> Workload {
    Workload::from_counts(
        (0..10_000u64)
            .map(|i| (100_000 / (i + 1)).max(10))
            .collect(),
    )
}

/// (mean error, exact%) of the real crate over `runs` runs.
fn real(w: &Workload, hashes: usize, slots: usize, runs: u64) -> (MeanStd, MeanStd) {
    let mut means = Vec::new();
    let mut exact = Vec::new();
    let counts = w.exact_counts().unwrap();
    for r in 0..runs {
        let est = RealEstimator::new(hashes, slots);
        w.for_each_event(r, |k| {
            est.incr(k as u64, 1);
        });
        let mut errors: Vec<i64> = counts
            .iter()
            .enumerate()
            .map(|(k, &c)| est.get(k as u64) as i64 - c as i64)
            .collect();
        let s = error_stats(&mut errors, f64::INFINITY);
        means.push(s.mean);
        exact.push(s.exact_pct);
    }
    (mean_std(&means), mean_std(&exact))
}

fn agree(what: &str, model: MeanStd, real: MeanStd, runs: f64, slack: f64) {
    let se = ((model.std.powi(2) + real.std.powi(2)) / runs).sqrt();
    let diff = (model.mean - real.mean).abs();
    assert!(
        diff <= 4.0 * se + slack,
        "{what}: model {:.2}±{:.2} vs real crate {:.2}±{:.2} (difference {diff:.2} > 4 standard errors {:.2} + {slack})",
        model.mean, model.std, real.mean, real.std, 4.0 * se
    );
}

#[test]
fn model_and_real_crate_agree_in_distribution() {
    let w = harmonic();
    let runs = 5;
    for (hashes, slots) in [(4usize, 1024usize), (4, 8192), (2, 4096)] {
        let rows = sweep(&w, &[EstimatorConfig::new(hashes, slots)], runs, 11, &|| {});
        let m = &rows[0].summary;
        let (real_mean, real_exact) = real(&w, hashes, slots, u64::from(runs));
        agree(
            &format!("{hashes}x{slots} mean error"),
            m.mean,
            real_mean,
            f64::from(runs),
            0.5,
        );
        agree(
            &format!("{hashes}x{slots} exact%"),
            m.exact_pct,
            real_exact,
            f64::from(runs),
            0.5,
        );
    }
}

#[test]
fn real_crate_overcounts_never_under() {
    // The property the model shares: for non-negative increments no key is
    // ever undercounted, in the real crate too.
    let w = Workload::from_counts((0..2000u64).map(|i| (5000 / (i + 1)).max(1)).collect());
    let est = RealEstimator::new(2, 128);
    w.for_each_event(3, |k| {
        est.incr(k as u64, 1);
    });
    for (k, &c) in w.exact_counts().unwrap().iter().enumerate() {
        assert!(est.get(k as u64) as u64 >= c);
    }
}
