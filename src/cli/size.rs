//! `ratelab size`: the cheapest count-min shape for a workload and targets
//! (the search and its report are in [`crate::sizing`]).
//!
//! Exit codes: 0 a shape meets every target; 1 none does within the memory
//! cap (the best shape found is printed and `size.json` is still written,
//! with `"recommendation": null`); 2 bad input (unparsable target, empty
//! trace, zero keys, ...).

use super::init_threads;
use crate::error::{Error, Result};
use crate::lab::shard::{Shard, SizeShards};
pub use crate::sizing::command::{compute, SizeArgs};
use crate::sizing::command::{compute_trace_split, validate};
use crate::sizing::limit::{LimitOutput, Split};
use std::path::{Path, PathBuf};
/// `ratelab size --shard i/n`: the bisection, then every mode's walk
/// explored on the fresh seeds with index ≡ i + 1 (mod n), on the whole
/// trace, then the shard's share of the first-seed model replays, in
/// `<out>/size.shard-i-of-n.json` ([`crate::sizing::limit::split`]).
fn run_shard(a: &SizeArgs, shard: Shard) -> Result<i32> {
    validate(a)?;
    let argv = job_argv()?;
    let dir = a.out.clone().unwrap_or_else(|| PathBuf::from("."));
    let file = dir.join(shard.file_name("size"));
    crate::report::atomic::check_place(&file, crate::report::atomic::Place::File)?;
    let (Some(path), Some(limit), Some(interval_ms)) = (&a.trace, a.limit, a.interval_ms) else {
        return Err(Error::input(
            "--shard splits a --limit sizing of a time-stamped --trace: give --trace, --limit and --interval-ms",
        ));
    };
    if limit == 0 || limit > u64::from(u32::MAX) {
        return Err(Error::input(format!(
            "--limit {limit}: expected 1..=4294967295"
        )));
    }
    if interval_ms == 0 || interval_ms > 86_400_000 {
        return Err(Error::input(format!(
            "--interval-ms {interval_ms}: expected 1..=86400000"
        )));
    }
    if !crate::workload::trace::input::rereadable(path) {
        return Err(Error::input(format!(
            "--shard: `ratelab merge` reads --trace again (the report's facts), so {} must be a file, not standard input or a pipe (save it to a file first)",
            path.display()
        )));
    }
    let (part, what) = match compute_trace_split(a, Split::Shard(shard))? {
        Some(LimitOutput::Part(p, what)) => (p, what),
        _ => {
            return Err(Error::input(format!(
                "--shard: {} is a key,count table; only a time-stamped trace's search splits",
                path.display()
            )))
        }
    };
    let bytes = crate::lab::shard::size_shard_bytes(&argv, a.seed, shard, part)?;
    // Shards of one job share a folder: the one named, else this one.
    crate::report::atomic::write_file(&file, &bytes)?;
    outln!(
        "== size shard {}/{}: {what} -> {}",
        shard.index,
        shard.count,
        file.display()
    );
    Ok(0)
}

/// The arguments of this `ratelab size` as the shards' identity: every one
/// after `size` but --shard, --out, --threads and --no-progress (which do
/// not change the result). `merge` parses them again.
fn job_argv() -> Result<Vec<String>> {
    // `std::env::args` panics on an argument that is not UTF-8; the shard
    // file holds the arguments as JSON strings, so such a one is refused.
    let args = std::env::args_os()
        .map(|a| {
            a.into_string().map_err(|a| {
                Error::input(format!(
                    "--shard: argument {}: not valid UTF-8; a size shard keeps its arguments as text for merge (rename the file or link it under a UTF-8 name)",
                    std::path::Path::new(&a).display()
                ))
            })
        })
        .collect::<Result<Vec<String>>>()?;
    let start = args
        .iter()
        .position(|a| a == "size")
        .map_or(args.len(), |i| i + 1);
    let mut out = Vec::new();
    let mut skip = false;
    for a in &args[start..] {
        if std::mem::take(&mut skip) {
            continue;
        }
        match a.as_str() {
            "--shard" | "--out" | "--threads" => skip = true,
            "--no-progress" => {}
            s if ["--shard=", "--out=", "--threads="]
                .iter()
                .any(|p| s.starts_with(p)) => {}
            s => out.push(s.to_string()),
        }
    }
    Ok(out)
}

/// `ratelab merge` of a `size --shard` job's shards: the sizing run on
/// their verdicts, its folder written to `out`.
pub fn merge(shards: &SizeShards, out: &std::path::Path) -> Result<i32> {
    use clap::Parser as _;
    let argv = std::iter::once("ratelab".to_string())
        .chain(std::iter::once("size".to_string()))
        .chain(shards.argv.iter().cloned())
        .chain(["--no-progress".to_string()]);
    let cli = super::Cli::try_parse_from(argv).map_err(|e| {
        Error::input_at(
            &shards.parts[0].0,
            "field scenario_json.argv",
            format!(
                "not arguments this ratelab takes: {}",
                e.to_string().lines().next().unwrap_or_default()
            ),
        )
    })?;
    let super::Command::Size { args } = cli.command else {
        return Err(Error::internal("size arguments parsed to another command"));
    };
    validate(&args)?;
    let (report, note) = match compute_trace_split(&args, Split::Merge(&shards.parts))? {
        Some(LimitOutput::Merged(r, note)) => (r, note),
        _ => return Err(Error::internal("a size shard without a limit sizing")),
    };
    report.write(out)?;
    outln!("== size (merged from {} shards)", shards.parts.len());
    out!("{note}");
    out!("{}", report.console);
    outln!("-> {}", out.display());
    match report.failure {
        Some(msg) if !report.met => Err(Error::check(msg)),
        _ => Ok(0),
    }
}

/// `ratelab size`.
pub fn run(a: &SizeArgs) -> Result<i32> {
    init_threads(a.threads)?;
    if let Some(shard) = a.shard {
        return run_shard(a, shard);
    }
    if let Some(out) = &a.out {
        crate::report::atomic::check_place(out, crate::report::atomic::Place::Folder)?;
    }
    let report = compute(a)?;
    let out = match &a.out {
        Some(o) => o.clone(),
        None => fresh_folder(Path::new("."), "size-report")?,
    };
    report.write(&out)?;
    out!("{}", report.console);
    if a.out.is_some() {
        outln!("-> {}", out.display());
    } else {
        outln!("-> {} (a new folder; --out names one)", out.display());
    }
    match report.failure {
        Some(msg) if !report.met => Err(Error::check(msg)),
        _ => Ok(0),
    }
}

/// The first of `<dir>/<stem>`, `<stem>-2`, `<stem>-3`, ... that does not
/// exist: a report written without `--out` never replaces anything.
fn fresh_folder(dir: &Path, stem: &str) -> Result<PathBuf> {
    (1..10_000u32)
        .map(|i| match i {
            1 => dir.join(stem),
            _ => dir.join(format!("{stem}-{i}")),
        })
        .find(|p| std::fs::symlink_metadata(p).is_err())
        .ok_or_else(|| {
            Error::input(format!(
                "{}: {stem} to {stem}-9999 all exist; name a folder with --out",
                dir.display()
            ))
        })
}
