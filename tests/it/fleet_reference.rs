//! Reference models of our own, written from the sources independently of
//! the optimized strategies (plain lists, linear scans, no heaps), checked
//! against them decision for decision on random traces.

use rand::Rng;
use ratelab::clock::{Nanos, MILLI, SECOND};
use ratelab::lab::decision::deployment::{
    Central, Env, KongSync, Latency, Network, Store, Strategy,
};
use ratelab::rng::sim_rng;

/// A random trace: (time, key, replica), times increasing.
fn trace(
    seed: u64,
    n: usize,
    keys: u32,
    replicas: usize,
    mean_gap: Nanos,
) -> Vec<(Nanos, u32, usize)> {
    let mut rng = sim_rng(seed);
    let mut t = 0;
    (0..n)
        .map(|_| {
            t += rng.random_range(0..2 * mean_gap);
            (t, rng.random_range(0..keys), rng.random_range(0..replicas))
        })
        .collect()
}

fn env(rtt: Nanos) -> Env {
    Env {
        net: Network::new(Latency::Fixed(rtt), 0.0, sim_rng(1)),
        store_down: false,
        cost: Default::default(),
    }
}

fn decide(s: &mut dyn Strategy, tr: &[(Nanos, u32, usize)], rtt: Nanos) -> Vec<bool> {
    let mut e = env(rtt);
    tr.iter()
        .map(|&(t, k, r)| {
            s.advance(t, &mut e).unwrap();
            s.admit(r, k, 1, t, &mut e).unwrap().allowed
        })
        .collect()
}

/// Kong rate-limiting, redis policy, sync_rate > 0, as read in
/// policies/init.lua and handler.lua: usage from the local tables or an
/// INCR that returns the value before it (delta -1), deny when
/// limit - usage <= 0, admitted requests add 1 to the delta and arm a
/// timer sync_rate later if none is pending; the timer pipelines
/// INCRBY delta per key and clears every table when the reply is back.
fn kong_reference(
    tr: &[(Nanos, u32, usize)],
    replicas: usize,
    limit: i64,
    window: Nanos,
    sync: Nanos,
    rtt: Nanos,
) -> Vec<bool> {
    #[derive(Clone, Default)]
    struct W {
        usage: Vec<((u32, u64), i64)>,
        delta: Vec<((u32, u64), i64)>,
        pending: bool,
    }
    fn get(v: &[((u32, u64), i64)], k: (u32, u64)) -> Option<i64> {
        v.iter().find(|(x, _)| *x == k).map(|(_, d)| *d)
    }
    fn set(v: &mut Vec<((u32, u64), i64)>, k: (u32, u64), d: i64) {
        match v.iter_mut().find(|(x, _)| *x == k) {
            Some(e) => e.1 = d,
            None => v.push((k, d)),
        }
    }
    let mut w = vec![W::default(); replicas];
    // (time, kind 0 = fire / 1 = clear, replica)
    let mut timers: Vec<(Nanos, u8, usize)> = Vec::new();
    // Writes: (arrival, key, window, delta); reads: (time, key, window).
    let mut writes: Vec<(Nanos, u32, u64, i64)> = Vec::new();
    let mut out = Vec::new();
    for &(t, k, r) in tr {
        loop {
            let next = timers
                .iter()
                .enumerate()
                .filter(|(_, x)| x.0 <= t)
                .min_by_key(|(_, x)| **x)
                .map(|(i, _)| i);
            let Some(i) = next else { break };
            let (at, kind, p) = timers.remove(i);
            if kind == 0 {
                w[p].pending = false;
                for &((key, win), d) in &w[p].delta {
                    writes.push((at + rtt / 2, key, win, d));
                }
                timers.push((at + rtt, 1, p));
            } else {
                w[p].usage.clear();
                w[p].delta.clear();
            }
        }
        let kw = (k, t / window);
        let usage = match get(&w[r].usage, kw) {
            Some(u) => u + get(&w[r].delta, kw).unwrap_or(0),
            None => {
                let s = t + rtt / 2;
                let prior: i64 = writes
                    .iter()
                    .filter(|x| x.0 <= s && x.1 == k && x.2 == kw.1)
                    .map(|x| x.3)
                    .sum();
                // The INCR itself is a write that is there at once.
                writes.push((s, k, kw.1, 1));
                set(&mut w[r].usage, kw, prior);
                set(&mut w[r].delta, kw, -1);
                prior
            }
        };
        let ok = limit - usage > 0;
        if ok {
            let d = get(&w[r].delta, kw).unwrap_or(0);
            set(&mut w[r].delta, kw, d + 1);
            if !w[r].pending {
                w[r].pending = true;
                timers.push((t + sync, 0, r));
            }
        }
        out.push(ok);
    }
    out
}

#[test]
fn kong_periodic_sync_matches_its_reference() {
    for (seed, sync_ms, rtt_us) in [(1, 50, 200), (2, 500, 3000), (3, 7, 1000), (4, 1000, 50)] {
        let tr = trace(seed, 3000, 6, 5, 2 * MILLI);
        let (limit, sync, rtt) = (15, sync_ms * MILLI, rtt_us * 1000);
        let mut m = KongSync::new(5, limit, SECOND, sync, true, true);
        let got = decide(&mut m, &tr, rtt);
        let want = kong_reference(&tr, 5, limit as i64, SECOND, sync, rtt);
        let first = got.iter().zip(&want).position(|(a, b)| a != b);
        assert_eq!(
            first, None,
            "seed {seed}: first difference at request {first:?}"
        );
        assert!(got.iter().any(|&a| !a) && got.iter().any(|&a| a));
    }
}

/// envoyproxy/ratelimit's fixed window with the local cache: a replica
/// that saw a key over the limit denies it without Redis for the rest of
/// the window, from the moment the reply arrived.
fn envoy_reference(tr: &[(Nanos, u32, usize)], limit: u64, window_s: u64, rtt: Nanos) -> Vec<bool> {
    let mut counts: Vec<((u32, u64), u64)> = Vec::new();
    let mut cache: Vec<(usize, u32, u64, Nanos)> = Vec::new();
    tr.iter()
        .map(|&(t, k, r)| {
            let win = (t / SECOND) / window_s;
            if cache
                .iter()
                .any(|&(cr, ck, cw, at)| cr == r && ck == k && cw == win && at <= t)
            {
                return false;
            }
            let c = match counts.iter_mut().find(|(x, _)| *x == (k, win)) {
                Some(e) => {
                    e.1 += 1;
                    e.1
                }
                None => {
                    counts.push(((k, win), 1));
                    1
                }
            };
            if c > limit {
                cache.push((r, k, win, t + rtt));
                false
            } else {
                true
            }
        })
        .collect()
}

#[test]
fn envoy_ratelimit_with_local_cache_matches_its_reference() {
    for (seed, rtt_ms) in [(5, 1), (6, 30), (7, 200)] {
        let tr = trace(seed, 4000, 8, 4, MILLI);
        let rtt = rtt_ms * MILLI;
        let mut m = Central::new(Store::EnvoyRatelimit, 4, 20, SECOND, true, false, true);
        let got = decide(&mut m, &tr, rtt);
        let want = envoy_reference(&tr, 20, 1, rtt);
        assert_eq!(got, want, "seed {seed}");
        // Without the cache every request reaches Redis: never more
        // admitted, and the cache only denies what Redis would count.
        let mut plain = Central::new(Store::EnvoyRatelimit, 4, 20, SECOND, false, false, true);
        let p = decide(&mut plain, &tr, rtt);
        assert_eq!(
            p.iter().filter(|&&a| a).count(),
            got.iter().filter(|&&a| a).count()
        );
    }
}
