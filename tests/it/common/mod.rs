//! Helpers shared by the end-to-end tests: run the real `ratelab` binary.

#![allow(dead_code)]

pub mod adapters;
pub mod nginx;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root (where `scenarios/` lives).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `ratelab args...` from the repository root.
pub fn ratelab(args: &[&str]) -> Output {
    ratelab_env(args, &[])
}

/// Runs `ratelab` with extra environment variables.
pub fn ratelab_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ratelab"));
    cmd.args(args).current_dir(root());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the ratelab binary runs")
}

/// stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// stdout as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Runs `ratelab args...`, asserts it exits 0, and gives its stdout.
pub fn ok(args: &[&str]) -> String {
    let o = ratelab(args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    stdout(&o)
}

/// Runs `ratelab args...`, asserts it exits 2 with a one-line error, and
/// gives that line (with its newline).
pub fn fails(args: &[&str]) -> String {
    let o = ratelab(args);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stdout(&o));
    let e = stderr(&o);
    assert_eq!(e.trim_end().lines().count(), 1, "one line: {e}");
    e
}

/// The arguments of `ratelab size` sizing pingora Rate for the policy 10
/// requests per key per second on `trace`, to `target`, writing to `out`,
/// then `extra`.
pub fn size_limit_args<'a>(
    trace: &'a str,
    out: &'a str,
    target: &'a str,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let mut a = vec![
        "size",
        "--trace",
        trace,
        "--limit",
        "10",
        "--interval-ms",
        "1000",
        "--target",
        target,
        "--no-progress",
        "--out",
        out,
    ];
    a.extend(extra);
    a
}

/// Every file under `dir` (recursively) with its bytes, sorted by path.
pub fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Writes `text` to a file in a fresh temp dir and returns (dir, path).
pub fn temp_file(name: &str, text: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    (dir, p)
}

/// Writes `scenario` (JSON text, named `name`) into `dir`, runs it with
/// `--allow-exec` into `dir/out`; returns (exit code, stderr, its
/// report.json if one was written).
pub fn run_exec_scenario(
    dir: &Path,
    name: &str,
    scenario: &str,
) -> (Option<i32>, String, Option<serde_json::Value>) {
    let sc = dir.join(format!("{name}.json"));
    std::fs::write(&sc, scenario).unwrap();
    let out = dir.join("out");
    let _ = std::fs::remove_dir_all(&out);
    let o = ratelab(&[
        "run",
        sc.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--no-progress",
        "--allow-exec",
    ]);
    let report = std::fs::read_to_string(out.join(name).join("report.json"))
        .ok()
        .map(|t| serde_json::from_str(&t).unwrap());
    (o.status.code(), stderr(&o), report)
}
