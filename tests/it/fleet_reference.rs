//! Reference models of our own, written from the sources independently of
//! the optimized strategies (plain lists, linear scans, no heaps), checked
//! against them decision for decision on random traces.

use rand::Rng;
use ratelab::clock::{Nanos, MILLI, SECOND};
use ratelab::fleet::{
    ApisixSync, Central, Env, Gubernator, KongSync, Latency, Network, OwnerRule, Store, Strategy,
    TieOrder,
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
    Env::new(Network::new(Latency::Fixed(rtt), 0.0, sim_rng(1)))
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
/// policies/init.lua and handler.lua: usage from the local tables, or an
/// INCR that returns the value before it and yields the worker for the
/// round trip (requests meanwhile miss the tables too and send their own
/// INCR); the store counts commands as they reach it; the reply sets the
/// usage and the delta to -1; deny when limit - usage <= 0; an admitted
/// request adds 1 to the delta and arms a timer sync_rate later if none
/// is pending (for a read, when the reply is back); the timer, unless a
/// sync still runs, pipelines INCRBY delta per key and clears every table
/// when the reply is back. Store down: a read admits (fault tolerant) and
/// counts locally, a sync clears the tables. Replica `i`'s round trip is
/// `rtts[i]`.
fn kong_reference(
    tr: &[(Nanos, u32, usize)],
    limit: i64,
    window: Nanos,
    sync: Nanos,
    rtts: &[Nanos],
    down: (Nanos, Nanos),
) -> Vec<bool> {
    type Kw = (u32, u64);
    #[derive(Clone, Default)]
    struct W {
        usage: Vec<(Kw, i64)>,
        delta: Vec<(Kw, i64)>,
        pending: bool,
        running: bool,
    }
    fn get(v: &[(Kw, i64)], k: Kw) -> Option<i64> {
        v.iter().find(|(x, _)| *x == k).map(|(_, d)| *d)
    }
    fn set(v: &mut Vec<(Kw, i64)>, k: Kw, d: i64) {
        match v.iter_mut().find(|(x, _)| *x == k) {
            Some(e) => e.1 = d,
            None => v.push((k, d)),
        }
    }
    enum Ev {
        Fire(usize),
        Clear(usize),
        Reply(usize, Kw, i64, bool),
        Incr(usize, usize, Kw),
        Write(Kw, i64),
    }
    struct S {
        w: Vec<W>,
        store: Vec<(Kw, i64)>,
        // (time, creation order, what)
        evs: Vec<(Nanos, u64, Ev)>,
        made: u64,
        out: Vec<Option<bool>>,
    }
    let is_down = |t: Nanos| t >= down.0 && t < down.1;
    let run = |s: &mut S, until: Option<Nanos>| {
        while let Some(i) = (0..s.evs.len())
            .filter(|&i| until.is_none_or(|t| s.evs[i].0 <= t))
            .min_by_key(|&i| (s.evs[i].0, s.evs[i].1))
        {
            let (at, _, ev) = s.evs.remove(i);
            s.made += 1;
            let made = s.made;
            let w = &mut s.w;
            match ev {
                Ev::Fire(p) if w[p].running => s.evs.push((at + 1000 * SECOND, made, Ev::Fire(p))),
                Ev::Fire(p) if is_down(at) => {
                    w[p].pending = false;
                    w[p].usage.clear();
                    w[p].delta.clear();
                }
                Ev::Fire(p) => {
                    w[p].pending = false;
                    w[p].running = true;
                    for &(kw, d) in &w[p].delta {
                        s.evs.push((at + rtts[p] / 2, made, Ev::Write(kw, d)));
                    }
                    s.evs.push((at + rtts[p], made, Ev::Clear(p)));
                }
                Ev::Clear(p) => {
                    w[p].running = false;
                    w[p].usage.clear();
                    w[p].delta.clear();
                }
                Ev::Write(kw, d) => {
                    let v = get(&s.store, kw).unwrap_or(0);
                    set(&mut s.store, kw, v + d);
                }
                Ev::Incr(i, p, kw) => {
                    let prior = get(&s.store, kw).unwrap_or(0);
                    set(&mut s.store, kw, prior + 1);
                    let ok = limit - prior > 0;
                    s.out[i] = Some(ok);
                    s.evs
                        .push((at + rtts[p] / 2, made, Ev::Reply(p, kw, prior, ok)));
                }
                Ev::Reply(p, kw, prior, ok) => {
                    set(&mut w[p].usage, kw, prior);
                    set(&mut w[p].delta, kw, -1);
                    if ok {
                        set(&mut w[p].delta, kw, 0);
                        if !w[p].pending {
                            w[p].pending = true;
                            s.evs.push((at + sync, made, Ev::Fire(p)));
                        }
                    }
                }
            }
        }
    };
    let mut s = S {
        w: vec![W::default(); rtts.len()],
        store: Vec::new(),
        evs: Vec::new(),
        made: 0,
        out: vec![None; tr.len()],
    };
    for (i, &(t, k, r)) in tr.iter().enumerate() {
        // Timers before an outage's edge run on the other side of it.
        for edge in [down.0, down.1] {
            if edge > 0 && i > 0 && tr[i - 1].0 < edge && edge <= t {
                run(&mut s, Some(edge - 1));
            }
        }
        run(&mut s, Some(t));
        let kw = (k, t / window);
        s.made += 1;
        let local = match get(&s.w[r].usage, kw) {
            Some(u) => Some(limit - (u + get(&s.w[r].delta, kw).unwrap_or(0)) > 0),
            None if is_down(t) => Some(true),
            None => None,
        };
        match local {
            Some(ok) => {
                if ok {
                    let d = get(&s.w[r].delta, kw).unwrap_or(0);
                    set(&mut s.w[r].delta, kw, d + 1);
                    if !s.w[r].pending {
                        s.w[r].pending = true;
                        s.evs.push((t + sync, s.made, Ev::Fire(r)));
                    }
                }
                s.out[i] = Some(ok);
            }
            None => s.evs.push((t + rtts[r] / 2, s.made, Ev::Incr(i, r, kw))),
        }
    }
    run(&mut s, None);
    s.out.into_iter().map(|d| d.unwrap()).collect()
}

#[test]
fn kong_periodic_sync_matches_its_reference() {
    // Bursts during a round trip (mean gap 0.1 ms against 3 ms round
    // trips), a sync shorter than a round trip (the blocked timer), quiet
    // traffic, one replica far from the store, an outage, ties on a 1 ms
    // grid.
    let far = vec![MILLI, MILLI, 12 * MILLI, MILLI, 3 * MILLI];
    for (seed, sync_ms, rtts, gap, down) in [
        (1, 50, vec![200_000; 5], 2 * MILLI, (0, 0)),
        (2, 500, vec![3 * MILLI; 5], 2 * MILLI, (0, 0)),
        (3, 7, vec![MILLI; 5], 2 * MILLI, (0, 0)),
        (4, 1000, vec![50_000; 5], 2 * MILLI, (0, 0)),
        (5, 100, vec![3 * MILLI; 5], MILLI / 10, (0, 0)),
        (6, 2, vec![5 * MILLI; 5], MILLI / 4, (0, 0)),
        (7, 100, far.clone(), MILLI / 2, (0, 0)),
        (8, 300, far.clone(), MILLI, (SECOND, 2 * SECOND)),
        (9, 40, far, 0, (0, 0)),
    ] {
        let tr = if gap == 0 {
            grid_trace(seed, 3000, 6, 5, MILLI)
        } else {
            trace(seed, 3000, 6, 5, gap)
        };
        let (limit, sync) = (15, sync_ms * MILLI);
        let mut m = KongSync::new(5, limit, SECOND, sync, true, true);
        let got = decide_later(&mut m, &tr, &rtts, down);
        let want = kong_reference(&tr, limit as i64, SECOND, sync, &rtts, down);
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

/// APISIX limit-count with `sync_interval`, as read in
/// delayed-syncer.lua, util.lua and limit-count-local.lua: per replica a
/// delta and a quota per key (plain lists), one queue and one timer; a
/// read flushes the delta when the quota is missing or stale, the timer
/// drains the queue `sync` after the request that started it and syncs
/// the keys one round trip after another; Redis keys start their window
/// at the first write. `down` is the interval the store is unreachable
/// (the fallback local limit-count answers then).
fn apisix_reference(
    tr: &[(Nanos, u32, usize)],
    replicas: usize,
    limit: i64,
    window: Nanos,
    sync: Nanos,
    rtt: &[Nanos],
    down: (Nanos, Nanos),
) -> Vec<bool> {
    #[derive(Clone, Default)]
    struct R {
        // (key, value, expiry fixed at creation)
        delta: Vec<(u32, i64, Nanos)>,
        // (key, remaining, stale from, expiry)
        quota: Vec<(u32, i64, Nanos, Nanos)>,
        queue: Vec<u32>,
        record: Option<Nanos>,
        timer: Option<Nanos>,
        sending: Vec<u32>,
        // limit-count-local: (key, consumed, expiry), (key, end)
        local: Vec<(u32, i64, Nanos)>,
        end: Vec<(u32, Nanos)>,
    }
    fn delta_get(r: &R, k: u32, t: Nanos) -> Option<i64> {
        r.delta.iter().find(|e| e.0 == k && t < e.2).map(|e| e.1)
    }
    fn delta_add(r: &mut R, k: u32, by: i64, t: Nanos, ttl: Nanos) {
        r.delta.retain(|e| e.0 != k || t < e.2);
        match r.delta.iter_mut().find(|e| e.0 == k) {
            Some(e) => e.1 += by,
            None => r.delta.push((k, by, t + ttl)),
        }
    }
    struct World {
        reps: Vec<R>,
        // (key, count, expiry ms)
        redis: Vec<(u32, i64, u64)>,
        limit: i64,
        window: Nanos,
        rtt: Vec<Nanos>,
    }
    impl World {
        // Sends `d` of `k` from replica `p` at `t` and stores the quota;
        // returns when the reply is back (at once when Redis is down).
        fn write(&mut self, p: usize, k: u32, d: i64, t: Nanos, is_down: bool) -> Nanos {
            let (rem, reset, at) = if is_down {
                let r = &mut self.reps[p];
                r.local.retain(|e| e.0 != k || t < e.2);
                let consumed = match r.local.iter_mut().find(|e| e.0 == k) {
                    Some(e) => {
                        e.1 += d;
                        e.1
                    }
                    None => {
                        r.local.push((k, d, t + self.window));
                        d
                    }
                };
                let rem = self.limit - consumed;
                let reset = if rem == self.limit - d {
                    r.end.retain(|e| e.0 != k);
                    r.end.push((k, t + self.window));
                    self.window
                } else {
                    r.end
                        .iter()
                        .find(|e| e.0 == k)
                        .map_or(0, |e| e.1.saturating_sub(t))
                };
                (rem, reset, t)
            } else {
                let now_ms = (origin() + t + self.rtt[p] / 2) / MILLI;
                let w_ms = self.window / MILLI;
                let live = self.redis.iter_mut().find(|e| e.0 == k && now_ms <= e.2);
                let (count, ttl) = match live {
                    Some(e) => {
                        e.1 += d;
                        (e.1, e.2 - now_ms)
                    }
                    None => {
                        self.redis.retain(|e| e.0 != k);
                        self.redis.push((k, d, now_ms + w_ms));
                        (d, w_ms)
                    }
                };
                (self.limit - count, ttl * MILLI, t + self.rtt[p])
            };
            let r = &mut self.reps[p];
            r.quota.retain(|q| q.0 != k);
            r.quota
                .push((k, rem.max(0), at + reset, at + 2 * self.window));
            delta_add(r, k, -d, at, 2 * self.window);
            at
        }
    }
    let mut w = World {
        reps: vec![R::default(); replicas],
        redis: Vec::new(),
        limit,
        window,
        rtt: rtt.to_vec(),
    };
    // (time, 0 = drain / 1 = next key, replica)
    let mut due: Vec<(Nanos, u8, usize)> = Vec::new();
    let mut out = Vec::new();
    for &(t, k, p) in tr {
        let is_down = t >= down.0 && t < down.1;
        while let Some(i) = (0..due.len())
            .filter(|&i| due[i].0 <= t)
            .min_by_key(|&i| due[i])
        {
            let (at, kind, q) = due.remove(i);
            if kind == 0 {
                let r = &mut w.reps[q];
                r.sending = std::mem::take(&mut r.queue);
                r.sending.reverse();
            }
            loop {
                let Some(key) = w.reps[q].sending.pop() else {
                    w.reps[q].timer = None;
                    break;
                };
                if let Some(d) = delta_get(&w.reps[q], key, at) {
                    let back = w.write(q, key, d, at, is_down);
                    due.push((back, 1, q));
                    break;
                }
            }
        }
        let old = delta_get(&w.reps[p], k, t).unwrap_or(0);
        let q = w.reps[p]
            .quota
            .iter()
            .find(|q| q.0 == k && t < q.3)
            .copied();
        if let Some(q) = q
            && t > q.2
        {
            w.reps[p].record = None;
        }
        if q.is_none_or(|q| t >= q.2) {
            w.write(p, k, old, t, is_down);
        }
        let r = &mut w.reps[p];
        let remote = r.quota.iter().find(|q| q.0 == k).map_or(0, |q| q.1);
        if !r.queue.contains(&k) {
            r.queue.push(k);
        }
        if r.record.is_none_or(|x| x <= t) {
            if let Some(x) = r.timer {
                r.record = Some(x);
            } else {
                r.timer = Some(t + sync);
                r.record = Some(t + sync);
                due.push((t + sync, 0, p));
            }
        }
        // remaining = remote - delta - cost, admitted when >= 0.
        let ok = remote - old > 0;
        if ok {
            delta_add(r, k, 1, t, 2 * window);
        }
        out.push(ok);
    }
    out
}

#[test]
fn apisix_delayed_sync_matches_its_reference() {
    // The last case: one replica far from Redis.
    for (seed, sync_ms, rtt, down) in [
        (11, 100, vec![200_000; 5], (0, 0)),
        (12, 500, vec![3 * MILLI; 5], (0, 0)),
        (13, 900, vec![MILLI; 5], (2 * SECOND, 3 * SECOND)),
        (14, 250, vec![50_000; 5], (0, 0)),
        (
            15,
            200,
            vec![MILLI, 30 * MILLI, MILLI, 2 * MILLI, MILLI],
            (0, 0),
        ),
    ] {
        let tr = trace(seed, 3000, 6, 5, 2 * MILLI);
        let (limit, sync) = (15, sync_ms * MILLI);
        let mut m = ApisixSync::new(5, limit, SECOND, sync, true);
        let per = rtt.iter().map(|&r| Latency::Fixed(r)).collect();
        let mut e = env(rtt[0]);
        e.net = Network::new(Latency::Fixed(rtt[0]), 0.0, sim_rng(1)).with_per_replica(per);
        let got: Vec<bool> = tr
            .iter()
            .map(|&(t, k, r)| {
                e.store_down = t >= down.0 && t < down.1;
                m.advance(t, &mut e).unwrap();
                m.admit(r, k, 1, t, &mut e).unwrap().allowed
            })
            .collect();
        let want = apisix_reference(&tr, 5, limit as i64, SECOND, sync, &rtt, down);
        let first = got.iter().zip(&want).position(|(a, b)| a != b);
        assert_eq!(
            first, None,
            "seed {seed}: first difference at request {first:?}"
        );
        assert!(got.iter().any(|&a| !a) && got.iter().any(|&a| a));
    }
}

/// APISIX's delayed sync against one instance: N replicas each spend the
/// quota they last read before a sync tells them about the others, so a
/// hot key gets more than the limit, and more with a longer interval.
#[test]
fn apisix_delayed_sync_lets_more_through_with_a_longer_interval() {
    let tr = trace(21, 6000, 1, 8, MILLI / 2);
    let admitted = |sync_ms: u64| {
        let mut m = ApisixSync::new(8, 20, SECOND, sync_ms * MILLI, true);
        decide(&mut m, &tr, MILLI).iter().filter(|&&a| a).count()
    };
    let windows = (tr.last().unwrap().0 / SECOND + 1) as usize;
    let (fast, slow) = (admitted(100), admitted(900));
    assert!(fast > 20 * windows, "{fast} over {windows} windows");
    assert!(slow > fast, "100 ms: {fast}, 900 ms: {slow}");
}

/// go-redis/redis_rate's `allowN` script, transliterated line by line
/// (lua.go:7-65) over a Redis of strings: `TIME` as two integers, the TAT
/// stored as the shortest text that reads back as the same double (how
/// Redis writes a Lua number argument), an expiry in whole seconds.
fn redis_rate_reference(
    tr: &[(Nanos, u32, usize)],
    limit: u64,
    burst: u64,
    period_s: f64,
    rtt: Nanos,
) -> Vec<bool> {
    let mut redis: Vec<(String, String, u64)> = Vec::new();
    tr.iter()
        .map(|&(t, k, _)| {
            let at = t + rtt / 2;
            let unix_us = ratelab::fleet::TIME_ZERO_UNIX_S * 1_000_000 + at / 1000;
            let (time_s, time_us) = (unix_us / 1_000_000, unix_us % 1_000_000);
            let now_ms = at / MILLI;
            let key = format!("rate:{k}");
            redis.retain(|e| now_ms <= e.2);
            let (burst, rate, period, cost) = (burst as f64, limit as f64, period_s, 1.0);
            let emission_interval = period / rate;
            let increment = emission_interval * cost;
            let burst_offset = emission_interval * burst;
            let now = (time_s as f64 - 1_483_228_800.0) + (time_us as f64 / 1_000_000.0);
            let tat = match redis.iter().find(|e| e.0 == key) {
                None => now,
                Some(e) => e.1.parse::<f64>().unwrap(),
            };
            let tat = if tat > now { tat } else { now };
            let new_tat = tat + increment;
            let allow_at = new_tat - burst_offset;
            let diff = now - allow_at;
            let remaining = diff / emission_interval;
            if remaining < 0.0 {
                return false;
            }
            let reset_after = new_tat - now;
            if reset_after > 0.0 {
                redis.retain(|e| e.0 != key);
                let ex = reset_after.ceil() as u64;
                redis.push((key, format!("{new_tat}"), now_ms + 1000 * ex));
            }
            true
        })
        .collect()
}

#[test]
fn redis_gcra_matches_its_reference() {
    for (seed, limit, burst, rtt_us) in [(31, 20, 20, 500), (32, 7, 3, 4000), (33, 50, 1, 100)] {
        let tr = trace(seed, 4000, 5, 4, MILLI);
        let rtt = rtt_us * 1000;
        let mut m =
            Central::new(Store::RedisGcra, 4, limit, SECOND, false, false, true).with_burst(burst);
        let got = decide(&mut m, &tr, rtt);
        let want = redis_rate_reference(&tr, limit, burst, 1.0, rtt);
        let first = got.iter().zip(&want).position(|(a, b)| a != b);
        assert_eq!(first, None, "seed {seed}: first difference at {first:?}");
        assert!(got.iter().any(|&a| !a) && got.iter().any(|&a| a));
    }
}

/// A GCRA in the store counts every request of every replica: one hot key
/// behind any number of replicas gets the burst plus the rate, as one
/// instance would.
#[test]
fn redis_gcra_admits_burst_plus_rate_on_any_fleet() {
    let tr = trace(34, 20_000, 1, 16, MILLI / 4);
    let secs = tr.last().unwrap().0 as f64 / SECOND as f64;
    let mut m = Central::new(Store::RedisGcra, 16, 40, SECOND, false, false, true);
    let got = decide(&mut m, &tr, 2 * MILLI)
        .iter()
        .filter(|&&a| a)
        .count() as f64;
    let want = 40.0 + 40.0 * secs;
    assert!((got - want).abs() <= 2.0, "{got} admitted, expected {want}");
}

/// Drives a strategy as the fleet does, with decisions made later than
/// their request (gubernator forwarding) filled in by ticket; replica
/// `i`'s round trip is `rtts[i]`; the store (for gubernator, the peers'
/// network) is down in `down`.
fn decide_later(
    s: &mut dyn Strategy,
    tr: &[(Nanos, u32, usize)],
    rtts: &[Nanos],
    down: (Nanos, Nanos),
) -> Vec<bool> {
    let per = rtts.iter().map(|&r| Latency::Fixed(r)).collect();
    let mut e =
        Env::new(Network::new(Latency::Fixed(rtts[0]), 0.0, sim_rng(1)).with_per_replica(per));
    let mut out = vec![None; tr.len()];
    let mut done = Vec::new();
    let fill = |done: &mut Vec<(u64, bool)>, out: &mut Vec<Option<bool>>| {
        for (ticket, ok) in done.drain(..) {
            out[ticket as usize] = Some(ok);
        }
    };
    for (i, &(t, k, r)) in tr.iter().enumerate() {
        let is_down = t >= down.0 && t < down.1;
        if is_down != e.store_down {
            // As the fleet does: timers before the outage's edge first.
            let edge = if is_down { down.0 } else { down.1 };
            s.advance(edge - 1, &mut e).unwrap();
            s.resolved(&mut done);
            fill(&mut done, &mut out);
            e.store_down = is_down;
        }
        s.advance(t, &mut e).unwrap();
        if let Some(d) = s.admit_ticket(r, k, 1, t, &mut e, i as u64).unwrap() {
            out[i] = Some(d.allowed);
        }
        s.resolved(&mut done);
        fill(&mut done, &mut out);
    }
    s.settle(&mut e).unwrap();
    s.resolved(&mut done);
    fill(&mut done, &mut out);
    out.into_iter()
        .map(|d| d.expect("every request decided"))
        .collect()
}

/// gubernator's `tokenBucket` on a plain list of items (key, remaining,
/// expire at, over): alive while `expire >= now`; a new item expires at
/// its request's `created + duration`.
#[allow(clippy::too_many_arguments)]
fn guber_bucket(
    cache: &mut Vec<(u32, i64, i64, bool)>,
    k: u32,
    now: i64,
    created: i64,
    limit: i64,
    dur: i64,
    hits: i64,
    drain: bool,
) -> bool {
    if let Some(e) = cache.iter_mut().find(|e| e.0 == k && e.2 >= now) {
        if hits == 0 {
            return !e.3;
        }
        if e.1 == 0 {
            e.3 = true;
            return false;
        }
        if e.1 == hits {
            e.1 = 0;
            return !e.3;
        }
        if hits > e.1 {
            if drain {
                e.1 = 0;
            }
            return false;
        }
        e.1 -= hits;
        return !e.3;
    }
    cache.retain(|e| e.0 != k);
    let ok = hits <= limit;
    cache.push((
        k,
        if ok { limit - hits } else { limit },
        created + dur,
        false,
    ));
    ok
}

/// Unix ns of virtual time zero (the lab's default).
fn origin() -> u64 {
    ratelab::fleet::TIME_ZERO_UNIX_S * SECOND
}

/// Unix ms of virtual time `t` (the lab's default origin).
fn unix_ms(t: Nanos) -> i64 {
    ((ratelab::fleet::TIME_ZERO_UNIX_S * SECOND + t) / MILLI) as i64
}

/// gubernator forwarding, as read in gubernator.go and peer_client.go,
/// owners key mod n, ties arrivals first: the owner decides its own
/// requests at once; a non-owner queues the request in its client for
/// the owner, whose interval (started by the first queued request, or
/// queued behind a running one) sends the batch `wait` later, or at once
/// at `limit_n` requests; the owner decides each request when the batch
/// arrives (half the sender's round trip), the window of a new item from
/// the request's arrival at the first peer. A failed batch is an error.
#[allow(clippy::too_many_arguments)]
fn guber_forward_reference(
    tr: &[(Nanos, u32, usize)],
    n: usize,
    limit: i64,
    dur_ms: i64,
    wait: Nanos,
    limit_n: usize,
    rtts: &[Nanos],
    down: (Nanos, Nanos),
) -> Vec<bool> {
    #[derive(Default, Clone)]
    struct Client {
        queue: Vec<(u32, i64, usize)>,
        sleeping: Option<Nanos>,
        queued: bool,
    }
    enum Ev {
        Tick(usize, usize),
        Arrive(usize, Vec<(u32, i64, usize)>),
    }
    let mut caches = vec![Vec::new(); n];
    let mut clients = vec![Client::default(); n * n];
    let mut evs: Vec<(Nanos, u8, u64, Ev)> = Vec::new();
    let mut made = 0u64;
    let mut out: Vec<Option<bool>> = vec![None; tr.len()];
    #[allow(clippy::too_many_arguments)]
    fn send(
        c: &mut Client,
        o: usize,
        t: Nanos,
        rtt: Nanos,
        is_down: bool,
        evs: &mut Vec<(Nanos, u8, u64, Ev)>,
        made: &mut u64,
        out: &mut [Option<bool>],
    ) {
        let batch = std::mem::take(&mut c.queue);
        if is_down {
            for (_, _, i) in batch {
                out[i] = Some(false);
            }
            return;
        }
        *made += 1;
        evs.push((t + rtt / 2, 0, *made, Ev::Arrive(o, batch)));
    }
    let run = |until: Option<Nanos>,
               evs: &mut Vec<(Nanos, u8, u64, Ev)>,
               made: &mut u64,
               caches: &mut Vec<Vec<(u32, i64, i64, bool)>>,
               clients: &mut Vec<Client>,
               out: &mut Vec<Option<bool>>| {
        while let Some(i) = (0..evs.len())
            .filter(|&i| until.is_none_or(|t| evs[i].0 < t || (evs[i].0 == t && evs[i].1 == 0)))
            .min_by_key(|&i| (evs[i].0, evs[i].1, evs[i].2))
        {
            let (at, _, _, ev) = evs.remove(i);
            match ev {
                Ev::Tick(p, o) => {
                    let c = &mut clients[p * n + o];
                    c.sleeping = None;
                    if c.queued {
                        c.queued = false;
                        c.sleeping = Some(at + wait);
                        *made += 1;
                        evs.push((at + wait, 1, *made, Ev::Tick(p, o)));
                    }
                    if !c.queue.is_empty() {
                        let is_down = at >= down.0 && at < down.1;
                        send(c, o, at, rtts[p], is_down, evs, made, out);
                    }
                }
                Ev::Arrive(o, batch) => {
                    for (k, created, i) in batch {
                        let ok = guber_bucket(
                            &mut caches[o],
                            k,
                            unix_ms(at),
                            created,
                            limit,
                            dur_ms,
                            1,
                            false,
                        );
                        out[i] = Some(ok);
                    }
                }
            }
        }
    };
    for (i, &(t, k, p)) in tr.iter().enumerate() {
        run(
            Some(t),
            &mut evs,
            &mut made,
            &mut caches,
            &mut clients,
            &mut out,
        );
        let o = k as usize % n;
        if o == p {
            out[i] = Some(guber_bucket(
                &mut caches[p],
                k,
                unix_ms(t),
                unix_ms(t),
                limit,
                dur_ms,
                1,
                false,
            ));
            continue;
        }
        let c = &mut clients[p * n + o];
        c.queue.push((k, unix_ms(t), i));
        if c.queue.len() >= limit_n {
            let is_down = t >= down.0 && t < down.1;
            send(c, o, t, rtts[p], is_down, &mut evs, &mut made, &mut out);
        } else if c.queue.len() == 1 {
            if c.sleeping.is_some() {
                c.queued = true;
            } else {
                c.sleeping = Some(t + wait);
                made += 1;
                evs.push((t + wait, 1, made, Ev::Tick(p, o)));
            }
        }
    }
    run(
        None,
        &mut evs,
        &mut made,
        &mut caches,
        &mut clients,
        &mut out,
    );
    out.into_iter().map(|d| d.unwrap()).collect()
}

#[test]
#[allow(clippy::type_complexity)]
fn gubernator_forwarding_matches_its_reference() {
    // (seed, keys, mean gap, wait, batch limit, round trips, outage)
    let cases: [(u64, u32, Nanos, Nanos, usize, Vec<Nanos>, (Nanos, Nanos)); 5] = [
        (41, 6, MILLI / 5, 500_000, 1000, vec![MILLI; 4], (0, 0)),
        (
            42,
            3,
            MILLI / 20,
            500_000,
            3,
            vec![200_000, MILLI, 3 * MILLI, MILLI / 2],
            (0, 0),
        ),
        (
            43,
            8,
            2 * MILLI,
            2 * MILLI,
            1000,
            vec![5 * MILLI, MILLI, MILLI, MILLI],
            (SECOND, 2 * SECOND),
        ),
        (44, 2, 10_000, 100_000, 5, vec![MILLI; 4], (0, 0)),
        // Times on a millisecond grid: same-instant ties.
        (45, 4, 0, 1_000_000, 1000, vec![2 * MILLI; 4], (0, 0)),
    ];
    for (seed, keys, gap, wait, bl, rtts, down) in cases {
        let tr = if gap == 0 {
            grid_trace(seed, 4000, keys, 4, MILLI)
        } else {
            trace(seed, 4000, keys, 4, gap)
        };
        let mut m = Gubernator::new(4, 10, SECOND, false, true, 100 * MILLI)
            .with_batch(wait, bl)
            .with_owner(OwnerRule::Modulo)
            .with_tie_order(TieOrder::ArrivalsFirst);
        let got = decide_later(&mut m, &tr, &rtts, down);
        let want = guber_forward_reference(&tr, 4, 10, 1000, wait, bl, &rtts, down);
        let first = got.iter().zip(&want).position(|(a, b)| a != b);
        assert_eq!(first, None, "seed {seed}: first difference at {first:?}");
        assert!(got.iter().any(|&a| !a) && got.iter().any(|&a| a));
    }
}

/// A trace on a grid of `step`: several requests at one instant.
fn grid_trace(
    seed: u64,
    n: usize,
    keys: u32,
    replicas: usize,
    step: Nanos,
) -> Vec<(Nanos, u32, usize)> {
    let mut rng = sim_rng(seed);
    let mut t = 0;
    (0..n)
        .map(|_| {
            t += step * rng.random_range(0..2u64);
            (t, rng.random_range(0..keys), rng.random_range(0..replicas))
        })
        .collect()
}

/// gubernator GLOBAL, as read in gubernator.go, global.go and
/// interval.go, owners key mod n, ties arrivals first. Every peer answers
/// from its own items; a non-owner's hit goes to its hits loop, an
/// owner's request to its broadcast loop. A loop takes what reaches its
/// channel (before its tick, at one instant) unless it is waiting for
/// replies. The hits loop sums hits per key (the first hit's creation
/// time kept) and sends them to each owner on its interval tick or at
/// `batch` keys, then waits a round trip; the owner applies them
/// drained, at arrival, and queues an update; the broadcast loop keeps
/// the last update per key and, on its tick or at `batch` keys, reads
/// each key's status with no hits and the update's creation time and
/// sends it to every other peer, then waits for every reply. An interval
/// sleeps `wait` from its first `next`, remembers one more `next`, and
/// holds one tick until it is read.
#[allow(clippy::too_many_arguments)]
fn guber_global_reference(
    tr: &[(Nanos, u32, usize)],
    n: usize,
    limit: i64,
    dur_ms: i64,
    wait: Nanos,
    batch: usize,
    rtts: &[Nanos],
    down: (Nanos, Nanos),
) -> Vec<bool> {
    type Cache = Vec<(u32, i64, i64, bool)>;
    #[derive(Default, Clone)]
    struct L {
        // (key, hits, created)
        chan: Vec<(u32, i64, i64)>,
        agg: Vec<(u32, i64, i64)>,
        sleeping: bool,
        queued: bool,
        tick_full: bool,
        blocked: bool,
        busy: bool,
    }
    enum Ev {
        Tick(usize),
        Free(usize),
        Hits(usize, Vec<(u32, i64, i64)>),
        Update(usize, Vec<(u32, i64, i64, bool)>),
    }
    struct W {
        n: usize,
        limit: i64,
        dur: i64,
        wait: Nanos,
        batch: usize,
        rtts: Vec<Nanos>,
        down: (Nanos, Nanos),
        caches: Vec<Cache>,
        // loops: 2 * p for hits, 2 * p + 1 for broadcasts
        loops: Vec<L>,
        evs: Vec<(Nanos, u8, u64, Ev)>,
        made: u64,
    }
    impl W {
        fn push(&mut self, at: Nanos, class: u8, ev: Ev) {
            self.made += 1;
            self.evs.push((at, class, self.made, ev));
        }
        fn next(&mut self, l: usize, t: Nanos) {
            let lp = &mut self.loops[l];
            if lp.queued {
                return;
            }
            if lp.sleeping || lp.blocked {
                lp.queued = true;
            } else {
                lp.sleeping = true;
                let w = self.wait;
                self.push(t + w, 1, Ev::Tick(l));
            }
        }
        fn arrive(&mut self, l: usize, item: (u32, i64, i64), t: Nanos) {
            self.loops[l].chan.push(item);
            self.pump(l, t);
        }
        fn pump(&mut self, l: usize, t: Nanos) {
            while !self.loops[l].busy {
                if !self.loops[l].chan.is_empty() {
                    let (k, h, c) = self.loops[l].chan.remove(0);
                    let agg = &mut self.loops[l].agg;
                    match agg.iter_mut().find(|e| e.0 == k) {
                        Some(e) if l.is_multiple_of(2) => e.1 += h,
                        Some(e) => *e = (k, h, c),
                        None => agg.push((k, h, c)),
                    }
                    let len = agg.len();
                    if len >= self.batch {
                        self.send(l, t);
                    } else if len == 1 {
                        self.next(l, t);
                    }
                } else if self.loops[l].tick_full {
                    let lp = &mut self.loops[l];
                    lp.tick_full = false;
                    if lp.blocked {
                        lp.blocked = false;
                        lp.tick_full = true;
                        if lp.queued {
                            lp.queued = false;
                            lp.sleeping = true;
                            let w = self.wait;
                            self.push(t + w, 1, Ev::Tick(l));
                        }
                    }
                    if !self.loops[l].agg.is_empty() {
                        self.send(l, t);
                    }
                } else {
                    break;
                }
            }
        }
        fn send(&mut self, l: usize, t: Nanos) {
            let p = l / 2;
            let agg = std::mem::take(&mut self.loops[l].agg);
            let mut until = t;
            if l.is_multiple_of(2) {
                let mut owners: Vec<usize> = Vec::new();
                for e in &agg {
                    let o = e.0 as usize % self.n;
                    if !owners.contains(&o) {
                        owners.push(o);
                    }
                }
                for o in owners {
                    let part: Vec<_> = agg
                        .iter()
                        .copied()
                        .filter(|e| e.0 as usize % self.n == o)
                        .collect();
                    if t >= self.down.0 && t < self.down.1 {
                        // Lost: the call fails after GlobalTimeout.
                        until = until.max(t + 500 * MILLI);
                        continue;
                    }
                    let r = self.rtts[p];
                    self.push(t + r / 2, 0, Ev::Hits(o, part));
                    until = until.max(t + r);
                }
            } else {
                let mut st = Vec::new();
                for &(k, _, created) in &agg {
                    let now = unix_ms(t);
                    guber_bucket(
                        &mut self.caches[p],
                        k,
                        now,
                        created,
                        self.limit,
                        self.dur,
                        0,
                        false,
                    );
                    let e = *self.caches[p].iter().find(|e| e.0 == k).unwrap();
                    st.push(e);
                }
                for q in (0..self.n).filter(|&q| q != p) {
                    if t >= self.down.0 && t < self.down.1 {
                        until = until.max(t + 500 * MILLI);
                        continue;
                    }
                    let r = self.rtts[q];
                    self.push(t + r / 2, 0, Ev::Update(q, st.clone()));
                    until = until.max(t + r);
                }
            }
            if until > t {
                self.loops[l].busy = true;
                self.push(until, 0, Ev::Free(l));
            }
        }
        fn run(&mut self, until: Nanos) {
            while let Some(i) = (0..self.evs.len())
                .filter(|&i| {
                    self.evs[i].0 < until || (self.evs[i].0 == until && self.evs[i].1 == 0)
                })
                .min_by_key(|&i| (self.evs[i].0, self.evs[i].1, self.evs[i].2))
            {
                let (at, _, _, ev) = self.evs.remove(i);
                match ev {
                    Ev::Tick(l) => {
                        let lp = &mut self.loops[l];
                        lp.sleeping = false;
                        if lp.tick_full {
                            lp.blocked = true;
                        } else {
                            lp.tick_full = true;
                            if lp.queued {
                                lp.queued = false;
                                lp.sleeping = true;
                                let w = self.wait;
                                self.push(at + w, 1, Ev::Tick(l));
                            }
                        }
                        self.pump(l, at);
                    }
                    Ev::Free(l) => {
                        self.loops[l].busy = false;
                        self.pump(l, at);
                    }
                    Ev::Hits(o, part) => {
                        for (k, h, created) in part {
                            let (lim, dur) = (self.limit, self.dur);
                            guber_bucket(
                                &mut self.caches[o],
                                k,
                                unix_ms(at),
                                created,
                                lim,
                                dur,
                                h,
                                true,
                            );
                            self.arrive(2 * o + 1, (k, h, created), at);
                        }
                    }
                    Ev::Update(q, st) => {
                        for e in st {
                            self.caches[q].retain(|x| x.0 != e.0);
                            self.caches[q].push(e);
                        }
                    }
                }
            }
        }
    }
    let mut w = W {
        n,
        limit,
        dur: dur_ms,
        wait,
        batch,
        rtts: rtts.to_vec(),
        down,
        caches: vec![Vec::new(); n],
        loops: vec![L::default(); 2 * n],
        evs: Vec::new(),
        made: 0,
    };
    let mut last = 0;
    tr.iter()
        .map(|&(t, k, p)| {
            // Timers before an outage's edge run on the other side of it.
            for edge in [down.0, down.1] {
                if edge > 0 && last < edge && edge <= t {
                    w.run(edge - 1);
                }
            }
            last = t;
            w.run(t);
            let now = unix_ms(t);
            let (lim, dur) = (w.limit, w.dur);
            let ok = guber_bucket(&mut w.caches[p], k, now, now, lim, dur, 1, false);
            let l = if k as usize % n == p {
                2 * p + 1
            } else {
                2 * p
            };
            w.arrive(l, (k, 1, now), t);
            ok
        })
        .collect()
}

#[test]
#[allow(clippy::type_complexity)]
fn gubernator_global_matches_its_reference() {
    // (seed, keys, mean gap or 0 for a 1 ms grid, GlobalSyncWait,
    // GlobalBatchLimit, round trips)
    // The last case cuts the peers off from each other for a second.
    let cases: [(u64, u32, Nanos, Nanos, usize, Vec<Nanos>); 7] = [
        (51, 6, MILLI, 100 * MILLI, 1000, vec![MILLI; 4]),
        (
            52,
            3,
            MILLI / 4,
            20 * MILLI,
            1000,
            vec![200_000, MILLI, 30 * MILLI, MILLI / 2],
        ),
        // Round trips longer than the interval: the loops wait.
        (
            53,
            5,
            MILLI,
            10 * MILLI,
            1000,
            vec![25 * MILLI, 40 * MILLI, 5 * MILLI, 60 * MILLI],
        ),
        // GlobalBatchLimit below the keys a tick collects.
        (54, 9, MILLI / 2, 50 * MILLI, 2, vec![MILLI; 4]),
        // Same-instant ties on a 1 ms grid, ticks on the grid too.
        (55, 4, 0, 10 * MILLI, 1000, vec![2 * MILLI; 4]),
        (
            56,
            12,
            0,
            5 * MILLI,
            3,
            vec![4 * MILLI, 2 * MILLI, 6 * MILLI, 2 * MILLI],
        ),
        (
            57,
            6,
            MILLI / 2,
            50 * MILLI,
            4,
            vec![MILLI, 3 * MILLI, MILLI, 8 * MILLI],
        ),
    ];
    for (seed, keys, gap, wait, gbl, rtts) in cases {
        let down = if seed == 57 {
            (SECOND, 2 * SECOND)
        } else {
            (0, 0)
        };
        let tr = if gap == 0 {
            grid_trace(seed, 5000, keys, 4, MILLI)
        } else {
            trace(seed, 5000, keys, 4, gap)
        };
        // Windows of 300 ms: many expire during the run.
        let mut m = Gubernator::new(4, 20, 300 * MILLI, true, true, wait)
            .with_global_batch_limit(gbl)
            .with_owner(OwnerRule::Modulo)
            .with_tie_order(TieOrder::ArrivalsFirst);
        let got = decide_later(&mut m, &tr, &rtts, down);
        let want = guber_global_reference(&tr, 4, 20, 300, wait, gbl, &rtts, down);
        let first = got.iter().zip(&want).position(|(a, b)| a != b);
        assert_eq!(first, None, "seed {seed}: first difference at {first:?}");
        assert!(got.iter().any(|&a| !a) && got.iter().any(|&a| a));
    }
}

/// Windows upstream aligns to Unix time follow the Unix time of the
/// request, wherever virtual time zero sits: with zero at T + 0.5 s (T a
/// whole second: the first log line's time), five requests at T + 0.5 s
/// and five at T + 1.2 s fall in two windows of 5 per second, and
/// envoyproxy/ratelimit, Kong's redis policy and Kong's periodic sync
/// admit all 10; with zero at T the same virtual times are one window.
#[test]
fn windows_align_to_the_unix_time_of_the_request() {
    let t = 1_767_225_600 * SECOND;
    let tr: Vec<(Nanos, u32, usize)> = (0..10)
        .map(|i| (if i < 5 { i } else { 700 * MILLI + i }, 1, i as usize % 2))
        .collect();
    let admitted = |s: &mut dyn Strategy, origin: u64| {
        let mut e = env(MILLI / 10);
        e.origin_ns = origin;
        tr.iter()
            .filter(|&&(at, k, r)| {
                s.advance(at, &mut e).unwrap();
                s.admit(r, k, 1, at, &mut e).unwrap().allowed
            })
            .count()
    };
    for origin in [t + SECOND / 2, t] {
        let want = if origin == t { 5 } else { 10 };
        let mut envoy = Central::new(Store::EnvoyRatelimit, 2, 5, SECOND, false, false, true);
        let mut kong = Central::new(Store::KongRedis, 2, 5, SECOND, false, false, true);
        let mut sync = KongSync::new(2, 5, SECOND, 100 * MILLI, true, true);
        assert_eq!(admitted(&mut envoy, origin), want, "envoy, origin {origin}");
        assert_eq!(
            admitted(&mut kong, origin),
            want,
            "kong_redis, origin {origin}"
        );
        // Kong's periodic sync: the two replicas each read the store once
        // a window and count locally; the store had the other's INCR.
        assert_eq!(
            admitted(&mut sync, origin),
            want,
            "kong sync, origin {origin}"
        );
    }
}

/// The central stores with one replica far from Redis: the store counts
/// commands in the order they reach it (half the sender's round trip
/// after the request), so a near replica's later request can be counted
/// before a far one's earlier request. The reference keeps the commands
/// on their way in a plain list and applies each when its time comes;
/// `answer` is the store's script: (key, the request's Unix ns — its
/// window's —, Unix ns at the store) -> the decision. Store down: the failure mode, nothing sent.
fn store_reference(
    tr: &[(Nanos, u32, usize)],
    rtts: &[Nanos],
    down: (Nanos, Nanos),
    fail_open: bool,
    cache: bool,
    mut answer: impl FnMut(u32, u64, u64) -> bool,
) -> Vec<bool> {
    // (arrival at the store, send order, request index)
    let mut on_the_way: Vec<(Nanos, usize, usize)> = Vec::new();
    // envoy's local cache: (replica, key, window, from)
    let mut over: Vec<(usize, u32, u64, Nanos)> = Vec::new();
    let mut out: Vec<Option<bool>> = vec![None; tr.len()];
    let origin = ratelab::fleet::TIME_ZERO_UNIX_S * SECOND;
    let mut apply = |until: Option<Nanos>,
                     on_the_way: &mut Vec<(Nanos, usize, usize)>,
                     over: &mut Vec<(usize, u32, u64, Nanos)>,
                     out: &mut Vec<Option<bool>>| {
        while let Some(j) = (0..on_the_way.len())
            .filter(|&j| until.is_none_or(|t| on_the_way[j].0 <= t))
            .min_by_key(|&j| (on_the_way[j].0, on_the_way[j].1))
        {
            let (at, _, i) = on_the_way.remove(j);
            let (t, k, r) = tr[i];
            let ok = answer(k, origin + t, origin + at);
            if !ok && cache {
                over.push((r, k, (origin + t) / SECOND, t + rtts[r]));
            }
            out[i] = Some(ok);
        }
    };
    for (i, &(t, k, r)) in tr.iter().enumerate() {
        apply(Some(t), &mut on_the_way, &mut over, &mut out);
        let win = (origin + t) / SECOND;
        if over
            .iter()
            .any(|&(cr, ck, cw, from)| cr == r && ck == k && cw == win && from <= t)
        {
            out[i] = Some(false);
        } else if t >= down.0 && t < down.1 {
            out[i] = Some(fail_open);
        } else {
            on_the_way.push((t + rtts[r] / 2, i, i));
        }
    }
    apply(None, &mut on_the_way, &mut over, &mut out);
    out.into_iter().map(|d| d.unwrap()).collect()
}

#[test]
fn central_stores_count_in_arrival_order_with_a_far_replica() {
    let rtts = [MILLI, 9 * MILLI, MILLI / 2, 4 * MILLI];
    for (seed, gap, down, fail_open) in [
        (61, MILLI / 2, (0, 0), true),
        (62, MILLI / 8, (SECOND, 2 * SECOND), true),
        (63, 0, (SECOND / 2, 3 * SECOND / 2), false),
    ] {
        let tr = if gap == 0 {
            grid_trace(seed, 4000, 4, 4, MILLI)
        } else {
            trace(seed, 4000, 4, 4, gap)
        };
        for cache in [false, true] {
            let mut m = Central::new(
                Store::EnvoyRatelimit,
                4,
                20,
                SECOND,
                cache,
                false,
                fail_open,
            );
            let got = decide_later(&mut m, &tr, &rtts, down);
            // envoyproxy/ratelimit: INCRBY, over when the value after
            // exceeds the limit, denied requests counted too.
            let mut counts: Vec<((u32, u64), u64)> = Vec::new();
            let want = store_reference(&tr, &rtts, down, fail_open, cache, |k, t, _| {
                let w = (k, t / SECOND);
                let c = match counts.iter_mut().find(|e| e.0 == w) {
                    Some(e) => {
                        e.1 += 1;
                        e.1
                    }
                    None => {
                        counts.push((w, 1));
                        1
                    }
                };
                c <= 20
            });
            let first = got.iter().zip(&want).position(|(a, b)| a != b);
            assert_eq!(
                first, None,
                "envoy seed {seed} cache {cache}: first difference at {first:?}"
            );
            assert!(got.iter().any(|&a| !a) && got.iter().any(|&a| a));
        }
        // Kong's redis policy with sync_rate = -1: INCR returns the value
        // before it; denied when limit - usage <= 0.
        let mut m = Central::new(Store::KongRedis, 4, 20, SECOND, false, false, fail_open);
        let got = decide_later(&mut m, &tr, &rtts, down);
        let mut counts: Vec<((u32, u64), i64)> = Vec::new();
        let want = store_reference(&tr, &rtts, down, fail_open, false, |k, t, _| {
            let w = (k, t / SECOND);
            let prior = counts.iter().find(|e| e.0 == w).map_or(0, |e| e.1);
            counts.retain(|e| e.0 != w);
            counts.push((w, prior + 1));
            20 - prior > 0
        });
        assert_eq!(got, want, "kong_redis seed {seed}");
        // redis_rate's GCRA, with TIME at the command's arrival.
        let mut m = Central::new(Store::RedisGcra, 4, 20, SECOND, false, false, fail_open);
        let got = decide_later(&mut m, &tr, &rtts, down);
        let mut tats: Vec<(u32, f64, u64)> = Vec::new();
        let want = store_reference(&tr, &rtts, down, fail_open, false, |k, _, at| {
            let us = at / 1000;
            let now = (us / 1_000_000) as f64 - 1_483_228_800.0 + (us % 1_000_000) as f64 / 1e6;
            let now_ms = at / MILLI;
            tats.retain(|e| now_ms <= e.2);
            let ei = 1.0 / 20.0;
            let tat = tats.iter().find(|e| e.0 == k).map_or(now, |e| e.1).max(now);
            let new_tat = tat + ei;
            if (now - (new_tat - ei * 20.0)) / ei < 0.0 {
                return false;
            }
            tats.retain(|e| e.0 != k);
            tats.push((k, new_tat, now_ms + 1000 * (new_tat - now).ceil() as u64));
            true
        });
        let first = got.iter().zip(&want).position(|(a, b)| a != b);
        assert_eq!(
            first, None,
            "redis_rate seed {seed}: first difference at {first:?}"
        );
    }
}
