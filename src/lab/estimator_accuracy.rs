//! `estimator_accuracy`: replay a count workload through count-min sketches of
//! several shapes and compare every key's estimate with its exact count
//! (EXPERIMENTS.md A1).
//!
//! Sweep cells are (shape, variant, run). Each cell's seeds derive from the
//! scenario seed and the run index only — the workload order and the hash
//! seeds of run r are the same for every shape, so shapes are compared on
//! common random numbers — and cells are collected in a fixed order, so the
//! report does not depend on the thread count.

use super::{report_head, RunContext};
use crate::error::Result;
use crate::hash::HasherKind;
use crate::metrics::{count_min_bound, error_stats, summarize, ErrorStats, RunSummary};
use crate::model::estimator::{Estimator, EstimatorConfig, Fault, Overflow, Variant};
use crate::report::chart::{render, ChartSpec, Legend, Series, SeriesStyle};
use crate::report::{Output, Table};
use crate::rng::{derive_seed, stream};
use crate::scenario::Scenario;
use crate::workload::counts::WorkloadSummary;
use crate::workload::{CountWorkload, Workload};
use rayon::prelude::*;
use serde::Deserialize;
use serde_json::json;

/// Scenario parameters of `estimator_accuracy`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The workload.
    pub workload: CountWorkload,
    /// Explicit shapes, in table order.
    #[serde(default)]
    pub configs: Vec<Shape>,
    /// A grid of shapes (every hashes × every slots), after `configs`.
    #[serde(default)]
    pub grid: Option<Grid>,
    /// Update rules to compare (default: pingora's count-min only).
    #[serde(default = "default_variants")]
    pub variants: Vec<Variant>,
    /// Hash family of the rows.
    #[serde(default)]
    pub hasher: HasherKind,
    /// Overflow behaviour.
    #[serde(default)]
    pub overflow: Overflow,
    /// Which implementations to measure (default: the model only). Rows of
    /// `pingora_limits` use the real crate, whose hashers are seeded from
    /// the OS at random: they are statistical, not reproducible, so a
    /// scenario that asks for them is outside the byte-identical guarantee
    /// (give those rows an `ignore` tolerance for `ratelab check`).
    #[serde(default = "default_backends")]
    pub backends: Vec<Backend>,
}

/// An implementation of the count-min sketch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// ratelab's model (seeded, deterministic).
    #[default]
    Model,
    /// The real `pingora_limits::estimator::Estimator` (random hashers).
    PingoraLimits,
}

impl Backend {
    /// Name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Model => "model",
            Backend::PingoraLimits => "pingora_limits",
        }
    }
}

fn default_backends() -> Vec<Backend> {
    vec![Backend::Model]
}

fn default_variants() -> Vec<Variant> {
    vec![Variant::CountMin]
}

/// One sketch shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shape {
    /// Rows.
    pub hashes: u64,
    /// Counters per row.
    pub slots: u64,
}

/// Every combination of the listed hashes and slots.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grid {
    /// Row counts.
    pub hashes: Vec<u64>,
    /// Slot counts.
    pub slots: Vec<u64>,
}

/// Most rows a sketch may have.
pub const MAX_HASHES: u64 = 64;

/// Validates a shape against the memory cap; `field` names it in errors.
pub fn validate_shape(
    scenario: &Scenario,
    field: &str,
    shape: Shape,
    max_memory: u64,
) -> Result<EstimatorConfig> {
    if shape.hashes == 0 || shape.hashes > MAX_HASHES {
        return Err(scenario.field_error(
            format!("{field}.hashes"),
            format!("value {}: expected 1..={MAX_HASHES}", shape.hashes),
        ));
    }
    if shape.slots == 0 {
        return Err(scenario.field_error(
            format!("{field}.slots"),
            "value 0: expected at least 1 slot",
        ));
    }
    let memory = shape.hashes.saturating_mul(shape.slots).saturating_mul(8);
    if memory > max_memory {
        return Err(scenario.field_error(
            field,
            format!(
                "{}x{} needs {} of counters, over the memory cap of {} (raise it with --max-memory)",
                shape.hashes,
                shape.slots,
                bytes_human(memory),
                bytes_human(max_memory)
            ),
        ));
    }
    if shape.hashes.saturating_mul(shape.slots) > u64::from(u32::MAX) {
        return Err(scenario.field_error(
            field,
            format!(
                "{}x{} has more than 2^32 counters",
                shape.hashes, shape.slots
            ),
        ));
    }
    Ok(EstimatorConfig::new(
        shape.hashes as usize,
        shape.slots as usize,
    ))
}

/// "64KiB"-style sizes as the document prints them.
pub fn kib(bytes: u64) -> String {
    format!("{}KiB", bytes / 1024)
}

/// Human sizes for messages.
pub fn bytes_human(b: u64) -> String {
    match b {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}

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
    /// Error quantiles at `i / QUANTILES` for i in 0..=QUANTILES.
    pub quantiles: Vec<f64>,
}

/// Resolution of the stored error distribution.
pub const QUANTILES: usize = 200;

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
fn rank_order(truth: &[u64]) -> Vec<u32> {
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

/// Error statistics of per-key estimates (`estimate(key)`) against the exact
/// counts, keys taken in rank order.
fn outcome_of(
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
            .map(|i| sorted[(i * (sorted.len() - 1)) / QUANTILES] as f64)
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

/// One row of the table: a shape and variant summarised over runs.
#[derive(Debug, Clone)]
pub struct Row {
    /// Which implementation.
    pub backend: Backend,
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

/// Runs the sweep of `configs` × `runs` on `workload`, in parallel, in a fixed
/// result order. `on_cell` is called after each cell (for progress).
pub fn sweep(
    workload: &Workload,
    configs: &[EstimatorConfig],
    runs: u32,
    seed: u64,
    on_cell: &(dyn Fn() + Sync),
) -> Vec<Row> {
    let all: Vec<usize> = (0..configs.len() * runs as usize).collect();
    let outcomes = sweep_cells(workload, configs, runs, seed, &all, on_cell);
    rows(configs, runs, &outcomes)
}

/// The sweep cell index of shape `c` in run `r`: `c * runs + r` (the order of
/// the outcomes [`rows`] takes).
pub fn cell_index(c: usize, r: u32, runs: u32) -> usize {
    c * runs as usize + r as usize
}

/// Replays the sweep cells `cells` (indices as [`cell_index`]) and returns
/// their outcomes in the order of `cells`. Cells of the same run share one
/// generated stream ([`replay_run`]); the work items are (run, group of
/// shapes), split so every thread has work. No outcome depends on the
/// grouping or the thread count.
pub fn sweep_cells(
    workload: &Workload,
    configs: &[EstimatorConfig],
    runs: u32,
    seed: u64,
    cells: &[usize],
    on_cell: &(dyn Fn() + Sync),
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
            let outs = replay_run(
                workload,
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

/// The scenario's shapes × variants, validated, in table order.
pub fn configs(scenario: &Scenario, p: &Params, max_memory: u64) -> Result<Vec<EstimatorConfig>> {
    let mut shapes: Vec<(String, Shape)> = p
        .configs
        .iter()
        .enumerate()
        .map(|(i, s)| (format!("configs[{i}]"), *s))
        .collect();
    if let Some(g) = &p.grid {
        for &hashes in &g.hashes {
            for &slots in &g.slots {
                shapes.push(("grid".to_string(), Shape { hashes, slots }));
            }
        }
    }
    if shapes.is_empty() {
        return Err(scenario.field_error("configs", "no sketch shapes: give `configs` or `grid`"));
    }
    if p.variants.is_empty() {
        return Err(scenario.field_error(
            "variants",
            "empty: expected at least one of count_min, conservative",
        ));
    }
    let mut out = Vec::new();
    for variant in &p.variants {
        for (field, shape) in &shapes {
            let mut c = validate_shape(scenario, field, *shape, max_memory)?;
            c.variant = *variant;
            c.hasher = p.hasher;
            c.overflow = p.overflow;
            out.push(c);
        }
    }
    Ok(out)
}

/// A validated `estimator_accuracy` scenario, ready to replay.
struct Prepared {
    p: Params,
    workload: Workload,
    configs: Vec<EstimatorConfig>,
    runs: u32,
}

fn prepare(scenario: &Scenario, ctx: &RunContext) -> Result<Prepared> {
    let p: Params = scenario.params()?;
    let workload = p.workload.build(&scenario.path, "workload")?;
    let configs = configs(scenario, &p, ctx.max_memory)?;
    let runs = ctx.runs(scenario, 5);
    let oracle_bytes = (workload.key_space() as u64).saturating_mul(8 + 4 * MAX_HASHES.min(8));
    if oracle_bytes > ctx.max_memory {
        return Err(scenario.field_error("workload", format!(
            "{} keys need {} for the exact oracle and key table, over the memory cap of {} (raise it with --max-memory)",
            workload.key_space(), bytes_human(oracle_bytes), bytes_human(ctx.max_memory))));
    }
    Ok(Prepared {
        p,
        workload,
        configs,
        runs,
    })
}

/// The sweep replays the whole stream once per cell (shape × variant ×
/// backend × run).
fn check_sweep_work(
    scenario: &Scenario,
    ctx: &RunContext,
    workload: &Workload,
    cells: usize,
    runs: u32,
) -> Result<()> {
    let events = workload.events() as f64;
    ctx.check_work(
        scenario,
        "workload",
        events * cells as f64 * f64::from(runs),
        2.0,
        &format!("{events} events x {cells} sketches x {runs} runs"),
    )
}

/// Runs an `estimator_accuracy` scenario.
pub fn run(scenario: &Scenario, ctx: &RunContext) -> Result<Output> {
    let Prepared {
        p,
        workload,
        configs,
        runs,
    } = prepare(scenario, ctx)?;
    let progress = ctx.progress(
        configs.len() as u64 * u64::from(runs),
        &scenario.common.name,
    );
    if p.backends.is_empty() {
        return Err(scenario.field_error(
            "backends",
            "empty: expected at least one of model, pingora_limits",
        ));
    }
    check_sweep_work(
        scenario,
        ctx,
        &workload,
        configs.len() * p.backends.len(),
        runs,
    )?;
    let mut rows = Vec::new();
    if p.backends.contains(&Backend::Model) {
        rows.extend(sweep(&workload, &configs, runs, ctx.seed, &|| {
            progress.inc(1)
        }));
    }
    if p.backends.contains(&Backend::PingoraLimits) {
        rows.extend(sweep_crate(&workload, &configs, runs, ctx.seed));
    }
    progress.finish();
    // The workload facts of run 0 (identical in every run for exact-count shapes).
    let first = replay_summary(&workload, ctx.seed);
    Ok(render_output(scenario, ctx, &p, runs, first, &rows))
}

/// The sweep on the real crate: same streams as the model's runs, random
/// hashers (statistical rows).
pub fn sweep_crate(
    workload: &Workload,
    configs: &[EstimatorConfig],
    runs: u32,
    seed: u64,
) -> Vec<Row> {
    let cells: Vec<(usize, u32)> = (0..configs.len())
        .flat_map(|c| (0..runs).map(move |r| (c, r)))
        .collect();
    let outcomes: Vec<CellOutcome> = cells
        .par_iter()
        .map(|&(c, r)| {
            let run_seed = derive_seed(seed, &[u64::from(r)]);
            replay_cell_crate(
                workload,
                configs[c],
                derive_seed(run_seed, &[stream::WORKLOAD]),
            )
        })
        .collect();
    let mut out = rows(configs, runs, &outcomes);
    for r in &mut out {
        r.backend = Backend::PingoraLimits;
    }
    out
}

/// What a shard replayed: runs, run 0's workload facts (shard 0 only), and
/// (cell index, outcome) pairs.
pub type ShardOutcomes = (u32, Option<WorkloadSummary>, Vec<(usize, CellOutcome)>);

/// Replays only the sweep cells of `shard` (cell `k = shape * runs + run`
/// goes to shard `k mod n`). Returns the runs, the workload facts of run 0
/// (computed by shard 0 only) and the cells with their outcomes.
pub fn run_shard(
    scenario: &Scenario,
    ctx: &RunContext,
    shard: super::shard::Shard,
) -> Result<ShardOutcomes> {
    let Prepared {
        workload,
        configs,
        runs,
        ..
    } = prepare(scenario, ctx)?;
    let cells: Vec<usize> = (0..configs.len() * runs as usize)
        .filter(|&k| shard.owns(k))
        .collect();
    check_sweep_work(scenario, ctx, &workload, cells.len(), 1)?;
    let progress = ctx.progress(cells.len() as u64, &scenario.common.name);
    let outcomes = sweep_cells(&workload, &configs, runs, ctx.seed, &cells, &|| {
        progress.inc(1)
    });
    progress.finish();
    let first = (shard.index == 0).then(|| replay_summary(&workload, ctx.seed));
    Ok((runs, first, cells.into_iter().zip(outcomes).collect()))
}

/// The report of a sharded run from every cell's outcome (in cell order),
/// exactly as [`run`] renders it. The workload is not rebuilt.
pub fn merge_output(
    scenario: &Scenario,
    ctx: &RunContext,
    runs: u32,
    first: WorkloadSummary,
    outcomes: &[CellOutcome],
) -> Result<Output> {
    let p: Params = scenario.params()?;
    let configs = configs(scenario, &p, u64::MAX)?;
    if outcomes.len() != configs.len() * runs as usize {
        return Err(crate::error::Error::input(format!(
            "{}: {} cells merged, expected {} shapes x {runs} runs = {}",
            scenario.common.name,
            outcomes.len(),
            configs.len(),
            configs.len() * runs as usize
        )));
    }
    let rows = rows(&configs, runs, outcomes);
    Ok(render_output(scenario, ctx, &p, runs, first, &rows))
}

fn replay_summary(workload: &Workload, seed: u64) -> WorkloadSummary {
    if let Some(c) = workload.exact_counts() {
        return WorkloadSummary::of_counts(c);
    }
    let mut truth = vec![0u64; workload.key_space()];
    let run_seed = derive_seed(seed, &[0]);
    workload.for_each_event(derive_seed(run_seed, &[stream::WORKLOAD]), |k| {
        truth[k as usize] += 1
    });
    WorkloadSummary::of_counts(&truth)
}

fn fmt_pct(v: f64) -> String {
    format!("{v:.1}%")
}

fn render_output(
    scenario: &Scenario,
    ctx: &RunContext,
    p: &Params,
    runs: u32,
    first: WorkloadSummary,
    rows: &[Row],
) -> Output {
    let multi_variant = p.variants.len() > 1;
    let multi_backend = p.backends != [Backend::Model];
    let label = |r: &Row| {
        let c = &r.config;
        let mut l = if multi_variant {
            format!("{}x{} {}", c.hashes, c.slots, c.variant.name())
        } else {
            format!("{}x{}", c.hashes, c.slots)
        };
        if multi_backend {
            l.push(' ');
            l.push_str(r.backend.name());
        }
        l
    };
    // Main table, in the document's layout (p99 and max: per-run values averaged).
    let mut head = vec![
        "hashes", "slots", "memory", "exact%", "mean", "p99", "max", "e*N/w",
    ];
    if multi_variant {
        head.insert(0, "variant");
    }
    if multi_backend {
        head.insert(0, "backend");
    }
    let mut table = Table::new(head.clone());
    let mut console_table = Table::new(head);
    for r in rows {
        let s = &r.summary;
        let mut cells = vec![
            r.config.hashes.to_string(),
            r.config.slots.to_string(),
            kib(r.config.memory_bytes()),
            fmt_pct(s.exact_pct.mean),
            format!("{:.1}", s.mean.mean),
            format!("{:.0}", s.p99.mean),
            format!("{:.0}", s.max.mean),
            format!("{:.0}", r.bound),
        ];
        if multi_variant {
            cells.insert(0, r.config.variant.name().to_string());
        }
        if multi_backend {
            cells.insert(0, r.backend.name().to_string());
        }
        table.push(cells.clone());
        console_table.push(cells);
    }
    let mut noise = Table::new([
        "config",
        "exact% std",
        "mean std",
        "p99 std",
        "max std",
        "over bound%",
        "theory e^-h",
    ]);
    for r in rows {
        let s = &r.summary;
        noise.push([
            label(r),
            format!("{:.2}", s.exact_pct.std),
            format!("{:.2}", s.mean.std),
            format!("{:.1}", s.p99.std),
            format!("{:.1}", s.max.std),
            format!("{:.3}%", s.over_bound_pct.mean),
            format!("{:.3}%", 100.0 * libm::exp(-(r.config.hashes as f64))),
        ]);
    }
    let avg_count = first.events as f64 / first.keys.max(1) as f64;
    let mut md = format!("# {}\n\n", scenario.common.name);
    if !scenario.common.description.is_empty() {
        md.push_str(&format!("{}\n\n", scenario.common.description));
    }
    md.push_str(&format!(
        "{}. {} runs (fresh hash seeds each, {} hasher, {} overflow); p99 and max are per-run values averaged over the runs. Average true count per key: {:.1}.\n\n",
        first.headline(), runs, p.hasher.name(), match p.overflow { Overflow::Wrapping => "wrapping", Overflow::Checked => "checked" }, avg_count
    ));
    md.push_str(&table.markdown());
    md.push_str("\n## Run-to-run noise and the count-min bound\n\nStandard deviation over runs of each statistic, and the share of keys whose error exceeds e·N/w against the theory's ceiling e^-hashes.\n\n");
    md.push_str(&noise.markdown());
    let faulted: Vec<&Row> = rows.iter().filter(|r| r.faults > 0).collect();
    if !faulted.is_empty() {
        md.push_str("\n## Faults\n\n");
        for r in faulted {
            if let Some(f) = &r.fault {
                md.push_str(&format!(
                    "- {}: {} of {} runs: {}\n",
                    label(r),
                    r.faults,
                    runs,
                    f
                ));
            }
        }
    }
    if multi_backend {
        md.push_str(&model_vs_crate(rows, runs));
    }
    md.push_str("\n## Charts\n\n- `error_vs_rank`: mean overcount by key rank (1 = busiest key), log-log. Cold keys (high rank) carry the error: their true counts are small and any hot key sharing their cell in every row inflates them.\n- `error_cdf`: share of keys whose error is at most x.\n- `error_vs_memory`: mean error against memory; points on the same memory differ in rows vs slots.\n");

    let json_rows: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            let s = &r.summary;
            let mut o = json!({
                "variant": r.config.variant.name(),
                "hashes": r.config.hashes,
                "slots": r.config.slots,
                "memory_bytes": r.config.memory_bytes(),
                "exact_pct": s.exact_pct.mean,
                "mean": s.mean.mean,
                "p99": s.p99.mean,
                "max": s.max.mean,
                "bound_enw": r.bound,
                "over_bound_pct": s.over_bound_pct.mean,
                "bound_theory_pct": 100.0 * libm::exp(-(r.config.hashes as f64)),
                "faults": r.faults,
                "fault": r.fault.as_ref().map(|f| f.to_string()),
                "std": {
                    "exact_pct": s.exact_pct.std,
                    "mean": s.mean.std,
                    "p99": s.p99.std,
                    "max": s.max.std,
                    "over_bound_pct": s.over_bound_pct.std,
                },
            });
            if multi_backend {
                o["backend"] = r.backend.name().into();
                o["deterministic"] = (r.backend == Backend::Model).into();
            }
            o
        })
        .collect();
    let mut j = report_head(scenario, ctx, Some(runs));
    j.insert("hasher".into(), p.hasher.name().into());
    j.insert(
        "overflow".into(),
        serde_json::to_value(p.overflow).unwrap_or_default(),
    );
    j.insert("workload".into(), first.report_json(&p.workload));
    j.insert("rows".into(), serde_json::Value::Array(json_rows));

    let charts = charts(rows, &label, first.keys as usize);
    Output {
        json: serde_json::Value::Object(j),
        table_md: md,
        table_csv: table.csv(),
        charts,
        console: format!("{}\n{}", first.headline(), console_table.text()),
        extra_files: Vec::new(),
    }
}

fn charts(rows: &[Row], label: &dyn Fn(&Row) -> String, keys: usize) -> Vec<crate::report::Chart> {
    let bins = rank_bins(keys);
    let mut by_rank = ChartSpec::new(
        "error_vs_rank",
        "Overcount by key rank (mean over runs)",
        "key rank (1 = busiest key, log scale)",
        "mean error = estimate - true count (log; 0 drawn at 0.1)",
    );
    by_rank.x_log = true;
    by_rank.y_log = true;
    by_rank.legend = Legend::UpperLeft;
    let mut cdf = ChartSpec::new(
        "error_cdf",
        "Distribution of per-key error",
        "error = estimate - true count (log; 0 drawn at 0.1)",
        "keys with error <= x (%)",
    );
    cdf.x_log = true;
    cdf.legend = Legend::LowerRight;
    cdf.y_range = Some((0.0, 100.0));
    let mut mem = ChartSpec::new(
        "error_vs_memory",
        "Mean error vs sketch memory",
        "memory (KiB, log scale)",
        "mean error per key (log; 0 drawn at 0.01)",
    );
    mem.x_log = true;
    mem.y_log = true;
    mem.log_floor = 0.01;
    for (i, r) in rows.iter().enumerate() {
        let pts = bins
            .iter()
            .zip(&r.rank_bin_means)
            .map(|(&(s, e), &m)| (((s * (e - 1)) as f64).sqrt(), m))
            .collect();
        let mut s = Series::new(label(r), pts, SeriesStyle::Line);
        s.color = Some(i);
        by_rank.series.push(s);
        let q = &r.quantiles;
        let pts = q
            .iter()
            .enumerate()
            .map(|(k, &x)| (x, 100.0 * k as f64 / (q.len().max(2) - 1) as f64))
            .collect();
        let mut s = Series::new(label(r), pts, SeriesStyle::Step);
        s.color = Some(i);
        cdf.series.push(s);
    }
    // Memory chart: one series per (variant, hashes), points labelled by shape.
    let mut groups: Vec<(String, Vec<&Row>)> = Vec::new();
    for r in rows {
        let g = format!(
            "{} rows{}",
            r.config.hashes,
            if rows.iter().any(|o| o.config.variant != r.config.variant) {
                format!(" {}", r.config.variant.name())
            } else {
                String::new()
            }
        );
        match groups.iter_mut().find(|(name, _)| *name == g) {
            Some((_, v)) => v.push(r),
            None => groups.push((g, vec![r])),
        }
    }
    for (name, mut group) in groups {
        group.sort_by_key(|r| r.config.memory_bytes());
        let pts = group
            .iter()
            .map(|r| (r.config.memory_bytes() as f64 / 1024.0, r.summary.mean.mean))
            .collect();
        let mut s = Series::new(name, pts, SeriesStyle::LinePoints);
        s.point_labels = Some(
            group
                .iter()
                .map(|r| format!(" {}x{}", r.config.hashes, r.config.slots))
                .collect(),
        );
        mem.series.push(s);
    }
    [by_rank, cdf, mem]
        .iter()
        .filter_map(|spec| render(spec).ok())
        .collect()
}

fn model_vs_crate(rows: &[Row], runs: u32) -> String {
    let mut t = Table::new([
        "shape",
        "model mean error",
        "pingora_limits mean error",
        "difference",
        "within noise",
    ]);
    let mut all = true;
    let mut any = false;
    for m in rows.iter().filter(|r| r.backend == Backend::Model) {
        let Some(c) = rows
            .iter()
            .find(|r| r.backend == Backend::PingoraLimits && r.config == m.config)
        else {
            continue;
        };
        any = true;
        let (a, b) = (&m.summary.mean, &c.summary.mean);
        let se = ((a.std * a.std + b.std * b.std) / f64::from(runs.max(1))).sqrt();
        let ok = (a.mean - b.mean).abs() <= 3.0 * se + 0.02 * a.mean.abs().max(b.mean.abs()) + 0.05;
        all &= ok;
        t.push([
            format!("{}x{}", m.config.hashes, m.config.slots),
            format!("{:.2} ± {:.2}", a.mean, a.std),
            format!("{:.2} ± {:.2}", b.mean, b.std),
            format!("{:+.2}", b.mean - a.mean),
            if ok { "yes" } else { "NO" }.to_string(),
        ]);
    }
    if !any {
        return String::new();
    }
    format!(
        "\n## Model vs the real crate\n\nRows marked `pingora_limits` ran the real `pingora_limits::estimator::Estimator` (0.9) on the same event stream; its hashers are seeded at random by the OS, so those rows are statistical and differ from run to run (they are excluded from the byte-identical guarantee). Agreement = the means differ by at most 3 standard errors over {runs} runs (+2% of the mean for the different hash family, +0.05). **Verdict: {}**\n\n{}",
        if all {
            "the model agrees with the real crate within noise for every shape."
        } else {
            "the model and the real crate differ beyond noise for at least one shape (marked NO)."
        },
        t.markdown()
    )
}
