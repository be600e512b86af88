//! Fuzzing without a nightly toolchain: proptest drives arbitrary and mutated
//! inputs through the parsers in-process, and mutated scenario files through
//! the binary. Nothing reachable from input may panic (exit 3 from the panic
//! hook, or 101) or hang; bad input must be exit 2 with one line.
//!
//! `PROPTEST_CASES=20000 cargo test --release --test it fuzz::` runs a long
//! campaign; the default is a short one for CI.

use crate::common::*;
use proptest::prelude::*;
use ratelab::scenario::Scenario;
use ratelab::workload::trace::{Disorder, TimeUnit, TraceFormat, TraceOptions, TraceReader};
use std::path::Path;
use std::time::{Duration, Instant};

/// Adversarial leaf values for scenario mutation.
const NASTY: &[&str] = &[
    "0",
    "-1",
    "1e308",
    "-1e308",
    "18446744073709551616",
    "99999999999999999999999",
    "0.5",
    "\"\"",
    "\"x\"",
    "null",
    "true",
    "[]",
    "{}",
    "\"NaN\"",
    "4294967296",
    "1e9",
    "[1,2]",
    "\"../../etc\"",
    "65536",
    "100000000",
    "1000000000000",
    "1e15",
];

/// The number of scalar leaves of a JSON text (what [`mutate`] can hit).
fn leaf_count(text: &str) -> usize {
    fn walk(v: &serde_json::Value) -> usize {
        match v {
            serde_json::Value::Object(m) => m.values().map(walk).sum(),
            serde_json::Value::Array(a) => a.iter().map(walk).sum(),
            _ => 1,
        }
    }
    walk(&serde_json::from_str(text).unwrap())
}

/// Replaces the `nth` scalar value in a JSON text with `with`.
fn mutate(text: &str, nth: usize, with: &str) -> String {
    let value: serde_json::Value = serde_json::from_str(text).unwrap();
    let mut count = 0usize;
    fn walk(v: &mut serde_json::Value, nth: usize, count: &mut usize, with: &serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                for (_, x) in m.iter_mut() {
                    walk(x, nth, count, with);
                }
            }
            serde_json::Value::Array(a) => {
                for x in a.iter_mut() {
                    walk(x, nth, count, with);
                }
            }
            leaf => {
                if *count == nth {
                    *leaf = with.clone();
                }
                *count += 1;
            }
        }
    }
    let mut v = value;
    let with: serde_json::Value = serde_json::from_str(with).unwrap();
    walk(&mut v, nth, &mut count, &with);
    serde_json::to_string(&v).unwrap()
}

fn scenario_texts() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root().join("scenarios")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "json") {
            out.push((
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            ));
        }
    }
    out.sort();
    out
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(512),
        ..ProptestConfig::default()
    })]

    #[test]
    fn scenario_parser_never_panics_on_arbitrary_text(text in ".{0,300}") {
        let _ = Scenario::parse(Path::new("fuzz.json"), &text);
    }

    #[test]
    fn scenario_params_never_panic_on_json_shaped_noise(
        noise in prop::collection::vec(prop::sample::select(vec!["{", "}", "[", "]", ",", ":", "\"name\"", "\"kind\"", "\"workload\"", "\"type\"", "\"zipf\"", "1", "-1", "1e999", "\"a\"", "null"]), 0..40),
    ) {
        let text = noise.concat();
        let _ = Scenario::parse(Path::new("fuzz.json"), &text);
    }

    #[test]
    fn trace_reader_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..400), jsonl in any::<bool>(), sort in any::<bool>()) {
        let format = if jsonl { TraceFormat::JsonLines } else { TraceFormat::Csv };
        let opts = TraceOptions {
            unit: TimeUnit::Ms,
            disorder: if sort { Disorder::SortWithin(1_000_000) } else { Disorder::Reject },
            max_buffered: Some(16),
            ..TraceOptions::default()
        };
        let mut input = b"t_ms,key,weight\n".to_vec();
        input.extend(bytes);
        let reader = TraceReader::new(Path::new("fuzz.csv"), format, Box::new(std::io::Cursor::new(input)), opts);
        for event in reader.take(1000) {
            if let Err(e) = event {
                prop_assert_eq!(e.to_string().lines().count(), 1);
            }
        }
    }

    #[test]
    fn trace_reader_handles_csv_shaped_noise(lines in prop::collection::vec(("[0-9.eE+-]{0,25}", "[a-z,\"]{0,6}", "[0-9-]{0,22}"), 0..30)) {
        let mut text = String::from("t_s,key,weight\n");
        for (t, k, w) in lines {
            text.push_str(&format!("{t},{k},{w}\n"));
        }
        let reader = TraceReader::new(Path::new("f.csv"), TraceFormat::Csv, Box::new(std::io::Cursor::new(text.into_bytes())), TraceOptions::default());
        let mut last = 0u64;
        for event in reader {
            match event {
                Ok(e) => { prop_assert!(e.t_ns >= last); last = e.t_ns; prop_assert!(e.weight >= 1); }
                Err(e) => prop_assert_eq!(e.to_string().lines().count(), 1),
            }
        }
    }
}

/// Every scenario file with one leaf replaced by an adversarial value, run
/// through the binary under a small memory cap: exit 0, 1 or 2, never a
/// panic, and within a time limit.
#[test]
#[ignore = "slow: every scenario mutated; unoptimised, the test profile takes too long (.ci/run runs it)"]
fn mutated_scenarios_never_crash_the_binary() {
    let budget: usize = std::env::var("RATELAB_FUZZ_MUTATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16);
    let scenarios = scenario_texts();
    // RATELAB_FUZZ_SEED picks another sequence of mutations (long campaigns).
    let mut rng_state = std::env::var("RATELAB_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(0x9E37_79B9_7F4A_7C15u64, |s| {
            s.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1
        });
    let mut next = || {
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        rng_state
    };
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for i in 0..budget {
        let (name, text) = &scenarios[(next() % scenarios.len() as u64) as usize];
        let leaves = leaf_count(text).max(1);
        let nth = (next() % leaves as u64) as usize;
        let with = NASTY[(next() % NASTY.len() as u64) as usize];
        let mutated = mutate(text, nth, with);
        if let Err(e) = run_mutated(dir.path(), i, &mutated) {
            failures.push(format!(
                "{name} leaf {nth} := {with}: {e}\n  scenario: {mutated}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {budget} mutations failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Runs one mutated scenario through the binary (the test build, so with
/// overflow checks on) under a 256 MiB cap, a 5e8 work budget and a 60 s
/// limit. Ok for exit 0 or 1, or exit 2 with a one-line message.
fn run_mutated(dir: &Path, i: usize, mutated: &str) -> Result<(), String> {
    let path = dir.join(format!("m{i}.json"));
    std::fs::write(&path, mutated).unwrap();
    let out = dir.join(format!("out{i}"));
    let started = Instant::now();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ratelab"))
        .args([
            "run",
            path.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--max-memory",
            "256MiB",
            // About 5 CPU-seconds: every committed scenario fits, and a
            // mutation asking for more must be refused at once (exit 2).
            "--max-work",
            "5e8",
            "--no-progress",
        ])
        .current_dir(root())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
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
        other => Err(format!("exit {other:?}, stderr {err:?}")),
    }
}

/// Indexes (in [`mutate`]'s order) of the scalar leaves that are numbers.
fn numeric_leaves(text: &str) -> Vec<usize> {
    fn walk(v: &serde_json::Value, count: &mut usize, out: &mut Vec<usize>) {
        match v {
            serde_json::Value::Object(m) => m.values().for_each(|x| walk(x, count, out)),
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, count, out)),
            leaf => {
                if leaf.is_number() {
                    out.push(*count);
                }
                *count += 1;
            }
        }
    }
    let mut out = Vec::new();
    walk(&serde_json::from_str(text).unwrap(), &mut 0, &mut out);
    out
}

/// Extreme but well-typed numbers, for [`extreme_numbers_in_numeric_leaves`].
const EXTREMES: &[&str] = &[
    "18446744073709551615",
    "9223372036854775807",
    "-9223372036854775808",
    "1000000000000",
    "4294967295",
    "-1",
    "1e-300",
];

/// Every numeric leaf of every scenario, set to each extreme value, through
/// the test build of the binary (overflow checks on, so wrapped arithmetic
/// is a panic, exit 3). The full sweep (2,275 runs, about 25 minutes on 2
/// cores) is `RATELAB_FUZZ_EXTREMES=all`; by default a fixed sample of 24.
/// The full sweep found two overflows in the decision lab (sketch memory of
/// a u64::MAX-slot shape; the watched timeline of a flash crowd starting
/// after the end), both fixed and kept as tests.
#[test]
#[ignore = "slow: every scenario's numbers pushed to extremes; unoptimised, the test profile takes too long (.ci/run runs it)"]
fn extreme_numbers_in_numeric_leaves() {
    let mut cases = Vec::new();
    for (name, text) in scenario_texts() {
        for leaf in numeric_leaves(&text) {
            for with in EXTREMES {
                cases.push((name.clone(), text.clone(), leaf, *with));
            }
        }
    }
    let all = std::env::var("RATELAB_FUZZ_EXTREMES").is_ok_and(|v| v == "all");
    let step = if all { 1 } else { (cases.len() / 24).max(1) };
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let mut ran = 0;
    for (i, (name, text, leaf, with)) in cases.iter().enumerate().step_by(step) {
        let mutated = mutate(text, *leaf, with);
        ran += 1;
        if let Err(e) = run_mutated(dir.path(), i, &mutated) {
            failures.push(format!("{name} leaf {leaf} := {with}: {e}"));
        }
    }
    assert!(ran >= 20, "only {ran} cases ran");
    assert!(
        failures.is_empty(),
        "{} of {ran} extreme values failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
