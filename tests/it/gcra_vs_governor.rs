//! `model::gcra` (our GCRA, per key) decides every request exactly as the
//! real governor crate does (`model::governor::GovernorKeyed`, its keyed
//! limiter on a fake clock): a million requests of a bursty, weighted,
//! multi-key workload per quota, compared one by one.

use ratelab::clock::{Nanos, MILLI, SECOND};
use ratelab::model::gcra::Gcra;
use ratelab::model::governor::GovernorKeyed;
use ratelab::model::{Admit, PerKey};
use std::time::{Duration, Instant};

const REQUESTS: usize = 1_000_000;
const KEYS: u64 = 16;

/// SplitMix64: a deterministic stream.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One request: key, weight, time.
#[derive(Debug, Clone, Copy)]
struct Req {
    key: u32,
    w: u64,
    t: Nanos,
}

/// A bursty workload around the quota's period `t`: runs of requests at one
/// instant (bursts far over the limit), steps of exactly `t`, `t ± 1` and
/// `t / 2` (so `now == TAT − τ` happens often), random gaps, and long idle
/// gaps that refill the burst; keys drawn skewed, weights 1..=3 with a few
/// weights just over the burst.
fn workload(seed: u64, t: Nanos, burst: u64) -> Vec<Req> {
    let mut r = SplitMix(seed);
    let mut now: Nanos = 0;
    let mut out = Vec::with_capacity(REQUESTS);
    while out.len() < REQUESTS {
        let gap = match r.below(100) {
            0..=34 => 0,
            35..=49 => t,
            50..=54 => t - 1,
            55..=59 => t + 1,
            60..=69 => t / 2,
            70..=94 => r.below(3 * t + 1),
            95..=98 => r.below(burst * t + 1) + t,
            _ => 5 * burst * t + r.below(SECOND),
        };
        now += gap;
        // A burst: the same key many times at one instant.
        let run = if r.below(50) == 0 {
            20 + r.below(200)
        } else {
            1
        };
        let key = if r.below(3) == 0 {
            r.below(KEYS)
        } else {
            r.below(3) // three hot keys
        } as u32;
        for _ in 0..run {
            let w = match r.below(100) {
                0..=59 => 1,
                60..=84 => 2,
                85..=96 => 3,
                _ => burst + r.below(2), // at the burst, or one over it
            };
            out.push(Req { key, w, t: now });
            if out.len() == REQUESTS {
                break;
            }
        }
    }
    out
}

/// Runs both limiters over the workload; panics at the first difference.
/// Returns (admitted, denied).
fn compare(period: Duration, burst: u64, seed: u64) -> (u64, u64) {
    let mut ours = {
        let proto = Gcra::with_period(period, burst).expect("quota");
        PerKey::new(move |_| Ok(proto))
    };
    let mut real = GovernorKeyed::new(period, burst).expect("quota");
    let t = period.as_nanos() as Nanos;
    let (mut yes, mut no) = (0, 0);
    for (i, q) in workload(seed, t, burst).into_iter().enumerate() {
        let a = ours.admit(q.key, q.w, q.t).expect("ours").allowed;
        let b = real.admit(q.key, q.w, q.t).expect("governor").allowed;
        assert_eq!(
            a, b,
            "request {i} {q:?}, period {period:?}, burst {burst}: ours {a}, governor {b}"
        );
        if a {
            yes += 1;
        } else {
            no += 1;
        }
    }
    (yes, no)
}

#[test]
fn a_million_requests_per_quota_decided_as_governor_decides_them() {
    let settings = [
        // burst 1: every weight above 1 is InsufficientCapacity.
        (Duration::from_millis(10), 1),
        // 3 per second: a period that does not divide a second (333_333_333 ns).
        (Duration::from_secs(1) / 3, 5),
        // 7 per second with burst 100.
        (Duration::from_secs(1) / 7, 100),
        // an odd period in nanoseconds, burst 2.
        (Duration::from_nanos(MILLI + 7), 2),
    ];
    let start = Instant::now();
    for (i, &(period, burst)) in settings.iter().enumerate() {
        let (yes, no) = compare(period, burst, 0xC0FFEE + i as u64);
        assert_eq!(yes + no, REQUESTS as u64);
        // Both outcomes are common: the comparison is not vacuous.
        assert!(
            yes > REQUESTS as u64 / 20 && no > REQUESTS as u64 / 20,
            "period {period:?} burst {burst}: {yes} admitted, {no} denied"
        );
        eprintln!("period {period:?} burst {burst}: {yes} admitted, {no} denied, identical");
    }
    eprintln!(
        "{} requests x {} quotas in {:?}",
        REQUESTS,
        settings.len(),
        start.elapsed()
    );
}
