//! A decision scenario split by key (`run --shard i/n`) and merged gives the
//! unsharded report byte for byte, on a generated trace and on a workload;
//! bad shard sets are refused with one line naming the file.

use crate::common::*;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A trace of 3,000 well-behaved keys (about one request every 2 s each)
/// and 15 abusive ones (40/s against a limit of 10/s), 20 s long, some
/// requests of weight 2; times in ns, seeded xorshift.
fn trace() -> String {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut events: Vec<(u64, String, u32)> = Vec::new();
    let span = 20_000_000_000u64;
    for k in 0..3000 {
        let name = format!("10.{}.{}.7", k / 250, k % 250);
        for _ in 0..(next() % 20) {
            let w = if next() % 10 == 0 { 2 } else { 1 };
            events.push((next() % span, name.clone(), w));
        }
    }
    for a in 0..15 {
        let name = format!("abuser-{a}");
        for _ in 0..800 {
            events.push((next() % span, name.clone(), 1));
        }
    }
    events.sort();
    let mut out = String::from("t_ns,key,weight\n");
    for (t, k, w) in events {
        let _ = writeln!(out, "{t},{k},{w}");
    }
    out
}

const TRACE_SCENARIO: &str = r#"{
  "name": "shard-decision",
  "kind": "decision_accuracy",
  "description": "A generated trace split by key.",
  "seed": 5,
  "look_at": "the merged report is the unsharded one",
  "policy": { "limit": 10, "interval_ms": 1000 },
  "shapes": [ { "hashes": 2, "slots": 256 } ],
  "trace": { "path": "trace.csv", "unit": "ns" },
  "watch": { "key": "abuser-3", "from_s": 0.0 }
}"#;

const WORKLOAD_SCENARIO: &str = r#"{
  "name": "shard-flash",
  "kind": "decision_accuracy",
  "seed": 9,
  "policy": { "limit": 10, "interval_ms": 1000 },
  "limiters": [
    { "model": "token_bucket" },
    { "model": "gcra" },
    { "model": "sliding_window_counter" },
    { "model": "nginx_limit_req", "nodelay": true }
  ],
  "workload": { "type": "mix", "parts": [
    { "type": "poisson", "keys": { "type": "zipf", "keys": 2000, "s": 1.1 }, "rate": 2000.0, "duration_s": 10.0 },
    { "type": "flash_crowd", "keys": { "type": "uniform", "keys": 5 }, "rate": 5.0,
      "flash_rate": 100.0, "flash_start_s": 4.0, "flash_duration_s": 3.0, "duration_s": 10.0 }
  ] }
}"#;

/// A folder with the trace and its scenario.
fn trace_scenario() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("trace.csv"), trace()).unwrap();
    let s = d.path().join("shard-decision.json");
    std::fs::write(&s, TRACE_SCENARIO).unwrap();
    (d, s)
}

/// The unsharded run of `scenario`: its folder's files and its report.json.
fn unsharded(scenario: &Path) -> (Vec<(String, Vec<u8>)>, String) {
    let whole = tempfile::tempdir().unwrap();
    ok(&[
        "run",
        scenario.to_str().unwrap(),
        "--out",
        whole.path().to_str().unwrap(),
        "--no-progress",
    ]);
    let want = tree(whole.path());
    let report = want
        .iter()
        .find(|(n, _)| n.ends_with("report.json"))
        .map(|(_, b)| String::from_utf8(b.clone()).unwrap())
        .unwrap();
    (want, report)
}

/// Runs shards `0..n` of `scenario` into `parts` (scrambled order) and
/// returns their files.
fn shards(scenario: &Path, parts: &Path, name: &str, n: u32, extra: &[&str]) -> Vec<String> {
    let s = scenario.to_str().unwrap();
    let p = parts.to_str().unwrap();
    for i in (0..n).rev() {
        let mut args = vec!["run", s, "--out", p, "--no-progress"];
        let spec = format!("{i}/{n}");
        args.extend(["--shard", &spec]);
        args.extend(extra);
        let out = ok(&args);
        assert!(out.contains("per-key candidates"), "{out}");
    }
    (0..n)
        .map(|i| format!("{p}/{name}.shard-{i}-of-{n}.json"))
        .collect()
}

fn merge(files: &[String], out: &Path) -> String {
    let mut args = vec!["merge", "--out", out.to_str().unwrap()];
    args.extend(files.iter().map(|f| f.as_str()));
    ok(&args)
}

#[test]
#[ignore = "slow: the decision lab sharded three ways; unoptimised, the test profile takes too long (.ci/run runs it)"]
fn a_trace_split_by_key_merges_to_the_unsharded_report_for_2_3_and_4_shards() {
    let (_d, scenario) = trace_scenario();
    let (want, report) = unsharded(&scenario);
    // The trace has what the split must get right: limited keys, a
    // watched key, shared-state candidates (the sketch, one tower).
    assert!(report.contains("\"watched\""), "{report}");
    assert!(report.contains("tower RateLimit global"));
    assert!(want.iter().any(|(n, _)| n.ends_with(".png")));
    for n in [2, 3, 4] {
        let parts = tempfile::tempdir().unwrap();
        let merged = tempfile::tempdir().unwrap();
        let files = shards(&scenario, parts.path(), "shard-decision", n, &[]);
        let text = merge(&files, merged.path());
        assert!(text.contains("(merged)"), "{text}");
        assert_eq!(tree(merged.path()), want, "N = {n}: merge vs unsharded run");
    }
}

#[test]
fn a_workload_split_by_key_merges_to_the_unsharded_report() {
    let (_d, scenario) = temp_file("shard-flash.json", WORKLOAD_SCENARIO.as_bytes());
    let (want, _) = unsharded(&scenario);
    let parts = tempfile::tempdir().unwrap();
    let merged = tempfile::tempdir().unwrap();
    let files = shards(&scenario, parts.path(), "shard-flash", 3, &[]);
    merge(&files, merged.path());
    assert_eq!(tree(merged.path()), want);
    // nginx's zone is shared by every key: shard 0 (the first
    // shared-state candidate's, 0 mod 3) ran it over all of them.
    let shard1 = std::fs::read_to_string(&files[1]).unwrap();
    assert!(shard1.contains("\"shared\":true"), "nginx is marked shared");
    assert!(
        shard1.contains("\"shared\":null"),
        "only shard 0 replays it"
    );
}

#[test]
fn bad_shard_sets_are_refused_naming_the_file() {
    let (_d, scenario) = trace_scenario();
    let parts = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let o = out.path().to_str().unwrap();
    let files = shards(&scenario, parts.path(), "shard-decision", 2, &[]);
    // Another seed.
    let seeded = shards(
        &scenario,
        other.path(),
        "shard-decision",
        2,
        &["--seed", "6"],
    );
    let e = fails(&["merge", "--out", o, &files[0], &seeded[1]]);
    assert!(
        e.contains(&seeded[1]) && e.contains("cannot be merged"),
        "{e}"
    );
    // Another shard count.
    let three = tempfile::tempdir().unwrap();
    let by3 = shards(&scenario, three.path(), "shard-decision", 3, &[]);
    let e = fails(&["merge", "--out", o, &files[0], &by3[1]]);
    assert!(e.contains("cannot be merged"), "{e}");
    // Missing and duplicated shards.
    let e = fails(&["merge", "--out", o, &files[0]]);
    assert!(e.contains("missing shard(s) 1/2"), "{e}");
    let e = fails(&["merge", "--out", o, &files[0], &files[1], &files[1]]);
    assert!(e.contains("given twice"), "{e}");
    // An edited count: the content hash no longer matches.
    let text = std::fs::read_to_string(&files[1]).unwrap();
    let edited = text.replacen("\"requests\":[", "\"requests\":[7", 1);
    assert_ne!(edited, text);
    let bad = other.path().join("edited.json");
    std::fs::write(&bad, edited).unwrap();
    let e = fails(&["merge", "--out", o, &files[0], bad.to_str().unwrap()]);
    assert!(
        e.contains("edited.json") && e.contains("field content"),
        "{e}"
    );
    // A truncated file.
    std::fs::write(&bad, &text[..text.len() / 2]).unwrap();
    let e = fails(&["merge", "--out", o, &files[0], bad.to_str().unwrap()]);
    assert!(
        e.contains("edited.json") && e.contains("malformed JSON"),
        "{e}"
    );
    // Nothing was written.
    assert!(tree(out.path()).is_empty());
}

#[test]
fn a_fleet_runs_whole_on_shard_0_and_decisions_are_refused() {
    let out = tempfile::tempdir().unwrap();
    let p = out.path().to_str().unwrap();
    let o = ok(&[
        "run",
        "scenarios/fleet-store-outage.json",
        "--out",
        p,
        "--shard",
        "1/2",
    ]);
    assert!(o.contains("with a deployment does not split"), "{o}");
    assert!(tree(out.path()).is_empty());
    let (_d, scenario) = trace_scenario();
    let e = fails(&[
        "run",
        scenario.to_str().unwrap(),
        "--out",
        p,
        "--shard",
        "0/2",
        "--decisions",
        &format!("{p}/d.csv"),
    ]);
    assert!(e.contains("--decisions with --shard"), "{e}");
}

/// `size --limit` on the generated trace: the arguments of every run
/// (three seeds), then `extra`.
fn size_args<'a>(trace: &'a str, out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = size_limit_args(trace, out, "compliant_denied_pct<=0.5", &["--seeds", "3"]);
    a.extend(extra);
    a
}

/// Runs `size` whole and sharded `n` ways for each `ns`, and asserts
/// each merge writes the unsharded folder byte for byte.
fn size_shards_merge_to_the_whole(t: &str, extra: &[&str], ns: &[u32]) {
    let whole = tempfile::tempdir().unwrap();
    ok(&size_args(t, whole.path().to_str().unwrap(), extra));
    let want = tree(whole.path());
    assert!(want.iter().any(|(n, _)| n.ends_with("size.json")));
    assert!(want.iter().any(|(n, _)| n.ends_with("frontier.png")));
    for &n in ns {
        let parts = tempfile::tempdir().unwrap();
        let p = parts.path().to_str().unwrap();
        let mut files = Vec::new();
        for i in 0..n {
            let spec = format!("{i}/{n}");
            let mut a = extra.to_vec();
            a.extend(["--shard", &spec]);
            let out = ok(&size_args(t, p, &a));
            // Every shard explores both modes' walks on its seeds.
            assert!(
                out.contains("docs: ") && out.contains("; proportional: "),
                "{out}"
            );
            files.push(format!("{p}/size.shard-{i}-of-{n}.json"));
        }
        let merged = tempfile::tempdir().unwrap();
        let said = merge(&files, merged.path());
        assert_eq!(tree(merged.path()), want, "N = {n}");
        // Some shard explored the walk's path to its end: the parts hold
        // every seed, the bisection and every model replay the
        // confirmation and the bound read, and the merge replays nothing.
        assert!(!said.contains("merge replayed"), "N = {n}: {said}");
    }
}

#[test]
fn size_limit_split_by_seed_merges_to_the_unsharded_size_folder() {
    let (d, _) = trace_scenario();
    let trace = d.path().join("trace.csv");
    // A claim of 22 seeds keeps the debug build quick.
    size_shards_merge_to_the_whole(
        trace.to_str().unwrap(),
        &["--coverage", "90", "--confidence", "90"],
        &[2, 3],
    );
}

#[test]
#[ignore = "slow: a rate-limit sizing sharded three ways; unoptimised, the test profile takes too long (.ci/run runs it)"]
fn size_limit_split_by_seed_merges_to_the_unsharded_size_folder_for_2_3_and_4_shards() {
    let (d, _) = trace_scenario();
    let trace = d.path().join("trace.csv");
    size_shards_merge_to_the_whole(trace.to_str().unwrap(), &[], &[2, 3, 4]);
}

#[test]
fn size_shards_of_another_job_or_mixed_with_a_scenario_are_refused() {
    let (d, scenario) = trace_scenario();
    let trace = d.path().join("trace.csv");
    let t = trace.to_str().unwrap();
    let parts = tempfile::tempdir().unwrap();
    let p = parts.path().to_str().unwrap();
    let out = tempfile::tempdir().unwrap();
    let o = out.path().to_str().unwrap();
    ok(&size_args(t, p, &["--shard", "0/2"]));
    let other = tempfile::tempdir().unwrap();
    let q = other.path().to_str().unwrap();
    // Another limit: another job.
    let mut args = size_args(t, q, &["--shard", "1/2"]);
    args[4] = "12";
    ok(&args);
    let a = format!("{p}/size.shard-0-of-2.json");
    let b = format!("{q}/size.shard-1-of-2.json");
    let e = fails(&["merge", "--out", o, &a, &b]);
    assert!(e.contains(&b) && e.contains("cannot be merged"), "{e}");
    let e = fails(&["merge", "--out", o, &a]);
    assert!(e.contains("missing shard(s) 1/2"), "{e}");
    let files = shards(&scenario, other.path(), "shard-decision", 2, &[]);
    let e = fails(&["merge", "--out", o, &a, &files[0], &files[1]]);
    assert!(e.contains("merged with size shards"), "{e}");
    assert!(tree(out.path()).is_empty());
}

#[test]
fn a_merge_over_its_memory_cap_is_refused_before_building_anything() {
    let (_d, scenario) = trace_scenario();
    let parts = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let o = out.path().to_str().unwrap();
    let files = shards(&scenario, parts.path(), "shard-decision", 2, &[]);
    // About 2,900 keys x 11 tallies: about 1 MB.
    let e = fails(&[
        "merge",
        "--out",
        o,
        "--max-memory",
        "100KiB",
        &files[0],
        &files[1],
    ]);
    assert!(
        e.contains("merge --max-memory") && e.contains("keys x 11 tallies"),
        "{e}"
    );
    assert!(tree(out.path()).is_empty());
    ok(&[
        "merge",
        "--out",
        o,
        "--max-memory",
        "4MiB",
        &files[0],
        &files[1],
    ]);
}

/// The generated trace as nginx logs it (`combined`, whole seconds, the
/// key as `$remote_addr`), with `bad` spliced in as line `at` (1-based).
fn access_log(bad: Option<(usize, &str)>) -> String {
    let mut out = String::new();
    let mut n = 0;
    for line in trace().lines().skip(1) {
        let mut f = line.split(',');
        let (t, key) = (f.next().unwrap(), f.next().unwrap());
        let s: u64 = t.parse::<u64>().unwrap() / 1_000_000_000;
        n += 1;
        if let Some((at, text)) = bad.filter(|(at, _)| *at == n) {
            let _ = at;
            out.push_str(text);
            out.push('\n');
            n += 1;
        }
        let _ = writeln!(
            out,
            "{key} - - [01/Jan/2024:00:00:{s:02} +0000] \"GET /u/{n} HTTP/1.1\" 200 {} \"-\" \"curl/8.4.0\"",
            n % 977
        );
    }
    out
}

const LOG_SCENARIO: &str = r#"{
  "name": "shard-log",
  "kind": "decision_accuracy",
  "seed": 5,
  "policy": { "limit": 10, "interval_ms": 1000 },
  "shapes": [ { "hashes": 2, "slots": 256 } ],
  "trace": { "path": "access.log", "format": "combined", "key": "remote_addr" },
  "watch": { "key": "abuser-3", "from_s": 0.0 }
}"#;

/// A folder with the access log (and `bad` spliced in) and its scenario.
fn log_scenario(bad: Option<(usize, &str)>) -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("access.log"), access_log(bad)).unwrap();
    let s = d.path().join("shard-log.json");
    std::fs::write(&s, LOG_SCENARIO).unwrap();
    (d, s)
}

#[test]
#[ignore = "slow: the decision lab on an access log sharded three ways; unoptimised, the test profile takes too long (.ci/run runs it)"]
fn an_access_log_split_by_key_merges_to_the_unsharded_report_for_2_3_and_4_shards() {
    let (_d, scenario) = log_scenario(None);
    let (want, report) = unsharded(&scenario);
    // Spread within whole seconds (seeded), a watched key, five
    // shared-state candidates.
    assert!(report.contains("spread uniform"), "{report}");
    assert!(report.contains("\"watched\""), "{report}");
    for n in [2, 3, 4] {
        let parts = tempfile::tempdir().unwrap();
        let merged = tempfile::tempdir().unwrap();
        let files = shards(&scenario, parts.path(), "shard-log", n, &[]);
        // The c-th shared-state candidate is on shard c mod n: each shard
        // holds some of the five.
        for (i, f) in files.iter().enumerate() {
            let text = std::fs::read_to_string(f).unwrap();
            let holds = !text.contains("\"shared\":null");
            assert!(holds, "shard {i} of {n} holds shared-state candidates");
        }
        merge(&files, merged.path());
        assert_eq!(tree(merged.path()), want, "N = {n}: merge vs unsharded run");
    }
    // Six shards: the sixth holds none and reads the others' keys only as
    // far as to know they are not its own.
    let parts = tempfile::tempdir().unwrap();
    let merged = tempfile::tempdir().unwrap();
    let files = shards(&scenario, parts.path(), "shard-log", 6, &[]);
    let text = std::fs::read_to_string(&files[5]).unwrap();
    assert!(text.contains("\"shared\":null"), "shard 5 of 6 holds none");
    merge(&files, merged.path());
    assert_eq!(tree(merged.path()), want, "N = 6");
}

/// A line wrong where its time or key is fails every shard with the
/// unsharded run's message; a line wrong only past them fails the shard
/// that owns its key, with that message, and no other.
#[test]
fn a_malformed_log_line_fails_the_shards_that_read_it_as_the_unsharded_run_does() {
    let scenario_of = |bad: &str| log_scenario(Some((400, bad)));
    let run_err = |scenario: &Path, extra: &[&str]| {
        let out = tempfile::tempdir().unwrap();
        let s = scenario.to_str().unwrap();
        let mut args = vec![
            "run",
            s,
            "--out",
            out.path().to_str().unwrap(),
            "--no-progress",
        ];
        args.extend(extra);
        let o = ratelab(&args);
        match o.status.code() {
            Some(0) => None,
            Some(2) => {
                let e = stderr(&o);
                assert_eq!(e.trim_end().lines().count(), 1, "one line: {e}");
                Some(e)
            }
            c => panic!("{args:?}: exit {c:?}: {}", stderr(&o)),
        }
    };
    // Wrong in its time: every shard says what the unsharded run says.
    let (_d, s) = scenario_of(
        "10.9.9.9 - - [01/Jan/2024:00:00:00 +0000 \"GET / HTTP/1.1\" 200 1 \"-\" \"curl/8.4.0\"",
    );
    let want = run_err(&s, &[]).expect("the unsharded run fails");
    assert!(want.contains("line 400"), "{want}");
    for i in 0..3 {
        let spec = format!("{i}/3");
        assert_eq!(
            run_err(&s, &["--shard", &spec]).as_deref(),
            Some(want.as_str())
        );
    }
    // Wrong past its key and time (no closing quote): the unsharded
    // message on the shard that owns 10.9.9.9, the others go on (the
    // merge then misses that shard).
    let (_d, s) = scenario_of(
        "10.9.9.9 - - [01/Jan/2024:00:00:00 +0000] \"GET / HTTP/1.1\" 200 1 \"-\" \"curl/8.4.0",
    );
    let want = run_err(&s, &[]).expect("the unsharded run fails");
    assert!(
        want.contains("line 400") && want.contains("http_user_agent"),
        "{want}"
    );
    let owner = (0..3)
        .filter(|&i| run_err(&s, &["--shard", &format!("{i}/3")]).is_some())
        .collect::<Vec<_>>();
    assert_eq!(owner.len(), 1, "one shard fails: {owner:?}");
    let e = run_err(&s, &["--shard", &format!("{}/3", owner[0])]);
    assert_eq!(e.as_deref(), Some(want.as_str()));
}

#[test]
fn size_shards_of_a_trace_changed_since_are_refused_naming_the_file() {
    let (d, _) = trace_scenario();
    let trace = d.path().join("trace.csv");
    let t = trace.to_str().unwrap();
    let parts = tempfile::tempdir().unwrap();
    let p = parts.path().to_str().unwrap();
    let claim = ["--coverage", "90", "--confidence", "90"];
    for i in 0..2 {
        let spec = format!("{i}/2");
        ok(&size_args(
            t,
            p,
            &[&claim[..], &["--shard", &spec]].concat(),
        ));
    }
    // The trace loses its last 100 requests after the shards ran.
    let text = std::fs::read_to_string(&trace).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    std::fs::write(&trace, lines[..lines.len() - 100].join("\n") + "\n").unwrap();
    let out = tempfile::tempdir().unwrap();
    let a = format!("{p}/size.shard-0-of-2.json");
    let b = format!("{p}/size.shard-1-of-2.json");
    let e = fails(&["merge", "--out", out.path().to_str().unwrap(), &a, &b]);
    assert!(
        e.contains(&a) && e.contains("a shard of another trace"),
        "{e}"
    );
    assert!(tree(out.path()).is_empty());
}
