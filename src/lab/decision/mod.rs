//! `decision_accuracy`: how often does each limiter decide
//! differently from an exact one, on the same traffic?
//!
//! Policy: at most `limit` requests per key per `interval_ms`. Every
//! candidate sees the SAME event stream (a seeded timed workload, or a trace
//! file streamed from disk) in one pass, and every decision is compared with
//! two exact limiters (`crate::oracle::limiters`) that count **admitted**
//! requests: the sliding log (primary) and aligned fixed windows.
//!
//! Candidates come from a table, one row per limiter model
//! ([`candidates::MODELS`]); each runs its own state and a denied request is
//! not retried. A limiter of your own joins the default set through
//! [`run_with`].
//!
//! Modules: [`candidates`] (the table), `source` (workload or trace as dense
//! key ids), `tally` (counting each decision against the exact limiters),
//! `render` (tables, report.json, charts), `split` (the run split by key
//! across shards, and merged back).
//!
//! Memory: sketches are `2 × hashes × slots × 8` bytes (two windows);
//! keyed limiters are keys × the real library's per-key state (each
//! model's `KeyState::STATE_BYTES`; map overhead not counted); exact counters are 16 bytes per key
//! alive in the two windows (peak).
//!
//! Wrong decisions are counted per request line (a weighted line is one
//! decision). Candidates decide a batch in parallel while the next batch is
//! read and judged by the exact limiters; each candidate's state and tally
//! are its own, so the report is the same at any thread count. Each batch is
//! also grouped by key (each key's requests in time order): the tallies,
//! the exact limiters and every candidate whose keys are independent
//! ([`crate::model::Admit::keys_independent`]) walk their per-key state in
//! key order, which is what makes a pass over many keys fast (`pass`; the
//! grouping's radix sort is `group`).

mod candidates;
pub(crate) mod checks;
pub(crate) mod fleet;
mod fleet_strategies;
mod group;
pub mod param_grid;
mod pass;
mod render;
mod rows;
mod source;
pub(crate) mod split;
mod tally;
pub mod validation;

pub use candidates::{
    build, candidates, default_entries, known_models, models_text, row, Built, Candidate, ModelRow,
    Origin, Scope, Setup, MODELS,
};
pub use rows::nginx_rate;

use super::experiment::{execute, Experiment};
use super::RunContext;
use crate::clock::{Nanos, MILLI, SECOND};
use crate::error::{Error, FieldError, Result};
use crate::model::estimator::EstimatorConfig;
use crate::report::atomic::StreamingFile;
use crate::report::fmt::bytes_human;
use crate::report::Output;
use crate::scenario::Scenario;
use crate::workload::timed::TimedWorkload;
use checks::{check_budget, unseen_watch, validate, watch_after_end};
use pass::Lab;
use serde::Deserialize;
use source::{find_flash, find_flashes, Source, Split};
use std::cell::RefCell;
use std::io::Write as _;
use std::sync::Arc;

/// The policy: at most `limit` per key per `interval_ms`.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Requests per key per interval.
    pub limit: u64,
    /// Interval, ms.
    pub interval_ms: u64,
}

pub use super::Shape;

/// The key whose first deny and timeline are reported.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Watch {
    /// Key (a trace key, or a workload key id in decimal).
    pub key: String,
    /// When its abuse starts (s since the first event).
    pub from_s: f64,
}

/// Scenario parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The policy.
    pub policy: Policy,
    /// A timed workload (or `trace`).
    #[serde(default)]
    pub workload: Option<TimedWorkload>,
    /// A trace file (or `workload`).
    #[serde(default)]
    pub trace: Option<crate::workload::trace::TraceSpec>,
    /// Sketch shapes of the pingora candidates (exact counters are added).
    #[serde(default = "default_shapes")]
    pub shapes: Vec<Shape>,
    /// The abusive key (default: a flash crowd's key, if the workload has one).
    #[serde(default)]
    pub watch: Option<Watch>,
    /// uber-go slack (default 10, the library's default).
    #[serde(default = "default_slack")]
    pub uber_slack: i64,
    /// Add the comparison with Cloudflare's published figure.
    #[serde(default)]
    pub compare_cloudflare: bool,
    /// The candidates, as data (default: the built-in set); see [`param_grid`].
    #[serde(default)]
    pub limiters: Option<Vec<serde_json::Value>>,
    /// A fleet of replicas instead of single limiters; see [`crate::fleet`].
    #[serde(default)]
    pub deployment: Option<crate::fleet::Deployment>,
    /// Unix time of a workload's virtual time zero, RFC 3339 (default
    /// [`DEFAULT_EPOCH`]): windows that upstream aligns to Unix time
    /// (Redis keys per second, envoyproxy/ratelimit, Kong, Cloudflare's
    /// counters) align to it. A trace's times are absolute: its first
    /// request is the origin, and `epoch` is refused beside it.
    #[serde(default)]
    pub epoch: Option<String>,
}

/// A workload's default epoch: 2026-01-01T00:00:00Z, a whole day, so
/// windows of any interval dividing a day start at virtual time zero.
pub const DEFAULT_EPOCH: &str = "2026-01-01T00:00:00Z";

impl Params {
    /// The workload's epoch, Unix ns (checked by `validate`).
    pub fn epoch_ns(&self) -> Nanos {
        parse_epoch(self.epoch.as_deref().unwrap_or(DEFAULT_EPOCH)).unwrap_or(0)
    }
}

/// An RFC 3339 time as Unix ns (at or after 1970).
fn parse_epoch(s: &str) -> std::result::Result<Nanos, crate::lab::error::LabError> {
    let bad = |expected: String| crate::lab::error::LabError::Epoch {
        value: s.to_string(),
        expected,
    };
    let t = chrono::DateTime::parse_from_rfc3339(s)
        .map_err(|e| bad(format!("an RFC 3339 time such as {DEFAULT_EPOCH} ({e})")))?;
    t.timestamp_nanos_opt()
        .and_then(|n| Nanos::try_from(n).ok())
        .ok_or_else(|| bad("a time from 1970 to 2554".into()))
}

fn default_shapes() -> Vec<Shape> {
    [1024, 8192, 65536]
        .iter()
        .map(|&slots| Shape { hashes: 4, slots })
        .collect()
}

fn default_slack() -> i64 {
    10
}

/// Upper estimate of the state one key id costs across every keyed limiter,
/// the exact oracles and the per-key tallies.
const PER_KEY_BYTES: u64 = 512;

/// Bins of the watched key's timeline.
const BINS: u64 = 88;

/// Bins of the watched key's onset: from one interval before its abuse
/// starts to four after, an interval in 50 bins.
const ONSET_BINS: u64 = 250;

// A request's bins are bytes (`tally::Request`).
const _: () = assert!(BINS <= 256 && ONSET_BINS <= 256);

/// Requests read ahead and handed to every candidate at once: big enough
/// that a batch grouped by key walks the per-key arrays nearly in sequence
/// (measured: 2^14 → 2^16 cut a trace's CPU time by a sixth; 2^18 no
/// further), small enough to stay a few MiB.
const BATCH: usize = 1 << 16;

/// The decision lab as an [`Experiment`]: [`validate`](Experiment::validate)
/// checks every field and builds the candidates (the default set, a
/// `limiters` list or a fleet's), [`estimate_work`](Experiment::estimate_work)
/// checks the budget, [`run`](Experiment::run) is one pass over the
/// requests and [`render`](Experiment::render) the report.
pub struct DecisionAccuracy;

impl Experiment for DecisionAccuracy {
    type Params = Params;
    type Plan = Prepared;
    type Outcome = Outcome;

    fn validate(scenario: &Scenario, p: Params, ctx: &RunContext) -> Result<Prepared> {
        plan(scenario, p, ctx, Vec::new())
    }

    fn estimate_work(scenario: &Scenario, plan: &Prepared, ctx: &RunContext) -> Result<()> {
        check_budget(scenario, &plan.p, ctx, plan.cands.borrow().len() + 2)
    }

    fn run(scenario: &Scenario, plan: &Prepared, ctx: &RunContext) -> Result<Outcome> {
        let p = &plan.p;
        let mut cands = plan.cands.take();
        let fleets = &plan.fleets;
        let shared = fleets.as_ref().and_then(|f| f.trace_input());
        let mut source = Source::open(scenario, p, ctx, None, shared)?;
        if let Some(f) = fleets {
            source.charge_keys(ctx, f.per_key_bytes());
        }
        let mut decisions = match &ctx.decisions {
            Some(path) => {
                use crate::report::atomic::refuse_output_over_input;
                refuse_output_over_input(path, "--decisions", &scenario.path, "the scenario")?;
                if let Some(t) = &p.trace {
                    let trace = source::trace_path(scenario, t);
                    refuse_output_over_input(path, "--decisions", &trace, "the trace")?;
                }
                let mut f = StreamingFile::create(path, ".ratelab-decisions-")?;
                writeln!(f, "t_ns,key,candidate,allowed,delay_ns")
                    .map_err(|e| Error::io(path, e))?;
                Some(f)
            }
            None => None,
        };
        let mut lab = Lab::new(Arc::clone(p), source, cands.len());
        lab.origin = plan.origin.clone();
        lab.names_wanted = cands.iter().any(|c| c.limiter.wants_key_names());
        let progress = ctx.progress(0, &scenario.common.name);
        lab.replay(&mut cands, decisions.as_mut(), progress)?;
        if let Some(w) = p.workload.as_ref().filter(|_| lab.requests == 0) {
            // A trace without requests is refused as it is read; a workload
            // whose rates draw none (`"rate": 1e-300`) has nothing to
            // compare either, and a table of zeros would read as a result.
            return Err(scenario.field_error(
                "workload",
                format!(
                    "drew 0 requests (about {} expected over {} s): expected at least one",
                    crate::units::shown(w.max_events()),
                    crate::units::shown(w.duration_s())
                ),
            ));
        }
        if p.workload.is_none() {
            // A trace's end is known once it is read.
            let end_s = lab.duration_ns as f64 / 1e9;
            if let Some(d) = &p.deployment {
                crate::fleet::check_event_times(scenario, &d.events, end_s)?;
            }
            if let Some(w) = p.watch.as_ref().filter(|w| w.from_s > end_s) {
                return Err(watch_after_end(scenario, w.from_s, end_s));
            }
        }
        // Children are told `end` and must exit cleanly (a line after the
        // last answer is a fault), in table order.
        for c in &mut cands {
            c.limiter.finish()?;
        }
        if let (Some(w), None) = (&p.watch, lab.watch_id) {
            return Err(unseen_watch(scenario, w));
        }
        Ok(Outcome {
            lab,
            cands,
            decisions,
        })
    }

    fn render(
        scenario: &Scenario,
        plan: &Prepared,
        ctx: &RunContext,
        outcome: Outcome,
    ) -> Result<Output> {
        let Outcome {
            lab,
            cands,
            decisions,
        } = outcome;
        // The report is rendered before the decisions replace an earlier
        // file: a failure there leaves the earlier file as it was.
        let mut out = render::output(scenario, ctx, &lab, &cands)?;
        if let Some(f) = &plan.fleets {
            f.annotate(&mut out, lab.duration_ns, lab.requests)?;
            render::add_cost_chart(&lab, &cands, &mut out)?;
        }
        if let Some(f) = decisions {
            f.commit()?;
        }
        Ok(out)
    }
}

/// Runs a `decision_accuracy` scenario with the default candidates.
pub fn run(scenario: &Scenario, ctx: &RunContext) -> Result<Output> {
    execute::<DecisionAccuracy>(scenario, ctx)
}

/// Runs a `decision_accuracy` scenario with the default candidates followed
/// by `extra` ones: how a limiter of your own (any [`crate::model::Admit`])
/// is measured on the same traffic, oracles and report as the built-in ones.
/// The same four stages as [`run`], with `extra` added to the plan.
///
/// # Examples
/// ```
/// use ratelab::lab::{decision, RunContext};
/// use ratelab::model::{Admit, Decision};
/// use ratelab::scenario::Scenario;
///
/// /// Admits everything: every request the oracle denies is a false allow.
/// struct Open;
/// impl Admit for Open {
///     fn admit(&mut self, _k: u32, _w: u64, _t: u64) -> ratelab::error::Result<Decision> {
///         Ok(Decision::ALLOW)
///     }
///     fn memory_bytes(&self, _keys: u64) -> u64 { 0 }
/// }
///
/// let json = r#"{"name": "mine", "kind": "decision_accuracy", "seed": 1,
///   "policy": {"limit": 5, "interval_ms": 1000}, "shapes": [],
///   "workload": {"type": "poisson", "keys": {"type": "uniform", "keys": 2},
///                "rate": 40.0, "duration_s": 5.0}}"#;
/// let scenario = Scenario::parse(std::path::Path::new("mine.json"), json)?;
/// let ctx = RunContext::for_scenario(&scenario);
/// let out = decision::run_with(&scenario, &ctx, vec![decision::Candidate::new("open", Box::new(Open))])?;
/// let rows = out.json["rows"].as_array().unwrap();
/// let open = rows.iter().find(|r| r["algorithm"] == "open").unwrap();
/// let oracle = &rows[0];
/// assert_eq!(open["false_deny"], 0);
/// assert!(open["false_allow"].as_u64().unwrap() > 0);
/// assert_eq!(open["allowed"], out.json["requests"]["lines"]);
/// assert!(oracle["allowed"].as_u64() < open["allowed"].as_u64());
/// # Ok::<(), ratelab::error::Error>(())
/// ```
pub fn run_with(scenario: &Scenario, ctx: &RunContext, extra: Vec<Candidate>) -> Result<Output> {
    type E = DecisionAccuracy;
    let plan = plan(scenario, scenario.params()?, ctx, extra)?;
    E::estimate_work(scenario, &plan, ctx)?;
    let outcome = E::run(scenario, &plan, ctx)?;
    E::render(scenario, &plan, ctx, outcome)
}

/// A scenario checked and its candidates built, before any request is read:
/// the decision lab's plan.
pub struct Prepared {
    p: Arc<Params>,
    /// The candidates, each with its limiter's state; the run takes them
    /// (a plan runs once) and hands them to the render in its [`Outcome`].
    cands: RefCell<Vec<Candidate>>,
    fleets: Option<crate::fleet::Fleets>,
    /// The handle the candidates read the time origin from.
    origin: Origin,
}

/// What one pass measured: its tallies and traffic, the candidates (whose
/// memory the report reads), and the `--decisions` file, committed once
/// the report is rendered.
pub struct Outcome {
    lab: Lab,
    cands: Vec<Candidate>,
    decisions: Option<StreamingFile>,
}

/// [`plan`] and the budget: a plan ready to run (as the shards run it).
fn prepare(scenario: &Scenario, ctx: &RunContext, extra: Vec<Candidate>) -> Result<Prepared> {
    let plan = plan(scenario, scenario.params()?, ctx, extra)?;
    DecisionAccuracy::estimate_work(scenario, &plan, ctx)?;
    Ok(plan)
}

/// Checks every field and builds the candidates (the default set, a
/// `limiters` list or a fleet's, then `extra`).
fn plan(
    scenario: &Scenario,
    p: Params,
    ctx: &RunContext,
    extra: Vec<Candidate>,
) -> Result<Prepared> {
    validate(scenario, &p, ctx)?;
    let setup = Setup {
        policy: p.policy,
        shapes: p.shapes.clone(),
        uber_slack: p.uber_slack,
        seed: ctx.seed,
        max_memory: ctx.max_memory,
        workdir: Some(
            scenario
                .path
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .map_or_else(|| ".".into(), |d| d.to_path_buf()),
        ),
        origin: Origin::default(),
    };
    let mut fleets = None;
    let mut cands = match (&p.deployment, &p.limiters) {
        (Some(_), Some(_)) => {
            return Err(scenario.field_error(
                "limiters",
                "with a deployment the models go in deployment.strategies: expected no limiters",
            ))
        }
        (Some(d), None) => {
            let budget = |f: &crate::fleet::Fleets| match &p.workload {
                Some(w) => {
                    crate::fleet::check_event_times(scenario, &d.events, w.duration_s())?;
                    fleet::check_budget(f, scenario, w, ctx)
                }
                None => Ok(()),
            };
            let (c, f) = fleet::fleet_candidates(scenario, &setup, d, p.trace.as_ref(), &budget)?;
            fleets = Some(f);
            c
        }
        (None, None) => candidates(&setup)?,
        (None, Some(list)) => listed_candidates(scenario, &setup, list)?,
    };
    cands.extend(extra);
    unique_names(scenario, &cands)?;
    // The comparison reads pingora's proportional estimate: without such a
    // candidate (a fleet, or limiters without one) it would be left out
    // without a word.
    if p.compare_cloudflare
        && !cands
            .iter()
            .any(|c| c.model == "pingora_rate" && c.args.str("estimate") == Some("proportional"))
    {
        return Err(scenario.field_error(
            "compare_cloudflare",
            "value true: no pingora_rate candidate with estimate \"proportional\" to compare: expected one (the default candidates have it), or no compare_cloudflare",
        ));
    }
    Ok(Prepared {
        p: Arc::new(p),
        cands: RefCell::new(cands),
        fleets,
        origin: setup.origin,
    })
}

/// The candidates of a `limiters` list: every entry checked and expanded
/// before any is built.
fn listed_candidates(
    scenario: &Scenario,
    setup: &Setup,
    list: &[serde_json::Value],
) -> Result<Vec<Candidate>> {
    if list.is_empty() {
        return Err(scenario.field_error("limiters", "empty list: expected at least one limiter"));
    }
    let mut planned = Vec::new();
    for (i, entry) in list.iter().enumerate() {
        let field = format!("limiters[{i}]");
        let Some(obj) = entry.as_object() else {
            return Err(scenario.field_error(
                &field,
                format!("value {entry}: expected an object with a \"model\" field"),
            ));
        };
        let known = known_models;
        let model = match obj.get("model") {
            Some(serde_json::Value::String(m)) => m,
            Some(other) => {
                return Err(scenario.field_error(
                    format!("{field}.model"),
                    format!("value {other}: expected one of {}", known()),
                ))
            }
            None => {
                return Err(scenario.field_error(
                    &field,
                    format!("missing \"model\": expected one of {}", known()),
                ))
            }
        };
        let Some(row) = candidates::row(model) else {
            return Err(scenario.field_error(
                format!("{field}.model"),
                format!("value {model:?}: expected one of {}", known()),
            ));
        };
        let args = param_grid::expand(obj, row.params, &field)
            .map_err(|e| scenario.field_error(e.field, e.message))?;
        if planned.len() + args.len() > param_grid::MAX_CANDIDATES {
            return Err(scenario.field_error(
                &field,
                format!(
                    "the limiters expand to more than {} candidates: expected at most {}",
                    param_grid::MAX_CANDIDATES,
                    param_grid::MAX_CANDIDATES
                ),
            ));
        }
        planned.extend(args.into_iter().map(|a| (field.clone(), row, a)));
    }
    planned
        .iter()
        .map(|(field, row, a)| {
            candidates::build(setup, row, a).map_err(|e| scenario.field_error(field, e.message()))
        })
        .collect()
}

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Two candidates with one name would make the report ambiguous.
fn unique_names(scenario: &Scenario, cands: &[Candidate]) -> Result<()> {
    // The oracles' rows head every table and report: a candidate with one
    // of their names would be read as the oracle (or hide it).
    const ORACLE_ROWS: [&str; 2] = [
        "exact sliding log (oracle)",
        "exact aligned window (oracle 2)",
    ];
    for c in cands {
        let n = c.name.trim().to_lowercase();
        if ORACLE_ROWS.contains(&n.as_str()) || n.contains("(oracle") {
            return Err(scenario.field_error(
                "limiters",
                format!(
                    "a candidate is named {:?}: that name is the oracle's row; give it another name",
                    c.name
                ),
            ));
        }
    }
    for (i, c) in cands.iter().enumerate() {
        if cands[..i].iter().any(|d| d.name == c.name) {
            return Err(scenario.field_error(
                "limiters",
                format!(
                    "two candidates are named {:?}: give them different parameters",
                    c.name
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
