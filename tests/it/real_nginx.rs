//! The `nginx_limit_req` model against a real nginx: nginx's own access log
//! (`$msec $request_time $limit_req_status $status` and the key) of a
//! scripted client's traffic, fed back through the decision lab's
//! validation against the deployed limiter.
//!
//! nginx's `limit_req` reads `CLOCK_MONOTONIC` in whole milliseconds while
//! `$msec` is wall-clock time, so the two millisecond grids are out of
//! phase. With the clock-alignment shim (`tests/real/clock_shim.c`,
//! LD_PRELOADed: `CLOCK_MONOTONIC` returns the last `gettimeofday`
//! sample) every decision must agree; without it, every disagreement must
//! be classified as a clock step or a follow-on.
//!
//! Needs `nginx` (Debian's `nginx` or `nginx-light`) and `cc`; skipped with
//! a notice without them, unless `RATELAB_REQUIRE_ADAPTERS=1`.

use crate::common::nginx::{get, nginx_bin, shim, Nginx};
use crate::common::{ratelab, stderr};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

/// The access log's format: what the validation reads.
const LOG_FORMAT: &str = "$msec $request_time $limit_req_status $status $http_x_key";

/// One `limit_req` setting, as nginx's directives and as the model's
/// parameters.
struct Case {
    name: &'static str,
    rate: &'static str,
    limit_req: &'static str,
    model: Value,
    /// Requests held by the delay (completion-ordered log).
    delays: bool,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "nodelay",
            rate: "50r/s",
            limit_req: "burst=5 nodelay",
            model: json!({"model": "nginx_limit_req", "rate_r_s": 50, "burst": 5, "nodelay": true, "zone_mib": 1}),
            delays: false,
        },
        Case {
            name: "delay",
            rate: "20r/s",
            limit_req: "burst=5",
            model: json!({"model": "nginx_limit_req", "rate_r_s": 20, "burst": 5, "zone_mib": 1}),
            delays: true,
        },
        Case {
            name: "delay2",
            rate: "20r/s",
            limit_req: "burst=5 delay=2",
            model: json!({"model": "nginx_limit_req", "rate_r_s": 20, "burst": 5, "delay": 2, "zone_mib": 1}),
            delays: true,
        },
        Case {
            name: "per-minute",
            rate: "700r/m",
            limit_req: "burst=3 nodelay",
            model: json!({"model": "nginx_limit_req", "rate_r_m": 700, "burst": 3, "nodelay": true, "zone_mib": 1}),
            delays: false,
        },
    ]
}

/// The scripted client: `threads` threads, each sending `per_thread`
/// requests with seeded pauses of 0-`max_pause_ms` ms, keys drawn from
/// `keys`. A request is sent when the previous one of its thread ended
/// (a delayed request holds its thread). Returns how many got 429.
fn drive(port: u16, threads: u64, per_thread: u64, max_pause_ms: u64, keys: u64) -> u64 {
    let handles: Vec<_> = (0..threads)
        .map(|i| {
            std::thread::spawn(move || {
                let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ (i + 1).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                let mut next = move || {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                };
                let mut denied = 0;
                for _ in 0..per_thread {
                    std::thread::sleep(Duration::from_micros(next() % (max_pause_ms * 1000)));
                    let key = format!("k{}", next() % keys);
                    if get(port, &key) == 429 {
                        denied += 1;
                    }
                }
                denied
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).sum()
}

/// The validation of nginx's access log in `dir` against `case`'s model:
/// the candidate's `validation` entry and the log's `validation_source`.
fn validate(dir: &Path, case: &Case) -> (Value, Value) {
    let mut trace = json!({
        "path": "access.log", "format": "nginx", "log_format": LOG_FORMAT,
        "key": "http_x_key", "outcome": "limit_req_status",
    });
    if case.delays {
        trace["time_is"] = json!("end");
        trace["duration"] = json!("request_time");
    }
    let scenario = json!({
        "name": "real-nginx", "kind": "decision_accuracy", "seed": 1,
        "policy": {"limit": 6, "interval_ms": 1000}, "shapes": [],
        "trace": trace, "limiters": [case.model],
    });
    let path = dir.join("validate.json");
    std::fs::write(&path, scenario.to_string()).unwrap();
    let out = dir.join("out");
    let o = ratelab(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--no-progress",
    ]);
    assert!(o.status.success(), "{}: {}", case.name, stderr(&o));
    let j: Value =
        serde_json::from_slice(&std::fs::read(out.join("real-nginx/report.json")).unwrap())
            .unwrap();
    (j["validation"][0].clone(), j["validation_source"].clone())
}

#[test]
fn real_nginx_limit_req_logs_validate_against_the_model() {
    let test = "real nginx limit_req validation";
    let Some(bin) = nginx_bin(test) else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let Some(so) = shim(test, scratch.path()) else {
        return;
    };
    for case in cases() {
        for aligned in [true, false] {
            let dir = scratch.path().join(format!(
                "{}-{}",
                case.name,
                if aligned { "shim" } else { "raw" }
            ));
            std::fs::create_dir_all(&dir).unwrap();
            let nginx = Nginx::start(
                &bin,
                &dir,
                &format!(
                    "log_format v '{LOG_FORMAT}';\n    access_log {}/access.log v;\n    limit_req_zone $http_x_key zone=z:1m rate={};",
                    dir.display(),
                    case.rate
                ),
                &format!("limit_req zone=z {};\n            limit_req_status 429;", case.limit_req),
                aligned.then_some(so.as_path()),
            );
            // 16 threads x 20 requests over 3 keys, 0-25 ms apart: up to
            // 400 requests/s per key against 20-50/s (11.666/s at 700r/m);
            // a delayed request holds its thread.
            let denied = drive(nginx.port, 16, 20, 25, 3);
            drop(nginx);
            let (v, src) = validate(&dir, &case);
            let label = format!(
                "{} ({})",
                case.name,
                if aligned { "clock aligned" } else { "raw" }
            );
            println!(
                "{test}: {label}: {}/{} agree, {} clock step, {} follow-on, {} unexplained; {} tie groups",
                v["agree"], v["total"], v["clock_step"], v["follow_on"], v["unexplained"], src["tie_groups"]
            );
            assert_eq!(v["total"], 320, "{label}: every request logged: {src}");
            // The traffic exercised both answers.
            assert_eq!(src["deployed_denied"], denied, "{label}");
            assert!(
                denied > 5 && denied < 315,
                "{label}: {denied} of 320 denied"
            );
            if aligned {
                assert_eq!(
                    v["agree"], v["total"],
                    "{label}: with nginx's clock aligned to $msec every decision agrees: {v}"
                );
            } else {
                assert_eq!(
                    v["unexplained"], 0,
                    "{label}: every disagreement is a clock step or a follow-on: {v}"
                );
                let d = v["disagree"].as_u64().unwrap();
                let classified =
                    v["clock_step"].as_u64().unwrap() + v["follow_on"].as_u64().unwrap();
                assert_eq!(classified, d, "{label}: {v}");
            }
        }
    }
}
