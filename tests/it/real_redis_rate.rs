//! The `central` `redis_gcra` store against a real Redis running
//! go-redis/redis_rate's `allowN` script (`tests/real/redis_rate_allow_n.lua`,
//! verbatim, with its source commit and licence).
//!
//! The script reads the time itself (`redis.call("TIME")`), so the time each
//! request saw is recovered from its answer: `TIME` is whole microseconds,
//! and the stored TAT minus the returned `reset_after` is that time to well
//! under a microsecond (an admitted request stored `new_tat`; a denied one
//! left the TAT it was measured against). Those times, the keys and the
//! answers (`allowed`) make a JSON Lines log, validated through the decision
//! lab against a one-replica `central` `redis_gcra` fleet with no network
//! delay: every answer must agree.
//!
//! Needs `redis-server`; skipped with a notice without it, unless
//! `RATELAB_REQUIRE_ADAPTERS=1`.

use crate::common::{adapters, ratelab, stderr};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A Redis reply.
#[derive(Debug, Clone, PartialEq)]
enum Reply {
    Int(i64),
    Bulk(Option<String>),
    Array(Vec<Reply>),
    Status(String),
}

fn read_reply(r: &mut BufReader<TcpStream>) -> Reply {
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let line = line.trim_end();
    let (kind, rest) = line.split_at(1);
    match kind {
        "+" => Reply::Status(rest.to_string()),
        "-" => panic!("redis error: {rest}"),
        ":" => Reply::Int(rest.parse().unwrap()),
        "$" => {
            let n: i64 = rest.parse().unwrap();
            if n < 0 {
                return Reply::Bulk(None);
            }
            let mut buf = vec![0u8; n as usize + 2];
            std::io::Read::read_exact(r, &mut buf).unwrap();
            buf.truncate(n as usize);
            Reply::Bulk(Some(String::from_utf8(buf).unwrap()))
        }
        "*" => {
            let n: usize = rest.parse().unwrap();
            Reply::Array((0..n).map(|_| read_reply(r)).collect())
        }
        other => panic!("not a RESP reply: {other}{rest}"),
    }
}

fn command(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend(format!("${}\r\n{a}\r\n", a.len()).bytes());
    }
    out
}

fn bulk(r: &Reply) -> f64 {
    match r {
        Reply::Bulk(Some(s)) => s.parse().unwrap(),
        other => panic!("expected a number as a bulk string: {other:?}"),
    }
}

#[test]
fn redis_rate_in_a_real_redis_agrees_with_the_central_redis_gcra_store() {
    let test = "real Redis redis_rate validation";
    let Some(redis) = adapters::Redis::start(test) else {
        return;
    };
    let script = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/real/redis_rate_allow_n.lua"),
    )
    .unwrap();
    let c = TcpStream::connect(("127.0.0.1", redis.port)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut w = c.try_clone().unwrap();
    let mut r = BufReader::new(c);
    // 20 a second, burst 5, over three keys: rate.go's Limit{Rate: 20,
    // Burst: 5, Period: time.Second} as AllowN passes it (burst, rate,
    // period in seconds, cost).
    let (limit, burst) = (20u64, 5u64);
    let dir = tempfile::tempdir().unwrap();
    let mut log = String::new();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let (mut admitted, n) = (0, 600);
    for _ in 0..n {
        // Pauses of 0-4 ms, now and then none (a burst).
        let pause = next() % 5000;
        if pause > 1000 {
            std::thread::sleep(Duration::from_micros(pause));
        }
        let key = format!("k{}", next() % 3);
        let (b, l) = (burst.to_string(), limit.to_string());
        // The script, then the key's stored TAT, in one pipeline: this
        // connection is the only client, so nothing runs between them.
        let mut req = command(&["EVAL", &script, "1", &key, &b, &l, "1", "1"]);
        req.extend(command(&["GET", &key]));
        w.write_all(&req).unwrap();
        let Reply::Array(ans) = read_reply(&mut r) else {
            panic!("allowN answers an array")
        };
        let tat = bulk(&read_reply(&mut r));
        let allowed = ans[0] == Reply::Int(1);
        admitted += u64::from(allowed);
        let reset_after = bulk(&ans[3]);
        // TIME as redis_rate saw it: seconds since 2017-01-01, whole µs.
        let us = ((tat - reset_after) * 1e6).round() as u64;
        let t_ns = (1_483_228_800_000_000 + us) * 1000;
        log.push_str(&json!({"time": t_ns, "key": key, "allowed": u64::from(allowed)}).to_string());
        log.push('\n');
    }
    drop(redis);
    assert!(
        admitted > 20 && admitted < n - 20,
        "{admitted} of {n} admitted: the traffic should hit the limit"
    );
    std::fs::write(dir.path().join("redis.jsonl"), &log).unwrap();
    let scenario = json!({
        "name": "real-redis", "kind": "decision_accuracy", "seed": 1,
        "policy": {"limit": limit, "interval_ms": 1000}, "shapes": [],
        "trace": {"path": "redis.jsonl", "format": "jsonl", "unit": "ns", "key": "key",
                  "outcome": "allowed", "denied_values": ["0"]},
        "deployment": {"replicas": 1, "network": {"latency": {"type": "fixed", "rtt_ms": 0}},
                       "strategies": [{"strategy": "central", "store": "redis_gcra", "burst": burst}]},
    });
    let path = dir.path().join("real-redis.json");
    std::fs::write(&path, scenario.to_string()).unwrap();
    let out = dir.path().join("out");
    let o = ratelab(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--no-progress",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: Value =
        serde_json::from_slice(&std::fs::read(out.join("real-redis/report.json")).unwrap())
            .unwrap();
    let v = &j["validation"][0];
    println!(
        "{test}: {}: {}/{} agree ({} admitted by Redis)",
        v["algorithm"], v["agree"], v["total"], admitted
    );
    assert_eq!(v["total"], n);
    assert_eq!(
        j["validation_source"]["deployed_denied"],
        n - admitted,
        "{}",
        j["validation_source"]
    );
    assert_eq!(v["agree"], v["total"], "{v}");
}
