//! End-to-end runs of the estimator lab through the binary.

use crate::common::*;

#[test]
fn overflow_scenario_prints_the_documents_values_and_message() {
    let out = tempfile::tempdir().unwrap();
    let o = ratelab(&[
        "run",
        "scenarios/estimator-overflow.json",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(
        s.contains("== release overflow\n9223372036854775807\n-9223372036854775808\n"),
        "{s}"
    );
    assert!(s.contains("== debug overflow\n9223372036854775807\npanicked at pingora-limits-0.9.0/src/estimator.rs:53:36:\nattempt to add with overflow\n"), "{s}");
    let json: serde_json::Value = serde_json::from_slice(
        &std::fs::read(out.path().join("estimator-overflow/report.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        json["rows"][1]["fault"]["message"],
        "attempt to add with overflow"
    );
    assert_eq!(json["rows"][0]["values"][1], i64::MIN);
}

#[test]
fn same_seed_gives_identical_reports_at_any_thread_count() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let c = tempfile::tempdir().unwrap();
    let args = |d: &tempfile::TempDir| -> Vec<String> {
        vec![
            "run".into(),
            "scenarios/estimator-zipf.json".into(),
            "--runs".into(),
            "2".into(),
            "--out".into(),
            d.path().display().to_string(),
        ]
    };
    let run = |d: &tempfile::TempDir, threads: &str| {
        let a = args(d);
        let refs: Vec<&str> = a.iter().map(|s| s.as_str()).collect();
        let o = ratelab_env(&refs, &[("RAYON_NUM_THREADS", threads)]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    };
    run(&a, "1");
    run(&b, "2");
    run(&c, "2");
    let ta = tree(a.path());
    assert!(ta.iter().any(|(n, _)| n.ends_with("report.json")));
    assert!(ta.iter().any(|(n, _)| n.ends_with("error_vs_rank.png")));
    assert_eq!(ta, tree(b.path()), "1 thread vs 2 threads");
    assert_eq!(tree(b.path()), tree(c.path()), "same command twice");
}

#[test]
fn a_different_seed_changes_the_numbers() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    for (d, seed) in [(&a, "1"), (&b, "2")] {
        let o = ratelab(&[
            "run",
            "scenarios/estimator-zipf.json",
            "--runs",
            "1",
            "--seed",
            seed,
            "--out",
            d.path().to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let read =
        |d: &tempfile::TempDir| std::fs::read(d.path().join("estimator-zipf/report.json")).unwrap();
    assert_ne!(read(&a), read(&b));
}

fn bad(text: &str) -> (i32, String) {
    let (_d, p) = temp_file("bad.json", text.as_bytes());
    let out = tempfile::tempdir().unwrap();
    let o = ratelab(&[
        "run",
        p.to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let err = stderr(&o);
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "one-line error expected: {err}"
    );
    assert!(
        std::fs::read_dir(out.path()).unwrap().next().is_none(),
        "nothing may be written on bad input"
    );
    (o.status.code().unwrap_or(-1), err)
}

const OK_HEAD: &str = r#""name": "t", "kind": "estimator_accuracy", "workload": {"type": "harmonic", "keys": 100, "top": 1000}"#;

#[test]
fn bad_input_is_one_line_and_exit_code_2() {
    let (code, err) = bad("{\n  \"name\": \"t\",\n  \"kind\": \n}");
    assert_eq!(code, 2);
    assert!(
        err.contains("bad.json: line 4 column 1: malformed JSON"),
        "{err}"
    );

    let (code, err) = bad(&format!(
        r#"{{{OK_HEAD}, "configs": [{{"hashes": 4, "slots": 64}}], "slotz": 3}}"#
    ));
    assert_eq!(code, 2);
    assert!(err.contains("unknown field `slotz`"), "{err}");

    let (code, err) = bad(&format!(
        r#"{{{OK_HEAD}, "configs": [{{"hashes": 4, "slots": 0}}]}}"#
    ));
    assert_eq!(code, 2);
    assert!(err.contains("field configs[0].slots: value 0"), "{err}");

    let (code, err) = bad(&format!(
        r#"{{{OK_HEAD}, "configs": [{{"hashes": 0, "slots": 8}}]}}"#
    ));
    assert_eq!(code, 2);
    assert!(err.contains("field configs[0].hashes: value 0"), "{err}");

    let (code, err) = bad(&format!(
        r#"{{{OK_HEAD}, "runs": 0, "configs": [{{"hashes": 1, "slots": 8}}]}}"#
    ));
    assert_eq!(code, 2);
    assert!(err.contains("field runs: value 0"), "{err}");

    let (code, err) = bad(&format!(
        r#"{{{OK_HEAD}, "configs": [{{"hashes": 8, "slots": 1073741824}}]}}"#
    ));
    assert_eq!(code, 2);
    assert!(err.contains("over the memory cap of 1.0 GiB"), "{err}");

    let (code, err) = bad(r#"{"name": "t", "kind": "no_such_kind"}"#);
    assert_eq!(code, 2);
    assert!(
        err.contains("field kind: value \"no_such_kind\": expected one of"),
        "{err}"
    );

    let (code, err) = bad(
        r#"{"name": "t", "kind": "estimator_accuracy", "workload": {"type": "zipf", "keys": 10, "events": 5, "s": -1}, "configs": [{"hashes": 1, "slots": 8}]}"#,
    );
    assert_eq!(code, 2);
    assert!(err.contains("field workload.s: value -1"), "{err}");

    let (code, err) = bad(
        r#"{"name": "t", "kind": "estimator_accuracy", "workload": {"type": "harmonic", "keys": "many", "top": 1}, "configs": []}"#,
    );
    assert_eq!(code, 2);
    assert!(err.contains("field workload"), "{err}");
}

#[test]
fn memory_cap_can_be_raised_and_lowered() {
    let (_d, p) = temp_file(
        "s.json",
        format!(r#"{{{OK_HEAD}, "configs": [{{"hashes": 4, "slots": 1024}}]}}"#).as_bytes(),
    );
    let out = tempfile::tempdir().unwrap();
    let o = ratelab(&[
        "run",
        p.to_str().unwrap(),
        "--max-memory",
        "16KiB",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("over the memory cap of 16.0 KiB"),
        "{}",
        stderr(&o)
    );
    let o = ratelab(&[
        "run",
        p.to_str().unwrap(),
        "--max-memory",
        "64KiB",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn usage_errors_exit_2_and_help_teaches() {
    // The policy of `run --trace` says nothing without a trace.
    let o = ratelab(&["run", "--limit", "5"]);
    assert_eq!(o.status.code(), Some(2));
    let o = ratelab(&["run", "--trace", "t.log", "--interval-ms", "1000"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--limit is missing"), "{}", stderr(&o));
    let o = ratelab(&["--help"]);
    assert_eq!(o.status.code(), Some(0));
    let s = stdout(&o);
    assert!(s.contains("reproduce") && s.contains("Exit codes"), "{s}");
    let o = ratelab(&["run", "does/not/exist.json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("does/not/exist.json"));
}

#[test]
fn list_shows_kinds_and_scenarios() {
    let o = ratelab(&["list"]);
    assert_eq!(o.status.code(), Some(0));
    let s = stdout(&o);
    assert!(
        s.contains("estimator_accuracy") && s.contains("estimator-zipf"),
        "{s}"
    );
}
