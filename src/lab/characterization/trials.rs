//! The trials: fresh hash seeds on the fixed stream, in doubling rounds
//! until every contour is stable.

use super::bins::{contours, merge, rank_bins, stability, Counts, Hist, RankBin};
use super::{Params, QUANTILE_LABELS};
use crate::lab::estimator_accuracy::Evaluator;
use crate::lab::estimator_accuracy::{replay_errors, Shape};
use crate::lab::ReplayMode;
use crate::metrics::count_min_bound;
use crate::model::estimator::EstimatorConfig;
use crate::progress::Progress;
use crate::report::Table;
use crate::rng::{derive_seed, stream};
use crate::workload::counts::WorkloadSummary;
use rayon::prelude::*;

/// The fixed stream's keys: exact counts, rank order and rank bins.
#[derive(Debug, Clone)]
pub struct Ranked {
    /// The stream's workload facts.
    pub summary: WorkloadSummary,
    /// Exact count of each key id.
    pub truth: Vec<u64>,
    /// Seen key ids in rank order (true count descending, id ascending).
    pub order: Vec<u32>,
    /// The rank bins.
    pub bins: Vec<RankBin>,
}

/// One characterized shape.
pub(super) struct Characterized {
    pub(super) hashes: usize,
    pub(super) slots: u64,
    pub(super) trials: u32,
    pub(super) stable: bool,
    pub(super) last_change: f64,
    pub(super) floor: f64,
    /// contours[q][bin]
    pub(super) contours: Vec<Vec<f64>>,
    pub(super) over_bound_at_bin: Vec<f64>,
    pub(super) over_bound_pct: f64,
    pub(super) bound: f64,
}

impl Ranked {
    /// Ranks the keys of exact counts `truth` and bins the ranks.
    pub(super) fn of(truth: Vec<u64>, p: &Params) -> Self {
        let summary = WorkloadSummary::of_counts(&truth);
        let mut order: Vec<u32> = (0..truth.len() as u32)
            .filter(|&k| truth[k as usize] > 0)
            .collect();
        order.sort_by(|&a, &b| truth[b as usize].cmp(&truth[a as usize]).then(a.cmp(&b)));
        let bins = rank_bins(order.len(), p.rank_points, p.min_bin_keys);
        Self {
            summary,
            truth,
            order,
            bins,
        }
    }

    /// The bin of each key id (`usize::MAX`: unseen).
    pub(super) fn bin_of(&self) -> Vec<usize> {
        let mut bin_of = vec![usize::MAX; self.truth.len()];
        for (j, b) in self.bins.iter().enumerate() {
            for r in b.start..b.end {
                bin_of[self.order[r - 1] as usize] = j;
            }
        }
        bin_of
    }
}

/// What the trials of every shape share.
pub(super) struct Trials<'a> {
    pub(super) p: &'a Params,
    pub(super) ev: &'a Evaluator,
    pub(super) ranked: &'a Ranked,
    pub(super) bin_of: &'a [usize],
    pub(super) seed: u64,
    pub(super) progress: &'a Progress,
    /// `--replay events`: each trial replays the stream instead of the
    /// evaluator's per-key evaluation (same errors).
    pub(super) replay: ReplayMode,
}

impl Trials<'_> {
    /// Runs trials of `shape` in doubling rounds until its contours are
    /// stable or `max_trials` is reached. `verbose` prints each round.
    pub(super) fn characterize(&self, shape: Shape, verbose: bool) -> Characterized {
        let (p, ev, progress) = (self.p, self.ev, self.progress);
        let (bins, truth, order) = (&self.ranked.bins, &self.ranked.truth, &self.ranked.order);
        let summary = &self.ranked.summary;
        let bin_of = self.bin_of;
        let (h, w) = (shape.hashes as usize, shape.slots);
        let bound = count_min_bound(summary.events, w as usize);
        let floor = p.abs_floor.max(p.floor_bound_pct / 100.0 * bound);
        let trial = |t: u32| -> (Hist, u64) {
            let hash_seed = derive_seed(self.seed, &[stream::HASH, u64::from(t)]);
            let errs = match self.replay {
                ReplayMode::Auto => ev.errors_with_hash_seed(h, w, 0, hash_seed),
                ReplayMode::Events => {
                    let mut config = EstimatorConfig::new(h, w as usize);
                    config.variant = p.variant;
                    config.hasher = p.hasher;
                    let run_seed = derive_seed(self.seed, &[0]);
                    let workload_seed = derive_seed(run_seed, &[stream::WORKLOAD]);
                    replay_errors(ev.workload(), config, workload_seed, hash_seed)
                }
            };
            // Each bin's errors sorted, then counted value by value: the
            // histogram is built from sorted runs in one pass (the same
            // counts as one insertion per error, far fewer tree walks).
            let mut per_bin: Vec<Vec<i64>> = vec![Vec::new(); bins.len()];
            let mut over = 0u64;
            for &(k, e) in &errs {
                if let Some(b) = per_bin.get_mut(bin_of[k as usize]) {
                    b.push(e);
                }
                over += u64::from(e as f64 > bound);
            }
            let hist: Hist = per_bin.into_iter().map(counted).collect();
            progress.inc(1);
            (hist, over)
        };
        let round = |from: u32, to: u32| -> (Hist, u64) {
            (from..to)
                .into_par_iter()
                .map(trial)
                .reduce(|| (Vec::new(), 0), merge)
        };
        let started = std::time::Instant::now();
        let mut acc = round(0, p.min_trials);
        let mut trials = p.min_trials;
        let mut prev = contours(&acc.0);
        let mut stable = false;
        let mut last_change = 0.0;
        while trials < p.max_trials {
            let to = trials.saturating_mul(2).min(p.max_trials);
            acc = merge(acc, round(trials, to));
            trials = to;
            let now = contours(&acc.0);
            let (ok, worst) = stability(&prev, &now, p.tolerance_pct, floor);
            last_change = worst;
            prev = now;
            if verbose {
                let secs = started.elapsed().as_secs_f64();
                let per = secs / f64::from(trials);
                let left = if ok {
                    0.0
                } else {
                    per * f64::from(p.max_trials - trials)
                };
                eprintln!(
                    "\n{}x{}: {} trials, largest contour change {:.0} events ({}); at most {:.0}s more for this shape",
                    h,
                    w,
                    trials,
                    worst,
                    if ok { "stable" } else { "not yet stable" },
                    left
                );
                eprint!("{}", round_table(bins, truth, order, &prev).text());
            }
            if ok {
                stable = true;
                break;
            }
        }
        progress.inc(u64::from(p.max_trials - trials));
        let over_bound_at_bin = acc
            .0
            .iter()
            .map(|b| {
                let total: u64 = b.iter().map(|&(_, c)| c).sum();
                let over: u64 = b
                    .iter()
                    .filter(|&&(v, _)| v as f64 > bound)
                    .map(|&(_, c)| c)
                    .sum();
                100.0 * over as f64 / total.max(1) as f64
            })
            .collect();
        Characterized {
            hashes: h,
            slots: w,
            trials,
            stable,
            last_change,
            floor,
            contours: prev,
            over_bound_at_bin,
            over_bound_pct: 100.0 * acc.1 as f64 / (f64::from(trials) * order.len().max(1) as f64),
            bound,
        }
    }
}

/// `(value, how many times)` of `values`, as a histogram.
fn counted(mut values: Vec<i64>) -> Counts {
    values.sort_unstable();
    let mut runs: Vec<(i64, u64)> = Vec::new();
    for v in values {
        match runs.last_mut() {
            Some((last, c)) if *last == v => *c += 1,
            _ => runs.push((v, 1)),
        }
    }
    runs
}

/// The quantile table of a round: a row per rank bin.
pub(super) fn round_table(bins: &[RankBin], truth: &[u64], order: &[u32], c: &[Vec<f64>]) -> Table {
    let mut t = Table::new(
        ["ranks", "true count"]
            .into_iter()
            .map(String::from)
            .chain(QUANTILE_LABELS.iter().map(|s| s.to_string())),
    );
    for (j, b) in bins.iter().enumerate() {
        let (hi, lo) = (
            truth[order[b.start - 1] as usize],
            truth[order[b.end - 2] as usize],
        );
        let counts = if hi == lo {
            hi.to_string()
        } else {
            format!("{hi}-{lo}")
        };
        let mut row = vec![b.label(), counts];
        row.extend(c.iter().map(|q| format!("{:.0}", q[j])));
        t.push(row);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::counted;

    #[test]
    fn counted_is_the_histogram_of_the_values() {
        let h = counted(vec![3, -1, 3, 2, 3, -1, 0]);
        let want: Vec<(i64, u64)> = vec![(-1, 2), (0, 1), (2, 1), (3, 3)];
        assert_eq!(h, want);
        assert!(counted(Vec::new()).is_empty());
    }
}
