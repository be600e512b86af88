//! Replaying a stream through count-min sketches and measuring every key's
//! error against its exact count.
//!
//! Two ways to the same outcome. A sketch whose final cells depend only on
//! the per-key counts ([`Estimator::order_free`]: pingora's standard update)
//! is evaluated from the run's counts ([`Workload::counts`]), O(keys ×
//! hashes) whatever the number of events; any other (conservative update)
//! replays the run's stream event by event. [`ReplayMode::Events`] replays
//! every sketch, to check that the two agree (`tests/replay_modes.rs`).

use crate::lab::ReplayMode;
use crate::metrics::{count_min_bound, error_stats, ErrorStats};
use crate::model::estimator::{Estimator, EstimatorConfig, Fault, FrequencyEstimator};
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
    let mut truth = vec![0u64; workload.key_space()];
    let mut fault = None;
    workload.for_each_event(workload_seed, |k| {
        if fault.is_some() {
            return;
        }
        let k = k as usize;
        truth[k] += 1;
        if let Err(f) = sketch.incr_cells(&table[k * h..k * h + h], 1) {
            fault = Some(f);
        }
    });
    let order = rank_order(&truth);
    finish_cell(&sketch, &table, &truth, &order, fault)
}

/// Every key's cells, key-major (`table[k*h..k*h+h]`).
fn key_table(sketch: &Estimator, workload: &Workload) -> Vec<u32> {
    let keys = workload.key_space();
    let mut table: Vec<u32> = Vec::with_capacity(keys * sketch.config().hashes);
    for id in 0..keys {
        sketch.cells_into(&workload.key_bytes(id), &mut table);
    }
    table
}

/// Seen keys in rank order: by true count, descending; key id breaks ties.
fn rank_order(truth: &[u64]) -> Vec<u32> {
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

/// An order-free sketch ([`Estimator::order_free`]) evaluated from the run's
/// per-key counts `truth` (seen keys in rank order: `order`): each seen key's
/// cells get its whole count at once. The outcome [`replay_cell`] gives on
/// the stream with these counts, in O(keys × hashes).
fn per_key_cell(
    workload: &Workload,
    config: EstimatorConfig,
    truth: &[u64],
    order: &[u32],
    hash_seed: u64,
) -> CellOutcome {
    let mut sketch = Estimator::new(config, hash_seed);
    let h = config.hashes;
    // Cells of the seen keys, in rank order (unseen keys add nothing).
    let mut table: Vec<u32> = Vec::with_capacity(order.len() * h);
    for &k in order {
        sketch.cells_into(&workload.key_bytes(k as usize), &mut table);
    }
    if table.len() != order.len() * h {
        // zero slots: no cell to add to; every estimate is the empty fold
        let errors = order
            .iter()
            .map(|&k| i64::MAX.wrapping_sub(truth[k as usize] as i64))
            .collect();
        return outcome_of(truth, errors, config.slots, None);
    }
    for (cells, &k) in table.chunks_exact(h).zip(order) {
        sketch.add_cells(cells, truth[k as usize] as i64);
    }
    let errors = table
        .chunks_exact(h)
        .zip(order)
        .map(|(cells, &k)| {
            sketch
                .get_cells(cells)
                .wrapping_sub(truth[k as usize] as i64)
        })
        .collect();
    outcome_of(truth, errors, config.slots, None)
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
    let mut truth = vec![0u64; keys.len()];
    let mut fault = None;
    workload.for_each_event(workload_seed, |k| {
        if fault.is_some() {
            return;
        }
        let k = k as usize;
        truth[k] += 1;
        if let Err(f) = estimator.incr(&keys[k][..], 1) {
            fault = Some(f);
        }
    });
    let order = rank_order(&truth);
    let errors = errors_by_rank(&truth, &order, |k| estimator.get(&keys[k][..]));
    outcome_of(&truth, errors, slots, fault)
}

/// `estimate(key) - truth` of every seen key, in rank order.
fn errors_by_rank(truth: &[u64], order: &[u32], estimate: impl Fn(usize) -> i64) -> Vec<i64> {
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
fn outcome_of(
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
    // One sort serves the statistics (a sum, counts and a nearest rank: the
    // same on any permutation) and the quantiles.
    sorted.sort_unstable();
    let stats = error_stats(&mut sorted, bound);
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
    let mut replayed = sketches.iter();
    configs
        .iter()
        .map(|c| {
            if by_counts(c) {
                return per_key_cell(workload, *c, &truth, &order, hash_seed);
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
