//! `run`, `reproduce` and `list`.

use super::{init_threads, RunOpts};
use crate::error::{Error, Result};
use crate::experiments::{self, RunContext, KINDS};
use crate::report::write::write_report;
use crate::scenario::{scenario_files, Scenario};
use std::path::Path;

fn context(scenario: &Scenario, opts: &RunOpts) -> RunContext {
    let mut ctx = RunContext::for_scenario(scenario);
    if let Some(seed) = opts.seed {
        ctx.seed = seed;
    }
    ctx.runs = opts.runs;
    ctx.max_memory = opts.max_memory;
    ctx.progress = !opts.no_progress;
    ctx
}

/// Runs one scenario, writes its report, prints its table.
pub fn run_one(scenario: &Scenario, opts: &RunOpts) -> Result<()> {
    if opts.runs == Some(0) {
        return Err(Error::input("--runs 0: expected at least 1 run"));
    }
    let ctx = context(scenario, opts);
    let output = experiments::run(scenario, &ctx)?;
    let dir = write_report(&opts.out, &scenario.common.name, &output)?;
    println!("== {}", scenario.common.name);
    print!("{}", output.console);
    println!("-> {}", dir.display());
    Ok(())
}

/// `ratelab run`.
pub fn run(path: &Path, opts: &RunOpts) -> Result<i32> {
    init_threads(opts.threads)?;
    let scenario = Scenario::load(path)?;
    run_one(&scenario, opts)?;
    Ok(0)
}

/// `ratelab reproduce`: every scenario in the folder. All files are parsed
/// before anything runs, so a typo in the last one fails fast.
pub fn reproduce(dir: &Path, opts: &RunOpts) -> Result<i32> {
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
    for s in &scenarios {
        run_one(s, opts)?;
        println!();
    }
    Ok(0)
}

/// `ratelab list`.
pub fn list(dir: &Path) -> Result<i32> {
    println!("Kinds of experiment:");
    for k in KINDS {
        println!("  {:<22} {}", k.name, k.summary);
    }
    println!();
    match scenario_files(dir) {
        Ok(files) if !files.is_empty() => {
            println!("Scenarios in {}:", dir.display());
            for f in files {
                match Scenario::load(&f) {
                    Ok(s) => println!(
                        "  {:<24} {:<22} {}",
                        s.common.name,
                        s.common.kind,
                        first_sentence(&s.common.description)
                    ),
                    Err(e) => println!("  {:<24} (invalid: {e})", f.display()),
                }
            }
        }
        _ => println!(
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
