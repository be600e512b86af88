//! Fuzzing the newer surfaces in the style of `tests/fuzz.rs`: one property
//! per parser (strict JSON, limit and count targets, the guarantee's plan,
//! `size` flags, shard files through `merge`, baselines through `check`),
//! each asserting "exit 0, 1 or 2 with one line; never a panic (exit 3 or
//! 101) or a hang". `PROPTEST_CASES=N` runs a longer campaign.

use crate::common::*;
use proptest::prelude::*;
use ratelab::sizing::guarantee::Plan;
use ratelab::sizing::limit::{parse_near, LimitTarget};
use ratelab::sizing::Target;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs the test build of `ratelab` with `args` under a time limit; Ok for
/// exit 0 or 1, or 2 with a one-line message.
fn run_ok(args: &[&str]) -> Result<(), String> {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ratelab"))
        .args(args)
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut err);
    }
    match status.and_then(|s| s.code()) {
        Some(0) | Some(1) => Ok(()),
        Some(2) if err.trim_end().lines().count() == 1 => Ok(()),
        other => Err(format!("{args:?}: exit {other:?}, stderr {err:?}")),
    }
}

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(512), ..ProptestConfig::default() })]

    #[test]
    fn strict_json_agrees_with_serde_or_names_the_duplicate(
        noise in prop::collection::vec(prop::sample::select(vec!["{", "}", "[", "]", ",", ":", "\"a\"", "\"b\"", "1", "-2.5", "null", "true", " "]), 0..40),
    ) {
        let text = noise.concat();
        let ours = ratelab::strict_json::from_str(&text);
        let theirs: serde_json::Result<serde_json::Value> = serde_json::from_str(&text);
        match (&ours, &theirs) {
            (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
            (Err(e), Ok(_)) => prop_assert!(e.to_string().contains("duplicate key"), "{}", e),
            (Ok(_), Err(e)) => prop_assert!(false, "serde_json refused what we accepted: {}", e),
            (Err(_), Err(_)) => {}
        }
    }

    #[test]
    fn limit_and_count_targets_parse_or_fail_in_one_line(
        metric in prop::sample::select(vec!["compliant_denied_pct", "compliant_keys_denied", "excess_pct", "p99", "max", "mean", "exact_pct", "over_bound_pct", "x", ""]),
        op in prop::sample::select(vec!["<=", "<", ">=", ">", "=", "=<", ""]),
        value in prop::sample::select(vec!["0", "-1", "1e308", "NaN", "inf", "0.05*limit", "limit*2", "avg", "2*avg", "limit", "", "1e-320", "x*limit"]),
        limit in prop::option::of(prop::sample::select(vec![0u64, 1, 100, u64::MAX])),
    ) {
        let text = format!("{metric}{op}{value}");
        match LimitTarget::parse_in(&text, limit) {
            Ok(t) => prop_assert!(t.threshold.is_finite()),
            Err(e) => prop_assert_eq!(e.to_string().lines().count(), 1),
        }
        match Target::parse(&text, 3.0) {
            Ok(t) => prop_assert!(t.threshold.is_finite() && t.threshold >= 0.0),
            Err(e) => prop_assert_eq!(e.to_string().lines().count(), 1),
        }
    }

    #[test]
    fn plans_and_near_limits_never_panic(cov in any::<f64>(), conf in any::<f64>(), min in any::<u32>(), near in "[0-9.e+-]{0,6}(\\.\\.)?[0-9.e+-]{0,6}") {
        match Plan::new(cov, conf, min) {
            Ok(p) => {
                prop_assert!(p.seeds >= min && p.allowed_failures < p.seeds);
                prop_assert!(ratelab::sizing::guarantee::upper_bound(p.allowed_failures, p.seeds, conf) <= 1.0 - cov / 100.0 + 1e-12);
            }
            Err(e) => prop_assert_eq!(e.to_string().lines().count(), 1),
        }
        if let Err(e) = parse_near(&near) {
            prop_assert_eq!(e.to_string().lines().count(), 1);
        }
    }
}

/// `size` with random combinations of flag values on a small trace and a
/// small `key,count` table: every combination exits 0, 1 or 2 with one line.
#[test]
fn size_flags_in_any_combination() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.csv");
    let mut text = String::from("t_ms,key\n");
    for i in 0..400u64 {
        text.push_str(&format!("{},k{}\n", i * 7, i % 13));
    }
    std::fs::write(&trace, text).unwrap();
    let counts = dir.path().join("c.csv");
    std::fs::write(&counts, "key,count\na,30\nb,4\nc,1\nd,9\n").unwrap();
    let flags: &[(&str, &[&str])] = &[
        ("--variant", &["count_min", "conservative", "cms", ""]),
        ("--hasher", &["xxh3", "ahash", "md5"]),
        ("--estimate", &["docs", "both", "bogus"]),
        ("--near-limit", &["0.5..1", "2..1", "x", "0..1e400"]),
        ("--time-unit", &["ms", "ns", "parsecs", "rfc3339"]),
        (
            "--sort-window-ms",
            &["0", "10", "-1", "99999999999999999999"],
        ),
        ("--coverage", &["99", "100", "0", "NaN", "90"]),
        ("--confidence", &["95", "1e-9", "99.99"]),
        ("--seeds", &["0", "1", "3"]),
        (
            "--columns",
            &["key=key", "key", "time=t_ms,key=key", "count=x"],
        ),
    ];
    let targets = [
        "compliant_denied_pct<=5",
        "p99<=avg",
        "max<=0.5*limit",
        "exact_pct>=50",
        "excess_pct<=-1",
    ];
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let runs = cases(24) as usize;
    let mut failures = Vec::new();
    for i in 0..runs {
        let out = dir.path().join(format!("out{i}"));
        let input = if next(2) == 0 { &trace } else { &counts };
        let mut args: Vec<String> = vec![
            "size".into(),
            "--trace".into(),
            input.display().to_string(),
            "--target".into(),
            targets[next(targets.len())].into(),
            "--no-progress".into(),
            "--max-work".into(),
            "2e9".into(),
            "--max-memory".into(),
            "1MiB".into(),
            "--out".into(),
            out.display().to_string(),
        ];
        if next(3) > 0 {
            args.extend([
                "--limit".into(),
                "10".into(),
                "--interval-ms".into(),
                "100".into(),
            ]);
        }
        for _ in 0..next(4) {
            let (flag, values) = flags[next(flags.len())];
            args.push(flag.into());
            args.push(values[next(values.len())].into());
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        if let Err(e) = run_ok(&refs) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Replaces the `nth` scalar of a JSON value by `with`.
fn mutate(v: &mut serde_json::Value, nth: usize, with: &serde_json::Value, count: &mut usize) {
    match v {
        serde_json::Value::Object(m) => m.values_mut().for_each(|x| mutate(x, nth, with, count)),
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| mutate(x, nth, with, count)),
        leaf => {
            if *count == nth {
                *leaf = with.clone();
            }
            *count += 1;
        }
    }
}

fn leaves(v: &serde_json::Value) -> usize {
    match v {
        serde_json::Value::Object(m) => m.values().map(leaves).sum(),
        serde_json::Value::Array(a) => a.iter().map(leaves).sum(),
        _ => 1,
    }
}

const NASTY: &[&str] = &[
    "0",
    "-1",
    "1e308",
    "18446744073709551615",
    "1000000000000",
    "\"\"",
    "null",
    "[]",
    "{}",
    "9221120237041090560",
    "7",
];

/// A real shard file with one leaf replaced: `merge` refuses it in one line
/// (or merges it when the leaf did not matter), never panics, and never
/// allocates from a cell index it has not checked.
#[test]
fn mutated_shard_files_through_merge() {
    let dir = tempfile::tempdir().unwrap();
    let sc = dir.path().join("tiny.json");
    std::fs::write(
        &sc,
        r#"{"name": "tiny-sweep", "kind": "estimator_accuracy", "seed": 3, "runs": 2,
            "workload": {"type": "harmonic", "keys": 50, "top": 200, "min": 1},
            "configs": [{"hashes": 2, "slots": 64}, {"hashes": 1, "slots": 32}]}"#,
    )
    .unwrap();
    let shards = dir.path().join("shards");
    let o = ratelab(&[
        "run",
        sc.to_str().unwrap(),
        "--shard",
        "0/1",
        "--out",
        shards.to_str().unwrap(),
        "--no-progress",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let file = std::fs::read_dir(&shards)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".json"))
        .expect("a shard file");
    let original: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let n = leaves(&original);
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut failures = Vec::new();
    for i in 0..cases(24) as usize {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let nth = (state % n as u64) as usize;
        let with: serde_json::Value =
            serde_json::from_str(NASTY[(state >> 32) as usize % NASTY.len()]).unwrap();
        let mut v = original.clone();
        mutate(&mut v, nth, &with, &mut 0);
        let path = dir.path().join(format!("m{i}.shard-0-of-1.json"));
        std::fs::write(&path, v.to_string()).unwrap();
        let out = dir.path().join(format!("merged{i}"));
        if let Err(e) = run_ok(&[
            "merge",
            path.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]) {
            failures.push(format!("leaf {nth} := {with}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The same through the file unchanged: it merges.
    let out = dir.path().join("merged");
    let o = ratelab(&[
        "merge",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// Arbitrary bytes as a baseline `report.json`: read strictly and bounded,
/// refused in one line, never a panic.
#[test]
fn baselines_of_arbitrary_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.json");
    let samples: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"{".to_vec(),
        b"{\"schema\": 1, \"schema\": 2}".to_vec(),
        vec![0u8; 4096],
        b"[1e999]".to_vec(),
        "{\"rows\": [{\"mean\": \"NaN\"}]}".as_bytes().to_vec(),
    ];
    for bytes in samples {
        std::fs::write(&path, &bytes).unwrap();
        if let Err(e) = ratelab::check::baseline::read_report(Path::new(&path)) {
            assert_eq!(e.to_string().lines().count(), 1, "{e}");
        }
    }
}
