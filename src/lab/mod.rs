//! Experiments: one module per scenario `kind`, each turning a scenario into
//! an [`Output`](crate::report::Output) (tables, report.json, charts). Thin glue between workloads,
//! algorithms, oracles and reports.
//!
//! A kind is an [`Experiment`] (validate, estimate the work, run, render;
//! see [`experiment`]) whose report is assembled by a
//! [`ReportBuilder`](crate::report::ReportBuilder). The registry of kinds
//! and the function that runs a scenario are one floor up, in
//! [`crate::kinds`]; [`RunContext`] carries the command line's settings and
//! budgets.

pub(crate) mod characterization;
pub mod decision;
mod error;
pub mod estimator_accuracy;
pub(crate) mod estimator_overflow;
pub mod experiment;
pub(crate) mod first_second_panic;
pub(crate) mod inflight;
pub(crate) mod pacer_timeline;
pub(crate) mod proxy_example;
pub(crate) mod rate_timeline;
pub(crate) mod rate_vs_oracle;
pub mod shard;
pub mod trust;

use crate::error::Result;
use crate::progress::Progress;
use crate::report::fmt::{bytes_human, cpu_human};
use crate::scenario::Scenario;

pub use error::LabError;
pub use experiment::{Experiment, KindRow};

/// A count-min sketch shape in a scenario (Rate, Inflight and the decision
/// lab take `usize` rows and slots, as pingora's constructors do).
#[derive(Debug, Clone, Copy, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Shape {
    /// Rows.
    pub hashes: usize,
    /// Counters per row.
    pub slots: usize,
}

impl Shape {
    /// Both at least 1, the counters within `max_memory` bytes and
    /// addressable by a `u32` cell index.
    pub fn validate(&self, scenario: &Scenario, field: &str, max_memory: u64) -> Result<()> {
        let mem =
            crate::model::estimator::EstimatorConfig::new(self.hashes, self.slots).memory_bytes();
        if self.hashes == 0
            || self.slots == 0
            || mem > max_memory
            || self.hashes.saturating_mul(self.slots) > u32::MAX as usize
        {
            return Err(scenario.field_error(
                field,
                format!(
                    "{} x {}: expected both >= 1 and at most {max_memory} bytes",
                    self.hashes, self.slots
                ),
            ));
        }
        Ok(())
    }
}

/// Settings a run gets from the command line.
#[derive(Debug, Clone)]
pub struct RunContext {
    /// The scenario seed (after `--seed`).
    pub seed: u64,
    /// Runs override (`--runs`).
    pub runs: Option<u32>,
    /// Largest memory one sketch (or one sweep cell's state) may take.
    pub max_memory: u64,
    /// Largest work a scenario may ask for, in work units (about 10 ns of
    /// CPU each); see [`RunContext::check_work`].
    pub max_work: f64,
    /// Draw progress bars.
    pub progress: bool,
    /// `run --decisions FILE`: where the decision lab writes every
    /// request's decision per candidate.
    pub decisions: Option<std::path::PathBuf>,
    /// `--replay`: how the estimator labs evaluate sketches.
    pub replay: ReplayMode,
}

/// How the estimator labs (`estimator_accuracy`, its shards, and
/// `estimator_characterization`) evaluate a sketch (`--replay`). Both give
/// the same report, byte for byte; `events` is there to check that.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ReplayMode {
    /// From each run's per-key counts wherever the order cannot matter
    /// (pingora's standard update), in O(keys x hashes); the event replay for
    /// the rest (conservative update, the real crate's rows).
    #[default]
    Auto,
    /// Replay every event through every sketch.
    Events,
}

/// Default memory cap: 1 GiB.
pub const DEFAULT_MAX_MEMORY: u64 = 1 << 30;

/// Default work budget in work units of about [`NANOS_PER_UNIT`] ns of
/// CPU each: 3·10^10, about five CPU-minutes. The most expensive committed
/// scenario (the characterization) costs about 3·10^8. Per-step costs were
/// measured on the committed scenarios (release build): a sketch update in a
/// sweep about 20 ns, a request through one decision-lab limiter about
/// 60 ns, an Inflight request (incr, then decr when it ends) about 450 ns.
pub const DEFAULT_MAX_WORK: f64 = 3e10;

/// CPU time one work unit stands for, in ns.
pub const NANOS_PER_UNIT: f64 = 10.0;

impl RunContext {
    /// Defaults for `scenario`: its own seed, no overrides, the default cap.
    pub fn for_scenario(scenario: &Scenario) -> Self {
        Self {
            seed: scenario.common.seed,
            runs: None,
            max_memory: DEFAULT_MAX_MEMORY,
            max_work: DEFAULT_MAX_WORK,
            progress: false,
            decisions: None,
            replay: ReplayMode::Auto,
        }
    }

    /// The number of runs: `--runs`, else the scenario's, else `default`.
    pub fn runs(&self, scenario: &Scenario, default: u32) -> u32 {
        self.runs.or(scenario.common.runs).unwrap_or(default)
    }

    /// Refuses a scenario whose work estimate is over the budget, before
    /// anything is allocated or run: a typo such as `"events": 1e12` or a
    /// caller count of 4294967296 fails in milliseconds with the field to
    /// fix, instead of running for days. `steps` is what the scenario asks
    /// for (events × sketches × runs, say), `unit_cost` what one step costs
    /// in work units of about 10 ns of CPU (measured per kind, see
    /// [`DEFAULT_MAX_WORK`]), and `how` says how the steps were counted. A
    /// NaN or infinite estimate is over any budget.
    pub fn check_work(
        &self,
        scenario: &Scenario,
        field: &str,
        steps: f64,
        unit_cost: f64,
        how: &str,
    ) -> Result<()> {
        let work = steps * unit_cost;
        if work.is_finite() && work <= self.max_work {
            return Ok(());
        }
        Err(scenario.field_error(
            field,
            format!(
                "{how} = {steps:.3e} steps, {} of CPU ({work:.2e} work units), over the budget of {:.0e} units (shrink the scenario, or raise the budget with --max-work)",
                cpu_human(work * NANOS_PER_UNIT),
                self.max_work
            ),
        ))
    }

    /// Refuses `bytes` of memory over `--max-memory` before they are
    /// allocated. `what` names what needs them (it is followed by "need
    /// about ..."), `remedy` what else to change besides the cap.
    pub fn check_memory(
        &self,
        scenario: &Scenario,
        field: &str,
        bytes: f64,
        what: &str,
        remedy: &str,
    ) -> Result<()> {
        if bytes.is_finite() && bytes <= self.max_memory as f64 {
            return Ok(());
        }
        Err(scenario.field_error(
            field,
            format!(
                "{what} need about {}, over the memory cap of {} ({remedy}, or raise it with --max-memory)",
                bytes_human(bytes.min(u64::MAX as f64) as u64),
                bytes_human(self.max_memory)
            ),
        ))
    }

    /// A progress bar (hidden when progress is off).
    pub fn progress(&self, len: u64, label: &str) -> Progress {
        if self.progress {
            Progress::new(len, label)
        } else {
            Progress::hidden()
        }
    }
}

/// The common head of every report.json, in contract order (see
/// [`crate::report::builder::json_head`]); for render code that does not
/// use a [`ReportBuilder`](crate::report::ReportBuilder).
pub fn report_head(
    scenario: &Scenario,
    ctx: &RunContext,
    runs: Option<u32>,
) -> serde_json::Map<String, serde_json::Value> {
    crate::report::builder::json_head(scenario, ctx.seed, runs)
}
