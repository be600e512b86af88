//! `estimator_characterization`: determinism across thread counts, the
//! doubling rule, and the shape of the report.

use crate::common::*;

const SCENARIO: &str = r#"{
  "name": "char-small",
  "kind": "estimator_characterization",
  "seed": 3,
  "workload": { "type": "harmonic", "keys": 800, "top": 8000, "min": 2 },
  "configs": [ { "hashes": 3, "slots": 256 }, { "hashes": 2, "slots": 2048 } ],
  "rank_points": 12,
  "min_bin_keys": 4,
  "min_trials": 8,
  "max_trials": 256,
  "tolerance_pct": 2.0,
  "abs_floor": 1.0,
  "floor_bound_pct": 2.0
}"#;

fn run(dir: &tempfile::TempDir, scenario: &str, threads: &str) -> std::process::Output {
    ratelab_env(
        &["run", scenario, "--out", dir.path().to_str().unwrap()],
        &[("RAYON_NUM_THREADS", threads)],
    )
}

#[test]
fn same_seed_gives_identical_reports_at_any_thread_count() {
    let (_d, path) = temp_file("char-small.json", SCENARIO.as_bytes());
    let path = path.to_str().unwrap();
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let oa = run(&a, path, "1");
    assert_eq!(oa.status.code(), Some(0), "{}", stderr(&oa));
    let ob = run(&b, path, "2");
    assert_eq!(ob.status.code(), Some(0), "{}", stderr(&ob));
    let ta = tree(a.path());
    assert_eq!(ta, tree(b.path()));
    assert!(ta.iter().any(|(n, _)| n.ends_with("pitchfork_3x256.png")));
    let j: serde_json::Value =
        serde_json::from_slice(&std::fs::read(a.path().join("char-small/report.json")).unwrap())
            .unwrap();
    for s in j["shapes"].as_array().unwrap() {
        let trials = s["trials"].as_u64().unwrap();
        // trials double from 8 and stop at 256 at the latest
        assert!(
            trials.is_power_of_two() && (16..=256).contains(&trials),
            "{s}"
        );
        assert!(s["stopped"] == "stable" || trials == 256);
        for bin in s["bins"].as_array().unwrap() {
            let q: Vec<f64> = bin["quantiles"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect();
            assert_eq!(q.len(), 7);
            assert!(
                q.windows(2).all(|w| w[0] <= w[1]),
                "contours ordered: {q:?}"
            );
            assert!(q[0] >= 0.0, "count-min never undercounts");
        }
    }
    // no timings in the report
    let text =
        String::from_utf8(std::fs::read(a.path().join("char-small/report.json")).unwrap()).unwrap();
    assert!(!text.contains("elapsed") && !text.contains("seconds"));
}

#[test]
fn a_different_seed_changes_the_contours() {
    let (_d, path) = temp_file("char-small.json", SCENARIO.as_bytes());
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let p = path.to_str().unwrap();
    let oa = ratelab(&["run", p, "--out", a.path().to_str().unwrap()]);
    let ob = ratelab(&["run", p, "--seed", "4", "--out", b.path().to_str().unwrap()]);
    assert_eq!(oa.status.code(), Some(0));
    assert_eq!(ob.status.code(), Some(0));
    assert_ne!(
        std::fs::read(a.path().join("char-small/table.csv")).unwrap(),
        std::fs::read(b.path().join("char-small/table.csv")).unwrap()
    );
}

#[test]
fn bad_parameters_name_the_field() {
    let bad = SCENARIO.replace("\"max_trials\": 256", "\"max_trials\": 4");
    let (_d, path) = temp_file("char-small.json", bad.as_bytes());
    let out = tempfile::tempdir().unwrap();
    let o = ratelab(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("max_trials"), "{}", stderr(&o));
}
