//! Judging evaluated shapes against targets: a [`Candidate`] is one shape's
//! statistics on the search seeds of an [`Evaluator`] and whether they meet
//! every target.

use super::targets::{meets_all, Target};
pub use crate::lab::estimator_accuracy::Evaluator;
use crate::metrics::{count_min_bound, summarize, ErrorStats, RunSummary};
use rayon::prelude::*;
use serde::Serialize;

/// One evaluated shape.
#[derive(Debug, Clone, Serialize)]
pub struct Candidate {
    /// Rows.
    pub hashes: usize,
    /// Counters per row.
    pub slots: u64,
    /// hashes × slots × 8 bytes.
    pub memory_bytes: u64,
    /// Per-seed statistics (search seeds).
    #[serde(skip)]
    pub per_seed: Vec<ErrorStats>,
    /// Mean and std over the search seeds.
    #[serde(skip)]
    pub summary: RunSummary,
    /// e·N/w.
    pub bound_enw: f64,
    /// Meets every target on the mean and on every search seed.
    pub meets: bool,
    /// Search phase: `pow2`, `refine`, `bound`.
    pub phase: &'static str,
}

impl Candidate {
    /// The memory of a `hashes × slots` sketch: 8 bytes a counter.
    pub fn memory(hashes: usize, slots: u64) -> u64 {
        (hashes as u64).saturating_mul(slots).saturating_mul(8)
    }
}

/// Evaluates `shapes` on the search seeds, in parallel over (shape, seed),
/// and returns them in the order given, marked with `phase`.
pub(super) fn evaluate_batch(
    ev: &Evaluator,
    targets: &[Target],
    shapes: &[(usize, u64)],
    phase: &'static str,
    on_eval: &(dyn Fn(u64) + Sync),
) -> Vec<Candidate> {
    let seeds = ev.seeds() as usize;
    let stats: Vec<ErrorStats> = shapes
        .par_iter()
        .flat_map_iter(|&s| (0..seeds).map(move |r| (s, r)))
        .collect::<Vec<_>>()
        .par_iter()
        .map(|&((h, w), r)| {
            let s = ev.run_stats(h, w, r);
            on_eval(1);
            s
        })
        .collect();
    shapes
        .iter()
        .enumerate()
        .map(|(i, &(h, w))| {
            let per_seed = stats[i * seeds..(i + 1) * seeds].to_vec();
            let summary = summarize(&per_seed);
            let events: u64 = ev.truth0().iter().sum();
            Candidate {
                hashes: h,
                slots: w,
                memory_bytes: Candidate::memory(h, w),
                meets: meets_all(targets, &per_seed),
                per_seed,
                summary,
                bound_enw: count_min_bound(events, w as usize),
                phase,
            }
        })
        .collect()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::hash::HasherKind;
    use crate::lab::estimator_accuracy::replay_cell;
    use crate::model::estimator::{EstimatorConfig, Variant};
    use crate::rng::{derive_seed, stream};
    use crate::workload::{CountWorkload, Workload};
    use std::path::Path;

    /// A small harmonic workload for the tests of the search.
    pub(crate) fn small(counts_top: u64, keys: u64) -> Workload {
        CountWorkload::Harmonic {
            keys,
            top: counts_top,
            min: 2,
        }
        .build(Path::new("t"), "workload")
        .unwrap()
    }

    #[test]
    fn fast_evaluation_equals_replay() {
        let zipf = CountWorkload::Zipf {
            keys: 3000,
            events: 40_000,
            s: 1.1,
        }
        .build(Path::new("t"), "w")
        .unwrap();
        for w in [small(5000, 2000), zipf] {
            for variant in [Variant::CountMin, Variant::Conservative] {
                let ev = Evaluator::new(w.clone(), variant, HasherKind::Xxh3, 3, 2);
                for (h, slots) in [(1, 64u64), (3, 1000), (4, 4096), (2, 1 << 20)] {
                    for run in 0..2u64 {
                        let run_seed = derive_seed(3, &[run]);
                        let mut cfg = EstimatorConfig::new(h, slots as usize);
                        cfg.variant = variant;
                        let want = replay_cell(
                            &w,
                            cfg,
                            derive_seed(run_seed, &[stream::WORKLOAD]),
                            derive_seed(run_seed, &[stream::HASH]),
                        );
                        let got = ev.run_stats(h, slots, run as usize);
                        assert_eq!(got, want.stats, "{variant:?} {h}x{slots} run {run}");
                    }
                }
            }
        }
    }

    #[test]
    fn powers_of_two_are_monotone_for_count_min() {
        let ev = Evaluator::new(
            small(20_000, 3000),
            Variant::CountMin,
            HasherKind::Xxh3,
            1,
            1,
        );
        for h in [1, 3] {
            let mut prev = f64::INFINITY;
            for k in 4..14 {
                let s = ev.run_stats(h, 1 << k, 0);
                assert!(s.mean <= prev && s.max.is_finite());
                prev = s.mean;
            }
        }
    }
}
