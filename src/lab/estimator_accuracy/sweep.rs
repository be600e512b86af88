//! The sweep: every (shape, run) cell replayed in parallel, in a fixed
//! result order, and summarised into one row per shape.

use super::params::Backend;
use super::replay::{replay_run, replay_run_crate, CellOutcome};
use crate::lab::ReplayMode;
use crate::metrics::{summarize, ErrorStats, RunSummary};
use crate::model::estimator::{EstimatorConfig, Fault};
use crate::rng::{derive_seed, stream};
use crate::workload::counts::WorkloadSummary;
use crate::workload::Workload;
use rayon::prelude::*;

/// One row of the table: a shape and variant summarised over runs.
#[derive(Debug, Clone)]
pub struct Row {
    /// Which implementation.
    pub backend: Backend,
    /// The implementation's name when it has its own (an exec entry's
    /// `name`), else the backend's.
    pub label: Option<String>,
    /// Shape and behaviour.
    pub config: EstimatorConfig,
    /// Mean and std of each statistic over runs.
    pub summary: RunSummary,
    /// e·N/w averaged over runs.
    pub bound: f64,
    /// Runs that hit a fault.
    pub faults: u32,
    /// The first fault's message.
    pub fault: Option<Fault>,
    /// Rank-bin mean errors, averaged over runs.
    pub rank_bin_means: Vec<f64>,
    /// Error quantiles, averaged over runs.
    pub quantiles: Vec<f64>,
}

impl Row {
    /// The implementation's name in tables and legends.
    pub fn backend_name(&self) -> &str {
        self.label.as_deref().unwrap_or(self.backend.name())
    }
}

/// Runs the sweep of `configs` × `runs` on `workload`, in parallel, in a fixed
/// result order. `on_cell` is called after each cell (for progress).
pub fn sweep(
    workload: &Workload,
    configs: &[EstimatorConfig],
    runs: u32,
    seed: u64,
    mode: ReplayMode,
    on_cell: &(dyn Fn() + Sync),
) -> Vec<Row> {
    let all: Vec<usize> = (0..configs.len() * runs as usize).collect();
    let outcomes = sweep_cells(workload, configs, runs, seed, &all, mode, on_cell);
    rows(configs, runs, &outcomes)
}

/// The sweep cell index of shape `c` in run `r`: `c * runs + r` (the order of
/// the outcomes [`rows`] takes).
pub fn cell_index(c: usize, r: u32, runs: u32) -> usize {
    c * runs as usize + r as usize
}

/// Replays the sweep cells `cells` (indices as [`cell_index`]) and returns
/// their outcomes in the order of `cells`. Cells of the same run share one
/// run's counts and stream ([`replay_run`]); the work items are (run, group
/// of shapes), split so every thread has work. No outcome depends on the
/// grouping, the thread count or `mode`.
pub fn sweep_cells(
    workload: &Workload,
    configs: &[EstimatorConfig],
    runs: u32,
    seed: u64,
    cells: &[usize],
    mode: ReplayMode,
    on_cell: &(dyn Fn() + Sync),
) -> Vec<CellOutcome> {
    by_run_groups(
        configs,
        runs,
        seed,
        cells,
        on_cell,
        &|group, workload_seed, hash_seed| {
            replay_run(workload, group, workload_seed, hash_seed, mode)
        },
    )
}

/// What a work item of a sweep does: the outcomes of one run's group of
/// shapes, given the run's workload and hash seeds.
type RunGroup<'a> = dyn Fn(&[EstimatorConfig], u64, u64) -> Vec<CellOutcome> + Sync + 'a;

/// Splits `cells` into work items (run, group of shapes), runs them in
/// parallel with `replay` and returns the outcomes in the order of `cells`.
fn by_run_groups(
    configs: &[EstimatorConfig],
    runs: u32,
    seed: u64,
    cells: &[usize],
    on_cell: &(dyn Fn() + Sync),
    replay: &RunGroup<'_>,
) -> Vec<CellOutcome> {
    let runs_us = runs.max(1) as usize;
    // Shapes of each run among `cells`, in shape order.
    let mut by_run: Vec<Vec<usize>> = vec![Vec::new(); runs_us];
    for &k in cells {
        by_run[k % runs_us].push(k / runs_us);
    }
    let busy_runs = by_run.iter().filter(|v| !v.is_empty()).count().max(1);
    // At least ~4 items per thread, never splitting a run finer than one shape.
    let per_run = (4 * rayon::current_num_threads()).div_ceil(busy_runs);
    let mut items: Vec<(u32, Vec<usize>)> = Vec::new();
    for (r, shapes) in by_run.iter().enumerate() {
        if shapes.is_empty() {
            continue;
        }
        let size = shapes.len().div_ceil(per_run.clamp(1, shapes.len()));
        for group in shapes.chunks(size) {
            items.push((r as u32, group.to_vec()));
        }
    }
    let done: Vec<Vec<(usize, CellOutcome)>> = items
        .par_iter()
        .map(|(r, group)| {
            let run_seed = derive_seed(seed, &[u64::from(*r)]);
            let group_configs: Vec<EstimatorConfig> = group.iter().map(|&c| configs[c]).collect();
            let outs = replay(
                &group_configs,
                derive_seed(run_seed, &[stream::WORKLOAD]),
                derive_seed(run_seed, &[stream::HASH]),
            );
            group
                .iter()
                .zip(outs)
                .map(|(&c, o)| {
                    on_cell();
                    (cell_index(c, *r, runs), o)
                })
                .collect()
        })
        .collect();
    let mut by_cell: std::collections::BTreeMap<usize, CellOutcome> =
        done.into_iter().flatten().collect();
    cells.iter().filter_map(|k| by_cell.remove(k)).collect()
}

/// Summarises the outcomes of every cell (indexed as [`cell_index`]) into one
/// row per shape, in shape order.
pub fn rows(configs: &[EstimatorConfig], runs: u32, outcomes: &[CellOutcome]) -> Vec<Row> {
    configs
        .iter()
        .enumerate()
        .map(|(c, config)| {
            let runs_of: Vec<&CellOutcome> = outcomes[c * runs as usize..(c + 1) * runs as usize]
                .iter()
                .collect();
            let stats: Vec<ErrorStats> = runs_of.iter().map(|o| o.stats).collect();
            let n = runs_of.len() as f64;
            let avg = |f: &dyn Fn(&CellOutcome) -> &Vec<f64>| -> Vec<f64> {
                let len = runs_of.iter().map(|o| f(o).len()).min().unwrap_or(0);
                (0..len)
                    .map(|i| runs_of.iter().map(|o| f(o)[i]).sum::<f64>() / n)
                    .collect()
            };
            Row {
                backend: Backend::Model,
                label: None,
                config: *config,
                summary: summarize(&stats),
                bound: runs_of.iter().map(|o| o.bound).sum::<f64>() / n,
                faults: runs_of.iter().filter(|o| o.fault.is_some()).count() as u32,
                fault: runs_of.iter().find_map(|o| o.fault.clone()),
                rank_bin_means: avg(&|o| &o.rank_bin_means),
                quantiles: avg(&|o| &o.quantiles),
            }
        })
        .collect()
}

/// The sweep on the real crate: same streams as the model's runs (one drawn
/// stream per run, fed to every shape), random hashers (statistical rows).
pub fn sweep_crate(
    workload: &Workload,
    configs: &[EstimatorConfig],
    runs: u32,
    seed: u64,
) -> Vec<Row> {
    let all: Vec<usize> = (0..configs.len() * runs as usize).collect();
    let outcomes = by_run_groups(
        configs,
        runs,
        seed,
        &all,
        &|| {},
        &|group, workload_seed, _| replay_run_crate(workload, group, workload_seed),
    );
    let mut out = rows(configs, runs, &outcomes);
    for r in &mut out {
        r.backend = Backend::PingoraLimits;
    }
    out
}

/// The workload facts of run 0 (identical in every run for exact-count
/// shapes).
pub fn replay_summary(workload: &Workload, seed: u64) -> WorkloadSummary {
    let run_seed = derive_seed(seed, &[0]);
    WorkloadSummary::of_counts(&workload.counts(derive_seed(run_seed, &[stream::WORKLOAD])))
}
