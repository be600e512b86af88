//! pingora's `Inflight`: two kinds, one module each.
//!
//! * `inflight_guard_leak`: the exact sequence (`Inflight::incr`
//!   → 1, `Guard::incr` → 2, drop, a new `incr` sees 2), then a drift
//!   experiment: requests arrive as a Poisson stream, each holds its guard
//!   for an exponentially distributed time, and a share `p` of them call
//!   `Guard::incr` once while in flight (say, a retry path that re-counts the
//!   request). Each such call leaks the guard's value for good; the chart
//!   shows the leaked count (estimate − true in-flight) growing over time.
//! * `inflight_accuracy`: a Zipf in-flight load on many keys. At every
//!   arrival the estimate `incr` returns is compared with the exact in-flight
//!   count of that key (including this request), i.e. the value a limiter
//!   would act on; an error table like the count-min sweep's for the 4 × 8192
//!   default and other
//!   shapes, at several load levels (mean in-flight totals).
//!
//! Arrivals and durations are drawn from `derive_seed(seed, [WORKLOAD, …])`
//! so every sketch shape and every share `p` sees the same requests; sketch
//! hashes from `derive_seed(seed, [HASH, run])`.

pub(crate) mod accuracy;
pub(crate) mod guard_leak;

pub use accuracy::InflightAccuracy;
pub use guard_leak::GuardLeak;

use crate::clock::{pop_due, Nanos, MILLI, SECOND};
use crate::model::estimator::FrequencyEstimator;
use crate::model::inflight::{Guard, Inflight};
use crate::rng::{sim_rng, SimRng};
use crate::workload::dist::Exp;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One request of an in-flight load.
#[derive(Debug, Clone, Copy)]
struct Req {
    at: Nanos,
    end: Nanos,
    key: u32,
}

/// Poisson arrivals of `rate_per_s` over `[0, horizon)`, exponential
/// durations of mean `mean_ms`, keys drawn by `key`.
fn requests(
    seed: u64,
    rate_per_s: f64,
    mean_ms: f64,
    horizon: Nanos,
    mut key: impl FnMut(&mut SimRng) -> u32,
) -> Vec<Req> {
    let mut rng = sim_rng(seed);
    let mut out = Vec::new();
    let (Some(gap), Some(dur)) = (Exp::new(rate_per_s), Exp::new(1.0 / mean_ms)) else {
        return out;
    };
    let mut t = 0.0f64;
    loop {
        t += gap.sample(&mut rng) * SECOND as f64;
        if t >= horizon as f64 {
            break;
        }
        let d = dur.sample(&mut rng) * MILLI as f64;
        let at = t as Nanos;
        out.push(Req {
            at,
            end: at.saturating_add(d.max(1.0) as Nanos),
            key: key(&mut rng),
        });
    }
    out
}

/// Drives `reqs` through `inflight`: guards dropped at their end times
/// (before an arrival at the same instant). `on_arrival(inflight, req,
/// guard, estimate, true_count_of_key)` runs after each `incr`.
#[allow(clippy::too_many_arguments)]
fn drive<E: FrequencyEstimator>(
    inflight: &mut Inflight<E>,
    reqs: &[Req],
    keys: usize,
    key_bytes: &dyn Fn(u32) -> Vec<u8>,
    mut on_arrival: impl FnMut(&mut Inflight<E>, usize, &Guard, i64, i64),
    mut until: impl FnMut(&Inflight<E>, Nanos, &[i64]),
    sample_every: Nanos,
    horizon: Nanos,
) {
    let mut truth = vec![0i64; keys];
    let mut guards: Vec<Option<Guard>> = Vec::with_capacity(reqs.len());
    let mut ends: BinaryHeap<Reverse<(Nanos, usize)>> = BinaryHeap::new();
    let mut next_sample = sample_every;
    let drop_until = |t: Nanos,
                      inflight: &mut Inflight<E>,
                      ends: &mut BinaryHeap<Reverse<(Nanos, usize)>>,
                      guards: &mut Vec<Option<Guard>>,
                      truth: &mut Vec<i64>| {
        while let Some((_, i)) = pop_due(ends, |e| e.0 <= t) {
            if let Some(g) = guards.get_mut(i).and_then(Option::take) {
                inflight.drop_guard(g);
                if let Some(c) = truth.get_mut(reqs[i].key as usize) {
                    *c -= 1;
                }
            }
        }
    };
    for (i, r) in reqs.iter().enumerate() {
        while sample_every > 0 && next_sample <= r.at {
            drop_until(next_sample, inflight, &mut ends, &mut guards, &mut truth);
            until(inflight, next_sample, &truth);
            next_sample += sample_every;
        }
        drop_until(r.at, inflight, &mut ends, &mut guards, &mut truth);
        let k = r.key as usize;
        match inflight.incr(&key_bytes(r.key), 1) {
            Ok((g, est)) => {
                truth[k] += 1;
                on_arrival(inflight, i, &g, est, truth[k]);
                guards.push(Some(g));
                ends.push(Reverse((r.end, i)));
            }
            Err(_) => guards.push(None),
        }
    }
    while sample_every > 0 && next_sample <= horizon {
        drop_until(next_sample, inflight, &mut ends, &mut guards, &mut truth);
        until(inflight, next_sample, &truth);
        next_sample += sample_every;
    }
}
