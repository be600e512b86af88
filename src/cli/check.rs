//! `ratelab check`: rerun scenarios in memory and compare them with the
//! committed baselines (`reports/<name>/report.json`) and with the thresholds
//! each scenario declares in `expect` (see [`crate::check`]).

use super::init_threads;
use crate::check::CheckOptions;
use crate::error::{Error, Result};
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
    /// under --reports (expectations are still enforced).
    #[arg(long, conflicts_with = "from")]
    pub update: bool,
    /// Compare the reports already generated in DIR (e.g. by `ratelab
    /// reproduce --out DIR`) instead of rerunning the scenarios.
    #[arg(long, value_name = "DIR")]
    pub from: Option<PathBuf>,
    /// Show every compared value, not only those that differ.
    #[arg(long)]
    pub verbose: bool,
    /// Worker threads for sweeps (default: all cores). Results do not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
}

/// `ratelab check`.
pub fn check(args: &CheckArgs) -> Result<i32> {
    init_threads(args.threads)?;
    let outcome = crate::check::run(&CheckOptions {
        only: &args.only,
        scenarios: &args.scenarios,
        reports: &args.reports,
        update: args.update,
        from: args.from.as_deref(),
        verbose: args.verbose,
    })?;
    print!("{}", outcome.console);
    match outcome.failure {
        Some(msg) => Err(Error::check(msg)),
        None => Ok(0),
    }
}
