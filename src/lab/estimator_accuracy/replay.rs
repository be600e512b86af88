//! Replaying a stream through count-min sketches and measuring every key's
//! error against its exact count.
//!
//! Two ways to the same outcome. A sketch whose final cells depend only on
//! the per-key counts ([`Estimator::order_free`]: pingora's standard update)
//! is evaluated from the run's counts ([`Workload::counts`]), O(keys ×
//! hashes) whatever the number of events; any other (conservative update)
//! replays the run's stream event by event. [`ReplayMode::Events`] replays
//! every sketch, to check that the two agree (`tests/it/replay_modes.rs`).

use crate::hash::RowHasher;
use crate::lab::ReplayMode;
use crate::metrics::{count_min_bound, error_stats, ErrorStats};
use crate::model::estimator::{Estimator, EstimatorConfig, Fault, FrequencyEstimator};
use crate::rng::derive_seed;
use crate::workload::counts::WorkloadSummary;
use crate::workload::Workload;

/// What one sweep cell measured.
#[derive(Debug, Clone)]
pub struct CellOutcome {
    /// Error statistics over the keys seen.
    pub stats: ErrorStats,
    /// The count-min bound e·N/w for this run.
    pub bound: f64,
    /// The run's workload facts.
    pub summary: WorkloadSummary,
    /// A panic of the real code, if the replay hit one (the replay stops there).
    pub fault: Option<Fault>,
    /// Mean error per logarithmic rank bin (see [`rank_bins`]).
    pub rank_bin_means: Vec<f64>,
    /// Error quantiles at [`quantile_at`]`(i)` for i in 0..=QUANTILES (the
    /// last is the maximum).
    pub quantiles: Vec<f64>,
}

/// Resolution of the stored error distribution: 40 quantiles per decade of
/// 1/(1-q), from q = 0 to 1 - 1e-5, then the maximum.
pub const QUANTILES: usize = 200;

/// The quantile stored at index `i` (0..=QUANTILES): 1 - 10^(-i/40), so the
/// tail gets as many points as the body (HdrHistogram's percentile plots);
/// the last index is the maximum (q = 1).
pub fn quantile_at(i: usize) -> f64 {
    if i >= QUANTILES {
        1.0
    } else {
        1.0 - libm::pow(10.0, -(i as f64) / 40.0)
    }
}

/// Logarithmic bins of key ranks (1-based) for `keys` keys: `[start, end)`.
pub fn rank_bins(keys: usize) -> Vec<(usize, usize)> {
    let mut bins = Vec::new();
    let mut start = 1usize;
    while start <= keys {
        let end = ((start as f64 * 1.08).ceil() as usize)
            .max(start + 1)
            .min(keys + 1);
        bins.push((start, end));
        start = end;
    }
    bins
}

/// Replays `workload` (order seeded by `workload_seed`) through a sketch
/// (hashes seeded by `hash_seed`) event by event and measures every seen
/// key's error.
///
/// The reference for one cell; sweeps use [`replay_run`], which gives the
/// same outcomes (from the counts when the order cannot matter, else one
/// generated stream fed to several shapes at once).
pub fn replay_cell(
    workload: &Workload,
    config: EstimatorConfig,
    workload_seed: u64,
    hash_seed: u64,
) -> CellOutcome {
    let mut sketch = Estimator::new(config, hash_seed);
    let h = config.hashes;
    // Hash every key once: per event, only the adds remain.
    let table = key_table(&sketch, workload);
    let (truth, fault) = count_until_error(workload, workload_seed, |k| {
        let k = k as usize;
        sketch.incr_cells(&table[k * h..k * h + h], 1).map(drop)
    });
    let order = rank_order(&truth);
    finish_cell(&sketch, &table, &truth, &order, fault)
}

/// Feeds `workload`'s events (order seeded by `workload_seed`) to `step`
/// one by one until it fails: each key's exact count of the events fed
/// (the failing one included), and the error that stopped them.
pub(super) fn count_until_error<E>(
    workload: &Workload,
    workload_seed: u64,
    mut step: impl FnMut(u32) -> Result<(), E>,
) -> (Vec<u64>, Option<E>) {
    let mut truth = vec![0u64; workload.key_space()];
    let mut error = None;
    workload.for_each_event(workload_seed, |k| {
        if error.is_some() {
            return;
        }
        truth[k as usize] += 1;
        if let Err(e) = step(k) {
            error = Some(e);
        }
    });
    (truth, error)
}

/// Every key's cells, key-major (`table[k*h..k*h+h]`).
fn key_table(sketch: &Estimator, workload: &Workload) -> Vec<u32> {
    let keys = workload.key_space();
    let mut table: Vec<u32> = Vec::with_capacity(keys * sketch.config().hashes);
    for id in 0..keys {
        workload.with_key(id, |b| sketch.cells_into(b, &mut table));
    }
    table
}

/// Seen keys in rank order: by true count, descending; key id breaks ties.
pub(super) fn rank_order(truth: &[u64]) -> Vec<u32> {
    let mut order: Vec<u32> = (0..truth.len() as u32)
        .filter(|&k| truth[k as usize] > 0)
        .collect();
    order.sort_unstable_by(|&a, &b| truth[b as usize].cmp(&truth[a as usize]).then(a.cmp(&b)));
    order
}

/// A replayed sketch's error statistics against the exact counts.
fn finish_cell(
    sketch: &Estimator,
    table: &[u32],
    truth: &[u64],
    order: &[u32],
    fault: Option<Fault>,
) -> CellOutcome {
    let config = *sketch.config();
    let h = config.hashes;
    let errors = errors_by_rank(truth, order, |k| sketch.get_cells(&table[k * h..k * h + h]));
    outcome_of(truth, errors, config.slots, fault)
}

/// Order-free sketches ([`Estimator::order_free`]) of one run (hashes
/// seeded by `hash_seed`) evaluated from the run's per-key counts `truth`
/// (seen keys in rank order: `order`): each seen key's cells get its whole
/// count at once. The outcomes [`replay_cell`] gives on the stream with these
/// counts, in O(keys × hashes).
///
/// Row by row: row r's hasher is the same for every shape of the run (seeded
/// `derive_seed(hash_seed, [r])`, as [`Estimator::new`] does), so each key is
/// hashed once per row for all the shapes; a row's counters are final once
/// every key has added to it, so each key's estimate (the minimum over its
/// rows) is folded in row by row and only one row of counters is live.
fn per_key_cells(
    workload: &Workload,
    configs: &[EstimatorConfig],
    truth: &[u64],
    order: &[u32],
    hash_seed: u64,
) -> Vec<CellOutcome> {
    let n = order.len();
    let count: Vec<i64> = order.iter().map(|&k| truth[k as usize] as i64).collect();
    let mut estimate: Vec<Vec<i64>> = configs.iter().map(|_| vec![i64::MAX; n]).collect();
    let rows = configs.iter().map(|c| c.hashes).max().unwrap_or(0);
    let mut hashes = vec![0u64; n];
    let mut row_cells: Vec<i64> = Vec::new();
    let mut hasher_kind = None;
    for r in 0..rows {
        for (c, est) in configs.iter().zip(estimate.iter_mut()) {
            if c.hashes <= r {
                continue;
            }
            if hasher_kind != Some(c.hasher) {
                let h = RowHasher::new(c.hasher, derive_seed(hash_seed, &[r as u64]));
                for (slot, &k) in hashes.iter_mut().zip(order) {
                    *slot = workload.with_key(k as usize, |b| h.hash(b));
                }
                hasher_kind = Some(c.hasher);
            }
            add_row(&hashes, &count, c.slots, &mut row_cells, est);
        }
        hasher_kind = None;
    }
    configs
        .iter()
        .zip(estimate)
        .map(|(c, est)| {
            let errors = est
                .iter()
                .zip(&count)
                .map(|(&e, &t)| e.wrapping_sub(t))
                .collect();
            outcome_of(truth, errors, c.slots, None)
        })
        .collect()
}

/// One row of `slots` counters: every key adds its count at column
/// `hash % slots`, then folds the counter into its estimate.
fn add_row(hashes: &[u64], count: &[i64], slots: usize, row: &mut Vec<i64>, estimate: &mut [i64]) {
    row.clear();
    row.resize(slots, 0);
    let column = |h: u64| -> usize {
        if slots.is_power_of_two() {
            (h & (slots as u64 - 1)) as usize
        } else {
            (h % slots as u64) as usize
        }
    };
    for (&h, &c) in hashes.iter().zip(count) {
        let cell = &mut row[column(h)];
        *cell = cell.wrapping_add(c);
    }
    for (&h, e) in hashes.iter().zip(estimate.iter_mut()) {
        *e = (*e).min(row[column(h)]);
    }
}

/// The key bytes of every key id, owned (what the real crate and foreign
/// estimators are given).
fn owned_keys(workload: &Workload) -> Vec<Vec<u8>> {
    (0..workload.key_space())
        .map(|id| workload.key_bytes(id).into_owned())
        .collect()
}

/// Replays `workload` through the real `pingora_limits` Estimator (its
/// hashers are random, so the result is statistical).
pub fn replay_cell_crate(
    workload: &Workload,
    config: EstimatorConfig,
    workload_seed: u64,
) -> CellOutcome {
    replay_run_crate(workload, &[config], workload_seed)
        .pop()
        .unwrap_or_else(|| outcome_of(&[], Vec::new(), config.slots, None))
}

/// Replays one run's stream through the real `pingora_limits` Estimator of
/// every shape of `configs` (the stream drawn once; `incr(key, 1)` per event
/// on each). The crate hashes every event and its hashers are random, so the
/// outcomes are statistical.
pub fn replay_run_crate(
    workload: &Workload,
    configs: &[EstimatorConfig],
    workload_seed: u64,
) -> Vec<CellOutcome> {
    let sketches: Vec<pingora_limits::estimator::Estimator> = configs
        .iter()
        .map(|c| pingora_limits::estimator::Estimator::new(c.hashes, c.slots))
        .collect();
    let keys = owned_keys(workload);
    workload.for_each_chunk(workload_seed, |chunk| {
        for sketch in &sketches {
            for &k in chunk {
                sketch.incr(&keys[k as usize][..], 1);
            }
        }
    });
    let truth = workload.counts(workload_seed);
    let order = rank_order(&truth);
    sketches
        .iter()
        .zip(configs)
        .map(|(sketch, c)| {
            let errors = errors_by_rank(&truth, &order, |k| sketch.get(&keys[k][..]) as i64);
            outcome_of(&truth, errors, c.slots, None)
        })
        .collect()
}

/// Replays `workload` (order seeded by `workload_seed`) through any
/// [`FrequencyEstimator`] (an estimator of your own) with `incr(key, 1)` per
/// event, and measures every seen key's `get` against its exact count, as
/// [`replay_cell`] does for the model. `slots` sets the count-min bound
/// e·N/slots the outcome is compared with. A fault stops the replay there.
pub fn replay_estimator(
    workload: &Workload,
    estimator: &mut dyn FrequencyEstimator,
    slots: usize,
    workload_seed: u64,
) -> CellOutcome {
    let keys = owned_keys(workload);
    let (truth, fault) = count_until_error(workload, workload_seed, |k| {
        estimator.incr(&keys[k as usize][..], 1).map(drop)
    });
    let order = rank_order(&truth);
    let errors = errors_by_rank(&truth, &order, |k| estimator.get(&keys[k][..]));
    outcome_of(&truth, errors, slots, fault)
}

/// `estimate(key) - truth` of every seen key, in rank order.
pub(super) fn errors_by_rank(
    truth: &[u64],
    order: &[u32],
    estimate: impl Fn(usize) -> i64,
) -> Vec<i64> {
    order
        .iter()
        .map(|&k| {
            let k = k as usize;
            estimate(k).wrapping_sub(truth[k] as i64)
        })
        .collect()
}

/// Error statistics of the seen keys' errors in rank order against the
/// exact counts `truth`.
pub(super) fn outcome_of(
    truth: &[u64],
    errors_by_rank: Vec<i64>,
    slots: usize,
    fault: Option<Fault>,
) -> CellOutcome {
    let summary = WorkloadSummary::of_counts(truth);
    let bound = count_min_bound(summary.events, slots);
    let rank_bin_means = rank_bins(errors_by_rank.len())
        .iter()
        .map(|&(s, e)| {
            errors_by_rank[s - 1..e - 1]
                .iter()
                .map(|&x| x as f64)
                .sum::<f64>()
                / (e - s) as f64
        })
        .collect();
    let mut sorted = errors_by_rank;
    // One sort serves the quantiles and then the statistics (a sum, counts
    // and a nearest rank: the same on any permutation; the nearest rank's
    // selection reorders the slice, so it comes last).
    sorted.sort_unstable();
    let quantiles = if sorted.is_empty() {
        vec![0.0; QUANTILES + 1]
    } else {
        (0..=QUANTILES)
            .map(|i| {
                let n = sorted.len();
                // nearest rank: the smallest error with at least q of the keys at or below it
                let rank = ((quantile_at(i) * n as f64).ceil() as usize).clamp(1, n);
                sorted[rank - 1] as f64
            })
            .collect()
    };
    let stats = error_stats(&mut sorted, bound);
    CellOutcome {
        stats,
        bound,
        summary,
        fault,
        rank_bin_means,
        quantiles,
    }
}

/// Replays one run (order seeded by `workload_seed`) through several shapes
/// (hashes seeded by `hash_seed`); each outcome is the one [`replay_cell`]
/// gives for that shape. Under [`ReplayMode::Auto`] the order-free shapes
/// are evaluated from the run's counts; the others (all of them under
/// [`ReplayMode::Events`]) share one drawn stream, fed chunk by chunk (a
/// shape that faults is replayed again alone with [`replay_cell`], so the
/// counts stop where its replay did).
pub fn replay_run(
    workload: &Workload,
    configs: &[EstimatorConfig],
    workload_seed: u64,
    hash_seed: u64,
    mode: ReplayMode,
) -> Vec<CellOutcome> {
    let events = workload.events();
    let by_counts =
        |c: &EstimatorConfig| mode == ReplayMode::Auto && Estimator::order_free(c, events);
    let mut sketches: Vec<(Estimator, Vec<u32>, bool)> = configs
        .iter()
        .filter(|c| !by_counts(c))
        .map(|&c| {
            let s = Estimator::new(c, hash_seed);
            let t = key_table(&s, workload);
            (s, t, false)
        })
        .collect();
    let truth = workload.counts(workload_seed);
    if !sketches.is_empty() {
        workload.for_each_chunk(workload_seed, |chunk| {
            for (s, t, faulted) in sketches.iter_mut() {
                if !*faulted && s.incr_keys(t, chunk).is_err() {
                    *faulted = true;
                }
            }
        });
    }
    let order = rank_order(&truth);
    let counted: Vec<EstimatorConfig> = configs.iter().copied().filter(by_counts).collect();
    let mut counted = per_key_cells(workload, &counted, &truth, &order, hash_seed).into_iter();
    let mut replayed = sketches.iter();
    configs
        .iter()
        .map(|c| {
            if by_counts(c) {
                return counted
                    .next()
                    .expect("one outcome per shape evaluated by counts");
            }
            match replayed.next() {
                Some((_, _, true)) => replay_cell(workload, *c, workload_seed, hash_seed),
                Some((s, t, false)) => finish_cell(s, t, &truth, &order, None),
                None => unreachable!("one replayed sketch per shape not evaluated by counts"),
            }
        })
        .collect()
}

/// Every seen key's error `(key id, estimate - truth)`, in key id order, of
/// a `config` sketch (hashes seeded by `hash_seed`) replayed event by event
/// on the stream seeded by `workload_seed`: the characterization's trials
/// under `--replay events`.
pub fn replay_errors(
    workload: &Workload,
    config: EstimatorConfig,
    workload_seed: u64,
    hash_seed: u64,
) -> Vec<(u32, i64)> {
    let mut sketch = Estimator::new(config, hash_seed);
    let h = config.hashes;
    let table = key_table(&sketch, workload);
    let mut truth = vec![0u64; workload.key_space()];
    workload.for_each_chunk(workload_seed, |chunk| {
        for &k in chunk {
            truth[k as usize] += 1;
        }
        // unit increments from zero never reach isize::MAX (MAX_EVENTS)
        let _ = sketch.incr_keys(&table, chunk);
    });
    (0..truth.len())
        .filter(|&k| truth[k] > 0)
        .map(|k| {
            let est = sketch.get_cells(&table[k * h..k * h + h]);
            (k as u32, est.wrapping_sub(truth[k] as i64))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_the_nearest_ranks_of_the_errors() {
        // errors in rank order, deliberately unsorted
        let errors: Vec<i64> = (0..1000).map(|i| (i * 7919) % 1000).collect();
        let truth = vec![1u64; 1000];
        let o = outcome_of(&truth, errors.clone(), 100, None);
        let mut sorted = errors;
        sorted.sort_unstable();
        for (i, &q) in o.quantiles.iter().enumerate() {
            let rank = ((quantile_at(i) * 1000.0).ceil() as usize).clamp(1, 1000);
            assert_eq!(q, sorted[rank - 1] as f64, "quantile {i}");
        }
        assert_eq!(o.quantiles[QUANTILES], 999.0);
        assert_eq!(
            (o.stats.max, o.stats.p99, o.stats.mean),
            (999.0, 989.0, 499.5)
        );
    }
}
