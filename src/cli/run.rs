//! `run`, `reproduce` and `list`.

use super::{init_threads, RunOpts};
use crate::error::{Error, Result};
use crate::lab::shard;
use crate::lab::{self, RunContext, KINDS};
use crate::report::atomic::write_file as write_file_atomic;
use crate::report::write_report;
use crate::scenario::{scenario_files, Scenario};
use std::path::Path;

fn context(scenario: &Scenario, opts: &RunOpts) -> RunContext {
    let mut ctx = RunContext::for_scenario(scenario);
    if let Some(seed) = opts.seed {
        ctx.seed = seed;
    }
    ctx.runs = opts.runs;
    ctx.max_memory = opts.max_memory;
    ctx.max_work = opts.max_work;
    ctx.progress = !opts.no_progress;
    ctx
}

/// Runs one scenario, writes its report, prints its table.
pub fn run_one(scenario: &Scenario, opts: &RunOpts) -> Result<()> {
    if let Some(runs) = opts.runs {
        if runs == 0 || runs > crate::scenario::MAX_RUNS {
            return Err(Error::input(format!(
                "--runs {runs}: expected 1..={} runs",
                crate::scenario::MAX_RUNS
            )));
        }
    }
    let ctx = context(scenario, opts);
    if let Some(shard) = opts.shard {
        if shard::is_sweep(&scenario.common.kind) {
            let (bytes, cells) = shard::run_shard(scenario, &ctx, shard)?;
            let path = opts.out.join(shard.file_name(&scenario.common.name));
            write_file_atomic(&path, &bytes)?;
            println!(
                "== {} shard {}/{}: {cells} sweep cells -> {}",
                scenario.common.name,
                shard.index,
                shard.count,
                path.display()
            );
            return Ok(());
        }
        if shard.index != 0 {
            println!(
                "== {}: kind {} is not a sweep; shard 0/{} runs it whole, skipped here",
                scenario.common.name, scenario.common.kind, shard.count
            );
            return Ok(());
        }
    }
    let output = lab::run(scenario, &ctx)?;
    if opts.check_determinism {
        let single = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .map_err(|e| Error::internal(format!("cannot build a 1-thread pool: {e}")))?;
        let quiet = RunContext {
            progress: false,
            ..ctx.clone()
        };
        let again = single.install(|| lab::run(scenario, &quiet))?;
        if let Some(diff) = first_difference(&output.json, &again.json, "") {
            return Err(Error::internal(format!(
                "{}: not deterministic: {diff} (multi-threaded run vs single-threaded rerun)",
                scenario.common.name
            )));
        }
        let same_files = output.table_md == again.table_md
            && output.table_csv == again.table_csv
            && output
                .charts
                .iter()
                .zip(&again.charts)
                .all(|(a, b)| a.svg == b.svg && a.png == b.png)
            && output.extra_files == again.extra_files;
        if !same_files {
            return Err(Error::internal(format!(
                "{}: not deterministic: report.json agrees but a table, chart or extra file differs",
                scenario.common.name
            )));
        }
        println!(
            "determinism check: {} identical on 1 thread and {} threads",
            scenario.common.name,
            rayon::current_num_threads()
        );
    }
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

/// `ratelab merge`.
pub fn merge(files: &[std::path::PathBuf], out: &Path) -> Result<i32> {
    for (scenario, output) in shard::merge(files)? {
        let dir = write_report(out, &scenario.common.name, &output)?;
        println!("== {} (merged)", scenario.common.name);
        print!("{}", output.console);
        println!("-> {}", dir.display());
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

/// The first place where two JSON values differ, as `path: a != b`.
pub fn first_difference(
    a: &serde_json::Value,
    b: &serde_json::Value,
    path: &str,
) -> Option<String> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                let p = format!("{path}.{k}");
                match y.get(k) {
                    Some(vb) => {
                        if let Some(d) = first_difference(va, vb, &p) {
                            return Some(d);
                        }
                    }
                    None => return Some(format!("{p}: present in the first run only")),
                }
            }
            y.keys()
                .find(|k| !x.contains_key(*k))
                .map(|k| format!("{path}.{k}: present in the second run only"))
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                if let Some(d) = first_difference(va, vb, &format!("{path}[{i}]")) {
                    return Some(d);
                }
            }
            (x.len() != y.len()).then(|| format!("{path}: {} vs {} elements", x.len(), y.len()))
        }
        _ => (a != b).then(|| format!("{}: {a} != {b}", if path.is_empty() { "." } else { path })),
    }
}

#[cfg(test)]
mod tests {
    use super::first_difference;
    use serde_json::json;

    #[test]
    fn finds_the_first_differing_field() {
        let a = json!({"rows": [{"mean": 1.0, "p99": 2}], "seed": 1});
        let b = json!({"rows": [{"mean": 1.5, "p99": 2}], "seed": 1});
        assert_eq!(
            first_difference(&a, &b, "").as_deref(),
            Some(".rows[0].mean: 1.0 != 1.5")
        );
        assert_eq!(first_difference(&a, &a, ""), None);
        let c = json!({"rows": [], "seed": 1});
        assert_eq!(
            first_difference(&a, &c, "").as_deref(),
            Some(".rows: 1 vs 0 elements")
        );
    }
}
