//! [`Experiment`]: the shape every kind of experiment has, and [`KindRow`], a
//! row of the registry ([`KINDS`](crate::kinds::KINDS)).
//!
//! A run goes through the same four stages for every kind, in this order:
//!
//! 1. [`validate`](Experiment::validate): the kind's parameters (already
//!    deserialized, unknown fields refused) are checked field by field and
//!    turned into a *plan*, the validated input the later stages read
//!    (built workloads, resolved shapes, parsed times);
//! 2. [`estimate_work`](Experiment::estimate_work): the plan's CPU and
//!    memory needs are checked against the budgets of the
//!    [`RunContext`], before anything large is allocated;
//! 3. [`run`](Experiment::run): the simulation, giving an *outcome*;
//! 4. [`render`](Experiment::render): the outcome as an [`Output`], through
//!    a [`ReportBuilder`](crate::report::ReportBuilder).
//!
//! [`execute`] chains them; [`KindRow::of`] makes a registry row of it.

use super::RunContext;
use crate::error::Result;
use crate::report::Output;
use crate::scenario::Scenario;
use serde::de::DeserializeOwned;

/// One kind of experiment, in four stages (see the [module docs](self)).
///
/// # Examples
///
/// A toy kind that counts to `n`, run from a scenario written in code:
///
/// ```
/// use ratelab::error::Result;
/// use ratelab::lab::experiment::{execute, Experiment};
/// use ratelab::lab::RunContext;
/// use ratelab::report::{Output, ReportBuilder, Table};
/// use ratelab::scenario::Scenario;
///
/// #[derive(serde::Deserialize)]
/// struct Params {
///     n: u32,
/// }
///
/// struct Count;
///
/// impl Experiment for Count {
///     type Params = Params;
///     type Plan = u32;
///     type Outcome = Vec<u32>;
///
///     fn validate(sc: &Scenario, p: Params, _: &RunContext) -> Result<u32> {
///         if p.n == 0 {
///             return Err(sc.field_error("n", "value 0: expected at least 1"));
///         }
///         Ok(p.n)
///     }
///
///     fn estimate_work(sc: &Scenario, n: &u32, ctx: &RunContext) -> Result<()> {
///         ctx.check_work(sc, "n", f64::from(*n), 1.0, "n steps")
///     }
///
///     fn run(_: &Scenario, n: &u32, _: &RunContext) -> Result<Vec<u32>> {
///         Ok((1..=*n).collect())
///     }
///
///     fn render(sc: &Scenario, _: &u32, ctx: &RunContext, counts: Vec<u32>) -> Result<Output> {
///         let mut table = Table::new(["i"]);
///         for i in &counts {
///             table.push([i.to_string()]);
///         }
///         let mut report = ReportBuilder::new(sc, ctx.seed, None);
///         report.field("counts", serde_json::json!(counts));
///         report.md(&table.markdown()).csv(&table);
///         Ok(report.finish())
///     }
/// }
///
/// let path = std::path::Path::new("count.json");
/// let sc = Scenario::parse(path, r#"{"name": "count", "kind": "count", "n": 3}"#).unwrap();
/// let out = execute::<Count>(&sc, &RunContext::for_scenario(&sc)).unwrap();
/// assert_eq!(out.table_csv, "i\n1\n2\n3\n");
/// assert_eq!(out.json["counts"][2], 3);
///
/// let zero = Scenario::parse(path, r#"{"name": "count", "kind": "count", "n": 0}"#).unwrap();
/// assert!(execute::<Count>(&zero, &RunContext::for_scenario(&zero)).is_err());
/// ```
pub trait Experiment {
    /// The kind's scenario fields (besides the common ones).
    type Params: DeserializeOwned;
    /// The validated input of a run.
    type Plan;
    /// What a run measured.
    type Outcome;

    /// Checks the parameters field by field; errors name the field.
    fn validate(scenario: &Scenario, params: Self::Params, ctx: &RunContext) -> Result<Self::Plan>;

    /// Refuses a plan over the work or memory budget of `ctx` (see
    /// [`RunContext::check_work`] and [`RunContext::check_memory`]). The
    /// default accepts every plan: for kinds whose size is fixed.
    fn estimate_work(scenario: &Scenario, plan: &Self::Plan, ctx: &RunContext) -> Result<()> {
        let _ = (scenario, plan, ctx);
        Ok(())
    }

    /// Runs the simulation.
    fn run(scenario: &Scenario, plan: &Self::Plan, ctx: &RunContext) -> Result<Self::Outcome>;

    /// Turns the outcome into the report.
    fn render(
        scenario: &Scenario,
        plan: &Self::Plan,
        ctx: &RunContext,
        outcome: Self::Outcome,
    ) -> Result<Output>;
}

/// Runs `scenario` through the four stages of `E`.
pub fn execute<E: Experiment>(scenario: &Scenario, ctx: &RunContext) -> Result<Output> {
    let params: E::Params = scenario.params()?;
    let plan = E::validate(scenario, params, ctx)?;
    E::estimate_work(scenario, &plan, ctx)?;
    let outcome = E::run(scenario, &plan, ctx)?;
    E::render(scenario, &plan, ctx, outcome)
}

/// How a scenario of some kind is run.
pub type RunFn = fn(&Scenario, &RunContext) -> Result<Output>;

/// A kind of experiment: its name, what it does, and how to run it.
///
/// # Examples
///
/// ```
/// use ratelab::kinds::{kind, KINDS};
/// let k = kind("estimator_accuracy").unwrap();
/// assert!(k.sweep, "its cells can be split across shards");
/// assert!(KINDS.iter().filter(|k| k.sweep).count() == 1);
/// assert!(kind("no_such_kind").is_none());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct KindRow {
    /// The `kind` value in scenario files.
    pub name: &'static str,
    /// One line for `ratelab list`.
    pub summary: &'static str,
    /// Runs a scenario of this kind.
    pub run: RunFn,
    /// Whether its cells can be split across shards (`--shard i/n`, then
    /// `ratelab merge`).
    pub sweep: bool,
}

impl KindRow {
    /// The row of an [`Experiment`].
    pub const fn of<E: Experiment>(name: &'static str, summary: &'static str) -> Self {
        Self {
            name,
            summary,
            run: execute::<E>,
            sweep: false,
        }
    }

    /// The row of a kind run by a plain function (one not yet written as an
    /// [`Experiment`]).
    pub const fn plain(name: &'static str, summary: &'static str, run: RunFn) -> Self {
        Self {
            name,
            summary,
            run,
            sweep: false,
        }
    }

    /// The same row, marked as a sweep whose cells can be split across
    /// shards.
    pub const fn as_sweep(mut self) -> Self {
        self.sweep = true;
        self
    }
}
