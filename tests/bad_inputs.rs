//! The bad-input corpus: every `tests/bad_inputs/<case>` that has a sibling
//! `<case>.expected` must make ratelab exit with code 2 and print exactly one
//! line on stderr containing the expected text, and write nothing.
//!
//! The command is `run <case> --out <tmp>` unless `<case>.args` gives another
//! (whitespace-separated; `{file}` is the case's path, `{out}` a fresh folder).

mod common;
use common::*;
use std::path::Path;

#[test]
fn every_bad_input_exits_2_with_its_one_line_error() {
    let dir = root().join("tests/bad_inputs");
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| Path::new(&format!("{}.expected", p.display())).exists())
        .collect();
    cases.sort();
    assert!(
        cases.len() >= 50,
        "the corpus must hold at least 50 cases, found {}",
        cases.len()
    );
    let mut failures = Vec::new();
    for case in &cases {
        let expected = std::fs::read_to_string(format!("{}.expected", case.display())).unwrap();
        let expected = expected.trim_end_matches('\n');
        let out = tempfile::tempdir().unwrap();
        let out_dir = out.path().join("out");
        let args_file = format!("{}.args", case.display());
        let template =
            std::fs::read_to_string(&args_file).unwrap_or_else(|_| "run {file} --out {out}".into());
        let args: Vec<String> = template
            .split_whitespace()
            .map(|a| {
                a.replace("{file}", &case.display().to_string())
                    .replace("{out}", &out_dir.display().to_string())
            })
            .collect();
        let refs: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        let o = ratelab(&refs);
        let err = stderr(&o);
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        if o.status.code() != Some(2) {
            failures.push(format!(
                "{name}: exit code {:?} (want 2); stderr: {err}",
                o.status.code()
            ));
        } else if err.trim_end().lines().count() != 1 {
            failures.push(format!("{name}: stderr is not one line: {err}"));
        } else if !err.contains(expected) {
            failures.push(format!(
                "{name}: stderr {:?} lacks {expected:?}",
                err.trim_end()
            ));
        } else if out_dir.exists() && std::fs::read_dir(&out_dir).unwrap().next().is_some() {
            failures.push(format!("{name}: wrote output despite the error"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
