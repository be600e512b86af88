//! The `size` command's arguments and the search they ask for, without
//! writing anything: `ratelab size` ([`crate::cli`]) writes the result to
//! `--out`, a `size` scenario ([`crate::sizing::scenario`]) makes it a
//! report that `reproduce` regenerates and `check` compares.
//!
//! Exit codes of the command: 0 a shape meets every target; 1 none does
//! within the memory cap (the best shape found is printed and `size.json` is
//! still written, with `"recommendation": null`); 2 bad input (unparsable
//! target, empty trace, zero keys, ...).

use crate::error::{Error, Result};
use crate::hash::HasherKind;
use crate::model::estimator::Variant;
use crate::model::rate_limiter::RateMode;
use crate::sizing::guarantee::Plan;
use crate::sizing::input::{read_trace_input, TraceInput};
use crate::sizing::limit::{parse_near, run_limit_split, LimitJob, LimitOutput, Split};
use crate::sizing::{run_job, Generated, SizeJob, SizeReport, WorkloadSource};
use crate::units::parse_size;
use crate::workload::trace::InputOptions;
use crate::workload::Workload;
use serde_json::json;
use std::path::PathBuf;

/// Arguments of `ratelab size`.
#[derive(Debug, clap::Args)]
pub struct SizeArgs {
    /// Distinct keys per window (with --dist).
    #[arg(long)]
    pub keys: Option<u64>,
    /// Events per window (zipf, uniform; for harmonic it picks the smallest --top reaching it).
    #[arg(long)]
    pub events: Option<u64>,
    /// Distribution of events over keys: harmonic | zipf:S | uniform.
    #[arg(long, default_value = "harmonic")]
    pub dist: String,
    /// Harmonic: events of the top key (key i gets max(floor(top/(i+1)), min)).
    #[arg(long)]
    pub top: Option<u64>,
    /// Harmonic: no key gets fewer events than this.
    #[arg(long)]
    pub min: Option<u64>,
    /// A JSON file: a workload object ({"type": "harmonic", ...}) or a scenario with a `workload` field.
    #[arg(long, conflicts_with_all = ["keys", "trace"])]
    pub workload: Option<PathBuf>,
    /// A time-stamped access log (CSV with a time column and key, optional weight; JSON Lines; or any --format), or a `key,count` CSV (any column order; repeated keys summed). `-` reads standard input; gzip and zstd input is decompressed.
    #[arg(long, conflicts_with_all = ["keys", "workload"])]
    pub trace: Option<PathBuf>,
    /// How --trace is read (the options `replay` and the decision lab's
    /// `"trace"` take too).
    #[command(flatten)]
    pub read: crate::workload::trace::TraceSpec,
    /// The rate limit: requests per key per --interval-ms (enables compliant_denied_pct, compliant_keys_denied, excess_pct and `K*limit`).
    #[arg(long, requires = "trace")]
    pub limit: Option<u64>,
    /// The limit's interval in ms; a time-stamped trace is cut into windows of it.
    #[arg(long, requires = "trace")]
    pub interval_ms: Option<u64>,
    /// With --limit: error targets count only keys whose true count in a window is within LO..HI times the limit (default 0.5..1).
    #[arg(long, requires = "limit", value_name = "LO..HI")]
    pub near_limit: Option<String>,
    /// With --limit: the pingora Rate estimate to size for: docs (observe > limit), proportional (rate_with's sliding estimate) or both (default).
    #[arg(long, requires = "limit")]
    pub estimate: Option<String>,
    /// Accuracy target, repeatable (all must hold): exact_pct>=99, p99<=5, max<=100, mean<=0.01*avg, over_bound_pct<=1; with --limit also compliant_denied_pct<=0.1, compliant_keys_denied<=0, excess_pct<=1, p99<=0.05*limit.
    #[arg(long = "target", required = true)]
    pub targets: Vec<String>,
    /// Largest sketch memory considered, e.g. 1GiB, 512MiB.
    #[arg(long, default_value = "1GiB", value_parser = parse_size)]
    pub max_memory: u64,
    /// Update rule: count_min (pingora) or conservative.
    #[arg(long, default_value = "count_min")]
    pub variant: String,
    /// Seeds per shape (fresh hash seeds and event order each); with --limit, the least number of fresh hash seeds the pick is verified on.
    #[arg(long, default_value_t = 5)]
    pub seeds: u32,
    /// The claim: the pick meets every target on at least this % of hash seeds (verified on fresh seeds; 99 needs 299 at 95% confidence).
    #[arg(long, default_value_t = crate::sizing::guarantee::DEFAULT_COVERAGE_PCT)]
    pub coverage: f64,
    /// The claim's confidence, % (a one-sided Clopper-Pearson bound on the exceedance).
    #[arg(long, default_value_t = crate::sizing::guarantee::DEFAULT_CONFIDENCE_PCT)]
    pub confidence: f64,
    /// Base seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Hash family: xxh3 (portable) or ahash.
    #[arg(long, default_value = "xxh3")]
    pub hasher: String,
    /// Folder for size.json, size.md and the frontier chart (default: a new folder
    /// ./size-report, or size-report-2, -3, ... if it exists: never a tracked report).
    #[arg(long, value_parser = crate::report::atomic::parse_out_path)]
    pub out: Option<PathBuf>,
    /// Worker threads (results do not depend on it).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Largest work the search may take, in units of about 10 ns of CPU (3e10 is about
    /// five CPU-minutes); checked before the search starts.
    #[arg(long, default_value = "3e10", value_parser = crate::units::parse_work)]
    pub max_work: f64,
    /// Never draw the progress bar.
    #[arg(long)]
    pub no_progress: bool,
    /// With --trace and --limit: replay shard I of N's slice of the fresh hash seeds
    /// (seed index r with (r - 1) mod N = I; each shape's replay needs every key) of
    /// every shape the verification walk may ask for, on the whole trace, and write
    /// <OUT>/size.shard-I-of-N.json; `ratelab merge` of every shard re-reads the
    /// trace, assembles each verification from the slices instead of replaying it,
    /// picks and writes the size folder byte-identical to the unsharded run's.
    // The doc comment is the --help text, placeholders and all.
    #[allow(rustdoc::invalid_html_tags)]
    #[arg(long, value_name = "I/N", requires = "limit", value_parser = crate::lab::shard::parse_shard)]
    pub shard: Option<crate::lab::shard::Shard>,
}

fn parse_variant(s: &str) -> Result<Variant> {
    match s {
        "count_min" | "count-min" => Ok(Variant::CountMin),
        "conservative" => Ok(Variant::Conservative),
        _ => Err(Error::input(format!(
            "--variant {s:?}: expected count_min or conservative"
        ))),
    }
}

fn parse_hasher(s: &str) -> Result<HasherKind> {
    match s {
        "xxh3" => Ok(HasherKind::Xxh3),
        "ahash" => Ok(HasherKind::AHash),
        _ => Err(Error::input(format!(
            "--hasher {s:?}: expected xxh3 or ahash"
        ))),
    }
}

impl SizeArgs {
    /// `--near-limit`, or its default.
    pub fn near_limit(&self) -> &str {
        self.near_limit.as_deref().unwrap_or("0.5..1")
    }

    /// `--estimate`, or its default.
    pub fn estimate(&self) -> &str {
        self.estimate.as_deref().unwrap_or("both")
    }

    /// The workload source the arguments name.
    pub fn workload_source(&self) -> WorkloadSource<'_> {
        if let Some(trace) = &self.trace {
            WorkloadSource::Trace(trace)
        } else if let Some(file) = &self.workload {
            WorkloadSource::File(file)
        } else {
            WorkloadSource::Generated(Generated {
                keys: self.keys,
                events: self.events,
                dist: &self.dist,
                top: self.top,
                min: self.min,
            })
        }
    }
}

fn parse_modes(s: &str) -> Result<Vec<RateMode>> {
    match s {
        "docs" => Ok(vec![RateMode::Docs]),
        "proportional" => Ok(vec![RateMode::Proportional]),
        "both" => Ok(vec![RateMode::Docs, RateMode::Proportional]),
        _ => Err(Error::input(format!(
            "--estimate {s:?}: expected docs, proportional or both"
        ))),
    }
}

/// Reads `--trace` and, when it has times or `--limit` is given, sizes for
/// the limit ([`crate::sizing::limit`]); a plain `key,count` table goes to
/// the count-min search. `None`: not a `--trace` sizing.
pub fn compute_trace(a: &SizeArgs) -> Result<Option<SizeReport>> {
    match compute_trace_split(a, Split::Whole)? {
        Some(LimitOutput::Report(r)) => Ok(Some(r)),
        Some(_) => Err(Error::internal("a whole sizing returned a part")),
        None => Ok(None),
    }
}

/// [`compute_trace`] with the limit search split as `split` says (a
/// shard's part, or a merge of parts).
pub fn compute_trace_split(a: &SizeArgs, split: Split<'_>) -> Result<Option<LimitOutput>> {
    let Some(path) = &a.trace else {
        if a.limit.is_some() || a.interval_ms.is_some() {
            return Err(Error::input(
                "--limit and --interval-ms size for a trace: give --trace FILE",
            ));
        }
        return Ok(None);
    };
    let opts = input_options(a)?;
    let near = parse_near(a.near_limit())?;
    let modes = parse_modes(a.estimate())?;
    let input = read_trace_input(path, &opts)?;
    if let TraceInput::Counts { names, counts } = &input
        && a.limit.is_none()
    {
        if a.interval_ms.is_some() {
            return Err(Error::input(format!(
                "--interval-ms: {} is a key,count table without times",
                path.display()
            )));
        }
        let w = Workload::from_named_counts(names.clone(), counts.clone());
        let shape = json!({"type": "csv", "path": path.display().to_string()});
        return compute_counts(a, w, shape).map(|r| Some(LimitOutput::Report(r)));
    }
    let source = match &input {
        TraceInput::Timed(t) if !t.note.is_empty() => format!("{} ({})", path.display(), t.note),
        _ => path.display().to_string(),
    };
    let job = LimitJob {
        targets: a.targets.clone(),
        limit: a.limit,
        interval_ms: a.interval_ms,
        near,
        modes,
        seed: a.seed,
        seeds: a.seeds,
        coverage_pct: a.coverage,
        confidence_pct: a.confidence,
        max_memory: a.max_memory,
        max_work: a.max_work,
        progress: !a.no_progress,
        source,
    };
    run_limit_split(&job, input, split).map(Some)
}

/// How to read `--trace`: every option checked, alone and together.
pub fn input_options(a: &SizeArgs) -> Result<InputOptions> {
    a.read.arrival_options("size", a.seed)
}

/// Parses every option, whichever path (count search, limit search) will
/// use it, so a bad value is refused the same way in every combination.
pub fn validate(a: &SizeArgs) -> Result<()> {
    if a.seeds == 0 {
        return Err(Error::input("--seeds 0: expected at least 1 seed"));
    }
    parse_variant(&a.variant)?;
    parse_hasher(&a.hasher)?;
    parse_modes(a.estimate())?;
    parse_near(a.near_limit())?;
    crate::sizing::refuse_repeated_targets(&a.targets)?;
    if a.trace.is_none() {
        a.read.refuse_without_trace()?;
    }
    input_options(a)?;
    Plan::new(a.coverage, a.confidence, 0)?;
    if let (Some(l), Some(i)) = (a.limit, a.interval_ms) {
        // As the decision lab refuses it: its limiters step in whole
        // nanoseconds, so a limit finer than one a nanosecond is none.
        if l > 0 && i > 0 && i.saturating_mul(crate::clock::MILLI) / l == 0 {
            return Err(Error::input(format!(
                "--limit {l} per --interval-ms {i} is more than one per nanosecond: expected at most {} per {i} ms",
                i.saturating_mul(crate::clock::MILLI)
            )));
        }
    }
    if a.trace.is_some() && (a.limit.is_some() || a.interval_ms.is_some()) {
        // The limit search sizes pingora Rate: count-min, xxh3.
        if parse_variant(&a.variant)? != Variant::CountMin {
            return Err(Error::input(format!(
                "--variant {}: a --limit sizing sizes pingora Rate, whose sketch is count_min",
                a.variant
            )));
        }
        if parse_hasher(&a.hasher)? != HasherKind::Xxh3 {
            return Err(Error::input(format!(
                "--hasher {}: a --limit sizing replays the decision lab's pingora Rate, hashed with xxh3",
                a.hasher
            )));
        }
    }
    Ok(())
}

/// Runs the search for parsed arguments (without writing anything).
pub fn compute(a: &SizeArgs) -> Result<SizeReport> {
    validate(a)?;
    if let Some(r) = compute_trace(a)? {
        return Ok(r);
    }
    let (workload, shape) = a.workload_source().build()?;
    compute_counts(a, workload, shape)
}

/// The count-min search on a count workload.
fn compute_counts(
    a: &SizeArgs,
    workload: Workload,
    shape: serde_json::Value,
) -> Result<SizeReport> {
    let variant = parse_variant(&a.variant)?;
    let hasher = parse_hasher(&a.hasher)?;
    let job = SizeJob {
        targets: a.targets.clone(),
        max_memory: a.max_memory,
        variant,
        hasher,
        seed: a.seed,
        seeds: a.seeds,
        plan: Plan::new(a.coverage, a.confidence, 0)?,
        max_work: a.max_work,
        progress: !a.no_progress,
    };
    run_job(&job, workload, shape)
}
