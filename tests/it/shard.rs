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

/// A shard of `--shard 0/4294967295` (a valid spec) merged alone: refused at
/// once, naming the first few missing shards and how many more, under a
/// 2 GiB address-space cap. Listing every missing index walked 0..n and
/// took over 20 GiB before a minute was up.
#[test]
fn a_shard_of_billions_is_refused_at_once_naming_the_first_missing() {
    let (_d, scenario) = temp_file("shard-small.json", SCENARIO);
    let parts = tempfile::tempdir().unwrap();
    let p = parts.path().to_str().unwrap();
    let n = u32::MAX;
    ok(&[
        "run",
        scenario.to_str().unwrap(),
        "--out",
        p,
        "--shard",
        &format!("1/{n}"),
    ]);
    let file = format!("{p}/shard-small.shard-1-of-{n}.json");
    let o = std::process::Command::new("sh")
        .args([
            "-c",
            "ulimit -v 2097152; exec timeout 60 \"$0\" merge --out \"$1\" \"$2\"",
            env!("CARGO_BIN_EXE_ratelab"),
            &format!("{p}/merged"),
            &file,
        ])
        .output()
        .unwrap();
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    assert!(
        e.contains(&format!(
            "shard-small: missing shard(s) 0/{n}, 2/{n}, 3/{n}, 4/{n}, 5/{n} and {} more of {n}",
            n - 6
        )),
        "{e}"
    );
}

/// `scenario`, `kind` and `scheme` are copies of what the identity covers:
/// an edit of one is refused naming the field and the value. (An edited
/// `scenario` read as a shard of another scenario, "missing shard(s)"; an
/// edited `kind` or `scheme` of a sweep merged silently.)
#[test]
fn shard_files_whose_name_kind_or_scheme_was_edited_are_refused() {
    let (_d, scenario) = temp_file("shard-small.json", SCENARIO);
    let parts = tempfile::tempdir().unwrap();
    let p = parts.path().to_str().unwrap();
    for i in 0..2 {
        ok(&[
            "run",
            scenario.to_str().unwrap(),
            "--out",
            p,
            "--shard",
            &format!("{i}/2"),
        ]);
    }
    let files: Vec<String> = (0..2)
        .map(|i| format!("{p}/shard-small.shard-{i}-of-2.json"))
        .collect();
    let text = std::fs::read_to_string(&files[1]).unwrap();
    for (from, to, field) in [
        (
            r#""scenario":"shard-small""#,
            r#""scenario":"other""#,
            "field scenario: value \"other\"",
        ),
        (
            r#""kind":"estimator_accuracy""#,
            r#""kind":"estimator_accuracyx""#,
            "field kind: value \"estimator_accuracyx\"",
        ),
        (
            r#""scheme":"cell k"#,
            r#""scheme":"cell j"#,
            "field scheme: value \"cell j",
        ),
    ] {
        assert!(text.contains(from), "{from}");
        std::fs::write(&files[1], text.replacen(from, to, 1)).unwrap();
        let out = format!("{p}/merged");
        let e = fails(&["merge", "--out", &out, &files[0], &files[1]]);
        assert!(e.contains(&files[1]) && e.contains(field), "{e}");
        assert!(!std::path::Path::new(&out).exists(), "{e}");
    }
    std::fs::write(&files[1], &text).unwrap();
    ok(&[
        "merge",
        "--out",
        &format!("{p}/merged"),
        &files[0],
        &files[1],
    ]);
}
