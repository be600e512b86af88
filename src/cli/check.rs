//! `ratelab check`: rerun scenarios in memory and compare them with the
//! committed baselines (`reports/<name>/report.json`) and with the thresholds
//! each scenario declares in `expect` (see [`crate::check`]).

use super::init_threads;
use crate::check::{ci, CheckOptions};
use crate::error::{Error, Result};
use std::io::Write as _;
use std::path::PathBuf;

/// Arguments of `ratelab check`.
#[derive(Debug, Clone, clap::Args)]
pub struct CheckArgs {
    /// Scenario files or names (default: every scenario in --scenarios).
    #[arg(value_name = "SCENARIO")]
    pub only: Vec<String>,
    /// Folder of scenario files.
    #[arg(long = "scenarios", value_name = "DIR", default_value = "scenarios")]
    pub scenarios: PathBuf,
    /// Folder of the committed baselines (one sub-folder per scenario).
    #[arg(long, value_name = "DIR", default_value = "reports", value_parser = crate::report::atomic::parse_out_path)]
    pub reports: PathBuf,
    /// Accept the new results: rewrite each scenario's whole report folder
    /// under --reports. Refused (exit 1, nothing written) while an
    /// expectation fails, unless --force.
    #[arg(long, conflicts_with = "from")]
    pub update: bool,
    /// With --update: write the baselines even though an expectation fails.
    #[arg(long, requires = "update")]
    pub force: bool,
    /// Fail on any difference from the baseline: improvements, configuration
    /// changes and differences within noise too.
    #[arg(long)]
    pub strict: bool,
    /// Rerun every scenario with this seed instead of its own (values with a
    /// run-to-run distribution are still compared; single-run values are
    /// shown as not comparable; expectations still apply).
    #[arg(long, value_name = "N", conflicts_with_all = ["from", "update"])]
    pub seed: Option<u64>,
    /// Also write the results as JUnit XML to FILE (one test case per
    /// scenario baseline and per expectation).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Also write a Markdown summary to FILE (and append it to
    /// $GITHUB_STEP_SUMMARY when that is set).
    #[arg(long = "summary-md", value_name = "FILE")]
    pub summary_md: Option<PathBuf>,
    /// Compare the reports already generated in DIR (e.g. by `ratelab
    /// reproduce --out DIR`) instead of rerunning the scenarios.
    #[arg(long, value_name = "DIR")]
    pub from: Option<PathBuf>,
    /// Show every compared value, not only those that differ.
    #[arg(long)]
    pub verbose: bool,
    /// Worker threads for sweeps (default: all cores). Results do not depend on it.
    /// Not with --from (nothing runs).
    #[arg(long, conflicts_with = "from")]
    pub threads: Option<usize>,
    /// Allow rerunning scenarios whose `exec` entries run a program; also
    /// RATELAB_ALLOW_EXEC=1. Not with --from (nothing runs).
    #[arg(long, conflicts_with = "from")]
    pub allow_exec: bool,
    /// How estimator sketches are evaluated when rerunning (see `ratelab run --help`):
    /// `events` replays every event, to check the per-key fast path against the baselines.
    #[arg(long, value_enum, default_value = "auto", conflicts_with = "from")]
    pub replay: crate::lab::ReplayMode,
}

/// `ratelab check`.
pub fn check(args: &CheckArgs) -> Result<i32> {
    init_threads(args.threads)?;
    // Every output is opened before the work: an unwritable one fails
    // first, and none replaces an earlier file until all are written.
    let targets: Vec<PathBuf> = [&args.junit, &args.summary_md]
        .into_iter()
        .flatten()
        .cloned()
        .collect();
    let pending = crate::report::pending::Pending::open_all(&targets)?;
    let outcome = crate::check::run(&CheckOptions {
        only: &args.only,
        scenarios: &args.scenarios,
        reports: &args.reports,
        update: args.update,
        force: args.force,
        from: args.from.as_deref(),
        verbose: args.verbose,
        strict: args.strict,
        seed: args.seed,
        allow_exec: args.allow_exec,
        replay: args.replay,
    })?;
    out!("{}", outcome.console);
    let strict = args.strict;
    let md = ci::markdown(&outcome.results, strict);
    let mut contents = Vec::new();
    if args.junit.is_some() {
        contents.push(ci::junit(&outcome.results, strict).into_bytes());
    }
    if args.summary_md.is_some() {
        contents.push(md.clone().into_bytes());
    }
    crate::report::pending::Pending::commit_all(pending, &contents)?;
    if let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        f.write_all(md.as_bytes())
            .map_err(|e| Error::io(&path, e))?;
    }
    if std::env::var_os("GITHUB_ACTIONS").is_some_and(|v| v == "true") {
        out!("{}", ci::annotations(&outcome.results, strict));
    }
    match outcome.failure {
        Some(msg) => Err(Error::check(msg)),
        None => Ok(0),
    }
}
