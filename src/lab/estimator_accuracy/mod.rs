//! `estimator_accuracy`: replay a count workload through count-min sketches of
//! several shapes and compare every key's estimate with its exact count.
//!
//! Sweep cells are (shape, variant, run). Each cell's seeds derive from the
//! scenario seed and the run index only — the workload order and the hash
//! seeds of run r are the same for every shape, so shapes are compared on
//! common random numbers — and cells are collected in a fixed order, so the
//! report does not depend on the thread count. The cells can be split across
//! processes ([`run_cells`], [`merge_output`]; see [`crate::lab::shard`]).

mod agreement;
mod evaluator;
pub(crate) mod exec;
mod params;
mod render;
mod replay;
mod sweep;

pub use evaluator::Evaluator;
pub use params::{configs, validate_shape, Backend, Grid, Params, Shape, MAX_HASHES};
pub use replay::{
    quantile_at, rank_bins, replay_cell, replay_cell_crate, replay_errors, replay_estimator,
    replay_run, replay_run_crate, CellOutcome, QUANTILES,
};
pub use sweep::{cell_index, replay_summary, rows, sweep, sweep_cells, sweep_crate, Row};

use super::experiment::Experiment;
use super::RunContext;
use crate::error::Result;
use crate::lab::ReplayMode;
use crate::model::estimator::{Estimator, EstimatorConfig};
use crate::report::fmt::bytes_human;
use crate::report::Output;
use crate::scenario::Scenario;
use crate::workload::counts::WorkloadSummary;
use crate::workload::Workload;

/// A validated `estimator_accuracy` scenario, ready to replay.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The parameters.
    pub p: Params,
    /// The built workload.
    pub workload: Workload,
    /// The shapes × variants, in table order.
    pub configs: Vec<EstimatorConfig>,
    /// Runs.
    pub runs: u32,
}

/// What a whole sweep measured.
#[derive(Debug, Clone)]
pub struct Measured {
    /// One row per (backend, shape).
    pub rows: Vec<Row>,
    /// Run 0's workload facts.
    pub first: WorkloadSummary,
}

/// The `estimator_accuracy` kind: count-min error against exact counts over
/// a grid of shapes.
pub struct EstimatorAccuracy;

impl Experiment for EstimatorAccuracy {
    type Params = Params;
    type Plan = Plan;
    type Outcome = Measured;

    fn validate(scenario: &Scenario, p: Params, ctx: &RunContext) -> Result<Plan> {
        let plan = prepare(scenario, p, ctx)?;
        if plan.p.backends.is_empty() && plan.p.estimators.is_empty() {
            return Err(scenario.field_error(
                "backends",
                "empty: expected at least one of model, pingora_limits (or an `estimators` entry)",
            ));
        }
        exec::entries(scenario, &plan.p.estimators)?;
        Ok(plan)
    }

    fn estimate_work(scenario: &Scenario, plan: &Plan, ctx: &RunContext) -> Result<()> {
        let mut cells = Vec::new();
        for b in &plan.p.backends {
            cells.extend(
                plan.configs
                    .iter()
                    .map(|&c| (c, *b == Backend::PingoraLimits)),
            );
        }
        // A sketch of one's own (`exec`) replays every event, as the crate.
        for _ in &plan.p.estimators {
            cells.extend(plan.configs.iter().map(|&c| (c, true)));
        }
        check_sweep_work(scenario, ctx, &plan.workload, &cells, plan.runs)
    }

    fn run(scenario: &Scenario, plan: &Plan, ctx: &RunContext) -> Result<Measured> {
        let Plan {
            p,
            workload,
            configs,
            runs,
        } = plan;
        let progress = ctx.progress(
            configs.len() as u64 * u64::from(*runs),
            &scenario.common.name,
        );
        let mut rows = Vec::new();
        if p.backends.contains(&Backend::Model) {
            rows.extend(sweep(
                workload,
                configs,
                *runs,
                ctx.seed,
                ctx.replay,
                &|| progress.inc(1),
            ));
        }
        if p.backends.contains(&Backend::PingoraLimits) {
            rows.extend(sweep_crate(workload, configs, *runs, ctx.seed));
        }
        progress.finish();
        rows.extend(exec::exec_rows(
            scenario,
            workload,
            configs,
            *runs,
            ctx.seed,
            &p.estimators,
        )?);
        let first = replay_summary(workload, ctx.seed);
        Ok(Measured { rows, first })
    }

    fn render(scenario: &Scenario, plan: &Plan, ctx: &RunContext, m: Measured) -> Result<Output> {
        render::render_output(scenario, ctx, &plan.p, plan.runs, m.first, &m.rows)
    }
}

/// Builds the workload and the shapes, and checks that the exact oracle
/// fits in memory.
fn prepare(scenario: &Scenario, p: Params, ctx: &RunContext) -> Result<Plan> {
    let workload = p.workload.build(&scenario.path, "workload")?;
    let configs = configs(scenario, &p, ctx.max_memory)?;
    let runs = ctx.runs(scenario, 5);
    // exact counts, a sampled workload's conditional probabilities, one row's
    // hashes and an estimate per key, the key table of a replayed sketch
    let oracle_bytes =
        (workload.key_space() as u64).saturating_mul(8 + 16 + 8 + 8 + 4 * MAX_HASHES.min(8));
    if oracle_bytes > ctx.max_memory {
        return Err(scenario.field_error("workload", format!(
            "{} keys need {} for the exact oracle and key table, over the memory cap of {} (raise it with --max-memory)",
            workload.key_space(), bytes_human(oracle_bytes), bytes_human(ctx.max_memory))));
    }
    Ok(Plan {
        p,
        workload,
        configs,
        runs,
    })
}

/// The work of a sweep: per run, the counts (O(keys)) and, when some sketch
/// replays events, the stream; per cell, `keys × hashes` for a sketch
/// evaluated from the counts, `events` for one that replays (every
/// `pingora_limits` row, a custom estimator, conservative update, and every
/// sketch under `--replay events`). `cells` lists each cell's shape and
/// whether it is forced to replay.
fn check_sweep_work(
    scenario: &Scenario,
    ctx: &RunContext,
    workload: &Workload,
    cells: &[(EstimatorConfig, bool)],
    runs: u32,
) -> Result<()> {
    let events = workload.events();
    let keys = workload.key_space() as f64;
    let by_counts =
        |c: &EstimatorConfig| ctx.replay == ReplayMode::Auto && Estimator::order_free(c, events);
    let replayed = cells
        .iter()
        .filter(|(c, forced)| *forced || !by_counts(c))
        .count();
    let per_key: f64 = cells
        .iter()
        .filter(|(c, forced)| !*forced && by_counts(c))
        .fold(0.0, |sum, (c, _)| sum + keys * c.hashes as f64);
    let events = events as f64;
    let stream = if replayed > 0 { events } else { 0.0 };
    let steps =
        f64::from(runs) * (keys + stream + per_key) + events * replayed as f64 * f64::from(runs);
    ctx.check_work(
        scenario,
        "workload",
        steps,
        2.0,
        &format!(
            "{runs} runs x ({keys} keys + {stream} stream events + {per_key} key-rows by counts) + {events} events x {replayed} replayed sketches x {runs} runs"
        ),
    )
}

/// Runs an `estimator_accuracy` scenario's workload through an estimator
/// of your own: `make(hash_seed)` builds one per run, fed the same stream
/// (the same seeds) as the model's rows of that run. Returns one outcome per
/// run, with the count-min bound of `slots` counters per row. How a sketch
/// from outside `src/` is measured against exact counts, next to
/// [`EstimatorAccuracy`]'s rows ([`sweep`]).
pub fn run_with_estimator(
    scenario: &Scenario,
    ctx: &RunContext,
    slots: usize,
    make: &dyn Fn(u64) -> Result<Box<dyn crate::model::estimator::FrequencyEstimator>>,
) -> Result<Vec<CellOutcome>> {
    let plan = prepare(scenario, scenario.params()?, ctx)?;
    let one = EstimatorConfig::new(1, slots.max(1));
    check_sweep_work(scenario, ctx, &plan.workload, &[(one, true)], plan.runs)?;
    (0..plan.runs)
        .map(|r| {
            let run_seed = crate::rng::derive_seed(ctx.seed, &[u64::from(r)]);
            let mut est = make(crate::rng::derive_seed(
                run_seed,
                &[crate::rng::stream::HASH],
            ))?;
            Ok(replay_estimator(
                &plan.workload,
                est.as_mut(),
                slots,
                crate::rng::derive_seed(run_seed, &[crate::rng::stream::WORKLOAD]),
            ))
        })
        .collect()
}

/// What a share of the sweep replayed: runs, run 0's workload facts (when
/// asked for), and (cell index, outcome) pairs.
pub type ShardOutcomes = (u32, Option<WorkloadSummary>, Vec<(usize, CellOutcome)>);

/// Replays only the sweep cells `k` (numbered `k = shape * runs + run`, see
/// [`cell_index`]) for which `owns(k)` holds. Returns the runs, the workload
/// facts of run 0 if `with_first` (one share computes them) and the cells
/// with their outcomes.
pub fn run_cells(
    scenario: &Scenario,
    ctx: &RunContext,
    owns: impl Fn(usize) -> bool,
    with_first: bool,
) -> Result<ShardOutcomes> {
    let Plan {
        p,
        workload,
        configs,
        runs,
    } = prepare(scenario, scenario.params()?, ctx)?;
    if !p.estimators.is_empty() {
        return Err(scenario.field_error(
            "estimators",
            "sketches of your own (exec) do not shard: run the scenario without --shard",
        ));
    }
    let cells: Vec<usize> = (0..configs.len() * runs as usize)
        .filter(|&k| owns(k))
        .collect();
    let owned: Vec<(EstimatorConfig, bool)> = cells
        .iter()
        .map(|&k| (configs[k / runs.max(1) as usize], false))
        .collect();
    check_sweep_work(scenario, ctx, &workload, &owned, 1)?;
    let progress = ctx.progress(cells.len() as u64, &scenario.common.name);
    let outcomes = sweep_cells(
        &workload,
        &configs,
        runs,
        ctx.seed,
        &cells,
        ctx.replay,
        &|| progress.inc(1),
    );
    progress.finish();
    let first = with_first.then(|| replay_summary(&workload, ctx.seed));
    Ok((runs, first, cells.into_iter().zip(outcomes).collect()))
}

/// The report of a sharded run from every cell's outcome (in cell order),
/// exactly as a whole run ([`EstimatorAccuracy`]) renders it. The workload
/// is not rebuilt.
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
    render::render_output(scenario, ctx, &p, runs, first, &rows)
}
