//! Killing ratelab mid-run leaves the previous report intact, and the
//! determinism self-check passes on a real scenario.

use crate::common::*;
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn killing_a_run_leaves_the_previous_report_intact() {
    let out = tempfile::tempdir().unwrap();
    let outs = out.path().to_str().unwrap();
    // A quick scenario first: this is the "previous report".
    let small = r#"{"name": "victim", "kind": "estimator_accuracy", "runs": 1,
        "workload": {"type": "harmonic", "keys": 100, "top": 1000},
        "configs": [{"hashes": 2, "slots": 64}]}"#;
    let (_d1, small_path) = temp_file("victim.json", small.as_bytes());
    let o = ratelab(&["run", small_path.to_str().unwrap(), "--out", outs]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let before = tree(&out.path().join("victim"));
    assert!(!before.is_empty());
    // The same name, now a run long enough to be killed in the middle
    // (conservative update replays every event: 50 x 20 M of them; the
    // standard update's per-key evaluation would finish in well under a
    // second).
    let big = r#"{"name": "victim", "kind": "estimator_accuracy", "runs": 50,
        "workload": {"type": "uniform", "keys": 100000, "events": 20000000},
        "configs": [{"hashes": 8, "slots": 1048576}], "variants": ["conservative"]}"#;
    let (_d2, big_path) = temp_file("victim.json", big.as_bytes());
    let mut child = Command::new(env!("CARGO_BIN_EXE_ratelab"))
        .args([
            "run",
            big_path.to_str().unwrap(),
            "--out",
            outs,
            "--no-progress",
        ])
        .spawn()
        .unwrap();
    let start = Instant::now();
    std::thread::sleep(Duration::from_millis(700));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the long run finished too early for the test to mean anything"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(start.elapsed() < Duration::from_secs(30));
    assert_eq!(
        tree(&out.path().join("victim")),
        before,
        "the previous report must be untouched"
    );
}

#[test]
fn determinism_self_check_passes_on_a_scenario() {
    let out = tempfile::tempdir().unwrap();
    let o = ratelab(&[
        "run",
        "scenarios/estimator-conservative.json",
        "--runs",
        "2",
        "--check-determinism",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("determinism check: estimator-conservative identical"),
        "{}",
        stdout(&o)
    );
}
