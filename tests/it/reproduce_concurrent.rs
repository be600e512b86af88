//! `reproduce` runs scenarios concurrently but must print and write exactly
//! what running them one by one does: same stdout, byte for byte, in file
//! order, and the same report folders, at any thread count.

use crate::common;

use crate::common::{ratelab, stderr, stdout, tree};
use std::path::Path;

/// Cheap committed scenarios of several kinds, among them decision-lab
/// ones (their own `rayon::join` and `par_iter_mut` nest inside the
/// scenario pool) and one that reads a trace next to it.
const CHEAP: &[&str] = &[
    "decision-burst-grid",
    "decision-sliding-window-hand-case",
    "estimator-conservative",
    "estimator-overflow",
    "estimator-zipf",
    "inflight-guard-leak",
    "proxy-example",
    "rate-timeline",
    "token-bucket-pictures",
];

/// A folder of copies of `names` (and the traces they read).
fn folder(names: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for n in names {
        let from = common::root().join("scenarios").join(format!("{n}.json"));
        std::fs::copy(&from, dir.path().join(format!("{n}.json"))).unwrap();
    }
    let traces = dir.path().join("traces");
    std::fs::create_dir(&traces).unwrap();
    let from = common::root().join("scenarios/traces/sliding-window-hand-case.csv");
    std::fs::copy(from, traces.join("sliding-window-hand-case.csv")).unwrap();
    dir
}

fn reproduce(scenarios: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "reproduce",
        "--scenarios",
        scenarios.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--no-progress",
    ];
    args.extend_from_slice(extra);
    ratelab(&args)
}

#[test]
#[ignore = "slow: reproduces every scenario three ways; unoptimised, the test profile takes too long (.ci/run runs it)"]
fn reproduce_prints_and_writes_the_same_at_one_and_two_threads_as_run_one_by_one() {
    let scenarios = folder(CHEAP);
    let out = tempfile::tempdir().unwrap();
    // What `run` prints for each scenario alone, in file order, each
    // followed by the blank line `reproduce` puts between them.
    let one_by_one = out.path().join("one-by-one");
    let mut expected = String::new();
    for n in CHEAP {
        let file = scenarios.path().join(format!("{n}.json"));
        let o = ratelab(&[
            "run",
            file.to_str().unwrap(),
            "--out",
            one_by_one.to_str().unwrap(),
            "--no-progress",
            "--threads",
            "1",
        ]);
        assert!(o.status.success(), "{n}: {}", stderr(&o));
        expected.push_str(&stdout(&o));
        expected.push('\n');
    }
    let expected_files = tree(&one_by_one);
    assert_eq!(
        expected_files
            .iter()
            .filter(|(p, _)| p.ends_with("report.json"))
            .count(),
        CHEAP.len()
    );
    for threads in ["1", "2"] {
        let dir = out.path().join(format!("threads-{threads}"));
        let o = reproduce(scenarios.path(), &dir, &["--threads", threads]);
        assert!(o.status.success(), "--threads {threads}: {}", stderr(&o));
        let printed = stdout(&o).replace(dir.to_str().unwrap(), one_by_one.to_str().unwrap());
        assert_eq!(
            printed, expected,
            "--threads {threads}: stdout differs from run one by one"
        );
        assert!(
            tree(&dir) == expected_files,
            "--threads {threads}: report files differ"
        );
    }
}

#[test]
#[ignore = "slow: reproduces every scenario; unoptimised, the test profile takes too long (.ci/run runs it)"]
fn the_determinism_check_passes_for_every_scenario_when_they_run_concurrently() {
    let scenarios = folder(CHEAP);
    let out = tempfile::tempdir().unwrap();
    let o = reproduce(
        scenarios.path(),
        out.path(),
        &["--threads", "2", "--check-determinism"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    for n in CHEAP {
        let line = format!("determinism check: {n} identical on 1 thread and 2 threads\n== {n}\n");
        assert!(
            text.contains(&line),
            "{n}: no check line just before its table:\n{text}"
        );
    }
}

#[test]
#[ignore = "slow: reproduces every scenario; unoptimised, the test profile takes too long (.ci/run runs it)"]
fn the_first_failing_scenario_in_file_order_is_reported_and_nothing_after_it_is_written() {
    let scenarios = folder(CHEAP);
    // Loads fine (the file parses) but fails when it runs: the shape is
    // refused by the experiment's validation. Named to sort in the middle.
    let bad = std::fs::read_to_string(scenarios.path().join("estimator-zipf.json")).unwrap();
    let mut bad: serde_json::Value = serde_json::from_str(&bad).unwrap();
    bad["name"] = "estimator-zz-bad".into();
    bad["configs"] = serde_json::json!([{"hashes": 0, "slots": 8}]);
    std::fs::write(
        scenarios.path().join("estimator-zz-bad.json"),
        bad.to_string(),
    )
    .unwrap();
    for threads in ["1", "2"] {
        let out = tempfile::tempdir().unwrap();
        let o = reproduce(scenarios.path(), out.path(), &["--threads", threads]);
        assert_eq!(
            o.status.code(),
            Some(2),
            "--threads {threads}: {}",
            stderr(&o)
        );
        assert!(stderr(&o).contains("estimator-zz-bad"), "{}", stderr(&o));
        let written: Vec<String> = std::fs::read_dir(out.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        for n in CHEAP {
            let before = *n < "estimator-zz-bad";
            assert_eq!(
                written.contains(&n.to_string()),
                before,
                "--threads {threads}: {n} in {written:?}"
            );
            assert_eq!(
                stdout(&o).contains(&format!("== {n}\n")),
                before,
                "--threads {threads}: {n}"
            );
        }
    }
}
