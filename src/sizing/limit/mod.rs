//! Sizing pingora `Rate`'s sketch for a rate limit, from the user's own
//! access log: `ratelab size --trace access.csv --limit 100 --interval-ms
//! 1000 --target 'compliant_denied_pct<=0.1'`.
//!
//! The question a limiter engineer asks is not "p99 overcount over all
//! keys" but *how big must the sketch be so that well-behaved keys are
//! (almost) never denied because of collisions?* So:
//!
//! * the trace is classified once by the exact sliding log (`classes`):
//!   compliant keys never exceed the limit in any window, limited keys do;
//! * a shape is judged by what `Rate` with that shape does on the trace, in
//!   the docs' pattern or with the proportional estimate — the decision
//!   lab's harm figures, request for request (`replay`);
//! * error targets (`p99<=0.05*limit`) are measured per aligned window over
//!   the keys near the limit only (`windows`), so the long tail of
//!   singletons no longer decides the answer;
//! * the search (`search`) bisects on one hash seed with a
//!   replay that stops once a target is lost, verifies the pick on as many
//!   fresh seeds as its claim needs ("meets the targets on >= 99% of hash
//!   seeds, 95% confidence": [`crate::sizing::guarantee`]), and confirms the pick and the frontier through the decision
//!   lab's own `RateLimiter::sketch`.
//!
//! Modules: `classes` (the exact verdict), `replay` (one shape's
//! decisions), `windows` (per-window errors), `targets`, `search`,
//! `confirm` (the model's confirmation), `split` (`--shard`: the search
//! split by hash seed over the walk's shapes), `lookup` (a merge's parts,
//! checked, and the walk on them), `first_seed` (the shards'
//! bisection and model replays, read by a merge), `bound` (the count-min
//! bound's reading), `report`.

pub(crate) mod bound;
pub(crate) mod classes;
pub(crate) mod confirm;
pub(crate) mod first_seed;
#[cfg(test)]
mod first_seed_tests;
pub(crate) mod lookup;
pub(crate) mod replay;
pub(crate) mod report;
pub(crate) mod search;
pub(crate) mod split;
pub(crate) mod targets;
pub(crate) mod windows;

pub use classes::{Classes, LimitPolicy};
pub use replay::{
    lab_hash_seed, replay_admit, replay_fast, replay_model, Figures, RateShape, Stop,
};
pub use search::{search_mode, Ctx, ModeResult};
pub use split::SizePart;
pub use targets::{LimitMetric, LimitTarget};
pub use windows::Windows;

use super::input::{TimedTrace, TraceInput};
use super::report::SizeReport;
use crate::error::{Error, Result};
use crate::lab::shard::part::Shard;
use crate::model::rate_limiter::RateMode;
use crate::progress::Progress;
use crate::sizing::guarantee::Plan;
use rayon::prelude::*;
use std::path::PathBuf;

/// What a limit sizing is asked.
#[derive(Debug, Clone)]
pub struct LimitJob {
    /// Targets as written; all must hold.
    pub targets: Vec<String>,
    /// Requests per key per interval (decision targets, near-limit keys).
    pub limit: Option<u64>,
    /// The interval, ms (windows).
    pub interval_ms: Option<u64>,
    /// Near-limit keys: true count within `[lo·limit, hi·limit]`.
    pub near: (f64, f64),
    /// Estimate modes sized.
    pub modes: Vec<RateMode>,
    /// The decision lab seed of the first hash seed.
    pub seed: u64,
    /// The pick is verified on at least this many fresh hash seeds (more
    /// when the claim needs more).
    pub seeds: u32,
    /// The claim: share of hash seeds on which the pick meets the targets, %.
    pub coverage_pct: f64,
    /// The claim's confidence, %.
    pub confidence_pct: f64,
    /// Most memory, both windows.
    pub max_memory: u64,
    /// Largest work, units of about 10 ns.
    pub max_work: f64,
    /// Draw a progress bar.
    pub progress: bool,
    /// The trace's name in the report.
    pub source: String,
}

/// Parses `--near-limit LO..HI` (factors of the limit, 0 <= LO <= HI).
///
/// # Examples
///
/// ```
/// assert_eq!(ratelab::sizing::limit::parse_near("0.5..1").unwrap(), (0.5, 1.0));
/// assert!(ratelab::sizing::limit::parse_near("1..0.5").is_err());
/// ```
pub fn parse_near(s: &str) -> Result<(f64, f64)> {
    let bad = || {
        Error::input(format!(
            "--near-limit {s:?}: expected LO..HI, factors of the limit with 0 <= LO <= HI, 0 < HI <= 1000, e.g. 0.5..1"
        ))
    };
    let (a, b) = s.split_once("..").ok_or_else(bad)?;
    let f = |x: &str| {
        x.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    match (f(a), f(b)) {
        // HI 0 selects no key (a key in a window has a request), and a
        // key a thousand times over the limit is not near it.
        (Some(a), Some(b)) if a <= b && b > 0.0 && b <= 1000.0 => Ok((a, b)),
        _ => Err(bad()),
    }
}

/// Replays one search runs per mode besides its verifications (bisection,
/// confirmation, the bound).
const REPLAYS_PER_MODE: f64 = 80.0;
/// Full verifications (every plan seed) a search runs per mode, in the
/// estimate: a pass and about two refinements; failing verifications stop
/// at their first failure and are counted as one more.
const FULL_VERIFICATIONS: f64 = 4.0;
/// Work units (about 10 ns each) per request of a fast replay: a few cell
/// reads and adds on cells precomputed per key.
const UNITS_PER_REQUEST: f64 = 3.0;

/// How a limit sizing's search is split across processes.
pub enum Split<'a> {
    /// Every mode searched here (the unsharded run).
    Whole,
    /// `size --shard i/n`: every mode's walk explored on the fresh seeds
    /// with index ≡ i + 1 (mod n), written as a part; no report.
    Shard(Shard),
    /// `merge`: every verification assembled from the shards' seeds,
    /// checked to be this job's, each seed from the shard that owns it;
    /// the bisection and the first-seed model replays read from the parts.
    Merge(&'a [(PathBuf, Shard, SizePart)]),
}

/// What a limit sizing returns: a report, or a shard's part.
pub enum LimitOutput {
    /// The report (whole or merged).
    Report(SizeReport),
    /// A merged report and what the merge had to replay itself (seeds or
    /// first-seed replays no shard held, one line each; empty when
    /// nothing).
    Merged(SizeReport, String),
    /// A shard's walks and a few words on what it holds.
    Part(SizePart, String),
}

/// Runs a limit sizing on a `--trace` input and renders its report.
pub fn run_limit_job(job: &LimitJob, input: TraceInput) -> Result<SizeReport> {
    match run_limit_split(job, input, Split::Whole)? {
        LimitOutput::Report(r) => Ok(r),
        _ => Err(Error::internal("a whole sizing returned a part")),
    }
}

/// [`run_limit_job`] split as `split` says: a shard explores every mode's
/// walk on its slice of the fresh seeds and returns the replays; a merge
/// assembles every verification from the parts and renders the report,
/// the same bytes as the whole run.
pub fn run_limit_split(job: &LimitJob, input: TraceInput, split: Split<'_>) -> Result<LimitOutput> {
    let targets = job
        .targets
        .iter()
        .map(|t| LimitTarget::parse_in(t, job.limit))
        .collect::<Result<Vec<_>>>()?;
    if job.seeds == 0 {
        return Err(Error::input("--seeds 0: expected at least 1 seed"));
    }
    let decision = targets.iter().any(|t| t.metric.is_decision());
    let (trace, counts): (Option<TimedTrace>, Option<Vec<u64>>) = match input {
        TraceInput::Timed(t) => (Some(t), None),
        TraceInput::Counts { counts, .. } => (None, Some(counts)),
    };
    if decision && trace.is_none() {
        return Err(Error::input(format!(
            "--trace {}: a key,count file has no times; compliant_denied_pct, compliant_keys_denied and excess_pct need a time-stamped trace (a time column)",
            job.source
        )));
    }
    let interval_ms = match (job.interval_ms, &trace) {
        (Some(0), _) => return Err(Error::input("--interval-ms 0: expected 1..=86400000")),
        (Some(i), _) if i > 86_400_000 => {
            return Err(Error::input(format!("--interval-ms {i}: expected 1..=86400000")))
        }
        (Some(i), _) => i,
        (None, Some(_)) => {
            return Err(Error::input(
                "--trace with times: give --interval-ms I (the limit's interval; the trace is cut into windows of it)",
            ))
        }
        (None, None) => 1000,
    };
    if decision && job.limit.is_none() {
        return Err(Error::input("decision targets need --limit L"));
    }
    let limit = job.limit.unwrap_or(0);
    if job.limit == Some(0) || limit > u64::from(u32::MAX) {
        return Err(Error::input(format!(
            "--limit {limit}: expected 1..=4294967295"
        )));
    }
    let policy = LimitPolicy { limit, interval_ms };
    let near = match job.limit {
        Some(l) => (
            (job.near.0 * l as f64).ceil() as u64,
            (job.near.1 * l as f64).floor() as u64,
        ),
        None => (1, u64::MAX),
    };
    let (windows, classes) = rayon::join(
        || match (&trace, &counts) {
            (Some(t), _) => Windows::of_trace(t, policy.interval_ns()),
            (None, Some(c)) => Windows::of_counts(c),
            _ => Windows::default(),
        },
        || trace.as_ref().map(|t| Classes::of(t, policy)),
    );
    if !decision && windows.near_pairs(near) == 0 {
        return Err(Error::input(format!(
            "no key is near the limit in any window (true count in {}..={}): widen --near-limit or check --limit",
            near.0, near.1
        )));
    }
    let requests = trace.as_ref().map_or(windows.keys.len(), |t| t.len()) as f64;
    let plan = Plan::new(job.coverage_pct, job.confidence_pct, job.seeds)?;
    let replays = REPLAYS_PER_MODE + FULL_VERIFICATIONS * f64::from(plan.seeds);
    let work = job.modes.len() as f64 * replays * requests * UNITS_PER_REQUEST;
    if !work.is_finite() || work > job.max_work {
        return Err(Error::input(format!(
            "{requests:.0} requests x {} modes x about {replays:.0} replays ({} verification seeds per shape): the search needs about {work:.2e} work units (~10 ns of CPU each), over --max-work {:.0e} (one --estimate mode, a lower --coverage/--confidence, or raise --max-work)",
            job.modes.len(),
            plan.seeds,
            job.max_work
        )));
    }
    let progress = if job.progress {
        Progress::new(0, "size")
    } else {
        Progress::hidden()
    };
    progress.set_message("searching");
    let on_eval = || progress.inc(1);
    let ctx = Ctx {
        trace: trace.as_ref(),
        classes: classes.as_ref(),
        windows: &windows,
        policy,
        near,
        targets: &targets,
        seed: job.seed,
        plan,
        max_memory: job.max_memory,
        on_eval: &on_eval,
    };
    let lines = trace.as_ref().map_or(0, |t| t.len() as u64);
    if let Split::Shard(sh) = split {
        let part = split::shard_part(&ctx, &job.modes, lines, sh)?;
        progress.finish();
        let what = part.summary();
        return Ok(LimitOutput::Part(part, what));
    }
    let bound = bound::limit_bound(&targets, policy, near, &windows, classes.as_ref());
    let merged = match split {
        Split::Merge(parts) => Some(lookup::Lookup::of(parts, lines, &ctx, &job.modes)?),
        _ => None,
    };
    let (results, bound_eval) = match &merged {
        // The bisection, the walk and the first-seed replays from the parts.
        Some(l) => l.merge(&ctx, &job.modes, &bound)?,
        None => {
            let results: Vec<ModeResult> = job
                .modes
                .par_iter()
                .map(|&m| search::search_mode(&ctx, m))
                .collect::<Result<_>>()?;
            (results, bound::measure(&bound, &ctx, &job.modes, &ctx)?)
        }
    };
    progress.finish();
    let report = report::render(&report::Inputs {
        job,
        ctx: &ctx,
        results: &results,
        bound: &bound,
        bound_eval: &bound_eval,
    });
    Ok(match merged {
        Some(l) => LimitOutput::Merged(report, l.note(&job.modes)),
        None => LimitOutput::Report(report),
    })
}
