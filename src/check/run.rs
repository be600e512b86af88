//! A whole check: which scenarios, their baselines read before anything runs,
//! each scenario rerun (or its report read from a folder), compared and its
//! expectations evaluated, and the text that tells the outcome.

use super::baseline::{baseline_path, orphans, read_report};
use super::diff::compare;
use super::expect::evaluate;
use super::findings::{render_table, Finding, Verdict};
use super::spec::Spec;
use crate::error::{Error, Result};
use crate::lab::{self, RunContext};
use crate::report::write_report;
use crate::scenario::{scenario_files, Scenario};
use serde_json::Value;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// What to check, and how.
#[derive(Debug, Clone, Copy)]
pub struct CheckOptions<'a> {
    /// Scenario files or names (empty: every scenario in `scenarios`).
    pub only: &'a [String],
    /// Folder of scenario files.
    pub scenarios: &'a Path,
    /// Folder of the committed baselines (one sub-folder per scenario).
    pub reports: &'a Path,
    /// Rewrite each scenario's report folder under `reports`.
    pub update: bool,
    /// Read the new reports from this folder instead of rerunning.
    pub from: Option<&'a Path>,
    /// List every compared value, not only those that differ.
    pub verbose: bool,
}

/// What a check found.
#[derive(Debug, Clone)]
pub struct CheckOutcome {
    /// The text to print: the table of findings, one summary line per
    /// scenario, notes, and on success the closing line.
    pub console: String,
    /// The one-line failure message when a value regressed or an
    /// expectation failed.
    pub failure: Option<String>,
}

/// One scenario to check, with what it is compared against.
struct Item {
    scenario: Scenario,
    spec: Spec,
    baseline: Option<Value>,
}

/// What checking one scenario found.
struct ItemResult {
    /// Its line in the summary.
    summary: String,
    /// Its rows in the table.
    rows: Vec<(String, Finding)>,
    /// Values that regressed and expectations that failed.
    failures: usize,
}

/// Runs a check. Bad input (a scenario, an expectation, a missing baseline)
/// is an error before anything runs; regressions are in the outcome.
pub fn run(opts: &CheckOptions<'_>) -> Result<CheckOutcome> {
    let files = resolve(opts)?;
    // Parse everything (scenarios, expectations, baselines) before running
    // anything, so bad input fails fast with exit code 2.
    let (items, names) = load_items(&files, opts)?;
    let mut table: Vec<(String, Finding)> = Vec::new();
    let mut summaries = Vec::new();
    let mut failures = 0usize;
    let mut failed_scenarios = 0usize;
    for item in &items {
        let r = check_item(item, opts)?;
        failures += r.failures;
        if r.failures > 0 {
            failed_scenarios += 1;
        }
        summaries.push(r.summary);
        table.extend(r.rows);
    }
    let mut console = String::new();
    if !table.is_empty() {
        console.push_str(&render_table(&table));
        console.push('\n');
    }
    for s in &summaries {
        let _ = writeln!(console, "{s}");
    }
    if opts.only.is_empty() {
        for orphan in orphans(opts.reports, &names) {
            let _ = writeln!(
                console,
                "note: {} has no scenario in {} (not checked)",
                orphan.display(),
                opts.scenarios.display()
            );
        }
    }
    if failures > 0 {
        let failure = format!(
            "check failed: {failures} value(s) regressed or broke an expectation in {failed_scenarios} scenario(s); if the change is intended, run `ratelab check --update` and commit {}",
            opts.reports.display()
        );
        return Ok(CheckOutcome {
            console,
            failure: Some(failure),
        });
    }
    let _ = writeln!(
        console,
        "check passed: {} scenario(s){}",
        items.len(),
        if opts.update {
            format!(", baselines written to {}", opts.reports.display())
        } else {
            String::new()
        }
    );
    Ok(CheckOutcome {
        console,
        failure: None,
    })
}

/// The scenario files to check: those named, or every one in the folder.
fn resolve(opts: &CheckOptions<'_>) -> Result<Vec<PathBuf>> {
    if opts.only.is_empty() {
        let files = scenario_files(opts.scenarios)?;
        if files.is_empty() {
            return Err(Error::input(format!(
                "{}: no *.json scenario files",
                opts.scenarios.display()
            )));
        }
        return Ok(files);
    }
    opts.only
        .iter()
        .map(|s| {
            let p = PathBuf::from(s);
            if s.ends_with(".json") || s.contains('/') {
                Ok(p)
            } else {
                let f = opts.scenarios.join(format!("{s}.json"));
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

/// Loads every scenario, its expectations and its baseline; also returns the
/// scenario names.
fn load_items(files: &[PathBuf], opts: &CheckOptions<'_>) -> Result<(Vec<Item>, BTreeSet<String>)> {
    let mut items = Vec::new();
    let mut names = BTreeSet::new();
    for f in files {
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
        let bp = baseline_path(opts.reports, &scenario.common.name);
        let baseline = if bp.exists() {
            Some(read_report(&bp)?)
        } else if opts.update {
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
    Ok((items, names))
}

/// The new report of a scenario: read from `--from`, or rerun (and, with
/// `--update`, written as the new baseline).
fn new_report(item: &Item, opts: &CheckOptions<'_>) -> Result<Value> {
    let name = &item.scenario.common.name;
    match opts.from {
        Some(dir) => read_report(&baseline_path(dir, name)),
        None => {
            let ctx = RunContext::for_scenario(&item.scenario);
            let output = lab::run(&item.scenario, &ctx)?;
            if opts.update {
                write_report(opts.reports, name, &output)?;
            }
            Ok(output.json)
        }
    }
}

/// Checks one scenario: its baseline diff and its expectations.
fn check_item(item: &Item, opts: &CheckOptions<'_>) -> Result<ItemResult> {
    let name = &item.scenario.common.name;
    let now = new_report(item, opts)?;
    let mut findings = Vec::new();
    if let Some(base) = &item.baseline {
        findings.extend(compare(base, &now, &item.spec));
    }
    let baseline_failures = if opts.update {
        0
    } else {
        findings.iter().filter(|f| f.verdict.failed()).count()
    };
    let expectations = evaluate(&now, item.baseline.as_ref(), &item.spec);
    let expect_failures = expectations.iter().filter(|f| f.verdict.failed()).count();
    let summary = summary_line(item, opts, &findings, baseline_failures, &expectations);
    let mut rows = Vec::new();
    for mut f in findings
        .into_iter()
        .filter(|f| opts.verbose || f.verdict != Verdict::Equal)
    {
        if opts.update && f.verdict.failed() {
            f.rule = format!("{} (updated)", f.rule);
            f.verdict = Verdict::Within;
        }
        rows.push((name.clone(), f));
    }
    rows.extend(expectations.into_iter().map(|f| (name.clone(), f)));
    Ok(ItemResult {
        summary,
        rows,
        failures: baseline_failures + expect_failures,
    })
}

/// A scenario's summary line: values compared with the baseline and
/// expectations evaluated, with how many failed.
fn summary_line(
    item: &Item,
    opts: &CheckOptions<'_>,
    findings: &[Finding],
    baseline_failures: usize,
    expectations: &[Finding],
) -> String {
    let count = |v: Verdict| findings.iter().filter(|f| f.verdict == v).count();
    let expect_failures = expectations.iter().filter(|f| f.verdict.failed()).count();
    format!(
        "{}: {}; {} expectation(s) over {} value(s), {}{}",
        item.scenario.common.name,
        if item.baseline.is_some() {
            format!(
                "{} values compared with the baseline, {} equal, {} within tolerance, {baseline_failures} failed",
                findings.len(),
                count(Verdict::Equal),
                count(Verdict::Within)
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
        if opts.update {
            " -> baseline rewritten"
        } else {
            ""
        },
    )
}
