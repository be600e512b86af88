//! Replaying a stream through count-min sketches and measuring every key's
//! error against its exact count.

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
/// (hashes seeded by `hash_seed`) and measures every seen key's error.
///
/// The reference for one cell; sweeps use [`replay_run`], which feeds one
/// generated stream to several shapes at once and gives the same outcomes.
pub fn replay_cell(
    workload: &Workload,
    config: EstimatorConfig,
    workload_seed: u64,
    hash_seed: u64,
) -> CellOutcome {
    let mut sketch = Estimator::new(config, hash_seed);
    let keys = workload.key_space();
    let h = config.hashes;
    // Hash every key once: per event, only the adds remain.
    let table = key_table(&sketch, workload);
    let mut truth = vec![0u64; keys];
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
pub(super) fn rank_order(truth: &[u64]) -> Vec<u32> {
    let mut order: Vec<u32> = (0..truth.len() as u32)
        .filter(|&k| truth[k as usize] > 0)
        .collect();
    order.sort_by(|&a, &b| truth[b as usize].cmp(&truth[a as usize]).then(a.cmp(&b)));
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
    outcome_of(
        truth,
        order,
        |k| sketch.get_cells(&table[k * h..k * h + h]),
        config.slots,
        fault,
    )
}

/// Replays `workload` through the real `pingora_limits` Estimator (its
/// hashers are random, so the result is statistical).
pub fn replay_cell_crate(
    workload: &Workload,
    config: EstimatorConfig,
    workload_seed: u64,
) -> CellOutcome {
    let sketch = pingora_limits::estimator::Estimator::new(config.hashes, config.slots);
    let keys: Vec<Vec<u8>> = (0..workload.key_space())
        .map(|id| workload.key_bytes(id).into_owned())
        .collect();
    let mut truth = vec![0u64; keys.len()];
    workload.for_each_event(workload_seed, |k| {
        let k = k as usize;
        truth[k] += 1;
        sketch.incr(&keys[k][..], 1);
    });
    let order = rank_order(&truth);
    outcome_of(
        &truth,
        &order,
        |k| sketch.get(&keys[k][..]) as i64,
        config.slots,
        None,
    )
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
    let keys: Vec<Vec<u8>> = (0..workload.key_space())
        .map(|id| workload.key_bytes(id).into_owned())
        .collect();
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
    outcome_of(
        &truth,
        &order,
        |k| estimator.get(&keys[k][..]),
        slots,
        fault,
    )
}

/// Error statistics of per-key estimates (`estimate(key)`) against the exact
/// counts, keys taken in rank order.
pub(super) fn outcome_of(
    truth: &[u64],
    order: &[u32],
    estimate: impl Fn(usize) -> i64,
    slots: usize,
    fault: Option<Fault>,
) -> CellOutcome {
    let summary = WorkloadSummary::of_counts(truth);
    let errors_by_rank: Vec<i64> = order
        .iter()
        .map(|&k| {
            let k = k as usize;
            estimate(k).wrapping_sub(truth[k] as i64)
        })
        .collect();
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
    let stats = error_stats(&mut sorted, bound);
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
    CellOutcome {
        stats,
        bound,
        summary,
        fault,
        rank_bin_means,
        quantiles,
    }
}

/// Events buffered between the stream generator and the sketches: the
/// sketches replay the stream chunk by chunk (memory stays O(keys + CHUNK)).
const CHUNK: usize = 4096;

/// Replays one run's stream (order seeded by `workload_seed`) through several
/// shapes at once (hashes seeded by `hash_seed`): the stream is drawn once and
/// the exact counts kept once, instead of once per shape. Each outcome is the
/// one [`replay_cell`] gives for that shape (a shape that faults is replayed
/// again alone with [`replay_cell`], so the counts stop where its replay did).
pub fn replay_run(
    workload: &Workload,
    configs: &[EstimatorConfig],
    workload_seed: u64,
    hash_seed: u64,
) -> Vec<CellOutcome> {
    let mut sketches: Vec<(Estimator, Vec<u32>, bool)> = configs
        .iter()
        .map(|&c| {
            let s = Estimator::new(c, hash_seed);
            let t = key_table(&s, workload);
            (s, t, false)
        })
        .collect();
    let mut truth = vec![0u64; workload.key_space()];
    let mut buf: Vec<u32> = Vec::with_capacity(CHUNK);
    let feed = |buf: &mut Vec<u32>,
                sketches: &mut Vec<(Estimator, Vec<u32>, bool)>,
                truth: &mut Vec<u64>| {
        for &k in buf.iter() {
            truth[k as usize] += 1;
        }
        for (s, t, faulted) in sketches.iter_mut() {
            if !*faulted && s.incr_keys(t, buf).is_err() {
                *faulted = true;
            }
        }
        buf.clear();
    };
    workload.for_each_event(workload_seed, |k| {
        buf.push(k);
        if buf.len() == CHUNK {
            feed(&mut buf, &mut sketches, &mut truth);
        }
    });
    feed(&mut buf, &mut sketches, &mut truth);
    let order = rank_order(&truth);
    sketches
        .iter()
        .map(|(s, t, faulted)| {
            if *faulted {
                replay_cell(workload, *s.config(), workload_seed, hash_seed)
            } else {
                finish_cell(s, t, &truth, &order, None)
            }
        })
        .collect()
}
