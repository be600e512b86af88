use super::*;
use crate::workload::timed::KeyChoice;
use serde_json::json;
use std::time::Duration;

fn scenario(params: serde_json::Value) -> Scenario {
    let mut v = json!({"name": "t", "kind": "decision_accuracy", "seed": 3});
    if let (Some(m), Some(pm)) = (v.as_object_mut(), params.as_object()) {
        for (k, x) in pm {
            m.insert(k.clone(), x.clone());
        }
    }
    Scenario::parse(std::path::Path::new("t.json"), &v.to_string()).unwrap()
}

fn row<'a>(j: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    j["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["algorithm"] == name)
        .unwrap()
}

fn small(duration_s: f64) -> serde_json::Value {
    json!({
        "policy": {"limit": 10, "interval_ms": 1000},
        "shapes": [{"hashes": 4, "slots": 64}],
        "workload": {"type": "mix", "parts": [
            {"type": "poisson", "keys": {"type": "zipf", "keys": 200, "s": 1.1}, "rate": 400.0, "duration_s": duration_s},
            {"type": "flash_crowd", "keys": {"type": "uniform", "keys": 5}, "rate": 5.0,
             "flash_rate": 100.0, "flash_start_s": 5.0, "flash_duration_s": 3.0, "duration_s": duration_s}
        ]}
    })
}

#[test]
fn exact_counters_beat_a_tiny_sketch_and_oracle_is_self_consistent() {
    let s = scenario(small(20.0));
    let out = run(&s, &RunContext::for_scenario(&s)).unwrap();
    let j = &out.json;
    let o = row(j, "exact sliding log (oracle)");
    assert_eq!(o["false_allow"], 0);
    assert_eq!(o["false_deny"], 0);
    let exact = row(j, "pingora Rate proportional exact")["wrong_pct"]
        .as_f64()
        .unwrap();
    let tiny = row(j, "pingora Rate proportional 4x64")["wrong_pct"]
        .as_f64()
        .unwrap();
    assert!(tiny > exact, "sketch {tiny} vs exact {exact}");
    // The sketch only overcounts: its extra errors are false denies.
    let fd = |n: &str| row(j, n)["false_deny"].as_u64().unwrap();
    assert!(fd("pingora Rate docs 4x64") >= fd("pingora Rate docs exact"));
    // The flash key (id 205) is denied by the oracle within the first
    // interval of its burst (100/s against 10/s).
    let first = o["first_deny_after_s"].as_f64().unwrap();
    assert!(first < 1.0, "{first}");
    assert_eq!(j["watched"]["key"], "205");
    // The global tower instance denies most traffic.
    assert!(
        row(j, "tower RateLimit global")["false_deny_pct"]
            .as_f64()
            .unwrap()
            > 50.0
    );
}

#[test]
fn an_hour_of_virtual_traffic_runs_without_real_time() {
    // 1 hour at 20/s through governor's fake clock: if anything slept
    // on the real clock this would never finish.
    let w = json!({
        "policy": {"limit": 5, "interval_ms": 1000},
        "shapes": [{"hashes": 2, "slots": 16}],
        "workload": {"type": "poisson", "keys": {"type": "uniform", "keys": 3}, "rate": 20.0, "duration_s": 3600.0}
    });
    let s = scenario(w);
    let start = std::time::Instant::now();
    let out = run(&s, &RunContext::for_scenario(&s)).unwrap();
    assert!(start.elapsed() < Duration::from_secs(20));
    let g = row(&out.json, "governor GCRA per key");
    // 3 keys at ~6.7/s against 5/s: governor denies some, and a GCRA
    // with burst = limit is close to the sliding log.
    assert!(g["allowed"].as_u64().unwrap() > 40_000);
    assert!(g["wrong_pct"].as_f64().unwrap() < 30.0);
    assert!(out.json["requests"]["duration_s"].as_f64().unwrap() > 3590.0);
}

#[test]
fn flash_key_is_found_inside_a_mix() {
    let w: TimedWorkload = serde_json::from_value(small(10.0)["workload"].clone()).unwrap();
    assert_eq!(find_flash(&w, 0), Some((205, 5.0, 3.0)));
    let plain = TimedWorkload::Poisson {
        keys: KeyChoice::Uniform { keys: 3 },
        rate: 1.0,
        duration_s: 1.0,
    };
    assert_eq!(find_flash(&plain, 0), None);
}

#[test]
fn limit_zero_is_a_field_error() {
    let mut v = small(1.0);
    v["policy"]["limit"] = json!(0);
    let s = scenario(v);
    let e = run(&s, &RunContext::for_scenario(&s)).err().unwrap();
    assert!(e.message().contains("field policy.limit"), "{e}");
    assert_eq!(e.exit_code(), 2);
}

#[test]
fn radix_grouping_is_the_stable_sort_by_key() {
    // Keys of 1 to 32 bits (one to three passes), batches below and above
    // the comparison-sort cut, scratch reused: each key's records in time
    // order, the time indices theirs.
    use rand::Rng;
    let mut rng = crate::rng::sim_rng(5);
    let mut scratch = Default::default();
    let (mut by_key, mut index) = (Vec::new(), Vec::new());
    for bits in [1u32, 5, 11, 12, 18, 22, 23, 32] {
        for n in [0usize, 1, 700, 5000] {
            let max = if bits == 32 {
                u32::MAX
            } else {
                (1 << bits) - 1
            };
            let mut by_time: Vec<(u32, u64, u64)> = (0..n)
                .map(|i| (rng.random_range(0..=max), rng.random_range(1..4), i as u64))
                .collect();
            if let Some(r) = by_time.first_mut() {
                r.0 = max;
            }
            let mut want: Vec<usize> = (0..n).collect();
            want.sort_by_key(|&i| by_time[i].0);
            group::group_by_key(&by_time, (&mut by_key, &mut index), &mut scratch);
            let want_records: Vec<_> = want.iter().map(|&i| by_time[i]).collect();
            assert_eq!(by_key, want_records, "{bits} bits, {n} records");
            let got: Vec<usize> = index.iter().map(|&i| i as usize).collect();
            assert_eq!(got, want, "{bits} bits, {n} records");
        }
    }
}

#[test]
fn every_flash_crowd_of_a_mix_is_found_with_its_key_and_start() {
    let flash = |keys: u64, start: f64| {
        serde_json::json!({"type": "flash_crowd", "keys": {"type": "uniform", "keys": keys},
            "rate": 1.0, "flash_rate": 100.0, "flash_start_s": start,
            "flash_duration_s": 5.0, "duration_s": 60.0})
    };
    let w: TimedWorkload = serde_json::from_value(serde_json::json!({"type": "mix", "parts": [
        {"type": "poisson", "keys": {"type": "uniform", "keys": 100}, "rate": 1.0, "duration_s": 60.0},
        flash(20, 30.0),
        flash(10, 10.0),
    ]}))
    .unwrap();
    let all = find_flashes(&w, 0);
    assert_eq!(all.len(), 2);
    assert_eq!((all[1].1, all[1].2), (10.0, 5.0));
    // the second flash's key comes after the first's key space
    assert!(all[1].0 > all[0].0 && all[0].0 >= 100);
    // find_flash still names the first
    assert_eq!(find_flash(&w, 0), Some(all[0]));
}
