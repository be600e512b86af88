use super::diff::{parse_tol, Tol};
use super::expect::parse_cond;
use super::path::array_key;
use super::*;
use serde_json::{json, Value};

fn report() -> Value {
    json!({
        "schema": "ratelab.report.v1",
        "ratelab_version": "0.1.0",
        "description": "d",
        "rows": [
            {"variant": "count_min", "hashes": 4, "slots": 1024, "faults": 0, "mean": 210.3, "std": {"mean": 1.4}},
            {"variant": "count_min", "hashes": 4, "slots": 8192, "faults": 0, "mean": 4.7, "std": {"mean": 0.12}},
            {"variant": "count_min", "hashes": 8, "slots": 1024, "faults": 0, "mean": 152.9, "std": {"mean": 0.58}}
        ],
        "values": [9223372036854775807_i64, -9223372036854775808_i64]
    })
}

/// The test report and a copy changed by `edit`.
fn changed(edit: impl FnOnce(&mut Value)) -> (Value, Value) {
    let mut b = report();
    edit(&mut b);
    (report(), b)
}

fn spec(expect: Value, tol: Value) -> Spec {
    Spec::parse(Some(&expect), Some(&tol)).unwrap()
}

fn failed(f: &[Finding]) -> Vec<String> {
    f.iter()
        .filter(|x| x.verdict.failed())
        .map(|x| x.path.clone())
        .collect()
}

#[test]
fn arrays_are_keyed_by_the_fewest_varying_fields() {
    let r = report();
    let a = r["rows"].as_array().unwrap();
    assert_eq!(
        array_key(a),
        Some(vec!["hashes".to_string(), "slots".to_string()])
    );
    let sel = Pattern::parse("rows[hashes=4,slots=8192].mean")
        .unwrap()
        .select(&r);
    assert_eq!(sel.len(), 1);
    assert_eq!(sel[0].0, "rows[hashes=4,slots=8192].mean");
    assert_eq!(sel[0].1, &json!(4.7));
    assert_eq!(
        Pattern::parse("rows[hashes=4].mean")
            .unwrap()
            .select(&r)
            .len(),
        2
    );
    assert_eq!(
        Pattern::parse("rows.*.std.mean").unwrap().select(&r).len(),
        3
    );
    assert_eq!(Pattern::parse("rows[*].mean").unwrap().select(&r).len(), 3);
    assert_eq!(
        Pattern::parse("values[1]").unwrap().select(&r)[0].1,
        &json!(i64::MIN)
    );
}

#[test]
fn bad_paths_and_conditions_are_rejected() {
    for bad in [
        "", "rows[", "rows]", "a..b", "rows[x]", "rows[=3]", "a.", "rows[1]x",
    ] {
        assert!(Pattern::parse(bad).is_err(), "{bad:?}");
    }
    for bad in [
        ">= lots",
        "about 3",
        "~3",
        "<",
        json!([1]).to_string().as_str(),
    ] {
        assert!(parse_cond(&json!(bad)).is_err(), "{bad:?}");
    }
    assert!(parse_tol(&json!("-5%")).is_err());
    assert!(parse_tol(&json!("wide")).is_err());
    assert_eq!(parse_tol(&json!("5%")), Ok(Tol::Rel(0.05)));
    assert_eq!(parse_tol(&json!("±3")), Ok(Tol::Abs(3.0)));
    assert_eq!(parse_tol(&json!(0.1)), Ok(Tol::Rel(0.1)));
}

#[test]
fn conditions() {
    let holds = |c: &str, v: Value| parse_cond(&json!(c)).unwrap().holds(&v);
    assert!(holds(">= 70", json!(75.2)));
    assert!(!holds(">=70", json!(69.9)));
    assert!(holds("<= 250", json!(210)));
    assert!(!holds("< 250", json!(250)));
    assert!(holds("== -9223372036854775808", json!(i64::MIN)));
    assert!(!holds("== -9223372036854775807", json!(i64::MIN)));
    assert!(holds(
        "== attempt to add with overflow",
        json!("attempt to add with overflow")
    ));
    assert!(holds("~100±5", json!(104.9)));
    assert!(!holds("~ 100 +- 5%", json!(106)));
    assert!(holds("!= 0", json!(1)));
    assert!(parse_cond(&json!(0)).unwrap().holds(&json!(0)));
    assert!(!holds(">= 1", json!("text")));
}

#[test]
fn identical_reports_pass_and_ignored_fields_may_differ() {
    let (a, b) = changed(|b| {
        b["ratelab_version"] = json!("9.9.9");
        b["description"] = json!("other");
    });
    let f = compare(&a, &b, &Spec::default());
    assert!(failed(&f).is_empty(), "{f:?}");
    assert!(f.iter().all(|x| x.verdict == Verdict::Equal));
}

#[test]
fn a_float_beyond_tolerance_fails_and_a_tolerance_loosens_it() {
    let (a, b) = changed(|b| b["rows"][1]["mean"] = json!(4.8));
    let f = compare(&a, &b, &Spec::default());
    assert_eq!(failed(&f), ["rows[hashes=4,slots=8192].mean"]);
    let f = compare(&a, &b, &spec(json!({}), json!({"rows.*.mean": "5%"})));
    assert!(failed(&f).is_empty());
    let f = compare(
        &a,
        &b,
        &spec(json!({}), json!({"rows[hashes=4,slots=8192]": "±0.2"})),
    );
    assert!(failed(&f).is_empty());
    let f = compare(
        &a,
        &b,
        &spec(json!({}), json!({"rows[hashes=8].mean": "50%"})),
    );
    assert_eq!(failed(&f).len(), 1);
    // Last-bit float noise passes by default; integers must be exact.
    let mut c = report();
    c["rows"][0]["mean"] = json!(210.3 * (1.0 + 1e-12));
    c["rows"][0]["faults"] = json!(1);
    let f = compare(&a, &c, &Spec::default());
    assert_eq!(failed(&f), ["rows[hashes=4,slots=1024].faults"]);
}

#[test]
fn a_changed_key_is_a_configuration_change() {
    let (a, b) = changed(|b| b["rows"][1]["slots"] = json!(4096));
    let f = compare(&a, &b, &Spec::default());
    let slots = f
        .iter()
        .find(|x| x.path == "rows[hashes=4,slots=8192].slots")
        .unwrap();
    assert_eq!(slots.verdict, Verdict::Changed);
    assert!(failed(&f).is_empty(), "{f:?}");
    // A row that appears without a partner is new, and fails.
    let (a, b) = changed(|b| {
        let extra = json!({"variant": "count_min", "hashes": 16, "slots": 1024, "faults": 0, "mean": 1.0, "std": {"mean": 0.1}});
        b["rows"].as_array_mut().unwrap().push(extra);
    });
    let f = compare(&a, &b, &Spec::default());
    assert_eq!(failed(&f), ["rows[hashes=16,slots=1024]"]);
    // A type change fails too.
    let mut c = report();
    c["values"] = json!("none");
    assert_eq!(failed(&compare(&a, &c, &Spec::default())), ["values"]);
}

#[test]
fn values_with_a_distribution_are_tested_and_directions_apply() {
    let base = json!({"schema": "s", "runs": 5, "seed": 1, "rows": [
        {"hashes": 4, "slots": 1024, "memory_bytes": 32768, "exact_pct": 30.0, "mean": 200.0, "std": {"exact_pct": 0.5, "mean": 10.0}},
        {"hashes": 4, "slots": 8192, "memory_bytes": 262144, "exact_pct": 75.0, "mean": 5.0, "std": {"exact_pct": 0.4, "mean": 0.2}}
    ]});
    let verdict = |f: &[Finding], p: &str| f.iter().find(|x| x.path == p).map(|x| x.verdict);
    // Noise: a small move of the means passes, whatever the seed.
    let mut noise = base.clone();
    noise["seed"] = json!(9);
    noise["rows"][0]["exact_pct"] = json!(30.4);
    noise["rows"][0]["mean"] = json!(195.0);
    let f = compare(&base, &noise, &Spec::default());
    assert!(failed(&f).is_empty(), "{f:?}");
    assert_eq!(
        verdict(&f, "rows[slots=1024].exact_pct"),
        Some(Verdict::WithinNoise)
    );
    assert_eq!(verdict(&f, "seed"), Some(Verdict::Changed));
    // A significant loss of accuracy regresses; a gain improves.
    let mut worse = base.clone();
    worse["rows"][1]["exact_pct"] = json!(60.0);
    worse["rows"][0]["mean"] = json!(100.0);
    let f = compare(&base, &worse, &Spec::default());
    assert_eq!(failed(&f), ["rows[slots=8192].exact_pct"]);
    assert_eq!(
        verdict(&f, "rows[slots=1024].mean"),
        Some(Verdict::Improved)
    );
    // Doubled slots: the configuration and memory follow; accuracy improves.
    let mut doubled = base.clone();
    doubled["rows"][1]["slots"] = json!(16384);
    doubled["rows"][1]["memory_bytes"] = json!(524288);
    doubled["rows"][1]["exact_pct"] = json!(90.0);
    let f = compare(&base, &doubled, &Spec::default());
    assert!(failed(&f).is_empty(), "{f:?}");
    assert_eq!(
        verdict(&f, "rows[slots=8192].memory_bytes"),
        Some(Verdict::Changed)
    );
    assert_eq!(
        verdict(&f, "rows[slots=8192].exact_pct"),
        Some(Verdict::Improved)
    );
    // Per-run samples are compared as distributions.
    let runs = |xs: [f64; 3]| json!({"schema": "s", "runs": 3, "rows": [{"config": {"hashes": 4}, "runs": xs.iter().map(|x| json!({"exact_pct": x})).collect::<Vec<_>>()}]});
    let f = compare(
        &runs([90.0, 91.0, 89.5]),
        &runs([90.5, 89.0, 90.2]),
        &Spec::default(),
    );
    assert_eq!(f.len(), 4, "{f:?}");
    assert_eq!(f[3].path, "rows[0].runs[*].exact_pct");
    assert_eq!(f[3].verdict, Verdict::WithinNoise);
    let f = compare(
        &runs([90.0, 91.0, 89.5]),
        &runs([50.5, 49.0, 50.2]),
        &Spec::default(),
    );
    assert_eq!(failed(&f), ["rows[0].runs[*].exact_pct"]);
}

#[test]
fn a_single_row_is_named_by_its_configuration() {
    let r = json!({"rows": [{"variant": "count_min", "hashes": 4, "slots": 131072, "mean": 1.5}]});
    let sel = Pattern::parse("rows[*].mean").unwrap().select(&r);
    assert_eq!(sel[0].0, "rows[hashes=4,slots=131072].mean");
    assert_eq!(Pattern::parse("rows[0].mean").unwrap().select(&r).len(), 1);
}

#[test]
fn expectations_select_and_fail() {
    let r = report();
    let s = spec(
        json!({"rows[hashes=4,slots=8192].mean": "<= 5", "rows[*].faults": 0, "rows[hashes=99].mean": "< 1"}),
        json!({}),
    );
    let f = evaluate(&r, Some(&r), &s);
    assert_eq!(f.len(), 5);
    assert_eq!(failed(&f), ["rows[hashes=99].mean"]);
    assert_eq!(f[0].baseline, "4.7");
    let s = spec(json!({"rows[hashes=4].mean": "<= 5"}), json!({}));
    assert_eq!(
        failed(&evaluate(&r, None, &s)),
        ["rows[hashes=4,slots=1024].mean"]
    );
}
