//! The reference adapters against the models they mirror, decision for
//! decision: the real golang.org/x/time/rate (Go), the real Guava
//! `RateLimiter` (Java) and the Python token bucket, each through the
//! `exec` protocol, against the decision lab's own `token_bucket` and
//! `guava_smooth_bursty` candidates on the same requests.
//!
//! A missing toolchain skips a test with a printed notice (CI installs them
//! and sets `RATELAB_REQUIRE_ADAPTERS=1`, which makes a skip a failure).

use crate::common::adapters;

use ratelab::lab::decision::param_grid::Args;
use ratelab::lab::decision::{build, row, Candidate, Policy, Setup};
use ratelab::model::x_time_rate::{TokenBucket, XTimeVersion};
use ratelab::model::{Decision, PerKey};
use serde_json::{json, Value};

/// The lab's batch size (what `admit_batch` gets in a run).
const BATCH: usize = 16_384;

fn setup(limit: u64, interval_ms: u64) -> Setup {
    Setup {
        max_memory: 1 << 30,
        ..Setup::plain(Policy { limit, interval_ms }, 1)
    }
}

fn candidate(s: &Setup, model: &str, args: Value) -> Candidate {
    let pairs: Vec<(String, Value)> = args
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let pairs: Vec<(&str, Value)> = pairs.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    build(s, row(model).unwrap(), &Args::of(&pairs)).unwrap_or_else(|e| panic!("{model}: {e}"))
}

/// splitmix64: the test's own portable generator.
struct Mix(u64);
impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce5_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A bursty workload of `n` requests `(key, weight, t_ns)` in time order:
/// `keys` keys, each alternating bursts (gaps of 0-`burst_gap_ns`, often
/// within the same microsecond or nanosecond) and idle spells of up to
/// `idle_ns`; weights mostly 1, sometimes up to `max_w`.
fn bursty(
    n: usize,
    keys: u32,
    burst_gap_ns: u64,
    idle_ns: u64,
    max_w: u64,
    seed: u64,
) -> Vec<(u32, u64, u64)> {
    let mut r = Mix(seed);
    // Each key's next request time and requests left in its burst.
    let mut next: Vec<(u64, u32)> = (0..keys).map(|_| (r.below(idle_ns), 0)).collect();
    let mut out = Vec::with_capacity(n);
    let mut heap: std::collections::BinaryHeap<std::cmp::Reverse<(u64, u32)>> = (0..keys)
        .map(|k| std::cmp::Reverse((next[k as usize].0, k)))
        .collect();
    while out.len() < n {
        let std::cmp::Reverse((t, k)) = heap.pop().unwrap();
        let w = if r.below(10) == 0 {
            1 + r.below(max_w)
        } else {
            1
        };
        out.push((k, w, t));
        let st = &mut next[k as usize];
        if st.1 == 0 {
            st.1 = 1 + r.below(60) as u32;
        }
        st.1 -= 1;
        let gap = if st.1 == 0 {
            r.below(idle_ns)
        } else {
            match r.below(8) {
                0 => 0,
                1 => r.below(1_000),
                _ => r.below(burst_gap_ns),
            }
        };
        st.0 = t + gap;
        heap.push(std::cmp::Reverse((st.0, k)));
    }
    out
}

/// Decides every request with both candidates in the lab's batches; returns
/// (agreements, the first disagreement as text).
fn agree(
    a: &mut Candidate,
    b: &mut Candidate,
    reqs: &[(u32, u64, u64)],
) -> (usize, Option<String>) {
    let (mut da, mut db) = (Vec::with_capacity(BATCH), Vec::with_capacity(BATCH));
    let mut same = 0;
    let mut first = None;
    for (bi, chunk) in reqs.chunks(BATCH).enumerate() {
        da.clear();
        db.clear();
        a.limiter
            .admit_batch(chunk, &mut da)
            .unwrap_or_else(|e| panic!("{}: {e}", a.name));
        b.limiter
            .admit_batch(chunk, &mut db)
            .unwrap_or_else(|e| panic!("{}: {e}", b.name));
        assert_eq!((da.len(), db.len()), (chunk.len(), chunk.len()));
        for (i, (x, y)) in da.iter().zip(&db).enumerate() {
            if x == y {
                same += 1;
            } else if first.is_none() {
                let (k, w, t) = chunk[i];
                first = Some(format!(
                    "request {} (t={t} ns, key {k}, weight {w}): {} {x:?}, {} {y:?}",
                    bi * BATCH + i,
                    a.name,
                    b.name
                ));
            }
        }
    }
    (same, first)
}

fn allowed_share(c: &mut Candidate, reqs: &[(u32, u64, u64)]) -> f64 {
    let mut d = Vec::new();
    for chunk in reqs.chunks(BATCH) {
        c.limiter.admit_batch(chunk, &mut d).unwrap();
    }
    d.iter().filter(|x: &&Decision| x.allowed).count() as f64 / d.len() as f64
}

#[test]
fn the_real_x_time_rate_agrees_with_the_token_bucket_model_on_a_million_requests() {
    let test = "x/time/rate agreement";
    let Some(exe) = adapters::go_x_time_rate(test) else {
        return;
    };
    let exe = exe.to_str().unwrap().to_string();
    // Two settings: the policy's defaults (10 per second, burst 10) and a
    // fractional rate with a small burst (so the float arithmetic of
    // tokensFromDuration / durationFromTokens is exercised and weights
    // above the burst occur).
    let settings = [
        (setup(10, 1000), json!({}), 1_048_576usize, 12u64),
        (
            setup(10, 1000),
            json!({"rate_per_s": 7.3, "burst": 5}),
            1_048_576,
            6,
        ),
    ];
    for (s, params, n, max_w) in settings {
        let reqs = bursty(
            n,
            2_000,
            40_000_000,
            3_000_000_000,
            max_w,
            0x5eed ^ n as u64,
        );
        let mut model = candidate(&s, "token_bucket", params.clone());
        let mut real = candidate(
            &s,
            "exec",
            json!({"command": [exe], "name": "real x/time/rate", "params": params}),
        );
        let (same, first) = agree(&mut model, &mut real, &reqs);
        println!(
            "{test} {params}: {same} of {} decisions agree ({})",
            reqs.len(),
            model.name
        );
        assert_eq!(
            same,
            reqs.len(),
            "{params}: first disagreement: {}",
            first.unwrap()
        );
        // Debian ships x/time v0.3.0; the lab's candidate models the newest
        // (v0.13.0). The versions differ only for zero, tiny or overflowing
        // limits, so the v0.3.0 model agrees here too.
        let r = params["rate_per_s"].as_f64().unwrap_or(10.0);
        let b = params["burst"].as_i64().unwrap_or(10);
        let mut v03 = Candidate::new(
            "x/time v0.3.0 model",
            Box::new(PerKey::new(move |_| {
                Ok(TokenBucket::new_version(r, b, XTimeVersion::V0_3))
            })),
        );
        let mut real = candidate(&s, "exec", json!({"command": [exe], "params": params}));
        let (same, first) = agree(&mut v03, &mut real, &reqs);
        assert_eq!(same, reqs.len(), "{params}: v0.3.0: {}", first.unwrap());
        // A control: one token more of burst is caught.
        let mut off = params.clone();
        off["burst"] = json!(b + 1);
        let mut wrong = candidate(&s, "token_bucket", off);
        let mut real = candidate(&s, "exec", json!({"command": [exe], "params": params}));
        let (same, _) = agree(&mut wrong, &mut real, &reqs);
        assert!(
            same < reqs.len(),
            "{params}: burst {} not told apart",
            b + 1
        );
        // The workload is bursty enough that both decisions occur often.
        let share = allowed_share(&mut candidate(&s, "token_bucket", params.clone()), &reqs);
        assert!(
            (0.2..0.9).contains(&share),
            "{params}: allowed share {share}"
        );
    }
}

#[test]
fn the_python_token_bucket_agrees_with_the_token_bucket_model() {
    let test = "python token bucket agreement";
    if !adapters::runs("python3", &["--version"]) {
        adapters::skip(test, "no python3");
        return;
    }
    // Two settings as for Go: the policy's defaults, and a fractional rate
    // with a small burst (weights above it occur). A Python float is the
    // same IEEE double as Go's float64 and Rust's f64, and the adapter
    // keeps x/time/rate's operation order, so the comparison is exact.
    for (s, params, max_w) in [
        (setup(10, 1000), json!({}), 12u64),
        (setup(3, 700), json!({}), 4),
        (setup(10, 1000), json!({"rate_per_s": 7.3, "burst": 5}), 6),
    ] {
        let reqs = bursty(
            200_000,
            500,
            40_000_000,
            3_000_000_000,
            max_w,
            0xb0b ^ max_w,
        );
        let mut model = candidate(&s, "token_bucket", params.clone());
        let mut py = candidate(
            &s,
            "exec",
            json!({"command": ["python3", "examples/limiters/token_bucket.py"], "params": params}),
        );
        let (same, first) = agree(&mut model, &mut py, &reqs);
        println!(
            "{test} {:?} {params}: {same} of {} agree",
            s.policy,
            reqs.len()
        );
        assert_eq!(
            same,
            reqs.len(),
            "{params}: first disagreement: {}",
            first.unwrap()
        );
    }
}

#[test]
#[ignore = "slow: builds and runs Java; unoptimised, the test profile takes too long (.ci/run runs it)"]
fn the_real_guava_rate_limiter_agrees_with_the_guava_model() {
    let test = "Guava RateLimiter agreement";
    let Some(cmd) = adapters::java_guava(test) else {
        return;
    };
    // The policy's rate (10/s), a fractional one, and 3 per 700 ms. Many
    // requests share a microsecond (Guava's clock resolution) and weights
    // above the stored permits occur.
    for (s, params, max_w) in [
        (setup(10, 1000), json!({}), 12u64),
        (setup(10, 1000), json!({"permits_per_s": 7.3}), 6),
        (setup(3, 700), json!({}), 4),
    ] {
        let reqs = bursty(
            262_144,
            1_000,
            40_000_000,
            3_000_000_000,
            max_w,
            0x6a7a ^ max_w,
        );
        let mut model = candidate(&s, "guava_smooth_bursty", params.clone());
        let mut real = candidate(
            &s,
            "exec",
            json!({"command": cmd, "name": "real Guava", "params": params}),
        );
        let (same, first) = agree(&mut model, &mut real, &reqs);
        println!(
            "{test} {:?} {params}: {same} of {} agree",
            s.policy,
            reqs.len()
        );
        assert_eq!(
            same,
            reqs.len(),
            "{params}: first disagreement: {}",
            first.unwrap()
        );
        let share = allowed_share(
            &mut candidate(&s, "guava_smooth_bursty", params.clone()),
            &reqs,
        );
        assert!(
            (0.1..0.9).contains(&share),
            "{params}: allowed share {share}"
        );
    }
}

#[test]
fn a_lua_gcra_in_a_real_redis_agrees_with_the_gcra_model() {
    let test = "Redis Lua GCRA agreement";
    let Some(redis) = adapters::Redis::start(test) else {
        return;
    };
    let cmd = json!(["python3", "examples/limiters/redis/redis_gcra.py"]);
    for (s, burst, max_w) in [(setup(10, 1000), 10u64, 12u64), (setup(3, 700), 2, 3)] {
        let reqs = bursty(
            100_000,
            500,
            40_000_000,
            3_000_000_000,
            max_w,
            0x4ed15 ^ burst,
        );
        let mut model = candidate(&s, "gcra", json!({"burst": burst}));
        let mut real = candidate(
            &s,
            "exec",
            json!({"command": cmd, "name": "redis gcra", "params": {"burst": burst, "redis_port": redis.port}}),
        );
        let (same, first) = agree(&mut model, &mut real, &reqs);
        println!(
            "{test} {:?} burst {burst}: {same} of {} agree",
            s.policy,
            reqs.len()
        );
        assert_eq!(
            same,
            reqs.len(),
            "burst {burst}: first disagreement: {}",
            first.unwrap()
        );
        // The server's keys outlive the child: empty it for the next setting.
        drop(real);
        flush(redis.port);
    }
}

/// FLUSHALL on the test's own server.
fn flush(port: u16) {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.write_all(b"*1\r\n$8\r\nFLUSHALL\r\n").unwrap();
    let mut buf = [0u8; 5];
    c.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"+OK\r\n");
}
