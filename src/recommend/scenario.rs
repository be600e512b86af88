//! The `recommend` kind: a recommendation written as a scenario, so that
//! `reproduce` regenerates it and `check` compares it like every other
//! report.
//!
//! The scenario holds `ratelab recommend`'s arguments as typed (`"args":
//! ["--trace", "traces/log.csv", "--limit", "10", ...]`); a relative
//! `--trace` is read against the scenario's folder, the seed is the
//! scenario's `seed` (`--seed` is refused in `args`), and `--out` and
//! `--threads` belong to the run. The report folder holds what `ratelab
//! recommend --out` writes plus `report.json`, whose `recommend` field is
//! `recommend.json`'s content.

use super::{compute, RecommendArgs, Recommendation};
use crate::error::Result;
use crate::lab::experiment::Experiment;
use crate::lab::RunContext;
use crate::report::{Output, ReportBuilder};
use crate::scenario::Scenario;
use clap::Parser;

/// The fields of a `recommend` scenario.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// `ratelab recommend`'s arguments, as typed (without `--out`).
    pub args: Vec<String>,
}

#[derive(Debug, Parser)]
#[command(name = "recommend")]
struct Command {
    #[command(flatten)]
    args: RecommendArgs,
}

const RUN_FLAGS: [&str; 3] = ["--out", "--seed", "--threads"];

/// The `recommend` kind.
pub struct RecommendScenario;

impl Experiment for RecommendScenario {
    type Params = Params;
    type Plan = RecommendArgs;
    type Outcome = Recommendation;

    fn validate(sc: &Scenario, p: Params, ctx: &RunContext) -> Result<RecommendArgs> {
        // --out is required by the command; the run's folder replaces it.
        let mut a = crate::scenario::parse_args::<Command>(
            sc,
            "recommend",
            &p.args,
            &["--out", "unused"],
            &RUN_FLAGS,
            |_| "the seed is the scenario's `seed`; --out and --threads belong to the run",
        )?
        .args;
        let dir = sc.path.parent().unwrap_or(std::path::Path::new(""));
        if a.trace.as_os_str() == "-" {
            return Err(sc.field_error(
                "args",
                "--trace -: a scenario cannot read standard input; name a file",
            ));
        }
        if a.trace.is_relative() {
            a.trace = dir.join(&a.trace);
        }
        a.seed = ctx.seed;
        Ok(a)
    }

    fn estimate_work(_: &Scenario, _: &RecommendArgs, _: &RunContext) -> Result<()> {
        Ok(())
    }

    fn run(_: &Scenario, a: &RecommendArgs, _: &RunContext) -> Result<Recommendation> {
        compute(a)
    }

    fn render(
        sc: &Scenario,
        _: &RecommendArgs,
        ctx: &RunContext,
        r: Recommendation,
    ) -> Result<Output> {
        let mut report = ReportBuilder::new(sc, ctx.seed, None);
        report.field("recommend", r.json.clone());
        report.md(&r.md);
        report.console(&r.console);
        if let Some(c) = &r.chart {
            report.rendered_chart(c.clone());
        }
        for (name, bytes) in r.files() {
            if name == "recommend.json" || r.snippet.as_ref().is_some_and(|s| s.0 == name) {
                report.extra_file(&name, bytes);
            }
        }
        Ok(report.finish())
    }
}
