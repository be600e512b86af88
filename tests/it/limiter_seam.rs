//! The limiter seam from outside `src/`: a model written here joins a
//! decision run through the public API, and `replay --algo limiter` gives
//! every lab candidate's decisions one row at a time, the same as the lab.

use crate::common;

use ratelab::clock::{Nanos, MILLI};
use ratelab::lab::{decision, RunContext};
use ratelab::model::{Admit, Decision, KeyState, PerKey};
use ratelab::scenario::Scenario;
use serde_json::Value;

const LIMIT: u64 = 5;
const INTERVAL_MS: u64 = 1000;

/// An exact fixed-window limiter of our own: windows aligned to multiples
/// of the interval, counting admitted requests (what the lab's second
/// oracle is).
struct AlignedWindow {
    window: u64,
    admitted: u64,
}

impl KeyState for AlignedWindow {
    const STATE_BYTES: u64 = 16;
    fn admit(&mut self, w: u64, now: Nanos) -> ratelab::error::Result<Decision> {
        let window = now / (INTERVAL_MS * MILLI);
        if window != self.window {
            self.window = window;
            self.admitted = 0;
        }
        let ok = self.admitted + w <= LIMIT;
        if ok {
            self.admitted += w;
        }
        Ok(Decision::from_allowed(ok))
    }
}

fn scenario_json() -> String {
    format!(
        r#"{{"name": "seam", "kind": "decision_accuracy", "seed": 7,
  "policy": {{"limit": {LIMIT}, "interval_ms": {INTERVAL_MS}}}, "shapes": [],
  "workload": {{"type": "mix", "parts": [
    {{"type": "poisson", "keys": {{"type": "zipf", "keys": 50, "s": 1.1}}, "rate": 60.0, "duration_s": 20.0}},
    {{"type": "flash_crowd", "keys": {{"type": "uniform", "keys": 3}}, "rate": 2.0,
      "flash_rate": 40.0, "flash_start_s": 5.0, "flash_duration_s": 4.0, "duration_s": 20.0}}]}}}}"#
    )
}

fn rows(j: &Value) -> &Vec<Value> {
    j["rows"].as_array().expect("rows")
}

fn row<'a>(j: &'a Value, name: &str) -> &'a Value {
    rows(j)
        .iter()
        .find(|r| r["algorithm"] == name)
        .unwrap_or_else(|| panic!("no row {name}"))
}

#[test]
fn a_model_from_outside_src_joins_a_decision_run() {
    let s = Scenario::parse(std::path::Path::new("seam.json"), &scenario_json()).unwrap();
    let ctx = RunContext::for_scenario(&s);
    let ours = decision::Candidate::new(
        "our aligned window",
        Box::new(PerKey::new(|_| {
            Ok(AlignedWindow {
                window: 0,
                admitted: 0,
            })
        })),
    );
    let out = decision::run_with(&s, &ctx, vec![ours]).unwrap();
    let j = &out.json;
    let r = row(j, "our aligned window");
    // Exactly the lab's aligned-window oracle: no disagreement with it...
    assert_eq!(r["vs_fixed_window"]["false_allow"], 0, "{r}");
    assert_eq!(r["vs_fixed_window"]["false_deny"], 0, "{r}");
    assert_eq!(
        r["allowed"],
        row(j, "exact aligned window (oracle 2)")["allowed"]
    );
    // ...but not the sliding log, on traffic with a flash crowd.
    assert!(r["wrong_pct"].as_f64().unwrap() > 0.0, "{r}");
    // Memory is what the model declared per key.
    assert_eq!(
        r["memory_bytes"].as_u64().unwrap(),
        16 * j["requests"]["keys"].as_u64().unwrap()
    );
    // It is last, after the default candidates, which are unchanged.
    assert_eq!(rows(j).last().unwrap()["algorithm"], "our aligned window");
    let plain = decision::run(&s, &ctx).unwrap();
    assert_eq!(rows(&plain.json).len() + 1, rows(j).len());
    assert!(out.table_md.contains("our aligned window"));
}

#[test]
fn replay_gives_each_lab_candidate_the_labs_decisions() {
    let dir = tempfile::tempdir().unwrap();
    let sc = dir.path().join("seam.json");
    std::fs::write(&sc, scenario_json()).unwrap();
    let trace = dir.path().join("trace.csv");
    let o = common::ratelab(&[
        "export",
        sc.to_str().unwrap(),
        "--out",
        trace.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let s = Scenario::load(&sc).unwrap();
    let lab = decision::run(&s, &RunContext::for_scenario(&s)).unwrap();
    let names: Vec<String> = rows(&lab.json)
        .iter()
        .filter(|r| !r["family"].as_str().unwrap().starts_with("oracle"))
        .map(|r| r["algorithm"].as_str().unwrap().to_string())
        .collect();
    assert!(names.len() >= 7, "{names:?}");
    let replay_allowed = |limiter: &str| -> u64 {
        let out = dir.path().join("out.csv");
        let o = common::ratelab(&[
            "replay",
            "--algo",
            "limiter",
            "--limiter",
            limiter,
            "--limit",
            &LIMIT.to_string(),
            "--interval-ms",
            &INTERVAL_MS.to_string(),
            "--trace",
            trace.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{limiter}: {}", common::stderr(&o));
        let text = std::fs::read_to_string(&out).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("t_ns,key,weight,allowed,delay_ns"));
        lines.filter(|l| l.contains(",true,")).count() as u64
    };
    for name in &names {
        assert_eq!(
            replay_allowed(name),
            row(&lab.json, name)["allowed"].as_u64().unwrap(),
            "{name}"
        );
    }
    // Any model through a JSON entry: our GCRA decides as governor does.
    assert_eq!(
        replay_allowed(r#"{"model": "gcra"}"#),
        row(&lab.json, "governor GCRA per key")["allowed"]
            .as_u64()
            .unwrap()
    );
}

#[test]
fn replay_limiter_bad_input_is_one_line_exit_2() {
    let (_d, trace) = common::temp_file("t.csv", b"t_ns,key\n5,a\n3,a\n");
    let t = trace.to_str().unwrap();
    let out = trace.with_file_name("o.csv");
    let o_s = out.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["--limiter", "nope", "--limit", "5", "--interval-ms", "1000"],
            "or one of",
        ),
        (
            &[
                "--limiter",
                r#"{"model": "gcra", "burst": [1, 2]}"#,
                "--limit",
                "5",
                "--interval-ms",
                "1000",
            ],
            "replay takes one",
        ),
        (
            &[
                "--limiter",
                r#"{"model": "gcra", "bursts": 2}"#,
                "--limit",
                "5",
                "--interval-ms",
                "1000",
            ],
            "limiter.bursts: unknown parameter",
        ),
        (
            &[
                "--limiter",
                "governor GCRA per key",
                "--interval-ms",
                "1000",
            ],
            "--limit is required",
        ),
        (
            &[
                "--limiter",
                "governor GCRA per key",
                "--limit",
                "0",
                "--interval-ms",
                "1000",
            ],
            "--limit 0",
        ),
        (
            &[
                "--limiter",
                "governor GCRA per key",
                "--limit",
                "5",
                "--interval-ms",
                "1000",
                "--burst",
                "3",
            ],
            "--burst does not apply to --algo limiter",
        ),
        (
            &[
                "--limiter",
                "governor GCRA per key",
                "--limit",
                "5",
                "--interval-ms",
                "1000",
            ],
            "line 3: t_ns value 3: times must be non-decreasing",
        ),
    ];
    for (extra, want) in cases {
        let mut args = vec!["replay", "--algo", "limiter", "--trace", t, "--out", o_s];
        args.extend_from_slice(extra);
        let o = common::ratelab(&args);
        let err = common::stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(want), "{extra:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(!out.exists(), "no partial output");
    }
}

#[test]
fn decisions_file_has_every_request_of_every_candidate() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("reports");
    let dec = dir.path().join("decisions.csv");
    let o = common::ratelab(&[
        "run",
        "scenarios/decision-sliding-window-hand-case.json",
        "--out",
        out.to_str().unwrap(),
        "--no-progress",
        "--decisions",
        dec.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let report: Value = serde_json::from_slice(
        &std::fs::read(out.join("decision-sliding-window-hand-case/report.json")).unwrap(),
    )
    .unwrap();
    let text = std::fs::read_to_string(&dec).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("t_ns,key,candidate,allowed,delay_ns"));
    let rows: Vec<&str> = lines.collect();
    let cands: Vec<&Value> = rows_of(&report);
    let requests = report["requests"]["lines"].as_u64().unwrap() as usize;
    assert_eq!(rows.len(), requests * cands.len());
    for c in cands {
        let name = c["algorithm"].as_str().unwrap();
        let allowed = rows
            .iter()
            .filter(|l| l.contains(&format!(",{name},true,")))
            .count() as u64;
        assert_eq!(allowed, c["allowed"].as_u64().unwrap(), "{name}");
    }
}

fn rows_of(j: &Value) -> Vec<&Value> {
    rows(j)
        .iter()
        .filter(|r| !r["family"].as_str().unwrap().starts_with("oracle"))
        .collect()
}

/// Hides a model's `keys_independent`, so the lab hands it every batch in
/// time order: the reference for the grouped path.
struct InTimeOrder<A>(A);

impl<A: Admit> Admit for InTimeOrder<A> {
    fn admit(&mut self, key: u32, w: u64, now: Nanos) -> ratelab::error::Result<Decision> {
        self.0.admit(key, w, now)
    }
    fn memory_bytes(&self, keys: u64) -> u64 {
        self.0.memory_bytes(keys)
    }
}

/// A sliding log of one key's admitted requests whose key fails at its
/// `fail_at`-th request (0: never), naming the time: which key fails first
/// depends on the order keys' requests are decided in.
struct FailingLog {
    times: std::collections::VecDeque<Nanos>,
    seen: u64,
    fail_at: u64,
}

impl KeyState for FailingLog {
    const STATE_BYTES: u64 = 8;
    fn admit(&mut self, _w: u64, now: Nanos) -> ratelab::error::Result<Decision> {
        self.seen += 1;
        if self.seen == self.fail_at {
            return Err(ratelab::error::Error::internal(format!(
                "failed at t = {now}"
            )));
        }
        while self
            .times
            .front()
            .is_some_and(|&t| t + INTERVAL_MS * MILLI <= now)
        {
            self.times.pop_front();
        }
        let ok = (self.times.len() as u64) < LIMIT;
        if ok {
            self.times.push_back(now);
        }
        Ok(Decision::from_allowed(ok))
    }
}

/// `fail` maps a key's first request time (all its state knows of it, in
/// either order) to the request it fails at.
fn failing(fail: fn(Nanos) -> u64) -> PerKey<FailingLog> {
    PerKey::new(move |first| {
        Ok(FailingLog {
            times: Default::default(),
            seen: 0,
            fail_at: fail(first),
        })
    })
}

#[test]
fn grouped_by_key_decides_as_in_time_order() {
    let s = Scenario::parse(std::path::Path::new("seam.json"), &scenario_json()).unwrap();
    let ctx = RunContext::for_scenario(&s);
    let never = || failing(|_| 0);
    assert!(never().keys_independent());
    let out = decision::run_with(
        &s,
        &ctx,
        vec![
            decision::Candidate::new("grouped", Box::new(never())),
            decision::Candidate::new("in time order", Box::new(InTimeOrder(never()))),
        ],
    )
    .unwrap();
    let strip = |name: &str| {
        let mut r = row(&out.json, name).clone();
        r.as_object_mut().unwrap().remove("algorithm");
        r.as_object_mut().unwrap().remove("family");
        r
    };
    let (g, t) = (strip("grouped"), strip("in time order"));
    assert_eq!(g, t);
    // The same as the exact sliding log (it is one): the rows are real.
    assert_eq!(
        g["allowed"],
        row(&out.json, "exact sliding log (oracle)")["allowed"]
    );
    assert!(g["allowed"].as_u64().unwrap() > 0);
}

#[test]
fn a_grouped_failure_is_the_one_a_pass_in_time_order_meets_first() {
    let s = Scenario::parse(std::path::Path::new("seam.json"), &scenario_json()).unwrap();
    let ctx = RunContext::for_scenario(&s);
    // Every key fails at its 2nd to 8th request, by its first request's
    // millisecond: the first failing key in key order is not (as a rule)
    // the first in time.
    let fail = |first: Nanos| 2 + (first / MILLI) % 7;
    let err = |grouped: bool| {
        let m: Box<dyn Admit + Send> = if grouped {
            Box::new(failing(fail))
        } else {
            Box::new(InTimeOrder(failing(fail)))
        };
        match decision::run_with(&s, &ctx, vec![decision::Candidate::new("f", m)]) {
            Ok(_) => panic!("the model fails"),
            Err(e) => e.to_string(),
        }
    };
    let (g, t) = (err(true), err(false));
    assert!(t.contains("failed at t = "), "{t}");
    assert_eq!(g, t);
}
