//! `ratelab check`: rerun scenarios in memory and compare them with the
//! committed baselines (`reports/<name>/report.json`) and with the thresholds
//! each scenario declares in `expect` (see [`crate::check`]).

use super::init_threads;
use crate::check::{compare, evaluate, validate_report, Finding, Spec, Verdict};
use crate::error::{Error, Result};
use crate::lab::{self, RunContext};
use crate::report::write_report;
use crate::scenario::{scenario_files, Scenario};
use serde_json::Value;
use std::path::{Path, PathBuf};

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

/// One scenario to check, with what it is compared against.
struct Item {
    scenario: Scenario,
    spec: Spec,
    baseline: Option<Value>,
}

fn baseline_path(reports: &Path, name: &str) -> PathBuf {
    reports.join(name).join("report.json")
}

/// Reads a report.json; any problem is bad input naming the file.
pub fn read_report(path: &Path) -> Result<Value> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|e| {
        Error::input_at(
            path,
            format!("line {} column {}", e.line(), e.column()),
            "malformed JSON",
        )
    })?;
    validate_report(&v).map_err(|m| Error::input_at(path, "field schema", m))?;
    Ok(v)
}

fn resolve(args: &CheckArgs) -> Result<Vec<PathBuf>> {
    if args.only.is_empty() {
        let files = scenario_files(&args.scenarios)?;
        if files.is_empty() {
            return Err(Error::input(format!(
                "{}: no *.json scenario files",
                args.scenarios.display()
            )));
        }
        return Ok(files);
    }
    args.only
        .iter()
        .map(|s| {
            let p = PathBuf::from(s);
            if s.ends_with(".json") || s.contains('/') {
                Ok(p)
            } else {
                let f = args.scenarios.join(format!("{s}.json"));
                if f.exists() {
                    Ok(f)
                } else {
                    Err(Error::input(format!(
                        "scenario {s:?}: no file {} (give a scenario file or a name from `ratelab list`)",
                        f.display()
                    )))
                }
            }
        })
        .collect()
}

/// `ratelab check`.
pub fn check(args: &CheckArgs) -> Result<i32> {
    init_threads(args.threads)?;
    let files = resolve(args)?;
    // Parse everything (scenarios, expectations, baselines) before running
    // anything, so bad input fails fast with exit code 2.
    let mut items = Vec::new();
    let mut names = std::collections::BTreeSet::new();
    for f in &files {
        let scenario = Scenario::load(f)?;
        if !names.insert(scenario.common.name.clone()) {
            return Err(scenario.field_error(
                "name",
                format!(
                    "value {:?}: another scenario has the same name",
                    scenario.common.name
                ),
            ));
        }
        let spec = Spec::from_scenario(&scenario)?;
        let bp = baseline_path(&args.reports, &scenario.common.name);
        let baseline = if bp.exists() {
            Some(read_report(&bp)?)
        } else if args.update {
            None
        } else {
            return Err(Error::input(format!(
                "{}: no baseline for scenario {:?}; run `ratelab check --update` to create it (then commit it)",
                bp.display(),
                scenario.common.name
            )));
        };
        items.push(Item {
            scenario,
            spec,
            baseline,
        });
    }

    let mut table: Vec<(String, Finding)> = Vec::new();
    let mut summaries = Vec::new();
    let mut failures = 0usize;
    let mut failed_scenarios = 0usize;
    for item in &items {
        let name = &item.scenario.common.name;
        let now = match &args.from {
            Some(dir) => read_report(&baseline_path(dir, name))?,
            None => {
                let ctx = RunContext::for_scenario(&item.scenario);
                let output = lab::run(&item.scenario, &ctx)?;
                if args.update {
                    write_report(&args.reports, name, &output)?;
                }
                output.json
            }
        };
        let mut findings = Vec::new();
        if let Some(base) = &item.baseline {
            findings.extend(compare(base, &now, &item.spec));
        }
        let baseline_failures = if args.update {
            0
        } else {
            findings.iter().filter(|f| f.verdict.failed()).count()
        };
        let compared = findings.len();
        let equal = findings
            .iter()
            .filter(|f| f.verdict == Verdict::Equal)
            .count();
        let expectations = evaluate(&now, item.baseline.as_ref(), &item.spec);
        let expect_failures = expectations.iter().filter(|f| f.verdict.failed()).count();
        let fails = baseline_failures + expect_failures;
        failures += fails;
        if fails > 0 {
            failed_scenarios += 1;
        }
        summaries.push(format!(
            "{name}: {}; {} expectation(s) over {} value(s), {}{}",
            if item.baseline.is_some() {
                format!(
                    "{compared} values compared with the baseline, {equal} equal, {} within tolerance, {baseline_failures} failed",
                    findings.iter().filter(|f| f.verdict == Verdict::Within).count()
                )
            } else {
                "no previous baseline".to_string()
            },
            item.spec.expectations.len(),
            expectations.len(),
            if expect_failures == 0 {
                "all hold".to_string()
            } else {
                format!("{expect_failures} failed")
            },
            if args.update { " -> baseline rewritten" } else { "" },
        ));
        for f in findings
            .into_iter()
            .filter(|f| args.verbose || f.verdict != Verdict::Equal)
        {
            let mut f = f;
            if args.update && f.verdict.failed() {
                f.rule = format!("{} (updated)", f.rule);
                f.verdict = Verdict::Within;
            }
            table.push((name.clone(), f));
        }
        table.extend(expectations.into_iter().map(|f| (name.clone(), f)));
    }

    if !table.is_empty() {
        print!("{}", render_table(&table));
        println!();
    }
    for s in &summaries {
        println!("{s}");
    }
    if args.only.is_empty() {
        for orphan in orphans(&args.reports, &names) {
            println!(
                "note: {} has no scenario in {} (not checked)",
                orphan.display(),
                args.scenarios.display()
            );
        }
    }
    if failures > 0 {
        return Err(Error::check(format!(
            "check failed: {failures} value(s) regressed or broke an expectation in {failed_scenarios} scenario(s); if the change is intended, run `ratelab check --update` and commit {}",
            args.reports.display()
        )));
    }
    println!(
        "check passed: {} scenario(s){}",
        items.len(),
        if args.update {
            format!(", baselines written to {}", args.reports.display())
        } else {
            String::new()
        }
    );
    Ok(0)
}

/// Report folders with a report.json but no scenario of that name.
fn orphans(reports: &Path, names: &std::collections::BTreeSet<String>) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(reports) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("report.json").is_file())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| !n.starts_with('.') && !names.contains(n))
        })
        .collect();
    out.sort();
    out
}

/// The diff table: left-aligned columns.
fn render_table(rows: &[(String, Finding)]) -> String {
    let header = [
        "scenario",
        "field",
        "baseline",
        "now",
        "tolerance",
        "verdict",
    ];
    let cells: Vec<[String; 6]> = rows
        .iter()
        .map(|(s, f)| {
            [
                s.clone(),
                f.path.clone(),
                f.baseline.clone(),
                f.now.clone(),
                f.rule.clone(),
                f.verdict.to_string(),
            ]
        })
        .collect();
    let mut width = header.map(|h| h.chars().count());
    for r in &cells {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |r: &[String]| {
        let parts: Vec<String> = r
            .iter()
            .zip(width)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        parts.join("  ").trim_end().to_string() + "\n"
    };
    let mut out = line(&header.map(String::from));
    out.push_str(&line(&width.map(|w| "-".repeat(w))));
    for r in &cells {
        out.push_str(&line(r));
    }
    out
}
