//! `estimator_characterization`: how a sketch's error is distributed, per
//! frequency rank, over many hash seeds — the way Apache DataSketches
//! characterizes its sketches.
//!
//! The stream is FIXED (run 0's event order and counts); each trial gets fresh
//! hash seeds (`derive_seed(seed, [HASH, trial])`). For log-spaced rank bins
//! (1 = busiest key; `min_bin_keys` > 1 pools adjacent ranks so cold ranks
//! get many samples per trial) the report gives the error quantiles at the normal
//! equivalents of ±1, ±2, ±3 standard deviations (0.00135, 0.02275, 0.15866,
//! 0.5, 0.84134, 0.97725, 0.99865; nearest rank over every trial's errors of
//! the bin's keys) and the share of those errors above e·N/w. The chart ("pitchfork")
//! draws the quantile contours against rank, with the bound dashed.
//!
//! Trials double from `min_trials` (8, 16, 32, ...) until the contours are
//! stable or `max_trials` is reached. Stable: from T to 2T trials, every
//! contour value at every rank moved by at most `tolerance_pct` % of its value
//! or the floor max(`abs_floor` events, `floor_bound_pct` % of e·N/w),
//! whichever is larger. Rounds reuse earlier trials, so
//! the result is the same as one run of the final trial count. While running
//! (progress enabled, on a terminal) an intermediate table and an estimated
//! time to finish go to stderr; the report holds no timings.

mod bins;
mod render;
mod trials;

pub use trials::Ranked;

use super::estimator_accuracy::Shape;
use super::experiment::Experiment;
use super::RunContext;
use crate::error::Result;
use crate::hash::HasherKind;
use crate::lab::estimator_accuracy::Evaluator;
use crate::model::estimator::Variant;
use crate::report::Output;
use crate::scenario::Scenario;
use crate::workload::{CountWorkload, Workload};
use serde::Deserialize;
use std::io::IsTerminal;
use trials::{Characterized, Trials};

/// Scenario parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The workload (its stream is fixed: run 0's).
    pub workload: CountWorkload,
    /// Shapes to characterize (one chart each).
    pub configs: Vec<Shape>,
    /// Update rule.
    #[serde(default)]
    pub variant: Variant,
    /// Hash family.
    #[serde(default)]
    pub hasher: HasherKind,
    /// Number of log-spaced rank bins (before merging small ones).
    #[serde(default = "default_rank_points")]
    pub rank_points: usize,
    /// Adjacent bins are merged until each holds at least this many keys
    /// (1 = one key per rank point, no pooling).
    #[serde(default = "default_min_bin_keys")]
    pub min_bin_keys: usize,
    /// First round's trials.
    #[serde(default = "default_min_trials")]
    pub min_trials: u32,
    /// Most trials.
    #[serde(default = "default_max_trials")]
    pub max_trials: u32,
    /// Stability: largest relative change of any contour value (%).
    #[serde(default = "default_tolerance")]
    pub tolerance_pct: f64,
    /// Stability: changes up to this many events always count as stable.
    #[serde(default = "default_abs_floor")]
    pub abs_floor: f64,
    /// Stability: changes up to this % of the shape's e·N/w always count as
    /// stable (the bound is the natural scale of the error).
    #[serde(default = "default_floor_bound_pct")]
    pub floor_bound_pct: f64,
    /// Also chart each shape's errors relative to the true counts.
    #[serde(default = "default_relative")]
    pub relative: bool,
}

fn default_relative() -> bool {
    true
}

fn default_floor_bound_pct() -> f64 {
    1.0
}

fn default_rank_points() -> usize {
    25
}
fn default_min_bin_keys() -> usize {
    1
}
fn default_min_trials() -> u32 {
    8
}
fn default_max_trials() -> u32 {
    1024
}
fn default_tolerance() -> f64 {
    2.0
}
fn default_abs_floor() -> f64 {
    1.0
}

/// The normal-equivalent quantiles of -3..=+3 standard deviations.
pub const QUANTILES: [f64; 7] = [0.00135, 0.02275, 0.15866, 0.5, 0.84134, 0.97725, 0.99865];
/// Their labels.
pub const QUANTILE_LABELS: [&str; 7] = ["-3σ", "-2σ", "-1σ", "median", "+1σ", "+2σ", "+3σ"];

/// A validated `estimator_characterization` scenario.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The parameters.
    pub params: Params,
    /// The workload (its stream is fixed: run 0's).
    pub workload: Workload,
}

/// What an `estimator_characterization` run measured.
pub struct Measured {
    ranked: Ranked,
    results: Vec<Characterized>,
}

/// The `estimator_characterization` kind: count-min error quantiles by key
/// rank over many hash seeds.
pub struct Characterization;

impl Experiment for Characterization {
    type Params = Params;
    type Plan = Plan;
    type Outcome = Measured;

    fn validate(scenario: &Scenario, p: Params, ctx: &RunContext) -> Result<Plan> {
        let workload = p.workload.build(&scenario.path, "workload")?;
        if p.configs.is_empty() {
            return Err(scenario.field_error(
                "configs",
                "empty: expected at least one {\"hashes\": H, \"slots\": W}",
            ));
        }
        for (i, s) in p.configs.iter().enumerate() {
            super::estimator_accuracy::validate_shape(
                scenario,
                &format!("configs[{i}]"),
                *s,
                ctx.max_memory,
            )?;
        }
        if p.min_trials < 2 || p.max_trials < p.min_trials || p.max_trials > 1 << 20 {
            return Err(scenario.field_error(
                "max_trials",
                format!(
                    "min_trials {} / max_trials {}: expected 2 <= min_trials <= max_trials <= {}",
                    p.min_trials,
                    p.max_trials,
                    1u32 << 20
                ),
            ));
        }
        if !(p.tolerance_pct.is_finite() && p.tolerance_pct > 0.0) {
            return Err(scenario.field_error(
                "tolerance_pct",
                format!("value {}: expected a percentage > 0", p.tolerance_pct),
            ));
        }
        if !(p.floor_bound_pct.is_finite() && p.floor_bound_pct >= 0.0) {
            return Err(scenario.field_error(
                "floor_bound_pct",
                format!("value {}: expected a percentage >= 0", p.floor_bound_pct),
            ));
        }
        if !(p.abs_floor.is_finite() && p.abs_floor >= 0.0) {
            return Err(scenario.field_error(
                "abs_floor",
                format!("value {}: expected a number >= 0", p.abs_floor),
            ));
        }
        if !(1..=1000).contains(&p.rank_points) {
            return Err(scenario.field_error(
                "rank_points",
                format!("value {}: expected 1..=1000", p.rank_points),
            ));
        }
        if p.min_bin_keys == 0 {
            return Err(scenario.field_error("min_bin_keys", "value 0: expected at least 1"));
        }
        Ok(Plan {
            params: p,
            workload,
        })
    }

    fn estimate_work(scenario: &Scenario, plan: &Plan, ctx: &RunContext) -> Result<()> {
        let (p, workload) = (&plan.params, &plan.workload);
        // One replay of the stream, then each trial re-hashes every key into
        // every row of the shape.
        let keys = workload.key_space() as f64;
        let hash_rows: f64 = p.configs.iter().map(|s| s.hashes as f64).sum();
        ctx.check_work(
            scenario,
            "max_trials",
            workload.events() as f64 + keys * hash_rows * f64::from(p.max_trials),
            0.5,
            &format!(
                "{} events + {keys} keys x {hash_rows} hash rows x {} trials",
                workload.events(),
                p.max_trials
            ),
        )
    }

    fn run(scenario: &Scenario, plan: &Plan, ctx: &RunContext) -> Result<Measured> {
        let p = &plan.params;
        let ev = Evaluator::new(plan.workload.clone(), p.variant, p.hasher, ctx.seed, 1);
        let ranked = Ranked::of(ev.truth0().to_vec(), p);
        let verbose = ctx.progress && std::io::stdout().is_terminal();
        let progress = ctx.progress(
            p.configs.len() as u64 * u64::from(p.max_trials),
            &scenario.common.name,
        );
        let bin_of = ranked.bin_of();
        let results = p
            .configs
            .iter()
            .map(|shape| {
                let trials = Trials {
                    p,
                    ev: &ev,
                    ranked: &ranked,
                    bin_of: &bin_of,
                    seed: ctx.seed,
                    progress: &progress,
                    replay: ctx.replay,
                };
                trials.characterize(*shape, verbose)
            })
            .collect();
        progress.finish();
        Ok(Measured { ranked, results })
    }

    fn render(scenario: &Scenario, plan: &Plan, ctx: &RunContext, m: Measured) -> Result<Output> {
        render::render_output(scenario, ctx, &plan.params, &m.ranked, &m.results)
    }
}
