//! Reference models of our own, written from the sources independently of
//! the optimized strategies (plain lists, linear scans, no heaps), checked
//! against them decision for decision on random traces.

use rand::Rng;
use ratelab::clock::{Nanos, MILLI, SECOND};
use ratelab::lab::decision::deployment::{
    ApisixSync, Central, Env, KongSync, Latency, Network, Store, Strategy,
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
/// INCR); the reply sets the usage and the delta to -1; deny when
/// limit - usage <= 0; an admitted request adds 1 to the delta and arms a
/// timer sync_rate later if none is pending (for a read, when the reply
/// is back); the timer, unless a sync still runs, pipelines INCRBY delta
/// per key and clears every table when the reply is back.
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
        running: bool,
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
    enum Ev {
        Fire(usize),
        Clear(usize),
        Reply(usize, (u32, u64), i64, bool),
    }
    let mut w = vec![W::default(); replicas];
    // (time, creation order, what)
    let mut evs: Vec<(Nanos, u64, Ev)> = Vec::new();
    let mut made = 0u64;
    // Writes reaching the store: (arrival, key, window, delta).
    let mut writes: Vec<(Nanos, u32, u64, i64)> = Vec::new();
    let mut out = Vec::new();
    for &(t, k, r) in tr {
        while let Some(i) = (0..evs.len())
            .filter(|&i| evs[i].0 <= t)
            .min_by_key(|&i| (evs[i].0, evs[i].1))
        {
            let (at, _, ev) = evs.remove(i);
            made += 1;
            match ev {
                Ev::Fire(p) if w[p].running => evs.push((at + 1000 * SECOND, made, Ev::Fire(p))),
                Ev::Fire(p) => {
                    w[p].pending = false;
                    w[p].running = true;
                    for &((key, win), d) in &w[p].delta {
                        writes.push((at + rtt / 2, key, win, d));
                    }
                    evs.push((at + rtt, made, Ev::Clear(p)));
                }
                Ev::Clear(p) => {
                    w[p].running = false;
                    w[p].usage.clear();
                    w[p].delta.clear();
                }
                Ev::Reply(p, kw, prior, ok) => {
                    set(&mut w[p].usage, kw, prior);
                    set(&mut w[p].delta, kw, -1);
                    if ok {
                        set(&mut w[p].delta, kw, 0);
                        if !w[p].pending {
                            w[p].pending = true;
                            evs.push((at + sync, made, Ev::Fire(p)));
                        }
                    }
                }
            }
        }
        let kw = (k, t / window);
        made += 1;
        let ok = match get(&w[r].usage, kw) {
            Some(u) => {
                let ok = limit - (u + get(&w[r].delta, kw).unwrap_or(0)) > 0;
                if ok {
                    let d = get(&w[r].delta, kw).unwrap_or(0);
                    set(&mut w[r].delta, kw, d + 1);
                    if !w[r].pending {
                        w[r].pending = true;
                        evs.push((t + sync, made, Ev::Fire(r)));
                    }
                }
                ok
            }
            None => {
                let s = t + rtt / 2;
                let prior: i64 = writes
                    .iter()
                    .filter(|x| x.0 <= s && x.1 == k && x.2 == kw.1)
                    .map(|x| x.3)
                    .sum();
                writes.push((s, k, kw.1, 1));
                let ok = limit - prior > 0;
                evs.push((t + rtt, made, Ev::Reply(r, kw, prior, ok)));
                ok
            }
        };
        out.push(ok);
    }
    out
}

#[test]
fn kong_periodic_sync_matches_its_reference() {
    // Bursts during a round trip (mean gap 0.1 ms against 3 ms round
    // trips), a sync shorter than a round trip (the blocked timer), and
    // quiet traffic.
    for (seed, sync_ms, rtt_us, gap) in [
        (1, 50, 200, 2 * MILLI),
        (2, 500, 3000, 2 * MILLI),
        (3, 7, 1000, 2 * MILLI),
        (4, 1000, 50, 2 * MILLI),
        (5, 100, 3000, MILLI / 10),
        (6, 2, 5000, MILLI / 4),
    ] {
        let tr = trace(seed, 3000, 6, 5, gap);
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
    rtt: Nanos,
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
        rtt: Nanos,
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
                let now_ms = (t + self.rtt / 2) / MILLI;
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
                (self.limit - count, ttl * MILLI, t + self.rtt)
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
        rtt,
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
        if let Some(q) = q {
            if t > q.2 {
                w.reps[p].record = None;
            }
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
    for (seed, sync_ms, rtt_us, down) in [
        (11, 100, 200, (0, 0)),
        (12, 500, 3000, (0, 0)),
        (13, 900, 1000, (2 * SECOND, 3 * SECOND)),
        (14, 250, 50, (0, 0)),
    ] {
        let tr = trace(seed, 3000, 6, 5, 2 * MILLI);
        let (limit, sync, rtt) = (15, sync_ms * MILLI, rtt_us * 1000);
        let mut m = ApisixSync::new(5, limit, SECOND, sync, true);
        let mut e = env(rtt);
        let got: Vec<bool> = tr
            .iter()
            .map(|&(t, k, r)| {
                e.store_down = t >= down.0 && t < down.1;
                m.advance(t, &mut e).unwrap();
                m.admit(r, k, 1, t, &mut e).unwrap().allowed
            })
            .collect();
        let want = apisix_reference(&tr, 5, limit as i64, SECOND, sync, rtt, down);
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
            let unix_us =
                ratelab::lab::decision::deployment::TIME_ZERO_UNIX_S * 1_000_000 + at / 1000;
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
