//! A whole check: which scenarios, their baselines read before anything runs,
//! each scenario rerun (or its report read from a folder), compared and its
//! expectations evaluated, and the text that tells the outcome: one block per
//! scenario, failing scenarios first, expectation failures first within a
//! block, then regressions, then the rest.

use super::baseline::{baseline_path, orphans, read_report};
use super::criteria::Spec;
use super::diff::compare_reseeded;
use super::expect::evaluate;
use super::findings::{Finding, Verdict};
use crate::error::{Error, Result};
use crate::lab::RunContext;
use crate::report::{write_report, Output};
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
    /// With `update`: rewrite even when an expectation fails.
    pub force: bool,
    /// Read the new reports from this folder instead of rerunning.
    pub from: Option<&'a Path>,
    /// List every compared value, not only those that differ.
    pub verbose: bool,
    /// Fail on any difference (improvements, changes, noise too).
    pub strict: bool,
    /// Rerun every scenario with this seed instead of its own.
    pub seed: Option<u64>,
    /// Let scenarios with `exec` entries run (see [`crate::lab::trust`]).
    pub allow_exec: bool,
    /// How the estimator labs evaluate sketches when rerunning.
    pub replay: crate::lab::ReplayMode,
}

/// What checking one scenario found.
#[derive(Debug, Clone)]
pub struct ScenarioResult {
    /// Scenario name.
    pub name: String,
    /// Its scenario file.
    pub file: PathBuf,
    /// Whether it had a baseline.
    pub has_baseline: bool,
    /// The baseline diff, every compared value.
    pub diff: Vec<Finding>,
    /// One entry per `expect` entry: its text and the values it selected.
    pub expectations: Vec<(String, Vec<Finding>)>,
    /// Its baseline was rewritten (`--update`).
    pub rewritten: bool,
}

impl ScenarioResult {
    /// Count of baseline values with this verdict.
    pub fn count(&self, v: Verdict) -> usize {
        self.diff.iter().filter(|f| f.verdict == v).count()
    }

    /// Failing expectation values.
    pub fn expect_failures(&self) -> Vec<&Finding> {
        self.expectations
            .iter()
            .flat_map(|(_, f)| f)
            .filter(|f| f.verdict.failed())
            .collect()
    }

    /// Baseline values that fail the check.
    pub fn diff_failures(&self, strict: bool) -> Vec<&Finding> {
        if self.rewritten {
            return Vec::new();
        }
        self.diff
            .iter()
            .filter(|f| f.verdict.fails(strict))
            .collect()
    }

    /// Whether the scenario fails the check.
    pub fn failed(&self, strict: bool) -> bool {
        !self.expect_failures().is_empty() || !self.diff_failures(strict).is_empty()
    }
}

/// What a check found.
#[derive(Debug, Clone)]
pub struct CheckOutcome {
    /// The text to print: one block per scenario, notes, and on success the
    /// closing line.
    pub console: String,
    /// The one-line failure message when a value regressed or an
    /// expectation failed.
    pub failure: Option<String>,
    /// Every scenario's results, in the order checked.
    pub results: Vec<ScenarioResult>,
}

/// One scenario to check, with what it is compared against.
struct Item {
    scenario: Scenario,
    spec: Spec,
    baseline: Option<Value>,
    /// `--seed` gave a seed other than the scenario's own: single-run
    /// values are not comparable.
    reseeded: bool,
    /// The seed the baseline was made with (its `seed` field, an integer;
    /// anything else is refused when it is read). A scenario whose `seed`
    /// was edited since (a reseed, as users do it) is compared as one run
    /// with `--seed`.
    baseline_seed: Option<u64>,
}

/// Runs a check. Bad input (a scenario, an expectation, a missing baseline)
/// is an error before anything runs; regressions are in the outcome.
pub fn run(opts: &CheckOptions<'_>) -> Result<CheckOutcome> {
    let files = resolve(opts)?;
    // Parse everything (scenarios, expectations, baselines) before running
    // anything, so bad input fails fast with exit code 2.
    let (items, names) = load_items(&files, opts)?;
    if opts.from.is_none() {
        crate::lab::trust::require(items.iter().map(|i| &i.scenario), opts.allow_exec)?;
    }
    let mut results = Vec::new();
    let mut outputs: Vec<Option<Output>> = Vec::new();
    for item in &items {
        let (now, output) = new_report(item, opts)?;
        // A report read with --from says its own seed; a rerun used the
        // scenario's (after --seed).
        let now_seed = match opts.from {
            Some(dir) => report_seed(&baseline_path(dir, &item.scenario.common.name), &now)?,
            None => None,
        }
        .unwrap_or(item.scenario.common.seed);
        results.push(check_item(item, &now, now_seed));
        outputs.push(output);
    }
    let mut console = String::new();
    let mut refused = None;
    if opts.update {
        let failing: Vec<String> = results
            .iter()
            .flat_map(|r| {
                r.expect_failures()
                    .into_iter()
                    .map(move |f| format!("{}: {} {}", r.name, f.path, f.rule))
            })
            .collect();
        if !failing.is_empty() && !opts.force {
            refused = Some(format!(
                "refusing to update the baselines: {} expectation value(s) fail ({}); fix them, or rerun with --force to write anyway",
                failing.len(),
                failing.join("; ")
            ));
        } else {
            for (r, o) in results.iter_mut().zip(&outputs) {
                if let Some(o) = o {
                    write_report(opts.reports, &r.name, o)?;
                    r.rewritten = true;
                }
            }
        }
    }
    console.push_str(&render(&results, opts));
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
    if let Some(msg) = refused {
        return Ok(CheckOutcome {
            console,
            failure: Some(msg),
            results,
        });
    }
    let failed: Vec<&ScenarioResult> = results.iter().filter(|r| r.failed(opts.strict)).collect();
    if !failed.is_empty() {
        let expect: usize = failed.iter().map(|r| r.expect_failures().len()).sum();
        let diff: usize = failed
            .iter()
            .map(|r| r.diff_failures(opts.strict).len())
            .sum();
        let failure = format!(
            "check failed in {} scenario(s) ({}): {expect} expectation value(s) failed, {diff} baseline value(s) {}; if the change is intended, run `ratelab check --update` and commit {}",
            failed.len(),
            failed.iter().map(|r| r.name.as_str()).collect::<Vec<_>>().join(", "),
            if opts.strict { "differ (--strict)" } else { "regressed" },
            opts.reports.display()
        );
        return Ok(CheckOutcome {
            console,
            failure: Some(failure),
            results,
        });
    }
    let improved = results
        .iter()
        .filter(|r| r.count(Verdict::Improved) > 0)
        .count();
    if improved > 0 && !opts.update {
        let _ = writeln!(
            console,
            "improved: update the baseline ({improved} scenario(s) improved; run `ratelab check --update` and commit {})",
            opts.reports.display()
        );
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
        results,
    })
}

/// Whether a finding is a single-run value made incomparable by a new seed.
pub fn not_comparable(f: &Finding) -> bool {
    f.verdict == Verdict::Changed && f.rule.starts_with("single run")
}

/// The console text: one block per scenario, failing ones first.
fn render(results: &[ScenarioResult], opts: &CheckOptions<'_>) -> String {
    let mut order: Vec<&ScenarioResult> = results.iter().collect();
    order.sort_by_key(|r| {
        if r.failed(opts.strict) {
            0
        } else if r.diff.iter().any(|f| f.verdict != Verdict::Equal) {
            1
        } else {
            2
        }
    });
    let mut out = String::new();
    for r in order {
        out.push_str(&block(r, opts));
    }
    out
}

/// One scenario's block: its status line, then its rows.
fn block(r: &ScenarioResult, opts: &CheckOptions<'_>) -> String {
    let mut rows: Vec<&Finding> = Vec::new();
    rows.extend(r.expect_failures());
    let mut diff: Vec<&Finding> = r
        .diff
        .iter()
        .filter(|f| {
            opts.verbose
                || matches!(
                    f.verdict,
                    Verdict::Regressed
                        | Verdict::Missing
                        | Verdict::New
                        | Verdict::Improved
                        | Verdict::Changed
                        | Verdict::Within
                ) && !not_comparable(f)
        })
        .collect();
    diff.sort_by_key(|f| f.verdict);
    rows.extend(diff);
    rows.extend(
        r.expectations
            .iter()
            .flat_map(|(_, f)| f)
            .filter(|f| !f.verdict.failed()),
    );
    let status = if r.failed(opts.strict) {
        "FAILED"
    } else {
        "ok"
    };
    let mut parts = Vec::new();
    let ef = r.expect_failures().len();
    let nexp: usize = r.expectations.iter().map(|(_, f)| f.len()).sum();
    parts.push(if ef > 0 {
        format!("{ef} of {nexp} expectation value(s) FAILED")
    } else {
        format!(
            "{} expectation(s) over {nexp} value(s) hold",
            r.expectations.len()
        )
    });
    if r.has_baseline {
        let c = |v| r.count(v);
        let regressed = c(Verdict::Regressed) + c(Verdict::Missing) + c(Verdict::New);
        let nc = r.diff.iter().filter(|f| not_comparable(f)).count();
        let mut s = format!(
            "baseline: {} value(s): {regressed} regressed, {} improved, {} changed, {} within noise, {} equal",
            r.diff.len(),
            c(Verdict::Improved),
            c(Verdict::Changed) - nc,
            c(Verdict::WithinNoise) + c(Verdict::Within),
            c(Verdict::Equal),
        );
        if nc > 0 {
            let _ = write!(
                s,
                ", {nc} single-run value(s) not comparable after a new seed or run count"
            );
        }
        parts.push(s);
    } else {
        parts.push("no previous baseline".into());
    }
    if r.rewritten {
        parts.push("baseline rewritten".into());
    }
    let mut out = format!("== {}: {status}; {}\n", r.name, parts.join("; "));
    if !rows.is_empty() {
        out.push_str(&table(&rows));
    }
    out.push('\n');
    out
}

/// A block's rows in aligned columns: verdict, field, baseline, now, rule.
fn table(rows: &[&Finding]) -> String {
    let cells: Vec<[String; 5]> = rows
        .iter()
        .map(|f| {
            [
                f.verdict.to_string(),
                f.path.clone(),
                if f.baseline.is_empty() {
                    "-".into()
                } else {
                    f.baseline.clone()
                },
                f.now.clone(),
                f.rule.clone(),
            ]
        })
        .collect();
    let mut width = [0usize; 5];
    for r in &cells {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in &cells {
        let parts: Vec<String> = r
            .iter()
            .zip(width)
            .enumerate()
            .map(|(i, (c, w))| match i {
                2 => format!("{c:>w$} ->"),
                _ => format!("{c:<w$}"),
            })
            .collect();
        out.push_str("  ");
        out.push_str(parts.join("  ").trim_end());
        out.push('\n');
    }
    out
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
        let mut scenario = Scenario::load(f)?;
        if !names.insert(scenario.common.name.clone()) {
            return Err(scenario.field_error(
                "name",
                format!(
                    "value {:?}: another scenario has the same name",
                    scenario.common.name
                ),
            ));
        }
        let reseeded = opts.seed.is_some_and(|s| s != scenario.common.seed);
        if let Some(seed) = opts.seed {
            scenario.common.seed = seed;
        }
        let spec = Spec::from_scenario(&scenario)?;
        let bp = baseline_path(opts.reports, &scenario.common.name);
        // A report.json there in any form is read (a dangling link or a loop
        // is named as such, not as a missing baseline).
        let baseline = if bp.symlink_metadata().is_ok() {
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
        let baseline_seed = match &baseline {
            Some(b) => report_seed(&bp, b)?,
            None => None,
        };
        items.push(Item {
            scenario,
            spec,
            baseline,
            reseeded,
            baseline_seed,
        });
    }
    Ok((items, names))
}

/// A report's `seed`: the integer it was made with, or none when the report
/// has no `seed` field. A seed written any other way (a string, a float, a
/// negative number: a hand-edited report) is refused, naming the file: it
/// decides whether single-run values are comparable, so it is never guessed.
///
/// # Examples
///
/// ```
/// use ratelab::check::run::report_seed;
/// let p = std::path::Path::new("reports/x/report.json");
/// assert_eq!(report_seed(p, &serde_json::json!({"seed": 7})).unwrap(), Some(7));
/// let e = report_seed(p, &serde_json::json!({"seed": "7"})).unwrap_err();
/// assert!(e.to_string().contains("field seed: value \"7\""));
/// ```
pub fn report_seed(path: &Path, report: &Value) -> Result<Option<u64>> {
    match report.get("seed") {
        None => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| {
            Error::input_at(
                path,
                "field seed",
                format!(
                    "value {v}: expected the integer seed the report was made with (ratelab writes one; rewrite it as a number, or regenerate the report)"
                ),
            )
        }),
    }
}

/// The new report of a scenario: read from `--from`, or rerun (the output
/// kept for `--update`).
fn new_report(item: &Item, opts: &CheckOptions<'_>) -> Result<(Value, Option<Output>)> {
    let name = &item.scenario.common.name;
    match opts.from {
        Some(dir) => Ok((read_report(&baseline_path(dir, name))?, None)),
        None => {
            let ctx = RunContext {
                replay: opts.replay,
                ..RunContext::for_scenario(&item.scenario)
            };
            let output = crate::kinds::run(&item.scenario, &ctx)?;
            Ok((output.json.clone(), opts.update.then_some(output)))
        }
    }
}

/// Checks one scenario: its baseline diff and its expectations.
fn check_item(item: &Item, now: &Value, now_seed: u64) -> ScenarioResult {
    // Another seed than the baseline's, from the command line or from the
    // scenario file edited since the baseline was written.
    let reseeded = item.reseeded || item.baseline_seed.is_some_and(|b| b != now_seed);
    let diff = match &item.baseline {
        Some(base) => compare_reseeded(base, now, &item.spec, reseeded),
        None => Vec::new(),
    };
    let expectations = item
        .spec
        .expectations
        .iter()
        .map(|e| {
            let one = Spec {
                expectations: vec![e.clone()],
                tolerances: Vec::new(),
            };
            (
                format!("{} {}", e.pattern, e.text),
                evaluate(now, item.baseline.as_ref(), &one),
            )
        })
        .collect();
    ScenarioResult {
        name: item.scenario.common.name.clone(),
        file: item.scenario.path.clone(),
        has_baseline: item.baseline.is_some(),
        diff,
        expectations,
        rewritten: false,
    }
}
