//! `--shard i/n` + `ratelab merge` give the unsharded report, byte for byte.

use crate::common::*;

const SCENARIO: &[u8] = br#"{
  "name": "shard-small",
  "kind": "estimator_accuracy",
  "description": "A small sweep split across shards.",
  "seed": 3,
  "runs": 2,
  "workload": { "type": "harmonic", "keys": 2000, "top": 20000, "min": 3 },
  "configs": [
    { "hashes": 1, "slots": 512 },
    { "hashes": 4, "slots": 256 },
    { "hashes": 2, "slots": 1024 },
    { "hashes": 3, "slots": 300 }
  ]
}"#;

#[test]
fn merging_three_shards_gives_the_unsharded_report_byte_for_byte() {
    let (_d, scenario) = temp_file("shard-small.json", SCENARIO);
    let s = scenario.to_str().unwrap();
    let whole = tempfile::tempdir().unwrap();
    let parts = tempfile::tempdir().unwrap();
    let merged = tempfile::tempdir().unwrap();
    let p = parts.path().to_str().unwrap();
    ok(&["run", s, "--out", whole.path().to_str().unwrap()]);
    // Shards in a scrambled order; 8 cells over 3 shards: 3, 3, 2.
    for i in ["2", "0", "1"] {
        let out = ok(&["run", s, "--out", p, "--shard", &format!("{i}/3")]);
        assert!(out.contains("sweep cells"), "{out}");
    }
    let files: Vec<String> = (0..3)
        .map(|i| format!("{p}/shard-small.shard-{i}-of-3.json"))
        .collect();
    let mut args = vec!["merge", "--out", merged.path().to_str().unwrap()];
    args.extend(files.iter().map(|f| f.as_str()));
    ok(&args);
    let a = tree(whole.path());
    assert!(a.iter().any(|(n, _)| n.ends_with("report.json")));
    assert!(a.iter().any(|(n, _)| n.ends_with("error_percentiles.png")));
    assert_eq!(a, tree(merged.path()), "merge(shards) vs unsharded run");

    // A missing shard is refused.
    let o = ratelab(&[
        "merge",
        "--out",
        merged.path().to_str().unwrap(),
        &files[0],
        &files[2],
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("missing shard(s) 1/3"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn shards_of_another_seed_cannot_be_mixed() {
    let (_d, scenario) = temp_file("shard-small.json", SCENARIO);
    let s = scenario.to_str().unwrap();
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let (pa, pb) = (a.path().to_str().unwrap(), b.path().to_str().unwrap());
    ok(&["run", s, "--out", pa, "--shard", "0/2", "--runs", "1"]);
    ok(&[
        "run", s, "--out", pb, "--shard", "1/2", "--runs", "1", "--seed", "4",
    ]);
    let o = ratelab(&[
        "merge",
        "--out",
        pa,
        &format!("{pa}/shard-small.shard-0-of-2.json"),
        &format!("{pb}/shard-small.shard-1-of-2.json"),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stderr(&o).contains("cannot be merged"), "{}", stderr(&o));
}

#[test]
fn non_sweep_kinds_run_whole_on_shard_0_only() {
    let out = tempfile::tempdir().unwrap();
    let p = out.path().to_str().unwrap();
    let o = ok(&[
        "run",
        "scenarios/estimator-overflow.json",
        "--out",
        p,
        "--shard",
        "1/2",
    ]);
    assert!(o.contains("does not split"), "{o}");
    assert!(tree(out.path()).is_empty());
    ok(&[
        "run",
        "scenarios/estimator-overflow.json",
        "--out",
        p,
        "--shard",
        "0/2",
    ]);
    assert!(tree(out.path())
        .iter()
        .any(|(n, _)| n.ends_with("report.json")));
}
