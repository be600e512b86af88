//! `ratelab size --trace ... --limit`: the recommendation's figures equal
//! the decision lab's for the same shape and trace, the pick holds on fresh
//! hash seeds and is within 2x of the cheapest shape a brute force finds,
//! the output does not depend on the thread count, and bad input exits 2
//! naming the line or field.

use crate::common::*;
use ratelab::model::rate_limiter::RateMode;
use ratelab::sizing::input::{read_trace_input, TraceInput};
use ratelab::sizing::limit::{replay_fast, replay_model, Classes, LimitPolicy, RateShape, Stop};
use ratelab::workload::trace::InputOptions;
use serde_json::Value;
use std::path::Path;

/// A 30 s access log for a 20 per second limit: 40 steady clients at about
/// 12/s (near the limit), 5 abusers at about 60/s, 3,000 tail keys at about
/// 0.2/s. Gaps are uniform in (0.5, 1.5) / rate, from a fixed LCG.
fn write_trace(path: &Path) {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut unif = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut ev: Vec<(u64, String)> = Vec::new();
    let groups: [(&str, usize, f64); 3] = [
        ("steady", 40, 12.0),
        ("abuser", 5, 60.0),
        ("tail", 3000, 0.2),
    ];
    for (name, keys, rate) in groups {
        for k in 0..keys {
            let mut t = unif() / rate;
            while t < 30.0 {
                ev.push((
                    (t * 1e9) as u64 + 1_700_000_000_000_000_000,
                    format!("{name}-{k}"),
                ));
                t += (0.5 + unif()) / rate;
            }
        }
    }
    ev.sort();
    let mut text = String::from("t_ns,key\n");
    for (t, k) in ev {
        text.push_str(&format!("{t},{k}\n"));
    }
    std::fs::write(path, text).unwrap();
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn size(dir: &Path, extra: &[&str]) -> (std::process::Output, Value) {
    let trace = dir.join("t.csv");
    let out = dir.join("out");
    let mut args = vec![
        "size",
        "--trace",
        trace.to_str().unwrap(),
        "--limit",
        "20",
        "--interval-ms",
        "1000",
        "--target",
        "compliant_denied_pct<=0.5",
        "--seeds",
        "5",
        "--seed",
        "7",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = ratelab(&args);
    let j = if o.status.code() == Some(0) {
        json(&out.join("size.json"))
    } else {
        Value::Null
    };
    (o, j)
}

#[test]
#[ignore = "slow: the decision lab on 299 fresh seeds; unoptimised, the test profile takes too long (.ci/run runs it)"]
fn recommendation_figures_equal_the_decision_lab_and_hold_on_fresh_seeds() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(&dir.path().join("t.csv"));
    let (o, j) = size(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(j["schema"], "ratelab.size.limit.v1");
    let seed = j["seed"].as_u64().unwrap();
    // Every confirmed shape of both modes, as decision lab candidates.
    let mut limiters = Vec::new();
    let mut want = Vec::new();
    for m in j["modes"].as_array().unwrap() {
        let mode = m["mode"].as_str().unwrap().to_string();
        let rec = &m["recommendation"];
        assert!(rec.is_object(), "{mode}: no recommendation");
        assert_eq!(rec["decision_lab"]["seed"], seed);
        for c in m["confirmed"].as_array().unwrap() {
            let (h, w) = (c["shape"]["hashes"].clone(), c["shape"]["slots"].clone());
            limiters.push(serde_json::json!({"model": "pingora_rate", "estimate": mode, "hashes": h, "slots": w}));
            let is_pick = h == rec["hashes"] && w == rec["slots"];
            want.push((
                mode.clone(),
                h,
                w,
                c["seeds"][0]["figures"].clone(),
                is_pick,
            ));
        }
    }
    assert!(
        want.iter().filter(|w| w.4).count() == 2,
        "both picks confirmed"
    );
    let scenario = serde_json::json!({
        "name": "recheck", "kind": "decision_accuracy", "seed": seed,
        "policy": {"limit": 20, "interval_ms": 1000}, "shapes": [],
        "trace": {"path": "t.csv"}, "limiters": limiters,
    });
    let sc = dir.path().join("recheck.json");
    std::fs::write(&sc, scenario.to_string()).unwrap();
    let lab_out = dir.path().join("lab");
    let o = ratelab(&[
        "run",
        sc.to_str().unwrap(),
        "--out",
        lab_out.to_str().unwrap(),
        "--no-progress",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report = json(&lab_out.join("recheck").join("report.json"));
    let rows = report["rows"].as_array().unwrap();
    for (mode, h, w, f, _) in &want {
        let fam = format!("pingora Rate {mode} {h}x{w}");
        let row = rows
            .iter()
            .find(|r| r["algorithm"] == fam.as_str())
            .unwrap_or_else(|| panic!("{fam}"));
        let harm = &row["harm"];
        for (ours, lab) in [
            ("compliant_denied", "compliant_denied"),
            ("compliant_keys_hit", "compliant_keys_hit"),
            ("limited_excess", "limited_excess"),
            ("compliant_denied_pct", "compliant_denied_pct"),
            ("limited_excess_pct", "limited_excess_pct"),
        ] {
            assert_eq!(f[ours], harm[lab], "{fam}: {ours}");
        }
    }
    // The small shapes of the frontier do deny compliant keys: the test
    // compares non-trivial figures.
    assert!(want
        .iter()
        .any(|w| w.3["compliant_denied"].as_u64().unwrap() > 0));

    // Ten fresh hash seeds (the verification used the lab's seeds 7..47): the pick
    // meets the target through the model, and a brute force over shapes
    // finds nothing cheaper than half its memory that meets it on them.
    let TraceInput::Timed(tr) =
        read_trace_input(&dir.path().join("t.csv"), &InputOptions::default()).unwrap()
    else {
        panic!("timed");
    };
    let policy = LimitPolicy {
        limit: 20,
        interval_ms: 1000,
    };
    let classes = Classes::of(&tr, policy);
    let fresh: Vec<u64> = (1001..=1010).collect();
    let meets = |mode, s: RateShape, model: bool| {
        fresh.iter().all(|&seed| {
            let f = if model {
                replay_model(&tr, &classes, policy, mode, s, seed).unwrap()
            } else {
                replay_fast(&tr, &classes, policy, mode, s, seed, Stop::default()).unwrap()
            };
            f.compliant_denied_pct <= 0.5
        })
    };
    for m in j["modes"].as_array().unwrap() {
        let mode = if m["mode"] == "docs" {
            RateMode::Docs
        } else {
            RateMode::Proportional
        };
        let rec = &m["recommendation"];
        let pick = RateShape {
            hashes: rec["hashes"].as_u64().unwrap() as usize,
            slots: rec["slots"].as_u64().unwrap(),
        };
        assert!(
            meets(mode, pick, true),
            "{mode:?}: pick {} fails on fresh seeds",
            pick.label()
        );
        let mut cheapest = u64::MAX;
        for h in 1..=8usize {
            let mut w = 8.0f64;
            while (RateShape {
                hashes: h,
                slots: w as u64,
            })
            .memory()
                < cheapest.min(pick.memory())
            {
                let s = RateShape {
                    hashes: h,
                    slots: w as u64,
                };
                if meets(mode, s, false) {
                    cheapest = cheapest.min(s.memory());
                    break;
                }
                w *= 1.09;
            }
        }
        let cheapest = cheapest.min(pick.memory());
        assert!(
            pick.memory() <= 2 * cheapest,
            "{mode:?}: pick {} ({} B) vs cheapest {cheapest} B",
            pick.label(),
            pick.memory()
        );
    }
}

#[test]
#[ignore = "slow: a rate-limit sizing at two thread counts; unoptimised, the test profile takes too long (.ci/run runs it)"]
fn output_does_not_depend_on_the_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(&dir.path().join("t.csv"));
    let (o1, j1) = size(
        dir.path(),
        &["--threads", "1", "--estimate", "proportional"],
    );
    assert_eq!(o1.status.code(), Some(0), "{}", stderr(&o1));
    let md1 = std::fs::read(dir.path().join("out/size.md")).unwrap();
    let (o2, j2) = size(
        dir.path(),
        &["--threads", "3", "--estimate", "proportional"],
    );
    assert_eq!(o2.status.code(), Some(0), "{}", stderr(&o2));
    let md2 = std::fs::read(dir.path().join("out/size.md")).unwrap();
    assert_eq!(j1, j2);
    assert_eq!(md1, md2);
    assert_eq!(stdout(&o1), stdout(&o2));
    assert!(dir.path().join("out/frontier.png").is_file());
    assert_eq!(j1["modes"].as_array().unwrap().len(), 1);
    // The review page shows the sizing, its table and its chart.
    let o = ratelab(&["report", "--out", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let html = std::fs::read_to_string(dir.path().join("index.html")).unwrap();
    assert!(
        html.contains("for a rate limit"),
        "the sizing's description"
    );
    assert!(html.contains("compliant denied %"), "the frontier table");
    assert!(html.contains("id=\"f-out-frontier\""), "the chart");
}

#[test]
fn key_count_tables_with_other_columns_and_near_limit_error_targets() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("hits,ip\n");
    for i in 0..3000u64 {
        // Repeated keys: each ip twice, halves of its count.
        let c = if i < 60 { 40 + i % 20 } else { 1 + i % 3 };
        text.push_str(&format!(
            "{},10.0.{}.{}\n{},10.0.{}.{}\n",
            c / 2,
            i / 256,
            i % 256,
            c - c / 2,
            i / 256,
            i % 256
        ));
    }
    let f = dir.path().join("hits.csv");
    std::fs::write(&f, text).unwrap();
    let out = dir.path().join("out");
    let o = ratelab(&[
        "size",
        "--trace",
        f.to_str().unwrap(),
        "--columns",
        "key=ip,count=hits",
        "--limit",
        "50",
        "--target",
        "p99<=0.05*limit",
        "--near-limit",
        "0.5..1.5",
        "--seeds",
        "2",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&out.join("size.json"));
    assert_eq!(j["targets"][0]["threshold"], 2.5);
    // 60 keys of 40..59 are near 25..75; the repeated rows were summed.
    assert_eq!(j["workload"]["near_limit_key_windows"], 60);
    assert_eq!(j["workload"]["keys"], 3000);
    for m in j["modes"].as_array().unwrap() {
        let p99 = m["recommendation"]["verification"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                s["errors"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|e| e["metric"] == "p99")
                    .unwrap()["value"]
                    .as_f64()
                    .unwrap()
            })
            .fold(0.0f64, f64::max);
        assert!(p99 <= 2.5, "{p99}");
    }
    // Without --limit the same table goes to the count-min search.
    let o = ratelab(&[
        "size",
        "--trace",
        f.to_str().unwrap(),
        "--columns",
        "key=ip,count=hits",
        "--target",
        "max<=5",
        "--seeds",
        "2",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(json(&out.join("size.json"))["schema"], "ratelab.size.v1");
}

#[test]
fn malformed_logs_exit_2_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &str, &[&str], &str); 9] = [
        ("missing.csv", "t_ms,host\n1,a\n", &[], "line 1"),
        (
            "mixed.csv",
            "t_ms,key\n1,a\n2026-11-29T18:51:38Z,b\n",
            &[],
            "line 3",
        ),
        (
            "disorder.csv",
            "t_ms,key\n1,a\n5000,b\n6000,c\n10,d\n",
            &["--sort-window-ms", "100"],
            "line 5",
        ),
        ("empty.csv", "", &[], "empty"),
        ("header-only.csv", "t_ns,key\n", &[], "no requests"),
        (
            "ok.csv",
            "t_ms,key\n1,a\n",
            &["--target", "p99<=five*limit"],
            "five*limit",
        ),
        (
            "ok.csv",
            "t_ms,key\n1,a\n",
            &["--near-limit", "1..0.5"],
            "--near-limit",
        ),
        (
            "ok.csv",
            "t_ms,key\n1,a\n",
            &["--columns", "key"],
            "--columns",
        ),
        ("counts.csv", "key,count\na,1\nb,two\n", &[], "line 3"),
    ];
    for (name, text, extra, want) in cases {
        let f = dir.path().join(name);
        std::fs::write(&f, text).unwrap();
        let out = dir.path().join("out");
        let (f, out) = (f.to_str().unwrap(), out.to_str().unwrap());
        let o = ratelab(&size_limit_args(f, out, "compliant_denied_pct<=1", extra));
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{name}: {e}");
        assert!(e.contains(want), "{name}: {e}");
        assert_eq!(e.trim().lines().count(), 1, "{name}: one line: {e}");
        assert!(!e.contains("panicked"), "{name}: {e}");
    }
}

/// A whole-second log is spread within its seconds by a seeded rule: `size`
/// and the decision lab derive that seed from the run's seed the same way,
/// so the pick's "decision lab, seed N" figures are what a seed-N scenario
/// on the same log gives.
#[test]
#[ignore = "slow: a rate-limit sizing of a whole-second log, then the decision lab; unoptimised, the test profile takes too long (.ci/run runs it)"]
fn a_whole_second_log_spreads_alike_in_size_and_the_decision_lab() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(&dir.path().join("t.csv"));
    // The same requests as an nginx combined log: whole seconds, one
    // address per key (the spread is what this test is about).
    let text = std::fs::read_to_string(dir.path().join("t.csv")).unwrap();
    let mut ids = std::collections::HashMap::new();
    let mut log = String::new();
    for line in text.lines().skip(1) {
        let (t, k) = line.split_once(',').unwrap();
        let n = ids.len();
        let id = *ids.entry(k.to_string()).or_insert(n);
        // 1_700_000_000 s is 14/Nov/2023:22:13:20 +0000; the trace spans 30 s.
        let s = t.parse::<u64>().unwrap() / 1_000_000_000 - 1_700_000_000 + 20;
        log.push_str(&format!(
            "10.0.{}.{} - - [14/Nov/2023:22:{:02}:{:02} +0000] \"GET / HTTP/1.1\" 200 5 \"-\" \"t\"\n",
            id / 250,
            id % 250 + 1,
            13 + s / 60,
            s % 60
        ));
    }
    let path = dir.path().join("access.log");
    std::fs::write(&path, log).unwrap();
    let out = dir.path().join("out");
    let o = ratelab(&[
        "size",
        "--trace",
        path.to_str().unwrap(),
        "--format",
        "combined",
        "--limit",
        "20",
        "--interval-ms",
        "1000",
        "--target",
        "compliant_denied_pct<=0.5",
        "--seeds",
        "5",
        "--seed",
        "7",
        "--estimate",
        "proportional",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&out.join("size.json"));
    let m = &j["modes"][0];
    let rec = &m["recommendation"];
    let seed = rec["decision_lab"]["seed"].clone();
    let c = m["confirmed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["shape"]["hashes"] == rec["hashes"] && c["shape"]["slots"] == rec["slots"])
        .expect("the pick is confirmed");
    let f = &c["seeds"][0]["figures"];
    let scenario = serde_json::json!({
        "name": "recheck", "kind": "decision_accuracy", "seed": seed,
        "policy": {"limit": 20, "interval_ms": 1000}, "shapes": [],
        "trace": {"path": "access.log", "format": "combined"},
        "limiters": [{"model": "pingora_rate", "estimate": "proportional",
                      "hashes": rec["hashes"], "slots": rec["slots"]}],
    });
    let sc = dir.path().join("recheck.json");
    std::fs::write(&sc, scenario.to_string()).unwrap();
    let lab_out = dir.path().join("lab");
    let o = ratelab(&[
        "run",
        sc.to_str().unwrap(),
        "--out",
        lab_out.to_str().unwrap(),
        "--no-progress",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report = json(&lab_out.join("recheck").join("report.json"));
    let row = &report["rows"].as_array().unwrap()[2];
    for k in ["compliant_denied", "compliant_keys_hit", "limited_excess"] {
        assert_eq!(f[k], row["harm"][k], "{k}: size's figure vs the lab's");
    }
    assert!(
        f["limited_excess"].as_f64().unwrap() != 0.0,
        "non-trivial figures"
    );
}
