use super::*;
use crate::lab::RunContext;

const FORMAT: &str = "$msec $request_time $limit_req_status $status $remote_addr";

/// Runs the decision lab on `log` (lines of FORMAT) with `trace` fields
/// added and the given limiters.
fn run(log: &str, trace: Value, limiters: Value) -> Result<crate::report::Output> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("access.log"), log).unwrap();
    let mut t = json!({"path": "access.log", "format": "nginx", "log_format": FORMAT});
    for (k, v) in trace.as_object().unwrap() {
        t[k] = v.clone();
    }
    let s = json!({"name": "v", "kind": "decision_accuracy", "seed": 1,
        "policy": {"limit": 10, "interval_ms": 1000}, "shapes": [],
        "trace": t, "limiters": limiters});
    let path = dir.path().join("v.json");
    let scenario = Scenario::parse(&path, &s.to_string())?;
    crate::kinds::run(&scenario, &RunContext::for_scenario(&scenario))
}

/// The one-line error of a run that must fail.
fn error(r: Result<crate::report::Output>) -> String {
    r.expect_err("the run fails").to_string()
}

/// A validation entry's (agree, total).
fn agree_total(v: &Value) -> (Option<u64>, Option<u64>) {
    (v["agree"].as_u64(), v["total"].as_u64())
}

fn nodelay() -> Value {
    json!([{"model": "nginx_limit_req", "burst": 0, "nodelay": true, "rate_r_s": 10}])
}

#[test]
fn agreement_confusion_and_classes_on_a_nodelay_log() {
    // 10r/s, no burst: one request per 100 ms. The log says line 3
    // (80 ms after line 1) was passed; the model rejects it (excess
    // 1000 - 800 + 1000 > 0): a disagreement 20 ms from the limit, not
    // a clock step. Line 4 then disagrees too: a follow-on.
    let log = "\
1700000000.000 0.000 PASSED 200 10.0.0.1
1700000000.050 0.000 REJECTED 503 10.0.0.1
1700000000.080 0.000 PASSED 200 10.0.0.1
1700000000.170 0.000 REJECTED 503 10.0.0.1
1700000000.500 0.000 PASSED 200 10.0.0.2
";
    let out = run(log, json!({"outcome": "limit_req_status"}), nodelay()).unwrap();
    let v = &out.json["validation"][0];
    assert_eq!(v["agree"], 3);
    assert_eq!(v["total"], 5);
    assert_eq!(v["confusion"]["model_denies_deployed_admitted"], 1);
    assert_eq!(v["confusion"]["model_admits_deployed_denied"], 1);
    assert_eq!(v["clock_step"], 0);
    assert_eq!(v["follow_on"], 1);
    assert_eq!(v["unexplained"], 1);
    assert_eq!(v["first_disagreements"][0]["line"], 3);
    assert_eq!(v["first_disagreements"][1]["class"], "follow-on");
    assert_eq!(out.json["validation_source"]["time_is"], "start");
}

#[test]
fn a_disagreement_one_millisecond_from_the_limit_is_a_clock_step() {
    // 10r/s: 100 ms after an admitted request the excess is exactly 0
    // (admitted); 99 ms after it would be 10 thousandths (rejected).
    // nginx's clock, out of phase with $msec, may have read 99 ms.
    let log = "\
1700000000.000 0.000 PASSED 200 10.0.0.1
1700000000.100 0.000 REJECTED 503 10.0.0.1
";
    let out = run(log, json!({"outcome": "status"}), nodelay()).unwrap();
    let v = &out.json["validation"][0];
    assert_eq!(
        (v["agree"].as_u64(), v["clock_step"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(v["unexplained"], 0);
    assert_eq!(out.json["validation_source"]["values"], "HTTP status");
}

#[test]
fn completion_ordered_ties_are_compared_by_count_not_order() {
    // Four requests of key a arrive at the same ms (end - request_time)
    // and are logged as they complete: the model (burst 2, delay
    // mode) admits 3 of them, so does the log, whichever it rejected.
    let log = "\
1700000000.010 0.000 REJECTED 503 10.0.0.1
1700000000.010 0.000 PASSED 200 10.0.0.1
1700000000.110 0.100 DELAYED 200 10.0.0.1
1700000000.210 0.200 DELAYED 200 10.0.0.1
";
    let limiters = json!([{"model": "nginx_limit_req", "burst": 2, "rate_r_s": 10}]);
    let out = run(
        log,
        json!({"outcome": "limit_req_status", "time_is": "end", "duration": "request_time"}),
        limiters.clone(),
    )
    .unwrap();
    let v = &out.json["validation"][0];
    assert_eq!(agree_total(v), (Some(4), Some(4)));
    assert_eq!(out.json["validation_source"]["tie_groups"], 1);
    assert_eq!(out.json["validation_source"]["tie_requests"], 4);
    // Fed as if the times were arrivals, the delayed requests look 100
    // ms apart: the model admits all four, and one disagrees.
    let raw = run(log, json!({"outcome": "limit_req_status"}), limiters).unwrap();
    assert_eq!(raw.json["validation"][0]["agree"], 3);
    assert_eq!(raw.json["validation_source"]["tie_groups"], 0);
}

#[test]
fn an_unknown_outcome_value_is_an_error_naming_line_and_value() {
    let log = "\
1700000000.000 0.000 PASSED 200 10.0.0.1
1700000000.100 0.000 MAYBE 200 10.0.0.1
";
    let e = error(run(log, json!({"outcome": "limit_req_status"}), nodelay()));
    assert!(e.contains("line 2") && e.contains("\"MAYBE\""), "{e}");
    assert_eq!(e.lines().count(), 1);
    let e = error(run(log, json!({"outcome": "nope"}), nodelay()));
    assert!(e.contains("trace.outcome") && e.contains("nope"), "{e}");
    let e = error(run(log, json!({"time_is": "end"}), nodelay()));
    assert!(e.contains("trace.duration"), "{e}");
}

#[test]
fn a_csv_trace_names_its_outcome_column() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("t.csv"),
        "t_ms,key,code\n0,a,200\n50,a,429\n100,a,200\n120,b,200\n",
    )
    .unwrap();
    let s = json!({"name": "v", "kind": "decision_accuracy", "seed": 1,
        "policy": {"limit": 10, "interval_ms": 1000}, "shapes": [],
        "trace": {"path": "t.csv", "outcome": "code", "denied_values": ["429"]},
        "limiters": [{"model": "nginx_limit_req", "burst": 0, "nodelay": true, "rate_r_s": 10}]});
    let scenario = Scenario::parse(&dir.path().join("v.json"), &s.to_string()).unwrap();
    let out = crate::kinds::run(&scenario, &RunContext::for_scenario(&scenario)).unwrap();
    let v = &out.json["validation"][0];
    assert_eq!(agree_total(v), (Some(4), Some(4)));
    assert_eq!(out.json["validation_source"]["deployed_denied"], 1);
    // A column the header lacks is named.
    let mut s = s;
    s["trace"]["outcome"] = json!("nope");
    let scenario = Scenario::parse(&dir.path().join("v.json"), &s.to_string()).unwrap();
    let e = error(crate::kinds::run(
        &scenario,
        &RunContext::for_scenario(&scenario),
    ));
    assert!(e.contains("trace.outcome") && e.contains("nope"), "{e}");
}

#[test]
fn denied_values_read_any_field() {
    let mut r = OutcomeReader::new(Some(vec!["429".into()]));
    assert_eq!(r.admitted("503"), Ok(true));
    assert_eq!(r.admitted("429"), Ok(false));
    assert!(r.admitted("x").is_err());
    let mut r = OutcomeReader::new(None);
    assert_eq!(r.admitted("-"), Ok(true));
    assert_eq!(r.kind(), None);
    assert_eq!(r.admitted("DELAYED_DRY_RUN"), Ok(true));
    assert!(r.admitted("RL").is_err());
}
