//! `run`, `reproduce` and `list`.

use super::{init_threads, RunOpts};
use crate::error::{Error, Result};
use crate::kinds::{self, KINDS};
use crate::lab::shard;
use crate::lab::RunContext;
use crate::report::atomic::write_file as write_file_atomic;
use crate::report::write_report;
use crate::scenario::{scenario_files, Scenario};
use std::io::Write;
use std::path::{Path, PathBuf};

mod concurrent;

fn context(scenario: &Scenario, opts: &RunOpts) -> RunContext {
    let mut ctx = RunContext::for_scenario(scenario);
    if let Some(seed) = opts.seed {
        ctx.seed = seed;
    }
    ctx.runs = opts.runs;
    ctx.max_memory = opts.max_memory;
    ctx.max_work = opts.max_work;
    ctx.progress = !opts.no_progress;
    ctx.decisions = opts.decisions.clone();
    ctx.replay = opts.replay;
    ctx
}

/// What one scenario's run leaves to do once it is its turn to be shown:
/// files to write and the text to print. Computing it writes nothing, so
/// `reproduce` can compute several at once and still write and print in
/// file order.
enum Pending {
    /// A sweep shard: its file and the line that names it.
    Shard {
        path: PathBuf,
        bytes: Vec<u8>,
        line: String,
    },
    /// A kind that is not a sweep, on a shard other than 0: one line.
    Skipped(String),
    /// A whole report, after the determinism check's line if one ran.
    Report {
        check: Option<String>,
        output: Box<crate::report::Output>,
    },
}

/// The kinds that repeat runs with fresh hash seeds (`runs`, `--runs`).
const KINDS_WITH_RUNS: &[&str] = &["estimator_accuracy", "rate_vs_oracle", "inflight_accuracy"];

/// The kinds whose estimator sketches `--replay` evaluates.
const KINDS_WITH_REPLAY: &[&str] = &["estimator_accuracy", "estimator_characterization"];

/// Refuses a scenario's `runs` that its kind never reads (it would be
/// ignored without a word).
fn refuse_unread_runs(scenario: &Scenario) -> Result<()> {
    let kind = scenario.common.kind.as_str();
    match scenario.common.runs {
        Some(runs) if !KINDS_WITH_RUNS.contains(&kind) && kinds::kind(kind).is_some() => {
            Err(scenario.field_error(
                "runs",
                format!(
                    "value {runs}: a {kind} scenario does not repeat runs (only {} do): expected no runs",
                    KINDS_WITH_RUNS.join(", ")
                ),
            ))
        }
        _ => Ok(()),
    }
}

/// Refuses a `run` option the one scenario's kind never reads: `--runs`
/// and `--replay events` (`reproduce` applies them to the scenarios that
/// read them).
fn refuse_unread_options(scenario: &Scenario, opts: &RunOpts) -> Result<()> {
    let kind = scenario.common.kind.as_str();
    if kinds::kind(kind).is_none() {
        return Ok(());
    }
    if let Some(runs) = opts.runs
        && !KINDS_WITH_RUNS.contains(&kind)
    {
        return Err(Error::input(format!(
            "--runs {runs}: {} is a {kind} scenario, which does not repeat runs (only {} do)",
            scenario.path.display(),
            KINDS_WITH_RUNS.join(", ")
        )));
    }
    if opts.replay == crate::lab::ReplayMode::Events && !KINDS_WITH_REPLAY.contains(&kind) {
        return Err(Error::input(format!(
            "--replay events: {} is a {kind} scenario, which has no estimator sketches to replay (only {} have)",
            scenario.path.display(),
            KINDS_WITH_REPLAY.join(", ")
        )));
    }
    Ok(())
}

/// Runs one scenario to its [`Pending`] writes and text.
fn compute(scenario: &Scenario, opts: &RunOpts) -> Result<Pending> {
    refuse_unread_runs(scenario)?;
    // `expect` and `tolerance` are for `check`, but a malformed condition
    // is refused here too rather than first found in CI.
    crate::check::Spec::from_scenario(scenario)?;
    if let Some(runs) = opts.runs
        && (runs == 0 || runs > crate::scenario::MAX_RUNS)
    {
        return Err(Error::input(format!(
            "--runs {runs}: expected 1..={} runs",
            crate::scenario::MAX_RUNS
        )));
    }
    if opts.decisions.is_some() && scenario.common.kind != "decision_accuracy" {
        return Err(Error::input(format!(
            "--decisions: {} is a {} scenario; only decision_accuracy scenarios have decisions to write",
            scenario.path.display(),
            scenario.common.kind
        )));
    }
    // Whatever the kind: a shard that splits decides only its own keys'
    // requests, and one that does not split runs whole on shard 0 only,
    // so no shard's file would be every request's decision.
    if opts.shard.is_some() && opts.decisions.is_some() {
        return Err(Error::input(
            "--decisions with --shard: a shard decides only its own keys' requests (a deployment runs on shard 0 only); write the decisions from an unsharded run",
        ));
    }
    let ctx = context(scenario, opts);
    if let Some(shard) = opts.shard {
        if shard::splits(scenario) {
            let (bytes, what) = shard::run_shard(scenario, &ctx, shard)?;
            let path = opts.out.join(shard.file_name(&scenario.common.name));
            let line = format!(
                "== {} shard {}/{}: {what} -> {}\n",
                scenario.common.name,
                shard.index,
                shard.count,
                path.display()
            );
            return Ok(Pending::Shard { path, bytes, line });
        }
        if shard.index != 0 {
            return Ok(Pending::Skipped(format!(
                "== {}: kind {}{} does not split; shard 0/{} runs it whole, skipped here\n",
                scenario.common.name,
                scenario.common.kind,
                if scenario.common.kind == "decision_accuracy" {
                    " with a deployment"
                } else {
                    ""
                },
                shard.count
            )));
        }
    }
    let output = kinds::run(scenario, &ctx)?;
    let check = if opts.check_determinism {
        Some(crate::check::determinism::rerun_on_one_thread(
            scenario, &ctx, &output,
        )?)
    } else {
        None
    };
    Ok(Pending::Report {
        check,
        output: Box::new(output),
    })
}

/// Writes what `pending` holds and returns what to print, byte for byte
/// what `run` has always printed.
fn finish(scenario: &Scenario, opts: &RunOpts, pending: Pending) -> Result<String> {
    match pending {
        Pending::Shard { path, bytes, line } => {
            write_file_atomic(&path, &bytes)?;
            Ok(line)
        }
        Pending::Skipped(line) => Ok(line),
        Pending::Report { check, output } => {
            if let Some(line) = check {
                show(&format!("{line}\n"));
            }
            let mut text = String::new();
            let dir = write_report(&opts.out, &scenario.common.name, &output)?;
            text.push_str(&format!("== {}\n", scenario.common.name));
            text.push_str(if opts.wide && !output.console_wide.is_empty() {
                &output.console_wide
            } else {
                &output.console
            });
            text.push_str(&format!("-> {}\n", dir.display()));
            Ok(text)
        }
    }
}

/// Prints `text` to stdout with any progress bars out of its way.
fn show(text: &str) {
    crate::progress::suspend(|| {
        out!("{text}");
        let _ = std::io::stdout().flush();
    });
}

/// Checks, before any work, that where a run of scenario `name` writes can
/// be written: its report folder, or with `--shard` its shard file (and a
/// report folder of a kind that runs whole on shard 0).
fn check_out(opts: &RunOpts, scenario: &Scenario) -> Result<()> {
    use crate::report::atomic::{check_place, check_report_place, Place};
    let name = &scenario.common.name;
    match opts.shard {
        Some(shard) if shard::splits(scenario) => {
            check_place(&opts.out.join(shard.file_name(name)), Place::File)
        }
        _ => check_report_place(&opts.out, name),
    }
}

/// Runs one scenario, writes its report, prints its table.
pub fn run_one(scenario: &Scenario, opts: &RunOpts) -> Result<()> {
    refuse_unread_options(scenario, opts)?;
    let pending = compute(scenario, opts)?;
    show(&finish(scenario, opts, pending)?);
    Ok(())
}

/// `ratelab run`.
pub fn run(path: &Path, opts: &RunOpts) -> Result<i32> {
    init_threads(opts.threads)?;
    let scenario = Scenario::load(path)?;
    crate::lab::trust::require([&scenario], opts.allow_exec)?;
    check_out(opts, &scenario)?;
    run_one(&scenario, opts)?;
    Ok(0)
}

/// The built-in tour: the flash-crowd decision scenario (one key jumps to
/// 1,000 requests/s over 2,000 Zipf keys) through every limiter model, so
/// that `ratelab run` alone answers the main question on a known case.
const TOUR: &str = include_str!("../../scenarios/decision-flash-crowd.json");

/// `ratelab run` without a scenario: the tour (the same bytes as `ratelab
/// run scenarios/decision-flash-crowd.json`).
pub fn run_tour(opts: &RunOpts) -> Result<i32> {
    let scenario = Scenario::parse(Path::new("scenarios/decision-flash-crowd.json"), TOUR)?;
    run_scenario(&scenario, opts)
}

/// Runs a scenario built in memory (the tour, `run --trace`).
pub fn run_scenario(scenario: &Scenario, opts: &RunOpts) -> Result<i32> {
    init_threads(opts.threads)?;
    check_out(opts, scenario)?;
    run_one(scenario, opts)?;
    Ok(0)
}

/// `ratelab reproduce`: every scenario in the folder. All files are parsed
/// before anything runs, so a typo in the last one fails fast.
///
/// The scenarios run concurrently on the rayon pool (`--threads`; one
/// thread runs them one after another), the slow kinds started first, each
/// one's own parallel work nested inside; their reports are written and
/// their text printed in file order as each becomes ready, so the output is
/// the same bytes as a one-by-one run. The first scenario in file order
/// that fails is the one reported: the reports before it are written, none
/// after it (scenarios not yet started are skipped, those running are
/// discarded). Progress bars of scenarios running at once are drawn one
/// per line (see [`crate::progress`]).
pub fn reproduce(dir: &Path, opts: &RunOpts) -> Result<i32> {
    if opts.decisions.is_some() {
        return Err(Error::input(
            "--decisions applies to `ratelab run` of one decision_accuracy scenario",
        ));
    }
    init_threads(opts.threads)?;
    let files = scenario_files(dir)?;
    if files.is_empty() {
        return Err(Error::input(format!(
            "{}: no *.json scenario files",
            dir.display()
        )));
    }
    let scenarios = files
        .iter()
        .map(|f| Scenario::load(f))
        .collect::<Result<Vec<_>>>()?;
    let mut names = std::collections::HashSet::new();
    for s in &scenarios {
        if !names.insert(s.common.name.clone()) {
            return Err(Error::input_at(
                &s.path,
                "field name",
                format!(
                    "value {:?}: another scenario has the same name",
                    s.common.name
                ),
            ));
        }
    }
    crate::lab::trust::require(&scenarios, opts.allow_exec)?;
    for s in &scenarios {
        check_out(opts, s)?;
    }
    let start = start_order(&scenarios);
    concurrent::in_file_order(
        &scenarios,
        &start,
        |s| compute(s, opts),
        |s, pending| {
            show(&finish(s, opts, pending)?);
            outln!("");
            Ok(())
        },
    )?;
    Ok(0)
}

/// Kinds whose committed scenarios take a large share of `reproduce`
/// (0.5-4 s of CPU each, the rest under 0.3 s): started first, so the cheap
/// ones fill the cores at the end instead of a long one running alone.
const SLOW_KINDS: &[&str] = &[
    "decision_accuracy",
    "inflight_accuracy",
    "estimator_accuracy",
    "estimator_characterization",
    "rate_vs_oracle",
];

/// The order `reproduce` starts its scenarios in: those of [`SLOW_KINDS`]
/// first, each group in file order. Only when a scenario starts depends on
/// it, never what it prints or writes.
fn start_order(scenarios: &[Scenario]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scenarios.len()).collect();
    order.sort_by_key(|&i| !SLOW_KINDS.contains(&scenarios[i].common.kind.as_str()));
    order
}

/// `ratelab merge`.
pub fn merge(files: &[std::path::PathBuf], out: &Path, max_memory: u64) -> Result<i32> {
    crate::report::atomic::check_place(out, crate::report::atomic::Place::Folder)?;
    // Every shard is read and merged, and every report folder checked,
    // before the first report is written: a bad second scenario leaves the
    // first one's earlier report as it was.
    let merged = match shard::merge_files(files, max_memory)? {
        shard::Merged::Reports(r) => r,
        shard::Merged::Size(s) => return super::size::merge(&s, out),
    };
    for (scenario, _) in &merged {
        let dir = out.join(&scenario.common.name);
        if dir.symlink_metadata().is_ok_and(|m| !m.is_dir()) {
            return Err(crate::error::Error::input(format!(
                "{}: exists and is not a folder; the merged report of {:?} goes there",
                dir.display(),
                scenario.common.name
            )));
        }
    }
    for (scenario, output) in merged {
        let dir = write_report(out, &scenario.common.name, &output)?;
        outln!("== {} (merged)", scenario.common.name);
        out!("{}", output.console);
        outln!("-> {}", dir.display());
    }
    Ok(0)
}

/// `ratelab list --models`: every limiter model of the decision lab with
/// its parameters, their ranges and defaults, from the model table
/// ([`crate::lab::decision::MODELS`]), which is the one place they live.
pub fn list_models() -> Result<i32> {
    outln!("{}", crate::lab::decision::models_text());
    Ok(0)
}

/// `ratelab list`.
pub fn list(dir: &Path) -> Result<i32> {
    outln!("Kinds of experiment:");
    for k in KINDS {
        outln!("  {:<22} {}", k.name, k.summary);
    }
    outln!("");
    match scenario_files(dir) {
        Ok(files) if !files.is_empty() => {
            outln!("Scenarios in {}:", dir.display());
            for f in files {
                match Scenario::load(&f) {
                    Ok(s) => outln!(
                        "  {:<24} {:<22} {}",
                        s.common.name,
                        s.common.kind,
                        first_sentence(&s.common.description)
                    ),
                    Err(e) => outln!("  {:<24} (invalid: {e})", f.display()),
                }
            }
        }
        _ => outln!(
            "No scenarios in {} (run from the repository root, or pass --scenarios DIR).",
            dir.display()
        ),
    }
    Ok(0)
}

fn first_sentence(s: &str) -> &str {
    match s.find(". ") {
        Some(i) => &s[..=i],
        None => s,
    }
}
