//! A recommendation checked by the product itself: `ratelab recommend
//! --for nginx` on a generated 64 s log (1,000 compliant clients in a Zipf
//! mix at 40 requests/s, three abusive clients at 20 requests/s each
//! against an intent of 10 per second), its `nginx.conf` snippet loaded
//! into a real nginx, the log's held-out part (every request after the
//! choosing cut) replayed against it in real time by a scripted open-loop
//! client, and the targets measured on nginx's own access log.
//!
//! nginx's log gives each request's time (`$msec`), its key and nginx's
//! answer (`$limit_req_status`); the decision lab reads it as a deployed
//! limiter's log, classifies every request against the exact sliding log
//! of the intent on those times, and checks every nginx decision against
//! the pick's model. With the clock-alignment shim there are no clock-step
//! differences, so every decision must agree, and the pick's harm figures
//! on the log are nginx's: the target must hold.
//!
//! The snippet keys its zone by `$binary_remote_addr` (the log is a CSV
//! without an address); the client sends each key in `X-Key` from one
//! address, so the test keys the zone by `$http_x_key` instead — the only
//! change to the snippet.

use crate::common::nginx::{get, nginx_bin, shim, Nginx};
use crate::common::{ratelab, stderr};
use crate::recommend::{log, recommend};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const LOG_FORMAT: &str = "$msec $request_time $limit_req_status $status $http_x_key";

fn read_json(p: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
#[ignore = "slow: replays 32 s of held-out traffic against a real nginx in real time (.ci/run runs it)"]
fn real_nginx_with_the_recommended_config_meets_the_target_on_the_held_out_part() {
    let test = "recommend on real nginx";
    let Some(bin) = nginx_bin(test) else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let Some(so) = shim(test, scratch.path()) else {
        return;
    };
    let dir = scratch.path();
    let trace = log(dir, 64.0, 3);
    let out = dir.join("rec");
    let o = recommend(&trace, "nginx", &out, &["--slices", "3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j = read_json(&out.join("recommend.json"));
    let pick = j["pick"]["limiter"].clone();
    assert_eq!(pick["model"], "nginx_limit_req");
    let snippet = std::fs::read_to_string(out.join("nginx.conf")).unwrap();
    assert!(snippet.contains("$binary_remote_addr"), "{snippet}");
    let keyed = dir.join("keyed.conf");
    std::fs::write(
        &keyed,
        snippet.replace("$binary_remote_addr", "$http_x_key"),
    )
    .unwrap();

    // The held-out part: every request at or after the cut, as offsets.
    let cut = j["choose"]["to_ns"].as_u64().unwrap();
    let text = std::fs::read_to_string(&trace).unwrap();
    let rows: Vec<(u64, String)> = text
        .lines()
        .skip(1)
        .map(|l| {
            let mut f = l.split(',');
            let t: u64 = f.next().unwrap().parse().unwrap();
            (t, f.next().unwrap().to_string())
        })
        .collect();
    let t0 = rows[0].0;
    let held: Vec<(u64, String)> = rows
        .into_iter()
        .filter(|r| r.0 - t0 >= cut)
        .map(|(t, k)| (t - t0 - cut, k))
        .collect();
    assert!(held.len() > 2_000 && held.len() < 5_000, "{}", held.len());

    let ndir = dir.join("nginx");
    std::fs::create_dir_all(&ndir).unwrap();
    let nginx = Nginx::start(
        &bin,
        &ndir,
        &format!(
            "log_format v '{LOG_FORMAT}';\n    access_log {}/access.log v;\n    include {};",
            ndir.display(),
            keyed.display()
        ),
        "",
        Some(so.as_path()),
    );
    // Open loop: request i goes out at its offset from the start, on
    // thread i mod 16 (a response takes well under a millisecond here).
    let threads = 16;
    let start = Instant::now() + Duration::from_millis(200);
    let held = std::sync::Arc::new(held);
    let handles: Vec<_> = (0..threads)
        .map(|w| {
            let held = held.clone();
            let port = nginx.port;
            std::thread::spawn(move || {
                let mut late = Duration::ZERO;
                let mut denied = 0u64;
                for (t, key) in held.iter().skip(w).step_by(threads) {
                    let at = start + Duration::from_nanos(*t);
                    let now = Instant::now();
                    if at > now {
                        std::thread::sleep(at - now);
                    } else {
                        late = late.max(now - at);
                    }
                    if get(port, key) == 429 {
                        denied += 1;
                    }
                }
                (denied, late)
            })
        })
        .collect();
    let (mut denied, mut late) = (0u64, Duration::ZERO);
    for h in handles {
        let (d, l) = h.join().unwrap();
        denied += d;
        late = late.max(l);
    }
    drop(nginx);

    // nginx's own log through the decision lab, against the pick's model.
    let scenario = json!({
        "name": "held-out", "kind": "decision_accuracy", "seed": 1,
        "policy": {"limit": 10, "interval_ms": 1000}, "shapes": [],
        "trace": {"path": "access.log", "format": "nginx", "log_format": LOG_FORMAT,
                  "key": "http_x_key", "outcome": "limit_req_status"},
        "limiters": [pick],
    });
    let path = ndir.join("validate.json");
    std::fs::write(&path, scenario.to_string()).unwrap();
    let vout = ndir.join("out");
    let o = ratelab(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        vout.to_str().unwrap(),
        "--no-progress",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = read_json(&vout.join("held-out/report.json"));
    let v = &r["validation"][0];
    let src = &r["validation_source"];
    // The rows: the two exact limiters, then the pick.
    let rows = r["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    let row = &rows[2];
    let harm = &row["harm"];
    println!(
        "{test}: pick {pick}; {} held-out requests replayed (latest {:.1} ms late), nginx denied {denied}; {}/{} decisions agree, {} clock step; on nginx's log: compliant denied {}%, limited excess {}%",
        held.len(),
        late.as_secs_f64() * 1e3,
        v["agree"],
        v["total"],
        v["clock_step"],
        harm["compliant_denied_pct"],
        harm["limited_excess_pct"],
    );
    assert_eq!(v["total"], held.len() as u64, "every request logged: {src}");
    assert_eq!(src["deployed_denied"], denied);
    // The abusive clients were limited: nginx refused some requests.
    assert!(denied > 100, "{denied}");
    assert_eq!(
        v["agree"], v["total"],
        "with the clock shim every nginx decision is the model's: {v}"
    );
    // The target (the default, compliant_denied_pct<=0.01) on nginx's log.
    let cd = harm["compliant_denied_pct"].as_f64().unwrap();
    assert!(
        cd <= 0.01,
        "compliant denied {cd}% on the held-out part: {row}"
    );
}
