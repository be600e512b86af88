//! One sizing from start to report: the work check, the targets, the seeds,
//! the search with a progress bar and the rendered report.

use super::evaluation::Evaluator;
use super::guarantee::Plan;
use super::report::{render_report, SizeReport};
use super::search::{search, SearchOptions};
use super::targets::Target;
use crate::error::{Error, Result};
use crate::hash::HasherKind;
use crate::model::estimator::Variant;
use crate::progress::Progress;
use crate::workload::counts::WorkloadSummary;
use crate::workload::Workload;
use std::sync::atomic::{AtomicI64, Ordering};

/// What a sizing is asked, besides its workload.
#[derive(Debug, Clone)]
pub struct SizeJob {
    /// The targets as written (`p99<=5`, `mean<=0.01*avg`, ...); all must hold.
    pub targets: Vec<String>,
    /// Largest memory a shape may use.
    pub max_memory: u64,
    /// The update rule.
    pub variant: Variant,
    /// The hash family.
    pub hasher: HasherKind,
    /// Base seed.
    pub seed: u64,
    /// Seeds per shape (at least 1).
    pub seeds: u32,
    /// The claim the hold-out verifies.
    pub plan: Plan,
    /// Largest work the search may take, in units of about 10 ns of CPU.
    pub max_work: f64,
    /// Draw a progress bar.
    pub progress: bool,
}

/// Shapes one search evaluates at most, per search seed: the power-of-two
/// grid and the refinement around the pick.
const EVALS_PER_SEED: f64 = 200.0;
/// Full hold-outs (every plan seed) a search runs, in the estimate; a
/// failing hold-out stops at its first failure beyond the plan.
const FULL_HOLDOUTS: f64 = 2.0;

/// Refuses a search whose work is over `max_work` before any seed is
/// prepared. Each seed replays the stream once (unless the counts are fixed);
/// each evaluation hashes every key into every row (count-min) or replays
/// every event (conservative).
fn check_search_work(job: &SizeJob, workload: &Workload) -> Result<()> {
    let seeds = f64::from(job.seeds);
    let keys = workload.key_space() as f64;
    let events = workload.events() as f64;
    let setup = if workload.exact_counts().is_some() {
        0.0
    } else {
        seeds * events
    };
    let per_eval = match job.variant {
        Variant::CountMin => keys * 4.0,
        Variant::Conservative => events * 4.0,
    };
    // A hold-out run rebuilds its seed's stream unless the counts are fixed.
    let holdout_run = per_eval
        + if workload.exact_counts().is_some() {
            0.0
        } else {
            events
        };
    let work = setup
        + seeds * EVALS_PER_SEED * per_eval
        + FULL_HOLDOUTS * f64::from(job.plan.seeds) * holdout_run;
    if work.is_finite() && work <= job.max_work {
        return Ok(());
    }
    Err(Error::input(format!(
        "--seeds {} on {keys} keys and {events} events, hold-out of {} seeds: the search needs about {work:.2e} work units (~10 ns of CPU each), over --max-work {:.0e} (fewer seeds or events, a lower --coverage/--confidence, or raise --max-work)",
        job.seeds, job.plan.seeds, job.max_work
    )))
}

/// Runs the sizing of `workload` (described by `workload_shape` in the
/// report) and renders its report, without writing anything.
///
/// # Examples
///
/// ```
/// use ratelab::hash::HasherKind;
/// use ratelab::model::estimator::Variant;
/// use ratelab::sizing::{run_job, Generated, SizeJob, WorkloadSource};
///
/// let (workload, shape) = WorkloadSource::Generated(Generated {
///     keys: Some(300),
///     events: Some(3000),
///     dist: "zipf:1.1",
///     top: None,
///     min: None,
/// })
/// .build()
/// .unwrap();
/// let job = SizeJob {
///     targets: vec!["p99<=3".into()],
///     max_memory: 1 << 20,
///     variant: Variant::CountMin,
///     hasher: HasherKind::Xxh3,
///     seed: 1,
///     seeds: 2,
///     plan: ratelab::sizing::guarantee::Plan::new(99.0, 95.0, 0).unwrap(),
///     max_work: 3e10,
///     progress: false,
/// };
/// let report = run_job(&job, workload, shape).unwrap();
/// assert!(report.met);
/// assert!(report.console.contains("recommended: "));
/// assert_eq!(report.files()[0].0, "size.json");
/// ```
pub fn run_job(
    job: &SizeJob,
    workload: Workload,
    workload_shape: serde_json::Value,
) -> Result<SizeReport> {
    check_search_work(job, &workload)?;
    let summary = match workload.exact_counts() {
        Some(c) => WorkloadSummary::of_counts(c),
        None => WorkloadSummary {
            keys: workload.key_space() as u64,
            events: workload.events(),
            top_key_events: 0,
            keys_seen_once: 0,
        },
    };
    if summary.events == 0 {
        return Err(Error::input("the workload has no events"));
    }
    let avg = summary.events as f64 / summary.keys.max(1) as f64;
    let targets = job
        .targets
        .iter()
        .map(|t| Target::parse(t, avg))
        .collect::<Result<Vec<_>>>()?;
    let progress = if job.progress {
        Progress::new(0, "size")
    } else {
        Progress::hidden()
    };
    progress.set_message("preparing seeds");
    let ev = Evaluator::new(workload, job.variant, job.hasher, job.seed, job.seeds);
    let total = AtomicI64::new(0);
    progress.set_message("searching");
    let result = search(
        &ev,
        &targets,
        &SearchOptions {
            max_memory: job.max_memory,
            plan: job.plan,
        },
        &|n| progress.inc(n),
        &|d| {
            let t = total.fetch_add(d, Ordering::Relaxed) + d;
            progress.set_length(t.max(0) as u64);
        },
    );
    progress.finish();
    let seen = WorkloadSummary::of_counts(ev.truth0());
    Ok(render_report(&ev, &seen, workload_shape, &result))
}
