//! The `size` kind: a sizing written as a scenario, so that `reproduce`
//! regenerates it and `check` compares it like every other report.
//!
//! The scenario holds the `ratelab size` command's arguments as they would
//! be typed (`"args": ["--keys", "10000", "--target", "exact_pct>=70"]`):
//! one grammar for the command and the file, and the file reads like the
//! command it stands for. A relative `--trace` or `--workload` is read
//! against the scenario's folder; the seed is the scenario's `seed` (so
//! `--seed` is refused in `args`), and `--out`, `--threads`,
//! `--no-progress` and `--shard` belong to the run, not to the scenario.
//!
//! The report folder holds what `ratelab size --out` writes (`size.json`,
//! `size.md`, `frontier.svg`/`.png`) plus `report.json`, whose `size` field
//! is `size.json`'s content, and `table.md` = `size.md`.
//!
//! # Examples
//!
//! ```
//! use ratelab::lab::{self, RunContext};
//! use ratelab::scenario::Scenario;
//!
//! let sc = Scenario::parse(
//!     std::path::Path::new("tiny.json"),
//!     r#"{"name": "tiny", "kind": "size",
//!         "args": ["--keys", "200", "--dist", "uniform", "--events", "2000",
//!                  "--target", "max<=40", "--seeds", "1"]}"#,
//! )
//! .unwrap();
//! let out = ratelab::kinds::run(&sc, &RunContext::for_scenario(&sc)).unwrap();
//! assert_eq!(out.json["kind"], "size");
//! assert!(out.json["size"]["recommendation"]["slots"].as_u64().unwrap() >= 1);
//! assert!(out.extra_files.iter().any(|(n, _)| n == "size.json"));
//! ```

use super::command::{compute, SizeArgs};
use super::report::SizeReport;
use crate::error::Result;
use crate::lab::experiment::Experiment;
use crate::lab::RunContext;
use crate::report::{Output, ReportBuilder};
use crate::scenario::Scenario;
use clap::Parser;

/// The fields of a `size` scenario.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// `ratelab size`'s arguments, as typed.
    pub args: Vec<String>,
}

/// `args` parsed as `ratelab size` parses them.
#[derive(Debug, Parser)]
#[command(name = "size", no_binary_name = false)]
struct Command {
    #[command(flatten)]
    args: SizeArgs,
}

/// Flags that belong to the run, not to the scenario.
const RUN_FLAGS: [&str; 5] = ["--out", "--seed", "--threads", "--no-progress", "--shard"];

/// The `size` kind.
pub struct SizeScenario;

impl Experiment for SizeScenario {
    type Params = Params;
    type Plan = SizeArgs;
    type Outcome = SizeReport;

    fn validate(sc: &Scenario, p: Params, ctx: &RunContext) -> Result<SizeArgs> {
        let why = |flag: &str| {
            if flag == "--seed" {
                "the scenario's `seed` field is the seed"
            } else {
                "it belongs to the run (ratelab run/reproduce), not to the scenario"
            }
        };
        let mut a =
            crate::scenario::parse_args::<Command>(sc, "size", &p.args, &[], &RUN_FLAGS, why)?.args;
        let dir = sc.path.parent().unwrap_or(std::path::Path::new(""));
        for p in [&mut a.trace, &mut a.workload].into_iter().flatten() {
            if p.is_relative() && p.as_os_str() != "-" {
                *p = dir.join(&*p);
            }
        }
        if a.trace.as_deref().is_some_and(|t| t.as_os_str() == "-") {
            return Err(sc.field_error(
                "args",
                "--trace -: a scenario cannot read standard input; name a file",
            ));
        }
        a.seed = ctx.seed;
        a.no_progress = !ctx.progress;
        a.max_work = a.max_work.min(ctx.max_work);
        Ok(a)
    }

    /// The search checks its own work and memory against `--max-work` and
    /// `--max-memory` before it starts (capped by the run's budget in
    /// [`validate`](Self::validate)).
    fn estimate_work(_: &Scenario, _: &SizeArgs, _: &RunContext) -> Result<()> {
        Ok(())
    }

    fn run(_: &Scenario, a: &SizeArgs, _: &RunContext) -> Result<SizeReport> {
        compute(a)
    }

    fn render(sc: &Scenario, _: &SizeArgs, ctx: &RunContext, r: SizeReport) -> Result<Output> {
        let mut report = ReportBuilder::new(sc, ctx.seed, None);
        report.field("size", r.json.clone());
        report.md(&r.md);
        report.console(&r.console);
        if let Some(c) = &r.chart {
            report.rendered_chart(c.clone());
        }
        for (name, bytes) in r.files() {
            if name.ends_with(".json") || name.ends_with(".md") {
                report.extra_file(&name, bytes);
            }
        }
        Ok(report.finish())
    }
}
