//! `docs/ci/check.sh`, the script the CI snippets of docs/book/src/ci.md run, executed
//! against a scratch copy of a scenario: it passes on a fresh baseline and
//! writes JUnit, the Markdown summary and the review page; it exits 1 when
//! an expectation breaks.

use crate::common::*;
use std::path::Path;
use std::process::Command;

const TINY: &str = r#"{
  "name": "tiny",
  "kind": "estimator_accuracy",
  "description": "A small sketch check for the CI script test.",
  "runs": 3,
  "workload": { "type": "harmonic", "keys": 300, "top": 1000, "min": 2 },
  "configs": [ { "hashes": 2, "slots": 256 }, { "hashes": 4, "slots": 1024 } ],
  "expect": { "rows[hashes=4,slots=1024].exact_pct": ">= 50", "rows[*].faults": "== 0" }
}"#;

fn script(dir: &Path) -> std::process::Output {
    Command::new("bash")
        .arg(root().join("docs/ci/check.sh"))
        .current_dir(dir)
        .env("RATELAB", env!("CARGO_BIN_EXE_ratelab"))
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap()
}

#[test]
fn the_documented_ci_script_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("scenarios")).unwrap();
    std::fs::write(dir.join("scenarios/tiny.json"), TINY).unwrap();
    let o = ratelab(&[
        "check",
        "--scenarios",
        dir.join("scenarios").to_str().unwrap(),
        "--reports",
        dir.join("reports").to_str().unwrap(),
        "--update",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    let o = script(dir);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("check passed: 1 scenario(s)"),
        "{}",
        stdout(&o)
    );
    let out = dir.join("ratelab-out");
    for f in [
        "junit.xml",
        "summary.md",
        "reports/tiny/report.json",
        "reports/index.html",
    ] {
        assert!(out.join(f).is_file(), "{f}");
    }
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(junit.contains("failures=\"0\""), "{junit}");

    // A broken threshold: the script exits 1 and JUnit records the failure.
    std::fs::write(
        dir.join("scenarios/tiny.json"),
        TINY.replace(">= 50", "> 100"),
    )
    .unwrap();
    let o = script(dir);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(junit.contains("<failure "), "{junit}");
    assert!(out.join("reports/index.html").is_file());

    // The docs run this very script.
    let doc = std::fs::read_to_string(root().join("docs/book/src/ci.md")).unwrap();
    assert!(doc.matches("bash docs/ci/check.sh").count() >= 2, "{doc}");
}
