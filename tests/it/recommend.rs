//! `ratelab recommend`: the pick is what the decision lab measures, the
//! least-excess setting that meets the target, its nginx snippet passes
//! `nginx -t`, and a log that cannot support a recommendation is refused.

use crate::common::{adapters, ratelab, stderr, stdout};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A log from the project's own generator (`ratelab export`): compliant
/// Zipf traffic over 1,000 keys at 40/s, plus `abusers` keys sharing 60/s
/// (20/s each against a limit of 10/s), for `duration_s`.
pub(crate) fn log(dir: &Path, duration_s: f64, abusers: u32) -> PathBuf {
    let mut parts = vec![
        serde_json::json!({"type": "poisson", "keys": {"type": "zipf", "keys": 1000, "s": 1.0}, "rate": 40.0, "duration_s": duration_s}),
    ];
    if abusers > 0 {
        parts.push(serde_json::json!({"type": "poisson", "keys": {"type": "uniform", "keys": abusers}, "rate": 20.0 * f64::from(abusers), "duration_s": duration_s}));
    }
    let sc = serde_json::json!({"name": "gen", "kind": "decision_accuracy", "seed": 11,
        "policy": {"limit": 10, "interval_ms": 1000},
        "workload": {"type": "mix", "parts": parts}});
    let generator = dir.join("gen.json");
    std::fs::write(&generator, sc.to_string()).unwrap();
    let out = dir.join("log.csv");
    let o = ratelab(&[
        "export",
        generator.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    out
}

pub(crate) fn recommend(
    trace: &Path,
    family: &str,
    out: &Path,
    extra: &[&str],
) -> std::process::Output {
    let mut args = vec![
        "recommend",
        "--trace",
        trace.to_str().unwrap(),
        "--limit",
        "10",
        "--interval-ms",
        "1000",
        "--for",
        family,
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    ratelab(&args)
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// The pick's figures on the choosing part are the decision lab's for the
/// same `limiters` entry on the same requests; nothing on the frontier lets
/// less excess through while meeting the target (unless the later slices
/// rejected it); the held-out result is stated.
fn pick_is_the_labs(family: &str) -> (tempfile::TempDir, Value) {
    let dir = tempfile::tempdir().unwrap();
    let trace = log(dir.path(), 120.0, 3);
    let out = dir.path().join("out");
    let o = recommend(&trace, family, &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("pick: "), "{}", stdout(&o));
    let j = read_json(&out.join("recommend.json"));
    let pick = &j["pick"];
    assert!(pick["meets"].as_bool().unwrap());
    // The exact cut (the seconds are rounded).
    let cut_rel = j["choose"]["to_ns"].as_u64().unwrap();
    // The choosing part as its own trace, through the decision lab.
    let text = std::fs::read_to_string(&trace).unwrap();
    // Times in the file are absolute; the cut counts from the first request.
    let t0: u64 = text
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let cut_ns = t0 + cut_rel;
    let mut first = String::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.split(',').next().unwrap();
        if i == 0 || t.parse::<u64>().unwrap() < cut_ns {
            first.push_str(line);
            first.push('\n');
        }
    }
    std::fs::write(dir.path().join("first.csv"), first).unwrap();
    let sc = serde_json::json!({"name": "lab", "kind": "decision_accuracy", "seed": 1,
        "policy": {"limit": 10, "interval_ms": 1000}, "shapes": [],
        "trace": {"path": "first.csv"}, "limiters": [pick["limiter"].clone()]});
    std::fs::write(dir.path().join("lab.json"), sc.to_string()).unwrap();
    let lab_out = dir.path().join("lab-out");
    let o = ratelab(&[
        "run",
        dir.path().join("lab.json").to_str().unwrap(),
        "--out",
        lab_out.to_str().unwrap(),
        "--no-progress",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = read_json(&lab_out.join("lab").join("report.json"));
    // The rows: the two exact limiters, then the one candidate.
    let rows = r["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    let row = &rows[2];
    for f in ["compliant_denied_pct", "limited_excess_pct"] {
        let (a, b) = (pick[f].as_f64().unwrap(), row["harm"][f].as_f64().unwrap());
        assert!((a - b).abs() < 1e-9, "{family} {f}: recommend {a}, lab {b}");
    }
    assert_eq!(pick["memory_bytes"], row["memory_bytes"]);
    // Least excess among the settings that meet the target.
    let ex = pick["limited_excess_pct"].as_f64().unwrap();
    let frontier = j["frontier"].as_array().unwrap();
    assert!(frontier.iter().any(|e| e["limiter"] == pick["limiter"]));
    for e in frontier {
        if e["limited_excess_pct"].as_f64().unwrap() < ex {
            assert!(
                !e["meets"].as_bool().unwrap() || e.get("rejected_on_held_out").is_some(),
                "{e} lets less through and meets the target"
            );
        }
    }
    // The next stricter setting of the pick's line misses the target (the
    // bisection's neighbour), unless it is the line's lowest value.
    let axis = match family {
        "envoy-local" => "max_tokens",
        "guava" => "permits_per_s",
        "envoy-ratelimit" => "requests",
        "pingora" => "slots",
        _ => "burst",
    };
    if let Some(v) = pick["limiter"][axis].as_u64() {
        let mut stricter = pick["limiter"].clone();
        stricter[axis] = (v.saturating_sub(1)).into();
        if let Some(e) = frontier.iter().find(|e| e["limiter"] == stricter) {
            assert!(!e["meets"].as_bool().unwrap() || e.get("rejected_on_held_out").is_some());
        }
    }
    // The note on a rate below the intent's (10 per second) is there exactly
    // when the pick's rate is (pingora's rate is the intent's own: none).
    match pick["rate_per_s"].as_f64() {
        Some(rate) => assert_eq!(
            pick["below_intent"].as_bool().unwrap(),
            rate < 10.0,
            "{rate}"
        ),
        None => assert_eq!(family, "pingora"),
    }
    let h = &pick["held_out"];
    assert_eq!(h["slices"], 5);
    assert!(h["holds_on"].as_u64().unwrap() <= 5);
    let bound = h["miss_bound"].as_f64().unwrap();
    assert!(bound > 0.0 && bound <= 1.0);
    (dir, j)
}

#[test]
fn nginx_pick_is_the_decision_labs_and_passes_nginx_t() {
    let (dir, j) = pick_is_the_labs("nginx");
    assert_eq!(j["snippet"], "nginx.conf");
    let snippet = dir.path().join("out").join("nginx.conf");
    let text = std::fs::read_to_string(&snippet).unwrap();
    assert!(text.contains("limit_req_status 429;"), "{text}");
    nginx_t("nginx_pick_passes_nginx_t", &snippet);
}

#[test]
fn envoy_local_pick_is_the_decision_labs_and_has_the_protos_fields() {
    let (dir, j) = pick_is_the_labs("envoy-local");
    let text =
        std::fs::read_to_string(dir.path().join("out").join("envoy-local-ratelimit.yaml")).unwrap();
    let pick = &j["pick"]["limiter"];
    // The LocalRateLimit proto's token bucket (fields and their bounds).
    for (field, v) in [
        ("max_tokens", pick["max_tokens"].as_u64().unwrap()),
        ("tokens_per_fill", pick["tokens_per_fill"].as_u64().unwrap()),
    ] {
        assert!(v >= 1 && v <= u64::from(u32::MAX));
        assert!(text.contains(&format!("    {field}: {v}\n")), "{text}");
    }
    assert!(text.contains("    fill_interval: 1s\n"), "{text}");
    assert!(text.contains(
        "\"@type\": type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit"
    ));
    assert!(text.contains("code: TooManyRequests"));
}

#[test]
fn traefik_pick_is_the_decision_labs_and_has_the_middlewares_fields() {
    let (dir, j) = pick_is_the_labs("traefik");
    assert_eq!(j["snippet"], "traefik-ratelimit.yaml");
    let text =
        std::fs::read_to_string(dir.path().join("out").join("traefik-ratelimit.yaml")).unwrap();
    let pick = &j["pick"]["limiter"];
    assert_eq!(pick["model"], "traefik_rate_limit");
    // dynamic.RateLimit's fields (pkg/config/dynamic/middlewares.go).
    let average = pick["average"].as_u64().unwrap();
    let burst = pick["burst"].as_u64().unwrap();
    assert!(average >= 1 && burst >= 1);
    assert_eq!(pick["period_ms"], 1000);
    assert!(
        text.contains(&format!(
            "http:\n  middlewares:\n    ratelab-limit:\n      rateLimit:\n        average: {average}\n        period: 1s\n        burst: {burst}\n        sourceCriterion:\n          ipStrategy:\n"
        )),
        "{text}"
    );
}

#[test]
fn envoy_ratelimit_pick_is_an_aligned_unit_window_and_has_the_services_fields() {
    let (dir, j) = pick_is_the_labs("envoy-ratelimit");
    let text = std::fs::read_to_string(dir.path().join("out").join("envoy-ratelimit-config.yaml"))
        .unwrap();
    let pick = &j["pick"]["limiter"];
    assert_eq!(pick["model"], "fixed_window_counter");
    assert_eq!(pick["align"], "aligned");
    let (unit, len) = match pick["window_ms"].as_u64().unwrap() {
        1_000 => ("second", 1_000),
        60_000 => ("minute", 60_000),
        3_600_000 => ("hour", 3_600_000),
        86_400_000 => ("day", 86_400_000),
        w => panic!("window {w} ms is no ratelimit unit"),
    };
    let n = pick["requests"].as_u64().unwrap();
    assert!(n >= 1 && len >= 1000);
    assert!(
        text.contains(&format!(
            "domain: ratelab\ndescriptors:\n  - key: remote_address\n    rate_limit:\n      unit: {unit}\n      requests_per_unit: {n}\n"
        )),
        "{text}"
    );
    // Four units, each line's two ends at least, were measured.
    assert!(j["evaluated"].as_u64().unwrap() >= 8, "{}", j["evaluated"]);
}

/// `nginx -t` on a minimal nginx.conf including `snippet` in its http
/// block, everything under a temp prefix.
fn nginx_t(test: &str, snippet: &Path) {
    let nginx = ["/usr/sbin/nginx", "nginx"]
        .into_iter()
        .find(|p| adapters::runs(p, &["-v"]));
    let Some(nginx) = nginx else {
        adapters::skip(test, "nginx is not installed (apt-get install nginx-light)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let conf = p.join("nginx.conf");
    std::fs::write(
        &conf,
        format!(
            "pid {pid};\nerror_log stderr;\nevents {{}}\nhttp {{\n  access_log off;\n  client_body_temp_path {t}/body;\n  proxy_temp_path {t}/proxy;\n  fastcgi_temp_path {t}/fastcgi;\n  uwsgi_temp_path {t}/uwsgi;\n  scgi_temp_path {t}/scgi;\n  include {snip};\n  server {{\n    listen 127.0.0.1:8089;\n    location / {{ return 200; }}\n  }}\n}}\n",
            pid = p.join("nginx.pid").display(),
            t = p.display(),
            snip = snippet.display()
        ),
    )
    .unwrap();
    let o = Command::new(nginx)
        .args(["-t", "-p"])
        .arg(p)
        .arg("-c")
        .arg(&conf)
        .args(["-e", "stderr"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "nginx -t refused the snippet:\n{err}");
    assert!(err.contains("test is successful"), "{err}");
}

#[test]
fn nginx_t_refuses_a_broken_snippet() {
    // The check above can fail: a rate nginx cannot parse is refused.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.conf");
    std::fs::write(
        &bad,
        "limit_req_zone $binary_remote_addr zone=ratelab:1m rate=7.5r/s;\n",
    )
    .unwrap();
    if !adapters::runs("/usr/sbin/nginx", &["-v"]) {
        adapters::skip("nginx_t_refuses_a_broken_snippet", "nginx is not installed");
        return;
    }
    let r = std::panic::catch_unwind(|| nginx_t("broken", &bad));
    assert!(r.is_err(), "nginx -t accepted rate=7.5r/s");
}

#[test]
fn a_short_log_or_one_without_limited_keys_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let short = log(dir.path(), 30.0, 3);
    let o = recommend(&short, "nginx", &dir.path().join("a"), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    assert!(
        e.contains("too short") && e.contains("needs at least 100.0 s"),
        "{e}"
    );
    assert!(!dir.path().join("a").exists());
    // A limit nobody reaches: nothing to limit.
    let o = ratelab(&[
        "recommend",
        "--trace",
        short.to_str().unwrap(),
        "--limit",
        "1000",
        "--interval-ms",
        "1000",
        "--for",
        "nginx",
        "--slices",
        "1",
        "--out",
        dir.path().join("b").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("nothing to limit"), "{}", stderr(&o));
    let o = recommend(&short, "haproxy", &dir.path().join("c"), &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("expected one of nginx, envoy-local"));
    let o = recommend(
        &short,
        "nginx",
        &dir.path().join("c"),
        &["--target", "p99<=5"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("decision target"), "{}", stderr(&o));
}

#[test]
fn the_report_is_the_same_at_any_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let trace = log(dir.path(), 100.0, 2);
    let (a, b) = (dir.path().join("one"), dir.path().join("two"));
    let oa = recommend(&trace, "nginx", &a, &["--threads", "1", "--slices", "4"]);
    let ob = recommend(&trace, "nginx", &b, &["--threads", "2", "--slices", "4"]);
    assert!(
        oa.status.success() && ob.status.success(),
        "{}",
        stderr(&oa)
    );
    for f in ["recommend.json", "table.md", "nginx.conf", "frontier.svg"] {
        assert_eq!(
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(b.join(f)).unwrap(),
            "{f}"
        );
    }
}

#[test]
fn library_picks_are_the_decision_labs_and_their_lines_carry_them() {
    for (family, file) in [
        ("governor", "governor.rs"),
        ("x-time-rate", "x_time_rate.go"),
        ("guava", "RateLimiterConfig.java"),
        ("pingora", "pingora_rate.rs"),
    ] {
        let (dir, j) = pick_is_the_labs(family);
        assert_eq!(j["snippet"], file);
        let text = std::fs::read_to_string(dir.path().join("out").join(file)).unwrap();
        let l = &j["pick"]["limiter"];
        let want = match family {
            "governor" => format!(".allow_burst(NonZeroU32::new({}).unwrap())", l["burst"]),
            "x-time-rate" => format!(
                "rate.NewLimiter(rate.Limit({}), {})",
                l["rate_per_s"].as_f64().unwrap(),
                l["burst"]
            ),
            "pingora" if l["counters"] == "exact" => "Rate::new_with_estimator_config".into(),
            "pingora" => format!(
                "Rate::new_with_estimator_config(Duration::from_millis(1000), {}, {})",
                l["hashes"], l["slots"]
            ),
            _ => format!("RateLimiter.create({}.0)", l["permits_per_s"]),
        };
        assert!(text.contains(&want), "{family}: {want} not in\n{text}");
    }
}

#[test]
fn targets_no_setting_meets_exit_1_with_the_report_and_no_snippet() {
    let dir = tempfile::tempdir().unwrap();
    let trace = log(dir.path(), 100.0, 2);
    let out = dir.path().join("out");
    // No setting lets 99% less through than the exact limiter while
    // sparing every compliant request.
    let o = recommend(
        &trace,
        "nginx",
        &out,
        &["--slices", "4", "--target", "excess_pct<=-99"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no nginx setting tried meets"),
        "{}",
        stderr(&o)
    );
    let j = read_json(&out.join("recommend.json"));
    assert!(j["pick"].is_null());
    assert!(!j["frontier"].as_array().unwrap().is_empty());
    assert!(j["frontier"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| !e["meets"].as_bool().unwrap()));
    assert!(!out.join("nginx.conf").exists());
}
