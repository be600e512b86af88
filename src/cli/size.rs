//! `ratelab size`: the cheapest count-min shape for a workload and targets
//! (the search and its report are in [`crate::sizing`]).
//!
//! Exit codes: 0 a shape meets every target; 1 none does within the memory
//! cap (the best shape found is printed and `size.json` is still written,
//! with `"recommendation": null`); 2 bad input (unparsable target, empty
//! trace, zero keys, ...).

use super::{init_threads, parse_size};
use crate::error::{Error, Result};
use crate::hash::HasherKind;
use crate::model::estimator::Variant;
use crate::sizing::{run_job, Generated, SizeJob, SizeReport, WorkloadSource};
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
    /// A `key,count` CSV file (header required).
    #[arg(long, conflicts_with_all = ["keys", "workload"])]
    pub trace: Option<PathBuf>,
    /// Accuracy target, repeatable (all must hold): exact_pct>=99, p99<=5, max<=100, mean<=0.01*avg, over_bound_pct<=1.
    #[arg(long = "target", required = true)]
    pub targets: Vec<String>,
    /// Largest sketch memory considered, e.g. 1GiB, 512MiB.
    #[arg(long, default_value = "1GiB", value_parser = parse_size)]
    pub max_memory: u64,
    /// Update rule: count_min (pingora) or conservative.
    #[arg(long, default_value = "count_min")]
    pub variant: String,
    /// Seeds per shape (fresh hash seeds and event order each); the pick is re-checked on 20 reruns of as many fresh ones.
    #[arg(long, default_value_t = 5)]
    pub seeds: u32,
    /// Base seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Hash family: xxh3 (portable) or ahash.
    #[arg(long, default_value = "xxh3")]
    pub hasher: String,
    /// Folder for size.json, size.md and the frontier chart.
    #[arg(long, default_value = "reports/size", value_parser = crate::report::atomic::parse_out_path)]
    pub out: PathBuf,
    /// Worker threads (results do not depend on it).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Largest work the search may take, in units of about 10 ns of CPU (3e10 is about
    /// five CPU-minutes); checked before the search starts.
    #[arg(long, default_value = "3e10", value_parser = super::parse_work)]
    pub max_work: f64,
    /// Never draw the progress bar.
    #[arg(long)]
    pub no_progress: bool,
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

/// Runs the search for parsed arguments (without writing anything).
pub fn compute(a: &SizeArgs) -> Result<SizeReport> {
    if a.seeds == 0 {
        return Err(Error::input("--seeds 0: expected at least 1 seed"));
    }
    let variant = parse_variant(&a.variant)?;
    let hasher = parse_hasher(&a.hasher)?;
    let (workload, shape) = a.workload_source().build()?;
    let job = SizeJob {
        targets: a.targets.clone(),
        max_memory: a.max_memory,
        variant,
        hasher,
        seed: a.seed,
        seeds: a.seeds,
        max_work: a.max_work,
        progress: !a.no_progress,
    };
    run_job(&job, workload, shape)
}

/// `ratelab size`.
pub fn run(a: &SizeArgs) -> Result<i32> {
    init_threads(a.threads)?;
    let report = compute(a)?;
    report.write(&a.out)?;
    print!("{}", report.console);
    println!("-> {}", a.out.display());
    match report.failure {
        Some(msg) if !report.met => Err(Error::check(msg)),
        _ => Ok(0),
    }
}
